"""The parsing side of albic's Flink REST client on answers recorded from Flink 2.3 (the live tests,
test_flink_live.py and test_flink_rescale_live.py, hold it against a running Flink): Flink's error
answers cut to one line, vertices found by name, chained operator or id, ADVICE.json read, the
mechanism chosen from the job's scheduler, and the texts of a rescale."""

from __future__ import annotations

import pytest

from albic.base.errors import FlinkRestError, InvalidParameterError
from albic.rollout.flink_rescale import advised_parallelism, choose_mechanism, rescale_text
from albic.rollout.flink_rest import FlinkRest, find_vertex, flink_reason

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
        FlinkRestError, match=r"--rest 'localhost:8081' is not the address of Flink's REST API"
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


def test_a_stop_without_a_jar_says_how_to_resubmit():
    plan = {
        "job": DETAILS["jid"],
        "name": DETAILS["name"],
        "mechanism": "savepoint",
        "parallelism": 6,
        "vertices": [{"name": "tailnum -> discard: Writer", "from": 4}],
        "requests": [{"method": "POST", "path": f"/jobs/{DETAILS['jid']}/stop", "body": {"drain": False}}],
        "done": True,
        "job_now": None,
        "savepoint": "file:/tmp/savepoints/savepoint-c301e0-1",
    }
    text = rescale_text(plan)
    assert "stopped with a savepoint at file:/tmp/savepoints/savepoint-c301e0-1" in text
    assert "flink run --fromSavepoint file:/tmp/savepoints/savepoint-c301e0-1 --parallelism 6" in text
    dry = rescale_text({**plan, "done": False})
    assert dry.startswith("dry run, nothing sent") and "then resubmit it at parallelism 6" in dry
