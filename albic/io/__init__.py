"""albic's files: snapshot and plan JSON, statistics datasets of many periods (design section 6).

This is the one room that reads and writes the file formats; everything here is public API::

    from albic.io import read_snapshot, read_snapshots, write_plan, snapshot_from_dict

- :mod:`albic.io.reader`: the one reader of every file a user gives albic (regular files only, a
  size limit, UTF-8, strict JSON), which every command uses;
- :mod:`albic.io.documents`: one snapshot or plan as a JSON file (strict, atomic);
- :mod:`albic.io.datasets`: the Parquet dataset ``albic stats`` writes, one snapshot per period;
- :mod:`albic.io.periods`: a command's input, a snapshot file, one period of a dataset or stdin;
- :mod:`albic.io.pmc`: the PMC table ``albic precompute`` writes and the MTM planner reads;
- :mod:`albic.io.examples`: the bundled example snapshot.

The JSON-ready form itself (``snapshot_to_dict`` and friends) is the model's own translation,
:mod:`albic.core.codec`; it is offered here too because reading and writing files is where users
look for it.
"""

from typing import TYPE_CHECKING

from albic.base.lazy import lazy_exports

# Imported on first use: the command line reads its input-size options from albic.io.reader
# before it knows whether a command needs the model or Parquet.
__getattr__, __dir__ = lazy_exports(
    globals(),
    {
        "InvalidPlanFileError": "albic.base.errors:InvalidPlanFileError",
        **{name: f"albic.base.files:{name}" for name in ("atomic_write_text", "check_writable", "dumps")},
        **{
            name: f"albic.core.codec:{name}"
            for name in (
                "PLAN_SCHEMA",
                "SNAPSHOT_SCHEMA",
                "plan_from_dict",
                "plan_to_dict",
                "snapshot_from_dict",
                "snapshot_to_dict",
            )
        },
        **{name: f"albic.io.datasets:{name}" for name in ("MANIFEST", "STATS_SCHEMA", "read_snapshots")},
        **{
            name: f"albic.io.documents:{name}"
            for name in (
                "MAX_JSON_DEPTH",
                "json_depth",
                "loads",
                "read_plan",
                "read_snapshot",
                "write_plan",
                "write_snapshot",
            )
        },
    },
)

if TYPE_CHECKING:  # what type checkers and editors see
    from albic.base.errors import InvalidPlanFileError
    from albic.base.files import atomic_write_text, check_writable, dumps
    from albic.core.codec import (
        PLAN_SCHEMA,
        SNAPSHOT_SCHEMA,
        plan_from_dict,
        plan_to_dict,
        snapshot_from_dict,
        snapshot_to_dict,
    )
    from albic.io.datasets import MANIFEST, STATS_SCHEMA, read_snapshots
    from albic.io.documents import (
        MAX_JSON_DEPTH,
        json_depth,
        loads,
        read_plan,
        read_snapshot,
        write_plan,
        write_snapshot,
    )

__all__ = [
    "SNAPSHOT_SCHEMA",
    "PLAN_SCHEMA",
    "STATS_SCHEMA",
    "MANIFEST",
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
