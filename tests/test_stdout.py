"""Standard output carries the plan and nothing else, and a lost plan is an error.

These run the real console script: METIS prints from C to file descriptor 1, and a closed or
broken stdout only exists in a separate process.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from albic.solvers.quiet import quiet_stdout

ALBIC = str(Path(sys.executable).with_name("albic"))

# Four nodes, three key groups and a traffic graph: before COLA's rewrite COLA asked METIS
# for four parts of three vertices here, and METIS printed "***Cannot bisect a graph with 0
# vertices!" (found by fuzzing). Kept as a snapshot whose plan must reach stdout as pure JSON.
METIS_TALKS = {
    "schema": "albic.snapshot/1",
    "nodes": [
        {"id": "n0", "capacity": 1.0},
        {"id": "n1", "capacity": 1.0},
        {"id": "n2", "capacity": 2.0},
        {"id": "n3", "capacity": 2.0},
    ],
    "key_groups": [
        {"id": "k0", "operator": "op", "load": 1.0, "node": "n2"},
        {"id": "k1", "operator": "op", "load": 0.0, "node": "n3"},
        {"id": "k2", "operator": "op", "load": 5.0, "node": "n1"},
    ],
    "traffic": [{"src": "k2", "dst": "k0", "rate": 1.0}, {"src": "k1", "dst": "k2", "rate": 1.0}],
}


@pytest.fixture
def metis_snapshot(tmp_path):
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps(METIS_TALKS))
    return path


def test_quiet_stdout_discards_what_c_code_writes_to_descriptor_1(capfd):
    os.write(1, b"before ")
    with quiet_stdout():
        os.write(1, b"from C ")
        print("from Python", flush=True)
    os.write(1, b"after")
    assert capfd.readouterr().out == "before after"


def test_metis_talks_on_this_partition_unless_guarded(capfd, monkeypatch):
    """A real case: three vertices into four parts of unequal shares (what COLA asked for on the
    fixture's snapshot before its rewrite, found by fuzzing). Without the guard METIS writes to
    descriptor 1."""
    import contextlib

    import scipy.sparse

    import albic.solvers.partition
    from albic.solvers.quiet import flush_c_stdio

    path = scipy.sparse.csr_array(np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]], dtype=float))
    args = (path, np.array([1.0, 0.0, 5.0]), 4)
    shares = np.array([1.0, 1.0, 2.0, 2.0])
    albic.solvers.partition.balanced_partition(*args, target_shares=shares)
    flush_c_stdio()
    assert capfd.readouterr().out == ""
    monkeypatch.setattr(albic.solvers.partition, "quiet_stdout", contextlib.nullcontext)
    albic.solvers.partition.balanced_partition(*args, target_shares=shares)
    flush_c_stdio()
    assert "Cannot bisect" in capfd.readouterr().out


def test_cola_plan_on_stdout_is_pure_json_even_when_metis_talks(metis_snapshot):
    done = subprocess.run(
        [ALBIC, "plan", str(metis_snapshot), "--planner", "cola"], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["planner"] == "cola"  # nothing before or after the JSON
    assert "Cannot bisect" not in done.stdout


def test_closed_stdout_is_an_error_not_a_silent_loss(metis_snapshot):
    sh = shutil.which("sh")
    done = subprocess.run(
        [sh, "-c", f'"{ALBIC}" plan "{metis_snapshot}" --planner flux >&-'],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1
    assert done.stderr == "albic: error: standard output is closed\n"


def test_broken_pipe_is_an_error_with_a_message(metis_snapshot):
    process = subprocess.Popen(
        [ALBIC, "plan", str(metis_snapshot), "--planner", "flux"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    process.stdout.close()  # the reader leaves before albic writes the plan
    err = process.stderr.read().decode()
    assert process.wait(timeout=300) == 1
    assert err == "albic: error: cannot write to standard output: Broken pipe\n"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_full_disk_on_stdout_is_an_error(metis_snapshot):
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [ALBIC, "plan", str(metis_snapshot), "--planner", "flux"],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,
        )
    assert done.returncode == 1
    assert done.stderr == "albic: error: cannot write to standard output: No space left on device\n"
