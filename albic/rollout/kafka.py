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

- ``racks`` (a CSV ``broker,rack``, as the brokers' ``broker.rack``) gives each broker its rack
  (``Node.rack``); the planners tagged ``racks`` then spread each partition's replicas over racks
  (:func:`albic.core.checks.rack_problems`).

The log-dirs file is read as ``kafka-log-dirs.sh --describe`` prints it (``LogDirsCommand``): two
status lines ("Querying brokers for log directories information", "Received log directory
information from brokers 1,2,3") then the JSON on one line; the same JSON pretty-printed (``jq .``)
or without the status lines reads the same.

Export: for every partition with a moved replica, its new replica list in the same positions, so
the order -- the preferred leader first -- is kept except where a replica's broker moved. In Kafka's
terms (:func:`partition_changes`) a partition whose replicas end on the same brokers in another
order is a leadership change, not a move: nothing is copied. :func:`kafka_batches` cuts the
reassignment into files run one after the other, as Cruise Control's executor does: a partition's
reassignment is one task that takes a slot on its current leader (the broker the new replicas copy
from) and on each broker it adds; no broker takes part in more than ``max_per_broker`` of one batch
(Cruise Control's ``num.concurrent.partition.movements.per.broker``, 5 by default); the priority and
load rules are :mod:`albic.rollout.schedule`'s. :func:`verify` compares a log-dirs file taken
afterwards with the plan.

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
import io
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from albic.base.errors import InvalidSnapshotError, KafkaFileError, shown
from albic.core.model import KeyGroup, Node, Snapshot
from albic.core.plan import Plan
from albic.io.reader import finite_number, loads, read_input_json, read_input_text
from albic.rollout.schedule import (
    DEFAULT_MAX_PER_NODE,
    Task,
    batch_tasks,
    check_schedule_parameters,
    load_limits,
)

__all__ = [
    "snapshot_from_log_dirs",
    "read_log_dirs",
    "read_rates",
    "read_current",
    "read_racks",
    "reassignment",
    "partition_changes",
    "kafka_batches",
    "verify",
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
            f"key group {kid!r} is not a Kafka replica id TOPIC-PARTITION/POSITION: a Kafka plan "
            "is made from the snapshot 'albic kafka import' writes from a cluster's "
            "kafka-log-dirs output (key groups are replicas, nodes are brokers), not from "
            "statistics of a trace"
        )
    return topic, int(partition), int(position)


def _split_partition(name: Any, where: str) -> tuple[str, int]:
    topic, dash, number = str(name).rpartition("-")
    if not isinstance(name, str) or not dash or not topic or not number.isdigit():
        raise KafkaFileError(f"{where}: partition {name!r} is not TOPIC-NUMBER")
    return topic, int(number)


def read_log_dirs(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The JSON document of a ``kafka-log-dirs.sh --describe`` output file (see the module
    docstring for the shapes read); :class:`KafkaFileError` names the file as the log-dirs file.
    The file is read by :mod:`albic.io.reader` and the JSON with its limits (unique keys, bounded
    nesting, finite numbers)."""
    where = f"log-dirs file {path}"
    text = read_input_text(path, "log-dirs file")
    start = _json_start(text)
    if start is None:
        raise KafkaFileError(
            f"{where}: no JSON document found (expected what "
            "kafka-log-dirs.sh --describe prints: status lines, then the JSON)"
        )
    try:
        _, end = json.JSONDecoder().raw_decode(text, start)
    except json.JSONDecodeError as err:
        raise KafkaFileError(
            f"{where}: not valid JSON at line {err.lineno} column {err.colno}: {err.msg}"
        ) from None
    except RecursionError:  # far too deep: loads below says how deep
        end = len(text)
    rest = text[end:].strip()
    if rest:
        line_of = text.count("\n", 0, end) + 1
        raise KafkaFileError(
            f"{where}: unexpected text after the JSON document (line {line_of}): {rest[:40]!r}"
        )
    try:
        document = loads(text[start:end])
    except ValueError as err:
        raise KafkaFileError(f"{where}: {err}") from None
    if not isinstance(document, dict):
        raise KafkaFileError(f"{where}: the JSON is not an object")
    return document


def _json_start(text: str) -> int | None:
    """Where the JSON of a log-dirs file starts: the first line opening with ``{`` (the status
    lines before it are skipped)."""
    offset = 0
    for line in text.splitlines(keepends=True):
        if line.lstrip().startswith("{"):
            return offset + len(line) - len(line.lstrip())
        offset += len(line)
    return None


def _csv_rows(path: str | os.PathLike[str], what: str, columns: set[str]) -> Iterator[tuple[int, dict]]:
    """The rows of the CSV file ``path`` with their line numbers, once its header has ``columns``."""
    reader = csv.DictReader(io.StringIO(read_input_text(path, what), newline=""))
    missing = columns - set(reader.fieldnames or [])
    if missing:
        expected = ",".join(c for c in ("topic", "partition", "rate", "broker", "rack") if c in columns)
        raise KafkaFileError(f"{what} {path}: lacks the column(s) {sorted(missing)}; expected {expected}")
    return enumerate(reader, start=2)


def read_racks(path: str | os.PathLike[str]) -> dict[int, str]:
    """A CSV file with the columns ``broker,rack`` (each broker's ``broker.rack``) ->
    ``{broker: rack}``."""
    where = f"racks file {path}"
    racks: dict[int, str] = {}
    for line, row in _csv_rows(path, "racks file", {"broker", "rack"}):
        broker, rack = (row.get("broker") or "").strip(), (row.get("rack") or "").strip()
        if not broker.lstrip("-").isdigit() or len(broker) > 10:
            raise KafkaFileError(f"{where}: line {line}: broker = {broker!r}, must be an integer broker id")
        if not rack:
            raise KafkaFileError(f"{where}: line {line}: broker {broker} has an empty rack")
        if int(broker) in racks:
            raise KafkaFileError(f"{where}: line {line}: broker {broker} appears twice")
        racks[int(broker)] = rack
    return racks


def read_rates(path: str | os.PathLike[str]) -> dict[tuple[str, int], float]:
    """A CSV file with the columns ``topic,partition,rate`` -> ``{(topic, partition): rate}``;
    every rate a finite number."""
    rates: dict[tuple[str, int], float] = {}
    for line, row in _csv_rows(path, "rates file", {"topic", "partition", "rate"}):
        where = f"rates file {path}"
        try:
            key = (row["topic"], int(row["partition"]))
        except (TypeError, ValueError):
            partition = shown(row.get("partition"))
            raise InvalidSnapshotError(
                f"line {line}: partition = {partition}, must be an integer", subject=where
            ) from None
        try:
            rate = finite_number(row["rate"], f"line {line}: rate")
        except ValueError as err:
            raise InvalidSnapshotError(str(err), subject=where) from None
        if key in rates:
            raise InvalidSnapshotError(
                f"line {line}: partition {key[0]}-{key[1]} appears twice", subject=f"rates file {path}"
            )
        rates[key] = rate
    return rates


def read_current(path: str | os.PathLike[str]) -> dict[tuple[str, int], list[int]]:
    """A ``kafka-reassign-partitions.sh`` file -> ``{(topic, partition): [broker, ...]}``."""
    data = read_input_json(path, "replica assignment file")
    try:
        return {
            (p["topic"], int(p["partition"])): [int(b) for b in p["replicas"]] for p in data["partitions"]
        }
    except (KeyError, TypeError, ValueError):
        raise InvalidSnapshotError(
            'expected {"version": 1, "partitions": [{"topic", "partition", "replicas"}, ...]}',
            subject=f"replica assignment file {path}",
        ) from None


def _replicas(
    brokers: list[Any], where: str, unknown: str, broker_ids: list[int]
) -> Iterator[tuple[int, Mapping[str, Any]]]:
    """``(broker id, partition entry)`` of every replica a log-dirs ``brokers`` list reports, each
    level checked for its shape (a list of objects, an integer broker id); the broker ids are
    appended to ``broker_ids``. A log directory with an error stops the reading (``unknown``
    says what that means for the caller)."""
    for b, broker in enumerate(brokers):
        bid = broker.get("broker") if isinstance(broker, Mapping) else None
        if isinstance(bid, bool) or not isinstance(bid, int):
            raise KafkaFileError(f"{where}: brokers[{b}] has no integer 'broker' id")
        broker_ids.append(bid)
        for d, log_dir in enumerate(_objects(broker.get("logDirs"), f"{where}: brokers[{b}].logDirs")):
            if log_dir.get("error"):
                raise KafkaFileError(
                    f"{where}: broker {bid}: log directory {log_dir.get('logDir')!r} reports error "
                    f"{log_dir['error']!r}; {unknown}"
                )
            yield from (
                (bid, p)
                for p in _objects(log_dir.get("partitions"), f"{where}: brokers[{b}].logDirs[{d}].partitions")
            )


def _objects(items: Any, where: str) -> list[Mapping[str, Any]]:
    """``items`` (a JSON list of objects, or null for none), else :class:`KafkaFileError`."""
    if items is None:
        return []
    if not isinstance(items, list):
        raise KafkaFileError(f"{where} must be a list, got {shown(items)}")
    for i, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise KafkaFileError(f"{where}[{i}] must be an object, got {shown(item)}")
    return items


def snapshot_from_log_dirs(
    log_dirs: Mapping[str, Any],
    *,
    rates: Mapping[tuple[str, int], float] | None = None,
    current: Mapping[tuple[str, int], list[int]] | None = None,
    remove: Iterable[str] = (),
    add: Iterable[str] = (),
    racks: Mapping[int, str] | None = None,
    period: str | None = None,
    sources: Mapping[str, str] | None = None,
) -> Snapshot:
    """A snapshot with one key group per replica (see the module docstring for the reading);
    ``sources`` names the files ``log_dirs``, ``rates`` and ``racks`` were read from (``{"log_dirs":
    path, "rates": path, "racks": path}``, any of them) in messages about their content."""
    named = {k: f" ({k} file {v})" for k, v in (sources or {}).items()}
    source = (sources or {}).get("log_dirs")
    where = f"log-dirs file {source}" if source else "the log-dirs document"
    holders, broker_ids = _replica_sizes(log_dirs, where)
    remove, add = [str(r) for r in remove], [str(a) for a in add]
    rates = dict(rates or {})
    problems = _broker_problems(remove, add, broker_ids)
    problems += [
        f"the rates{named.get('rates', '')} name partition {key[0]}-{key[1]}, which no broker holds"
        for key in sorted(set(rates) - set(holders))
    ]
    if racks is not None:
        problems += _rack_problems(racks, broker_ids, add, named.get("racks", ""))
    if problems:
        raise KafkaFileError(f"{where}: " + "; ".join(problems))

    rack_of = (lambda b: None) if racks is None else (lambda b: racks[int(b)])
    nodes = [Node(str(b), removing=str(b) in remove, rack=rack_of(b)) for b in broker_ids]
    nodes += [Node(a, rack=rack_of(a)) for a in dict.fromkeys(add)]
    key_groups, assignment = _replica_key_groups(holders, rates, current)
    return Snapshot(nodes, key_groups, assignment, period=period).validate()


def _replica_sizes(
    log_dirs: Mapping[str, Any], where: str
) -> tuple[dict[tuple[str, int], dict[int, float]], list[int]]:
    """Per partition, the size of its replica on each broker holding one (future replicas left
    out), and every broker id the log dirs name, in their order."""
    brokers = log_dirs.get("brokers") if isinstance(log_dirs, Mapping) else None
    if not isinstance(brokers, list) or not brokers:
        raise KafkaFileError(f'{where}: has no "brokers" list (kafka-log-dirs.sh --describe prints one)')
    holders: dict[tuple[str, int], dict[int, float]] = {}
    broker_ids: list[int] = []
    for bid, p in _replicas(brokers, where, "so the cluster cannot be planned", broker_ids):
        if p.get("isFuture"):
            continue
        key = _split_partition(p.get("partition"), f"{where}: broker {bid}")
        size = p.get("size")
        if isinstance(size, bool) or not isinstance(size, (int, float)) or size < 0:
            raise KafkaFileError(
                f"{where}: broker {bid}: partition {p.get('partition')!r} has size {size!r}, must be a number >= 0"
            )
        holders.setdefault(key, {})[bid] = float(size)
    return holders, broker_ids


def _broker_problems(remove: list[str], add: list[str], broker_ids: list[int]) -> list[str]:
    """What is wrong with the brokers to remove (unknown) and to add (known, or not integers)."""
    known = {str(b) for b in broker_ids}
    problems = [
        f"parameter remove {r}: no broker {r} in the log dirs (brokers: {', '.join(sorted(known, key=int))})"
        for r in remove
        if r not in known
    ]
    problems += [f"parameter add {a}: broker {a} already exists" for a in add if a in known]
    problems += [f"parameter add {a}: broker ids are integers" for a in add if not a.lstrip("-").isdigit()]
    return problems


def _rack_problems(racks: Mapping[int, str], broker_ids: list[int], add: list[str], named: str) -> list[str]:
    """Brokers (kept or added) without a rack, and racks of brokers that are neither; ``named`` says
    which file the racks came from."""
    problems = []
    everyone = [*broker_ids, *(int(a) for a in add if a.lstrip("-").isdigit())]
    lacking = [b for b in everyone if b not in racks]
    if lacking:
        problems.append(
            f"parameter racks: brokers {', '.join(map(str, lacking))} have no rack in the racks "
            f"file{named}; give every broker (the added ones too) its broker.rack"
        )
    unknown = sorted(set(racks) - set(everyone))
    if unknown:
        problems.append(
            f"parameter racks: the racks file{named} names brokers {', '.join(map(str, unknown))}, "
            "which are neither in the log-dirs file nor added"
        )
    return problems


def _replica_key_groups(
    holders: dict[tuple[str, int], dict[int, float]],
    rates: dict[tuple[str, int], float],
    current: Mapping[tuple[str, int], list[int]] | None,
) -> tuple[list[KeyGroup], dict[str, str]]:
    """One key group per replica, numbered in the order of ``current``'s replica list (the
    preferred leader first) where it lists the partition, else by broker id; its load is the partition's
    rate when rates are given, else its size."""
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
    return key_groups, assignment


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


def _broker_lists(assignment: Mapping[str, str]) -> dict[tuple[str, int], list[int]]:
    """``{(topic, partition): [broker by replica position]}`` of a replica assignment."""
    lists: dict[tuple[str, int], dict[int, str]] = {}
    for kid, node in assignment.items():
        topic, partition, position = parse_replica_id(kid)
        lists.setdefault((topic, partition), {})[position] = node
    return {key: [_broker(by[p]) for p in sorted(by)] for key, by in lists.items()}


def partition_changes(plan: Plan) -> dict[str, list[dict[str, Any]]]:
    """The plan in Kafka's terms: ``{"moves": [...], "leadership": [...]}``, one entry per
    partition, in topic-partition order.

    A *move* is a partition whose set of brokers changes: ``{"topic", "partition", "from": [old
    replica list], "to": [new replica list], "added": [brokers that receive a copy], "removed":
    [...], "leader": old leader (the broker the copies are fetched from), "bytes": the bytes copied
    (the moved replicas' sizes, one copy per added broker), "key_groups": [the plan's moves]}``. A
    *leadership* change keeps the brokers and changes their order (a new preferred leader): Kafka
    copies nothing, so it has no bytes and is not a move, whatever the plan's moves count. The
    current placement is the plan's assignment with its moves undone.
    """
    current = dict(plan.assignment)
    current.update({m.key_group: m.source for m in plan.moves})
    before, after = _broker_lists(current), _broker_lists(plan.assignment)
    by_partition: dict[tuple[str, int], list] = {}
    for m in plan.moves:
        topic, partition, _ = parse_replica_id(m.key_group)
        by_partition.setdefault((topic, partition), []).append(m)
    moves, leadership = [], []
    for key in sorted(by_partition):
        old, new = before[key], after[key]
        if len(set(new)) != len(new):
            raise InvalidSnapshotError(
                f"partition {key[0]}-{key[1]} would have replicas {new} on the same broker twice"
            )
        if old == new:
            continue
        entry = {"topic": key[0], "partition": key[1], "from": old, "to": new}
        if set(old) == set(new):
            leadership.append({**entry, "leader": new[0]})
            continue
        added = [b for b in new if b not in old]
        copied = [m for m in by_partition[key] if _broker(m.target) in added]
        moves.append(
            {
                **entry,
                "added": added,
                "removed": [b for b in old if b not in new],
                "leader": old[0],
                "bytes": float(sum(m.cost for m in copied)),
                "key_groups": [m.key_group for m in by_partition[key]],
            }
        )
    return {"moves": moves, "leadership": leadership}


def _document(entries: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    return {
        "version": 1,
        "partitions": [
            {"topic": e["topic"], "partition": e["partition"], "replicas": list(e["to"])} for e in entries
        ],
    }


def kafka_batches(
    plan: Plan,
    snapshot: Snapshot,
    *,
    max_per_broker: int = DEFAULT_MAX_PER_NODE,
    throttle: int | None = None,
) -> dict[str, Any]:
    """The plan's partition moves as ordered ``kafka-reassign-partitions.sh`` documents.

    Each batch: ``{"batch", "reassignment": {"version": 1, "partitions": [...]}, "partitions":
    [the moves of :func:`partition_changes`], "bytes", "seconds" (at ``throttle`` bytes per second
    per broker: the busiest broker's larger of bytes sent as leader and bytes received), "brokers":
    {broker: partition moves it takes part in}, "over_limit"}``. ``leadership`` is the reorders'
    document (None when there are none), run after the moves; ``seconds`` the total.
    """
    check_schedule_parameters(max_per_broker, throttle, ("max_per_broker", "throttle"))
    changes = partition_changes(plan)
    kg_load = {kg.id: kg.load for kg in snapshot.key_groups}
    before, limit, reason = load_limits(plan, snapshot)
    tasks = []
    for entry in changes["moves"]:
        removed, added = [str(b) for b in entry["removed"]], [str(b) for b in entry["added"]]
        load = dict.fromkeys(removed + added, 0.0)
        weight = 0.0
        for kid in entry["key_groups"]:
            m = next(m for m in plan.moves if m.key_group == kid)
            if m.source in removed:
                load[m.source] -= kg_load[kid]
            if m.target in added:
                load[m.target] += kg_load[kid]
            weight = max(weight, kg_load[kid])
        rank = min({"drain": 0, "overload": 1, "other": 2}[reason(b)] for b in removed) if removed else 2
        tasks.append(Task(tuple(dict.fromkeys([str(entry["leader"]), *added])), load, rank, weight, entry))
    batches = []
    for tasks_of, over in batch_tasks(tasks, before, limit, max_per_broker):
        entries = sorted((t.item for t in tasks_of), key=lambda e: (e["topic"], e["partition"]))
        sent: dict[int, float] = {}
        received: dict[int, float] = {}
        involved: dict[int, int] = {}
        for e in entries:
            per_copy = e["bytes"] / max(len(e["added"]), 1)
            sent[e["leader"]] = sent.get(e["leader"], 0.0) + e["bytes"]
            for b in e["added"]:
                received[b] = received.get(b, 0.0) + per_copy
            for b in dict.fromkeys([e["leader"], *e["added"]]):
                involved[b] = involved.get(b, 0) + 1
        busiest = max([0.0, *sent.values(), *received.values()])
        batches.append(
            {
                "batch": len(batches) + 1,
                "reassignment": _document(entries),
                "partitions": entries,
                "bytes": float(sum(e["bytes"] for e in entries)),
                "seconds": None if throttle is None else busiest / throttle,
                "brokers": {str(b): n for b, n in sorted(involved.items())},
                "over_limit": over,
            }
        )
    total = None if throttle is None else float(sum(b["seconds"] for b in batches))
    return {
        "max_per_broker": max_per_broker,
        "throttle": throttle,
        "batches": batches,
        "leadership": _document(changes["leadership"]) if changes["leadership"] else None,
        "leadership_partitions": changes["leadership"],
        "seconds": total,
    }


def verify(plan: Plan, log_dirs: Mapping[str, Any], *, source: str | None = None) -> dict[str, Any]:
    """What differs between a cluster (a log-dirs document taken after the reassignment) and the
    plan: ``{"agree", "unmoved": [{"topic", "partition", "expected", "found", "missing", "extra"}],
    "unplanned": [partitions the cluster has and the plan does not]}``. ``missing``: brokers the
    plan put a replica on that do not hold one; ``extra``: brokers holding a replica the plan did
    not ask for. Replica order is not compared (log-dirs does not show it); a replica being moved
    between log directories (``isFuture``) counts once."""
    where = f"log-dirs file {source}" if source else "the log-dirs document"
    brokers = log_dirs.get("brokers") if isinstance(log_dirs, Mapping) else None
    if not isinstance(brokers, list):
        raise KafkaFileError(f'{where}: has no "brokers" list (kafka-log-dirs.sh --describe prints one)')
    found: dict[tuple[str, int], set[int]] = {}
    queried = set()
    listed: list[int] = []
    for bid, p in _replicas(brokers, where, "its replicas are unknown", listed):
        found.setdefault(_split_partition(p.get("partition"), f"{where}: broker {bid}"), set()).add(bid)
    queried.update(listed)
    expected = {key: set(brokers_) for key, brokers_ in _broker_lists(plan.assignment).items()}
    unmoved = []
    for key in sorted(expected):
        have = found.get(key, set())
        if have != expected[key]:
            unmoved.append(
                {
                    "topic": key[0],
                    "partition": key[1],
                    "expected": sorted(expected[key]),
                    "found": sorted(have),
                    "missing": sorted(expected[key] - have),
                    "extra": sorted(have - expected[key]),
                }
            )
    unplanned = [f"{t}-{p}" for t, p in sorted(set(found) - set(expected))]
    not_queried = sorted({b for e in unmoved for b in e["missing"]} - queried)
    return {"agree": not unmoved, "unmoved": unmoved, "unplanned": unplanned, "not_queried": not_queried}
