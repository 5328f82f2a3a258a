"""The paper's experiments (albic.evaluation.paper) say which periods carry a plan, so that a
figure never draws a kept placement as a planner's result."""

from albic.core.model import NO_PLAN_STATUSES
from albic.evaluation.paper import collocation_race, scale_in


def test_the_race_records_each_calls_plan_status():
    race = collocation_race(size=(4, 24, 2), calls=2, max_moves=2, time_limit=0.05, show_progress=False)
    start = race[race.call == 0]
    assert sorted(start.planner) == ["albic", "cola"] and set(start.status) == {"SKIPPED"}
    calls = race[race.call >= 1]
    assert len(calls) == 4
    assert set(calls.status) <= {"OPTIMAL", "FEASIBLE", *NO_PLAN_STATUSES}


def test_scale_in_records_whether_the_milp_or_the_drain_rule_made_each_plan():
    table = scale_in(
        size=(6, 36, 3),
        removing=2,
        overloaded=[1],
        budget=2,
        periods=4,
        time_limit=0.05,
        show_progress=False,
    )
    integrated = table[table.approach == "integrated"]
    draining = table[table.approach == "non_integrated"]
    assert len(integrated) == len(draining) == 4
    assert set(integrated.status) <= {"OPTIMAL", "FEASIBLE", *NO_PLAN_STATUSES}
    # Two moves a period against the removing nodes' key groups: the first period only drains.
    assert draining.status.iloc[0] == "DRAIN"
    moved_alone = draining[draining.status == "DRAIN"]
    assert len(moved_alone) > 0 and (moved_alone.moves > 0).all()
