"""Every planner with a ``time_limit`` honours it, on a 150-node /
3,000-key-group instance of the paper's generator, with the best plan so far (FEASIBLE). In
wall-clock mode (``deterministic=False``) it returns within 1.1 x time_limit + 0.1 s, counted from
the plan() call to its return; in deterministic mode the limit is work, not seconds (a slower or
busier machine takes longer and makes the same plan: planners/work.py), so what is asserted there
is the work the plan charged, and that no clock stopped it.

The measure is the wall clock around the same plan() call (no fixed number of seconds is
asserted). The one-time import of the solver library is not charged to the limit (it happens once
per process; the planners exclude it), so it is done before timing.
"""

import time

import pytest

from albic import available_planners, get_planner
from albic.core import metrics
from albic.core.model import PlanStatus
from albic.evaluation.synthetic import synthetic_snapshot

pytestmark = pytest.mark.timing

LIMIT = 0.5
# A machine shared by many jobs can starve any process for a while after its guard fired: the
# rule must hold in one of this many calls (each call is measured alone, never averaged).
ATTEMPTS = 3


def _timed_planners():
    return sorted(name for name, cls in available_planners().items() if "time_limit" in cls.parameter_names())


@pytest.fixture(scope="module")
def big():
    # Not validated here: the limit counts validation too (the first call pays it).
    snapshot = synthetic_snapshot(150, 3000, 10, seed=0)
    import ortools.sat.python.cp_model  # noqa: F401  (once per process, see the module docstring)

    return snapshot


def test_the_time_limited_planners_are_the_milp_family():
    # A new planner with a time_limit must join the test below; this names the ones it covers.
    assert {"milp", "albic"} <= set(_timed_planners())


@pytest.mark.parametrize("deterministic", [True, False])
@pytest.mark.parametrize("name", _timed_planners())
def test_returns_within_the_rule(big, name, deterministic):
    params = {"time_limit": LIMIT, "max_moves": 40}
    if "deterministic" in type(get_planner(name)).parameter_names():
        params["deterministic"] = deterministic
    planner = get_planner(name, **params)
    plan = _within_the_limit(planner, big, deterministic)
    assert plan.status in (PlanStatus.FEASIBLE, PlanStatus.OPTIMAL)
    assert plan.metrics["moves"] <= 40
    if name == "milp":  # never worse than where it starts (albic may trade balance for collocation)
        assert metrics.load_distance(big, plan.assignment) <= metrics.load_distance(big)
    assert plan.details["stopped_by"] in ("done", "work budget", "time limit", "wall clock")
    assert 0 <= plan.details["lower_bound"] <= metrics.load_distance(big, plan.assignment) + 1e-12


def _within_the_limit(planner, snapshot, deterministic):
    """The plan, made within the limit: in wall-clock mode within the rule, in one of
    ``ATTEMPTS`` calls; in deterministic mode with at most its work budget charged (plus a
    fifth: a CP-SAT solve does not stop exactly at its limit) and no clock stopping it."""
    if deterministic:
        plan = planner.plan(snapshot)
        budget = planner.time_limit * (1 + getattr(planner, "collocation_time", 0.0))
        assert 0 < plan.details["work"] <= 1.2 * budget, (plan.details["work"], budget)
        assert plan.details["stopped_by"] != "wall clock" and plan.details["deterministic"]
        return plan
    walls = []
    for _ in range(ATTEMPTS):
        start = time.perf_counter()
        plan = planner.plan(snapshot)
        walls.append(time.perf_counter() - start)
        assert plan.seconds <= walls[-1]
        if walls[-1] <= 1.1 * LIMIT + 0.1:
            break
    assert walls[-1] <= 1.1 * LIMIT + 0.1, (planner.name, walls, plan.details.get("stopped_by"))
    return plan


@pytest.mark.parametrize("deterministic", [True, False])
def test_a_model_too_big_to_build_in_time_is_not_built(deterministic):
    """Two nodes x 20,000 key groups: the whole model (40,000 item-node pairs, which two nodes
    always get) took ~5 s to build before a solve could be stopped; the guard now skips it and
    the polish alone plans, within the limit."""
    snapshot = synthetic_snapshot(2, 20_000, 4, seed=1)
    import ortools.sat.python.cp_model  # noqa: F401  (once per process, see the module docstring)

    planner = get_planner("milp", time_limit=LIMIT, max_moves=100, deterministic=deterministic)
    plan = _within_the_limit(planner, snapshot, deterministic)
    assert plan.status is PlanStatus.FEASIBLE and plan.metrics["moves"] <= 100
    assert metrics.load_distance(snapshot, plan.assignment) < metrics.load_distance(snapshot)
