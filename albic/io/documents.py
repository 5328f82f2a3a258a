"""Snapshot and plan files: JSON schema v1 (design section 6, a *contract*).

The JSON text is read with limits: at most :data:`MAX_JSON_DEPTH` levels of nesting, unique keys in
every object, numbers of at most 4300 digits; breaking one is an input error, never a
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

import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from albic.base.errors import DuplicateKeyError, InvalidPlanFileError, InvalidSnapshotError
from albic.base.files import atomic_write_text, dumps
from albic.core.codec import plan_from_dict, plan_to_dict, snapshot_from_dict, snapshot_to_dict
from albic.core.model import Snapshot
from albic.core.plan import Plan

__all__ = [
    "MAX_JSON_DEPTH",
    "json_depth",
    "loads",
    "read_snapshot",
    "write_snapshot",
    "read_plan",
    "write_plan",
]

#: The deepest nesting of arrays and objects a snapshot or plan file may have. A snapshot needs 4
#: levels (document, key_groups, a key group, its resources); the limit leaves room for plan details.
MAX_JSON_DEPTH = 64


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKeyError(key)
            seen.add(key)
    return obj


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def json_depth(text: str) -> int:
    """The deepest nesting of arrays and objects in JSON ``text`` (brackets in strings ignored)."""
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
    except DuplicateKeyError as err:
        raise ValueError(f"an object has the key {err.args[0]!r} twice; keys must be unique") from None
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
        raise error(f"not UTF-8 text (byte {err.start} cannot be decoded)", subject=f"in {path}") from None
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
