"""What vanilla Flink does when it rescales: even contiguous key-group ranges (baseline).

Flink gives subtask ``i`` of ``p`` the key groups ``ceil(i * maxP / p) .. floor(((i + 1) * maxP -
1) / p)`` whatever load they carry and wherever they were (``KeyGroupRangeAssignment``; see
:mod:`albic.rollout.flink`). This baseline shows what Flink's own rescaling costs and how it
balances, next to albic's plans.

Reading chosen here: the subtasks are the active nodes in snapshot order (subtask ``i`` = the
``i``-th node that is not removing); for each operator separately, its key groups in ``index``
order (those without an index after, in snapshot order, as :class:`StormDefaultPlanner` orders
them) are Flink key groups ``0 .. m-1``, so ``maxP = m``. Loads, capacities and budgets are ignored,
as Flink ignores them. ``details["ranges"]`` lists ``[node id, start, end]`` (inclusive) per operator.

Example: 10 key groups over 3 nodes are 4, 3, 3 in Flink (Storm's default would cut 3, 3, 4)
-------------------------------------------------------------------------------------------
>>> from albic.core.model import Node, KeyGroup, Snapshot
>>> snap = Snapshot([Node("a"), Node("b"), Node("c")],
...                 [KeyGroup(f"op/{i}", "op", 1.0, index=i) for i in range(10)],
...                 {f"op/{i}": "a" for i in range(10)})
>>> FlinkDefaultPlanner().plan(snap).details["ranges"]
{'op': [['a', 0, 3], ['b', 4, 6], ['c', 7, 9]]}
"""

from __future__ import annotations

import numpy as np

from albic.core.flink_keys import flink_key_group_range
from albic.core.model import PlanStatus, Snapshot
from albic.core.plan import Plan
from albic.core.planner import Planner, PlannerTags
from albic.planners.baselines import key_order

__all__ = ["FlinkDefaultPlanner"]


class FlinkDefaultPlanner(Planner):
    """Vanilla Flink's placement at the new parallelism (see the module docstring)."""

    name = "flink_default"

    def tags(self) -> PlannerTags:
        return PlannerTags(deterministic=True, interval=True)

    def _plan(self, snapshot: Snapshot) -> Plan:
        arrays = snapshot.arrays()
        active = np.flatnonzero(arrays.active)
        node_of = np.empty_like(arrays.current)
        ranges: dict[str, list[list]] = {}
        for code, operator in enumerate(arrays.operator_names):
            members = key_order(snapshot, np.flatnonzero(arrays.operator_of == code))
            m = members.size
            p = min(active.size, m)  # Flink's parallelism never exceeds maxP
            ranges[operator] = []
            for subtask in range(p):
                start, end = flink_key_group_range(subtask, m, p)
                node_of[members[start : end + 1]] = active[subtask]
                ranges[operator].append([arrays.node_ids[active[subtask]], start, end])
        return self.result(
            snapshot, arrays.assignment(node_of), status=PlanStatus.FEASIBLE, details={"ranges": ranges}
        )
