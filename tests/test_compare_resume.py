"""``albic compare --resume`` on the local engine, and the Spark options' checks (no Spark here;
tests/spark/test_compare_spark.py runs the Spark engine, a killed driver included).

Each replay is kept in OUT as it finishes (OUT/_replays), so a comparison cut off (here: an
interrupt in the middle of the grid) loses only the replay in flight, and ``--resume`` runs the
replays that are not in OUT, in either form (a finished OUT's replay.csv, or an interrupted one's
partial replays)."""

from __future__ import annotations

import re

import pandas as pd
import pytest

# The private registry of tests/test_cli.py.
from test_cli import registry  # noqa: F401  (a fixture)

import albic
from albic.base.errors import InvalidParameterError
from albic.cli.main import main
from albic.core.model import KeyGroup, Node, Snapshot
from albic.evaluation.compare import compare, error_rows, replay_run, runs
from albic.evaluation.store import PARTIAL, ReplayStore, read_replay_table
from albic.planners.flux import FluxPlanner


class Counted(FluxPlanner):
    """Flux that counts its calls by budget (class-wide), and interrupts the comparison (as a
    user's Ctrl-C would) when it reaches budget ``Counted.interrupt_at``."""

    name = "test_counted"
    calls: dict = {}
    interrupt_at = None

    def _plan(self, snapshot):
        if self.max_moves == Counted.interrupt_at:
            raise KeyboardInterrupt
        Counted.calls[self.max_moves] = Counted.calls.get(self.max_moves, 0) + 1
        return super()._plan(snapshot)


@pytest.fixture
def counted(registry):  # noqa: F811 (the fixture imported above)
    registry(Counted)
    Counted.calls, Counted.interrupt_at = {}, None
    yield Counted
    Counted.calls, Counted.interrupt_at = {}, None


@pytest.fixture
def stats_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("resume") / "stats"
    assert (
        main(
            [
                "stats",
                "flights",
                "--engine",
                "pandas",
                "--start",
                "2013-11-27",
                "--days",
                "1",
                "--key-groups",
                "2",
                "--node-counts",
                "2:4",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    return out


def same_rows(a, b):
    pd.testing.assert_frame_equal(a.drop(columns="seconds"), b.drop(columns="seconds"))


def test_resume_after_an_interrupt_runs_only_the_missing_replays(stats_dir, tmp_path, counted, capsys):
    out = tmp_path / "out"
    argv = [
        "compare",
        str(stats_dir),
        "--planner",
        "test_counted",
        "--planner",
        "cola",
        "--budgets",
        "max_moves=1,2,3,4",
        "--out",
        str(out),
    ]
    counted.interrupt_at = 3
    assert main(argv) == 130  # interrupted in the third replay
    assert sorted(counted.calls) == [1, 2]
    kept = sorted(int(read_replay_table(p)["budget"].iloc[0]) for p in (out / PARTIAL).glob("*.csv"))
    assert kept == [1, 2] and not (out / "replay.csv").exists()
    capsys.readouterr()

    counted.calls, counted.interrupt_at = {}, None
    assert main([*argv, "--resume"]) == 0
    # The reference runs last: the interrupt came before it.
    assert "resumed: 2 of 6 replays were already in" in capsys.readouterr().out
    # Every period but the first, which is scored, not planned (nothing is known before it).
    planned = len(read_replay_table(out / "replay.csv")["period"].unique()) - 1
    assert counted.calls == {3: planned, 4: planned}  # budgets 1 and 2 were not run again
    assert not (out / PARTIAL).exists()

    fresh = tmp_path / "fresh"
    assert main([*argv[:-1], str(fresh)]) == 0
    same_rows(read_replay_table(fresh / "replay.csv"), read_replay_table(out / "replay.csv"))
    summaries = [
        pd.read_csv(folder / "summary.csv").drop(columns="mean_solve_seconds") for folder in (fresh, out)
    ]
    pd.testing.assert_frame_equal(*summaries)


def test_resume_of_a_finished_comparison_runs_only_what_is_new(stats_dir, tmp_path, counted, capsys):
    out = tmp_path / "out"
    argv = [
        "compare",
        str(stats_dir),
        "--planner",
        "test_counted",
        "--budgets",
        "max_moves=1,2",
        "--out",
        str(out),
    ]
    assert main(argv) == 0
    first = read_replay_table(out / "replay.csv")
    counted.calls = {}
    # One more budget and one more planner: only those replays run.
    assert (
        main([*argv[:4], "--planner", "cola", "--budgets", "max_moves=1,2,5", "--out", str(out), "--resume"])
        == 0
    )
    planned = len(first["period"].unique()) - 1  # the first period is scored, not planned
    assert counted.calls == {5: planned}
    table = read_replay_table(out / "replay.csv")
    replays = table.drop_duplicates(["planner", "budget"]).fillna({"budget": -1})
    assert list(zip(replays["planner"], replays["budget"])) == [
        ("test_counted", 1.0),
        ("test_counted", 2.0),
        ("test_counted", 5.0),
        ("cola", -1.0),
        ("storm_default", -1.0),  # the reference, replayed once and kept
    ]
    same_rows(first, table[table["budget"].isin([1.0, 2.0]) | table["reference"]].reset_index(drop=True))
    capsys.readouterr()


def test_resume_runs_again_a_replay_made_with_other_parameters(stats_dir, tmp_path, capsys):
    out = tmp_path / "out"
    base = [
        "compare",
        str(stats_dir),
        "--planner",
        "milp",
        "--planner",
        "flux",
        "--budgets",
        "max_moves=1",
        "--out",
        str(out),
    ]
    assert main([*base, "--time-limit", "0.05"]) == 0
    capsys.readouterr()
    assert main([*base, "--time-limit", "0.06", "--resume"]) == 0
    # flux and the reference have no time limit: kept; milp's limit changed: run again
    assert "resumed: 2 of 3 replays" in capsys.readouterr().out


def test_without_resume_an_earlier_runs_partial_replays_are_not_used(tmp_path):
    kgs = [KeyGroup(f"k{i}", "op", float(i + 1), 10.0, index=i) for i in range(4)]
    snap = Snapshot([Node("n1"), Node("n2")], kgs, {k.id: "n1" for k in kgs}, period="t0")
    store = ReplayStore(tmp_path)
    table = compare([snap], ["flux"], store=store)
    assert len(list((tmp_path / PARTIAL).glob("*.csv"))) == 2  # flux and the reference, kept as they finished
    fresh = ReplayStore(tmp_path)  # a new run without --resume starts clean
    assert not (tmp_path / PARTIAL).exists()
    again = compare([snap], ["flux"], store=fresh)
    assert fresh.reused == 0 and len(list((tmp_path / PARTIAL).glob("*.csv"))) == 2
    same_rows(table, again)


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--master", "local[2]"], "--master and --conf are for --engine spark"),
        (["--conf", "spark.task.maxFailures=2"], "--master and --conf are for --engine spark"),
        (["--engine", "spark", "--conf", "nonsense"], "--conf 'nonsense': expected KEY=VALUE"),
        (["--engine", "spark", "--jobs", "2"], "--jobs is for --engine local"),
        (["--engine", "cluster"], "argument --engine: invalid choice: 'cluster'"),
    ],
)
def test_spark_options_are_checked_before_any_work(tmp_path, capsys, extra, message):
    out = tmp_path / "out"
    code = main(["compare", str(tmp_path / "no-stats"), "--planner", "flux", "--out", str(out), *extra])
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


@pytest.mark.parametrize(
    "keywords, options, said, flagged",
    [
        (
            {"master": "local[2]"},
            ["--master", "local[2]"],
            "master and conf are for engine='spark'",
            "--master and --conf are for --engine spark",
        ),
        (
            {"engine": "spark", "jobs": 2},
            ["--engine", "spark", "--jobs", "2"],
            "jobs is for engine='local'",
            "--jobs is for --engine local",
        ),
        ({"jobs": 0}, ["--jobs", "0"], "jobs must be at least 1, got 0", "--jobs must be at least 1, got 0"),
    ],
)
def test_the_api_and_the_command_line_refuse_the_same_engine_settings(
    tmp_path, capsys, keywords, options, said, flagged
):
    """One resolver picks the runner for albic.compare and albic compare: the same refusals, each
    in its user's words (keywords, options)."""
    with pytest.raises(InvalidParameterError, match=re.escape(said)):
        albic.compare([], ["flux"], **keywords)
    code = main(
        ["compare", str(tmp_path / "no-stats"), "--planner", "flux", "--out", str(tmp_path / "o"), *options]
    )
    err = capsys.readouterr().err
    assert code == 2 and flagged in err and len(err.strip().splitlines()) == 1


def test_a_replay_that_never_ran_is_run_again_by_resume(tmp_path):
    """A runner that could not run one replay (a Spark task failing every attempt gives
    error_rows): its ERROR rows are in the table, but OUT does not count it as done."""
    kgs = [KeyGroup(f"k{i}", "op", float(i + 1), 10.0, index=i) for i in range(4)]
    snaps = [
        Snapshot([Node("n1"), Node("n2")], kgs, {k.id: "n1" for k in kgs}, period=p) for p in ("t0", "t1")
    ]

    def flaky(source, todo, rules, show_progress):
        for i, run in todo:
            if run.label == "flux":
                yield i, error_rows(run, ["t0", "t1"], "Spark task failed: lost")
            else:
                yield i, replay_run(source, run, rules)

    store = ReplayStore(tmp_path)
    table = compare(snaps, ["flux", "cola"], runner=flaky, store=store)
    store.write(table)
    assert list(table["status"][:2]) == ["ERROR", "ERROR"]
    assert table["error"][0] == "Spark task failed: lost"
    resumed = ReplayStore(tmp_path, resume=True)
    again = compare(snaps, ["flux", "cola"], store=resumed)
    assert resumed.reused == 2  # cola and the reference: flux ran now
    same_rows(again, compare(snaps, ["flux", "cola"]))


def test_a_replay_table_read_back_is_the_table_written(tmp_path):
    # Floats whose shortest repr pandas' default CSV parser gets wrong by a few units in the last
    # place (seen on the demo: 0.005092592592592591 came back as 0.0050925925925925): a resumed
    # replay's rows must be the rows it was written with, bit for bit.
    values = [0.005092592592592591, 0.00046296296296296363, 1 / 3, 2 / 3 * 1e-17, 46.21848739495796]
    rows = error_rows(runs(["flux"])[0], [f"p{i}" for i in range(len(values))], "x")
    rows["load_distance"] = values
    path = tmp_path / "replay.csv"
    rows.to_csv(path, index=False)
    back = read_replay_table(path)
    assert back["load_distance"].tolist() == values
    assert back.to_csv(index=False) == path.read_text()
