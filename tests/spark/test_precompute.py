"""PMC on Spark: a hand-solved toy, a killed-and-resumed run, and Spark against the local mapper."""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from albic.base.errors import AlbicError, InvalidParameterError
from albic.spark.precompute import local_costs, precompute, state_space
from albic.stats.transitions import TransitionMatrix, estimate_mtm
from solvers.mdp import local_blocks, value_iteration

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def toy_mtm(p=0.5, q=0.25):
    m = np.array([[1 - p, p], [q, 1 - q]])
    return TransitionMatrix([1, 2], m, m * 4, [])


def read(out):
    return pq.read_table(out / "table.parquet").to_pydict()


def test_two_state_toy_equals_hand_solution(spark, tmp_path):
    """Two tasks (load 1, state 1), tau = 0.5. One node: cap 3, only the whole interval (A). Two
    nodes: cap 1.5, only the split [0,1) [1,2) (B). c(A,B) = c(B,A) = 1 (one task moves).
    M = [[.5, .5], [.25, .75]], gamma = .5:
      C_A = .5 (0 + .5 C_A) + .5 (1 + .5 C_B)   ->  .75 C_A - .25 C_B = .5
      C_B = .25 (1 + .5 C_A) + .75 (.5 C_B)     ->  .625 C_B - .125 C_A = .25
    so C_A = 2/3 + C_B/3 and .5833 C_B = 1/3: C_B = 4/7, C_A = 6/7."""
    result = precompute(
        [1.0, 1.0],
        [1.0, 1.0],
        toy_mtm(),
        tau=0.5,
        gamma=0.5,
        out=tmp_path / "pmc",
        spark=spark,
        tol=1e-7,
        log=io.StringIO(),
    )
    table = read(tmp_path / "pmc")
    assert table["n"] == [1, 2] and table["cuts"] == [[], [1]]
    assert table["cost"] == pytest.approx([6 / 7, 4 / 7], abs=1e-6)
    meta = json.loads((tmp_path / "pmc" / "metadata.json").read_text())
    assert meta["states"] == 2 and meta["converged"] and meta["gamma"] == 0.5 and meta["tau"] == 0.5
    assert not (tmp_path / "pmc" / "_checkpoint").exists()
    assert result.mdp.converged


def test_killed_run_resumes_to_the_same_table(spark, tmp_path):
    loads = [3.0, 1.0, 2.0, 2.0, 1.0, 4.0, 1.0]
    states = [5.0, 1.0, 2.0, 8.0, 1.0, 3.0, 2.0]
    mtm = estimate_mtm([2, 3, 3, 4, 3, 2, 2, 4, 4, 3])
    kwargs = dict(tau=0.6, gamma=0.5, spark=spark, tol=1e-4, log=io.StringIO())
    whole = precompute(loads, states, mtm, out=tmp_path / "whole", **kwargs)
    # "Kill" after 3 iterations: the checkpoint is there, the table is not.
    stopped = precompute(loads, states, mtm, out=tmp_path / "killed", stop_after=3, **kwargs)
    assert stopped.mdp.stopped and stopped.mdp.iterations == 3
    assert (tmp_path / "killed" / "_checkpoint" / "state.json").exists()
    assert not (tmp_path / "killed" / "table.parquet").exists()
    log = io.StringIO()
    resumed = precompute(loads, states, mtm, out=tmp_path / "killed", **{**kwargs, "log": log})
    assert "resuming from the checkpoint after iteration 3" in log.getvalue()
    assert resumed.metadata["iterations"] == whole.metadata["iterations"] > 3
    assert read(tmp_path / "killed") == read(tmp_path / "whole")
    # Spark's table equals value iteration in this process with the plain map.
    space = state_space(loads, states, [2, 3, 4], 0.6)
    group_of = np.array([n - 2 for n, _ in space.partitionings])
    local = value_iteration(local_blocks(local_costs(space), 5), group_of, mtm.matrix, 0.5, tol=1e-4)
    assert read(tmp_path / "whole")["cost"] == pytest.approx(local.values.tolist(), abs=1e-12)


def test_refuses_large_state_space_unless_coarsened(spark, tmp_path):
    mtm = estimate_mtm([2, 3, 4, 3, 2])
    log = io.StringIO()
    with pytest.raises(AlbicError, match=r"state space has \d+ partitionings, more than max_states=50"):
        precompute(
            [1.0] * 16,
            [1.0] * 16,
            mtm,
            tau=0.5,
            gamma=0.5,
            out=tmp_path / "big",
            spark=spark,
            max_states=50,
            log=log,
        )
    assert "state space of" in log.getvalue()
    result = precompute(
        [1.0] * 16,
        [1.0] * 16,
        mtm,
        tau=0.5,
        gamma=0.5,
        out=tmp_path / "big",
        spark=spark,
        max_states=50,
        blocks=4,
        log=io.StringIO(),
    )
    meta = result.metadata
    assert meta["coarsened"] and meta["blocks"] == 4 and meta["block_bounds"] == [0, 4, 8, 12, 16]
    assert all(c % 4 == 0 for cuts in read(tmp_path / "big")["cuts"] for c in cuts)


def test_cli_precompute_writes_table_and_metadata(spark, tmp_path, capsys):
    from albic.cli.main import main
    from albic.stats.transitions import write_mtm

    tasks = tmp_path / "tasks.csv"
    tasks.write_text("load,state_size\n1,1\n1,1\n")
    write_mtm(toy_mtm(), tmp_path / "mtm.json")
    out = tmp_path / "pmc"
    argv = [
        "precompute",
        "--tasks",
        str(tasks),
        "--mtm",
        str(tmp_path / "mtm.json"),
        "--tau",
        "0.5",
        "--gamma",
        "0.5",
        "--tol",
        "1e-6",
        "--master",
        "local[2]",
        "--out",
        str(out),
    ]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "state space of 2 partitionings" in captured.err
    assert "wrote 2 projected costs" in captured.out
    assert read(out)["cost"] == pytest.approx([6 / 7, 4 / 7], abs=1e-5)
    # Bad input: one error line, exit 2, before Spark is touched.
    assert main([*argv[:2], str(tmp_path / "missing.csv"), *argv[3:]]) == 2
    assert capsys.readouterr().err.startswith("albic: error:")


# The table of the instance below as the job wrote it before issue 28 (one cached RDD of full cost
# rows, split by row count): sha256 of json.dumps(table.to_pydict()), identical for 2 and 3
# partitions.
TABLE_BEFORE_ISSUE_28 = "a9ccffc80b22b3da281cd22c8b189d5676c1ab2a36fcc31e0efda41fb4375554"


def pmc_instance():
    """767 states, 72 iterations: big enough for several chunks per task and both row layouts."""
    rng = np.random.default_rng(1)
    loads = rng.lognormal(1.0, 0.5, 12)
    states = np.round(rng.lognormal(5.0, 1.0, 12))
    walk = np.clip(4 + np.cumsum(rng.integers(-1, 2, size=200)), 2, 6)
    mtm = estimate_mtm(walk.tolist(), states=range(2, 7))
    return loads, states, mtm


@pytest.mark.parametrize(
    "partitions, exchange, used",
    [(None, "auto", "driver"), (None, "driver", "driver"), (None, "jobs", "jobs"), (3, "auto", "jobs")],
)
def test_table_unchanged_by_how_the_iterations_run(spark, tmp_path, partitions, exchange, used):
    """Cost rows computed only where the value iteration reads them, in blocks of equal work, and
    built once: by the tasks that keep them (exchange "driver": one Spark job) or once per host
    into a file (exchange "jobs"; three partitions on two slots cannot all run at once, so "auto"
    runs those too). Either way the very table the job wrote before issue 28 (767 states, 72
    iterations), and no cost files left behind."""
    loads, states, mtm = pmc_instance()
    kwargs = dict(tau=1.0, gamma=0.8, spark=spark, tol=1e-6, log=io.StringIO(), partitions=partitions)
    result = precompute(loads, states, mtm, out=tmp_path / "pmc", exchange=exchange, **kwargs)
    assert (result.metadata["states"], result.metadata["iterations"]) == (767, 72)
    assert result.metadata["exchange"] == used
    table = json.dumps(read(tmp_path / "pmc")).encode()
    assert hashlib.sha256(table).hexdigest() == TABLE_BEFORE_ISSUE_28
    from pyspark import SparkFiles  # the Spark extra, as the session fixture imports it

    assert not list(Path(SparkFiles.getRootDirectory()).glob("albic-pmc-*"))


def test_bad_exchange_settings_are_refused_in_one_line(spark, tmp_path):
    loads, states, mtm = pmc_instance()
    kwargs = dict(tau=1.0, gamma=0.8, out=tmp_path / "pmc", spark=spark, log=io.StringIO())
    with pytest.raises(
        InvalidParameterError, match="runs all 3 partitions at once, but the cluster has 2 task"
    ):
        precompute(loads, states, mtm, partitions=3, exchange="driver", **kwargs)
    with pytest.raises(
        InvalidParameterError, match="exchange must be one of auto, driver, jobs, got 'socket'"
    ):
        precompute(loads, states, mtm, exchange="socket", **kwargs)
    assert not (tmp_path / "pmc").exists()


_UNREACHABLE_DRIVER = """
import io, json, sys
from albic.base.errors import AlbicError, InvalidParameterError
from albic.spark.precompute import precompute
from albic.spark.session import spark_session
from test_precompute import pmc_instance
spark = spark_session("local[2]", "albic-tests", config={"spark.albic.exchange.host": sys.argv[1]})
loads, states, mtm = pmc_instance()
kwargs = dict(tau=1.0, gamma=0.8, tol=1e-6, spark=spark)
log = io.StringIO()
result = precompute(loads, states, mtm, out=sys.argv[2], log=log, **kwargs)
try:
    precompute(loads, states, mtm, out=sys.argv[3], log=io.StringIO(), exchange="driver", **kwargs)
    refused = None
except AlbicError as exc:
    refused = str(exc)
print(json.dumps({"exchange": result.metadata["exchange"], "log": log.getvalue(), "refused": refused}))
"""


def test_tasks_that_cannot_reach_the_driver_fall_back_to_one_job_per_iteration(tmp_path):
    """Executors that cannot open a connection to the driver (here: told a host name that does not
    resolve): "auto" says so in one line and runs one Spark job per iteration -- the same table;
    "driver" refuses with the tasks' reason and writes nothing."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(HERE)])}
    env.pop("PYSPARK_PYTHON", None)
    argv = ["albic-unreachable.invalid", str(tmp_path / "auto"), str(tmp_path / "driver")]
    done = subprocess.run(
        [sys.executable, "-c", _UNREACHABLE_DRIVER, *argv],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    assert outcome["exchange"] == "jobs"
    fallback = [line for line in outcome["log"].splitlines() if line.endswith("instead")]
    assert len(fallback) == 1, outcome["log"]
    assert "cannot connect to the driver at albic-unreachable.invalid:" in fallback[0]
    assert fallback[0].endswith("running one Spark job per iteration instead")
    table = json.dumps(read(tmp_path / "auto")).encode()
    assert hashlib.sha256(table).hexdigest() == TABLE_BEFORE_ISSUE_28
    assert outcome["refused"].startswith("the Spark job ended before every task had connected to the driver")
    assert "albic-unreachable.invalid" in outcome["refused"]
    assert not (tmp_path / "driver" / "table.parquet").exists()
