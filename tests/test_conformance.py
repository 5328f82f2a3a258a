"""The conformance suite: every registered planner passes it, and it catches broken planners."""

import dataclasses
import functools

import numpy as np
import pytest

from albic import PlanStatus, available_planners, get_planner
from albic.core import metrics
from albic.core.model import KeyGroup, Node, Snapshot
from albic.core.planner import BUDGET_PARAMETERS, Planner, PlannerTags, unsupported
from albic.planners.albic_milp import MilpPlanner
from albic.planners.elasticutor import ElasticutorPlanner
from albic.planners.flux import FluxPlanner
from albic.planners.ssm import SSMPlanner
from albic.testing import (
    MIN_SCENARIOS,
    Size,
    balanced_snapshot,
    brute_force_best,
    check_planner,
    interval_objective,
    milp_objective,
    planner_checks,
    random_snapshot,
    run_checks,
    small_snapshots,
    suite_snapshots,
)

PLANNERS = sorted(available_planners())


def _one_worker(name):
    # A planner's checks read one run of the suite (conformance_of, cached per process): in a
    # parallel run they share a worker, or each worker would run the suite again.
    return pytest.mark.xdist_group(f"conformance-{name}")


# One pytest id per planner and check, as scikit-learn's parametrize_with_checks: a failure names both.
CASES = [
    pytest.param(name, check, id=f"{name}-{check}", marks=_one_worker(name))
    for name in PLANNERS
    for check in planner_checks(get_planner(name))
]


@functools.cache
def conformance_of(name):
    """The suite run once per planner; its checks' tests read the one report."""
    return run_checks(get_planner(name))


@pytest.mark.parametrize(("name", "check"), CASES)
def test_planner_passes_check(name, check):
    report = conformance_of(name)
    assert check not in report.failures, f"{name} fails {check}: {report.failures[check]}"
    # A check that applies ran on at least one case (a check on zero cases fails, above).
    assert check in report and report.cases.get(check, 0) > 0, (name, check, report.summary())


@pytest.mark.parametrize("name", [pytest.param(name, marks=_one_worker(name)) for name in PLANNERS])
def test_every_registered_planner_runs_what_its_tags_promise(name):
    # The checks themselves are test_planner_passes_check's: here, that the suite ran them on
    # enough scenarios and ran every check the planner's tags promise.
    planner = get_planner(name)
    report = conformance_of(name)
    assert report.scenarios_run >= MIN_SCENARIOS, report.scenarios
    assert report.skipped() == []
    check_of_tag = {
        "exact": "exact",
        "budget": "budgets",
        "interval": "interval",
        "queueing": "queueing",
        "deterministic": "deterministic",
    }
    promised = {check_of_tag[t] for t in planner.tags().names() if t in check_of_tag}
    assert promised <= set(report) and list(report) == planner_checks(planner)
    if planner.tags().exact:  # compared with an objective of the suite, not the planner's own
        assert report.exact_reference.startswith("albic.testing reference"), report.exact_reference


def test_check_planner_is_run_checks_that_raises():
    # The same suite behind both entry points: a passing planner's reports agree, and a failing
    # one raises with the failures run_checks returns.
    passing = check_planner(get_planner("storm_default"))
    assert passing.summary() == run_checks(get_planner("storm_default")).summary()
    broken = run_checks(DropsKeyGroup())
    assert "valid_plans" in broken.failures
    with pytest.raises(AssertionError, match="valid_plans: "):
        check_planner(DropsKeyGroup())


def test_the_builtin_planners_are_registered():
    assert {"flux", "storm_default", "consistent_hashing"} <= set(available_planners())


# -- planners that keep the contract, used to show the suite is not too strict ----------------


def _least_loaded_active(snapshot, assignment):
    loads = metrics.utilisation(snapshot, assignment)
    loads[snapshot.arrays().removing] = np.inf
    return snapshot.nodes[int(np.argmin(loads))].id


class DrainOnly(Planner):
    """Exact for 'minimise migration cost so that nothing stays on a removing node'.

    Optimal by reasoning, not by search: every key group on a removing node must move, nothing
    else needs to. The brute-force check confirms it independently.
    """

    name = "test_drain_only"

    def __init__(self, *, waste=False):
        self.waste = waste

    def tags(self):
        return PlannerTags(exact=True)

    def evaluate(self, snapshot, assignment):
        removing = {n.id for n in snapshot.nodes if n.removing}
        if any(node in removing for node in assignment.values()):
            return None
        return (metrics.migration_cost(snapshot, assignment),)

    def _plan(self, snapshot):
        removing = {n.id for n in snapshot.nodes if n.removing}
        target = next(n.id for n in snapshot.nodes if not n.removing)
        new = {k: (target if v in removing else v) for k, v in snapshot.assignment.items()}
        if self.waste:  # one needless move: a planner that is not optimal
            active = [n.id for n in snapshot.nodes if not n.removing]
            for kg in snapshot.key_groups:
                if len(active) > 1 and kg.state_size > 0 and new[kg.id] == snapshot.assignment[kg.id]:
                    new[kg.id] = next(a for a in active if a != new[kg.id])
                    break
        return self.result(snapshot, new, status=PlanStatus.OPTIMAL)


def test_an_exact_planner_passes_the_brute_force_check():
    assert "exact" in check_planner(DrainOnly())


def test_brute_force_finds_known_optima():
    # Independent truth: three key groups of loads 3, 2, 1 on two nodes balance as {3} vs {2, 1}.
    snap = random_snapshot(np.random.default_rng(1), Size(2, 3), integer_loads=True)
    best, witness = brute_force_best(snap, lambda s, a: (metrics.load_distance(s, a),))
    loads = sorted(kg.load for kg in snap.key_groups)
    total = sum(loads)
    splits = [
        abs(total - 2 * x) / 2
        for x in (0, *loads, loads[0] + loads[1], loads[0] + loads[2], loads[1] + loads[2], total)
    ]
    assert best == (min(splits),)
    assert metrics.load_distance(snap, witness) == min(splits)
    assert brute_force_best(snap, lambda s, a: None) == (None, None)


# -- broken planners: each must be caught by the check named ---------------------------------


class DropsKeyGroup(Planner):
    name = "test_drops"

    def _plan(self, snapshot):
        return self.result(snapshot, dict(list(snapshot.assignment.items())[:-1]))


class IgnoresBudget(Planner):
    name = "test_ignores_budget"
    parameters = dict(BUDGET_PARAMETERS)

    def __init__(self, *, max_moves=None, max_migration_cost=None):
        self.max_moves = max_moves
        self.max_migration_cost = max_migration_cost

    def tags(self):
        return PlannerTags(budget=True)

    def _plan(self, snapshot):
        if snapshot.period == "balanced":
            return self.result(snapshot, dict(snapshot.assignment))
        new = dict(snapshot.assignment)
        for kg in snapshot.key_groups:  # everything to one active node, whatever the budget
            new[kg.id] = snapshot.active_nodes[0].id
        return self.result(snapshot, new)


class MutatesInput(Planner):
    name = "test_mutates"

    def _plan(self, snapshot):
        for kg in snapshot.key_groups[:1]:
            kg.resources["touched"] = 1.0  # the same change every time: still a mutation
        return self.result(snapshot, dict(snapshot.assignment))


class NumpyInDetails(Planner):
    name = "test_numpy_details"

    def _plan(self, snapshot):
        return self.result(snapshot, dict(snapshot.assignment), details={"load": np.float64(1.0)})


class Random(Planner):
    """Claims to be deterministic but moves a random key group."""

    name = "test_random"

    def _plan(self, snapshot):
        new = dict(snapshot.assignment)
        if snapshot.key_groups and snapshot.period != "balanced":
            kg = snapshot.key_groups[np.random.default_rng().integers(len(snapshot.key_groups))]
            new[kg.id] = _least_loaded_active(snapshot, snapshot.assignment)
        return self.result(snapshot, new)


class MovesWhenBalanced(Planner):
    name = "test_restless"

    def _plan(self, snapshot):
        new = dict(snapshot.assignment)
        active = [n.id for n in snapshot.active_nodes]
        if snapshot.key_groups and len(active) > 1:
            first = snapshot.key_groups[0].id
            new[first] = next(a for a in active if a != new[first])
        return self.result(snapshot, new)


class RoundRobinInterval(Planner):
    """Tagged interval but deals key groups round-robin: intervals are not contiguous."""

    name = "test_round_robin"

    def tags(self):
        return PlannerTags(interval=True)

    def _plan(self, snapshot):
        if snapshot.period == "balanced":
            return self.result(snapshot, dict(snapshot.assignment))
        active = [n.id for n in snapshot.active_nodes]
        return self.result(
            snapshot, {kg.id: active[i % len(active)] for i, kg in enumerate(snapshot.key_groups)}
        )


class Unpicklable(Planner):
    name = "test_unpicklable"

    def __init__(self, *, hook=lambda x: x):
        self.hook = hook

    def _plan(self, snapshot):
        return self.result(snapshot, dict(snapshot.assignment))


class DeclinesEverything(Planner):
    name = "test_declines"

    def _check_supported(self, snapshot):
        raise unsupported(self, "nothing suits me")

    def _plan(self, snapshot):  # pragma: no cover - never reached
        raise AssertionError


@pytest.mark.parametrize(
    "planner, check, fragment",
    [
        (DropsKeyGroup(), "valid_plans", "does not place key group"),
        (IgnoresBudget(), "budgets", "exceed the budget max_moves=0"),
        (MutatesInput(), "no_mutation", "changed it"),
        (NumpyInDetails(), "valid_plans", "numpy.float64"),
        (Random(), "deterministic", "gave another plan"),
        (MovesWhenBalanced(), "no_moves_when_balanced", "already balanced"),
        (RoundRobinInterval(), "interval", "not contiguous"),
        (Unpicklable(), "pickles", "does not pickle"),
        (DrainOnly(waste=True), "exact", "brute force finds"),
        (DeclinesEverything(), "valid_plans", "nothing suits me"),
    ],
    ids=lambda v: v if isinstance(v, str) else type(v).__name__,
)
def test_the_suite_catches_a_broken_planner(planner, check, fragment):
    with pytest.raises(AssertionError) as info:
        check_planner(planner)
    message = str(info.value)
    assert f"- {check}: " in message, message
    assert fragment in message, message


def test_generators_give_valid_varied_snapshots():
    scenarios = suite_snapshots()
    for snap in scenarios.values():
        snap.validate()
    assert any(n.removing for n in scenarios["scale_in"].nodes)
    assert "n4" not in scenarios["scale_out"].assignment.values()  # the new node holds nothing
    assert len({n.capacity for n in scenarios["heterogeneous"].nodes}) > 1
    assert scenarios["operators_with_traffic"].traffic
    assert metrics.load_distance(balanced_snapshot()) == 0.0
    for snap in small_snapshots():
        assert len(snap.key_groups) <= 8 and len(snap.nodes) <= 3
    assert suite_snapshots(3) == suite_snapshots(3) and suite_snapshots(3) != suite_snapshots(4)


# -- one broken planner per family: interval, queueing, budgeted ----------------------------------


class SSMWithALooserCap(SSMPlanner):
    """An interval planner whose objective is wrong on both sides: it plans and evaluates with
    tau + 1 instead of tau. Compared with its own evaluate() it looks exact; the suite's reference
    objective (Definition 4.1 with the declared tau) catches it."""

    def _plan(self, snapshot):
        return SSMPlanner(tau=self.tau + 1.0, operator=self.operator)._plan(snapshot)

    def evaluate(self, snapshot, assignment):
        return SSMPlanner(tau=self.tau + 1.0, operator=self.operator).evaluate(snapshot, assignment)


def test_a_broken_interval_planner_hides_behind_its_own_evaluate_but_not_the_reference():
    broken = SSMWithALooserCap(tau=0.2)
    # Its own objective agrees with itself, so the old suite (plan vs. brute force under
    # evaluate()) could not see the bug ...
    for snapshot in small_snapshots(tags=broken.tags())[:6]:
        plan = broken.plan(snapshot)
        best, _ = brute_force_best(snapshot, broken.evaluate)
        assert best is None or broken.evaluate(snapshot, plan.assignment) == pytest.approx(best)
    # ... the reference objective does.
    with pytest.raises(
        AssertionError, match=r"- exact: .*(breaks the model's constraints|brute force finds)"
    ):
        check_planner(broken)


class ElasticutorIgnoringNodeCores(ElasticutorPlanner):
    """A queueing planner that assumes every node has as many cores as the largest one."""

    def _plan(self, snapshot):
        most = max(n.cores for n in snapshot.nodes)
        same = Snapshot(
            [dataclasses.replace(n, cores=most) for n in snapshot.nodes],
            snapshot.key_groups,
            snapshot.assignment,
            snapshot.traffic,
            snapshot.operators,
            snapshot.period,
        )
        return super()._plan(same)


def test_a_broken_queueing_planner_fails_on_the_queueing_scenarios():
    with pytest.raises(AssertionError) as info:
        check_planner(ElasticutorIgnoringNodeCores())
    assert "- queueing: snapshot 'queueing_heterogeneous_cores': node 'n0' gives" in str(info.value)
    assert "valid_plans" in check_planner(ElasticutorPlanner())  # the real one passes


class FluxIgnoringTheCostBudget(FluxPlanner):
    """A budgeted planner that honours max_moves but forgets max_migration_cost."""

    def _plan(self, snapshot):
        return FluxPlanner(max_moves=self.max_moves)._plan(snapshot)


class MilpGivingUpUnderABudget(MilpPlanner):
    """An exact budgeted planner that returns the current placement whenever a budget is set."""

    def _plan(self, snapshot):
        if self.max_moves is not None or self.max_migration_cost is not None:
            return self.result(snapshot, snapshot.assignment, status=PlanStatus.OPTIMAL)
        return super()._plan(snapshot)


def test_broken_budgeted_planners_fail_the_budget_and_exact_checks():
    with pytest.raises(AssertionError, match=r"- budgets: .*exceeds the budget max_migration_cost"):
        check_planner(FluxIgnoringTheCostBudget())
    with pytest.raises(AssertionError) as info:
        check_planner(
            MilpGivingUpUnderABudget(time_limit=0.05), checks=["exact"]
        )  # the budgets check would pass
    assert "- exact: snapshot \"small1 with {'max_moves': 1}\": plan has status OPTIMAL" in str(info.value)


class ExactOnlyOnBigSnapshots(DrainOnly):
    """Tagged exact, but declines every snapshot small enough for brute force."""

    name = "test_exact_only_on_big"

    def _check_supported(self, snapshot):
        if len(snapshot.key_groups) <= 8:
            raise unsupported(self, "too small for me")


def test_a_promised_check_that_ran_on_zero_cases_fails():
    with pytest.raises(AssertionError, match=r"- exact: ran on zero cases.*too small for me"):
        check_planner(ExactOnlyOnBigSnapshots())


# -- the reference objectives, by hand ------------------------------------------------------------


def test_interval_reference_on_the_papers_table_3():
    snap = suite_snapshots(tags=SSMPlanner().tags())["interval_table3"]
    objective = interval_objective(SSMPlanner(tau=0.4))  # cap 1.4 * 20 / 3 = 9.33 tasks
    ssm_plan = {f"op0/{j}": ("N3" if j < 4 else "N1" if j < 13 else "N2") for j in range(20)}
    assert objective(snap, ssm_plan) == (4.0,)
    assert objective(snap, dict(snap.assignment)) is None  # N1's 13 tasks exceed the cap
    split = dict(ssm_plan, **{"op0/2": "N1"})  # N3 would hold 0, 1 and 3: not contiguous
    assert objective(snap, split) is None
    # Definition 4.1 read strictly (allow_empty=False): every active node gets a task. With
    # tau = 0.6 (cap 10.67) two nodes can carry everything, so leaving N3 empty is cheapest (3).
    keep = {f"op0/{j}": ("N1" if j < 10 else "N2") for j in range(20)}
    assert interval_objective(SSMPlanner(tau=0.6))(snap, keep) == (3.0,)
    strict = SSMPlanner(tau=0.6)
    strict.allow_empty = False  # read with getattr: works before and after SSM has the parameter
    assert interval_objective(strict)(snap, keep) is None
    assert interval_objective(strict)(snap, ssm_plan) == (4.0,)


def test_milp_reference_by_hand():
    snap = Snapshot(
        [Node("a"), Node("b", capacity=2.0), Node("r", removing=True)],
        [KeyGroup("x", "op", 3.0, 10.0), KeyGroup("y", "op", 3.0, 20.0), KeyGroup("z", "op", 3.0, 5.0)],
        {"x": "a", "y": "a", "z": "r"},
    )
    objective = milp_objective(MilpPlanner())
    # The paper's levels: D, load left on removing nodes, key groups left there, S, state moved.
    # mean = 9 / 3 = 3; a: 3/1, b: 6/2 = 3: perfectly balanced, nothing left on r, 25 state moved
    assert objective(snap, {"x": "a", "y": "b", "z": "b"}) == (0.0, 0.0, 0.0, 0.0, 25.0)
    # z stays on r (u = 3, constraint (3) holds on removing nodes too): a 6/1, b 0: D = 3,
    # load 3 and one key group left, S = 3 + 3
    assert objective(snap, {"x": "a", "y": "a", "z": "r"}) == (3.0, 3.0, 1.0, 6.0, 0.0)
    assert objective(snap, {"x": "r", "y": "a", "z": "r"}) is None  # onto a removing node
    assert milp_objective(MilpPlanner(max_moves=1))(snap, {"x": "a", "y": "b", "z": "b"}) is None
    assert milp_objective(MilpPlanner(max_migration_cost=20.0))(snap, {"x": "a", "y": "b", "z": "b"}) is None
    best, witness = brute_force_best(snap, objective)
    # the cheapest balanced plan moves z (5) and x (10) to b, not y (20)
    assert best == (0.0, 0.0, 0.0, 0.0, 15.0) and witness == {"x": "b", "y": "a", "z": "b"}


class DrainOnlyClaimingSpread(DrainOnly):
    """Drains every removing node onto one target, replicas of one partition included, yet says
    it honours ``spread``."""

    name = "test_drain_only_claiming_spread"

    def tags(self):
        return PlannerTags(spread=True)


def test_a_planner_claiming_spread_is_checked_on_replicas():
    with pytest.raises(AssertionError, match=r"spread: .*replicas1"):
        check_planner(DrainOnlyClaimingSpread(), checks=["spread"])
    report = check_planner(get_planner("flux"), checks=["spread"])
    assert report.cases["spread"] == 8  # 4 replica snapshots, with and without a budget
    assert "spread" in check_planner(get_planner("storm_default"), checks=["spread"]).not_applicable
