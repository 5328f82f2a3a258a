"""StormDefaultPlanner: equal consecutive blocks per operator.

Node j of n gets positions [floor(j*m/n), floor((j+1)*m/n)) of an operator's m key groups.
"""

from __future__ import annotations

from albic.core.model import KeyGroup, Node, Snapshot
from albic.planners.baselines import StormDefaultPlanner


def _snapshot(nodes, key_groups, on=None) -> Snapshot:
    """Key groups placed on node ``on`` (default: the first node)."""
    where = on or nodes[0].id
    return Snapshot(nodes, key_groups, {k.id: where for k in key_groups})


def _nodes(*ids: str, removing: tuple[str, ...] = ()) -> list[Node]:
    return [Node(i, removing=i in removing) for i in ids]


def _indexed(operator: str, m: int) -> list[KeyGroup]:
    return [KeyGroup(f"{operator}{i}", operator, 1.0, index=i) for i in range(m)]


def test_ten_over_three_nodes_gives_blocks_of_3_3_4():
    # floor(j * 10 / 3) for j = 0..3: 0, 3, 6, 10.
    snap = _snapshot(_nodes("a", "b", "c"), _indexed("op", 10))
    plan = StormDefaultPlanner().plan(snap)
    assert [plan.assignment[f"op{i}"] for i in range(10)] == ["a"] * 3 + ["b"] * 3 + ["c"] * 4
    assert plan.details == {"blocks": {"op": [["a", 0, 3], ["b", 3, 6], ["c", 6, 10]]}}


def test_each_operator_is_split_separately():
    # op1: 4 over 2 -> [0, 2), [2, 4); op2: 5 over 2 -> floor(5/2) = 2: [0, 2), [2, 5).
    # (Splitting all 9 together, [0, 4) and [4, 9), would put op1 wholly on a and op2 on b.)
    snap = _snapshot(_nodes("a", "b"), _indexed("op1", 4) + _indexed("op2", 5))
    plan = StormDefaultPlanner().plan(snap)
    assert [plan.assignment[f"op1{i}"] for i in range(4)] == ["a", "a", "b", "b"]
    assert [plan.assignment[f"op2{i}"] for i in range(5)] == ["a", "a", "b", "b", "b"]
    assert plan.details["blocks"] == {
        "op1": [["a", 0, 2], ["b", 2, 4]],
        "op2": [["a", 0, 2], ["b", 2, 5]],
    }


def test_blocks_follow_index_not_snapshot_order():
    # Snapshot order x, y, z, w with indices 3, 0, 2, 1: by index y, w, z, x -> a gets y, w.
    # Key groups without an index come after the indexed ones, in snapshot order: u then v.
    key_groups = [
        KeyGroup("x", "op", 1.0, index=3),
        KeyGroup("u", "op", 1.0),
        KeyGroup("y", "op", 1.0, index=0),
        KeyGroup("z", "op", 1.0, index=2),
        KeyGroup("v", "op", 1.0),
        KeyGroup("w", "op", 1.0, index=1),
    ]
    # Order y, w, z, x, u, v over 3 nodes: [0, 2) a, [2, 4) b, [4, 6) c.
    plan = StormDefaultPlanner().plan(_snapshot(_nodes("a", "b", "c"), key_groups))
    assert dict(plan.assignment) == {"y": "a", "w": "a", "z": "b", "x": "b", "u": "c", "v": "c"}


def test_removing_nodes_get_nothing():
    # b is removing: 4 key groups over a and c -> [0, 2) a, [2, 4) c; b's key group leaves.
    snap = _snapshot(_nodes("a", "b", "c", removing=("b",)), _indexed("op", 4), on="b")
    plan = StormDefaultPlanner().plan(snap)
    assert [plan.assignment[f"op{i}"] for i in range(4)] == ["a", "a", "c", "c"]
    assert plan.details["blocks"] == {"op": [["a", 0, 2], ["c", 2, 4]]}


def test_a_new_node_gets_the_last_block():
    # Before: 6 key groups as 3/3 on a, b. c is new (empty): 2/2/2, c gets positions 4 and 5.
    nodes = _nodes("a", "b", "c")
    key_groups = _indexed("op", 6)
    snap = Snapshot(nodes, key_groups, {k.id: "a" if k.index < 3 else "b" for k in key_groups})
    plan = StormDefaultPlanner().plan(snap)
    assert [plan.assignment[f"op{i}"] for i in range(6)] == ["a", "a", "b", "b", "c", "c"]
    # Ad hoc: op2 moves a -> b, op4 and op5 move b -> c: 3 moves, where 2 (one from a and one
    # from b to c) would balance the counts as well.
    assert {m.key_group for m in plan.moves} == {"op2", "op4", "op5"}


def test_blocks_are_not_matched_to_current_nodes():
    # The first block is on b and the second on a already; a matching scheduler would move
    # nothing, Storm's sends block 0 to a and block 1 to b: everything moves.
    key_groups = _indexed("op", 4)
    snap = Snapshot(_nodes("a", "b"), key_groups, {"op0": "b", "op1": "b", "op2": "a", "op3": "a"})
    plan = StormDefaultPlanner().plan(snap)
    assert len(plan.moves) == 4


def test_fewer_key_groups_than_nodes_leaves_empty_blocks():
    # 2 over 3: floor(j*2/3) = 0, 0, 1, 2 -> a empty, b gets 0, c gets 1.
    plan = StormDefaultPlanner().plan(_snapshot(_nodes("a", "b", "c"), _indexed("op", 2)))
    assert dict(plan.assignment) == {"op0": "b", "op1": "c"}
    assert plan.details["blocks"] == {"op": [["a", 0, 0], ["b", 0, 1], ["c", 1, 2]]}


def test_load_is_ignored():
    # One heavy key group does not change the blocks.
    key_groups = [KeyGroup(f"k{i}", "op", 100.0 if i == 0 else 1.0, index=i) for i in range(4)]
    plan = StormDefaultPlanner().plan(_snapshot(_nodes("a", "b"), key_groups))
    assert [plan.assignment[f"k{i}"] for i in range(4)] == ["a", "a", "b", "b"]
