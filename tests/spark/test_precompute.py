"""PMC on Spark: a hand-solved toy, a killed-and-resumed run, and Spark against the local mapper."""

from __future__ import annotations

import hashlib
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from albic.base.errors import AlbicError, InvalidParameterError
from albic.solvers.mdp import local_blocks, value_iteration
from albic.spark.precompute import local_costs, precompute, state_space
from albic.stats.transitions import TransitionMatrix, estimate_mtm, write_mtm

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


# The table of the instance below as a job that cached full cost rows in one RDD, split by row
# count, wrote it: sha256 of json.dumps(table.to_pydict()), identical for 2 and 3
# partitions.
REFERENCE_TABLE = "a9ccffc80b22b3da281cd22c8b189d5676c1ab2a36fcc31e0efda41fb4375554"


def pmc_instance():
    """767 states, 72 iterations: big enough for several chunks per task and both row layouts."""
    rng = np.random.default_rng(1)
    loads = rng.lognormal(1.0, 0.5, 12)
    states = np.round(rng.lognormal(5.0, 1.0, 12))
    walk = np.clip(4 + np.cumsum(rng.integers(-1, 2, size=200)), 2, 6)
    mtm = estimate_mtm(walk.tolist(), states=range(2, 7))
    return loads, states, mtm


@pytest.mark.parametrize(
    "partitions, memory_budget, where",
    [(None, None, "driver"), (3, 0, "executors")],
)
def test_table_unchanged_by_how_the_iterations_run(spark, tmp_path, partitions, memory_budget, where):
    """Cost rows computed only where the value iteration reads them, in blocks of equal work, and
    built once on the executors: kept by the driver, which iterates (the rows fit its budget; in
    the default 4 blocks per task slot), or kept by the executors, one Spark job per iteration (a
    budget of 0 fits nothing; in three blocks on two slots). Either way the reference table
    (767 states, 72 iterations), and no persisted rows left behind."""
    loads, states, mtm = pmc_instance()
    kwargs = dict(tau=1.0, gamma=0.8, spark=spark, tol=1e-6, log=io.StringIO(), partitions=partitions)
    # The session is shared: what earlier tests left persisted is not this job's.
    persisted_before = set(spark.sparkContext._jsc.getPersistentRDDs().keySet())
    result = precompute(loads, states, mtm, out=tmp_path / "pmc", memory_budget=memory_budget, **kwargs)
    assert (result.metadata["states"], result.metadata["iterations"]) == (767, 72)
    assert result.metadata["iterated_on"] == where
    assert result.metadata["partitions"] == (partitions or {"driver": 8, "executors": 2}[where])
    table = json.dumps(read(tmp_path / "pmc")).encode()
    assert hashlib.sha256(table).hexdigest() == REFERENCE_TABLE
    assert set(spark.sparkContext._jsc.getPersistentRDDs().keySet()) == persisted_before


def test_the_log_says_where_the_rows_are_kept_and_why(spark, tmp_path):
    """The cost rows take 8 bytes per pair (i, j) the iteration reads: j of a node count that i's
    MTM row reaches (3,402,856 bytes for the 767 states)."""
    loads, states, mtm = pmc_instance()
    counts = [n for n, _ in state_space(loads, states, mtm.states, 1.0).partitionings]
    at = {n: k for k, n in enumerate(mtm.states)}
    pairs = sum(mtm.matrix[at[a], at[b]] > 0 for a in counts for b in counts)
    kwargs = dict(tau=1.0, gamma=0.8, spark=spark, tol=1e-6)
    lines = {}
    for budget in (None, 1000):
        log = io.StringIO()
        out = tmp_path / str(budget)
        result = precompute(
            loads, states, mtm, out=out, log=log, memory_budget=budget, stop_after=1, **kwargs
        )
        lines[budget] = log.getvalue().splitlines()[1]
        assert result.metadata["cost_row_bytes"] == 8 * pairs == 3402856
    assert lines[None] == (
        "albic precompute: cost rows of 3.245 MiB, within the driver's budget of 512 MiB: the driver iterates"
    )
    assert lines[1000] == (
        "albic precompute: cost rows of 3.245 MiB, beyond the driver's budget of 1000 bytes: "
        "one Spark job per iteration"
    )


def test_bad_settings_are_refused_in_one_line(spark, tmp_path):
    loads, states, mtm = pmc_instance()
    kwargs = dict(tau=1.0, gamma=0.8, out=tmp_path / "pmc", spark=spark, log=io.StringIO())
    refused = [
        (
            {"memory_budget": -1},
            r"'memory_budget' parameter of PrecomputeRequest must be an int >= 0 \(bytes\) or None. Got -1 ",
        ),
        (
            {"partitions": 0},
            "'partitions' parameter of PrecomputeRequest must be an int >= 1 or None. Got 0 ",
        ),
        (
            {"gamma": 1.0},
            r"'gamma' parameter of PrecomputeRequest must be a float in \[0, 1\) \(for value iteration to converge\). Got 1.0 ",
        ),
        ({"blocks": 0}, "'blocks' parameter of PrecomputeRequest must be an int >= 1 or None. Got 0 "),
    ]
    for settings, message in refused:
        with pytest.raises(InvalidParameterError, match=message):
            precompute(loads, states, mtm, **{**kwargs, **settings})
    assert not (tmp_path / "pmc").exists()


_ON_A_CLUSTER = """
import hashlib, io, json, sys
import pyarrow.parquet as pq
from albic.spark.precompute import precompute
from albic.spark.session import spark_session
from test_precompute import pmc_instance
spark = spark_session("local-cluster[2,1,1024]", "albic-tests")
loads, states, mtm = pmc_instance()
kwargs = dict(tau=1.0, gamma=0.8, tol=1e-6, spark=spark, log=io.StringIO())
def run(out, **more):
    result = precompute(loads, states, mtm, out=out, **kwargs, **more)
    return result.metadata["iterated_on"], result.metadata["iterations"], result.mdp.stopped
runs = [run(sys.argv[1]), run(sys.argv[2], memory_budget=0, stop_after=3), run(sys.argv[2])]
def digest(out):
    return hashlib.sha256(json.dumps(pq.read_table(out + "/table.parquet").to_pydict()).encode()).hexdigest()
executors = spark.sparkContext.parallelize(range(4), 4).map(lambda _: __import__("os").getpid()).collect()
print(json.dumps({"runs": runs, "tables": [digest(out) for out in sys.argv[1:]],
                  "python_workers": len(set(executors))}))
"""


def test_two_executors_in_their_own_jvms_write_the_same_table(tmp_path):
    """On ``local-cluster[2,1,1024]`` (a standalone master and two executor JVMs of one core, the
    way a cluster runs them): the table of the driver's iterations, and of a run stopped after 3
    iterations on the executors (one Spark job each, the values broadcast to both JVMs) and
    resumed on the driver, is the one above. Spark allows one master per process: this runs in its
    own."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(HERE)])}
    env.pop("PYSPARK_PYTHON", None)
    outs = [str(tmp_path / name) for name in ("driver", "resumed")]
    done = subprocess.run(
        [sys.executable, "-c", _ON_A_CLUSTER, *outs], capture_output=True, text=True, timeout=600, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    assert outcome["runs"] == [["driver", 72, False], ["executors", 3, True], ["driver", 72, False]]
    assert outcome["tables"] == [REFERENCE_TABLE] * 2
    assert outcome["python_workers"] >= 2  # the executors of both JVMs ran tasks


def big_instance(folder):
    """``albic precompute``'s inputs for 5,873 states (16 tasks, 2..8 nodes, tau 1.0): the cost rows
    take seconds to build, long enough to be interrupted."""
    rng = np.random.default_rng(0)
    loads, states = rng.lognormal(1.0, 0.5, 16), np.round(rng.lognormal(5.0, 1.0, 16))
    walk = np.clip(5 + np.cumsum(rng.integers(-1, 2, size=400)), 2, 8)
    write_mtm(estimate_mtm(walk.tolist(), states=range(2, 9)), folder / "mtm.json")
    rows = "".join(f"{load},{state}\n" for load, state in zip(loads, states))
    (folder / "tasks.csv").write_text("load,state_size\n" + rows)


def test_ctrl_c_while_spark_builds_the_rows_cancels_the_job_quietly(tmp_path):
    """Ctrl-C (SIGINT) while the first Spark job builds the cost rows: exit 130 within seconds,
    nothing printed beyond albic's own lines (no Py4J errors), no checkpoint (no iteration done)."""
    big_instance(tmp_path)
    argv = [sys.executable, "-m", "albic", "precompute", "--tasks", str(tmp_path / "tasks.csv")]
    argv += ["--mtm", str(tmp_path / "mtm.json"), "--tau", "1.0", "--max-states", "10000"]
    argv += ["--master", "local[2]", "--out", str(tmp_path / "pmc")]
    with open(tmp_path / "err.txt", "w") as err:
        job = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err)
        try:
            while "cost rows of" not in (tmp_path / "err.txt").read_text() and job.poll() is None:
                time.sleep(0.05)
            time.sleep(0.5)  # the job is running
            job.send_signal(signal.SIGINT)
            started = time.perf_counter()
            assert job.wait(timeout=60) == 130
        finally:
            job.kill()
    assert time.perf_counter() - started < 15
    lines = (tmp_path / "err.txt").read_text().splitlines()
    assert [line.split(":")[0] for line in lines] == ["albic precompute"] * 2, lines
    assert not (tmp_path / "pmc" / "_checkpoint").exists()
