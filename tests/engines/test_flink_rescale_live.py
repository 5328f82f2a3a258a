"""`albic flink advise` then `albic flink rescale` of a running Flink job (the ``flink_cluster``
harness: a real session cluster from the apache-flink wheel, on localhost, under the adaptive
scheduler), never against a stand-in for Flink's REST API.

The job keys a week of real flights by ``tailnum`` (``flink_flights``) and repeats the trace at a
fixed rate from parallelism 4. The advice on albic's statistics of that trace recommends 5 (Flink's
autoscaler rule would keep 4 and leave a subtask over the target); the rescale goes through the
adaptive scheduler's resource requirements (same job), then to 3 through a savepoint and a
resubmission of the uploaded jar (a new job; the old one is then FINISHED and refused as not
running). Each time the job runs at the new parallelism and, once it has read the trace ten times
over, every subtask's measured share of records is the predicted one within 1 point.
"""

from __future__ import annotations

import json
import shlex

import pytest
from flink_cluster import ENTRY_CLASS, run_albic

from albic.cli.main import main

pytestmark = pytest.mark.slow  # a Flink job rescaled twice on the session's cluster

OPERATOR = "tailnum"
# The advice's subtask capacity, in the statistics' load unit (events per second of a day).
CAPACITY = 0.004
ADVISED = 5
RATE = 20_000  # records per second of the repeating job
CYCLES = 10  # passes over the trace before shares are compared: a partial pass weighs at most 1/10
WAIT = "120"  # seconds albic waits for the job at the new parallelism


def assert_shares_as_predicted(cluster, job: str, parallelism: int, flights, capsys) -> None:
    """After ``CYCLES`` passes over the trace, `albic flink check` finds every share within 1 point."""
    cluster.wait(
        lambda: None not in (counts := cluster.records_in(job)) and sum(counts) >= CYCLES * flights.events,
        f"{CYCLES} passes over the trace at parallelism {parallelism}",
        every=1.0,
    )
    argv = ["flink", "check", "--rest", cluster.rest, "--job", job, "--vertex", OPERATOR, str(flights.stats)]
    code, out, _ = run_albic(capsys, *argv, "--tolerance", "1", "--json")
    check = json.loads(out)
    assert code == 0 and check["within"] and check["vertex"]["parallelism"] == parallelism
    assert all(abs(r["difference"]) <= 1 for r in check["subtasks"])


def test_rescale_to_the_advised_parallelism_then_through_a_savepoint(
    flink_cluster, flink_flights, tmp_path, capsys
):
    rest = flink_cluster.rest
    advice = tmp_path / "advice.json"
    argv = [
        "flink",
        "advise",
        str(flink_flights.stats),
        "--subtask-capacity",
        str(CAPACITY),
        "--current",
        "4",
    ]
    assert main([*argv, "--out", str(advice)]) == 0
    assert json.loads(advice.read_text())["recommended"] == ADVISED
    args = flink_cluster.program_args(flink_flights.csv, OPERATOR, OPERATOR, 32, RATE)
    job = flink_cluster.submit(args, 4)
    try:
        flink_cluster.wait(lambda: flink_cluster.running_at(job, 4), "the repeating job running at 4")
        rescale = ["flink", "rescale", "--rest", rest, "--job", job, "--wait", WAIT]
        code, out, _ = run_albic(capsys, *rescale, "--advice", str(advice), "--dry-run")
        assert code == 0 and out.startswith("dry run, nothing sent")
        assert f"PUT /jobs/{job}/resource-requirements" in out and flink_cluster.running_at(job, 4)
        code, out, err = run_albic(capsys, *rescale, "--advice", str(advice))
        assert code == 0 and f"runs at parallelism {ADVISED} after" in out, err
        flink_cluster.notes.append(
            f"rescale 4 -> {ADVISED} (adaptive scheduler): {out.split(' after ')[-1].strip()}"
        )
        assert flink_cluster.running_at(job, ADVISED)
        assert_shares_as_predicted(flink_cluster, job, ADVISED, flink_flights, capsys)
        program = [
            "--jar",
            flink_cluster.jar_id,
            "--entry-class",
            ENTRY_CLASS,
            "--program-args",
            shlex.join(args),
        ]
        code, out, err = run_albic(
            capsys, *rescale, "--parallelism", "3", "--via", "savepoint", *program, "--json"
        )
        assert code == 0, err
        done = json.loads(out)
        assert done["mechanism"] == "savepoint" and done["savepoint"].startswith("file:")
        flink_cluster.notes.append(
            f"rescale {ADVISED} -> 3 (savepoint, resubmitted jar): {done['seconds']:.1f} s"
        )
        old, job = job, done["job_now"]
        assert job != old and flink_cluster.running_at(job, 3)
        code, _, err = run_albic(capsys, "flink", "status", "--rest", rest, "--job", old)
        assert code == 2 and f"job {old} ('albic keyed trace: tailnum') is FINISHED, not RUNNING" in err
        assert_shares_as_predicted(flink_cluster, job, 3, flink_flights, capsys)
    finally:
        flink_cluster.cancel(job)
