"""A user's own trace through the command line, no Python written: events CSV + TOML spec ->
`albic stats` (pandas engine) -> `albic plan STATS_DIR --period P`. The Spark twin of these tests
is tests/spark/test_user_trace_spark.py."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest

from albic.cli.main import main
from albic.core import checks, metrics
from albic.io import plan_from_dict, read_snapshot
from albic.io.periods import read_input_snapshot


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def stats_dir(user_trace, tmp_path_factory):
    events, spec = user_trace
    out = tmp_path_factory.mktemp("stats") / "stats"
    code = main(
        [
            "stats",
            str(events),
            "--spec",
            str(spec),
            "--out",
            str(out),
            "--engine",
            "pandas",
            "--key-groups",
            "8",
            "--nodes",
            "2:4",
        ]
    )
    assert code == 0
    return out


def expected_total_load(events_path, label, seconds=3600):
    """Truth from the CSV: courier events x cost 2 + zone events x cost 1, per second of the hour
    (or of the ``seconds`` the events cover of a partial hour)."""
    events = pd.read_csv(events_path, keep_default_na=False)
    hour = events[events["scanned_at"].str.startswith(label[:13])]
    return (2 * len(hour) + int((hour["zone"] != "").sum())) / seconds


def plan_of(stdout):
    return plan_from_dict(json.loads(stdout))


@pytest.mark.parametrize("period", ["2026-03-02T08:00", "2", "-4"])
def test_a_period_by_label_or_index_is_that_hour_of_the_trace(
    stats_dir, user_trace, user_trace_periods, period
):
    snapshot = read_input_snapshot(stats_dir, period)
    assert snapshot.period == user_trace_periods[2]
    assert sum(kg.load for kg in snapshot.key_groups) == pytest.approx(
        expected_total_load(user_trace[0], user_trace_periods[2])
    )


def test_plan_of_a_statistics_folder_defaults_to_the_last_period(
    capsys, stats_dir, user_trace, user_trace_periods
):
    code, stdout, err = run(capsys, "plan", stats_dir, "--planner", "flux", "-p", "max_moves=3")
    assert (code, err) == (0, "")
    plan = plan_of(stdout)
    last = read_input_snapshot(stats_dir, user_trace_periods[-1])
    checks.check_plan(last, plan, max_moves=3)  # raises if the plan is not valid for that period
    assert 0 < len(plan.moves) <= 3
    # The last event falls seconds before the hour's end, a shorter silence than the trace has
    # between its events anyway: a whole hour, its rates over 3,600 s.
    stamps = pd.to_datetime(pd.read_csv(user_trace[0])["scanned_at"]).sort_values()
    uncovered = (stamps.max().ceil("h") - stamps.max()).total_seconds() - 1
    assert 0 < uncovered < stamps.diff().max().total_seconds()
    assert last.covered_seconds is None
    assert sum(kg.load for kg in last.key_groups) == pytest.approx(
        expected_total_load(user_trace[0], user_trace_periods[-1])
    )
    before = metrics.load_distance(last)
    assert plan.metrics["load_distance"] < before  # the skewed couriers leave room to improve


def test_plan_of_a_period_writes_the_same_plan_as_its_index(capsys, stats_dir, tmp_path, user_trace_periods):
    by_label, by_index = tmp_path / "label.json", tmp_path / "index.json"
    for period, out in ((user_trace_periods[1], by_label), ("1", by_index)):
        code, stdout, err = run(
            capsys, "plan", stats_dir, "--period", period, "--planner", "flux", "--out", out
        )
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


@pytest.mark.parametrize(
    "period, names",
    [
        ("2026-03-02T23:00", ["'2026-03-02T23:00'", "6 periods", "2026-03-02T06:00"]),
        ("6", ["--period 6", "out of range", "6 periods"]),
        ("-7", ["--period -7", "out of range"]),
    ],
)
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


# -- albic compare --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def comparison(stats_dir, tmp_path_factory):
    """``albic compare`` of the user trace at two budgets; (exit code, stdout, out folder)."""
    import contextlib

    out = tmp_path_factory.mktemp("compare") / "out"
    argv = [
        "compare",
        str(stats_dir),
        "--planner",
        "flux",
        "--planner",
        "milp:time_limit=0.2",
        "--planner",
        "storm_default",
        "--planner",
        "ssm:tau=0.3",
        "--planner",
        "elasticutor",
        "--budgets",
        "max_moves=1,4",
        "--out",
        str(out),
    ]
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        code = main(argv)
    return code, stdout.getvalue(), out


def test_compare_runs_the_budgeted_planners_at_every_budget(comparison, user_trace_periods, stats_dir):
    code, stdout, out = comparison
    assert code == 0
    replayed = pd.read_csv(out / "replay.csv")
    runs = replayed.groupby(["planner", replayed["budget"].fillna(-1)])["period"].apply(list)
    assert sorted(runs.index) == [
        ("elasticutor", -1),
        ("flux", 1),
        ("flux", 4),
        ("milp:time_limit=0.2", 1),
        ("milp:time_limit=0.2", 4),
        ("ssm:tau=0.3", -1),
        ("storm_default", -1),
    ]
    for periods in runs:  # every run replays every period, in time order
        assert periods == user_trace_periods
    budgeted = replayed[replayed["budget"].notna()]
    assert (budgeted["moves"] <= budgeted["budget"]).all()  # the budget holds in every period
    assert (budgeted["budget_parameter"] == "max_moves").all()
    assert (replayed["decided_on"] == "previous").all()
    # A larger budget buys a better fit to the loads a plan is made from: summed over the periods
    # of the oracle, 4 moves do at least as well as 1. (Scored on the next period, no budget is
    # promised anything: that is what forward scoring measures.)
    import albic

    oracle = albic.compare(
        albic.read_snapshots(stats_dir), ["flux"], budgets="max_moves=1,4", decide_on="hindsight"
    )
    flux = oracle.groupby("budget")["load_distance_pct"].mean()
    assert flux[4] <= flux[1]
    # ssm plans the two operators one by one: every period planned.
    assert (replayed[replayed["planner"] == "ssm:tau=0.3"]["status"] != "UNSUPPORTED").all()


def test_compare_summary_is_the_replay_aggregated(comparison):
    _, stdout, out = comparison
    replayed = pd.read_csv(out / "replay.csv", keep_default_na=False, na_values=[""])
    summary = pd.read_csv(out / "summary.csv")
    assert len(summary) == 7
    for row in summary.to_dict("records"):
        same_budget = (
            replayed["budget"].isna() if pd.isna(row["budget"]) else replayed["budget"] == row["budget"]
        )
        rows = replayed[(replayed["planner"] == row["planner"]) & same_budget]
        # A plan was made where the planner was asked and found one (INFEASIBLE and NO_SOLUTION
        # keep the placement, as UNSUPPORTED and ERROR do): each status has its own column.
        planned = rows["planned"] & rows["status"].isin(["OPTIMAL", "FEASIBLE"])
        assert row["periods"] == len(rows) and row["planned"] == planned.sum()
        for status, column in [
            ("INFEASIBLE", "infeasible"),
            ("NO_SOLUTION", "no_solution"),
            ("ERROR", "errors"),
        ]:
            assert row[column] == (rows["status"] == status).sum()
        assert (
            row["planned"] + row["infeasible"] + row["no_solution"] + row["unsupported"] + row["errors"]
            == rows["planned"].sum()
        )
        assert row["decided_on"] == "previous"
        assert row["total_moves"] == rows["moves"].sum()
        if planned.any():
            assert row["mean_load_distance_pct"] == pytest.approx(rows["load_distance_pct"].mean())
            assert row["mean_migration_cost_pct"] == pytest.approx(rows["migration_cost_pct"].mean())
            assert row["total_migration_cost_pct"] == pytest.approx(rows["migration_cost_pct"].sum())
            moved = rows["migration_cost"].sum() / rows["total_state"].mean()
            assert row["state_moved_times"] == pytest.approx(moved) and (moved > 0) == (
                row["total_moves"] > 0
            )
        else:  # no plan at all: nothing that reads as a result
            assert (rows.loc[rows["planned"], "error"].fillna("") != "").all()  # each says why
            for column in ("mean_load_distance_pct", "mean_migration_cost_pct", "median_p99_latency_ms"):
                assert pd.isna(row[column]), column
    # The printed table has one line per summary row, after its header.
    lines = stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("planner "))
    printed = [line.split()[:2] for line in lines[header + 1 : header + 1 + len(summary)]]
    assert [p for p, _ in printed] == summary["planner"].tolist()


def test_compare_writes_the_figures_trade_off_first(comparison):
    _, stdout, out = comparison
    wrote = next(line for line in stdout.splitlines() if line.startswith("wrote "))
    names = ["tradeoff.png", "load_distance.png", "migration_cost.png", "stream.png", "solve_time.png"]
    assert [wrote.index(n) for n in names] == sorted(wrote.index(n) for n in names)
    for name in names:
        assert (out / name).read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize(
    "argv, names",
    [
        (["--planner", "flux:max_moves"], ["'flux:max_moves'", "key=value"]),
        (["--planner", "nope"], ["'nope'", "flux"]),
        (["--planner", "flux:max_move=3"], ["max_move"]),
        (["--planner", "flux", "--budgets", "moves=1,2"], ["'moves'", "max_moves"]),
        (["--planner", "flux", "--budgets", "max_moves=1.5"], ["max_moves", "whole"]),
        (["--planner", "flux", "--budgets", "max_moves=-1"], ["max_moves", ">= 0"]),
    ],
)
def test_compare_rejects_bad_options_in_one_line(capsys, stats_dir, tmp_path, argv, names):
    code, stdout, err = run(capsys, "compare", stats_dir, *argv, "--out", tmp_path / "out")
    assert code == 2 and stdout == "", err
    assert err.startswith("albic: error: ") and "Traceback" not in err
    for name in names:
        assert name in err, (name, err)
    assert not (tmp_path / "out").exists()


def test_python_compare_with_budgets_is_the_tidy_table(stats_dir):
    import albic

    snapshots = list(albic.read_snapshots(stats_dir))[:3]
    table = albic.compare(snapshots, ["flux", "cola"], budgets={"max_moves": [0, 2]})
    assert list(table.columns[:3]) == ["planner", "budget_parameter", "budget"]
    assert table.groupby(["planner", table["budget"].fillna(-1)]).size().to_dict() == {
        ("cola", -1): 3,
        ("flux", 0): 3,
        ("flux", 2): 3,
        ("storm_default", -1): 3,  # the reference
    }
    assert (table[table["budget"] == 0]["moves"] == 0).all()


def test_compare_in_worker_processes_gives_the_same_table(stats_dir):
    import albic

    snapshots = list(albic.read_snapshots(stats_dir))
    planners = ["flux", "ssm", "storm_default"]
    one = albic.compare(snapshots, planners, budgets="max_moves=1,3")
    two = albic.compare(snapshots, planners, budgets="max_moves=1,3", jobs=2)
    assert len(one) == 4 * len(snapshots)
    pd.testing.assert_frame_equal(one.drop(columns="seconds"), two.drop(columns="seconds"))
