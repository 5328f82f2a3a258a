"""milp and albic report a proven lower bound on the load distance (the first
objective level) any plan within the budget reaches (details["lower_bound"], also plan.bound),
checked against brute force."""

import pytest

from albic import get_planner
from albic.core import metrics
from albic.testing import brute_force_best, small_snapshots


@pytest.mark.parametrize("name", ["milp", "albic"])
def test_the_bound_never_exceeds_the_brute_force_optimum(name):
    positive = 0
    for budget in (1, 2):
        planner = get_planner(name, max_moves=budget)
        judge = get_planner("milp", max_moves=budget)  # albic's plans are milp plans with units
        for snapshot in small_snapshots(seed=5, count=6):
            plan = planner.plan(snapshot)
            # The first objective level is the load distance (max_deviation); evaluate() also
            # enforces the budget and every other rule of the planner's model.
            best, _ = brute_force_best(snapshot, judge.evaluate)
            bound = plan.details["lower_bound"]
            assert bound == plan.bound
            assert bound <= best[0] + 1e-9, (snapshot.period, budget, bound, best)
            mean = metrics.mean_utilisation(snapshot)
            if mean > 0:
                assert plan.details["lower_bound_pct"] == pytest.approx(100 * bound / mean)
            positive += bound > 1e-9
    assert positive >= 3  # it proves something, not just 0
