"""albic against a running Flink (the ``flink_cluster`` harness: a real session cluster from the
apache-flink wheel, on localhost), never against a stand-in for Flink's REST API: reading a job and
checking albic's prediction (test_flink_rescale_live.py applies the advice).

The trace is a week of real flights keyed by ``tailnum`` (``flink_flights``); albic's statistics of
it use Flink's hash at 32 key groups, and ``KeyedTraceJob`` keys the same CSV the same way at
parallelism 4, maximum parallelism 32, reading it once and then idling (a bounded input in a job
that keeps running, so that its metrics stay readable):

- ``albic flink status`` reads the job as Flink's REST API reports it;
- ``albic flink check`` predicts every subtask's ``numRecordsIn`` exactly, record for record, and
  exits 1 beyond its tolerance;
- the errors: the REST address down, a job id the cluster has not or that is not Flink's form, a
  vertex the job has not, a vertex no keyed exchange feeds, a parallelism over the maximum -- one
  line each, exit 2.
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from flink_cluster import free_port, run_albic

from albic.io import read_snapshots, write_snapshot
from albic.rollout.flink_check import check_prediction
from albic.rollout.flink_rest import job_status

pytestmark = pytest.mark.slow  # a Flink job on the session's cluster

OPERATOR = "tailnum"
MAX_PARALLELISM = 32


def settled(cluster, job: str, seen: list) -> list[int] | None:
    """The counts once three reads a second apart agree (Flink's metrics lag by up to 500 ms here)."""
    seen.append(cluster.records_in(job))
    last = seen[-3:]
    done = len(last) == 3 and last[0] == last[1] == last[2] and None not in last[0] and sum(last[0]) > 0
    return last[0] if done else None


def check_argv(cluster, job: str, source, vertex: str = OPERATOR) -> list[str]:
    return ["flink", "check", "--rest", cluster.rest, "--job", job, "--vertex", vertex, str(source)]


@pytest.fixture(scope="module")
def bounded_job(flink_cluster, flink_flights):
    args = flink_cluster.program_args(flink_flights.csv, OPERATOR, OPERATOR, MAX_PARALLELISM, 0)
    job = flink_cluster.submit(args, 4)
    flink_cluster.wait(lambda: flink_cluster.running_at(job, 4), "the bounded job running at 4")
    seen: list = []
    counts = flink_cluster.wait(lambda: settled(flink_cluster, job, seen), "the trace read", every=1.0)
    yield SimpleNamespace(id=job, counts=counts)
    flink_cluster.cancel(job)


def test_status_reads_the_running_job_as_flink_reports_it(flink_cluster, bounded_job, flink_flights, capsys):
    status = job_status(flink_cluster.rest, bounded_job.id)
    source, keyed = status["vertices"]
    assert status["job"]["id"] == bounded_job.id and status["job"]["scheduler"] == "Adaptive"
    assert (source["name"], source["parallelism"], source["keyed"]) == ("Source: trace", 1, False)
    assert keyed["name"] == "tailnum -> discard: Writer" and keyed["keyed"]
    assert (keyed["parallelism"], keyed["max_parallelism"]) == (4, MAX_PARALLELISM)
    assert [s["records_in"] for s in keyed["subtasks"]] == bounded_job.counts
    assert keyed["records_in"] == flink_flights.events
    assert all(0 <= s["busy_ms_per_second"] <= 1000 for s in keyed["subtasks"])
    # The command line, without --job: the only running job; as a table and as JSON.
    code, out, _ = run_albic(capsys, "flink", "status", "--rest", flink_cluster.rest)
    assert (
        code == 0
        and f"parallelism 4, maximum parallelism 32, keyed, {flink_flights.events:,} records in" in out
    )
    code, out, _ = run_albic(
        capsys, "flink", "status", "--rest", flink_cluster.rest, "--job", bounded_job.id, "--json"
    )
    document = json.loads(out)
    assert code == 0 and document["schema"] == "albic.flink-status/1"
    assert [s["records_in"] for s in document["vertices"][1]["subtasks"]] == bounded_job.counts


def test_check_predicts_every_subtasks_records_in_exactly(flink_cluster, bounded_job, flink_flights, capsys):
    check = check_prediction(flink_cluster.rest, bounded_job.id, OPERATOR, flink_flights.stats)
    assert check["weights"] == "events" and check["key_groups"] == MAX_PARALLELISM
    assert [r["predicted_records"] for r in check["subtasks"]] == bounded_job.counts
    assert [r["measured_records"] for r in check["subtasks"]] == bounded_job.counts
    assert check["predicted_records"] == check["measured_records"] == flink_flights.events
    assert check["largest_difference"] == 0 and check["within"]
    assert [(r["start"], r["end"]) for r in check["subtasks"]] == [(0, 7), (8, 15), (16, 23), (24, 31)]
    code, out, _ = run_albic(capsys, *check_argv(flink_cluster, bounded_job.id, flink_flights.stats))
    assert code == 0 and "largest difference 0.00 points" in out and "within the tolerance of 1" in out


def test_check_exits_1_beyond_the_tolerance(flink_cluster, bounded_job, flink_flights, tmp_path, capsys):
    """The first day alone (a snapshot file: shares, no counts) predicts the week less well."""
    day = write_snapshot(next(iter(read_snapshots(flink_flights.stats))), tmp_path / "day.json")
    argv = check_argv(flink_cluster, bounded_job.id, day)
    code, out, _ = run_albic(capsys, *argv, "--json")
    check = json.loads(out)
    assert check["weights"] == "arrival_rate" and check["predicted_records"] is None
    assert code == (0 if check["within"] else 1) and check["largest_difference"] > 0
    code, out, _ = run_albic(capsys, *argv, "--tolerance", str(check["largest_difference"] / 2))
    assert code == 1 and "beyond the tolerance" in out


def test_errors_are_one_line_naming_the_object_the_value_and_the_rule(
    flink_cluster, bounded_job, flink_flights, capsys
):
    down = f"http://localhost:{free_port()}"
    code, out, err = run_albic(capsys, "flink", "status", "--rest", down)
    assert code == 2 and err.count("\n") == 1
    assert f"Flink's REST API at {down} does not answer" in err and "rest.address and rest.port" in err
    unknown = "0123456789abcdef0123456789abcdef"
    code, _, err = run_albic(capsys, "flink", "status", "--rest", flink_cluster.rest, "--job", unknown)
    assert code == 2 and err.count("\n") == 1
    assert (
        f"job {unknown} is not on the Flink cluster at {flink_cluster.rest}" in err and bounded_job.id in err
    )
    code, _, err = run_albic(capsys, "flink", "status", "--rest", flink_cluster.rest, "--job", "job-1")
    assert code == 2 and "job id 'job-1' is not a Flink job id (32 hexadecimal characters" in err
    code, _, unknown_vertex = run_albic(
        capsys, *check_argv(flink_cluster, bounded_job.id, flink_flights.stats, "count")
    )
    assert code == 2 and unknown_vertex.count("\n") == 1 and "vertex 'count': job" in unknown_vertex
    assert "'tailnum -> discard: Writer'" in unknown_vertex and "is none of them" in unknown_vertex
    code, _, err = run_albic(
        capsys, *check_argv(flink_cluster, bounded_job.id, flink_flights.stats, "Source: trace")
    )
    assert code == 2 and "vertex 'Source: trace' of job" in err and "is not fed by a keyed exchange" in err
    rescale = ["flink", "rescale", "--rest", flink_cluster.rest, "--job", bounded_job.id, "--dry-run"]
    code, _, again = run_albic(capsys, *rescale, "--parallelism", "2", "--vertex", "count")
    assert code == 2 and again == unknown_vertex
    code, _, err = run_albic(capsys, *rescale, "--parallelism", "64")
    assert (
        code == 2
        and "parallelism 64: vertex 'tailnum -> discard: Writer'" in err
        and "maximum parallelism 32" in err
    )
