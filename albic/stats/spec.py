"""Topology specs: which operators a trace's events flow through, keyed by which columns.

A spec is a TOML file (or the :class:`TopologySpec` the built-in traces build in code)::

    timestamp = "time_hour"          # event time: ISO 8601 text, a timestamp, or numeric epoch s
    null_values = ["", "NA"]         # CSV cells read as missing (default: these two)
    hash = "flink"                   # key -> key group: "blake2b" (default) or Flink's own
    max_parallelism = 128            # key groups per operator (wins over --key-groups)

    [[operators]]
    name = "parse"
    keys = ["carrier", "flight"]     # key columns; a composite key is their text joined by "|"
    cost = 1.0                       # seconds of one core per event (default 1.0)
    bytes_per_key = 256              # state held per distinct key (default 256)
    service_time = "parse_seconds"   # optional: column of measured seconds per event here

    [[operators]]
    name = "dest"
    keys = ["dest"]

    [[edges]]
    src = "parse"
    dst = "dest"

Every key is checked: a key albic does not know, at any level, is an error that names it, its place
and the allowed keys (with a "did you mean" when one is close), never silently ignored.

Rates (:mod:`albic.stats.job`): an operator's ``cost`` is the seconds one core spends on one event, so
its load is in busy cores and its ``service_rate`` is ``1 / cost`` events per second of one core;
with ``service_time`` the rate is measured instead, from the named column (seconds per event).

Every event passes through every operator whose key columns are all present (not missing) in that
event; an edge carries the events that have keys for both of its operators. Key columns are read as
text (use integer or text columns for keys, not floats or timestamps: their text differs between
engines).

Example
-------
>>> spec = parse_spec('''
... timestamp = "ts"
... [[operators]]
... name = "word"
... keys = ["word"]
... ''')
>>> spec.operators[0].name, spec.operators[0].cost, spec.key_columns()
('word', 1.0, ['word'])
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from typing import Any

from albic.base.errors import InvalidSpecError
from albic.base.formats import did_you_mean
from albic.core.hashing import METHODS
from albic.io.reader import non_finite, read_input_text

__all__ = [
    "OperatorSpec",
    "EdgeSpec",
    "TopologySpec",
    "InvalidSpecError",
    "parse_spec",
    "read_spec",
    "KEY_SEPARATOR",
]

#: Joins the text of a composite key's columns.
KEY_SEPARATOR = "|"
DEFAULT_NULL_VALUES = ("", "NA")


@dataclasses.dataclass(frozen=True)
class OperatorSpec:
    name: str
    keys: tuple[str, ...]
    cost: float = 1.0
    bytes_per_key: float = 256.0
    service_time: str | None = None


@dataclasses.dataclass(frozen=True)
class EdgeSpec:
    src: str
    dst: str


@dataclasses.dataclass(frozen=True)
class TopologySpec:
    timestamp: str
    operators: tuple[OperatorSpec, ...]
    edges: tuple[EdgeSpec, ...] = ()
    null_values: tuple[str, ...] = DEFAULT_NULL_VALUES
    # The key -> key group hash (albic.core.hashing.METHODS): "blake2b" (albic's own) or "flink"
    # (Flink's KeyGroupRangeAssignment, keys hashed as Java strings); max_parallelism, when set,
    # is the number of key groups per operator (Flink's maximum parallelism) and wins over
    # --key-groups.
    hash: str = "blake2b"
    max_parallelism: int | None = None

    def __post_init__(self) -> None:
        problems = list(_hash_problems(self.hash, self.max_parallelism))
        names = [op.name for op in self.operators]
        if not names:
            problems.append("it has no operators")
        for name in sorted({n for n in names if names.count(n) > 1}):
            problems.append(f"operator {name!r} is defined more than once")
        for op in self.operators:
            if not isinstance(op.name, str) or not op.name or "/" in op.name:
                problems.append(f"operator name {op.name!r} must be non-empty text without '/'")
            if not op.keys or not all(isinstance(k, str) and k for k in op.keys):
                problems.append(f"operator {op.name!r}: keys must be a non-empty list of column names")
            if op.service_time is not None and not (isinstance(op.service_time, str) and op.service_time):
                problems.append(
                    f"operator {op.name!r}: service_time must name a column, got {op.service_time!r}"
                )
            for field in ("cost", "bytes_per_key"):
                value = getattr(op, field)
                if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
                    problems.append(f"operator {op.name!r}: {field} must be a number >= 0, got {value!r}")
        for edge in self.edges:
            for end in (edge.src, edge.dst):
                if end not in names:
                    problems.append(f"edge {edge.src!r} -> {edge.dst!r}: no operator named {end!r}")
            if edge.src == edge.dst:
                problems.append(f"edge {edge.src!r} -> {edge.dst!r} is a self-loop")
        if not isinstance(self.timestamp, str) or not self.timestamp:
            problems.append("timestamp must name the event-time column")
        if problems:
            raise InvalidSpecError("invalid topology spec: " + "; ".join(problems))

    def key_group_count(self, requested: int) -> int:
        """Key groups per operator: ``max_parallelism`` when the spec sets it, else ``requested``."""
        return requested if self.max_parallelism is None else self.max_parallelism

    def operator(self, name: str) -> OperatorSpec:
        return next(op for op in self.operators if op.name == name)

    def key_columns(self) -> list[str]:
        """Every key column, once, in order of first use."""
        return list(dict.fromkeys(k for op in self.operators for k in op.keys))

    def service_time_columns(self) -> list[str]:
        """Every column of measured service times, once."""
        return list(dict.fromkeys(op.service_time for op in self.operators if op.service_time))

    def downstream(self, name: str) -> list[str]:
        return [e.dst for e in self.edges if e.src == name]

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TopologySpec:
        return _from_dict(data, "spec")


def _hash_problems(method: Any, max_parallelism: Any) -> list[str]:

    problems = []
    if method not in METHODS:
        problems.append(f"hash = {method!r}, must be one of {list(METHODS)}")
    if max_parallelism is not None and (
        isinstance(max_parallelism, bool)
        or not isinstance(max_parallelism, int)
        or not 1 <= max_parallelism <= 32768
    ):
        problems.append(f"max_parallelism = {max_parallelism!r}, must be an int in [1, 32768]")
    return problems


#: The keys allowed at each level of a spec, with their defaults (None: required).
TOP_KEYS = ("timestamp", "operators", "edges", "null_values", "hash", "max_parallelism")
OPERATOR_KEYS = ("name", "keys", "cost", "bytes_per_key", "service_time")
EDGE_KEYS = ("src", "dst")


def _check_keys(table: Any, allowed: tuple[str, ...], required: tuple[str, ...], place: str) -> None:
    """Fail on the first unknown or missing key of ``table``, naming it, its place and the rule."""
    if not isinstance(table, dict):
        raise InvalidSpecError(f"{place} must be a table with keys {list(allowed)}, got {table!r}")
    for key in table:
        if key not in allowed:
            hint = did_you_mean(key, allowed, "; ", "")
            raise InvalidSpecError(f"{place}: unknown key {key!r} (allowed: {', '.join(allowed)}){hint}")
    for key in required:
        if key not in table:
            raise InvalidSpecError(f"{place}: missing key {key!r} (required: {', '.join(required)})")


def _from_dict(data: Any, source: str) -> TopologySpec:
    _check_keys(data, TOP_KEYS, ("timestamp",), f"{source}: the top level")
    operators_raw, edges_raw = data.get("operators", []), data.get("edges", [])
    for name, value in (("operators", operators_raw), ("edges", edges_raw)):
        if not isinstance(value, list):
            raise InvalidSpecError(f"{source}: {name!r} must be an array of tables ([[{name}]])")
    operators = []
    for i, op in enumerate(operators_raw):
        place = f"{source}: operator {i + 1}" + (
            f" ({op['name']!r})" if isinstance(op, dict) and "name" in op else ""
        )
        _check_keys(op, OPERATOR_KEYS, ("name", "keys"), place)
        operators.append(
            OperatorSpec(
                name=op["name"],
                keys=tuple(op["keys"]) if isinstance(op["keys"], (list, tuple)) else (op["keys"],),
                cost=op.get("cost", 1.0),
                bytes_per_key=op.get("bytes_per_key", 256.0),
                service_time=op.get("service_time"),
            )
        )
    edges = []
    for i, edge in enumerate(edges_raw):
        _check_keys(edge, EDGE_KEYS, EDGE_KEYS, f"{source}: edge {i + 1}")
        edges.append(EdgeSpec(edge["src"], edge["dst"]))
    try:
        return TopologySpec(
            timestamp=data["timestamp"],
            operators=tuple(operators),
            edges=tuple(edges),
            null_values=tuple(data.get("null_values", DEFAULT_NULL_VALUES)),
            hash=data.get("hash", "blake2b"),
            max_parallelism=data.get("max_parallelism"),
        )
    except InvalidSpecError as err:
        raise InvalidSpecError(f"{source}: {err}") from None


def parse_spec(text: str, source: str = "spec") -> TopologySpec:
    """A spec from TOML text."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise InvalidSpecError(f"{source}: not valid TOML: {err}") from None
    except RecursionError:  # tomllib is recursive: an array nested thousands deep
        raise InvalidSpecError(f"{source}: nested too deeply to be a topology spec") from None
    problem = non_finite(data)  # TOML has nan and inf; no spec number may be either
    if problem is not None:
        raise InvalidSpecError(f"{source}: {problem}")
    return _from_dict(data, source)


def read_spec(path: str | os.PathLike[str]) -> TopologySpec:
    """A spec from a TOML file."""
    return parse_spec(read_input_text(path, "spec"), str(path))
