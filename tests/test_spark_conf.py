"""``--conf KEY=VALUE`` on every Spark command reaches the Spark session: the
statistics job and the PMC precomputation pass it as spark-submit's --conf would (albic compare's
own test: tests/spark/test_compare_spark.py). The session is replaced by one that records what it
was given and stops the command there, so no JVM starts."""

from __future__ import annotations

from pathlib import Path

import pytest

import albic.cli.commands.precompute
import albic.spark.stats_engine
from albic.base.errors import SparkUnavailableError
from albic.cli.main import main

GOLDEN = Path(__file__).parent / "data" / "stats_golden" / "input"


@pytest.fixture
def sessions(monkeypatch):
    seen = []

    def recording(master=None, app_name="albic", *, config=None, verbose=False):
        seen.append(dict(config or {}))
        raise SparkUnavailableError("recorded; no Spark here")

    monkeypatch.setattr(albic.spark.stats_engine, "spark_session", recording)
    monkeypatch.setattr(albic.cli.commands.precompute, "spark_session", recording)
    return seen


def test_stats_passes_conf_to_the_session(sessions, tmp_path, capsys):
    argv = [
        "stats",
        str(GOLDEN / "events.csv"),
        "--spec",
        str(GOLDEN / "topology.toml"),
        "--out",
        str(tmp_path / "s"),
        "--conf",
        "spark.executor.memory=2g",
        "--conf",
        "spark.task.maxFailures = 4",
    ]
    assert main(argv) == 2
    assert sessions == [{"spark.executor.memory": "2g", "spark.task.maxFailures": "4"}]
    assert not (tmp_path / "s").exists()  # nothing written on failure


def test_precompute_passes_conf_to_the_session(sessions, tmp_path, capsys):
    tasks = tmp_path / "tasks.csv"
    tasks.write_text("load,state_size\n1,1\n2,1\n1,2\n")
    mtm = tmp_path / "mtm.json"
    assert main(["mtm", str(GOLDEN / "counts.csv"), "--out", str(mtm)]) == 0
    argv = [
        "precompute",
        "--tasks",
        str(tasks),
        "--mtm",
        str(mtm),
        "--tau",
        "1.0",
        "--out",
        str(tmp_path / "pmc"),
        "--conf",
        "spark.default.parallelism=2",
    ]
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2 and sessions == [{"spark.default.parallelism": "2"}], err


def test_bad_conf_is_one_line_and_pandas_refuses_conf(tmp_path, capsys):
    common = [
        "stats",
        str(GOLDEN / "events.csv"),
        "--spec",
        str(GOLDEN / "topology.toml"),
        "--out",
        str(tmp_path / "s"),
    ]
    assert main([*common, "--conf", "spark.executor.memory"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "expected KEY=VALUE" in err
    assert main([*common, "--engine", "pandas", "--conf", "a=b"]) == 2
    assert "--conf is a Spark setting" in capsys.readouterr().err
    # A master given to an engine that runs here alone would be ignored: refused instead.
    for engine in ("pandas", "duckdb"):
        assert main([*common, "--engine", engine, "--master", "local[2]"]) == 2
        err = capsys.readouterr().err
        assert f"--master is a Spark setting: it is for --engine spark, not --engine {engine}" in err
        assert not (tmp_path / "s").exists()
