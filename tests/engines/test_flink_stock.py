"""Stock Flink, as stock Flink behaves: `albic export flink` writes Flink's own ranges for the
parallelism a plan names or refuses the plan (how many key groups differ, the nearest parallelism),
refuses key groups not made with Flink's hash, writes a labelled table with --custom-assignment; and
`albic flink advise` / albic.rollout.flink.advise, checked against an independent recomputation of
each subtask's load (Flink's ranges one subtask at a time) and Flink's autoscaler rule."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math

import numpy as np
import pytest

from albic.base.errors import InvalidParameterError, KeyHashError, NotStockFlinkError
from albic.base.formats import size
from albic.cli.main import main
from albic.core.flink_keys import default_max_parallelism, flink_key_group_range
from albic.core.model import KeyGroup, Node, Operator, Snapshot
from albic.core.plan import Plan
from albic.io import write_plan, write_snapshot
from albic.rollout import flink


def flink_snapshot(loads, *, nodes=4, key_hash="flink", max_parallelism="same", states=None):
    k = len(loads)
    groups = [
        KeyGroup(f"op/{g}", "op", float(w), float(100 if states is None else states[g]), index=g)
        for g, w in enumerate(loads)
    ]
    node_list = [Node(f"n{i}") for i in range(nodes)]
    mp = k if max_parallelism == "same" else max_parallelism
    ops = (
        []
        if key_hash is None
        else [Operator("op", key_hash=key_hash, max_parallelism=mp if key_hash == "flink" else None)]
    )
    return Snapshot(
        node_list, groups, {kg.id: node_list[kg.index * nodes // k].id for kg in groups}, operators=ops
    )


def brute_differ(table, nodes, n, q):
    """Key groups off Flink's split at q under the best naming of nodes as distinct subtasks (a node
    left unnamed matches nothing), by trying every naming (small q only)."""
    subtask = [g * q // n for g in range(n)]
    best = 0
    m = min(len(nodes), q)
    for chosen in itertools.combinations(nodes, m):
        for names in itertools.permutations(range(q), m):
            of = dict(zip(chosen, names))
            best = max(best, sum(of.get(table[g]) == subtask[g] for g in range(n)))
    return n - best


def test_the_issues_ssm_plan_is_refused_with_the_count_and_the_nearest_parallelism(tmp_path, capsys):
    # ssm for 32 key groups on 5 subtasks wrote 0-7, 8-15, 16-23, 24-24, 25-31; Flink uses
    # 0-6, 7-12, 13-19, 20-25, 26-31.
    table = {g: "abcde"[min(g // 8, 3) + (g >= 25)] for g in range(32)}
    differ = {q: brute_differ(table, list("abcde"), 32, q) for q in range(1, 10)}
    # For q >= 10 each subtask has <= 4 key groups: 5 nodes match <= 20, so >= 12 differ.
    nearest = min(differ, key=lambda q: (differ[q], abs(q - 5), q))
    assert differ[5] == 9 and differ[4] == 1 and min(differ.values()) < 12
    snap = flink_snapshot([1.0] * 32, nodes=5)
    plan = Plan(
        "ssm",
        "FEASIBLE",
        {f"op/{g}": {"abcde"[i]: f"n{i}" for i in range(5)}[n] for g, n in table.items()},
        snapshot=snap,
    )
    write_plan(plan, tmp_path / "plan.json")
    write_snapshot(snap, tmp_path / "snap.json")
    out = tmp_path / "ranges.json"
    assert (
        main(
            [
                "export",
                "flink",
                str(tmp_path / "plan.json"),
                "--snapshot",
                str(tmp_path / "snap.json"),
                "--out",
                str(out),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and not out.exists() and f"{tmp_path / 'plan.json'}: operator 'op'" in err
    assert f"{differ[5]} of 32 key groups are not where stock Flink puts them at parallelism 5" in err
    assert f"the nearest stock split is parallelism {nearest} ({differ[nearest]} key groups differ)" in err


@pytest.mark.parametrize("n, fold", [(8, 1), (32, 1), (32, 2), (128, 1), (16, 4)])
def test_export_writes_only_ranges_stock_flink_uses(n, fold):
    """Random plans, some Flink's split under shuffled node names, some perturbed: each is either
    refused or exported as exactly KeyGroupRangeAssignment's ranges (checked one subtask at a
    time) with every range on the node that holds those key groups in the plan."""
    rng = np.random.default_rng(n * 10 + fold)
    k = n * fold
    ids = {f"op/{g}": ("op", g) for g in range(k)}
    written = refused = 0
    for case in range(60):
        p = int(rng.integers(1, min(n, 12) + 1))
        names = [f"w{i}" for i in rng.permutation(p)]
        table = {g: names[(g % n) * p // n] for g in range(k)}
        if case % 3 == 0 and k > 1:  # perturb: one key group to another node
            g = int(rng.integers(k))
            table[g] = names[int(rng.integers(p))]
        assignment = {f"op/{g}": node for g, node in table.items()}
        try:
            out = flink.stock_flink_ranges(assignment, ids, max_parallelism={"op": n})["op"]
        except NotStockFlinkError as err:
            refused += 1
            assert len(set(table.values())) >= 1 and "differ" in str(err)
            continue
        written += 1
        used = len(set(table.values()))
        assert out["parallelism"] == used and out["max_parallelism"] == n
        for r in out["ranges"]:
            assert (r["start"], r["end"]) == flink_key_group_range(r["subtask"], n, used)
            holders = {table[g] for g in range(k) if r["start"] <= g % n <= r["end"]}
            assert holders == {r["node"]}
    assert written >= 30 and refused >= 1 or n == 8 and written >= 30


def test_export_refuses_key_groups_not_made_with_flinks_hash(tmp_path, capsys):
    plan = Plan("flink_default", "FEASIBLE", {f"op/{g}": f"n{g * 4 // 32}" for g in range(32)})
    for key_hash, message in (
        ("blake2b", "made with the blake2b hash, not Flink's"),
        (None, "does not say which hash made its key groups"),
    ):
        snap = flink_snapshot([1.0] * 32, key_hash=key_hash)
        write_plan(dataclasses.replace(plan, snapshot=snap), tmp_path / "plan.json")
        write_snapshot(snap, tmp_path / "snap.json")
        assert (
            main(["export", "flink", str(tmp_path / "plan.json"), "--snapshot", str(tmp_path / "snap.json")])
            == 2
        )
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1 and f"--snapshot {tmp_path / 'snap.json'}" in err
    # The same plan over Flink's key groups is written.
    snap = flink_snapshot([1.0] * 32)
    write_plan(dataclasses.replace(plan, snapshot=snap), tmp_path / "plan.json")
    write_snapshot(snap, tmp_path / "snap.json")
    assert (
        main(
            [
                "export",
                "flink",
                str(tmp_path / "plan.json"),
                "--snapshot",
                str(tmp_path / "snap.json"),
                "--out",
                str(tmp_path / "r.json"),
            ]
        )
        == 0
    )
    body = json.loads((tmp_path / "r.json").read_text())["operators"]["op"]
    assert [(r["start"], r["end"]) for r in body["ranges"]] == [(0, 7), (8, 15), (16, 23), (24, 31)]


def test_the_maximum_parallelism_defaults_to_flinks_and_folds_the_key_groups(tmp_path, capsys):
    # Statistics hashed into 256 key groups, no max_parallelism stated: a 3-subtask job runs with
    # Flink's default 128, and key group g of the statistics is Flink's g % 128.
    assert default_max_parallelism(3) == 128
    snap = flink_snapshot([1.0] * 256, nodes=3, max_parallelism=None)
    plan = Plan("by-hand", "FEASIBLE", {f"op/{g}": f"n{(g % 128) * 3 // 128}" for g in range(256)})
    write_plan(plan, tmp_path / "plan.json")
    write_snapshot(snap, tmp_path / "snap.json")
    assert (
        main(
            [
                "export",
                "flink",
                str(tmp_path / "plan.json"),
                "--snapshot",
                str(tmp_path / "snap.json"),
                "--out",
                str(tmp_path / "r.json"),
            ]
        )
        == 0
    )
    body = json.loads((tmp_path / "r.json").read_text())["operators"]["op"]
    assert body["max_parallelism"] == 128 and "computeDefaultMaxParallelism" in body["max_parallelism_from"]
    assert [(r["start"], r["end"]) for r in body["ranges"]] == [
        flink_key_group_range(s, 128, 3) for s in range(3)
    ]
    capsys.readouterr()
    # --max-parallelism 100 does not divide 256: the key groups at 100 cannot be told.
    assert (
        main(
            [
                "export",
                "flink",
                str(tmp_path / "plan.json"),
                "--snapshot",
                str(tmp_path / "snap.json"),
                "--max-parallelism",
                "100",
            ]
        )
        == 2
    )
    assert "max_parallelism = 100 does not divide the 256 key groups" in capsys.readouterr().err


def test_custom_assignment_is_the_plan_labelled(tmp_path, capsys):
    table = {g: "abcde"[min(g // 8, 3) + (g >= 25)] for g in range(32)}
    write_plan(Plan("ssm", "FEASIBLE", {f"op/{g}": n for g, n in table.items()}), tmp_path / "plan.json")
    assert (
        main(
            [
                "export",
                "flink",
                str(tmp_path / "plan.json"),
                "--custom-assignment",
                "--out",
                str(tmp_path / "t.json"),
            ]
        )
        == 0
    )
    doc = json.loads((tmp_path / "t.json").read_text())
    assert doc["schema"] == "albic.custom-assignment/1" and "not stock Flink" in doc["kind"]
    body = doc["operators"]["op"]
    assert body["assignment"] == [table[g] for g in range(32)]
    assert body["nodes"] == {"a": [[0, 7]], "b": [[8, 15]], "c": [[16, 23]], "d": [[24, 24]], "e": [[25, 31]]}
    assert "custom assignment (not stock Flink)" in capsys.readouterr().out


# -- the advisor ----------------------------------------------------------------------------------


def busiest_by_hand(loads, n, p, capacity):
    """Each subtask's load under Flink's ranges, one subtask at a time (flink_key_group_range is
    checked against Flink's own code on the JVM)."""
    subtask_loads = []
    for s in range(p):
        start, end = flink_key_group_range(s, n, p)
        subtask_loads.append(sum(loads[start : end + 1]))
    return max(subtask_loads) / capacity


def test_on_a_skewed_snapshot_the_autoscalers_pick_overloads_and_the_advisors_does_not():
    rng = np.random.default_rng(3)
    loads = rng.uniform(1, 2, 128)
    loads[[40, 41]] = [30, 28]  # two hot neighbours: one subtask until a range boundary splits them
    advice = flink.advise(flink_snapshot(loads), subtask_capacity=60, current=4)
    target = advice["target_utilisation"]
    by_hand = {p: busiest_by_hand(loads, 128, p, 60) for p in range(1, 129)}
    expected = min(p for p, b in by_hand.items() if b <= target)
    assert advice["recommended"] == expected
    assert by_hand[advice["recommended"]] <= target
    auto = advice["autoscaler"]
    assert auto["parallelism"] != advice["recommended"]
    assert by_hand[auto["parallelism"]] > target and auto["over_target"]
    assert math.isclose(auto["busiest_utilisation"], by_hand[auto["parallelism"]])
    for row in advice["candidates"]:
        assert math.isclose(row["busiest_utilisation"], by_hand[row["parallelism"]])
        assert math.isclose(sum(row["subtask_loads"]), loads.sum())
    # The autoscaler rule, by hand: busy = busiest subtask at the current parallelism (MAX).
    factor = by_hand[4] / target
    raw = math.ceil(factor * 4)
    assert auto["before_alignment"] == raw
    assert auto["parallelism"] == next(p for p in range(raw, 129) if 128 % p == 0)


def test_on_an_even_snapshot_both_picks_agree():
    # 128 key groups of load 10 and subtasks of 120 at 70 %: at most 8 key groups a subtask, so 16
    # subtasks, a divisor of 128 -- which the autoscaler's average-based rule finds too.
    advice = flink.advise(flink_snapshot([10.0] * 128), subtask_capacity=120, current=4)
    assert advice["recommended"] == advice["autoscaler"]["parallelism"] == 16
    assert not advice["autoscaler"]["over_target"]
    # Over many capacities: the autoscaler never overloads an even snapshot, and its pick is the
    # advisor's rounded up to a divisor of the maximum parallelism (its alignment rule).
    for capacity in range(20, 400, 7):
        advice = flink.advise(flink_snapshot([10.0] * 128), subtask_capacity=capacity, current=4)
        auto = advice["autoscaler"]
        assert not auto["over_target"]
        assert auto["parallelism"] == min(p for p in range(advice["recommended"], 129) if 128 % p == 0)


def test_no_parallelism_meets_the_target_when_one_key_group_is_over_it(tmp_path):
    loads = [1.0] * 32
    loads[7] = 80.0
    advice = flink.advise(flink_snapshot(loads), subtask_capacity=100, current=2)
    assert advice["recommended"] is None
    assert "key group 7 alone carries 80" in advice["reason"] and "80.00% of a subtask" in advice["reason"]
    flink.plot_advice(advice, tmp_path / "a.png")  # the figure without a recommendation
    assert (tmp_path / "a.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_over_a_series_the_peak_decides():
    calm = flink_snapshot([1.0] * 64)
    hot = [1.0] * 64
    hot[10:14] = [12.0] * 4
    periods = [
        Snapshot(calm.nodes, calm.key_groups, calm.assignment, operators=calm.operators, period="t0"),
        flink_snapshot(hot),
        calm,
    ]
    periods[1] = Snapshot(
        periods[1].nodes,
        periods[1].key_groups,
        periods[1].assignment,
        operators=periods[1].operators,
        period="t1",
    )
    advice = flink.advise(periods, subtask_capacity=20, current=4)
    per = {row["period"]: row["recommended"] for row in advice["periods"]}
    every = [
        p
        for p in range(1, 65)
        if all(busiest_by_hand([kg.load for kg in s.key_groups], 64, p, 20) <= 0.7 for s in periods)
    ]
    assert advice["recommended"] == every[0] == max(v for v in per.values())
    assert per["t1"] > per["t0"]


def test_advise_refuses_other_hashes_and_bad_numbers():
    with pytest.raises(KeyHashError, match="blake2b"):
        flink.advise(flink_snapshot([1.0] * 8, key_hash="blake2b"), subtask_capacity=1)
    with pytest.raises(
        InvalidParameterError,
        match=r"'subtask_capacity' parameter of advise\(\) must be a float > 0 .*Got 0 ",
    ):
        flink.advise(flink_snapshot([1.0] * 8), subtask_capacity=0)
    with pytest.raises(
        InvalidParameterError,
        match=r"'target_utilisation' parameter of advise\(\) must be a float in \(0, 1\]. Got 1.5 ",
    ):
        flink.advise(flink_snapshot([1.0] * 8), subtask_capacity=1, target_utilisation=1.5)


@pytest.mark.parametrize(
    "current, busy, n, expected",
    [
        (2, 0.9, 128, (4, 3)),  # up: ceil(2 * 0.9 / 0.7) = 3 -> the divisor 4
        (8, 0.35, 128, (4, 4)),  # down: factor 0.5 -> 4, a divisor
        (10, 0.1, 128, (4, 4)),  # down, capped at factor 0.4 (scale-down.max-factor 0.6): 4
        (6, 0.35, 7, (3, 3)),  # down to 3: no divisor of 7 in 3..6; downward, 3 subtasks of <= 3
        (9, 0.42, 12, (6, 6)),  # down to ceil(5.4) = 6, a divisor of 12
        (6, 0.7, 128, (6, 6)),  # factor 1: no change
        (3, 1.4, 60, (6, 6)),  # up to 6, which divides 60
        (4, 1.0, 7, (7, 6)),  # up to 6: no divisor of 7 in 6..7 but 7 itself
    ],
)
def test_the_autoscaler_rule(current, busy, n, expected):
    assert flink.autoscaler_parallelism(current, busy, busy, n) == expected


def test_the_advise_command_writes_the_advice_and_the_figure(tmp_path, capsys):
    loads = list(np.random.default_rng(5).uniform(1, 3, 128))
    snap = tmp_path / "snap.json"
    write_snapshot(flink_snapshot(loads), snap)
    out, fig = tmp_path / "advice.json", tmp_path / "advice.png"
    assert (
        main(
            [
                "flink",
                "advise",
                str(snap),
                "--subtask-capacity",
                "50",
                "--current",
                "4",
                "--out",
                str(out),
                "--figure",
                str(fig),
            ]
        )
        == 0
    )
    advice = json.loads(out.read_text())
    assert {"recommended", "autoscaler", "candidates"} <= set(advice)
    expected = min(p for p in range(1, 129) if busiest_by_hand(loads, 128, p, 50) <= 0.7)
    assert advice["recommended"] == expected
    assert fig.read_bytes()[:4] == b"\x89PNG"
    printed = capsys.readouterr().out
    assert f"recommended parallelism {expected}" in printed
    # Numbers one way per kind (albic.base.formats): percentages with two decimals, state in
    # binary units, as every other command prints them.
    row = next(r for r in advice["candidates"] if r["parallelism"] == expected)
    line = next(x for x in printed.splitlines() if x.split()[:1] == [str(expected)])
    assert f"{100 * row['busiest_utilisation']:.2f}%" in line and f"{100 * row['imbalance']:.2f}%" in line
    assert size(row["state_moved"]) in line and size(row["state_moved"]).endswith(("B", "KiB"))
    assert "target 70.00%" in printed
    # The advice exports as stock Flink's ranges at the recommended parallelism.
    assert main(["export", "flink", str(out), "--out", str(tmp_path / "r.json")]) == 0
    body = json.loads((tmp_path / "r.json").read_text())["operators"]["op"]
    assert [(r["start"], r["end"]) for r in body["ranges"]] == [
        flink_key_group_range(s, 128, expected) for s in range(expected)
    ]
    # Bad input: one line, exit 2, nothing written.
    assert (
        main(["flink", "advise", str(snap), "--subtask-capacity", "-1", "--out", str(tmp_path / "x.json")])
        == 2
    )
    err = capsys.readouterr().err
    # The command's own flag, not the library's parameter name.
    assert "albic: error: --subtask-capacity must be a float > 0" in err and "Got -1.0 instead" in err
    assert err.count("\n") == 1 and not (tmp_path / "x.json").exists()
