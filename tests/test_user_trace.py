"""A user's own trace through the command line, no Python written: events CSV + TOML spec ->
`albic stats` (pandas engine) -> `albic plan STATS_DIR --period P`. The Spark twin of these tests
is tests/spark/test_user_trace_spark.py."""
from __future__ import annotations

import io
import json

import pandas as pd
import pytest

from albic import checks, metrics
from albic.cli import main
from albic.io import plan_from_dict, read_snapshot
from albic.periods import read_input_snapshot


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def stats_dir(user_trace, tmp_path_factory):
    events, spec = user_trace
    out = tmp_path_factory.mktemp("stats") / "stats"
    code = main(["stats", str(events), "--spec", str(spec), "--out", str(out), "--engine", "pandas",
                 "--key-groups", "8", "--nodes", "2:4"])
    assert code == 0
    return out


def expected_total_load(events_path, label):
    """Truth from the CSV: courier events x cost 2 + zone events x cost 1, per second of the hour."""
    events = pd.read_csv(events_path, keep_default_na=False)
    hour = events[events["scanned_at"].str.startswith(label[:13])]
    return (2 * len(hour) + int((hour["zone"] != "").sum())) / 3600


def plan_of(stdout):
    return plan_from_dict(json.loads(stdout))


@pytest.mark.parametrize("period", ["2026-03-02T08:00", "2", "-4"])
def test_a_period_by_label_or_index_is_that_hour_of_the_trace(stats_dir, user_trace,
                                                               user_trace_periods, period):
    snapshot = read_input_snapshot(stats_dir, period)
    assert snapshot.period == user_trace_periods[2]
    assert sum(kg.load for kg in snapshot.key_groups) == pytest.approx(
        expected_total_load(user_trace[0], user_trace_periods[2]))


def test_plan_of_a_statistics_folder_defaults_to_the_last_period(capsys, stats_dir, user_trace,
                                                                  user_trace_periods):
    code, stdout, err = run(capsys, "plan", stats_dir, "--planner", "flux", "-p", "max_moves=3")
    assert (code, err) == (0, "")
    plan = plan_of(stdout)
    last = read_input_snapshot(stats_dir, user_trace_periods[-1])
    checks.check_plan(last, plan, max_moves=3)  # raises if the plan is not valid for that period
    assert 0 < len(plan.moves) <= 3
    assert sum(kg.load for kg in last.key_groups) == pytest.approx(
        expected_total_load(user_trace[0], user_trace_periods[-1]))
    before = metrics.load_distance(last)
    assert plan.metrics["load_distance"] < before  # the skewed couriers leave room to improve


def test_plan_of_a_period_writes_the_same_plan_as_its_index(capsys, stats_dir, tmp_path,
                                                            user_trace_periods):
    by_label, by_index = tmp_path / "label.json", tmp_path / "index.json"
    for period, out in ((user_trace_periods[1], by_label), ("1", by_index)):
        code, stdout, err = run(capsys, "plan", stats_dir, "--period", period, "--planner", "flux",
                                "--out", out)
        assert (code, err) == (0, "")
    label_plan, index_plan = (json.loads(p.read_text()) for p in (by_label, by_index))
    assert label_plan["assignment"] == index_plan["assignment"]
    checks.check_plan(read_input_snapshot(stats_dir, 1), plan_from_dict(label_plan))


def test_plan_reads_a_snapshot_from_standard_input(capsys, monkeypatch, stats_dir):
    from albic.io import dumps, snapshot_to_dict

    snapshot = read_input_snapshot(stats_dir, 0)
    monkeypatch.setattr("sys.stdin", io.StringIO(dumps(snapshot_to_dict(snapshot))))
    code, stdout, err = run(capsys, "plan", "-", "--planner", "flux")
    assert (code, err) == (0, "")
    checks.check_plan(snapshot, plan_of(stdout))


def test_bad_standard_input_is_one_line(capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO("{not json"))
    code, stdout, err = run(capsys, "plan", "-", "--planner", "flux")
    assert code == 2 and stdout == ""
    assert err.startswith("albic: error: ") and "standard input" in err and "Traceback" not in err


@pytest.mark.parametrize("period, names", [
    ("2026-03-02T23:00", ["'2026-03-02T23:00'", "6 periods", "2026-03-02T06:00"]),
    ("6", ["--period 6", "out of range", "6 periods"]),
    ("-7", ["--period -7", "out of range"]),
])
def test_a_period_the_dataset_does_not_have(capsys, stats_dir, period, names):
    code, stdout, err = run(capsys, "plan", stats_dir, "--period", period, "--planner", "flux")
    assert code == 2 and stdout == ""
    assert err.startswith("albic: error: ") and len(err.strip().splitlines()) == 1
    for name in names:
        assert name in err, (name, err)


def test_period_with_a_single_snapshot_is_refused(capsys, tmp_path, stats_dir):
    from albic.io import write_snapshot

    path = write_snapshot(read_input_snapshot(stats_dir, 0), tmp_path / "one.json")
    assert read_snapshot(path).period == read_input_snapshot(stats_dir, 0).period
    code, _, err = run(capsys, "plan", path, "--period", "0", "--planner", "flux")
    assert code == 2 and "single snapshot" in err and "one.json" in err


def test_a_folder_that_is_not_statistics(capsys, tmp_path):
    code, _, err = run(capsys, "plan", tmp_path, "--planner", "flux")
    assert code == 2 and "not a statistics dataset" in err and "albic stats" in err
