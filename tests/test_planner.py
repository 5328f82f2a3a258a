"""The planner contract: parameter validation, the registry, and what Planner.plan() guarantees."""

import pytest

import albic
from albic import (
    InvalidParameterError,
    InvalidSnapshotError,
    KeyGroup,
    Node,
    PlannerBugError,
    PlanStatus,
    Snapshot,
    UnsupportedSnapshotError,
)
from albic.core.model import Move
from albic.core.planner import (
    BUDGET_PARAMETERS,
    Interval,
    Options,
    Planner,
    PlannerTags,
    get_planner,
    register_planner,
    unsupported,
)
from albic.core.registry import available_planners, unregister_planner

SNAP = Snapshot(
    [Node("n1"), Node("n2")],
    [KeyGroup("a", "op", 3.0, 10.0), KeyGroup("b", "op", 1.0, 5.0)],
    {"a": "n1", "b": "n1"},
)


class MoveB(Planner):
    """Moves key group b to n2; parameters exercise every constraint kind."""

    name = "test_move_b"
    parameters = {
        **BUDGET_PARAMETERS,
        "alpha": [Interval(float, 0, 1, closed="right")],
        "mode": [Options(("fast", "slow"))],
    }

    def __init__(self, *, max_moves=None, max_migration_cost=None, alpha=0.5, mode="fast"):
        self.max_moves = max_moves
        self.max_migration_cost = max_migration_cost
        self.alpha = alpha
        self.mode = mode

    def tags(self):
        return PlannerTags(budget=True)

    def _plan(self, snapshot):
        return self.result(snapshot, {"a": "n1", "b": "n2"}, details={"note": "hi"})


@pytest.mark.parametrize(
    "params, message",
    [
        (
            {"max_moves": -1},
            "The 'max_moves' parameter of planner 'test_move_b' must be an int in [0, 1000000000] or None. Got -1 instead.",
        ),
        (
            {"max_moves": 1.5},
            "The 'max_moves' parameter of planner 'test_move_b' must be an int in [0, 1000000000] or None. Got 1.5 instead.",
        ),
        (
            {"max_moves": True},
            "The 'max_moves' parameter of planner 'test_move_b' must be an int in [0, 1000000000] or None. Got True instead.",
        ),
        (
            {"max_migration_cost": float("nan")},
            "The 'max_migration_cost' parameter of planner 'test_move_b' must be a float in [0, 1e+21] or None. Got nan instead.",
        ),
        (
            {"alpha": 0.0},
            "The 'alpha' parameter of planner 'test_move_b' must be a float in (0, 1]. Got 0.0 instead.",
        ),
        (
            {"mode": "medium"},
            "The 'mode' parameter of planner 'test_move_b' must be one of {'fast', 'slow'}. Got 'medium' instead.",
        ),
    ],
)
def test_bad_parameters_get_one_message_template(params, message):
    with pytest.raises(InvalidParameterError) as info:
        MoveB(**params).plan(SNAP)
    assert str(info.value) == message


def test_parameters_are_checked_before_the_snapshot():
    with pytest.raises(InvalidParameterError):
        MoveB(max_moves=-1).plan("not a snapshot")


def test_plan_rejects_what_is_not_a_valid_snapshot():
    with pytest.raises(TypeError, match="takes an albic.core.model.Snapshot, got dict"):
        MoveB().plan({"nodes": []})
    with pytest.raises(InvalidSnapshotError, match="unknown node 'n9'"):
        MoveB().plan(SNAP.with_assignment({"a": "n9", "b": "n1"}))


def test_moves_and_metrics_are_derived_by_albic():
    plan = MoveB().plan(SNAP)
    assert plan.planner == "test_move_b"
    assert plan.moves == (Move("b", "n1", "n2", 5.0),)
    assert plan.metrics["moves"] == 1 and plan.metrics["migration_cost"] == 5.0
    assert plan.metrics["load_distance_before"] == 2.0 and plan.metrics["load_distance"] == 1.0
    assert plan.details == {"note": "hi"}
    assert isinstance(plan.seconds, float) and plan.seconds >= 0
    assert "test_move_b: FEASIBLE, 1 move," in plan.summary()


def test_a_plan_over_budget_is_a_planner_bug():
    with pytest.raises(PlannerBugError, match="1 move exceeds the budget max_moves=0"):
        MoveB(max_moves=0).plan(SNAP)
    with pytest.raises(PlannerBugError, match="exceeds the budget max_migration_cost=4"):
        MoveB(max_migration_cost=4.0).plan(SNAP)


class Broken(Planner):
    """Returns whatever the test puts in ``output``."""

    name = "test_broken"

    def __init__(self, *, output=None):
        self.output = output

    def _plan(self, snapshot):
        return self.output(self, snapshot)


@pytest.mark.parametrize(
    "output, fragment",
    [
        (lambda p, s: {"a": "n1"}, "returned a dict, expected albic.core.plan.Plan"),
        (lambda p, s: p.result(s, {"a": "n1"}), "does not place key group 'b'"),
        (lambda p, s: p.result(s, {"a": "n1", "b": "n3"}), "placed on unknown node 'n3'"),
        (lambda p, s: p.result(s, {"a": "n1", "b": "n2", "c": "n1"}), "unknown key group 'c'"),
        (
            lambda p, s: p.result(s, {"a": "n2", "b": "n2"}, status="INFEASIBLE"),
            "INFEASIBLE but the assignment differs",
        ),
        (lambda p, s: p.result(s, dict(s.assignment), status="GREAT"), "status 'GREAT'"),
        (
            lambda p, s: p.result(s, dict(s.assignment), details={"x": __import__("numpy").float64(1)}),
            "details['x'] is np.float64(1.0) of type numpy.float64",
        ),
        (
            lambda p, s: p.result(s, dict(s.assignment), metrics={"gap": __import__("numpy").int64(1)}),
            "metrics['gap'] is np.int64(1) of type numpy.int64",
        ),
        (lambda p, s: p.result(s, dict(s.assignment), details={"x": (1, 2)}), "is a tuple"),
        (
            lambda p, s: (
                p.result(s, dict(s.assignment), objective=float("nan"))
                and p.result(s, dict(s.assignment), details={"y": float("inf")})
            ),
            "JSON has no NaN or infinity",
        ),
    ],
)
def test_contract_breaches_raise_planner_bug_error(output, fragment):
    with pytest.raises(PlannerBugError) as info:
        Broken(output=output).plan(SNAP)
    assert fragment in str(info.value)
    assert "test_broken" in str(info.value)


def test_no_move_onto_a_removing_node():
    snap = Snapshot([Node("n1"), Node("n2", removing=True)], SNAP.key_groups, {"a": "n1", "b": "n1"})
    with pytest.raises(PlannerBugError, match="moved onto removing node 'n2'"):
        Broken(output=lambda p, s: p.result(s, {"a": "n1", "b": "n2"})).plan(snap)


def test_unsupported_snapshots_raise_a_type_error_before_planning():
    class Picky(MoveB):
        name = "test_picky"

        def _check_supported(self, snapshot):
            raise unsupported(self, "it needs homogeneous nodes")

    with pytest.raises(
        UnsupportedSnapshotError, match="Planner 'test_picky' cannot plan this snapshot: it needs"
    ):
        Picky().plan(SNAP)
    assert issubclass(UnsupportedSnapshotError, TypeError)


SPREAD_REFUSED = (
    "Planner 'test_tagged' cannot plan this snapshot: its key groups have 'spread' values (replicas "
    "that must stay on distinct nodes), which this planner does not honour; use one tagged 'spread' "
    "(see 'albic planners')"
)
RACKS_REFUSED = (
    "Planner 'test_tagged' cannot plan this snapshot: its nodes have racks and its key groups "
    "'spread' values (replicas to spread over racks), which this planner does not honour; use one "
    "tagged 'racks' (see 'albic planners')"
)


@pytest.mark.parametrize(
    "tags, racks, refused",
    [
        (PlannerTags(), False, SPREAD_REFUSED),
        (PlannerTags(), True, SPREAD_REFUSED),
        (PlannerTags(spread=True), True, RACKS_REFUSED),
        (PlannerTags(spread=True), False, None),
        (PlannerTags(spread=True, racks=True), True, None),
    ],
)
def test_the_base_class_refuses_what_a_planners_tags_do_not_honour(tags, racks, refused):
    """Each need a snapshot may have (key groups that must spread; over racks) is refused for a
    planner without its tag, with the need's own reason, and planned for one with it."""

    class Tagged(MoveB):
        name = "test_tagged"

        def tags(self):
            return tags

    replicas = [KeyGroup("a", "op", 3.0, 10.0, spread="p"), KeyGroup("b", "op", 1.0, 5.0, spread="p")]
    nodes = [Node("n1", rack="r1" if racks else None), Node("n2", rack="r2" if racks else None)]
    snap = Snapshot(nodes, replicas, {"a": "n1", "b": "n2"})
    if refused is None:
        assert Tagged().plan(snap).assignment == {"a": "n1", "b": "n2"}
    else:
        with pytest.raises(UnsupportedSnapshotError) as raised:
            Tagged().plan(snap)
        assert str(raised.value) == refused


def test_registry_lists_entry_points_and_runtime_registrations():
    builtin = available_planners()
    assert {"flux", "storm_default", "consistent_hashing"} <= set(builtin)
    assert list(builtin) == sorted(builtin)
    register_planner(MoveB)
    try:
        assert available_planners()["test_move_b"] is MoveB
        planner = get_planner("test_move_b", alpha=1.0)
        assert planner == MoveB(alpha=1.0)
        assert repr(planner) == "MoveB(alpha=1.0)"
        assert albic.plan(SNAP, "test_move_b").assignment == {"a": "n1", "b": "n2"}
        assert albic.plan(SNAP, planner, mode="slow").planner == "test_move_b"
    finally:
        unregister_planner("test_move_b")
    assert "test_move_b" not in available_planners()


def test_registering_a_taken_name_needs_replace():
    class Impostor(MoveB):
        name = "flux"

    with pytest.raises(InvalidParameterError, match="a planner named 'flux' is already registered"):
        register_planner(Impostor)
    with pytest.raises(InvalidParameterError, match="takes a Planner subclass"):
        register_planner(object)


def test_unknown_planner_and_unknown_parameter_are_named():
    # Named as users type them (the registry name, not the class), with the close name offered.
    with pytest.raises(
        InvalidParameterError,
        match=r"Unknown planner 'fluxx' \(did you mean 'flux'\?\). Known planners: .*flux",
    ):
        get_planner("fluxx")
    with pytest.raises(
        InvalidParameterError,
        match=r"Planner 'flux' has no parameter 'max_move' \(did you mean 'max_moves'\?\). Its parameters:",
    ):
        get_planner("flux", max_move=3)
    with pytest.raises(InvalidParameterError, match="'max_moves' parameter of planner 'flux'"):
        get_planner("flux", max_moves=-1)
    with pytest.raises(InvalidParameterError) as err:
        get_planner("qqqq")
    assert "did you mean" not in str(err.value)


def test_clone_and_params():
    planner = MoveB(max_moves=3)
    assert planner.get_params() == {"max_moves": 3, "max_migration_cost": None, "alpha": 0.5, "mode": "fast"}
    clone = planner.clone(mode="slow")
    assert clone.max_moves == 3 and clone.mode == "slow" and planner.mode == "fast"
    assert PlannerTags(budget=True, exact=True).names() == ["exact", "deterministic", "budget"]
    assert PlanStatus("OPTIMAL") is PlanStatus.OPTIMAL
