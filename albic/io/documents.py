"""Snapshot and plan files: JSON schema v1 (design section 6, a *contract*).

The file is read by :mod:`albic.io.reader` (a regular file, of limited size, UTF-8 text) and the
JSON text with its limits: at most :data:`MAX_JSON_DEPTH` levels of nesting, unique keys in every
object, numbers of at most 4300 digits, no NaN or infinity; breaking one is an input error, never a
``RecursionError``. The data itself is read by :mod:`albic.core.codec` (every structural problem
with its JSON path).

Writing is atomic (:func:`albic.base.files.atomic_write_text`), so a failed write never leaves a
half-written file. Writing to an existing file keeps its permission bits (not its owner); writing
to a symbolic link follows it on purpose, replacing the file it points to and keeping the link (as
the shell's ``>`` does). Errors name the path the caller gave, never the temporary file.

Example
-------
>>> import tempfile, pathlib
>>> from albic.core.model import Node, KeyGroup, Snapshot
>>> snap = Snapshot([Node("n1")], [KeyGroup("a", "op", 2.5, 64)], {"a": "n1"}, period="h0")
>>> path = write_snapshot(snap, pathlib.Path(tempfile.mkdtemp()) / "s.json")
>>> read_snapshot(path) == snap
True
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from albic.base.errors import InputFileError, InvalidPlanFileError, InvalidSnapshotError
from albic.base.files import atomic_write_text, dumps
from albic.core.codec import (
    PLAN_SCHEMA,
    SNAPSHOT_SCHEMA,
    plan_from_dict,
    plan_to_dict,
    snapshot_from_dict,
    snapshot_to_dict,
)
from albic.core.model import Snapshot
from albic.core.plan import Plan
from albic.io.reader import MAX_JSON_DEPTH, json_depth, loads, non_finite, read_input_json

__all__ = [
    "MAX_JSON_DEPTH",
    "json_depth",
    "loads",
    "read_snapshot",
    "snapshot_from_text",
    "write_snapshot",
    "read_plan",
    "write_plan",
]


def _parse(text: str, error: Callable[..., Exception], source: str, *, finite: bool) -> Any:
    try:
        return loads(text, finite=finite)
    except ValueError as err:
        raise error(str(err), subject=source) from None


def _read_json(path: str | os.PathLike[str], error: Callable[..., Exception], *, finite: bool) -> Any:
    try:
        return read_input_json(path, "", finite=finite)
    except InputFileError as err:  # one line in the file type's own words
        raise error(err.rule, subject=f"in {path}") from None


#: What each file schema holds, to name a file given in the other's place.
_KINDS = {PLAN_SCHEMA: "a plan", SNAPSHOT_SCHEMA: "a snapshot"}


def _check_kind(data: Any, expected: str, error: Callable[..., Exception], source: str) -> None:
    """Refuse, in one line, a document of the other albic schema (a plan where a snapshot is
    expected, or the reverse): it is the wrong file, not a broken one."""
    schema = data.get("schema") if isinstance(data, dict) else None
    if schema in _KINDS and schema != expected:
        raise error(
            f"this is {_KINDS[schema]} file (schema {schema}), not {_KINDS[expected]} file; "
            f"give {_KINDS[expected]} file here",
            subject=source,
        )


def _snapshot(data: Any, source: str) -> Snapshot:
    """The snapshot of JSON ``data``; the model names a non-finite load or size by its key group,
    and any other number that is not finite is refused here, by its path."""
    _check_kind(data, SNAPSHOT_SCHEMA, InvalidSnapshotError, source)
    snapshot = snapshot_from_dict(data, source=source)
    problem = non_finite(data)
    if problem is not None:
        raise InvalidSnapshotError(problem, subject=source)
    return snapshot


def snapshot_from_text(text: str, source: str) -> Snapshot:
    """A snapshot from JSON ``text`` (e.g. standard input), read as :func:`read_snapshot` reads a
    file; ``source`` names where the text came from in messages ("in standard input")."""
    return _snapshot(_parse(text, InvalidSnapshotError, source, finite=False), source)


def read_snapshot(path: str | os.PathLike[str]) -> Snapshot:
    """Read and validate a snapshot JSON file."""
    return _snapshot(_read_json(path, InvalidSnapshotError, finite=False), f"in {path}")


def write_snapshot(snapshot: Snapshot, path: str | os.PathLike[str]) -> Path:
    """Write a snapshot JSON file atomically (the snapshot is validated first)."""
    return atomic_write_text(path, dumps(snapshot_to_dict(snapshot)) + "\n")


def read_plan(path: str | os.PathLike[str]) -> Plan:
    """Read a plan JSON file."""
    data = _read_json(path, InvalidPlanFileError, finite=True)
    _check_kind(data, PLAN_SCHEMA, InvalidPlanFileError, f"in {path}")
    return plan_from_dict(data, source=f"in {path}")


def write_plan(plan: Plan, path: str | os.PathLike[str]) -> Path:
    """Write a plan JSON file atomically."""
    return atomic_write_text(path, dumps(plan_to_dict(plan)) + "\n")
