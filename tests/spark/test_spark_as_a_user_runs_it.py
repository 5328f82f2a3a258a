"""Spark as a user runs it: an unreachable master fails fast in one line, failing jobs are one line,
the JVM's output stays out of the terminal, spark-submit keeps its master, cluster paths are checked,
and the job draws a progress bar."""

import io
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from py4j.protocol import Py4JError

from albic.base.progress import spark_progress
from albic.cli.main import main
from albic.spark import session
from albic.spark.session import SparkJobError, spark_errors

SPEC = 'timestamp = "ts"\n[[operators]]\nname = "a"\nkeys = ["user"]\n'
EVENTS = "ts,user\n2013-01-01T00:10:00Z,ann\n2013-01-01T02:10:00Z,bob\n"


def free_port():
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def trace(tmp_path):
    (tmp_path / "events.csv").write_text(EVENTS)
    (tmp_path / "spec.toml").write_text(SPEC)
    return tmp_path


def test_an_unreachable_master_fails_fast_in_one_line(trace):
    master = f"spark://127.0.0.1:{free_port()}"
    argv = [
        sys.executable,
        "-m",
        "albic",
        "stats",
        "flights",
        "--days",
        "1",
        "--master",
        master,
        "--out",
        str(trace / "out"),
    ]
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    seconds = time.perf_counter() - started
    assert done.returncode == 2
    assert done.stdout == "" and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"albic: error: cannot reach the Spark master {master}: ")
    assert "refused" in done.stderr.lower()
    assert seconds < 30, seconds  # the limit, on this call's own wall clock
    assert not (trace / "out").exists() and not list(trace.glob(".out*"))


def test_a_failing_spark_call_is_one_line_naming_the_master():
    java = Py4JError(
        "An error occurred while calling o42.parquet.\n: java.io.IOException: disk full\n"
        "\tat org.apache.spark.Foo(Foo.scala:1)\n"
    )
    with pytest.raises(SparkJobError) as caught, spark_errors("spark://10.0.0.5:7077"):
        raise java
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(
        "Spark job on master spark://10.0.0.5:7077 failed: java.io.IOException: disk full"
    )
    with pytest.raises(KeyError), spark_errors("local[1]"):  # not Spark's: passes through
        raise KeyError("x")


def test_the_jvm_output_goes_to_the_log_file_not_the_terminal(capfd):
    with session._jvm_output_to_log():
        subprocess.run(["sh", "-c", "echo WARN from the jvm >&2"], check=True)
    print("albic's own line", file=sys.stderr)
    assert capfd.readouterr().err == "albic's own line\n"
    assert "WARN from the jvm" in session.spark_log_path().read_text()


def test_cluster_paths_in_the_local_temp_folder_are_refused(trace, capsys, monkeypatch):
    # A reachable "master": a listening socket on 127.0.0.1 (the probe only connects).
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        master = f"spark://127.0.0.1:{server.getsockname()[1]}"
        code = main(
            [
                "stats",
                str(trace / "events.csv"),
                "--spec",
                str(trace / "spec.toml"),
                "--master",
                master,
                "--out",
                str(trace / "out"),
            ]
        )
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "the events file" in err and "temporary folder" in err and master in err


def test_the_job_draws_its_tasks(spark):
    out = io.StringIO()
    with spark_progress(spark, "albic test job", enabled=True, stream=out):
        assert spark.range(1000).repartition(3).count() == 1000
    text = out.getvalue()
    assert "albic test job" in text
    # The last draw counts every task of the job's stages as done.
    last = text.rstrip().split("\r")[-1]
    done, total = last.split("|")[-1].split("[")[0].strip().split("/")
    assert int(done) == int(total) >= 3


def test_spark_submit_keeps_its_master(trace):
    submit = Path(sys.executable).with_name("spark-submit")
    if not submit.exists():
        pytest.skip("no spark-submit next to this Python")
    script = subprocess.run(
        [sys.executable, "-m", "albic.cli.submit"], capture_output=True, text=True, check=True
    ).stdout.strip()
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    done = subprocess.run(
        [
            str(submit),
            "--master",
            "local[1]",
            "--conf",
            "spark.ui.enabled=false",
            script,
            "stats",
            str(trace / "events.csv"),
            "--spec",
            str(trace / "spec.toml"),
            "--key-groups",
            "2",
            "--out",
            str(trace / "out"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    manifest = json.loads((trace / "out" / "manifest.json").read_text())
    assert manifest["engine"] == "spark local[1]"  # not albic's default local[*]
    assert manifest["periods"] == 3
