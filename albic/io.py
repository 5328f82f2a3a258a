"""Snapshot and plan files: JSON schema v1 (design section 6, a *contract*).

Reading is strict: a missing required field, an unknown field (usually a typo) or a container of the
wrong kind is reported with its JSON path, all problems at once; the values themselves are checked
by :meth:`albic.model.Snapshot.validate`. The JSON text itself is read with limits: at most
:data:`MAX_JSON_DEPTH` levels of nesting, unique keys in every object, numbers of at most 4300
digits; breaking one is an input error, never a ``RecursionError``.

Writing is atomic (a temporary file renamed into place), so a failed write never leaves a
half-written file, and a round trip is exact: ``snapshot_from_dict(snapshot_to_dict(s)) == s``.
Writing to an existing file keeps its permission bits (not its owner); writing to a symbolic link
follows it on purpose, replacing the file it points to and keeping the link (as the shell's ``>``
does). Errors name the path the caller gave, never the temporary file.

Example
-------
>>> from albic.model import Node, KeyGroup, Snapshot
>>> snap = Snapshot([Node("n1")], [KeyGroup("a", "op", 2.5, 64)], {"a": "n1"}, period="h0")
>>> data = snapshot_to_dict(snap)
>>> data["key_groups"]
[{'id': 'a', 'operator': 'op', 'load': 2.5, 'state_size': 64.0, 'node': 'n1'}]
>>> snapshot_from_dict(data) == snap
True
"""
from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from albic.errors import InvalidSnapshotError, _ProblemList
from albic.model import KeyGroup, Move, Node, Operator, Plan, PlanStatus, Snapshot, Traffic

__all__ = [
    "SNAPSHOT_SCHEMA",
    "PLAN_SCHEMA",
    "InvalidPlanFileError",
    "snapshot_to_dict",
    "snapshot_from_dict",
    "plan_to_dict",
    "plan_from_dict",
    "read_snapshot",
    "write_snapshot",
    "read_plan",
    "write_plan",
    "dumps",
    "atomic_write_text",
    "read_snapshots",
    "MAX_JSON_DEPTH",
    "check_writable",
    "loads",
    "json_depth",
]

#: The deepest nesting of arrays and objects a snapshot or plan file may have. A snapshot needs 4
#: levels (document, key_groups, a key group, its resources); the limit leaves room for plan details.
MAX_JSON_DEPTH = 64

SNAPSHOT_SCHEMA = "albic.snapshot/1"
PLAN_SCHEMA = "albic.plan/1"


class InvalidPlanFileError(_ProblemList, ValueError):
    """A plan file that does not follow schema ``albic.plan/1``."""

    what = "plan file"


# Field specs: name -> required?  Optional fields are written only when they differ from the default.
_NODE_FIELDS = {"id": True, "capacity": False, "removing": False, "cores": False, "host": False}
_KEY_GROUP_FIELDS = {
    "id": True,
    "operator": True,
    "load": True,
    "state_size": False,
    "index": False,
    "resources": False,
    "arrival_rate": False,
    "service_rate": False,
    "spread": False,
    "node": True,
}
_TRAFFIC_FIELDS = {"src": True, "dst": True, "rate": True}
_OPERATOR_FIELDS = {"name": True, "downstream": False, "partition_attributes": False}
_SNAPSHOT_FIELDS = {
    "schema": True,
    "period": False,
    "nodes": True,
    "key_groups": True,
    "traffic": False,
    "operators": False,
}
_PLAN_FIELDS = {
    "schema": True,
    "planner": True,
    "status": True,
    "assignment": True,
    "moves": True,
    "metrics": False,
    "objective": False,
    "bound": False,
    "seconds": False,
    "details": False,
}
_MOVE_FIELDS = {"key_group": True, "from": True, "to": True, "cost": True}


# -- snapshots ------------------------------------------------------------------------------------


def snapshot_to_dict(snapshot: Snapshot) -> dict[str, Any]:
    """The snapshot as JSON-ready data (validates it first: invalid snapshots are never written)."""
    snapshot.validate()
    data: dict[str, Any] = {"schema": SNAPSHOT_SCHEMA, "period": snapshot.period}
    data["nodes"] = [_node_to_dict(n) for n in snapshot.nodes]
    data["key_groups"] = [_key_group_to_dict(k, snapshot.assignment[k.id]) for k in snapshot.key_groups]
    data["traffic"] = [{"src": t.src, "dst": t.dst, "rate": t.rate} for t in snapshot.traffic]
    if snapshot.operators:
        data["operators"] = [
            {
                "name": op.name,
                "downstream": list(op.downstream),
                "partition_attributes": list(op.partition_attributes),
            }
            for op in snapshot.operators
        ]
    return data


def _node_to_dict(node: Node) -> dict[str, Any]:
    data: dict[str, Any] = {"id": node.id, "capacity": node.capacity}
    if node.removing:
        data["removing"] = True
    if node.cores != 1:
        data["cores"] = node.cores
    if node.host is not None:
        data["host"] = node.host
    return data


def _key_group_to_dict(kg: KeyGroup, node: str) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": kg.id,
        "operator": kg.operator,
        "load": kg.load,
        "state_size": kg.state_size,
    }
    if kg.index is not None:
        data["index"] = kg.index
    if kg.resources:
        data["resources"] = dict(kg.resources)
    for name in ("arrival_rate", "service_rate", "spread"):
        if getattr(kg, name) is not None:
            data[name] = getattr(kg, name)
    data["node"] = node
    return data


class _Reader:
    """Collects structural problems of a JSON document, each with its JSON path."""

    def __init__(self) -> None:
        self.problems: list[str] = []

    def fields(self, obj: Any, path: str, spec: Mapping[str, bool]) -> dict[str, Any] | None:
        if not isinstance(obj, dict):
            self.problems.append(f"{path} must be an object, got {_json_type(obj)}")
            return None
        ok = True
        for name, required in spec.items():
            if required and name not in obj:
                self.problems.append(f"{path} lacks the required field {name!r}")
                ok = False
        for name in obj:
            if name not in spec:
                known = ", ".join(spec)
                self.problems.append(f"{path} has unknown field {name!r} (known fields: {known})")
                ok = False
        return obj if ok else None

    def document(
        self,
        data: Any,
        spec: Mapping[str, bool],
        schema: str,
        error: type[_ProblemList],
        source: str | None,
    ) -> dict[str, Any]:
        """The top-level object; raises ``error`` at once if it is not one of ``spec``'s shape."""
        top = self.fields(data, "the document", spec)
        if top is None:
            raise error(self.problems, subject=source)
        if top["schema"] != schema:
            self.problems.append(f"schema is {top['schema']!r}, expected {schema!r}")
        return top

    def items(self, obj: Any, path: str) -> list[Any]:
        if obj is None:
            return []
        if not isinstance(obj, list):
            self.problems.append(f"{path} must be a list, got {_json_type(obj)}")
            return []
        return obj


def _json_type(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number" if isinstance(value, (int, float)) else type(value).__name__)


def snapshot_from_dict(data: Any, *, validate: bool = True, source: str | None = None) -> Snapshot:
    """Build a snapshot from JSON data of schema ``albic.snapshot/1``.

    Raises one :class:`InvalidSnapshotError` listing every structural problem (with its JSON path)
    or, when ``validate``, every rule the snapshot breaks.
    """
    reader = _Reader()
    top = reader.document(data, _SNAPSHOT_FIELDS, SNAPSHOT_SCHEMA, InvalidSnapshotError, source)

    nodes = []
    for i, item in enumerate(reader.items(top["nodes"], "nodes")):
        if (obj := reader.fields(item, f"nodes[{i}]", _NODE_FIELDS)) is not None:
            nodes.append(Node(**obj))
    key_groups, assignment = [], {}
    for i, item in enumerate(reader.items(top["key_groups"], "key_groups")):
        if (obj := reader.fields(item, f"key_groups[{i}]", _KEY_GROUP_FIELDS)) is not None:
            obj = dict(obj)
            node = obj.pop("node")
            if not isinstance(obj["id"], str):  # the id keys the assignment, so it must be hashable
                reader.problems.append(f"key_groups[{i}].id must be a string, got {_json_type(obj['id'])}")
                continue
            if obj.get("resources") is None:
                obj.pop("resources", None)
            kg = KeyGroup(**obj)
            key_groups.append(kg)
            assignment[kg.id] = node  # a key group listed twice is reported by validate()
    traffic = [
        Traffic(**obj)
        for i, item in enumerate(reader.items(top.get("traffic"), "traffic"))
        if (obj := reader.fields(item, f"traffic[{i}]", _TRAFFIC_FIELDS)) is not None
    ]
    operators = []
    for i, item in enumerate(reader.items(top.get("operators"), "operators")):
        if (obj := reader.fields(item, f"operators[{i}]", _OPERATOR_FIELDS)) is not None:
            for name in ("downstream", "partition_attributes"):
                if not isinstance(obj.get(name, []), list):
                    reader.problems.append(f"operators[{i}].{name} must be a list of names")
                    obj = None
                    break
            if obj is not None:
                operators.append(Operator(**obj))
    if reader.problems:
        raise InvalidSnapshotError(reader.problems, subject=source)
    try:
        snapshot = Snapshot(nodes, key_groups, assignment, traffic, operators, top.get("period"))
    except InvalidSnapshotError as err:
        raise InvalidSnapshotError(err.problems, subject=source) from None
    if validate:
        problems = snapshot.problems()
        if problems:
            raise InvalidSnapshotError(problems, subject=source)
    return snapshot


# -- plans ----------------------------------------------------------------------------------------


def plan_to_dict(plan: Plan) -> dict[str, Any]:
    """The plan as JSON-ready data (schema ``albic.plan/1``)."""
    return {
        "schema": PLAN_SCHEMA,
        "planner": plan.planner,
        "status": str(plan.status),
        "assignment": dict(plan.assignment),
        "moves": [
            {"key_group": m.key_group, "from": m.source, "to": m.target, "cost": m.cost}
            for m in plan.moves
        ],
        "metrics": dict(plan.metrics),
        "objective": plan.objective,
        "bound": plan.bound,
        "seconds": plan.seconds,
        "details": dict(plan.details),
    }


def plan_from_dict(data: Any, *, source: str | None = None) -> Plan:
    """Build a plan from JSON data of schema ``albic.plan/1``."""
    reader = _Reader()
    top = reader.document(data, _PLAN_FIELDS, PLAN_SCHEMA, InvalidPlanFileError, source)
    if top["status"] not in {s.value for s in PlanStatus}:
        reader.problems.append(
            f"status is {top['status']!r}, expected one of {[s.value for s in PlanStatus]}"
        )
    for name in ("assignment", "metrics", "details"):
        if not isinstance(top.get(name, {}), dict):
            reader.problems.append(f"{name} must be an object, got {_json_type(top[name])}")
    moves = [
        Move(obj["key_group"], obj["from"], obj["to"], obj["cost"])
        for i, item in enumerate(reader.items(top["moves"], "moves"))
        if (obj := reader.fields(item, f"moves[{i}]", _MOVE_FIELDS)) is not None
    ]
    if reader.problems:
        raise InvalidPlanFileError(reader.problems, subject=source)
    return Plan(
        planner=top["planner"],
        status=PlanStatus(top["status"]),
        assignment=top["assignment"],
        moves=tuple(moves),
        metrics=top.get("metrics", {}),
        objective=top.get("objective"),
        bound=top.get("bound"),
        seconds=top.get("seconds", 0.0),
        details=top.get("details", {}),
    )


# -- files ----------------------------------------------------------------------------------------


def dumps(data: Any, *, indent: int | None = 2) -> str:
    """JSON text as albic writes it: no NaN or infinity, UTF-8 kept readable."""
    return json.dumps(data, indent=indent, allow_nan=False, ensure_ascii=False)


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` to ``path`` through a temporary file in the same folder, then rename it.

    Readers see the old file or the whole new one, never a part; on failure nothing is left behind
    (a temporary file of a killed run is removed by the next write to the same path, see
    :mod:`albic.tempfiles`). An existing file keeps its permission bits; a symbolic link is
    followed (the file it points to is replaced, the link stays). An ``OSError`` names ``path``.
    """
    from albic import tempfiles

    given = Path(path)
    target = Path(os.path.realpath(given))
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mode = 0o666 & ~_umask()  # the mode an ordinary open() would give a new file
    except OSError as err:
        raise _naming(err, given) from None
    try:
        tempfiles.remove_stale(target)
        handle, tmp = tempfiles.create(target)
    except OSError as err:
        raise _naming(err, given) from None
    try:
        os.chmod(tmp, mode)
        with handle:
            handle.write(text.encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException as err:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(err, OSError):
            raise _naming(err, given) from None
        raise
    return given


def check_writable(path: str | os.PathLike[str]) -> None:
    """Raise an ``OSError`` naming ``path`` unless :func:`atomic_write_text` could write it now:
    the folder exists and takes a new file, and an existing file is writable (a read-only file is
    not replaced behind its owner's back). Creates nothing that stays."""
    from albic import tempfiles

    given = Path(path)
    target = Path(os.path.realpath(given))
    if target.is_dir():
        raise IsADirectoryError(21, "it is a folder; give a file name", str(given))
    if not target.parent.is_dir():
        raise FileNotFoundError(2, f"folder {target.parent} does not exist", str(given))
    if target.exists() and not os.access(target, os.W_OK):
        raise PermissionError(13, "Permission denied (the file is read-only)", str(given))
    try:
        handle, tmp = tempfiles.create(target)
    except OSError as err:
        raise _naming(err, given) from None
    handle.close()
    Path(tmp).unlink(missing_ok=True)


def _naming(err: OSError, path: Path) -> OSError:
    """``err`` as raised for ``path`` (the user's name for the file, not a temporary one)."""
    if err.errno is None:
        return err
    return OSError(err.errno, err.strerror, str(path))  # OSError picks the subclass from errno


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


class _DuplicateKey(Exception):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return obj


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def json_depth(text: str) -> int:
    """The deepest nesting of arrays and objects in JSON ``text`` (brackets in strings ignored)."""
    import numpy as np

    skeleton = _STRING.sub("", text).encode("utf-8", "replace")
    codes = np.frombuffer(skeleton, dtype=np.uint8)
    step = np.isin(codes, (ord("["), ord("{"))).astype(np.int64)
    step -= np.isin(codes, (ord("]"), ord("}")))
    return int(np.cumsum(step).max(initial=0))


def loads(text: str) -> Any:
    """JSON ``text`` parsed with albic's limits; raises ``ValueError`` with one line for people."""
    depth = json_depth(text)
    if depth > MAX_JSON_DEPTH:
        raise ValueError(f"nested {depth} levels deep; albic reads at most {MAX_JSON_DEPTH} levels")
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except _DuplicateKey as err:
        raise ValueError(
            f"an object has the key {err.args[0]!r} twice; keys must be unique"
        ) from None
    except json.JSONDecodeError as err:
        raise ValueError(f"not valid JSON: {err.msg} at line {err.lineno}, column {err.colno}") from None
    except RecursionError:  # belt and braces: the depth check above should prevent it
        raise ValueError("nested too deeply") from None
    except ValueError as err:  # e.g. an integer of more than 4300 digits
        raise ValueError(f"not readable JSON: {str(err).split(';')[0]}") from None


def _read_json(path: str | os.PathLike[str], error: Callable[..., Exception]) -> Any:
    try:
        # utf-8-sig: a byte-order mark some editors write is not an error.
        text = Path(path).read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as err:
        raise error(
            f"not UTF-8 text (byte {err.start} cannot be decoded)", subject=f"in {path}"
        ) from None
    try:
        return loads(text)
    except ValueError as err:
        raise error(str(err), subject=f"in {path}") from None


def read_snapshot(path: str | os.PathLike[str]) -> Snapshot:
    """Read and validate a snapshot JSON file."""
    return snapshot_from_dict(_read_json(path, InvalidSnapshotError), source=f"in {path}")


def write_snapshot(snapshot: Snapshot, path: str | os.PathLike[str]) -> Path:
    """Write a snapshot JSON file atomically (the snapshot is validated first)."""
    return atomic_write_text(path, dumps(snapshot_to_dict(snapshot)) + "\n")


def read_plan(path: str | os.PathLike[str]) -> Plan:
    """Read a plan JSON file."""
    return plan_from_dict(_read_json(path, InvalidPlanFileError), source=f"in {path}")


def write_plan(plan: Plan, path: str | os.PathLike[str]) -> Path:
    """Write a plan JSON file atomically."""
    return atomic_write_text(path, dumps(plan_to_dict(plan)) + "\n")


# -- datasets of many periods ---------------------------------------------------------------------


def read_snapshots(path: str | os.PathLike[str]) -> Iterator[Snapshot]:
    """The snapshots of a statistics dataset (``albic stats``' output, design section 6), one per
    period in time order.

    Each snapshot has every key group of every operator (``key_groups`` per operator from the
    manifest; a key group without events that period has load 0 and state 0), the period's traffic
    and nodes ``n1 .. n_count`` of the node-count series. Statistics are placement-free, so the
    ``assignment`` is a placeholder: each operator's key groups split evenly and consecutively
    over the period's nodes (as Storm's default does); :func:`albic.simulate.replay` replaces it
    with the placement carried over from the previous period.

    Example
    -------
    >>> for snapshot in read_snapshots("out/stats"):       # doctest: +SKIP
    ...     print(snapshot.period, len(snapshot.nodes))
    """
    import pandas as pd

    from albic.stats import MANIFEST, STATS_SCHEMA

    root = Path(path)
    manifest_path = root / MANIFEST
    if not manifest_path.is_file():
        raise InvalidSnapshotError(
            f"{root} is not a statistics dataset: it has no {MANIFEST} (write one with 'albic stats')"
        )
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    if manifest.get("schema") != STATS_SCHEMA:
        raise InvalidSnapshotError(
            f"{manifest_path}: schema {manifest.get('schema')!r} is not {STATS_SCHEMA!r}"
        )
    spec_ops = manifest["spec"]["operators"]
    edges = manifest["spec"]["edges"]
    operators = tuple(
        Operator(
            op["name"],
            downstream=tuple(e["dst"] for e in edges if e["src"] == op["name"]),
            partition_attributes=tuple(op["keys"]),
        )
        for op in spec_ops
    )
    counts = manifest["key_groups"]
    ids = [(op.name, i, f"{op.name}/{i}") for op in operators for i in range(int(counts[op.name]))]
    import pyarrow.parquet as pq

    # Rates (albic stats >= issue 10): arrival_rate 0 and the operator's service rate (manifest)
    # for a key group without events in a period; absent in older datasets.
    rated = "arrival_rate" in pq.read_schema(next((root / "key_groups").glob("*.parquet"))).names
    rate_columns = ["arrival_rate", "service_rate"] if rated else []
    idle_service = manifest.get("service_rate", {})
    kg_table = pd.read_parquet(
        root / "key_groups", columns=["period", "id", "load", "state_size", *rate_columns]
    )
    traffic_table = pd.read_parquet(root / "traffic", columns=["period", "src", "dst", "rate"])
    nodes_table = pd.read_parquet(root / "nodes")
    kg_by_period = dict(tuple(kg_table.groupby("period", sort=False)))
    traffic_by_period = dict(tuple(traffic_table.groupby("period", sort=False)))
    for period, nodes_rows in nodes_table.groupby("period", sort=True):  # labels sort as times
        cores = nodes_rows["cores"] if "cores" in nodes_rows else [1] * len(nodes_rows)
        nodes = [
            Node(str(i), float(c), cores=int(k))
            for i, c, k in zip(nodes_rows["id"], nodes_rows["capacity"], cores)
        ]
        rows = kg_by_period.get(period)
        load, state, arrival, service = {}, {}, {}, {}
        if rows is not None:
            load = dict(zip(rows["id"], rows["load"].tolist()))
            state = dict(zip(rows["id"], rows["state_size"].tolist()))
            if rated:
                arrival = dict(zip(rows["id"], rows["arrival_rate"].tolist()))
                service = dict(zip(rows["id"], rows["service_rate"].tolist()))
        key_groups = [
            KeyGroup(
                kid, op, load.get(kid, 0.0), state.get(kid, 0.0), index=i,
                arrival_rate=arrival.get(kid, 0.0) if rated else None,
                service_rate=_rate(service.get(kid, idle_service.get(op))) if rated else None,
            )
            for op, i, kid in ids
        ]
        edges_rows = traffic_by_period.get(period)
        traffic = () if edges_rows is None else tuple(
            Traffic(s, d, r)
            for s, d, r in zip(edges_rows["src"], edges_rows["dst"], edges_rows["rate"].tolist())
        )
        yield Snapshot(
            nodes, key_groups, _consecutive_split(ids, [n.id for n in nodes]), traffic, operators,
            period=str(period),
        )


def _rate(value: float | None) -> float | None:
    """A service rate read back: NaN (an operator with cost 0 and no measured times) is None."""
    return None if value is None or value != value else float(value)


def _consecutive_split(ids: list[tuple[str, int, str]], node_ids: list[str]) -> dict[str, str]:
    """Each operator's key groups (in index order) in equal consecutive blocks over the nodes:
    node j gets positions ``[floor(j*m/n), floor((j+1)*m/n))`` of the m key groups."""
    per_op: dict[str, list[str]] = {}
    for op, _, kid in ids:
        per_op.setdefault(op, []).append(kid)
    n = len(node_ids)
    assignment = {}
    for members in per_op.values():
        m = len(members)
        for j in range(n):
            for p in range(j * m // n, (j + 1) * m // n):
                assignment[members[p]] = node_ids[j]
    return assignment
