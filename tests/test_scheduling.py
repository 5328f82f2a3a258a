"""albic.schedule on hand-made plans whose right batches are known."""

from __future__ import annotations

import json

import pytest

import albic
from albic import InvalidParameterError, InvalidSnapshotError
from albic.cli.main import main
from albic.core.model import KeyGroup, Move, Node, Snapshot, Traffic
from albic.core.plan import Plan
from albic.core.reasons import REASONS
from albic.io import write_plan, write_snapshot


def make(nodes, groups, where, to):
    """A snapshot and a plan moving the key groups of ``to`` (state size = 10 x load)."""
    snap = Snapshot(nodes, [KeyGroup(k, "op", w, 10 * w) for k, w in groups.items()], where)
    final = {**where, **to}
    moves = tuple(Move(k, where[k], t, 10 * groups[k]) for k, t in to.items())
    return snap, Plan("by-hand", "FEASIBLE", final, moves=moves)


def batches(result):
    return [[m["key_group"] for m in b["moves"]] for b in result["batches"]]


def test_room_is_made_before_a_node_receives():
    # a is overloaded (x, y); b must pass z on to c before it can take x: with one move per node
    # at a time that is two batches, z first although x has the higher priority; with two, one.
    snap, plan = make(
        [Node("a"), Node("b"), Node("c")],
        {"x": 3.0, "y": 3.0, "z": 2.0},
        {"x": "a", "y": "a", "z": "b"},
        {"x": "b", "z": "c"},
    )
    assert batches(albic.schedule(plan, snap, max_per_node=1)) == [["z"], ["x"]]
    assert batches(albic.schedule(plan, snap, max_per_node=2)) == [["z", "x"]]
    # Both moves even the load: one word for both, the word albic explain gives them.
    reasons = {m["key_group"]: m["reason"] for b in albic.schedule(plan, snap)["batches"] for m in b["moves"]}
    assert reasons == {"x": "balance", "z": "balance"}
    assert reasons == {m["key_group"]: m["reason"] for m in plan.explain(snap)["moves"]}


def test_one_vocabulary_of_reasons_across_schedule_and_explain():
    # r is removing (drain); u goes to v's node (collocate); h leaves the hot node a (balance).
    snap = Snapshot(
        [Node("r", removing=True), Node("a"), Node("b")],
        [
            KeyGroup("d", "op", 1.0, 10),
            KeyGroup("h", "op", 4.0, 40),
            KeyGroup("g", "op", 3.0, 30),
            KeyGroup("u", "op", 1.0, 10),
            KeyGroup("v", "op", 1.0, 10),
        ],
        {"d": "r", "h": "a", "g": "a", "u": "a", "v": "b"},
        traffic=[Traffic("u", "v", 5.0)],
    )
    final = {**snap.assignment, "d": "b", "h": "b", "u": "b"}
    moves = tuple(Move(k, snap.assignment[k], final[k], 10.0) for k in ("d", "h", "u"))
    plan = Plan("by-hand", "FEASIBLE", final, moves=moves)
    scheduled = {
        m["key_group"]: m["reason"] for b in albic.schedule(plan, snap)["batches"] for m in b["moves"]
    }
    explained = {m["key_group"]: m["reason"] for m in plan.explain(snap)["moves"]}
    assert scheduled == explained == {"d": "drain", "h": "balance", "u": "collocate"}
    assert set(scheduled.values()) == set(REASONS)


def test_drains_first_and_per_node_concurrency():
    # Three key groups leave removing node r, one balancing move b -> c; at most 2 per node.
    snap, plan = make(
        [Node("r", removing=True), Node("b"), Node("c"), Node("d")],
        {"p": 1.0, "q": 4.0, "s": 2.0, "m": 5.0},
        {"p": "r", "q": "r", "s": "r", "m": "b"},
        {"p": "c", "q": "d", "s": "c", "m": "c"},
    )
    result = albic.schedule(plan, snap, max_per_node=2, bandwidth=10.0)
    # Drains by load: q, s, then p; r sends at most 2 per batch, so p waits, while m (b -> c)
    # joins batch 1: c has a free slot and ends at 2 + 5 = 7 <= its limit max(0, 8).
    assert batches(result) == [["q", "s", "m"], ["p"]]
    # Batch 1: r sends 40 + 20 bytes, c receives 20 + 50 -> 7 s at 10 B/s; batch 2: 10 bytes, 1 s.
    assert [b["seconds"] for b in result["batches"]] == [7.0, 1.0] and result["seconds"] == 8.0
    for b in result["batches"]:
        ends = [m["from"] for m in b["moves"]] + [m["to"] for m in b["moves"]]
        assert max(ends.count(n) for n in set(ends)) <= 2


def test_a_swap_goes_together_or_is_flagged():
    snap, plan = make(
        [Node("a"), Node("b")], {"x": 3.0, "y": 3.0}, {"x": "a", "y": "b"}, {"x": "b", "y": "a"}
    )
    together = albic.schedule(plan, snap, max_per_node=2)
    assert batches(together) == [["x", "y"]] and together["batches"][0]["over_limit"] == []
    apart = albic.schedule(plan, snap, max_per_node=1)
    assert batches(apart) == [["x"], ["y"]]
    assert [b["over_limit"] for b in apart["batches"]] == [["b"], []]
    assert apart["seconds"] is None


def test_bad_input_is_named(tmp_path, capsys):
    snap, plan = make([Node("a"), Node("b")], {"x": 1.0}, {"x": "a"}, {"x": "b"})
    with pytest.raises(InvalidParameterError, match="max_per_node = 0"):
        albic.schedule(plan, snap, max_per_node=0)
    other = Snapshot([Node("a"), Node("b")], [KeyGroup("x", "op", 1.0)], {"x": "b"})
    with pytest.raises(InvalidSnapshotError, match="snapshot has it on 'b'"):
        albic.schedule(plan, other)
    write_snapshot(snap, tmp_path / "s.json")
    write_plan(plan, tmp_path / "p.json")
    assert (
        main(
            [
                "schedule",
                str(tmp_path / "p.json"),
                "--snapshot",
                str(tmp_path / "s.json"),
                "--bandwidth",
                "5",
                "--json",
            ]
        )
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    assert batches(data) == [["x"]] and data["seconds"] == 2.0
    assert main(["schedule", str(tmp_path / "p.json"), "--snapshot", str(tmp_path / "s.json")]) == 0
    table = capsys.readouterr().out
    assert table.splitlines()[-1] == "1 batch, 1 move, at most 5 per node at once"
    assert table.splitlines()[1].split() == ["1", "x", "a", "b", "10", "B", "balance"]
