"""Snapshot builders and plan summaries shared by the planner tests, as fixtures.

(Fixtures rather than imports: tests/planners has no __init__.py, since a package named
``planners`` there would shadow the real one.)
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from albic.core import metrics
from albic.core.model import KeyGroup, Node, Snapshot
from albic.core.plan import Plan


def layout_snapshot(
    layout: Mapping[str, Mapping[str, float]],
    *,
    capacity: Mapping[str, float] | None = None,
    removing: tuple[str, ...] = (),
    state: Mapping[str, float] | None = None,
) -> Snapshot:
    """A one-operator snapshot from ``{node id: {key group id: load}}``, nodes in dict order.

    Key groups are in the order they appear; ``state`` gives state sizes (default 1 each).
    """
    capacity = capacity or {}
    state = state or {}
    nodes = [Node(n, capacity=capacity.get(n, 1.0), removing=n in removing) for n in layout]
    key_groups = [
        KeyGroup(k, "op", load, state_size=state.get(k, 1.0))
        for groups in layout.values()
        for k, load in groups.items()
    ]
    assignment = {k: n for n, groups in layout.items() for k in groups}
    return Snapshot(nodes, key_groups, assignment)


def loads_by_node(snapshot: Snapshot, plan: Plan) -> dict[str, float]:
    """The total load on each node after ``plan``."""
    loads = metrics.node_loads(snapshot, plan.assignment)
    return dict(zip(snapshot.arrays().node_ids, loads.tolist()))


def moved(plan: Plan) -> dict[str, tuple[str, str]]:
    """``{key group: (source, target)}`` of the plan's moves."""
    return {m.key_group: (m.source, m.target) for m in plan.moves}


@pytest.fixture
def layout():
    return layout_snapshot


@pytest.fixture
def loads_after():
    return loads_by_node


@pytest.fixture
def moves_of():
    return moved
