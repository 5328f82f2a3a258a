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
  given as a :class:`Resubmission` (the jar's id under ``/jars``, its entry class and program
  arguments, which Flink does not keep) -- ``POST /jars/<jar>/run`` at parallelism ``P`` from that
  savepoint. Without one the job stays stopped and the resubmission is returned to print. The
  job-level parallelism ``P`` applies to every vertex that does not set its own.

Either way it then polls ``/jobs/<id>`` until every target vertex runs at ``P`` with all its subtasks
RUNNING, and says how long that took; ``dry_run`` reads the job and returns the requests it would
send. ``via="auto"`` picks adaptive when the job runs under the adaptive scheduler, else savepoint.
:func:`plan_rescale` returns the :class:`RescalePlan`, :func:`rescale` a :class:`RescaleResult`;
both are frozen, and ``document()`` gives the JSON ``albic flink rescale --json`` prints.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from albic.base.errors import FlinkRestError, InvalidParameterError
from albic.core.planner import Interval, Options, check_params
from albic.io.reader import read_input_json
from albic.rollout.flink import ADVICE_SCHEMA
from albic.rollout.flink_rest import (
    Deadline,
    FlinkRest,
    as_client,
    find_vertex,
    keyed_vertices,
    poll,
    running_job,
)

__all__ = [
    "RESCALE_SCHEMA",
    "VIA",
    "DEFAULT_WAIT",
    "Resubmission",
    "Request",
    "Target",
    "RescalePlan",
    "RescaleResult",
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
# What a dry run shows where the run request will name the savepoint the stop makes.
_SAVEPOINT = "<the savepoint>"
_ENDED = ("FAILED", "CANCELED", "FINISHED")


@dataclass(frozen=True)
class Resubmission:
    """How to submit a job again from its savepoint, which Flink does not keep for a job submitted
    through the REST API: its ``jar`` (the id under ``/jars``), ``entry_class`` and
    ``program_args``.

    >>> Resubmission("9f2c_job.jar", "org.example.Job", ("tailnum", "5000")).run_body(3, "s")["parallelism"]
    3
    """

    jar: str
    entry_class: str | None = None
    program_args: Sequence[str] = ()

    def run_body(self, parallelism: int, savepoint: str) -> dict[str, Any]:
        """The body of ``POST /jars/<jar>/run`` at ``parallelism`` from ``savepoint``."""
        body: dict[str, Any] = {
            "parallelism": parallelism,
            "savepointPath": savepoint,
            "programArgsList": list(self.program_args),
        }
        if self.entry_class is not None:
            body["entryClass"] = self.entry_class
        return body

    def run(self, parallelism: int, savepoint: str) -> Request:
        return Request("POST", f"/jars/{self.jar}/run", self.run_body(parallelism, savepoint))


@dataclass(frozen=True)
class Request:
    """One request to Flink's REST API."""

    method: str
    path: str
    body: Mapping[str, Any]

    def send(self, client: FlinkRest) -> Any:
        return client.request(self.method, self.path, self.body)

    def document(self) -> dict[str, Any]:
        return {"method": self.method, "path": self.path, "body": self.body}


@dataclass(frozen=True)
class Target:
    """A vertex to rescale: its id, its name and the parallelism it ran at (``from`` in JSON)."""

    id: str
    name: str
    parallelism: int

    def document(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "from": self.parallelism}


@dataclass(frozen=True)
class RescalePlan:
    """What :func:`rescale` would do to job ``job`` (``name``, under Flink's ``scheduler``) at
    ``rest``: bring its target ``vertices`` to ``parallelism`` by ``mechanism`` (``adaptive`` or
    ``savepoint``) with ``requests``, and resubmit it from the savepoint with ``resubmit``."""

    rest: str
    job: str
    name: str
    scheduler: str | None
    mechanism: str
    parallelism: int
    vertices: tuple[Target, ...]
    requests: tuple[Request, ...]
    resubmit: Resubmission | None = None

    def document(self) -> dict[str, Any]:
        """The plan as ``albic flink rescale --dry-run --json`` prints it."""
        return {
            "schema": RESCALE_SCHEMA,
            "rest": self.rest,
            "job": self.job,
            "name": self.name,
            "scheduler": self.scheduler,
            "mechanism": self.mechanism,
            "parallelism": self.parallelism,
            "vertices": [v.document() for v in self.vertices],
            "requests": [r.document() for r in self.requests],
            "done": False,
        }


@dataclass(frozen=True)
class RescaleResult:
    """A rescale: its ``plan``; whether it was ``done`` (False for a dry run); the ``requests`` sent
    (the run request names the actual savepoint); the ``seconds`` until the job ran at the new
    parallelism; ``job_now``, the id it runs under (None: left stopped, to resubmit by hand); and
    the ``savepoint`` it was stopped with, for the savepoint way."""

    plan: RescalePlan
    done: bool = False
    requests: tuple[Request, ...] = ()
    seconds: float | None = None
    job_now: str | None = None
    savepoint: str | None = None

    def document(self) -> dict[str, Any]:
        """The result as ``albic flink rescale --json`` prints it."""
        document = self.plan.document()
        if not self.done:
            return document
        document["requests"] = [r.document() for r in self.requests]
        document["done"] = True
        if self.savepoint is not None:
            document["savepoint"] = self.savepoint
        return {**document, "job_now": self.job_now, "seconds": self.seconds}


def advised_parallelism(advice: Mapping[str, Any] | str | os.PathLike[str]) -> int:
    """ADVICE.json's ``recommended`` parallelism (``albic flink advise``), or an error with its reason."""
    where = "the advice" if isinstance(advice, Mapping) else str(advice)
    document = advice if isinstance(advice, Mapping) else read_input_json(Path(advice), "advice file")
    if not isinstance(document, Mapping) or document.get("schema") != ADVICE_SCHEMA:
        raise InvalidParameterError(f"{where} is not an advice file: its schema is not {ADVICE_SCHEMA!r}")
    if document.get("recommended") is None:
        raise InvalidParameterError(
            f"{where} recommends no parallelism ({document.get('reason')}); give parameter parallelism"
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
                "rescale with parameter vertex"
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
    adaptive = details.get("schedulerType") == "Adaptive"
    if via == "adaptive" and not adaptive:
        raise FlinkRestError(
            f"job {details['jid']} runs under the {details.get('schedulerType')} scheduler: Flink's "
            "resource-requirements endpoint rescales only under jobmanager.scheduler: adaptive "
            "(rescale it with parameter via 'savepoint')"
        )
    return "adaptive" if via == "adaptive" or (via == "auto" and adaptive) else "savepoint"


def _requirements(
    client: FlinkRest, job: str, targets: Sequence[Mapping[str, Any]], p: int
) -> dict[str, Any]:
    """The job's resource requirements with each target's upper bound at ``p`` (its lower bound
    kept, lowered to ``p`` if above)."""
    wanted = client.get(f"/jobs/{job}/resource-requirements")
    ids = {v["id"] for v in targets}
    return {vid: _bounded(needs, p) if vid in ids else needs for vid, needs in wanted.items()}


def _bounded(needs: Mapping[str, Any], p: int) -> dict[str, Any]:
    bounds = needs["parallelism"]
    lower = min(int(bounds.get("lowerBound", 1)), p)
    return {**needs, "parallelism": {**bounds, "upperBound": p, "lowerBound": lower}}


def plan_rescale(
    rest: str | FlinkRest,
    job: str,
    parallelism: int,
    *,
    vertex: str | None = None,
    via: str = "auto",
    resubmit: Resubmission | None = None,
    savepoint_dir: str | None = None,
) -> RescalePlan:
    """What :func:`rescale` would do: the mechanism, the target vertices and the requests;
    ``savepoint_dir`` is where a savepoint goes (default: Flink's ``state.savepoints.dir``)."""
    check_params(
        "plan_rescale()",
        {"parallelism": parallelism, "via": via},
        {"parallelism": Interval(int, 1), "via": Options(VIA)},
    )
    client = as_client(rest)
    details = running_job(client, job, "rescaling")
    targets = _targets(client, details, vertex, parallelism)
    mechanism = choose_mechanism(details, via)
    job = details["jid"]
    if mechanism == "adaptive":
        wanted = _requirements(client, job, targets, parallelism)
        requests = [Request("PUT", f"/jobs/{job}/resource-requirements", wanted)]
    else:
        stop = {"drain": False, **({"targetDirectory": savepoint_dir} if savepoint_dir else {})}
        requests = [Request("POST", f"/jobs/{job}/stop", stop)]
        if resubmit is not None:
            requests.append(resubmit.run(parallelism, _SAVEPOINT))
    return RescalePlan(
        rest=client.url,
        job=job,
        name=details["name"],
        scheduler=details.get("schedulerType"),
        mechanism=mechanism,
        parallelism=parallelism,
        vertices=tuple(Target(v["id"], v["name"], int(v["parallelism"])) for v in targets),
        requests=tuple(requests),
        resubmit=resubmit if mechanism == "savepoint" else None,
    )


def _stop_with_savepoint(client: FlinkRest, job: str, stop: Request, deadline: Deadline) -> str:
    request = stop.send(client)["request-id"]
    answer = poll(
        lambda: client.get(f"/jobs/{job}/savepoints/{request}"),
        lambda got: got.get("status", {}).get("id") == "COMPLETED",
        deadline=deadline,
        awaiting=f"job {job} to stop with a savepoint",
        state=lambda got: (
            f"job {job}: the savepoint is {got.get('status', {}).get('id')} and may still complete"
        ),
    )
    operation = answer.get("operation") or {}
    if "location" in operation:
        return operation["location"]
    cause = operation.get("failure-cause", {}).get("stack-trace", "no reason given")
    raise FlinkRestError(f"job {job}: stopping with a savepoint failed: {cause.strip().splitlines()[0]}")


def _vertex_now(details: Mapping[str, Any], target: Target) -> Mapping[str, Any] | None:
    by_id = {v["id"]: v for v in details["vertices"]}
    return by_id.get(target.id) or next((v for v in details["vertices"] if v["name"] == target.name), None)


def _at(details: Mapping[str, Any], targets: Sequence[Target], p: int) -> bool:
    now = [_vertex_now(details, t) for t in targets]
    return details.get("state") == "RUNNING" and all(
        v is not None and int(v["parallelism"]) == p and v["tasks"].get("RUNNING") == p for v in now
    )


def _lagging(client: FlinkRest, details: Mapping[str, Any], targets: Sequence[Target], p: int) -> str:
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


def _wait_at(client: FlinkRest, job: str, targets: Sequence[Target], p: int, deadline: Deadline) -> None:
    poll(
        lambda: client.job(job),
        lambda details: _at(details, targets, p),
        deadline=deadline,
        awaiting=f"job {job} to run at parallelism {p}",
        state=lambda details: _lagging(client, details, targets, p),
        hopeless=lambda details: details.get("state") in _ENDED,
    )


def _carry_out(client: FlinkRest, plan: RescalePlan, deadline: Deadline) -> RescaleResult:
    """The plan's requests sent: the result without its seconds."""
    first = plan.requests[0]
    if plan.mechanism == "adaptive":
        first.send(client)
        return RescaleResult(plan, done=True, requests=plan.requests, job_now=plan.job)
    savepoint = _stop_with_savepoint(client, plan.job, first, deadline)
    if plan.resubmit is None:  # stopped: the user resubmits it from the savepoint
        return RescaleResult(plan, done=True, requests=plan.requests, savepoint=savepoint)
    run = plan.resubmit.run(plan.parallelism, savepoint)
    job_now = run.send(client)["jobid"]
    return RescaleResult(plan, done=True, requests=(first, run), job_now=job_now, savepoint=savepoint)


def rescale(
    rest: str | FlinkRest,
    job: str,
    parallelism: int,
    *,
    dry_run: bool = False,
    wait: float = DEFAULT_WAIT,
    **options: Any,
) -> RescaleResult:
    """Rescale ``job``'s keyed vertices (or ``vertex``) to ``parallelism`` and wait until they run
    at it (see the module docstring); ``options`` are :func:`plan_rescale`'s. A dry run returns
    the plan not done."""
    client = as_client(rest)
    plan = plan_rescale(client, job, parallelism, **options)
    if dry_run:
        return RescaleResult(plan)
    start = time.monotonic()
    if all(v.parallelism == parallelism for v in plan.vertices):
        return RescaleResult(plan, done=True, seconds=0.0, job_now=plan.job)
    deadline = Deadline(start + wait, wait)
    result = _carry_out(client, plan, deadline)
    if result.job_now is not None:
        _wait_at(client, result.job_now, plan.vertices, parallelism, deadline)
    return replace(result, seconds=round(time.monotonic() - start, 3))


def _resubmission(result: RescaleResult) -> str:
    p, savepoint = result.plan.parallelism, result.savepoint or _SAVEPOINT
    body = json.dumps({"parallelism": p, "savepointPath": savepoint, "programArgsList": ["..."]})
    flink_run = f"flink run --fromSavepoint {savepoint} --parallelism {p} YOUR_JOB.jar [ARGS]"
    return (
        f"resubmit it at parallelism {p} from its savepoint: {flink_run}, or POST /jars/JAR_ID/run "
        f"{body} (for a jar uploaded to the REST API, a rescale given the jar's id, entry class and "
        "program arguments resubmits it)"
    )


def rescale_text(result: RescaleResult) -> str:
    """What was done (or, for a dry run, would be done) as text."""
    plan = result.plan
    names = ", ".join(f"{v.name!r} (at {v.parallelism})" for v in plan.vertices)
    how = {"adaptive": "the adaptive scheduler's resource requirements", "savepoint": "a savepoint"}
    head = f"job {plan.job} {plan.name!r}: vertices {names} to parallelism {plan.parallelism} through {how[plan.mechanism]}"
    if not result.done:
        steps = [f"  {r.method} {r.path} {json.dumps(r.body)}" for r in plan.requests]
        by_hand = plan.mechanism == "savepoint" and plan.resubmit is None
        tail = ["  then " + _resubmission(result)] if by_hand else []
        return "\n".join([f"dry run, nothing sent: {head}, by", *steps, *tail])
    if not result.requests:
        return f"{head}: it already runs at {plan.parallelism}; nothing to do"
    if result.job_now is None:
        return f"{head}: stopped with a savepoint at {result.savepoint}; " + _resubmission(result)
    moved = "" if result.job_now == plan.job else f" as job {result.job_now}"
    return f"{head}: runs at parallelism {plan.parallelism}{moved} after {result.seconds:.1f} s"
