"""The standing fuzz test (issue 15): random snapshots of every magnitude through every planner.

Snapshots from :func:`albic.testing.fuzz.wild_snapshots` (loads, state sizes and rates over 10^-6..10^12,
removing and new nodes, heterogeneous capacities, traffic), budgets and small time limits from
:func:`albic.testing.fuzz.fuzz_parameters`; replica groups (``spread`` values) for the planners tagged
``spread``, and a check that every other planner refuses them; each plan is checked again by the
independent validator with its budgets. The only exception allowed is the documented clean refusal
of a snapshot outside a planner's model (UnsupportedSnapshotError). Seeded (derandomize) and
bounded: 200 snapshots per planner, small snapshots. The same test at 5,000 per planner: ``python
-m benchmarks fuzz``.
"""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings

from albic import available_planners, get_planner
from albic.testing.fuzz import fuzz_one, fuzz_parameters, shape_for, spread_for, wild_snapshots

EXAMPLES = 200
# Refusing a snapshot with spread values happens before any planning: a few suffice.
SPREAD_REFUSALS = 40


@pytest.mark.parametrize("name", sorted(available_planners()))
def test_every_planner_on_snapshots_of_every_magnitude(name):
    seen: Counter = Counter()

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(wild_snapshots(shape=shape_for(name), spread=spread_for(name)), fuzz_parameters(name))
    def run(snapshot, params):
        outcome = fuzz_one(name, snapshot, params)
        assert outcome.kind in ("ok", "unsupported"), outcome.detail
        seen[outcome.kind] += 1
        seen["spread planned"] += outcome.kind == "ok" and any(
            kg.spread is not None for kg in snapshot.key_groups
        )
        # Queueing snapshots carry their magnitude in the rates as much as in the loads.
        seen["magnitude 1e9+"] += any(
            max(kg.load, kg.arrival_rate or 0.0, kg.service_rate or 0.0) >= 1e9 for kg in snapshot.key_groups
        )

    run()
    assert seen["ok"] + seen["unsupported"] >= EXAMPLES
    assert seen["ok"] >= EXAMPLES * 3 // 4  # the shapes fit the planner: most snapshots are planned
    assert seen["magnitude 1e9+"] >= EXAMPLES // 20  # the large magnitudes were reached (14-40 seen)
    if spread_for(name) != "never":  # replica groups were drawn and planned (47-73 seen)
        assert seen["spread planned"] >= EXAMPLES // 8


NO_SPREAD = sorted(n for n in available_planners() if not get_planner(n).tags().spread)


@pytest.mark.parametrize("name", NO_SPREAD)
def test_planners_without_spread_refuse_replica_groups(name):
    """A planner not tagged 'spread' refuses every snapshot with spread values, cleanly and
    saying why; it never plans one (it might put two replicas on one node)."""
    seen = Counter()

    @settings(
        max_examples=SPREAD_REFUSALS,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(wild_snapshots(shape=shape_for(name), spread="always"), fuzz_parameters(name))
    def run(snapshot, params):
        if all(kg.spread is None for kg in snapshot.key_groups):
            return  # fewer than two key groups, or all on one node: no replica group possible
        outcome = fuzz_one(name, snapshot, params)
        assert outcome.kind == "unsupported", outcome.detail
        assert "'spread' values" in outcome.detail
        seen["refused"] += 1

    run()
    assert seen["refused"] >= SPREAD_REFUSALS // 4, seen
