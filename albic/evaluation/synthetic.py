"""The ALBIC paper's synthetic instances (albic.txt sections 5.1 and 5.3), for tests, benchmarks and
notebooks.

Section 5.1: "Key groups are evenly allocated, such that each node has the same number of key
groups. The load of each key group is initially set to the mean, which is then adjusted by a
percentage, randomly chosen from the range [-5%, 5%]. [...] we further adjust the load on 20% of the
nodes, which is controlled by a variable called varies. Half of the nodes whose load are changed gets
a reduction of 0.5 * varies in their load and the other half gets an increase in load of
0.5 * varies. The load changes are done by modifying the load of a randomly selected set of key
groups on a node." Section 5.3 adds "x% of the key groups [with] 1-1 communication" and, per
iteration, "the load of 20% of the nodes is adjusted by a percentage, randomly chosen from the range
[-2%, 2%]" (:func:`perturb`).

The reading implemented here:

- ``varies`` is a fraction (0.2 for the paper's 20%); a shifted node's load changes by
  ``+-varies/2`` of its load, spread evenly over a random half of its key groups (a key group's load
  never drops below zero).
- Key groups of ``n_operators`` operators (ids ``op{j}/{i}``, round-robin), placed evenly: a random
  permutation cut into equal consecutive blocks, one per node.
- ``one_to_one`` (a fraction) of the key groups are paired 1-to-1: key group ``i`` of operator
  ``j`` (``j`` even) sends ``pair_rate`` to key group ``i`` of operator ``j+1`` (both count towards
  the fraction; no key group is in two pairs, so with an odd number of operators the last one's key
  groups cannot be paired and the fraction is capped). Every other key group of an operator with a downstream operator sends ``spread_rate``
  to each of ``fan_out`` random downstream key groups (a partial-partitioning pattern that gives
  little to collocate). The random placement leaves most pairs apart.
- State sizes are uniform in ``[50, 150)``, so a budget by count and one by cost behave alike.

Example
-------
>>> snap = synthetic_snapshot(n_nodes=4, n_key_groups=16, n_operators=2, varies=0.4, seed=1)
>>> len(snap.nodes), len(snap.key_groups), sorted(set(snap.assignment.values()))
(4, 16, ['n0', 'n1', 'n2', 'n3'])
>>> from albic.core import metrics
>>> metrics.load_distance_pct(snap) > 5
True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from albic.core.model import KeyGroup, Node, Snapshot, Traffic

__all__ = ["SyntheticSettings", "synthetic_snapshot", "perturb"]


@dataclass(frozen=True)
class SyntheticSettings:
    """The generator's fixed figures (module docstring), the same in every experiment of the
    paper: each key group's load ``+-jitter`` around the mean, ``shifted`` of the nodes changed by
    ``varies``, ``node_load`` per node before the changes (50: a node half busy), and the traffic:
    ``pair_rate`` per one-to-one pair, ``spread_rate`` to each of ``fan_out`` downstream key
    groups otherwise."""

    jitter: float = 0.05
    shifted: float = 0.2
    node_load: float = 50.0
    pair_rate: float = 100.0
    spread_rate: float = 1.0
    fan_out: int = 3


def synthetic_snapshot(
    n_nodes: int = 20,
    n_key_groups: int = 400,
    n_operators: int = 10,
    *,
    varies: float = 0.2,
    one_to_one: float = 0.0,
    seed: int = 0,
    settings: SyntheticSettings = SyntheticSettings(),
) -> Snapshot:
    """One instance of the paper's generator; see the module docstring for the reading."""
    if n_nodes < 1 or n_key_groups < n_nodes or n_key_groups % n_nodes:
        raise ValueError(
            f"need n_key_groups to be a positive multiple of n_nodes, got n_nodes={n_nodes}, "
            f"n_key_groups={n_key_groups}"
        )
    if not 1 <= n_operators <= n_key_groups:
        raise ValueError(f"n_operators must be in [1, n_key_groups], got {n_operators}")
    for name, value in (
        ("varies", varies),
        ("jitter", settings.jitter),
        ("shifted", settings.shifted),
        ("one_to_one", one_to_one),
    ):
        if not 0 <= value <= 1:
            raise ValueError(f"{name} is a fraction in [0, 1], got {value}")
    rng = np.random.default_rng(seed)
    per_node = n_key_groups // n_nodes
    jitter = settings.jitter
    loads = np.full(n_key_groups, settings.node_load / per_node) * (
        1 + rng.uniform(-jitter, jitter, n_key_groups)
    )
    # Even allocation: a random permutation in equal blocks, one block per node.
    order = rng.permutation(n_key_groups)
    node_of = np.empty(n_key_groups, dtype=np.int64)
    node_of[order] = np.arange(n_key_groups) // per_node
    n_shifted = int(round(settings.shifted * n_nodes))
    for rank, node in enumerate(rng.permutation(n_nodes)[:n_shifted].tolist()):
        sign = -1.0 if rank < n_shifted // 2 else 1.0
        members = np.flatnonzero(node_of == node)
        chosen = rng.choice(members, size=max(1, members.size // 2), replace=False)
        delta = sign * 0.5 * varies * loads[members].sum() / chosen.size
        loads[chosen] = np.maximum(loads[chosen] + delta, 0.0)
    states = rng.uniform(50, 150, n_key_groups).round()
    ids = [f"op{k % n_operators}/{k // n_operators}" for k in range(n_key_groups)]
    key_groups = [
        KeyGroup(ids[k], f"op{k % n_operators}", float(loads[k]), float(states[k]), index=k // n_operators)
        for k in range(n_key_groups)
    ]
    nodes = [Node(f"n{i}") for i in range(n_nodes)]
    assignment = {ids[k]: f"n{int(node_of[k])}" for k in range(n_key_groups)}
    traffic = _traffic(rng, n_key_groups, n_operators, one_to_one, settings)
    return Snapshot(
        nodes, key_groups, assignment, [Traffic(ids[a], ids[b], r) for a, b, r in traffic], period=0
    )


def _traffic(rng, n_kg, n_ops, one_to_one, settings: SyntheticSettings):
    """Edges ``(src, dst, rate)`` by key-group position; see the module docstring."""
    if n_ops < 2:
        return []
    # Candidate pairs: key group k of an even operator j with key group k + 1 (same index, operator
    # j + 1), so that no key group is in two pairs.
    starts = [k for k in range(n_kg) if k % n_ops % 2 == 0 and k % n_ops < n_ops - 1 and k + 1 < n_kg]
    n_pairs = min(len(starts), int(round(one_to_one * n_kg / 2)))
    paired_src = set(rng.choice(starts, size=n_pairs, replace=False).tolist()) if n_pairs else set()
    paired = paired_src | {k + 1 for k in paired_src}
    edges = [(k, k + 1, settings.pair_rate) for k in sorted(paired_src)]
    downstream = {j: list(range(j + 1, n_kg, n_ops)) for j in range(n_ops - 1)}
    # The unpaired key groups of each downstream operator, once per operator (not once per key
    # group: that was quadratic, hours at 100,000 key groups).
    unpaired = {j: np.array([t for t in ks if t not in paired] or ks) for j, ks in downstream.items()}
    for k in range(n_kg):
        j = k % n_ops
        if j == n_ops - 1 or k in paired_src:
            continue
        targets = unpaired[j]
        for t in rng.choice(targets, size=min(settings.fan_out, len(targets)), replace=False).tolist():
            edges.append((k, int(t), settings.spread_rate))
    return edges


def perturb(snapshot: Snapshot, *, fraction: float = 0.2, change: float = 0.02, seed: int = 0) -> Snapshot:
    """The next period of section 5.3: the key groups of ``fraction`` of the nodes get their load
    scaled by one factor in ``[1 - change, 1 + change]`` per node (placement unchanged).

    >>> snap = synthetic_snapshot(n_nodes=4, n_key_groups=8, n_operators=2, seed=0)
    >>> nxt = perturb(snap, seed=3)
    >>> nxt.assignment == snap.assignment, nxt.key_groups != snap.key_groups
    (True, True)
    """
    rng = np.random.default_rng(seed)
    nodes = [n.id for n in snapshot.nodes]
    chosen = set(rng.choice(nodes, size=max(1, int(round(fraction * len(nodes)))), replace=False).tolist())
    factor = {n: 1 + rng.uniform(-change, change) for n in sorted(chosen)}
    key_groups = [
        KeyGroup(
            kg.id,
            kg.operator,
            kg.load * factor.get(snapshot.assignment[kg.id], 1.0),
            kg.state_size,
            kg.index,
            dict(kg.resources),
            kg.arrival_rate,
            kg.service_rate,
        )
        for kg in snapshot.key_groups
    ]
    period = snapshot.period + 1 if isinstance(snapshot.period, int) else snapshot.period
    return Snapshot(
        snapshot.nodes, key_groups, snapshot.assignment, snapshot.traffic, snapshot.operators, period
    )
