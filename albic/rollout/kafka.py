"""Kafka partition replicas as key groups: import from ``kafka-log-dirs.sh``, export for
``kafka-reassign-partitions.sh``.

A Kafka partition with replication factor ``r`` is ``r`` key groups, one per replica, that must sit
on distinct brokers: they share a ``spread`` value (the partition, ``topic-partition``), which the
validator checks and the planners tagged ``spread`` (``milp``, ``albic``, ``flux``) honour.

Reading chosen here:

- Nodes are brokers (node id = broker id as text). ``remove`` marks brokers ``removing``; ``add``
  adds empty brokers.
- Key group ``topic-partition/r`` is replica ``r`` of the partition: position ``r`` of its replica
  list, so ``r = 0`` is the preferred leader. ``kafka-log-dirs.sh`` does not say the replica order;
  it is taken from ``current`` (a ``kafka-reassign-partitions.sh`` file, e.g. the "current
  partition replica assignment" that the tool prints) when given, else ascending broker id.
- ``state_size`` is the replica's size in bytes (what a reassignment copies). ``load`` is the
  partition's rate from ``rates`` (a CSV ``topic,partition,rate``, e.g. bytes in per second; every
  replica carries it, as followers fetch what the leader receives), or, without rates, its size
  (then the planners balance disk usage). ``operator`` is the topic.
- A replica listed with ``isFuture: true`` (a copy being moved between log directories of one
  broker) is skipped; a log directory reported with an error stops the import.

Export: for every partition with a moved replica, its new replica list in the same positions, so
the order -- the preferred leader first -- is kept except where a replica's broker moved.

Example
-------
>>> log_dirs = {"version": 1, "brokers": [
...     {"broker": b, "logDirs": [{"logDir": "/data", "error": None, "partitions": [
...         {"partition": "t-0", "size": 100, "offsetLag": 0, "isFuture": False}]}]}
...     for b in (1, 2)]}
>>> snap = snapshot_from_log_dirs(log_dirs, remove=["2"], add=["3"])
>>> [(k.id, k.spread, snap.assignment[k.id]) for k in snap.key_groups]
[('t-0/0', 't-0', '1'), ('t-0/1', 't-0', '2')]
>>> reassignment({"t-0/0": "1", "t-0/1": "3"}, {"t-0/0": "1", "t-0/1": "2"})
{'version': 1, 'partitions': [{'topic': 't', 'partition': 0, 'replicas': [1, 3]}]}
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from albic.base.errors import InvalidSnapshotError
from albic.core.model import KeyGroup, Node, Snapshot

__all__ = [
    "snapshot_from_log_dirs",
    "read_log_dirs",
    "read_rates",
    "read_current",
    "reassignment",
    "replica_id",
    "parse_replica_id",
]


def replica_id(topic: str, partition: int, position: int) -> str:
    """The key-group id of replica ``position`` of a partition: ``topic-partition/position``."""
    return f"{topic}-{partition}/{position}"


def parse_replica_id(kid: str) -> tuple[str, int, int]:
    """``"orders-3/1"`` -> ``("orders", 3, 1)``; :class:`InvalidSnapshotError` if not of that form."""
    name, slash, position = kid.rpartition("/")
    topic, dash, partition = name.rpartition("-")
    if not (slash and dash and topic and partition.isdigit() and position.isdigit()):
        raise InvalidSnapshotError(
            f"key group {kid!r} is not a Kafka replica id TOPIC-PARTITION/POSITION "
            "(the form 'albic kafka import' writes)"
        )
    return topic, int(partition), int(position)


def _split_partition(name: Any, where: str) -> tuple[str, int]:
    topic, dash, number = str(name).rpartition("-")
    if not isinstance(name, str) or not dash or not topic or not number.isdigit():
        raise InvalidSnapshotError(f"{where}: partition {name!r} is not TOPIC-NUMBER")
    return topic, int(number)


def read_log_dirs(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The JSON document of a ``kafka-log-dirs.sh --describe`` output file.

    The tool prints two lines of text ("Querying brokers ...", "Received log directory ...")
    before the JSON; every line that is not JSON is skipped.
    """
    text = Path(path).read_text(encoding="utf-8")
    for line in text.splitlines():
        if line.lstrip().startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError as err:
                raise InvalidSnapshotError(f"not valid JSON: {err.msg}", subject=f"in {path}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise InvalidSnapshotError(
            "no JSON document found (expected the output of kafka-log-dirs.sh --describe)",
            subject=f"in {path}",
        ) from None


def read_rates(path: str | os.PathLike[str]) -> dict[tuple[str, int], float]:
    """A CSV file with the columns ``topic,partition,rate`` -> ``{(topic, partition): rate}``."""
    rates: dict[tuple[str, int], float] = {}
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        missing = {"topic", "partition", "rate"} - set(reader.fieldnames or [])
        if missing:
            raise InvalidSnapshotError(
                f"lacks the column(s) {sorted(missing)}; expected topic,partition,rate",
                subject=f"rates file {path}",
            )
        for line, row in enumerate(reader, start=2):
            try:
                key, rate = (row["topic"], int(row["partition"])), float(row["rate"])
            except (TypeError, ValueError):
                raise InvalidSnapshotError(
                    f"line {line}: {row} has a partition that is not an int or a rate that is not a number",
                    subject=f"rates file {path}",
                ) from None
            if key in rates:
                raise InvalidSnapshotError(
                    f"line {line}: partition {key[0]}-{key[1]} appears twice", subject=f"rates file {path}"
                )
            rates[key] = rate
    return rates


def read_current(path: str | os.PathLike[str]) -> dict[tuple[str, int], list[int]]:
    """A ``kafka-reassign-partitions.sh`` file -> ``{(topic, partition): [broker, ...]}``."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    try:
        return {
            (p["topic"], int(p["partition"])): [int(b) for b in p["replicas"]] for p in data["partitions"]
        }
    except (KeyError, TypeError, ValueError):
        raise InvalidSnapshotError(
            'expected {"version": 1, "partitions": [{"topic", "partition", "replicas"}, ...]}',
            subject=f"replica assignment file {path}",
        ) from None


def snapshot_from_log_dirs(
    log_dirs: Mapping[str, Any],
    *,
    rates: Mapping[tuple[str, int], float] | None = None,
    current: Mapping[tuple[str, int], list[int]] | None = None,
    remove: Iterable[str] = (),
    add: Iterable[str] = (),
    period: str | None = None,
) -> Snapshot:
    """A snapshot with one key group per replica (see the module docstring for the reading)."""
    brokers = log_dirs.get("brokers") if isinstance(log_dirs, Mapping) else None
    if not isinstance(brokers, list) or not brokers:
        raise InvalidSnapshotError('the log-dirs document has no "brokers" list')
    holders: dict[tuple[str, int], dict[int, float]] = {}
    broker_ids: list[int] = []
    for b, broker in enumerate(brokers):
        bid = broker.get("broker") if isinstance(broker, Mapping) else None
        if isinstance(bid, bool) or not isinstance(bid, int):
            raise InvalidSnapshotError(f"brokers[{b}] has no integer 'broker' id")
        broker_ids.append(bid)
        for d in broker.get("logDirs") or []:
            if d.get("error"):
                raise InvalidSnapshotError(
                    f"broker {bid}: log directory {d.get('logDir')!r} reports error "
                    f"{d['error']!r}; its partitions are unknown, so the cluster cannot be planned"
                )
            for p in d.get("partitions") or []:
                if p.get("isFuture"):
                    continue
                key = _split_partition(p.get("partition"), f"broker {bid}")
                size = p.get("size")
                if isinstance(size, bool) or not isinstance(size, (int, float)) or size < 0:
                    raise InvalidSnapshotError(
                        f"broker {bid}: partition {p.get('partition')!r} has "
                        f"size {size!r}, must be a number >= 0"
                    )
                holders.setdefault(key, {})[bid] = float(size)
    remove, add = [str(r) for r in remove], [str(a) for a in add]
    known = {str(b) for b in broker_ids}
    problems = [
        f"--remove {r}: no broker {r} in the log dirs (brokers: {', '.join(sorted(known, key=int))})"
        for r in remove
        if r not in known
    ]
    problems += [f"--add {a}: broker {a} already exists" for a in add if a in known]
    problems += [f"--add {a}: broker ids are integers" for a in add if not a.lstrip("-").isdigit()]
    rates = dict(rates or {})
    for key in sorted(set(rates) - set(holders)):
        problems.append(f"the rates name partition {key[0]}-{key[1]}, which no broker holds")
    if problems:
        raise InvalidSnapshotError(problems)

    nodes = [Node(str(b), removing=str(b) in remove) for b in broker_ids]
    nodes += [Node(a) for a in dict.fromkeys(add)]
    key_groups, assignment = [], {}
    for (topic, partition), sizes in sorted(holders.items()):
        order = sorted(sizes)
        if current and (topic, partition) in current:
            listed = [b for b in current[(topic, partition)] if b in sizes]
            order = listed + [b for b in order if b not in listed]
        for position, broker in enumerate(order):
            kid = replica_id(topic, partition, position)
            size = sizes[broker]
            load = rates.get((topic, partition), 0.0) if rates else size
            key_groups.append(
                KeyGroup(kid, topic, load, size, index=partition, spread=f"{topic}-{partition}")
            )
            assignment[kid] = str(broker)
    return Snapshot(nodes, key_groups, assignment, period=period).validate()


def reassignment(assignment: Mapping[str, str], current: Mapping[str, str]) -> dict[str, Any]:
    """The ``kafka-reassign-partitions.sh`` document for the partitions whose replicas move.

    ``assignment`` is the plan's (replica key group -> broker), ``current`` where the replicas are
    now. Each listed partition's ``replicas`` keep their positions (the preferred leader first);
    a replica whose broker changed takes its new broker at the same position.
    """
    replicas: dict[tuple[str, int], dict[int, str]] = {}
    moved: set[tuple[str, int]] = set()
    for kid, node in assignment.items():
        topic, partition, position = parse_replica_id(kid)
        replicas.setdefault((topic, partition), {})[position] = node
        if current.get(kid) != node:
            moved.add((topic, partition))
    partitions = []
    for key in sorted(moved):
        listed = replicas[key]
        brokers = [_broker(listed[p]) for p in sorted(listed)]
        if len(set(brokers)) != len(brokers):
            raise InvalidSnapshotError(
                f"partition {key[0]}-{key[1]} would have replicas {brokers} on the same broker twice"
            )
        partitions.append({"topic": key[0], "partition": key[1], "replicas": brokers})
    return {"version": 1, "partitions": partitions}


def _broker(node: str) -> int:
    try:
        return int(node)
    except ValueError:
        raise InvalidSnapshotError(f"node {node!r} is not a Kafka broker id (an integer)") from None
