"""The standing fuzz test (issue 15): random snapshots of every magnitude through every planner.

Snapshots from :func:`albic.fuzz.wild_snapshots` (loads, state sizes and rates over 10^-6..10^12,
removing and new nodes, heterogeneous capacities, traffic), budgets and small time limits from
:func:`albic.fuzz.fuzz_parameters`; each plan is checked again by the independent validator with
its budgets. The only exception allowed is the documented clean refusal of a snapshot outside a
planner's model (UnsupportedSnapshotError). Seeded (derandomize) and bounded: 200 snapshots per
planner, small snapshots. The same test at 5,000 per planner: ``python -m benchmarks fuzz``.
"""
from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings

from albic import available_planners
from albic.fuzz import fuzz_one, fuzz_parameters, shape_for, wild_snapshots

EXAMPLES = 200


@pytest.mark.parametrize("name", sorted(available_planners()))
def test_every_planner_on_snapshots_of_every_magnitude(name):
    seen: Counter = Counter()

    @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(wild_snapshots(shape=shape_for(name)), fuzz_parameters(name))
    def run(snapshot, params):
        outcome = fuzz_one(name, snapshot, params)
        assert outcome.kind in ("ok", "unsupported"), outcome.detail
        seen[outcome.kind] += 1
        # Queueing snapshots carry their magnitude in the rates as much as in the loads.
        seen["magnitude 1e9+"] += any(max(kg.load, kg.arrival_rate or 0.0, kg.service_rate or 0.0) >= 1e9
                                      for kg in snapshot.key_groups)

    run()
    assert seen["ok"] + seen["unsupported"] >= EXAMPLES
    assert seen["ok"] >= EXAMPLES * 3 // 4  # the shapes fit the planner: most snapshots are planned
    assert seen["magnitude 1e9+"] >= EXAMPLES // 20  # the large magnitudes were reached (19-34 seen)
