"""The JSON Schemas of albic's files, shipped with the package (design section 6).

``albic.snapshot/1`` (``snapshot.schema.json``) and ``albic.plan/1`` (``plan.schema.json``) are
JSON Schema 2020-12 documents, printed by ``albic schema snapshot|plan``, so that another tool can
check a file before it hands it to albic (or after albic wrote it). They describe the structure,
the types and the ranges; the rules between fields (unique ids, a key group's node among the
nodes, ...) are albic's reader's, which names every problem in its own words. albic itself never
needs a JSON Schema library: the test suite validates every file albic writes against these.

Example
-------
>>> schema("snapshot")["title"], sorted(schema("plan")["required"])
('albic.snapshot/1', ['assignment', 'moves', 'planner', 'schema', 'status'])
"""

from __future__ import annotations

import json
from importlib.resources import files
from typing import Any

from albic.base.errors import InvalidParameterError
from albic.core.codec import PLAN_SCHEMA, SNAPSHOT_SCHEMA

__all__ = ["SCHEMAS", "schema", "schema_text"]

#: Name (``albic schema NAME``) -> the schema id a document carries in its ``schema`` field.
SCHEMAS = {"snapshot": SNAPSHOT_SCHEMA, "plan": PLAN_SCHEMA}


def schema_text(name: str) -> str:
    """The JSON Schema of ``name`` (``snapshot`` or ``plan``) as shipped, text."""
    if name not in SCHEMAS:
        raise InvalidParameterError(f"no schema {name!r}; albic's are {', '.join(SCHEMAS)}")
    return (files("albic.io") / f"{name}.schema.json").read_text(encoding="utf-8")


def schema(name: str) -> dict[str, Any]:
    """The JSON Schema of ``name`` (``snapshot`` or ``plan``) as data."""
    return json.loads(schema_text(name))
