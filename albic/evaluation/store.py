"""A comparison's output folder as the record of its finished replays (``albic compare --resume``).

A long grid must not lose its finished replays when the driver dies. While :func:`compare
<albic.evaluation.compare.compare>` runs, every replay is written to ``OUT/_replays/DIGEST.csv``
as soon as it finishes (atomically: a file there is a whole replay); at the end
:meth:`ReplayStore.write` writes ``OUT/replay.csv`` and ``OUT/compare.json`` (which replay of the
table has which digest) and removes ``_replays``. With ``resume=True`` a replay whose rows are
already in OUT, in either form, is handed back instead of run again.

The digest (:func:`~albic.evaluation.compare.replay_digest`) covers what a replay's rows depend on:
the planner and its parameters, the budget, the replay rules and the periods. A replay run with
other parameters, or over other statistics, is not in OUT and runs again.

Example
-------
>>> import tempfile, pathlib
>>> from albic.core.model import Node, KeyGroup, Snapshot
>>> from albic.evaluation.compare import compare
>>> kgs = [KeyGroup(f"k{i}", "op", float(i + 1), 10.0, index=i) for i in range(4)]
>>> snap = Snapshot([Node("n1"), Node("n2")], kgs, {k.id: "n1" for k in kgs}, period="t0")
>>> out = pathlib.Path(tempfile.mkdtemp())
>>> store = ReplayStore(out)
>>> table = compare([snap], ["flux", "storm_default"], store=store)
>>> store.write(table)
>>> again = ReplayStore(out, resume=True)
>>> table2 = compare([snap], ["flux", "storm_default", "consistent_hashing"], store=again)
>>> again.reused, list(table2["planner"])
(2, ['flux', 'storm_default', 'consistent_hashing'])
"""

from __future__ import annotations

import json
import math
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from albic.base.files import atomic_write_text, dumps

__all__ = ["ReplayStore", "read_replay_table", "PARTIAL", "RECORD", "TABLE"]

#: The folder of replays finished while a comparison runs.
PARTIAL = "_replays"
#: The digest of every replay of the finished table.
RECORD = "compare.json"
#: The finished table.
TABLE = "replay.csv"
RECORD_SCHEMA = "albic.compare/1"

# The text columns of a replay table: an empty text is written as an empty CSV cell, which pandas
# reads back as NaN.
_TEXT_COLUMNS = (
    "planner",
    "budget_parameter",
    "period",
    "status",
    "decided_on",
    "floor_key_group",
    "error",
    "fallback",
)
# The counts: whole numbers, missing only in the rows of a replay that never ran.
_COUNT_COLUMNS = ("step", "nodes", "removing", "moves", "overloaded_nodes", "moves_dropped")


def _typed(table: pd.DataFrame) -> pd.DataFrame:
    """Counts as integers again (pandas reads a column with an empty cell as floats), nullable
    only where one is missing: the types the table had before it was written."""
    for column in _COUNT_COLUMNS:
        if column in table:
            missing = table[column].isna().any()
            table[column] = table[column].astype("Int64" if missing else "int64")
    # A replay that never ran has no partial mark: read back beside it, the column is text.
    if "partial" in table and table["partial"].notna().all():
        table["partial"] = table["partial"].astype(str).eq("True")
    return table


def read_replay_table(path: str | os.PathLike[str]) -> pd.DataFrame:
    """A replay table written with ``to_csv(index=False)``, with the types it was written with
    (text columns as text, empty text included), so that writing it again gives the same file.
    Numbers are parsed round-trip exact: pandas' default parser is off by a few units in the last
    place (0.005092592592592591 read back as 0.0050925925925925), so a table resumed from OUT
    differed from the same table computed in one go."""
    table = pd.read_csv(path, dtype={c: str for c in _TEXT_COLUMNS}, float_precision="round_trip")
    for column in _TEXT_COLUMNS:
        if column in table:
            table[column] = table[column].fillna("")
    return _typed(table)


def _key(planner: str, budget_parameter: str, budget: Any) -> tuple[str, str, float | None]:
    budget = None if budget is None or (isinstance(budget, float) and math.isnan(budget)) else float(budget)
    return str(planner), str(budget_parameter), budget


class ReplayStore:
    """The replays of a comparison kept in ``out`` (see the module docstring).

    Without ``resume`` nothing is handed back, and a folder of partial replays left by an earlier
    run is removed first. ``reused`` counts the replays handed back.
    """

    def __init__(self, out: str | os.PathLike[str], *, resume: bool = False) -> None:
        self.out = Path(out)
        self.partial = self.out / PARTIAL
        self.resume = resume
        self.reused = 0
        self._order: list[tuple[tuple[str, str, float | None], str]] = []  # (run key, digest)
        self._kept: set[str] = set()  # digests of the replays OUT holds whole
        self._finished: dict[str, pd.DataFrame] | None = None
        if not resume and self.partial.exists():
            shutil.rmtree(self.partial)

    def load(self, digest: str, run: Any, periods: Sequence[str]) -> pd.DataFrame | None:
        """The rows of the replay ``digest`` (of ``run``) if OUT has all of them, else None."""
        self._order.append((_key(run.label, run.budget_parameter, run.budget), digest))
        if not self.resume:
            return None
        path = self.partial / f"{digest}.csv"
        table = read_replay_table(path) if path.is_file() else self._finished_tables().get(digest)
        if table is None or table["period"].tolist() != [str(p) for p in periods]:
            return None
        self.reused += 1
        self._kept.add(digest)
        return table

    def save(self, digest: str, run: Any, table: pd.DataFrame) -> None:
        """Keep a finished replay (one file, written atomically)."""
        self.partial.mkdir(parents=True, exist_ok=True)
        atomic_write_text(self.partial / f"{digest}.csv", table.to_csv(index=False))
        self._kept.add(digest)

    def write(self, table: pd.DataFrame) -> None:
        """Write the comparison's table (``replay.csv``) and the digests of its replays that ran
        (``compare.json``; not those that never ran, whose Spark task failed every attempt: a
        resumed comparison runs them again), then remove the partial replays."""
        self.out.mkdir(parents=True, exist_ok=True)
        record = {
            "schema": RECORD_SCHEMA,
            "replays": [
                {"planner": key[0], "budget_parameter": key[1], "budget": key[2], "digest": digest}
                for key, digest in self._order
                if digest in self._kept
            ],
        }
        atomic_write_text(self.out / TABLE, table.to_csv(index=False))
        atomic_write_text(self.out / RECORD, dumps(record) + "\n")
        if self.partial.exists():
            shutil.rmtree(self.partial)

    def _finished_tables(self) -> dict[str, pd.DataFrame]:
        """Digest -> rows, of the finished comparison in OUT (empty if there is none)."""
        if self._finished is None:
            self._finished = {}
            record_path, table_path = self.out / RECORD, self.out / TABLE
            if record_path.is_file() and table_path.is_file():
                record = json.loads(record_path.read_text(encoding="utf-8"))
                if record.get("schema") == RECORD_SCHEMA:
                    digests = {
                        _key(r["planner"], r["budget_parameter"], r["budget"]): r["digest"]
                        for r in record.get("replays", [])
                    }
                    table = read_replay_table(table_path)
                    groups = table.groupby(
                        ["planner", "budget_parameter", table["budget"].fillna(-1.0)], sort=False
                    )
                    for (planner, parameter, _), rows in groups:
                        digest = digests.get(_key(planner, parameter, rows["budget"].iloc[0]))
                        if digest is not None:
                            self._finished[digest] = _typed(rows.reset_index(drop=True))
        return self._finished
