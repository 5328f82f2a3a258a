"""The conformance suite: every registered planner passes it, and it catches broken planners."""
import numpy as np
import pytest

from albic import PlanStatus, available_planners, get_planner, metrics
from albic.planner import BUDGET_PARAMETERS, Planner, PlannerTags, unsupported
from albic.testing import (
    balanced_snapshot,
    brute_force_best,
    check_planner,
    random_snapshot,
    small_snapshots,
    suite_snapshots,
)


@pytest.mark.parametrize("name", sorted(available_planners()))
def test_every_registered_planner_conforms(name):
    assert "valid_plans" in check_planner(get_planner(name))


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
    snap = random_snapshot(np.random.default_rng(1), n_nodes=2, n_key_groups=3, integer_loads=True)
    best, witness = brute_force_best(snap, lambda s, a: (metrics.load_distance(s, a),))
    loads = sorted(kg.load for kg in snap.key_groups)
    total = sum(loads)
    splits = [abs(total - 2 * x) / 2 for x in (0, *loads, loads[0] + loads[1], loads[0] + loads[2],
                                              loads[1] + loads[2], total)]
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
