"""Plan.explain / albic explain on hand-made plans whose reasons and warnings are known."""

from __future__ import annotations

import dataclasses
import json

import pytest

from albic import InvalidSnapshotError, get_planner
from albic.cli.main import main
from albic.core.explain import explain
from albic.core.model import KeyGroup, Move, Node, Snapshot, Traffic
from albic.core.plan import Plan
from albic.core.reasons import REASONS
from albic.io import read_plan, write_plan, write_snapshot
from albic.solvers.balance_bound import load_distance_bound

SNAP = Snapshot(
    [Node("r", removing=True), Node("a"), Node("b")],
    [
        KeyGroup("d", "op1", 2.0, 20),
        KeyGroup("h1", "op1", 4.0, 40),
        KeyGroup("h2", "op1", 2.0, 20),
        KeyGroup("u", "op1", 1.0, 10),
        KeyGroup("v", "op2", 1.0, 10),
    ],
    {"d": "r", "h1": "a", "h2": "a", "u": "a", "v": "b"},
    traffic=[Traffic("u", "v", 30.0)],
)


def plan_of(to, **metrics):
    final = {**SNAP.assignment, **to}
    moves = tuple(
        Move(k, SNAP.assignment[k], t, next(g.state_size for g in SNAP.key_groups if g.id == k))
        for k, t in to.items()
    )
    return Plan("by-hand", "FEASIBLE", final, moves=moves, metrics=metrics)


def test_reasons_and_goals():
    # d leaves the removing node (drain); h2 goes a -> b (balance); v joins u on a (collocate).
    report = explain(plan_of({"d": "b", "h2": "b", "v": "a"}), SNAP)
    reasons = {m["key_group"]: m["reason"] for m in report["moves"]}
    assert reasons == {"d": "drain", "h2": "balance", "v": "collocate"}
    g = report["goals"]
    # Total load 10 over 2 active nodes: mean 5. Before: a 7, b 1 -> distance 4; after a 6, b 4.
    assert g["load_distance"] == {"before": 4.0, "after": 1.0}
    assert g["most_utilised"]["before"]["node"] == "a" and g["most_utilised"]["before"]["utilisation"] == 7.0
    assert g["removing_load"] == {"before": 2.0, "after": 0.0}
    assert g["collocation_factor"] == {"before": 0.0, "after": 1.0}
    assert g["state_moved"] == {"before": 0.0, "after": 50.0}
    assert g["budget_used"]["after"] is None and report["warnings"] == []
    assert report["moves"][1]["detail"] == "a at 1.40x the mean utilisation -> b at 0.20x"
    assert report["moves"][2]["detail"] == "30 tuples/s with key groups on a become local (0 stay with b)"


@pytest.mark.parametrize(
    "planner, reason", [("albic", "collocate"), ("milp", "balance"), ("flux", "balance")]
)
def test_a_move_is_collocate_only_for_a_planner_that_aims_at_traffic(planner, reason):
    # v joins u on a: 30 tuples/s become local. albic's objective counts traffic; milp's and
    # flux's count load alone, so for them the same move is balance, and says what it localises.
    plan = dataclasses.replace(plan_of({"v": "a"}), planner=planner)
    (move,) = explain(plan, SNAP)["moves"]
    assert move["reason"] == reason
    assert "30 tuples/s with key groups on a become local" in move["detail"]


def test_warnings_removing_node_and_budget():
    report = explain(plan_of({"h2": "b"}), SNAP, max_moves=1)
    assert report["budget"]["max_moves"] == 1 and report["goals"]["budget_used"]["after"] == 1.0
    assert report["warnings"][0].startswith("removing node r still holds 1 key group with load 2:")
    assert report["warnings"][1].startswith("the budget bound the result (all 1 move of max_moves used)")
    # A cost budget with 10 left while every key group not moved is bigger than 10... u is 10: not bound.
    assert not any(
        "budget" in w for w in explain(plan_of({"h2": "b"}), SNAP, max_migration_cost=30)["warnings"]
    )
    assert any(
        "max_migration_cost=25 has 5 B left, less than the smallest key group not moved (10 B)" in w
        for w in explain(plan_of({"h2": "b"}), SNAP, max_migration_cost=25)["warnings"]
    )


def test_time_limit_warning_from_the_plan_itself():
    cut = Plan("milp", "FEASIBLE", dict(SNAP.assignment), metrics={"time_limit": 0.25})
    assert any("time limit (250 ms) cut the search" in w for w in explain(cut, SNAP)["warnings"])
    proven = Plan("milp", "OPTIMAL", dict(SNAP.assignment), metrics={"time_limit": 0.25})
    assert not any("time limit" in w for w in explain(proven, SNAP)["warnings"])


@pytest.mark.parametrize(
    ("stopped_by", "cut_by"),
    [
        ("time limit", "the time limit (250 ms)"),
        ("work budget", "the work budget (time_limit=0.25 in deterministic mode)"),
        ("wall clock", "the wall-clock safety net (wall_clock_limit; the plan is not deterministic)"),
        ("done", None),
    ],
)
def test_the_warning_names_the_limit_that_cut_the_search_and_none_when_it_ended_on_its_own(
    stopped_by, cut_by
):
    # An unproven plan of a planner that says which limit ended its search (milp, albic): the
    # warning names that limit, and none when the search ran out of things to try -- more time
    # would not change that plan.
    plan = Plan(
        "milp",
        "FEASIBLE",
        dict(SNAP.assignment),
        metrics={"time_limit": 0.25},
        details={"stopped_by": stopped_by},
    )
    cut = [w for w in explain(plan, SNAP)["warnings"] if "cut the search" in w]
    if cut_by is None:
        assert cut == []
    else:
        assert len(cut) == 1 and cut[0].startswith(cut_by)
        assert "cut the search: the plan is not proven optimal" in cut[0]


def test_a_planned_plan_explains_itself_and_a_file_needs_its_snapshot(tmp_path, capsys):
    plan = get_planner("flux", max_moves=1).plan(SNAP)
    report = plan.explain()
    assert report["budget"]["max_moves"] == 1 and report["moves"][0]["reason"] == "drain"
    write_plan(plan, tmp_path / "p.json")
    write_snapshot(SNAP, tmp_path / "s.json")
    with pytest.raises(InvalidSnapshotError, match="does not carry its snapshot"):
        read_plan(tmp_path / "p.json").explain()
    assert main(["explain", str(tmp_path / "p.json"), "--snapshot", str(tmp_path / "s.json"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads(json.dumps(report))
    assert main(["explain", str(tmp_path / "p.json"), "--snapshot", str(tmp_path / "s.json")]) == 0
    text = capsys.readouterr().out
    assert "d: r -> " in text and "drain: r is being removed" in text
    wrong = Snapshot([Node("a")], [KeyGroup("z", "op", 1.0)], {"z": "a"})
    write_snapshot(wrong, tmp_path / "w.json")
    assert main(["explain", str(tmp_path / "p.json"), "--snapshot", str(tmp_path / "w.json")]) == 2


def test_a_plan_that_lowers_the_collocation_factor_is_flagged_with_how_much():
    # x and y talk at 10 tuples/s on a; z on b talks to x at 30. Before: 10 of 40 local (25%);
    # moving y to b leaves nothing local: 25 points lost, 10 tuples/s more cross between nodes.
    snap = Snapshot(
        [Node("a"), Node("b")],
        [KeyGroup("x", "op", 2.0, 8), KeyGroup("y", "op", 2.0, 8), KeyGroup("z", "op", 1.0, 8)],
        {"x": "a", "y": "a", "z": "b"},
        traffic=[Traffic("x", "y", 10.0), Traffic("z", "x", 30.0)],
    )
    lowered = Plan("by-hand", "FEASIBLE", {"x": "a", "y": "b", "z": "b"}, moves=(Move("y", "a", "b", 8.0),))
    report = explain(lowered, snap)
    assert report["goals"]["collocation_factor"] == {"before": 0.25, "after": 0.0}
    assert report["warnings"] == [
        "the plan lowers the collocation factor by 25.00 percentage points, from 25.00% to 0.00% "
        "of the traffic: 10 tuples/s more cross between nodes"
    ]
    # A plan that keeps or raises it says nothing of the kind.
    raised = Plan("by-hand", "FEASIBLE", {"x": "b", "y": "a", "z": "b"}, moves=(Move("x", "a", "b", 8.0),))
    assert (
        report["goals"]["collocation_factor"]["before"]
        < explain(raised, snap)["goals"]["collocation_factor"]["after"]
    )
    assert not any("collocation" in w for w in explain(raised, snap)["warnings"])


def test_explain_text_on_the_example_as_a_user_reads_it(tmp_path, capsys):
    # The case, with flux (deterministic): five moves on the bundled example lower the
    # collocation factor; the text says so with the numbers of the metrics.
    from albic.core import metrics
    from albic.io.examples import example_snapshot

    snap = example_snapshot()
    plan = get_planner("flux", max_moves=5).plan(snap)
    before = metrics.collocation_factor(snap, snap.assignment)
    after = metrics.collocation_factor(snap, plan.assignment)
    assert after < before
    write_plan(plan, tmp_path / "p.json")
    write_snapshot(snap, tmp_path / "s.json")
    assert main(["explain", str(tmp_path / "p.json"), "--snapshot", str(tmp_path / "s.json")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "flux: FEASIBLE"
    goals = {line.split("  ")[0]: line for line in lines[2:8]}
    assert goals["collocation factor"].split() == [
        "collocation",
        "factor",
        f"{100 * before:.2f}%",
        "->",
        f"{100 * after:.2f}%",
    ]
    moved = sum(m.cost for m in plan.moves)
    assert goals["state moved"].split()[-2:] == [f"{moved / 1024:.1f}", "KiB"] and 10 <= moved / 1024 < 100
    assert lines[8] == "5 moves:"
    words = [line.split(") ", 1)[1].split(":")[0] for line in lines[9:14]]
    assert words == [m["reason"] for m in plan.explain()["moves"]] and set(words) <= set(REASONS)
    assert lines[15] == (
        f"warning: the plan lowers the collocation factor by {100 * (before - after):.2f} percentage "
        f"points, from {100 * before:.2f}% to {100 * after:.2f}% of the traffic: "
        f"{metrics.remote_traffic(snap, plan.assignment) - metrics.remote_traffic(snap):.0f} tuples/s "
        "more cross between nodes"
    )


def floor_snapshot() -> Snapshot:
    """Five nodes, a key group of load 14 alone on n1 and 36 of load 1 on the others (16, 10, 6,
    4): total 50, mean 10, so the heavy key group alone is 1.40x the mean and no placement goes
    below a load distance of 4 (40 %). Two moves n2 -> n5 reach it: 14, 14, 10, 6, 6."""
    ones = [KeyGroup(f"one/{i}", "op", 1.0, 10) for i in range(36)]
    where = ["n2"] * 16 + ["n3"] * 10 + ["n4"] * 6 + ["n5"] * 4
    return Snapshot(
        [Node(f"n{i}") for i in range(1, 6)],
        [KeyGroup("heavy", "op", 14.0, 10), *ones],
        {"heavy": "n1", **{kg.id: node for kg, node in zip(ones, where)}},
    )


def test_a_plan_at_the_key_group_floor_blames_the_key_group_not_the_budget():
    snap = floor_snapshot()
    plan = get_planner("milp", max_moves=2, time_limit=2).plan(snap)
    report = plan.explain()
    assert len(plan.moves) == 2 and report["goals"]["load_distance_pct"]["after"] == pytest.approx(40.0)
    assert report["floor"]["key_group"] == "heavy" and report["floor"]["of_mean"] == pytest.approx(1.4)
    assert report["floor"]["load_distance_pct"] == pytest.approx(40.0)
    floor = [w for w in report["warnings"] if w.startswith("a key group sets the floor")]
    assert floor == [
        "a key group sets the floor: heavy alone carries 1.40x the mean utilisation, so no placement "
        "goes below 40.00% of the mean whatever the budget; this plan is at that floor: no plan, "
        "with any budget or time limit, does better"
    ]
    assert not any("the budget bound" in w or "cut the search" in w for w in report["warnings"])
    # More budget does not help, as the floor says: milp with 20 moves stops at 40 % too.
    more = get_planner("milp", max_moves=20, time_limit=2).plan(snap)
    assert more.metrics["load_distance_pct"] == pytest.approx(40.0)
    assert any(w.startswith("a key group sets the floor") for w in more.explain()["warnings"])


def test_a_budget_that_binds_above_the_floor_says_so_with_both_bounds():
    snap = floor_snapshot()
    plan = get_planner("milp", max_moves=1, time_limit=2).plan(snap)
    report = plan.explain()
    # One move: n2 -> n5 leaves 15 and 5, or n2 -> n4 leaves 15 and 7: 50 % at best.
    assert report["goals"]["load_distance_pct"]["after"] == pytest.approx(50.0)
    arrays = snap.arrays()
    counting = (
        100
        * load_distance_bound(arrays.loads, arrays.current, arrays.capacities, arrays.removing, max_moves=1)
        / 10.0
    )
    assert report["budget"]["bound_load_distance_pct"] == pytest.approx(counting)
    assert counting == pytest.approx(50.0, abs=1e-3)  # one move cannot do better: proven
    (warning,) = [w for w in report["warnings"] if "budget" in w]
    assert warning == (
        "the budget bound the result (all 1 move of max_moves used): the load distance is still "
        "50.00% of the mean; no plan within this budget goes below 50.00% (heavy alone keeps "
        "every placement at 40.00% or more)"
    )


def test_a_budget_used_on_the_wrong_move_names_the_floor_as_the_better_bound():
    # From 14, 15, 10, 6, 5 (50 %) one move n2 -> n5 would reach the floor; this plan spends its one
    # move n3 -> n4 instead and stays at 50 %. The counting bound at one move is below the floor.
    snap = floor_snapshot()
    at = dict(snap.assignment) | {"one/15": "n5"}  # n2 16 -> 15, n5 4 -> 5
    start = snap.with_assignment(at)
    plan = Plan(
        "by-hand",
        "FEASIBLE",
        at | {"one/16": "n4"},  # n3 10 -> 9, n4 6 -> 7
        moves=(Move("one/16", "n3", "n4", 10.0),),
        metrics={"max_moves": 1},
    )
    report = explain(plan, start)
    assert report["goals"]["load_distance_pct"]["after"] == pytest.approx(50.0)
    assert report["budget"]["bound_load_distance_pct"] <= 40.0
    (warning,) = [w for w in report["warnings"] if "budget" in w]
    assert warning == (
        "the budget bound the result (all 1 move of max_moves used): the load distance is still "
        "50.00% of the mean; heavy alone keeps every placement at 40.00% or more, whatever the budget"
    )


def test_explain_refuses_a_bad_or_contradicting_limit(tmp_path, capsys):
    plan = get_planner("flux", max_moves=2).plan(floor_snapshot())
    write_plan(plan, tmp_path / "p.json")
    write_snapshot(floor_snapshot(), tmp_path / "s.json")
    argv = ["explain", str(tmp_path / "p.json"), "--snapshot", str(tmp_path / "s.json")]
    for extra, names in (
        (["--max-moves", "-3"], ["--max-moves", "-3", "whole number >= 0"]),
        (["--max-moves", "5"], ["--max-moves", "5", "records max_moves = 2"]),
        (["--max-migration-cost", "-1"], ["--max-migration-cost", ">= 0"]),
    ):
        assert main(argv + extra) == 2
        err = capsys.readouterr().err
        assert len(err.splitlines()) == 1 and all(name in err for name in names), err
    assert main([*argv, "--max-moves", "2"]) == 0  # the recorded value itself is fine
    # A plan that records no budget takes the option.
    bare = Plan("by-hand", "FEASIBLE", dict(plan.assignment), moves=plan.moves)
    assert explain(bare, floor_snapshot(), max_moves=4)["budget"]["max_moves"] == 4
