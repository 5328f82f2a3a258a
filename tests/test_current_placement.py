"""Where a statistics period's key groups are now: the statistics' own default (stock Flink's
split for statistics made with Flink's hash, else Storm's default split) or the user's
(``--current PLAN_OR_MAP``), on every command that plans from a statistics folder; and the commands
that read a plan with a statistics folder (``--period``) take the placement from the plan."""

from __future__ import annotations

import json

import pytest

from albic.cli.main import main
from albic.core import metrics
from albic.core.flink_keys import flink_key_group_ranges
from albic.core.planner import get_planner
from albic.io import read_plan, read_snapshot, read_snapshots
from albic.io.datasets import default_placement


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture()
def flink_stats(flink_trace, tmp_path, capsys):
    trace, spec, _ = flink_trace
    out = tmp_path / "flink-stats"
    argv = ["stats", trace, "--spec", spec, "--engine", "pandas", "--nodes", "5", "--out", out]
    assert main([str(a) for a in argv]) == 0
    capsys.readouterr()
    return out


@pytest.fixture(scope="module")
def stats_dir(user_stats):
    return user_stats


def plan(capsys, source, period, *argv):
    """``albic plan SOURCE --period PERIOD --planner ARGV...``: (exit code, stdout, stderr)."""
    return run(capsys, "plan", source, "--period", period, "--planner", *argv)


def storm_block(position: int, m: int, n: int) -> int:
    """Storm's default: the block j with floor(j*m/n) <= position < floor((j+1)*m/n)."""
    return max(j for j in range(n) if j * m // n <= position)


def test_flink_statistics_start_on_flinks_own_split(capsys, flink_stats, tmp_path):
    code, out, err = plan(capsys, flink_stats, "0", "flink_default", "--out", tmp_path / "p.json")
    assert code == 0, err
    assert "flink_default: FEASIBLE, 0 moves" in out
    # ... and the zero-move plan exports as stock Flink's ranges at the period's 5 nodes.
    code, out, err = run(
        capsys, "export", "flink", tmp_path / "p.json", "--snapshot", flink_stats, "--period", "0",
        "--out", tmp_path / "ranges.json",
    )  # fmt: skip
    assert code == 0, err
    body = json.loads((tmp_path / "ranges.json").read_text())["operators"]["sessions"]
    assert [(r["start"], r["end"]) for r in body["ranges"]] == flink_key_group_ranges(32, 5)
    # Any planner's plan that moves nothing is Flink's split too.
    code, _, err = plan(
        capsys, flink_stats, "0", "flux", "-p", "max_moves=0", "--out", tmp_path / "flux.json"
    )
    assert code == 0, err
    code, _, err = run(
        capsys, "export", "flink", tmp_path / "flux.json", "--snapshot", flink_stats, "--period", "0"
    )
    assert code == 0, err


def test_current_storm_on_flink_statistics_moves_what_the_two_splits_disagree_on(capsys, flink_stats):
    code, out, err = plan(capsys, flink_stats, "0", "flink_default", "--current", "storm")
    assert code == 0, err
    moves = json.loads(out)["moves"]
    # By hand: key group g is on Flink's subtask g*5 // 32 and on Storm's block storm_block(g).
    disagree = sum(1 for g in range(32) if g * 5 // 32 != storm_block(g, 32, 5))
    assert disagree > 0 and len(moves) == disagree


def test_the_default_placement_is_the_engines_split(flink_stats, stats_dir):
    for folder, planner in ((stats_dir, "storm_default"), (flink_stats, "flink_default")):
        for snapshot in read_snapshots(folder):
            assert default_placement(snapshot) == dict(snapshot.assignment)
            assert get_planner(planner).plan(snapshot).moves == ()


def test_current_takes_a_plan_a_map_or_a_split(capsys, stats_dir, tmp_path):
    code, _, err = plan(capsys, stats_dir, "2", "flux", "-p", "max_moves=3", "--out", tmp_path / "a.json")
    assert code == 0, err
    moved = read_plan(tmp_path / "a.json")
    assert len(moved.moves) == 3
    # Planning again from where that plan left the key groups: its assignment is the current one.
    code, out, err = plan(
        capsys, stats_dir, "2", "flux", "--current", tmp_path / "a.json", "-p", "max_moves=0"
    )
    assert code == 0, err
    assert json.loads(out)["assignment"] == dict(moved.assignment) and json.loads(out)["moves"] == []
    # A map {key group: node} whose nodes the period lacks: those become removing nodes.
    (tmp_path / "map.json").write_text(json.dumps({kid: "old" for kid in moved.assignment}))
    code, out, err = run(capsys, "snapshot", stats_dir, "--period", "2", "--current", tmp_path / "map.json")
    assert code == 0, err
    nodes = {n["id"]: n.get("removing", False) for n in json.loads(out)["nodes"]}
    assert nodes.pop("old") is True and not any(nodes.values())


@pytest.mark.parametrize(
    "placement, names",
    [
        ({"courier/0": "n1"}, ["does not place", "courier/1", "16 key groups"]),
        (None, ["places key groups the period lacks", "nope/1"]),
        (["n1"], ["neither a plan file", "{key group: node}"]),
    ],
)
def test_a_wrong_current_is_one_line_naming_the_problem(capsys, stats_dir, tmp_path, placement, names):
    if placement is None:
        placement = {kg.id: "n1" for kg in next(read_snapshots(stats_dir)).key_groups} | {"nope/1": "n1"}
    (tmp_path / "map.json").write_text(json.dumps(placement))
    code, out, err = run(capsys, "plan", stats_dir, "--planner", "flux", "--current", tmp_path / "map.json")
    assert code == 2 and out == "" and len(err.splitlines()) == 1, err
    for name in names:
        assert name in err, (name, err)


def test_current_is_refused_for_a_snapshot_file(capsys, stats_dir, tmp_path):
    assert run(capsys, "snapshot", stats_dir, "--period", "1", "--out", tmp_path / "s.json")[0] == 0
    code, _, err = run(capsys, "plan", tmp_path / "s.json", "--current", "storm")
    assert code == 2 and "--current" in err and "single snapshot" in err


def test_snapshot_writes_the_period_plan_reads(capsys, stats_dir, tmp_path):
    code, out, err = run(capsys, "snapshot", stats_dir, "--period", "1", "--out", tmp_path / "s.json")
    assert code == 0, err
    written = read_snapshot(tmp_path / "s.json")
    period = list(read_snapshots(stats_dir))[1]
    assert written == period
    assert out.startswith(f"period {period.period}: ") and "16 key groups" in out
    one, two = (run(capsys, "plan", source, *extra, "--planner", "flux")[1] for source, extra in (
        (tmp_path / "s.json", ()), (stats_dir, ("--period", "1"))))  # fmt: skip
    assert json.loads(one)["assignment"] == json.loads(two)["assignment"]


def test_explain_schedule_and_plot_read_a_period_and_the_plans_own_placement(capsys, stats_dir, tmp_path):
    (tmp_path / "map.json").write_text(
        json.dumps({kg.id: "n1" for kg in list(read_snapshots(stats_dir))[0].key_groups})
    )
    code, _, err = run(
        capsys, "plan", stats_dir, "--period", "0", "--current", tmp_path / "map.json", "--planner", "flux",
        "-p", "max_moves=4", "--out", tmp_path / "p.json",
    )  # fmt: skip
    assert code == 0, err
    made = read_plan(tmp_path / "p.json")
    assert {m.source for m in made.moves} == {"n1"}
    code, out, err = run(
        capsys, "explain", tmp_path / "p.json", "--snapshot", stats_dir, "--period", "0", "--json"
    )
    assert code == 0, err
    report = json.loads(out)
    period = list(read_snapshots(stats_dir))[0]
    before = period.with_placement(json.loads((tmp_path / "map.json").read_text()))
    assert report["goals"]["load_distance_pct"]["before"] == pytest.approx(metrics.load_distance_pct(before))
    assert report["goals"]["load_distance_pct"]["after"] == pytest.approx(made.metrics["load_distance_pct"])
    code, out, err = run(
        capsys, "schedule", tmp_path / "p.json", "--snapshot", stats_dir, "--period", "0", "--json"
    )
    assert code == 0, err
    assert sum(len(batch["moves"]) for batch in json.loads(out)["batches"]) == len(made.moves) > 0
    # Another period's loads are another snapshot: refused, unless forced, and then said.
    argv = ["explain", tmp_path / "p.json", "--snapshot", stats_dir, "--period", "-1", "--json"]
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    code, out, err = run(capsys, *argv, "--force")
    assert code == 0 and "--force" in err
    assert json.loads(out)["goals"]["load_distance_pct"]["after"] != pytest.approx(
        made.metrics["load_distance_pct"]
    )


def test_compare_starts_from_current(capsys, stats_dir, tmp_path):
    placement = {kg.id: "n2" for kg in list(read_snapshots(stats_dir))[0].key_groups}
    (tmp_path / "map.json").write_text(json.dumps(placement))
    argv = ["compare", stats_dir, "--planner", "storm_default", "--current", tmp_path / "map.json"]
    code, _, err = run(capsys, *argv, "--out", tmp_path / "out")
    assert code == 0, err
    import pandas as pd

    first = pd.read_csv(tmp_path / "out" / "replay.csv").iloc[0]
    period = list(read_snapshots(stats_dir))[0]
    assert first["load_distance_pct"] == pytest.approx(
        metrics.load_distance_pct(period.with_placement(placement))
    )


def test_flink_advise_reads_one_period(capsys, flink_stats, tmp_path):
    assert run(capsys, "snapshot", flink_stats, "--period", "1", "--out", tmp_path / "s.json")[0] == 0
    advice = {}
    for name, source, extra in (
        ("period", flink_stats, ["--period", "1"]),
        ("file", tmp_path / "s.json", []),
    ):
        argv = [
            "flink",
            "advise",
            source,
            "--subtask-capacity",
            "0.01",
            *extra,
            "--out",
            tmp_path / f"{name}.json",
        ]
        code, _, err = run(capsys, *argv)
        assert code == 0, err
        advice[name] = json.loads((tmp_path / f"{name}.json").read_text())
    assert advice["period"] == advice["file"] and len(advice["period"]["periods"]) == 1
