"""Every metric albic reports, defined once (design section 5).

Each function takes a snapshot and a placement: a mapping ``{key group id: node id}``, an array
``node_of`` with the node index of each key group (in ``snapshot.key_groups`` order), or ``None`` for
the snapshot's current placement. Results are plain Python ``float`` / ``int``.

Definitions (``u_i`` is node i's utilisation, load over capacity; active nodes are those not
removing):

- mean utilisation: total load / total capacity of active nodes (load still on removing nodes
  counts, since it must end up on the active ones);
- load distance (ALBIC): ``max |u_i - mean|`` over active nodes, also as % of the mean;
- imbalance (consistent grouping, Flux): ``max u_i - avg u_i`` over active nodes;
- skew (Elasticutor): ``max u_i / avg u_i`` over active nodes (1.0 when there is no load);
- migration cost: sum of ``state_size`` of the key groups whose node changes, also as % of all
  state; moves: their number;
- collocation factor: share of the traffic rate whose two key groups sit on one node (1.0 when
  there is no traffic: nothing crosses the network);
- load index (ALBIC): total effective load, each remote tuple adding ``remote_cost`` to the load,
  relative to a reference.

Example
-------
>>> from albic.core.model import Node, KeyGroup, Snapshot
>>> snap = Snapshot([Node("n1"), Node("n2")],
...                 [KeyGroup("a", "op", 3.0), KeyGroup("b", "op", 1.0)],
...                 {"a": "n1", "b": "n1"})
>>> load_distance(snap), load_distance_pct(snap), imbalance(snap)
(2.0, 100.0, 2.0)
>>> load_distance(snap, {"a": "n1", "b": "n2"})
1.0
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from albic.core.model import Snapshot

Placement = Mapping[str, str] | np.ndarray | None

__all__ = [
    "load_by_node",
    "node_of",
    "node_loads",
    "utilisation",
    "mean_utilisation",
    "mean_utilisation_of",
    "REL_NOISE",
    "ABS_NOISE",
    "same_figure",
    "within_noise",
    "lexicographically_less",
    "load_distance",
    "load_distance_pct",
    "imbalance",
    "skew",
    "removing_load",
    "moved",
    "moves",
    "migration_cost",
    "migration_cost_pct",
    "collocation_factor",
    "remote_traffic",
    "effective_load",
    "load_index",
    "balance_summary",
    "plan_metrics",
    "routing_imbalance",
    "replication",
]


def node_of(snapshot: Snapshot, placement: Placement = None) -> np.ndarray:
    """The node index of every key group under ``placement`` (see the module docstring)."""
    arrays = snapshot.arrays()
    if placement is None:
        return arrays.current
    if isinstance(placement, np.ndarray):
        return placement
    index = arrays.node_index
    return np.fromiter(
        (index[placement[k]] for k in arrays.key_group_ids),
        dtype=np.int64,
        count=len(arrays.key_group_ids),
    )


def node_loads(snapshot: Snapshot, placement: Placement = None) -> np.ndarray:
    """Total key-group load on each node, in ``snapshot.nodes`` order."""
    return snapshot.arrays().node_loads(node_of(snapshot, placement))


def load_by_node(snapshot: Snapshot, assignment: Mapping[str, str]) -> dict[str, float]:
    """Each node's load under ``assignment`` by node id (key groups summed in snapshot order):
    the per-node view explanations and move schedules report."""
    load = {n.id: 0.0 for n in snapshot.nodes}
    for kg in snapshot.key_groups:
        load[assignment[kg.id]] += kg.load
    return load


def utilisation(snapshot: Snapshot, placement: Placement = None) -> np.ndarray:
    """Load over capacity of each node, in ``snapshot.nodes`` order."""
    return node_loads(snapshot, placement) / snapshot.arrays().capacities


#: The float noise that comparisons of recomputed figures forgive (sums of the same numbers in
#: another order differ in the last bits): relative, and absolute near zero. ABS_NOISE is also the
#: finer relative slack of greedy steps, budgets and targets (``limit * (1 + ABS_NOISE)``): a limit
#: met exactly still counts as met, and a step must gain more than noise.
REL_NOISE = 1e-9
ABS_NOISE = 1e-12


def same_figure(a: float, b: float) -> bool:
    """Whether two computed figures are equal up to float noise (:data:`REL_NOISE`, :data:`ABS_NOISE`)."""
    return math.isclose(a, b, rel_tol=REL_NOISE, abs_tol=ABS_NOISE)


def within_noise(value: float, limit: float) -> bool:
    """Whether a computed ``value`` stays within ``limit`` up to float noise (:data:`REL_NOISE` of
    the limit and :data:`ABS_NOISE`).

    >>> within_noise(10.000000001, 10.0), within_noise(10.001, 10.0)
    (True, False)
    """
    return value <= limit * (1 + REL_NOISE) + ABS_NOISE


def lexicographically_less(a: Sequence[float], b: Sequence[float]) -> bool:
    """Whether objective ``a`` is below ``b``, level by level: the first level where they differ by
    more than float noise decides.

    >>> lexicographically_less((1.0, 2.0), (1.0 + 1e-13, 3.0)), lexicographically_less((1.0, 2.0), (1.0, 2.0))
    (True, False)
    """
    for x, y in zip(a, b):
        if not same_figure(x, y):
            return x < y
    return False


def mean_utilisation(snapshot: Snapshot) -> float:
    """Total load over the total capacity of the active nodes: the target of load balancing."""
    arrays = snapshot.arrays()
    return mean_utilisation_of(arrays.loads, arrays.capacities, arrays.active)


def mean_utilisation_of(loads: np.ndarray, capacities: np.ndarray, active: np.ndarray) -> float:
    """:func:`mean_utilisation` from arrays: the ``loads`` of the key groups (or of groups of them),
    the nodes' ``capacities`` and which nodes are ``active``; 0 where no capacity is active.

    >>> mean_utilisation_of(np.array([1.0, 2.0]), np.array([1.0, 1.0, 4.0]), np.array([True, True, False]))
    1.5
    """
    capacity = capacities[active].sum()
    return float(loads.sum() / capacity) if capacity > 0 else 0.0


def _active_utilisation(snapshot: Snapshot, placement: Placement) -> np.ndarray:
    return utilisation(snapshot, placement)[snapshot.arrays().active]


def load_distance(snapshot: Snapshot, placement: Placement = None) -> float:
    """ALBIC's load distance: ``max |u_i - mean|`` over the active nodes."""
    u = _active_utilisation(snapshot, placement)
    return float(np.abs(u - mean_utilisation(snapshot)).max())


def _pct(part: float, whole: float) -> float:
    return float(100.0 * part / whole) if whole > 0 else 0.0


def load_distance_pct(snapshot: Snapshot, placement: Placement = None) -> float:
    """Load distance as a percentage of the mean utilisation (0 when there is no load)."""
    return _pct(load_distance(snapshot, placement), mean_utilisation(snapshot))


def imbalance(snapshot: Snapshot, placement: Placement = None) -> float:
    """``max u_i - avg u_i`` over the active nodes (consistent grouping, Flux)."""
    u = _active_utilisation(snapshot, placement)
    return float(u.max() - u.mean())


def skew(snapshot: Snapshot, placement: Placement = None) -> float:
    """``max u_i / avg u_i`` over the active nodes (Elasticutor); 1.0 when there is no load."""
    u = _active_utilisation(snapshot, placement)
    avg = u.mean()
    return float(u.max() / avg) if avg > 0 else 1.0


def removing_load(snapshot: Snapshot, placement: Placement = None) -> float:
    """Load still on removing nodes (ALBIC's second objective, ``sum_{n in B} load_n``)."""
    return float(node_loads(snapshot, placement)[snapshot.arrays().removing].sum())


def moved(snapshot: Snapshot, placement: Placement) -> np.ndarray:
    """Mask of the key groups whose node differs from the current one."""
    return node_of(snapshot, placement) != snapshot.arrays().current


def moves(snapshot: Snapshot, placement: Placement) -> int:
    """Number of key groups that change node."""
    return int(moved(snapshot, placement).sum())


def migration_cost(snapshot: Snapshot, placement: Placement) -> float:
    """Sum of the state sizes of the key groups that change node."""
    return float(snapshot.arrays().state_sizes[moved(snapshot, placement)].sum())


def migration_cost_pct(snapshot: Snapshot, placement: Placement) -> float:
    """Migration cost as a percentage of all state (0 when there is no state)."""
    return _pct(migration_cost(snapshot, placement), float(snapshot.arrays().state_sizes.sum()))


def _local_and_total_traffic(snapshot: Snapshot, placement: Placement) -> tuple[float, float]:
    traffic = snapshot.arrays().traffic
    total = float(traffic.data.sum())
    if total == 0:
        return 0.0, 0.0
    where = node_of(snapshot, placement)
    coo = traffic.tocoo()
    local = float(coo.data[where[coo.row] == where[coo.col]].sum())
    return local, total


def collocation_factor(snapshot: Snapshot, placement: Placement = None) -> float:
    """Share of the traffic rate between key groups on the same node (1.0 without traffic)."""
    local, total = _local_and_total_traffic(snapshot, placement)
    return local / total if total > 0 else 1.0


def remote_traffic(snapshot: Snapshot, placement: Placement = None) -> float:
    """Traffic rate between key groups on different nodes."""
    local, total = _local_and_total_traffic(snapshot, placement)
    return total - local


def effective_load(snapshot: Snapshot, placement: Placement = None, *, remote_cost: float) -> float:
    """Total load plus ``remote_cost`` per remote tuple (the numerator of ALBIC's load index)."""
    return float(snapshot.arrays().loads.sum()) + remote_cost * remote_traffic(snapshot, placement)


def load_index(
    snapshot: Snapshot,
    placement: Placement = None,
    *,
    remote_cost: float,
    reference: float | None = None,
) -> float:
    """ALBIC's load index: effective load relative to ``reference``.

    ``reference`` is typically the effective load of a reference period; by default it is this
    period's load with every tuple local, so the index is 1.0 for perfect collocation.
    """
    if reference is None:
        reference = float(snapshot.arrays().loads.sum())
    value = effective_load(snapshot, placement, remote_cost=remote_cost)
    return value / reference if reference > 0 else 1.0


def _load_metrics(snapshot: Snapshot, where: np.ndarray) -> dict[str, float]:
    """The load metrics of one placement (node indices), each the very number its function above
    gives, from one pass over the node loads: every plan reports them, and a planner of small
    snapshots (SSM: m = 64 in well under a millisecond) would otherwise spend more time here,
    summing the same loads once per metric, than solving."""
    arrays = snapshot.arrays()
    loads = arrays.node_loads(where)
    u = (loads / arrays.capacities)[arrays.active]
    mean = mean_utilisation(snapshot)
    distance = float(np.abs(u - mean).max())
    peak, avg = u.max(), u.mean()
    return {
        "load_distance": distance,
        "load_distance_pct": _pct(distance, mean),
        "imbalance": float(peak - avg),
        "skew": float(peak / avg) if avg > 0 else 1.0,
        "max_utilisation": float(peak),
        "mean_utilisation": mean,
        "removing_load": float(loads[arrays.removing].sum()),
    }


def balance_summary(snapshot: Snapshot, placement: Placement = None) -> dict[str, float]:
    """The balance metrics of one placement, by name.

    >>> from albic.core.model import Node, KeyGroup, Snapshot
    >>> snap = Snapshot([Node("n1"), Node("n2")], [KeyGroup("a", "op", 3.0)], {"a": "n1"})
    >>> summary = balance_summary(snap)
    >>> summary["load_distance"] == load_distance(snap), summary["skew"], summary["collocation_factor"]
    (True, 2.0, 1.0)
    """
    where = node_of(snapshot, placement)
    local, total = _local_and_total_traffic(snapshot, where)
    return {
        **_load_metrics(snapshot, where),
        "collocation_factor": local / total if total > 0 else 1.0,
        "remote_traffic": total - local,
    }


def plan_metrics(snapshot: Snapshot, assignment: Mapping[str, str]) -> dict[str, Any]:
    """The metrics albic attaches to every plan: balance after, migration, and balance before."""
    arrays = snapshot.arrays()
    where = node_of(snapshot, assignment)
    metrics: dict[str, Any] = balance_summary(snapshot, where)
    changed = where != arrays.current
    metrics["moves"] = int(changed.sum())
    metrics["migration_cost"] = float(arrays.state_sizes[changed].sum())
    metrics["migration_cost_pct"] = _pct(metrics["migration_cost"], float(arrays.state_sizes.sum()))
    before = _load_metrics(snapshot, arrays.current)
    metrics["load_distance_before"] = before["load_distance"]
    metrics["load_distance_pct_before"] = before["load_distance_pct"]
    metrics["imbalance_before"] = before["imbalance"]
    return metrics


# -- stream partitioning (consistent-grouping paper, Table 4) ---------------------------------------


def routing_imbalance(
    workers: np.ndarray, n_workers: int, capacities: np.ndarray | None = None, *, normalized: bool = True
) -> float:
    """Imbalance of a routed stream: ``max u_w - avg u_w`` with ``u_w`` the messages a worker got
    over its capacity (1 by default); ``normalized`` divides by ``avg u_w`` (the paper's Table 1)."""
    counts = np.bincount(np.asarray(workers, dtype=np.int64), minlength=n_workers).astype(float)
    u = counts / (np.ones(n_workers) if capacities is None else np.asarray(capacities, dtype=float))
    spread = float(u.max() - u.mean())
    if not normalized:
        return spread
    return spread / float(u.mean()) if u.mean() > 0 else 0.0


def replication(keys: np.ndarray, workers: np.ndarray) -> float:
    """Memory cost of a routed stream: distinct (key, worker) pairs per distinct key (1.0 when every
    key stays on one worker, up to the number of workers for shuffle grouping)."""
    import pandas as pd

    key_codes = pd.factorize(np.asarray(keys))[0].astype(np.int64)
    workers = np.asarray(workers, dtype=np.int64)
    if len(key_codes) == 0:
        return 1.0
    pairs = key_codes * (int(workers.max()) + 1) + workers
    return float(len(pd.unique(pairs)) / (key_codes.max() + 1))
