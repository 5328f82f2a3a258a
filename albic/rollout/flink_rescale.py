"""A running Flink job rescaled through Flink's own mechanisms, then watched until it runs at P.

:func:`rescale` (``albic flink rescale``) sets the parallelism of a job's keyed vertices (every
vertex fed by a keyed exchange, or the one ``vertex`` names) to ``P`` -- given, or ADVICE.json's
``recommended`` (``albic flink advise``) -- in one of two ways:

- **adaptive**, for a job that runs under the adaptive scheduler (``jobmanager.scheduler:
  adaptive``; the job's ``schedulerType`` is ``Adaptive``): ``PUT /jobs/<id>/resource-requirements``
  with each target vertex's upper bound at ``P`` (its lower bound kept, lowered to ``P`` if above).
  The scheduler restarts the job at ``P`` from its latest checkpoint, under the same job id, once
  ``P`` slots are free and its cooldown (``jobmanager.adaptive-scheduler.executing.
  cooldown-after-rescaling``) has passed.
- **savepoint**, for any job: ``POST /jobs/<id>/stop`` (stop with a savepoint, polled at
  ``/jobs/<id>/savepoints/<request>``), then -- for a job submitted from a jar through the REST API,
  given as ``jar`` (its id under ``/jars``) with its entry class and program arguments, which Flink
  does not keep -- ``POST /jars/<jar>/run`` at parallelism ``P`` from that savepoint. Without
  ``jar`` the job stays stopped and the resubmission is returned to print. The job-level
  parallelism ``P`` applies to every vertex that does not set its own.

Either way it then polls ``/jobs/<id>`` until every target vertex runs at ``P`` with all its subtasks
RUNNING, and says how long that took; ``dry_run`` reads the job and returns the requests it would
send. ``via="auto"`` picks adaptive when the job runs under the adaptive scheduler, else savepoint.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from albic.base.errors import FlinkRestError, InvalidParameterError
from albic.core.planner import Interval, check_params
from albic.io.reader import read_input_json
from albic.rollout.flink import ADVICE_SCHEMA
from albic.rollout.flink_rest import FlinkRest, find_vertex, keyed_vertices, running_job

__all__ = [
    "RESCALE_SCHEMA",
    "VIA",
    "DEFAULT_WAIT",
    "advised_parallelism",
    "plan_rescale",
    "rescale",
    "rescale_text",
]

RESCALE_SCHEMA = "albic.flink-rescale/1"
#: How a rescale is carried out: chosen from the job's scheduler, or named.
VIA = ("auto", "adaptive", "savepoint")
#: Seconds to wait for the job to run at the new parallelism (and for the savepoint).
DEFAULT_WAIT = 300.0
_POLL = 0.5
_SAVEPOINT = "<the savepoint>"


def advised_parallelism(advice: Mapping[str, Any] | str | os.PathLike[str]) -> int:
    """ADVICE.json's ``recommended`` parallelism (``albic flink advise``), or an error with its reason."""
    where = "the advice" if isinstance(advice, Mapping) else str(advice)
    document = advice if isinstance(advice, Mapping) else read_input_json(Path(advice), "advice file")
    if not isinstance(document, Mapping) or document.get("schema") != ADVICE_SCHEMA:
        raise InvalidParameterError(f"{where} is not an advice file: its schema is not {ADVICE_SCHEMA!r}")
    if document.get("recommended") is None:
        raise InvalidParameterError(
            f"{where} recommends no parallelism ({document.get('reason')}); give --parallelism"
        )
    return int(document["recommended"])


def _targets(
    client: FlinkRest, details: Mapping[str, Any], vertex: str | None, p: int
) -> list[dict[str, Any]]:
    if vertex is not None:
        targets = [find_vertex(details, vertex)]
    else:
        keyed = keyed_vertices(client, details["jid"])
        targets = [v for v in details["vertices"] if v["id"] in keyed]
        if not targets:
            names = ", ".join(repr(v["name"]) for v in details["vertices"])
            raise FlinkRestError(
                f"job {details['jid']} has no keyed vertex (its vertices: {names}); name the one to "
                "rescale with --vertex"
            )
    for v in targets:
        if not 1 <= p <= int(v["maxParallelism"]):
            raise InvalidParameterError(
                f"parallelism {p}: vertex {v['name']!r} of job {details['jid']} takes 1 .. its maximum "
                f"parallelism {v['maxParallelism']} (its key groups)"
            )
    return targets


def choose_mechanism(details: Mapping[str, Any], via: str) -> str:
    """``"adaptive"`` or ``"savepoint"`` for the job ``details``: ``via``, or with ``"auto"`` the
    job's scheduler (``schedulerType`` ``Adaptive``: the resource-requirements endpoint)."""
    if via not in VIA:
        raise InvalidParameterError(f"via = {via!r}, must be one of {list(VIA)}")
    adaptive = details.get("schedulerType") == "Adaptive"
    if via == "adaptive" and not adaptive:
        raise FlinkRestError(
            f"job {details['jid']} runs under the {details.get('schedulerType')} scheduler: Flink's "
            "resource-requirements endpoint rescales only under jobmanager.scheduler: adaptive "
            "(use --via savepoint)"
        )
    return "adaptive" if via == "adaptive" or (via == "auto" and adaptive) else "savepoint"


def _requirements(
    client: FlinkRest, job: str, targets: Sequence[Mapping[str, Any]], p: int
) -> dict[str, Any]:
    """The job's resource requirements with each target's upper bound at ``p``."""
    wanted = client.get(f"/jobs/{job}/resource-requirements")
    for v in targets:
        bounds = wanted[v["id"]]["parallelism"]
        bounds["upperBound"] = p
        bounds["lowerBound"] = min(int(bounds.get("lowerBound", 1)), p)
    return wanted


def _run_body(p: int, entry_class: str | None, program_args: Sequence[str], savepoint: str) -> dict[str, Any]:
    body: dict[str, Any] = {
        "parallelism": p,
        "savepointPath": savepoint,
        "programArgsList": list(program_args),
    }
    if entry_class is not None:
        body["entryClass"] = entry_class
    return body


def plan_rescale(
    rest: str | FlinkRest,
    job: str,
    parallelism: int,
    *,
    vertex: str | None = None,
    via: str = "auto",
    jar: str | None = None,
    entry_class: str | None = None,
    program_args: Sequence[str] = (),
    savepoint_dir: str | None = None,
) -> dict[str, Any]:
    """What :func:`rescale` would do: the mechanism, the target vertices and the requests."""
    check_params("plan_rescale()", {"parallelism": parallelism}, {"parallelism": Interval(int, 1)})
    client = rest if isinstance(rest, FlinkRest) else FlinkRest(rest)
    details = running_job(client, job, "rescaling")
    targets = _targets(client, details, vertex, parallelism)
    mechanism = choose_mechanism(details, via)
    job = details["jid"]
    if mechanism == "adaptive":
        requests = [
            ("PUT", f"/jobs/{job}/resource-requirements", _requirements(client, job, targets, parallelism))
        ]
    else:
        stop = {"drain": False, **({"targetDirectory": savepoint_dir} if savepoint_dir else {})}
        requests = [("POST", f"/jobs/{job}/stop", stop)]
        if jar is not None:
            body = _run_body(parallelism, entry_class, program_args, _SAVEPOINT)
            requests.append(("POST", f"/jars/{jar}/run", body))
    return {
        "schema": RESCALE_SCHEMA,
        "rest": client.url,
        "job": job,
        "name": details["name"],
        "scheduler": details.get("schedulerType"),
        "mechanism": mechanism,
        "parallelism": parallelism,
        "vertices": [{"id": v["id"], "name": v["name"], "from": int(v["parallelism"])} for v in targets],
        "requests": [{"method": m, "path": path, "body": body} for m, path, body in requests],
        "done": False,
    }


def _stop_with_savepoint(client: FlinkRest, job: str, body: Mapping[str, Any], deadline: float) -> str:
    request = client.request("POST", f"/jobs/{job}/stop", body)["request-id"]
    while True:
        answer = client.get(f"/jobs/{job}/savepoints/{request}")
        operation = answer.get("operation") or {}
        if answer.get("status", {}).get("id") == "COMPLETED":
            if "location" in operation:
                return operation["location"]
            cause = operation.get("failure-cause", {}).get("stack-trace", "no reason given")
            raise FlinkRestError(
                f"job {job}: stopping with a savepoint failed: {cause.strip().splitlines()[0]}"
            )
        if time.monotonic() > deadline:
            raise FlinkRestError(
                f"job {job}: the savepoint was not done within the wait; it may still complete"
            )
        time.sleep(_POLL)


def _vertex_now(details: Mapping[str, Any], target: Mapping[str, Any]) -> Mapping[str, Any] | None:
    by_id = {v["id"]: v for v in details["vertices"]}
    return by_id.get(target["id"]) or next(
        (v for v in details["vertices"] if v["name"] == target["name"]), None
    )


def _at(details: Mapping[str, Any], targets: Sequence[Mapping[str, Any]], p: int) -> bool:
    now = [_vertex_now(details, t) for t in targets]
    return details.get("state") == "RUNNING" and all(
        v is not None and int(v["parallelism"]) == p and v["tasks"].get("RUNNING") == p for v in now
    )


def _lagging(
    client: FlinkRest, details: Mapping[str, Any], targets: Sequence[Mapping[str, Any]], p: int
) -> str:
    parts = []
    for t in targets:
        v = _vertex_now(details, t)
        if v is not None:
            parts.append(
                f"vertex {v['name']!r} runs at {v['parallelism']}, {v['tasks'].get('RUNNING', 0)} subtasks RUNNING"
            )
    slots = client.get("/overview")
    return (
        f"job {details['jid']} is {details.get('state')}, not at parallelism {p}: {'; '.join(parts)} "
        f"(the cluster has {slots.get('slots-total')} task slots, {slots.get('slots-available')} free)"
    )


def _wait_at(
    client: FlinkRest, job: str, targets: Sequence[Mapping[str, Any]], p: int, deadline: float
) -> None:
    while True:
        details = client.job(job)
        if _at(details, targets, p):
            return
        if details.get("state") in ("FAILED", "CANCELED", "FINISHED") or time.monotonic() > deadline:
            raise FlinkRestError(_lagging(client, details, targets, p) + "; gave up waiting")
        time.sleep(_POLL)


def _carry_out(client: FlinkRest, plan: dict[str, Any], deadline: float) -> None:
    first = plan["requests"][0]
    if plan["mechanism"] == "adaptive":
        client.request(first["method"], first["path"], first["body"])
        plan["job_now"] = plan["job"]
        return
    plan["savepoint"] = _stop_with_savepoint(client, plan["job"], first["body"], deadline)
    if len(plan["requests"]) == 1:
        plan["job_now"] = None  # stopped: the user resubmits it from the savepoint
        return
    run = plan["requests"][1]
    run["body"]["savepointPath"] = plan["savepoint"]
    plan["job_now"] = client.request(run["method"], run["path"], run["body"])["jobid"]


def rescale(
    rest: str | FlinkRest,
    job: str,
    parallelism: int,
    *,
    dry_run: bool = False,
    wait: float = DEFAULT_WAIT,
    **options: Any,
) -> dict[str, Any]:
    """Rescale ``job``'s keyed vertices (or ``vertex``) to ``parallelism`` and wait until they run
    at it (see the module docstring); ``options`` are :func:`plan_rescale`'s. Returns the plan
    with ``done``, ``seconds``, ``job_now`` (the id it runs under, None if it was left stopped) and,
    for the savepoint way, ``savepoint``."""
    client = rest if isinstance(rest, FlinkRest) else FlinkRest(rest)
    plan = plan_rescale(client, job, parallelism, **options)
    if dry_run:
        return plan
    start = time.monotonic()
    if all(v["from"] == parallelism for v in plan["vertices"]):
        plan.update(done=True, seconds=0.0, job_now=plan["job"], requests=[])
        return plan
    deadline = start + wait
    _carry_out(client, plan, deadline)
    if plan["job_now"] is not None:
        _wait_at(client, plan["job_now"], plan["vertices"], parallelism, deadline)
    plan.update(done=True, seconds=round(time.monotonic() - start, 3))
    return plan


def _resubmission(plan: Mapping[str, Any]) -> str:
    p, savepoint = plan["parallelism"], plan.get("savepoint", _SAVEPOINT)
    body = json.dumps({"parallelism": p, "savepointPath": savepoint, "programArgsList": ["..."]})
    return (
        f"resubmit it at parallelism {p} from its savepoint: flink run --fromSavepoint {savepoint} "
        f"--parallelism {p} YOUR_JOB.jar [ARGS], or POST /jars/JAR_ID/run {body} (for a jar uploaded "
        "to the REST API, `albic flink rescale --jar JAR_ID --entry-class ... --program-args ...` does it)"
    )


def rescale_text(plan: Mapping[str, Any]) -> str:
    """What was done (or, for a dry run, would be done) as text."""
    names = ", ".join(f"{v['name']!r} (at {v['from']})" for v in plan["vertices"])
    how = {"adaptive": "the adaptive scheduler's resource requirements", "savepoint": "a savepoint"}
    head = f"job {plan['job']} {plan['name']!r}: vertices {names} to parallelism {plan['parallelism']} through {how[plan['mechanism']]}"
    if not plan["done"]:
        steps = [f"  {r['method']} {r['path']} {json.dumps(r['body'])}" for r in plan["requests"]]
        tail = (
            []
            if len(plan["requests"]) > 1 or plan["mechanism"] == "adaptive"
            else ["  then " + _resubmission(plan)]
        )
        return "\n".join([f"dry run, nothing sent: {head}, by", *steps, *tail])
    if not plan["requests"]:
        return f"{head}: it already runs at {plan['parallelism']}; nothing to do"
    if plan["job_now"] is None:
        return f"{head}: stopped with a savepoint at {plan['savepoint']}; " + _resubmission(plan)
    moved = "" if plan["job_now"] == plan["job"] else f" as job {plan['job_now']}"
    return f"{head}: runs at parallelism {plan['parallelism']}{moved} after {plan['seconds']:.1f} s"
