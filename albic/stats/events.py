"""Event files (CSV or Parquet) checked once, by one set of rules, for every statistics engine.

``albic stats`` reads a trace file with pandas (:class:`albic.stats.pandas_engine.PandasEngine`),
DuckDB (:class:`albic.stats.duckdb_engine.DuckDBEngine`) or Spark
(:func:`albic.spark.stats_engine.run_spark`). Each first passes the file through :func:`scan_event_file`,
so they accept and refuse the same files with the same one-line message
(:class:`TraceError`, CLI exit 2) instead of each engine's own parser error. The scan
streams the file with pyarrow in batches (memory bounded; Spark's own read comes after it), and
checks, in this order:

====================================  ======  ==================================================
file                                  rule    why / message names
====================================  ======  ==================================================
0 bytes (CSV or Parquet)              refuse  "the file is empty"
not Parquet, truncated, corrupt       refuse  "not a readable Parquet file" and pyarrow's cause
CSV row with too many / too few       refuse  the row (1 = first event), its fields, the header's
fields, or a quoted line break                fields and the row's text: one event per line
missing column the spec needs         refuse  the column and its role (:func:`check_columns`)
timestamp cell empty or a null value  refuse  the row
timestamp text not ISO 8601           refuse  the row and the value (:func:`timestamp_micros`)
service time not a number >= 0        refuse  the row and the value
header only / no row groups           refuse  "the event table has no rows"
Parquet timestamps in ns, or with a   accept  read as UTC instants to the microsecond by both
time zone                                     (Spark reads nanoseconds as longs, see
                                              :func:`nanosecond_columns`)
ISO 8601 texts, with or without zone  accept  each on its own; without a zone it is UTC
a folder of Parquet files             accept  one table, checked file by file
====================================  ======  ==================================================

Rows count the events from 1 (in a CSV file without quoted line breaks, row N is line N + 1).
Reading chosen where the engines differed: a CSV row with fewer fields than the header is refused
(pandas padded it with missing cells, Spark refused it); a quoted line break is refused (pandas
kept it inside the cell, Spark, reading line by line, split the event); a Parquet file is read
whole (pandas read every column, Spark only those it needs): corrupt bytes anywhere refuse it.

Example
-------
>>> import tempfile, pathlib
>>> from albic.stats.spec import parse_spec
>>> spec = parse_spec('timestamp = "t"\\n[[operators]]\\nname = "w"\\nkeys = ["w"]')
>>> path = pathlib.Path(tempfile.mkdtemp()) / "events.csv"
>>> _ = path.write_text("t,w\\n2013-01-01T10:00Z,a\\n2013-01-01T10:05Z,b,c\\n")
>>> scan_event_file(path, spec)
Traceback (most recent call last):
...
albic.base.errors.TraceError: .../events.csv: row 2 has 3 fields, the header has 2: '2013-01-01T10:05Z,b,c'; every event is one line with one field per header column
"""

from __future__ import annotations

import csv
import gzip
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from albic.base.errors import TraceError
from albic.io.reader import check_header, check_input_file, check_input_head
from albic.stats.spec import TopologySpec

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa


__all__ = [
    "TraceError",
    "is_csv",
    "check_columns",
    "scan_event_file",
    "timestamp_micros",
    "service_seconds",
    "check_timestamps",
    "check_service_times",
    "bad_timestamp",
    "bad_service_time",
    "missing_timestamp",
    "no_rows",
    "nanosecond_columns",
]

_BATCH_ROWS = 65_536
# An ISO 8601 time of day that ends in a zone: Z or an offset (+01, +0100, +01:00).
_ZONED = r"[Tt ]\d{2}(?::?\d{2}){0,2}(?:[.,]\d+)?\s*(?:[Zz]|[+-]\d{2}(?::?\d{2})?)$"


def is_csv(path: str | os.PathLike[str]) -> bool:
    return str(path).lower().endswith((".csv", ".csv.gz", ".txt"))


def check_columns(columns: Any, spec: TopologySpec, source: str) -> None:
    """Fail, naming the column, if the events lack a column the spec needs."""
    columns = list(columns)
    if not columns:
        raise TraceError(f"{source}: the event table is empty (no columns)")
    needed = list(dict.fromkeys([spec.timestamp, *spec.key_columns(), *spec.service_time_columns()]))
    missing = [c for c in needed if c not in columns]
    if missing:

        def role(column: str) -> str:
            keys = [op.name for op in spec.operators if column in op.keys]
            timed = [op.name for op in spec.operators if op.service_time == column]
            if keys:
                return f" (key of {', '.join(keys)})"
            return f" (service time of {', '.join(timed)})" if timed else " (the timestamp)"

        what = ", ".join(f"{c!r}{role(c)}" for c in missing)
        raise TraceError(f"{source}: missing column(s) {what}; the table has {columns}")


# -- the messages (one wording, whichever engine or check finds the problem) ----------------------


def _where(row: int | None) -> str:
    return "" if row is None else f" (row {row})"


def missing_timestamp(source: str, column: str, count: int, row: int | None = None) -> TraceError:
    if row is None:
        return TraceError(f"{source}: column {column!r}: {count} row(s) have no timestamp")
    return TraceError(f"{source}: column {column!r}: row {row} has no timestamp; {count} such row(s)")


def bad_timestamp(source: str, column: str, value: Any, count: int, row: int | None = None) -> TraceError:
    return TraceError(
        f"{source}: column {column!r}: cannot parse {value!r}{_where(row)} as a timestamp; "
        f"{count} such row(s); expected ISO 8601, e.g. 2013-01-01T10:00:00Z"
    )


def bad_service_time(source: str, column: str, value: Any, count: int, row: int | None = None) -> TraceError:
    return TraceError(
        f"{source}: column {column!r} (service time): {value!r}{_where(row)} is not a number of "
        f"seconds >= 0; {count} such row(s)"
    )


def no_rows(source: str) -> TraceError:
    return TraceError(f"{source}: the event table has no rows")


# -- the value rules ------------------------------------------------------------------------------


def timestamp_micros(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Event times as microseconds since the epoch (UTC) and a mask of the cells that are not a
    time (missing cells are masked too; their micros are 0).

    Numbers are seconds since the epoch; datetimes without a zone are UTC; text must be ISO 8601
    (pandas' ``format="ISO8601"``). The Spark job parses text with this same function (a pandas
    UDF), so the engines accept the same texts.

    >>> micros, bad = timestamp_micros(pd.Series(["1970-01-01T00:00:01.5Z", "soon", None]))
    >>> micros.tolist(), bad.tolist()
    ([1500000, 0, 0], [False, True, True])
    """
    missing = values.isna().to_numpy()
    if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
        seconds = values.to_numpy(dtype=float, na_value=np.nan)
        bad = missing | ~np.isfinite(seconds)
        micros = np.floor(np.where(bad, 0.0, seconds) * 1_000_000).astype(np.int64)
        return micros, bad
    if isinstance(values.dtype, pd.DatetimeTZDtype) or pd.api.types.is_datetime64_dtype(values):
        times = pd.to_datetime(values, utc=True)
    else:
        # Texts with a zone and texts without one are parsed apart: in one call pandas (2.3) reads
        # a text without a zone in the zone of the text before it ("...T10:00+01:00" then
        # "...T11:05" gives 10:05 UTC), so the result would hang on the row order and batching.
        text = values.astype(object)
        zoned = text.astype(str).str.contains(_ZONED).to_numpy()
        times = pd.Series(pd.NaT, index=values.index, dtype="datetime64[ns, UTC]")
        for part in (zoned, ~zoned):
            if part.any():
                times[part] = pd.to_datetime(text[part], utc=True, format="ISO8601", errors="coerce")
    bad = times.isna().to_numpy() | missing
    micros = times.astype("datetime64[us, UTC]").astype("int64").to_numpy()
    return np.where(bad, 0, micros), bad


def service_seconds(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Measured seconds per event (NaN where a cell is missing: that event is not timed) and a
    mask of the cells that are not a number of seconds >= 0."""
    if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
        seconds = values.to_numpy(dtype=float, na_value=np.nan)
        bad = np.zeros(len(values), dtype=bool)
    else:
        seconds = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
        bad = np.isnan(seconds) & values.notna().to_numpy()
    return seconds, bad | (seconds < 0)


def check_timestamps(values: pd.Series, column: str, source: str, first_row: int = 1) -> np.ndarray:
    """:func:`timestamp_micros` of ``values`` (whose first cell is row ``first_row``); fails on
    the first missing or unparseable one, naming the row and the value."""
    micros, bad = timestamp_micros(values)
    if bad.any():
        at = int(np.flatnonzero(bad)[0])
        count, value = int(bad.sum()), values.iloc[at]
        if value is None or pd.isna(value):
            raise missing_timestamp(source, column, count, first_row + at)
        raise bad_timestamp(source, column, value, count, first_row + at)
    return micros


def check_service_times(values: pd.Series, column: str, source: str, first_row: int = 1) -> np.ndarray:
    """:func:`service_seconds` of ``values``; fails on the first bad one, naming row and value."""
    seconds, bad = service_seconds(values)
    if bad.any():
        at = int(np.flatnonzero(bad)[0])
        raise bad_service_time(source, column, values.iloc[at], int(bad.sum()), first_row + at)
    return seconds


def check_values(
    events: pd.DataFrame, spec: TopologySpec, source: str, first_row: int = 1
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The timestamp and service-time rules on ``events``, whose first row is ``first_row``; the
    event times (:func:`timestamp_micros`) and each service-time column's seconds."""
    micros = check_timestamps(events[spec.timestamp], spec.timestamp, source, first_row)
    seconds = {
        name: check_service_times(events[name], name, source, first_row)
        for name in spec.service_time_columns()
    }
    return micros, seconds


# -- the file scan --------------------------------------------------------------------------------


def scan_event_file(
    path: str | os.PathLike[str],
    spec: TopologySpec,
    *,
    keep: bool = False,
    sink: Callable[[pa.RecordBatch, np.ndarray, dict[str, np.ndarray]], None] | None = None,
) -> pa.Table | None:
    """Check the event file at ``path`` by the rules of the module docstring; with ``keep``, return
    its table (CSV: every cell as text; Parquet: as typed), else ``None`` after streaming it.
    ``sink``, when given, receives every checked batch with its event times and service seconds
    (:func:`check_values`), so a caller can stage the events in the same pass.

    Cells equal to one of the spec's ``null_values`` are missing (in every column of a CSV file;
    in the key and service-time columns of a Parquet file)."""
    path = Path(path)
    if not path.is_dir():  # a folder of Parquet files is a dataset; a file is checked before opening
        # No size limit: an events file is as large as the trace; a .gz CSV is read as it is.
        if is_csv(path) and not str(path).lower().endswith(".gz"):
            check_input_head(path, "events file", limit=False)
        else:  # Parquet, or a .csv.gz pyarrow decompresses
            check_input_file(path, "events file", limit=False)
    source = str(path)
    if path.is_file() and path.stat().st_size == 0:
        raise TraceError(f"{source}: the file is empty")
    batches = _csv_batches(path, spec) if is_csv(path) else _parquet_batches(path, spec)
    kept, rows = [], 0
    for batch in batches:
        if is_csv(path):
            _check_one_line(batch, source, rows + 1)
        frame = _as_events(batch, spec, csv_file=is_csv(path))
        micros, seconds = check_values(frame, spec, source, rows + 1)
        if sink is not None:
            sink(batch, micros, seconds)
        rows += len(frame)
        if keep:
            kept.append(batch)
    if rows == 0:
        raise no_rows(source)
    if not keep:
        return None
    import pyarrow as pa

    return pa.Table.from_batches(kept)


def _as_events(batch: pa.RecordBatch, spec: TopologySpec, *, csv_file: bool) -> pd.DataFrame:
    """The columns the rules look at, with the spec's null values missing."""
    needed = [spec.timestamp, *spec.service_time_columns()]
    frame = batch.select(list(dict.fromkeys(needed))).to_pandas()
    nulls = list(spec.null_values)
    for name in frame.columns:
        if (csv_file or name != spec.timestamp) and frame[name].dtype == object:
            frame[name] = frame[name].where(~frame[name].isin(nulls), None)
    return frame


def _check_one_line(batch: pa.RecordBatch, source: str, first_row: int) -> None:
    """Refuse a quoted line break in a CSV cell: Spark reads one event per line (``multiLine``
    off), so it would split that event where pandas would not."""
    import pyarrow.compute as pc

    for name, column in zip(batch.schema.names, batch.columns):
        broken = pc.match_substring_regex(column, "[\r\n]")
        if pc.any(broken).as_py():
            at = pc.index(broken, True).as_py()
            raise TraceError(
                f"{source}: row {first_row + at}, column {name!r}: {column[at].as_py()!r} holds a "
                "line break; every event is one line with one field per header column"
            )


def _unreadable(source: str, err: Exception) -> TraceError:
    # the first line, printable (a thrift error may end in the raw byte it choked on)
    text = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    cause = "".join(c if c.isprintable() else "?" for c in text).strip()
    return TraceError(f"{source}: not a readable Parquet file ({cause})")


def _parquet_batches(path: Path, spec: TopologySpec):
    """The batches of a Parquet file, or of a folder of them (a dataset Spark or pandas wrote)."""
    import pyarrow as pa
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    source = str(path)
    try:  # a file directly: pyarrow's message then names the cause, not the dataset layer
        data = ds.dataset(path, format="parquet") if path.is_dir() else pq.ParquetFile(path)
        names = data.schema.names if path.is_dir() else data.schema_arrow.names
    except (pa.ArrowException, OSError) as err:
        raise _unreadable(source, err) from None
    check_columns(names, spec, source)
    try:
        if path.is_dir():
            yield from data.to_batches(batch_size=_BATCH_ROWS, use_threads=False)
        else:
            yield from data.iter_batches(batch_size=_BATCH_ROWS)
    except (pa.ArrowException, OSError) as err:
        raise _unreadable(source, err) from None


def _csv_header(path: Path) -> list[str]:
    opener = gzip.open if str(path).lower().endswith(".gz") else open
    try:
        with opener(path, "rt", newline="", encoding="utf-8") as handle:
            header = next(csv.reader(handle), [])
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise TraceError(f"{path}: cannot read the CSV header ({err})") from None
    check_header(header, path, "events file")
    return header


def _csv_batches(path: Path, spec: TopologySpec):
    import pyarrow as pa
    import pyarrow.csv as pacsv

    source = str(path)
    header = _csv_header(path)
    check_columns(header, spec, source)
    ragged = []

    def refuse(row: Any) -> str:
        ragged.append(row)
        return "error"

    # One thread: the handler then knows each row's number.
    try:
        yield from pacsv.open_csv(  # opening reads the first block: inside the try
            path,
            read_options=pacsv.ReadOptions(use_threads=False, block_size=1 << 22),
            parse_options=pacsv.ParseOptions(invalid_row_handler=refuse, newlines_in_values=True),
            convert_options=pacsv.ConvertOptions(
                column_types={name: pa.string() for name in header},
                strings_can_be_null=False,
            ),
        )
    except (pa.ArrowException, OSError) as err:
        if ragged:
            row = ragged[0]
            number = "?" if row.number is None else row.number - 1
            raise TraceError(
                f"{source}: row {number} has {row.actual_columns} fields, the header has "
                f"{row.expected_columns}: {row.text!r}; every event is one line with one field "
                "per header column"
            ) from None
        raise TraceError(f"{source}: cannot read the CSV file ({str(err).strip()})") from None


def nanosecond_columns(path: str | os.PathLike[str]) -> list[str]:
    """The columns of the Parquet file at ``path`` stored as INT64 nanosecond timestamps (pandas'
    default), which Spark reads only as longs (``spark.sql.legacy.parquet.nanosAsLong``); INT96
    timestamps, which pyarrow also shows in nanoseconds, Spark reads itself.

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "events.parquet"
    >>> pd.DataFrame({"t": pd.to_datetime(["2013-01-01"]), "w": ["a"]}).to_parquet(path)
    >>> nanosecond_columns(path)
    ['t']
    """
    import json

    import pyarrow.parquet as pq

    if is_csv(path):
        return []
    if Path(path).is_dir():  # a dataset folder: its files share one schema
        import pyarrow.dataset as ds

        files = ds.dataset(path, format="parquet").files
        return nanosecond_columns(files[0]) if files else []
    found = []
    for column in pq.ParquetFile(path).schema:
        logical = json.loads(column.logical_type.to_json() or "{}")
        if (
            column.physical_type == "INT64"
            and logical.get("Type") == "Timestamp"
            and logical.get("timeUnit") == "nanoseconds"
            and "." not in column.path
        ):
            found.append(column.name)
    return found
