"""A running Flink job, read through Flink's own REST API: its vertices and per-subtask metrics.

:func:`job_status` (``albic flink status``) reads a job's vertices -- name, parallelism, maximum
parallelism, whether a keyed (hash) exchange feeds it -- and each subtask's ``numRecordsIn`` and
``busyTimeMsPerSecond`` from ``/jobs/<id>/vertices/<vid>/metrics?get=<subtask>.<metric>``. Flink's
web server caches metrics for ``metrics.fetcher.update-interval`` (10 s by default), so a value
can be that old; a metric Flink has not fetched yet is retried for a few seconds and then reported
as ``None``, never as 0.

:class:`FlinkRest` is the one HTTP client of the Flink commands (check and rescale use it too;
:func:`as_client` turns an address into one): JSON in and out, and every failure as one
:class:`~albic.base.errors.FlinkRestError` line naming the address, the object and the rule -- an
address that does not answer, a job id that is not Flink's form or not on the cluster, a job that is
not running, a vertex the job does not have -- with Flink's own reason cut to its first line (Flink
answers errors with a Java stack trace). :func:`poll` waits for what must come (a savepoint,
a rescaled job): a read repeated until what it waits for holds or a :class:`Deadline` passes, then
an error naming what it waited for and what it last saw.
"""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from albic.base.errors import FlinkRestError

__all__ = [
    "STATUS_SCHEMA",
    "DEFAULT_TIMEOUT",
    "POLL_EVERY",
    "FlinkRest",
    "as_client",
    "Deadline",
    "poll",
    "job_status",
    "status_table",
    "find_vertex",
    "running_job",
    "vertex_metrics",
    "keyed_vertices",
    "flink_reason",
]

STATUS_SCHEMA = "albic.flink-status/1"
#: Seconds one REST request may take.
DEFAULT_TIMEOUT = 10.0
#: Seconds between two reads of what albic waits for (metrics, a savepoint, a rescaled job).
POLL_EVERY = 0.5
# Flink's JobID and JobVertexID: 16 bytes in hexadecimal.
_FLINK_ID = re.compile(r"^[0-9a-fA-F]{32}$")
# Subtasks per metrics request: a request names every metric of every subtask in its URL.
_SUBTASKS_PER_REQUEST = 64
_METRICS = {"numRecordsIn": "records_in", "busyTimeMsPerSecond": "busy_ms_per_second"}
# A Java class name at the start of Flink's error lines ("org.apache...NotFoundException: ").
_JAVA_CLASS = re.compile(r"^(?:[A-Za-z_$][\w$]*\.)+[A-Za-z_$][\w$]*(?:Exception|Error|Throwable):\s*")


def flink_reason(body: str) -> str:
    """The first line of Flink's error answer, without its Java class name.

    >>> flink_reason('{"errors": ["org.apache.flink.runtime.rest.NotFoundException: Job 1 not found\\\\n\\\\tat x"]}')
    'Job 1 not found'
    """
    try:
        errors = json.loads(body).get("errors") or [body]
    except (ValueError, AttributeError):
        errors = [body]
    first = str(errors[0]).strip().splitlines() or ["(no reason given)"]
    return _JAVA_CLASS.sub("", first[0]).strip()


class FlinkRest:
    """Flink's REST API at ``url`` (``http://host:port``, Flink's ``rest.address`` and ``rest.port``)."""

    def __init__(self, url: str, timeout: float = DEFAULT_TIMEOUT) -> None:
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise FlinkRestError(
                f"REST address {url!r} is not the address of Flink's REST API: it must be "
                "http://HOST:PORT (Flink's rest.address and rest.port, e.g. http://localhost:8081)"
            )
        self.url = url.rstrip("/")
        self.timeout = timeout

    def get(self, path: str) -> Any:
        return self.request("GET", path)

    def request(self, method: str, path: str, body: Mapping[str, Any] | None = None) -> Any:
        """The JSON answer to ``method path``; :class:`FlinkRestError` (with ``status``) otherwise."""
        data = None if body is None else json.dumps(body).encode("utf-8")
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        call = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(call, timeout=self.timeout) as answer:
                text = answer.read().decode("utf-8")
        except urllib.error.HTTPError as err:
            reason = flink_reason(err.read().decode("utf-8", "replace"))
            raise FlinkRestError(
                f"Flink at {self.url} refused {method} {path} (HTTP {err.code}): {reason}", status=err.code
            ) from None
        except (urllib.error.URLError, OSError) as err:
            cause = getattr(err, "reason", err)
            raise FlinkRestError(
                f"Flink's REST API at {self.url} does not answer ({cause}): start the cluster, or give "
                "the address Flink's rest.address and rest.port name (e.g. http://localhost:8081)"
            ) from None
        return json.loads(text) if text.strip() else {}

    def job(self, job: str) -> dict[str, Any]:
        """``/jobs/<job>``: the job's details, or a one-line error for an id Flink has not."""
        if not isinstance(job, str) or not _FLINK_ID.match(job):
            raise FlinkRestError(
                f"job id {job!r} is not a Flink job id (32 hexadecimal characters, as Flink's web UI "
                "lists them)"
            )
        try:
            return self.get(f"/jobs/{job}")
        except FlinkRestError as err:
            if err.status != 404:
                raise
            raise FlinkRestError(
                f"job {job} is not on the Flink cluster at {self.url} (its jobs: {self.job_list()}); "
                "give the id of one of them",
                status=404,
            ) from None

    def job_list(self, most: int = 5) -> str:
        """The cluster's jobs for an error message: running ones first, at most ``most``."""
        jobs = sorted(self.get("/jobs/overview").get("jobs", []), key=lambda j: j["state"] != "RUNNING")
        shown = ", ".join(f"{j['jid']} {j['state']} {j['name']!r}" for j in jobs[:most]) or "none"
        return shown + (f" and {len(jobs) - most} more" if len(jobs) > most else "")


def as_client(rest: str | FlinkRest) -> FlinkRest:
    """``rest`` as a client: a :class:`FlinkRest` as it is, an address (``http://host:port``)
    through a new one; what every function here that talks to Flink takes.

    >>> as_client("http://localhost:8081/").url
    'http://localhost:8081'
    """
    return rest if isinstance(rest, FlinkRest) else FlinkRest(rest)


@dataclass(frozen=True)
class Deadline:
    """When waiting stops (``at``, a :func:`time.monotonic` reading) and the wait it ends
    (``seconds``, for messages).

    >>> Deadline.after(60.0).passed()
    False
    """

    at: float
    seconds: float

    @classmethod
    def after(cls, seconds: float) -> Deadline:
        return cls(time.monotonic() + seconds, seconds)

    def passed(self) -> bool:
        return time.monotonic() >= self.at


_T = TypeVar("_T")


def poll(
    read: Callable[[], _T],
    ready: Callable[[_T], bool],
    *,
    deadline: Deadline,
    awaiting: str,
    state: Callable[[_T], str],
    hopeless: Callable[[_T], bool] = lambda value: False,
    every: float = POLL_EVERY,
) -> _T:
    """``read()`` every ``every`` seconds until ``ready`` holds of what it read, which is
    returned. Past ``deadline``, or once ``hopeless`` holds (a job that failed), a
    :class:`FlinkRestError` says ``state`` of the last reading and that albic gave up waiting for
    ``awaiting`` (e.g. "job 0123... to run at parallelism 5").

    >>> poll(iter([1, 2, 3]).__next__, lambda n: n == 3, deadline=Deadline.after(10),
    ...      awaiting="3", state=str, every=0)
    3
    """
    while True:
        value = read()
        if ready(value):
            return value
        expired = deadline.passed()
        if expired or hopeless(value):
            waited = f" after {deadline.seconds:g} s" if expired else ""
            raise FlinkRestError(f"{state(value)}; gave up waiting{waited} for {awaiting}")
        time.sleep(every)


def running_job(client: FlinkRest, job: str | None, what: str) -> dict[str, Any]:
    """The details of ``job`` (else of the only running job), checked to be RUNNING: ``what``
    (e.g. "reading metrics") names what needs it in the error."""
    if job is None:
        jobs = [j for j in client.get("/jobs/overview").get("jobs", []) if j["state"] == "RUNNING"]
        if len(jobs) != 1:
            listed = ", ".join(f"{j['jid']} {j['name']!r}" for j in jobs) or "none"
            raise FlinkRestError(
                f"{len(jobs)} jobs are running on the Flink cluster at {client.url} ({listed}); "
                "name one with parameter job"
            )
        job = jobs[0]["jid"]
    details = client.job(job)
    if details.get("state") != "RUNNING":
        raise FlinkRestError(
            f"job {job} ({details.get('name')!r}) is {details.get('state')}, not RUNNING: {what} "
            "needs a running job"
        )
    return details


def find_vertex(details: Mapping[str, Any], name: str) -> dict[str, Any]:
    """The vertex of job ``details`` that ``name`` names: its id, its whole name, or one of the
    operators chained into it (Flink names a chain ``a -> b``)."""
    vertices = details["vertices"]
    found = [
        v
        for v in vertices
        if name in (v["id"], v["name"]) or name in [p.strip() for p in v["name"].split("->")]
    ]
    if len(found) == 1:
        return found[0]
    listed = ", ".join(repr(v["name"]) for v in vertices)
    rule = (
        "names more than one of them; give the vertex id"
        if found
        else "is none of them; give a vertex's name, one of its chained operators' names or its id"
    )
    raise FlinkRestError(f"vertex {name!r}: job {details['jid']} has vertices {listed}, and {name!r} {rule}")


def keyed_vertices(client: FlinkRest, job: str) -> set[str]:
    """The ids of the vertices fed by a keyed exchange (Flink's plan ships their input by HASH)."""
    nodes = client.get(f"/jobs/{job}/plan").get("plan", {}).get("nodes", [])
    return {n["id"] for n in nodes if any(i.get("ship_strategy") == "HASH" for i in n.get("inputs", []))}


def _number(text: Any) -> float | None:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if value == value else None  # Flink reports NaN before the first measurement


def _metrics_once(client: FlinkRest, job: str, vertex: str, parallelism: int) -> dict[str, float]:
    values: dict[str, float] = {}
    for first in range(0, parallelism, _SUBTASKS_PER_REQUEST):
        wanted = [
            f"{i}.{m}"
            for i in range(first, min(parallelism, first + _SUBTASKS_PER_REQUEST))
            for m in _METRICS
        ]
        answer = client.get(f"/jobs/{job}/vertices/{vertex}/metrics?get={','.join(wanted)}")
        values.update({m["id"]: v for m in answer if (v := _number(m.get("value"))) is not None})
    return values


def vertex_metrics(
    client: FlinkRest, job: str, vertex: str, parallelism: int, *, wait: float = 5.0
) -> list[dict[str, Any]]:
    """Each subtask's ``records_in`` and ``busy_ms_per_second``, waiting up to ``wait`` seconds for
    Flink's web server to fetch a metric it does not hold yet (then ``None``)."""
    deadline = Deadline.after(wait)
    values = _metrics_once(client, job, vertex, parallelism)
    while len(values) < parallelism * len(_METRICS) and not deadline.passed():
        time.sleep(POLL_EVERY)
        values = _metrics_once(client, job, vertex, parallelism)
    rows = []
    for i in range(parallelism):
        row: dict[str, Any] = {"subtask": i}
        for metric, field in _METRICS.items():
            value = values.get(f"{i}.{metric}")
            row[field] = None if value is None else (int(value) if field == "records_in" else value)
        rows.append(row)
    return rows


def _vertex_row(client: FlinkRest, job: str, vertex: Mapping[str, Any], keyed: set[str]) -> dict[str, Any]:
    subtasks = vertex_metrics(client, job, vertex["id"], int(vertex["parallelism"]))
    counts = [s["records_in"] for s in subtasks]
    return {
        "id": vertex["id"],
        "name": vertex["name"],
        "status": vertex["status"],
        "parallelism": int(vertex["parallelism"]),
        "max_parallelism": int(vertex["maxParallelism"]),
        "keyed": vertex["id"] in keyed,
        "records_in": None if None in counts else sum(counts),
        "subtasks": subtasks,
    }


def job_status(rest: str | FlinkRest, job: str | None = None) -> dict[str, Any]:
    """A running job's vertices with their parallelism, maximum parallelism and per-subtask records
    in and busy time (the document ``albic flink status --json`` prints; ``job`` defaults to the
    only running job)."""
    client = as_client(rest)
    details = running_job(client, job, "reading its metrics")
    keyed = keyed_vertices(client, details["jid"])
    return {
        "schema": STATUS_SCHEMA,
        "rest": client.url,
        "job": {
            "id": details["jid"],
            "name": details["name"],
            "state": details["state"],
            "scheduler": details.get("schedulerType"),
            "max_parallelism": details.get("maxParallelism"),
        },
        "vertices": [_vertex_row(client, details["jid"], v, keyed) for v in details["vertices"]],
    }


def _cell(value: Any, form: str) -> str:
    return "-" if value is None else format(value, form)


def status_table(status: Mapping[str, Any]) -> str:
    """The status as text: one block per vertex, one line per subtask."""
    job = status["job"]
    lines = [
        f"job {job['id']} {job['name']!r}: {job['state']}, {job['scheduler']} scheduler, at {status['rest']}"
    ]
    for v in status["vertices"]:
        share = _shares([s["records_in"] for s in v["subtasks"]])
        lines.append(
            f"vertex {v['name']!r} ({v['id']}): parallelism {v['parallelism']}, maximum parallelism "
            f"{v['max_parallelism']}{', keyed' if v['keyed'] else ''}, {_cell(v['records_in'], ',')} records in"
        )
        lines.append(f"  {'subtask':>7}  {'records in':>12}  {'share':>7}  {'busy ms/s':>9}")
        for s, part in zip(v["subtasks"], share):
            lines.append(
                f"  {s['subtask']:>7}  {_cell(s['records_in'], ','):>12}  {_cell(part, '.2%'):>7}  "
                f"{_cell(s['busy_ms_per_second'], '.0f'):>9}"
            )
    return "\n".join(lines)


def _shares(counts: Sequence[int | None]) -> list[float | None]:
    known = [c for c in counts if c is not None]
    total = sum(known)
    return [None if c is None or total == 0 else c / total for c in counts]
