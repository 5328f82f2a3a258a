"""The order in which a plan's moves can be carried out: throttled batches, as Cruise Control's
executor runs a Kafka proposal.

:func:`schedule` cuts the moves into batches that run one after the other; the moves of one batch
run at the same time. Rules, in this order:

1. **Concurrency**: no node sends or receives more than ``max_per_node`` moves in one batch
   (Cruise Control's per-broker limit on concurrent partition movements; its default is 5).
2. **Priority**: moves off removing nodes first, then moves off overloaded nodes (utilisation
   above the mean before the plan), then the rest; within a class the larger load first, then the
   plan's order. Each batch is filled greedily in this order. (Each move's ``reason`` is the one
   :mod:`albic.core.reasons` gives it, the same word ``albic explain`` prints: ``drain``,
   ``collocate`` or ``balance``.)
3. **Capacity**: a move joins a batch only if its target's load after the batch stays within the
   target's limit, the larger of its load before and after the whole plan ("no node hotter after
   a batch than at its start or its end"; the plan itself allows exactly that). Passes over the
   remaining moves repeat while they add one, since a move may fit once another of the same batch
   has made room on its target. When no remaining move fits -- e.g. two nodes that swap key
   groups of equal load with ``max_per_node=1`` -- the first one by priority goes anyway and the
   batch lists the nodes left over their limit in ``over_limit``.

With ``bandwidth`` (bytes per second per node, as Kafka's replication throttle is per broker), a
batch takes as long as its busiest node needs: ``max over nodes of max(bytes sent, bytes
received) / bandwidth``.

Example: two key groups leave a removing node, one at a time
------------------------------------------------------------
>>> from albic.core.model import Node, KeyGroup, Snapshot, Move
>>> from albic.core.plan import Plan
>>> snap = Snapshot([Node("a", removing=True), Node("b"), Node("c")],
...                 [KeyGroup("x", "op", 2.0, 100), KeyGroup("y", "op", 1.0, 300)],
...                 {"x": "a", "y": "a"})
>>> plan = Plan("by-hand", "FEASIBLE", {"x": "b", "y": "c"},
...             moves=(Move("x", "a", "b", 100.0), Move("y", "a", "c", 300.0)))
>>> s = schedule(plan, snap, max_per_node=1, bandwidth=100.0)
>>> [[m["key_group"] for m in b["moves"]] for b in s["batches"]], [b["seconds"] for b in s["batches"]]
([['x'], ['y']], [1.0, 3.0])
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from albic.base.errors import InvalidParameterError
from albic.base.formats import count, seconds, size
from albic.core import metrics
from albic.core.explain import check_fits
from albic.core.model import Snapshot
from albic.core.plan import Plan
from albic.core.reasons import move_reasons

__all__ = [
    "schedule",
    "schedule_table",
    "DEFAULT_MAX_PER_NODE",
    "Task",
    "batch_tasks",
    "load_limits",
    "check_schedule_parameters",
]

DEFAULT_MAX_PER_NODE = 5
_TOL = 1e-9


@dataclass(frozen=True)
class Task:
    """One unit of a batch: ``slots`` are the nodes whose concurrency it takes (one each), ``load``
    the change of each node's load when it is done, ``rank`` its priority class (0 drain, 1
    overload, 2 other), ``weight`` the order within a class (larger first), ``item`` what it
    carries (a :class:`Move`, a Kafka partition's reassignment)."""

    slots: tuple[str, ...]
    load: Mapping[str, float]
    rank: int
    weight: float
    item: Any = None


def batch_tasks(
    tasks: list[Task], before: Mapping[str, float], limit: Mapping[str, float], max_per_node: int
) -> list[tuple[list[Task], list[str]]]:
    """The tasks in batches by the rules of the module docstring: ``(tasks, nodes over their
    limit after the batch)`` per batch, in order. ``before`` is each node's load now, ``limit``
    the most it may carry after any batch; ``tasks`` are taken in priority order (rank, then
    larger weight, then their order)."""
    pending = [t for _, t in sorted(enumerate(tasks), key=lambda it: (it[1].rank, -it[1].weight, it[0]))]
    load = dict(before)
    out = []
    while pending:
        busy = dict.fromkeys(load, 0)
        batch: list[Task] = []

        def take(task: Task) -> None:
            batch.append(task)
            for node in task.slots:
                busy[node] += 1
            for node, delta in task.load.items():
                load[node] += delta

        def fits(task: Task) -> bool:
            return all(busy[n] < max_per_node for n in task.slots) and all(
                load[n] + d <= limit[n] * (1 + _TOL) + _TOL for n, d in task.load.items() if d > 0
            )

        # Fill in priority order; a task that does not fit yet may fit once others of the same
        # batch have made room on its targets, so passes repeat until one adds nothing.
        added = True
        while added and pending:
            added = False
            for task in list(pending):
                if fits(task):
                    take(task)
                    pending.remove(task)
                    added = True
            if not batch:  # nothing fits the limits (e.g. a swap): the first task goes anyway
                take(pending.pop(0))
                added = True
        over = sorted(
            {n for t in batch for n, d in t.load.items() if d > 0 and load[n] > limit[n] * (1 + _TOL) + _TOL}
        )
        out.append((batch, over))
    return out


def schedule(
    plan: Plan,
    snapshot: Snapshot,
    *,
    max_per_node: int = DEFAULT_MAX_PER_NODE,
    bandwidth: float | None = None,
) -> dict[str, Any]:
    """The plan's moves as ordered batches (see the module docstring).

    Returns ``{"max_per_node", "bandwidth", "batches": [{"batch", "moves": [{"key_group",
    "from", "to", "cost", "reason"}], "bytes", "seconds", "over_limit"}], "seconds"}`` where
    ``reason`` is the move's reason (:func:`albic.core.reasons.move_reasons`), ``seconds`` is None
    without a bandwidth and ``over_limit`` lists the nodes a forced batch lifts over their limit.
    """
    check_schedule_parameters(max_per_node, bandwidth)
    check_fits(plan, snapshot)
    kg_load = {kg.id: kg.load for kg in snapshot.key_groups}
    before, limit, reason = load_limits(plan, snapshot)
    tasks = [
        Task(
            (m.source, m.target),
            {m.source: -kg_load[m.key_group], m.target: kg_load[m.key_group]},
            _RANK[reason(m.source)],
            kg_load[m.key_group],
            m,
        )
        for m in plan.moves
    ]
    reasons = {m.key_group: why for m, (why, _) in zip(plan.moves, move_reasons(snapshot, plan))}
    batches = []
    for tasks_of, over in batch_tasks(tasks, before, limit, max_per_node):
        batch = [t.item for t in tasks_of]
        sent: dict[str, float] = {}
        received: dict[str, float] = {}
        for m in batch:
            sent[m.source] = sent.get(m.source, 0.0) + m.cost
            received[m.target] = received.get(m.target, 0.0) + m.cost
        busiest = max([*sent.values(), *received.values()])
        batches.append(
            {
                "batch": len(batches) + 1,
                "moves": [
                    {
                        "key_group": m.key_group,
                        "from": m.source,
                        "to": m.target,
                        "cost": m.cost,
                        "reason": reasons[m.key_group],
                    }
                    for m in batch
                ],
                "bytes": math.fsum(m.cost for m in batch),
                "seconds": None if bandwidth is None else busiest / bandwidth,
                "over_limit": over,
            }
        )
    total = None if bandwidth is None else math.fsum(b["seconds"] for b in batches)
    return {"max_per_node": max_per_node, "bandwidth": bandwidth, "batches": batches, "seconds": total}


_RANK = {"drain": 0, "overload": 1, "other": 2}


def check_schedule_parameters(
    max_per_node: Any, bandwidth: Any, names: tuple[str, str] = ("max_per_node", "bandwidth")
) -> None:
    """:class:`InvalidParameterError` unless ``max_per_node`` is an int >= 1 and ``bandwidth`` a
    number of bytes per second > 0 or None."""
    if isinstance(max_per_node, bool) or not isinstance(max_per_node, int) or max_per_node < 1:
        raise InvalidParameterError(f"{names[0]} = {max_per_node!r}, must be an int >= 1")
    if bandwidth is not None and (
        isinstance(bandwidth, bool)
        or not isinstance(bandwidth, (int, float))
        or not math.isfinite(bandwidth)
        or bandwidth <= 0
    ):
        raise InvalidParameterError(f"{names[1]} = {bandwidth!r}, must be a number of bytes/s > 0 or None")


def load_limits(plan: Plan, snapshot: Snapshot):
    """``(load before, limit, reason)``: each node's load now, the most it may carry after a batch
    (the larger of before and after the whole plan) and ``reason(source node)``: ``drain`` off a
    removing node, ``overload`` off a node above the mean before the plan, else ``other``."""
    nodes = {n.id: n for n in snapshot.nodes}
    before = metrics.load_by_node(snapshot, snapshot.assignment)
    final = dict(snapshot.assignment)
    final.update({m.key_group: m.target for m in plan.moves})
    after = metrics.load_by_node(snapshot, final)
    limit = {i: max(before[i], after[i]) for i in nodes}
    active = [n for n in snapshot.nodes if not n.removing]
    mean = sum(before.values()) / sum(n.capacity for n in active)

    def reason(source: str) -> str:
        if nodes[source].removing:
            return "drain"
        if before[source] / nodes[source].capacity > mean * (1 + _TOL):
            return "overload"
        return "other"

    return before, limit, reason


def schedule_table(result: Mapping[str, Any]) -> str:
    """The schedule as a text table, one line per move, a total line per batch."""
    lines = [f"{'batch':>5}  {'key group':<24} {'from':<10} {'to':<10} {'state':>10}  reason"]
    for b in result["batches"]:
        for m in b["moves"]:
            lines.append(
                f"{b['batch']:>5}  {m['key_group']:<24} {m['from']:<10} {m['to']:<10} "
                f"{size(m['cost']):>10}  {m['reason']}"
            )
        took = "" if b["seconds"] is None else f", {seconds(b['seconds'])}"
        over = f"; over their limit after it: {', '.join(b['over_limit'])}" if b["over_limit"] else ""
        lines.append(
            f"{'':>5}  batch {b['batch']}: {count(len(b['moves']), 'move')}, {size(b['bytes'])}{took}{over}"
        )
    total = "" if result["seconds"] is None else f", estimated {seconds(result['seconds'])}"
    n_moves = sum(len(b["moves"]) for b in result["batches"])
    lines.append(
        f"{count(len(result['batches']), 'batch', 'batches')}, {count(n_moves, 'move')}, "
        f"at most {result['max_per_node']} per node at once{total}"
    )
    return "\n".join(lines)
