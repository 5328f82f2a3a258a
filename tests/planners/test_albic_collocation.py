"""AlbicPlanner (registry name "albic"), its collocation steps, and COLA (registry name "cola")."""
import numpy as np
import pytest

from albic import InvalidParameterError, get_planner, metrics
from albic.model import KeyGroup, Node, Snapshot, Traffic
from albic.synthetic import synthetic_snapshot
from planners.collocation import collocation_pairs, merge_pairs, split_sets


def _one_to_one(seed=2):
    # 4 nodes, 20 pairs (operator op0 -> op1, key group i -> key group i), placed at random.
    return synthetic_snapshot(n_nodes=4, n_key_groups=40, n_operators=2, one_to_one=1.0, seed=seed)


def test_repeated_albic_calls_reach_colas_collocation_within_the_budget():
    snap = _one_to_one()
    cola = get_planner("cola").plan(snap)
    albic = get_planner("albic", max_moves=2)
    factors = [metrics.collocation_factor(snap)]
    for _ in range(12):
        plan = albic.plan(snap)
        assert plan.metrics["moves"] <= 2
        snap = snap.with_assignment(plan.assignment)
        factors.append(plan.metrics["collocation_factor"])
    assert factors[-1] >= cola.metrics["collocation_factor"] - 1e-12
    assert factors[-1] > factors[0]
    # COLA re-optimises from scratch: it moves far more than ALBIC's per-call budget.
    assert cola.metrics["moves"] >= 5 * 2


def test_details_report_the_pair_and_the_partitions():
    snap = _one_to_one()
    plan = get_planner("albic", max_moves=2).plan(snap)
    pair = plan.details["pair"]
    assert plan.details["case"] in (1, 2, 3) and plan.assignment[pair[0]] == plan.assignment[pair[1]]
    assert plan.assignment[pair[0]] == plan.details["pinned_to"]
    for part in plan.details["partitions"]:
        assert len({plan.assignment[k] for k in part}) == 1  # each partition moved as a unit


def _hand_snapshot():
    # a1 sends 10 to b1 and 1 to b2; a2 sends 1 to b1 and 10 to b2; 2 downstream key groups, so
    # avg(a1) = avg(a2) = 11 / 2 = 5.5 and with sF = 1.5 the threshold is 8.25: only the two
    # 10-rate edges count. a1, b1 share n1 (collocated); a2 on n1, b2 on n2 (to be collocated).
    kgs = [KeyGroup("a1", "a", 1.0), KeyGroup("a2", "a", 1.0), KeyGroup("b1", "b", 1.0),
           KeyGroup("b2", "b", 1.0)]
    traffic = [Traffic("a1", "b1", 10.0), Traffic("a1", "b2", 1.0), Traffic("a2", "b1", 1.0),
               Traffic("a2", "b2", 10.0)]
    return Snapshot([Node("n1"), Node("n2")], kgs,
                    {"a1": "n1", "b1": "n1", "a2": "n1", "b2": "n2"}, traffic)


def test_scores_follow_the_papers_threshold():
    collocated, candidates = collocation_pairs(_hand_snapshot(), 1.5)
    assert [(k, j) for k, j, _ in collocated] == [(0, 2)]
    assert [(k, j) for k, j, _ in candidates] == [(1, 3)]
    # sF = 0.1 lowers the threshold to 0.55: every edge counts.
    collocated, candidates = collocation_pairs(_hand_snapshot(), 0.1)
    assert len(collocated) + len(candidates) == 4


def test_union_find_merges_overlapping_pairs():
    sets = merge_pairs(6, [(0, 1, 1.0), (1, 2, 1.0), (4, 5, 1.0)])
    assert [s.tolist() for s in sets] == [[0, 1, 2], [4, 5]]


def test_sets_are_split_until_every_part_respects_max_partition_load():
    # A chain of 8 collocated key groups of load 1 on one node; max partition load 3 needs
    # ceil(8 / 3) = 3 parts at least, each of load <= 3.
    kgs = [KeyGroup(f"k{i}", f"op{i}", 1.0, 1.0) for i in range(8)]
    traffic = [Traffic(f"k{i}", f"k{i + 1}", 5.0) for i in range(7)]
    snap = Snapshot([Node("n1"), Node("n2")], kgs, {k.id: "n1" for k in kgs}, traffic)
    # One downstream key group each: avg = out, so any sF < 1 makes every edge count.
    collocated, _ = collocation_pairs(snap, 0.5)
    parts = split_sets(snap, collocated, 3.0, None, None, seed=0)
    assert all(len(p) <= 3 for p in parts) and sum(len(p) for p in parts) >= 6
    # A move budget of 2 also bounds a part's size: it must be movable within one period.
    parts = split_sets(snap, collocated, 100.0, 2, None, seed=0)
    assert all(len(p) <= 2 for p in parts)


def test_albic_falls_back_to_the_pure_milp_when_units_break_max_load_distance():
    # maxLD = 0 can never be met with units on this instance: every attempt fails until maxPL
    # reaches 0 and the pure MILP (never worse than now) is solved.
    snap = _one_to_one()
    plan = get_planner("albic", max_moves=2, max_load_distance=0.0).plan(snap)
    assert plan.details["max_partition_load"] == 0.0 and plan.details["pair"] is None
    assert plan.metrics["load_distance"] <= metrics.load_distance(snap) + 1e-12


@pytest.mark.parametrize("name, params, message", [
    ("albic", {"max_moves": -1}, "max_moves"),
    ("albic", {"time_limit": 0}, "time_limit"),
    ("albic", {"score_factor": -1.0}, "score_factor"),
    ("albic", {"step_partition_load": 0.0}, "step_partition_load"),
    ("cola", {"max_load_distance": -1.0}, "max_load_distance"),
])
def test_bad_parameters_are_named(name, params, message):
    with pytest.raises(InvalidParameterError, match=message):
        get_planner(name, **params)


def test_cola_meets_max_load_distance_and_keeps_a_good_placement():
    snap = _one_to_one(seed=5)
    plan = get_planner("cola", max_load_distance=5.0).plan(snap)
    assert plan.metrics["load_distance_pct"] <= 5.0 + 1e-9
    assert plan.metrics["collocation_factor"] == pytest.approx(1.0)
    # Applying COLA's own plan again changes nothing: it already meets its targets.
    again = get_planner("cola", max_load_distance=5.0).plan(snap.with_assignment(plan.assignment))
    assert again.moves == ()


def test_cola_drains_removing_nodes_and_matches_parts_to_keep_state():
    # Two collocated pairs, each already whole on its node; n3 is removing and holds nothing.
    kgs = [KeyGroup(k, k[0], 1.0, 100.0) for k in ("a1", "b1", "a2", "b2")]
    traffic = [Traffic("a1", "b1", 5.0), Traffic("a2", "b2", 5.0)]
    snap = Snapshot([Node("n1"), Node("n2"), Node("n3", removing=True)], kgs,
                    {"a1": "n1", "b1": "n1", "a2": "n2", "b2": "n3"}, traffic)
    plan = get_planner("cola").plan(snap)
    # The Hungarian matching keeps {a1, b1} on n1 and sends b2 to a2 on n2: one move.
    assert dict(plan.assignment) == {"a1": "n1", "b1": "n1", "a2": "n2", "b2": "n2"}


def test_a_pair_that_cannot_move_within_the_budget_is_skipped():
    # The heavy pair (a2, b2) sits apart; with max_moves=0 nothing may move, so no pin is made and
    # the plan keeps the current assignment.
    plan = get_planner("albic", max_moves=0).plan(_hand_snapshot())
    assert plan.details["pair"] is None and plan.moves == ()
    # With one move allowed, it is collocated on the less utilised node (case 1): n2 (load 1).
    plan = get_planner("albic", max_moves=1).plan(_hand_snapshot())
    assert plan.details["pair"] == ["a2", "b2"] and plan.details["case"] == 1
    assert plan.assignment["a2"] == plan.assignment["b2"] == "n2"
