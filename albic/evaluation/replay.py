"""Replay statistics periods through a planner, carrying the placement from period to period.

Statistics are placement-free (:func:`albic.io.read_snapshots`); :func:`replay` supplies the
placement. Period t is planned on the placement the plan of period t-1 produced (the first period on
``initial``: Storm's default split by default), with the nodes of period t:

**Node-count convention.** The nodes a period *wants* are its snapshot's nodes (``n1 .. n_count``
of the node-count series). The replayed snapshot holds those nodes, plus every node that is not
wanted but still holds key groups under the carried placement, marked ``removing=True`` (the
planner moves key groups off as its budget allows; a node that still holds some next period stays,
still removing). A wanted node that holds nothing is a new node. A node that is neither wanted nor
holding anything is gone.

Each period gives one row: the balance before and after the plan, its moves and migration cost,
solve seconds, collocation factor and ALBIC's load index (``remote_cost`` per remote tuple, relative
to the period's load with every tuple local; :mod:`albic.core.metrics`). A planner that rejects a
snapshot (:class:`~albic.base.errors.UnsupportedSnapshotError`) gets status ``UNSUPPORTED`` and one that
fails otherwise ``ERROR`` (with the message in ``error``); in both cases the placement is kept and
the replay goes on.

Example
-------
>>> from albic.core.model import Node, KeyGroup, Snapshot
>>> def period(name, nodes):
...     kgs = [KeyGroup(f"k{i}", "op", float(i + 1), 10.0, index=i) for i in range(4)]
...     return Snapshot([Node(n) for n in nodes], kgs, {f"k{i}": nodes[0] for i in range(4)},
...                     period=name)
>>> rows = replay([period("t0", ["n1", "n2"]), period("t1", ["n1"])], "flux")
>>> rows[["period", "nodes", "removing", "moves"]].to_dict("records")
[{'period': 't0', 'nodes': 2, 'removing': 0, 'moves': 2}, {'period': 't1', 'nodes': 1, 'removing': 1, 'moves': 2}]
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pandas as pd

from albic.base.errors import UnsupportedSnapshotError
from albic.base.progress import progress
from albic.core import metrics
from albic.core.model import Node, Snapshot
from albic.core.planner import Planner, get_planner

__all__ = ["replay", "REPLAY_COLUMNS", "Initial", "carried_snapshot"]

Initial = str | Mapping[str, str] | Callable[[Snapshot], Mapping[str, str]] | None

#: The columns of a replay table, in order.
REPLAY_COLUMNS = (
    "planner",
    "step",
    "period",
    "status",
    "nodes",
    "removing",
    "load_distance_before",
    "load_distance_pct_before",
    "imbalance_before",
    "load_distance",
    "load_distance_pct",
    "imbalance",
    "skew",
    "moves",
    "migration_cost",
    "migration_cost_pct",
    "total_state",
    "seconds",
    "collocation_factor",
    "remote_traffic",
    "load_index",
    "error",
    "fallback",
)


def _initial_placement(snapshot: Snapshot, initial: Initial) -> dict[str, str]:
    if initial is None:
        return dict(snapshot.assignment)
    if isinstance(initial, str):
        return dict(get_planner(initial).plan(snapshot).assignment)
    if callable(initial):
        return dict(initial(snapshot))
    return dict(initial)


def carried_snapshot(snapshot: Snapshot, placement: Mapping[str, str]) -> Snapshot:
    """``snapshot`` with ``placement`` and the nodes of the node-count convention (module doc).

    A key group that ``placement`` does not know (new this period) stays where ``snapshot`` puts it.
    """
    wanted = {node.id for node in snapshot.nodes}
    placement = {kg.id: placement.get(kg.id, snapshot.assignment[kg.id]) for kg in snapshot.key_groups}
    holding = dict.fromkeys(placement.values())
    leaving = [Node(node_id, removing=True) for node_id in holding if node_id not in wanted]
    return Snapshot(
        nodes=[*snapshot.nodes, *leaving],
        key_groups=snapshot.key_groups,
        assignment=placement,
        traffic=snapshot.traffic,
        operators=snapshot.operators,
        period=snapshot.period,
    )


def _row(snapshot: Snapshot, before: Any, after: Any, remote_cost: float) -> dict[str, Any]:
    arrays = snapshot.arrays()
    return {
        "nodes": int(arrays.active.sum()),
        "removing": int(arrays.removing.sum()),
        "load_distance_before": metrics.load_distance(snapshot, before),
        "load_distance_pct_before": metrics.load_distance_pct(snapshot, before),
        "imbalance_before": metrics.imbalance(snapshot, before),
        "load_distance": metrics.load_distance(snapshot, after),
        "load_distance_pct": metrics.load_distance_pct(snapshot, after),
        "imbalance": metrics.imbalance(snapshot, after),
        "skew": metrics.skew(snapshot, after),
        "moves": metrics.moves(snapshot, after),
        "migration_cost": metrics.migration_cost(snapshot, after),
        "migration_cost_pct": metrics.migration_cost_pct(snapshot, after),
        "total_state": float(arrays.state_sizes.sum()),
        "collocation_factor": metrics.collocation_factor(snapshot, after),
        "remote_traffic": metrics.remote_traffic(snapshot, after),
        "load_index": metrics.load_index(snapshot, after, remote_cost=remote_cost),
    }


def replay(
    snapshots: Iterable[Snapshot],
    planner: str | Planner,
    *,
    initial: Initial = "storm_default",
    remote_cost: float = 0.1,
    label: str | None = None,
    show_progress: bool | None = None,
    progress_label: str | None = None,
) -> pd.DataFrame:
    """Plan every period with ``planner`` on the placement carried over; one row per period.

    ``planner`` is a registered name (default parameters) or a :class:`~albic.core.planner.Planner`.
    ``initial`` is the first period's placement: a planner name (default ``"storm_default"``), a
    mapping ``{key group: node}``, a function of the first snapshot, or ``None`` for the first
    snapshot's own assignment. ``label`` names the planner in the table (default its ``name``),
    ``progress_label`` its progress bar (default ``label``).
    """
    if isinstance(planner, str):
        planner = get_planner(planner)
    label = label or planner.name
    snapshots = list(snapshots) if not hasattr(snapshots, "__len__") else snapshots
    rows: list[dict[str, Any]] = []
    placement: dict[str, str] | None = None
    for step, stats in enumerate(
        progress(snapshots, f"replay {progress_label or label}", enabled=show_progress)
    ):
        if placement is None:
            placement = _initial_placement(stats, initial)
        snapshot = carried_snapshot(stats, placement).validate()
        status, error, after = "", "", snapshot.arrays().current
        started = time.perf_counter()
        try:
            plan = planner.plan(snapshot)
        except UnsupportedSnapshotError as err:
            status, error = "UNSUPPORTED", str(err)
        except KeyboardInterrupt:
            raise
        except Exception as err:  # recorded, not raised: one failing planner must not stop a comparison
            status = "ERROR"
            error = f"{type(err).__name__}: {err}"
            if not str(err):
                error += " " + traceback.format_exc(limit=1)
        else:
            status, after = str(plan.status.value if hasattr(plan.status, "value") else plan.status), None
            placement = dict(plan.assignment)
        seconds = time.perf_counter() - started
        after = metrics.node_of(snapshot, placement) if after is None else after
        row = {"planner": label, "step": step, "period": snapshot.period, "status": status}
        row.update(_row(snapshot, snapshot.arrays().current, after, remote_cost))
        row.update(seconds=plan.seconds if status not in ("UNSUPPORTED", "ERROR") else seconds, error=error)
        # A plan another planner made (e.g. mtm without a table: SSM's) is reported as such.
        row["fallback"] = (
            str(plan.details.get("fallback") or "") if status not in ("UNSUPPORTED", "ERROR") else ""
        )
        rows.append(row)
    return pd.DataFrame(rows, columns=list(REPLAY_COLUMNS))
