"""The parsing side of albic's Flink REST client on answers recorded from Flink 2.3 (the live tests,
test_flink_live.py and test_flink_rescale_live.py, hold it against a running Flink): Flink's error
answers cut to one line, vertices found by name, chained operator or id, ADVICE.json read, the
mechanism chosen from the job's scheduler, and the texts of a rescale."""

from __future__ import annotations

import pytest

from albic.base.errors import FlinkRestError, InvalidParameterError
from albic.rollout.flink_rescale import (
    Request,
    RescalePlan,
    RescaleResult,
    Resubmission,
    Target,
    advised_parallelism,
    choose_mechanism,
    rescale_text,
)
from albic.rollout.flink_rest import Deadline, FlinkRest, find_vertex, flink_reason, poll

# Parts of `GET /jobs/<id>` and an error answer, as Flink 2.3.0 sent them to the live tests.
DETAILS = {
    "jid": "c301e0927d3b938340b6402d950c5977",
    "name": "albic keyed trace: tailnum",
    "state": "RUNNING",
    "schedulerType": "Default",
    "vertices": [
        {
            "id": "7e1800cc67ff8c68d5f862a25c325f5d",
            "name": "Source: trace",
            "parallelism": 1,
            "maxParallelism": 32,
        },
        {
            "id": "52f89c750ca219fd17d43e2735fc8b5c",
            "name": "tailnum -> discard: Writer",
            "parallelism": 4,
            "maxParallelism": 32,
        },
    ],
}
NOT_FOUND = (
    '{"errors":["org.apache.flink.runtime.rest.NotFoundException: Job 0123456789abcdef0123456789abcdef not '
    "found\\n\\tat org.apache.flink.runtime.rest.handler.job.AbstractExecutionGraphHandler.lambda$handleRequest$1"
    '(AbstractExecutionGraphHandler.java:99)\\nCaused by: org.apache.flink.runtime.messages.FlinkJobNotFoundException"]}'
)


def test_flinks_error_answer_is_cut_to_its_first_line_without_the_java_class():
    assert flink_reason(NOT_FOUND) == "Job 0123456789abcdef0123456789abcdef not found"
    assert flink_reason("<html>bad gateway</html>") == "<html>bad gateway</html>"


@pytest.mark.parametrize(
    "name", ["tailnum", "discard: Writer", "tailnum -> discard: Writer", "52f89c750ca219fd17d43e2735fc8b5c"]
)
def test_a_vertex_is_found_by_its_name_a_chained_operator_or_its_id(name):
    assert find_vertex(DETAILS, name)["id"] == "52f89c750ca219fd17d43e2735fc8b5c"


def test_a_vertex_the_job_has_not_is_refused_listing_the_ones_it_has():
    with pytest.raises(
        FlinkRestError,
        match=r"vertex 'taill': job c301.* has vertices 'Source: trace', 'tailnum -> discard: Writer'",
    ):
        find_vertex(DETAILS, "taill")


def test_a_rest_address_must_be_http_host_and_port():
    with pytest.raises(
        FlinkRestError, match=r"REST address 'localhost:8081' is not the address of Flink's REST API"
    ):
        FlinkRest("localhost:8081")
    with pytest.raises(FlinkRestError, match=r"job id 'job-1' is not a Flink job id \(32 hexadecimal"):
        FlinkRest("http://localhost:8081").job("job-1")


def test_the_advice_gives_its_recommended_parallelism_or_its_reason():
    assert advised_parallelism({"schema": "albic.flink-advice/1", "recommended": 5}) == 5
    with pytest.raises(InvalidParameterError, match=r"recommends no parallelism \(key group 3 alone"):
        advised_parallelism(
            {"schema": "albic.flink-advice/1", "recommended": None, "reason": "key group 3 alone"}
        )
    with pytest.raises(InvalidParameterError, match="is not an advice file"):
        advised_parallelism({"schema": "albic.plan/1"})


def test_the_scheduler_chooses_the_mechanism_unless_named():
    assert choose_mechanism(DETAILS, "auto") == "savepoint"
    assert choose_mechanism({**DETAILS, "schedulerType": "Adaptive"}, "auto") == "adaptive"
    assert choose_mechanism({**DETAILS, "schedulerType": "Adaptive"}, "savepoint") == "savepoint"
    with pytest.raises(
        FlinkRestError, match="runs under the Default scheduler: Flink's resource-requirements"
    ):
        choose_mechanism(DETAILS, "adaptive")


STOP = Request("POST", f"/jobs/{DETAILS['jid']}/stop", {"drain": False})
SAVEPOINT = "file:/tmp/savepoints/savepoint-c301e0-1"


def savepoint_plan(*requests: Request, resubmit: Resubmission | None = None) -> RescalePlan:
    return RescalePlan(
        rest="http://localhost:8081",
        job=DETAILS["jid"],
        name=DETAILS["name"],
        scheduler="Default",
        mechanism="savepoint",
        parallelism=6,
        vertices=(Target("52f89c750ca219fd17d43e2735fc8b5c", "tailnum -> discard: Writer", 4),),
        requests=requests,
        resubmit=resubmit,
    )


def test_a_stop_without_a_jar_says_how_to_resubmit():
    plan = savepoint_plan(STOP)
    stopped = RescaleResult(plan, done=True, requests=(STOP,), seconds=1.5, savepoint=SAVEPOINT)
    text = rescale_text(stopped)
    assert "stopped with a savepoint at file:/tmp/savepoints/savepoint-c301e0-1" in text
    assert "flink run --fromSavepoint file:/tmp/savepoints/savepoint-c301e0-1 --parallelism 6" in text
    dry = rescale_text(RescaleResult(plan))
    assert dry.startswith("dry run, nothing sent") and "then resubmit it at parallelism 6" in dry
    assert "--fromSavepoint <the savepoint>" in dry


def test_the_json_of_a_rescale_keeps_its_fields():
    resubmit = Resubmission("9f2c_job.jar", "org.example.Job", ("tailnum",))
    plan = savepoint_plan(STOP, resubmit.run(6, "<the savepoint>"), resubmit=resubmit)
    dry = RescaleResult(plan).document()
    assert list(dry) == [
        "schema", "rest", "job", "name", "scheduler", "mechanism", "parallelism", "vertices", "requests", "done",
    ]  # fmt: skip
    assert dry["vertices"] == [
        {"id": "52f89c750ca219fd17d43e2735fc8b5c", "name": "tailnum -> discard: Writer", "from": 4}
    ]
    assert dry["requests"][1] == {
        "method": "POST",
        "path": "/jars/9f2c_job.jar/run",
        "body": {
            "parallelism": 6,
            "savepointPath": "<the savepoint>",
            "programArgsList": ["tailnum"],
            "entryClass": "org.example.Job",
        },
    }
    assert dry["done"] is False
    run = resubmit.run(6, SAVEPOINT)
    done = RescaleResult(plan, True, (STOP, run), 12.5, "a" * 32, SAVEPOINT).document()
    assert list(done)[-4:] == ["done", "savepoint", "job_now", "seconds"]
    assert done["requests"][1]["body"]["savepointPath"] == SAVEPOINT
    assert (done["job_now"], done["seconds"], done["savepoint"]) == ("a" * 32, 12.5, SAVEPOINT)
    # The plan stays as it was made: the run request of the plan still names no savepoint.
    assert plan.requests[1].body["savepointPath"] == "<the savepoint>"
    nothing = RescaleResult(plan, done=True, seconds=0.0, job_now=plan.job).document()
    assert nothing["requests"] == [] and "savepoint" not in nothing and nothing["job_now"] == plan.job


def test_a_wait_that_runs_out_names_what_it_waited_for_and_what_it_last_saw():
    readings = iter(range(100))
    assert (
        poll(
            readings.__next__, lambda n: n == 3, deadline=Deadline.after(60), awaiting="3", state=str, every=0
        )
        == 3
    )
    passed = Deadline(at=0.0, seconds=5.0)  # a deadline already past: one reading, then the error
    with pytest.raises(FlinkRestError, match=r"^at 4; gave up waiting after 5 s for the count to reach 100$"):
        poll(
            readings.__next__,
            lambda n: n == 100,
            deadline=passed,
            awaiting="the count to reach 100",
            state=lambda n: f"at {n}",
        )
    with pytest.raises(FlinkRestError, match=r"^job FAILED; gave up waiting for job x to run$"):
        poll(
            lambda: "FAILED",
            lambda state: state == "RUNNING",
            deadline=Deadline.after(60),
            awaiting="job x to run",
            state=lambda state: f"job {state}",
            hopeless=lambda state: state == "FAILED",
        )
