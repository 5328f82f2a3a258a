"""The PMC table: the projected migration cost ``C`` of every balanced partitioning, which
``albic precompute`` (:mod:`albic.spark.precompute`) writes and the MTM planner
(:mod:`albic.planners.mtm`) reads (state-migration paper, section 5.2; design section 7).

A folder of two files, each written atomically, the table first, so that a metadata file always
describes a complete table:

- :data:`TABLE` (``table.parquet``): one row per partitioning, columns ``n`` (int32, its node
  count), ``cuts`` (list of int32, its interior cuts in task positions) and ``cost`` (float64, its
  ``C``);
- :data:`METADATA` (``metadata.json``, schema :data:`PMC_SCHEMA`): what the table was computed
  from and how -- ``inputs.tasks``, ``tau`` and ``gamma`` at least, the block
  bounds of a coarsened table (``block_bounds``), and what it is for (``operator``,
  ``key_groups``) when known.

Example
-------
>>> import tempfile
>>> with tempfile.TemporaryDirectory() as folder:
...     out = write_pmc_table(folder, [(1, []), (2, [1]), (2, [2])], [0.0, 1.5, 2.5],
...                           {"inputs": {"tasks": 3}, "tau": 0.5, "gamma": 0.8})
...     table = read_pmc_table(out)
>>> table.tasks, table.gamma, table.lookup(2, (2,)), table.lookup(3, ())
(3, 0.8, 2.5, None)
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from albic.base.errors import AlbicError, InvalidParameterError
from albic.base.files import atomic_write_bytes, atomic_write_text
from albic.io.reader import check_input_file, read_input_json

__all__ = [
    "PMC_SCHEMA",
    "TABLE",
    "METADATA",
    "ProjectedCosts",
    "read_pmc_table",
    "write_pmc_table",
]

PMC_SCHEMA = "albic.pmc/1"
TABLE = "table.parquet"
METADATA = "metadata.json"
# The metadata fields every table has (dotted: a field of a field): the reader needs them.
_REQUIRED = ("inputs.tasks", "gamma", "tau")


@dataclass(frozen=True)
class ProjectedCosts:
    """A PMC table: per node count, the partitionings' interior cuts (task positions) and ``C``."""

    tasks: int
    gamma: float
    tau: float
    by_nodes: dict[int, tuple[list[tuple[int, ...]], np.ndarray]]
    bounds: tuple[int, ...] = ()
    operator: str | None = None
    key_groups: tuple[str, ...] = ()

    def nearest_bounds(self) -> np.ndarray:
        """For every position ``0..tasks``, the nearest block bound (ties: the lower)."""
        positions = np.arange(self.tasks + 1)
        if not self.bounds:
            return positions
        bounds = np.asarray(self.bounds)
        return bounds[np.argmin(np.abs(bounds[None, :] - positions[:, None]), axis=1)]

    def snapped(self, cuts: tuple[int, ...]) -> tuple[int, ...]:
        """``cuts`` moved to the nearest block bounds of a coarsened table (ties: the lower)."""
        if not self.bounds:
            return cuts
        bounds = np.asarray(self.bounds)
        near = [int(bounds[np.argmin(np.abs(bounds - c))]) for c in cuts]
        return tuple(sorted({c for c in near if 0 < c < self.tasks}))

    def lookup(self, n: int, cuts: tuple[int, ...]) -> float | None:
        """``C`` of the partitioning of ``n`` nodes with interior cuts ``cuts``; ``None`` when the
        table does not hold it."""
        entries = self.by_nodes.get(n)
        if entries is None:
            return None
        try:
            return float(entries[1][entries[0].index(cuts)])
        except ValueError:
            return None


def _missing(metadata: Mapping[str, Any]) -> list[str]:
    """The required fields (``inputs.tasks``, ``gamma``, ``tau``) that ``metadata`` lacks."""
    missing = []
    for name in _REQUIRED:
        value: Any = metadata
        for part in name.split("."):
            value = value.get(part) if isinstance(value, Mapping) else None
        if value is None:
            missing.append(name)
    return missing


def write_pmc_table(
    out: str | os.PathLike[str],
    partitionings: Iterable[tuple[int, Sequence[int]]],
    costs: Sequence[float] | np.ndarray,
    metadata: Mapping[str, Any],
) -> Path:
    """Write the table of ``partitionings`` (node count, interior cuts in task positions), in
    their order, with their ``costs``, and ``metadata`` (schema :data:`PMC_SCHEMA` added) into the
    folder ``out``; returns ``out``."""
    import pyarrow as pa

    missing = _missing(metadata)
    if missing:
        raise InvalidParameterError(
            f"PMC metadata lacks {', '.join(missing)}, which the MTM planner reads; it has {sorted(metadata)}"
        )
    rows = list(partitionings)
    costs = np.asarray(costs, dtype=float)
    if costs.shape != (len(rows),):
        raise InvalidParameterError(f"a PMC table of {len(rows)} partitionings got {costs.size} costs")
    table = pa.table(
        {
            "n": pa.array([n for n, _ in rows], type=pa.int32()),
            "cuts": pa.array([list(cuts) for _, cuts in rows], type=pa.list_(pa.int32())),
            "cost": pa.array(costs, type=pa.float64()),
        }
    )
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(out / TABLE, _parquet_bytes(table))
    atomic_write_text(out / METADATA, json.dumps(_with_schema(metadata), indent=2) + "\n")
    return out


def _with_schema(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """``metadata`` led by the schema field."""
    return {"schema": PMC_SCHEMA, **{k: v for k, v in metadata.items() if k != "schema"}}


def _parquet_bytes(table: Any) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return sink.getvalue().to_pybytes()


# A planner reads its table at every plan of a replay: read once per file version.
_cache: dict[tuple[str, float], ProjectedCosts] = {}


def read_pmc_table(directory: str | os.PathLike[str]) -> ProjectedCosts:
    """The PMC table in folder ``directory`` (cached per folder and modification time of the
    table)."""
    directory = Path(directory)
    table_path, meta_path = directory / TABLE, directory / METADATA
    if not table_path.exists() or not meta_path.exists():
        raise AlbicError(
            f"{directory} holds no PMC table ({TABLE} and {METADATA}); run `albic precompute` first"
        )
    key = (str(table_path.resolve()), check_input_file(table_path, "PMC table").st_mtime)
    if key in _cache:
        return _cache[key]
    meta = read_input_json(meta_path, "PMC metadata")
    grouped: dict[int, tuple[list, list]] = {}
    for n, cuts, cost in _rows(table_path):
        entry = grouped.setdefault(int(n), ([], []))
        entry[0].append(tuple(int(c) for c in cuts))
        entry[1].append(float(cost))
    try:
        result = ProjectedCosts(
            tasks=int(meta["inputs"]["tasks"]),
            gamma=float(meta["gamma"]),
            tau=float(meta["tau"]),
            by_nodes={n: (c, np.array(v)) for n, (c, v) in grouped.items()},
            bounds=tuple(int(b) for b in meta.get("block_bounds", ())),
            operator=meta.get("operator"),
            key_groups=tuple(str(k) for k in meta.get("key_groups") or ()),
        )
    except (KeyError, TypeError, ValueError, AttributeError):
        raise AlbicError(
            f"PMC metadata {meta_path}: not the {METADATA} 'albic precompute' writes "
            "(inputs.tasks, gamma, tau, ...)"
        ) from None
    _cache[key] = result
    return result


def _rows(table_path: Path) -> Iterable[tuple[Any, Any, Any]]:
    """The table's ``(n, cuts, cost)`` rows."""
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(table_path).to_pydict()
    except Exception as err:  # pyarrow's errors have no common base worth naming
        raise AlbicError(
            f"PMC table {table_path}: not a readable Parquet file ({str(err)[:200]!r})"
        ) from None
    return zip(table["n"], table["cuts"], table["cost"])
