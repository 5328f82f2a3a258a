"""albic's prediction of a running Flink vertex's per-subtask load beside what Flink measured.

:func:`check_prediction` (``albic flink check``) takes the key-group weights albic computed from a
trace with Flink's hash (``hash = "flink"`` in the ``albic stats`` spec) and the vertex's actual
parallelism ``P`` and maximum parallelism ``N`` read from the job, and predicts each subtask's
share of the records: the statistics' ``K`` key groups folded onto ``N`` (``N`` must divide ``K``),
summed over stock Flink's ranges at ``P`` (:func:`albic.rollout.flink.subtask_weights`). Beside it
stands each subtask's measured share of ``numRecordsIn``; the largest difference, in percentage
points, is held against a tolerance.

Which weights: a statistics folder gives each key group's exact event count over all its periods
(:func:`albic.io.datasets.key_group_events`), so the prediction is in records too and, on a job that
read exactly the trace's events once, equals ``numRecordsIn`` record for record. A snapshot file
gives rates only: its key groups' ``arrival_rate`` (events per second) when every one has it, else
their ``load`` -- shares, no record counts.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from albic.base.errors import FlinkRestError, InvalidParameterError
from albic.core.flink_keys import flink_key_group_ranges
from albic.core.model import Snapshot
from albic.core.planner import Interval, check_params
from albic.io import read_snapshot, read_snapshots
from albic.io.datasets import key_group_events
from albic.rollout.flink import check_flink_hash, flink_key_groups, subtask_weights
from albic.rollout.flink_rest import (
    FlinkRest,
    as_client,
    find_vertex,
    keyed_vertices,
    running_job,
    vertex_metrics,
)

__all__ = [
    "CHECK_SCHEMA",
    "DEFAULT_TOLERANCE",
    "Statistics",
    "check_prediction",
    "check_table",
    "read_statistics",
]

CHECK_SCHEMA = "albic.flink-check/1"
#: Percentage points a subtask's measured share may differ from the predicted one.
DEFAULT_TOLERANCE = 1.0


def _chained(vertex: Mapping[str, Any]) -> list[str]:
    return [part.strip() for part in vertex["name"].split("->")]


def _operator(snapshot: Snapshot, vertex: Mapping[str, Any], given: str | None, where: str) -> str:
    """The statistics' operator to hold against the vertex: ``given``, else the one the vertex's
    chained operators name, else the statistics' only operator."""
    names = list(dict.fromkeys(kg.operator for kg in snapshot.key_groups))
    if given is not None:
        if given not in names:
            raise InvalidParameterError(
                f"parameter operator {given!r} is not in {where} (operators: {', '.join(names)})"
            )
        return given
    named = [n for n in names if n in _chained(vertex)]
    if len(named) == 1:
        return named[0]
    if len(names) == 1:
        return names[0]
    raise InvalidParameterError(
        f"{where} has operators {', '.join(names)} and vertex {vertex['name']!r} names "
        f"{'none' if not named else 'several'} of them; name one with parameter operator"
    )


@dataclass(frozen=True)
class Statistics:
    """What a prediction is made from: ``where`` it was read, its (first period's) ``snapshot``,
    and, from a statistics folder, each operator's events per key group (``None`` from a snapshot
    file, which has rates only)."""

    where: str
    snapshot: Snapshot
    events: Mapping[str, np.ndarray] | None


@dataclass(frozen=True)
class _Weights:
    """One operator's key-group weights, in key-group order, and their ``kind``: ``events``,
    ``arrival_rate`` or ``load``."""

    operator: str
    kind: str
    values: np.ndarray


def read_statistics(source: str | os.PathLike[str]) -> Statistics:
    """A statistics folder (its first period's snapshot and every key group's events) or a snapshot
    file, read and checked before Flink is asked anything."""
    path = Path(source)
    if path.is_dir():
        return Statistics(str(source), next(iter(read_snapshots(path))), key_group_events(path))
    return Statistics(str(source), read_snapshot(path), None)


def _weights(statistics: Statistics, vertex: Mapping[str, Any], given: str | None) -> _Weights:
    """The operator's key-group weights: events from a statistics folder, else the snapshot's rates."""
    snapshot, where = statistics.snapshot, statistics.where
    operator = _operator(snapshot, vertex, given, where)
    check_flink_hash(snapshot, [operator], "a prediction of Flink's subtasks", where)
    if statistics.events is not None:
        return _Weights(operator, "events", statistics.events[operator])
    numbers = flink_key_groups(snapshot, [kg.id for kg in snapshot.key_groups if kg.operator == operator])
    by_number = {numbers[kg.id][1]: kg for kg in snapshot.key_groups if kg.id in numbers}
    if sorted(by_number) != list(range(len(by_number))):
        raise InvalidParameterError(
            f"{where}: operator {operator!r} must have key groups with index 0 .. K-1"
        )
    groups = [by_number[g] for g in range(len(by_number))]
    rated = all(kg.arrival_rate is not None for kg in groups)
    return _Weights(
        operator,
        "arrival_rate" if rated else "load",
        np.array([kg.arrival_rate if rated else kg.load for kg in groups], dtype=float),
    )


def _measured(client: FlinkRest, job: str, vertex: Mapping[str, Any]) -> list[int]:
    rows = vertex_metrics(client, job, vertex["id"], int(vertex["parallelism"]))
    missing = [r["subtask"] for r in rows if r["records_in"] is None]
    if missing:
        raise FlinkRestError(
            f"vertex {vertex['name']!r} of job {job}: Flink reports no numRecordsIn for subtasks "
            f"{missing} yet; try again after Flink's metrics.fetcher.update-interval"
        )
    return [r["records_in"] for r in rows]


def _share(values: Any) -> np.ndarray:
    values = np.asarray(values, dtype=float)
    total = values.sum()
    return values / total if total > 0 else np.zeros_like(values)


def check_prediction(
    rest: str | FlinkRest,
    job: str,
    vertex: str,
    source: str | os.PathLike[str],
    *,
    operator: str | None = None,
    tolerance: float = DEFAULT_TOLERANCE,
) -> dict[str, Any]:
    """The predicted and measured share of each subtask of ``vertex`` (the document ``albic flink
    check --json`` prints); ``within`` says whether every difference is at most ``tolerance``
    percentage points."""
    check_params(
        "check_prediction()",
        {"tolerance": tolerance},
        {"tolerance": Interval(float, 0, note="percentage points")},
    )
    client = as_client(rest)
    statistics = read_statistics(source)
    details = running_job(client, job, "comparing the prediction with Flink's measured records")
    found = find_vertex(details, vertex)
    if found["id"] not in keyed_vertices(client, details["jid"]):
        raise FlinkRestError(
            f"vertex {found['name']!r} of job {details['jid']} is not fed by a keyed exchange: Flink does "
            "not route its records by key group, so key-group loads do not predict its subtasks; "
            "name a vertex after a keyBy"
        )
    weights = _weights(statistics, found, operator)
    n, p = int(found["maxParallelism"]), int(found["parallelism"])
    predicted = subtask_weights(weights.values, n, p)
    measured = _measured(client, details["jid"], found)
    difference = 100 * (_share(measured) - _share(predicted))
    worst = int(np.argmax(np.abs(difference)))
    exact = weights.kind == "events"
    return {
        "schema": CHECK_SCHEMA,
        "rest": client.url,
        "job": details["jid"],
        "vertex": {"id": found["id"], "name": found["name"], "parallelism": p, "max_parallelism": n},
        "source": str(source),
        "operator": weights.operator,
        "weights": weights.kind,
        "key_groups": int(weights.values.size),
        "tolerance": float(tolerance),
        "largest_difference": float(abs(difference[worst])),
        "largest_difference_subtask": worst,
        "within": bool(abs(difference[worst]) <= tolerance),
        "predicted_records": int(predicted.sum()) if exact else None,
        "measured_records": int(sum(measured)),
        "subtasks": _rows(predicted, measured, difference, n, p, exact),
    }


def _rows(
    predicted: Any, measured: list[int], difference: Any, n: int, p: int, exact: bool
) -> list[dict[str, Any]]:
    shares_p, shares_m = _share(predicted), _share(measured)
    return [
        {
            "subtask": i,
            "start": start,
            "end": end,
            "predicted_share": float(shares_p[i]),
            "measured_share": float(shares_m[i]),
            "difference": float(difference[i]),
            "predicted_records": int(predicted[i]) if exact else None,
            "measured_records": int(measured[i]),
        }
        for i, (start, end) in enumerate(flink_key_group_ranges(n, p))
    ]


def check_table(check: Mapping[str, Any]) -> str:
    """The check as text: one line per subtask, then the verdict."""
    v = check["vertex"]
    lines = [
        f"job {check['job']} vertex {v['name']!r}: parallelism {v['parallelism']}, maximum parallelism "
        f"{v['max_parallelism']}; predicted from operator {check['operator']!r} of {check['source']} "
        f"({check['key_groups']} key groups, {check['weights']})",
        f"{'subtask':>7}  {'key groups':>10}  {'predicted':>9}  {'measured':>8}  {'diff (pt)':>9}  "
        f"{'predicted records':>17}  {'measured records':>16}",
    ]
    for r in check["subtasks"]:
        records = "-" if r["predicted_records"] is None else f"{r['predicted_records']:,}"
        lines.append(
            f"{r['subtask']:>7}  {r['start']:>4} - {r['end']:<3}  {r['predicted_share']:>9.2%}  "
            f"{r['measured_share']:>8.2%}  {r['difference']:>+9.2f}  {records:>17}  {r['measured_records']:>16,}"
        )
    verdict = "within" if check["within"] else "beyond"
    total = (
        "" if check["predicted_records"] is None else f"predicted {check['predicted_records']:,} records, "
    )
    lines.append(
        f"largest difference {check['largest_difference']:.2f} points (subtask "
        f"{check['largest_difference_subtask']}), {verdict} the tolerance of {check['tolerance']:g}; "
        f"{total}measured {check['measured_records']:,}"
    )
    return "\n".join(lines)
