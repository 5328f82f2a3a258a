"""The model as JSON-ready data: schema ``albic.snapshot/1`` and ``albic.plan/1`` (design section 6,
a *contract*).

This is the one translation between the model and its JSON form; :mod:`albic.io` reads and writes
it as files, and :meth:`albic.core.plan.Plan.to_json` uses it directly. Reading is strict: a
missing required field, an unknown field (usually a typo) or a container of the wrong kind is
reported with its JSON path, all problems at once; the values themselves are checked by
:meth:`albic.core.model.Snapshot.validate`. A round trip is exact:
``snapshot_from_dict(snapshot_to_dict(s)) == s``.

Example
-------
>>> from albic.core.model import Node, KeyGroup, Snapshot
>>> snap = Snapshot([Node("n1")], [KeyGroup("a", "op", 2.5, 64)], {"a": "n1"}, period="h0")
>>> data = snapshot_to_dict(snap)
>>> data["key_groups"]
[{'id': 'a', 'operator': 'op', 'load': 2.5, 'state_size': 64.0, 'node': 'n1'}]
>>> snapshot_from_dict(data) == snap
True

A partial period (:attr:`~albic.core.model.Snapshot.covered_seconds`) carries the seconds its
events cover; a whole one has no such field:

>>> import dataclasses
>>> snapshot_to_dict(dataclasses.replace(snap, covered_seconds=900.0))["covered_seconds"]
900.0
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from albic.base.errors import InvalidPlanFileError, InvalidSnapshotError, ProblemList
from albic.core.model import KeyGroup, Move, Node, Operator, PlanStatus, Snapshot, Traffic
from albic.core.plan import PLAN_SCHEMA, Plan

__all__ = [
    "SNAPSHOT_SCHEMA",
    "PLAN_SCHEMA",
    "snapshot_to_dict",
    "snapshot_from_dict",
    "plan_to_dict",
    "plan_from_dict",
]

SNAPSHOT_SCHEMA = "albic.snapshot/1"


# Field specs: name -> required?  Optional fields are written only when they differ from the default.
_NODE_FIELDS = {
    "id": True,
    "capacity": False,
    "removing": False,
    "cores": False,
    "host": False,
    "rack": False,
}
_KEY_GROUP_FIELDS = {
    "id": True,
    "operator": True,
    "load": True,
    "state_size": False,
    "index": False,
    "resources": False,
    "arrival_rate": False,
    "service_rate": False,
    "load_error": False,
    "spread": False,
    "node": True,
}
_TRAFFIC_FIELDS = {"src": True, "dst": True, "rate": True}
_OPERATOR_FIELDS = {
    "name": True,
    "downstream": False,
    "partition_attributes": False,
    "key_hash": False,
    "max_parallelism": False,
}
_SNAPSHOT_FIELDS = {
    "schema": True,
    "period": False,
    "covered_seconds": False,
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
    "made_from": False,
}
#: What a plan's ``made_from`` may hold (:meth:`albic.core.plan.Plan.made_from_record`).
_MADE_FROM_FIELDS = {"period": False, "snapshot": False, "statistics": False}
_MOVE_FIELDS = {"key_group": True, "from": True, "to": True, "cost": True}


# -- snapshots -----------------------------------------------------------------------------------


def snapshot_to_dict(snapshot: Snapshot) -> dict[str, Any]:
    """The snapshot as JSON-ready data (validates it first: invalid snapshots are never written)."""
    snapshot.validate()
    data: dict[str, Any] = {"schema": SNAPSHOT_SCHEMA, "period": snapshot.period}
    if snapshot.partial:  # present only for a partial period: whole ones read as before
        data["covered_seconds"] = snapshot.covered_seconds
    data["nodes"] = [_node_to_dict(n) for n in snapshot.nodes]
    data["key_groups"] = [_key_group_to_dict(k, snapshot.assignment[k.id]) for k in snapshot.key_groups]
    data["traffic"] = [{"src": t.src, "dst": t.dst, "rate": t.rate} for t in snapshot.traffic]
    if snapshot.operators:
        data["operators"] = [
            {
                "name": op.name,
                "downstream": list(op.downstream),
                "partition_attributes": list(op.partition_attributes),
                **({"key_hash": op.key_hash} if op.key_hash is not None else {}),
                **({"max_parallelism": op.max_parallelism} if op.max_parallelism is not None else {}),
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
    if node.rack is not None:
        data["rack"] = node.rack
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
    for name in ("arrival_rate", "service_rate", "spread", "load_error"):
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
        error: type[ProblemList],
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
        snapshot = Snapshot(
            nodes,
            key_groups,
            assignment,
            traffic,
            operators,
            top.get("period"),
            covered_seconds=top.get("covered_seconds"),
        )
    except InvalidSnapshotError as err:
        raise InvalidSnapshotError(err.problems, subject=source) from None
    if validate:
        problems = snapshot.problems()
        if problems:
            raise InvalidSnapshotError(problems, subject=source)
    return snapshot


# -- plans ----------------------------------------------------------------------------------------


def plan_to_dict(plan: Plan) -> dict[str, Any]:
    """The plan as JSON-ready data (schema ``albic.plan/1``; :meth:`albic.core.plan.Plan.to_dict`)."""
    return plan.to_dict()


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
    made_from = top.get("made_from")
    if made_from is not None and reader.fields(made_from, "made_from", _MADE_FROM_FIELDS) is not None:
        for name in ("snapshot", "statistics"):
            if not isinstance(made_from.get(name, ""), str):
                reader.problems.append(
                    f"made_from.{name} must be a string, got {_json_type(made_from[name])}"
                )
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
        made_from=top.get("made_from"),
    )
