"""Flink helpers that need no JVM: range split invariants, export refusals, flink_default."""

from __future__ import annotations

import pytest

from albic.base.errors import InvalidParameterError, NotContiguousError
from albic.cli.main import main
from albic.core.flink_keys import flink_key_group, flink_key_group_range, flink_subtask
from albic.core.model import KeyGroup, Node, Snapshot
from albic.core.plan import Plan
from albic.core.planner import get_planner
from albic.io import write_plan
from albic.rollout.flink import flink_ranges


@pytest.mark.parametrize("max_p", [1, 7, 128, 1000])
def test_ranges_partition_the_key_groups(max_p):
    for p in range(1, min(max_p, 40) + 1):
        covered = []
        for s in range(p):
            start, end = flink_key_group_range(s, max_p, p)
            covered += range(start, end + 1)
            assert all(flink_subtask(g, max_p, p) == s for g in range(start, end + 1))
        assert covered == list(range(max_p))


def test_bad_arguments_are_named():
    with pytest.raises(InvalidParameterError, match="max_parallelism = 0"):
        flink_key_group("a", max_parallelism=0)
    with pytest.raises(InvalidParameterError, match="key 2147483648 is not a Java int"):
        flink_key_group(2**31, key_type="int")
    with pytest.raises(InvalidParameterError, match="key_type = 'float'"):
        flink_key_group(1.5, key_type="float")
    with pytest.raises(InvalidParameterError, match="parallelism = 9"):
        flink_subtask(3, 8, 9)


def test_export_refuses_a_plan_that_is_not_contiguous(tmp_path, capsys):
    with pytest.raises(
        NotContiguousError, match=r"node 'a' holds key groups 0-1, 3, not one contiguous range"
    ):
        flink_ranges({"op/0": "a", "op/1": "a", "op/2": "b", "op/3": "a"})
    with pytest.raises(NotContiguousError, match="missing 2"):
        flink_ranges({"op/0": "a", "op/1": "a", "op/3": "b"})
    plan = Plan("by-hand", "FEASIBLE", {"op/0": "a", "op/1": "b", "op/2": "a"})
    write_plan(plan, tmp_path / "p.json")
    assert main(["export", "flink", str(tmp_path / "p.json")]) == 2  # stock export needs --snapshot
    err = capsys.readouterr().err
    assert "needs --snapshot" in err and err.count("\n") == 1


def test_flink_default_is_flinks_split_at_the_new_parallelism():
    # 10 key groups, a removing node and a new one: subtasks are the 3 active nodes in order.
    nodes = [Node("old", removing=True), Node("a"), Node("b"), Node("new")]
    groups = [KeyGroup(f"op/{g}", "op", 1.0, 10.0, index=g) for g in range(10)]
    snap = Snapshot(nodes, groups, {g.id: ("old" if g.index < 5 else "a") for g in groups})
    plan = get_planner("flink_default").plan(snap)
    for g in range(10):
        assert plan.assignment[f"op/{g}"] == ["a", "b", "new"][flink_subtask(g, 10, 3)]
    assert [(r["node"], r["start"], r["end"]) for r in flink_ranges(plan.assignment)["op"]] == [
        ("a", 0, 3),
        ("b", 4, 6),
        ("new", 7, 9),
    ]


def test_the_stats_spec_chooses_the_hash():
    from albic.stats.spec import InvalidSpecError, parse_spec

    base = 'timestamp = "ts"\n{}\n[[operators]]\nname = "op"\nkeys = ["k"]\n'
    spec = parse_spec(base.format('hash = "flink"\nmax_parallelism = 256'))
    assert (spec.hash, spec.key_group_count(128)) == ("flink", 256)
    assert parse_spec(base.format("")).key_group_count(64) == 64
    with pytest.raises(InvalidSpecError, match=r"hash = 'murmur', must be one of \['blake2b', 'flink'\]"):
        parse_spec(base.format('hash = "murmur"'))
    with pytest.raises(InvalidSpecError, match=r"max_parallelism = 40000, must be an int in \[1, 32768\]"):
        parse_spec(base.format("max_parallelism = 40000"))
