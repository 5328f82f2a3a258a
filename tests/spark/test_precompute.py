"""PMC on Spark: a hand-solved toy, a killed-and-resumed run, and Spark against the local mapper."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from albic.base.errors import AlbicError
from albic.spark.precompute import local_costs, precompute, state_space
from albic.stats.transitions import TransitionMatrix, estimate_mtm
from solvers.mdp import local_blocks, value_iteration


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


@pytest.mark.parametrize("partitions", [None, 3])
def test_table_unchanged_by_host_cost_blocks(spark, tmp_path, partitions):
    """Cost rows computed once per host, only where the value iteration reads them, in blocks of
    equal work: the very table the job wrote before (767 states, 72 iterations), and no cost
    files left behind."""
    rng = np.random.default_rng(1)
    loads = rng.lognormal(1.0, 0.5, 12)
    states = np.round(rng.lognormal(5.0, 1.0, 12))
    walk = np.clip(4 + np.cumsum(rng.integers(-1, 2, size=200)), 2, 6)
    mtm = estimate_mtm(walk.tolist(), states=range(2, 7))
    kwargs = dict(tau=1.0, gamma=0.8, spark=spark, tol=1e-6, log=io.StringIO(), partitions=partitions)
    result = precompute(loads, states, mtm, out=tmp_path / "pmc", **kwargs)
    assert (result.metadata["states"], result.metadata["iterations"]) == (767, 72)
    table = json.dumps(read(tmp_path / "pmc")).encode()
    assert hashlib.sha256(table).hexdigest() == TABLE_BEFORE_ISSUE_28
    from pyspark import SparkFiles  # the Spark extra, as the session fixture imports it

    assert not list(Path(SparkFiles.getRootDirectory()).glob("albic-pmc-*"))
