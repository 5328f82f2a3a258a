"""The events as the DuckDB statistics engine sees them: the view ``events`` (us, k0.., s0..).

:func:`open_events` checks the events by the shared rules (:func:`albic.stats.events.scan_event_file`)
and creates the view: straight over a Parquet file whose columns DuckDB reads as the pandas twin
does (timestamps in seconds, milli- or microseconds, or numbers of seconds; keys of text or
integers; numeric service times), else over a Parquet file staged during the check, of event
times in microseconds, key texts and service seconds computed by the pandas twin's own functions.
``us`` is the event time in microseconds (UTC), ``k<i>`` the text of the spec's i-th key column
(missing when missing or a null value), ``s<j>`` the j-th service-time column in seconds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from albic.stats.events import check_columns, check_values, is_csv, no_rows, scan_event_file
from albic.stats.pandas_engine import normalise_events
from albic.stats.request import StatsRequest
from albic.stats.spec import KEY_SEPARATOR, OperatorSpec, TopologySpec

__all__ = ["EventColumns", "open_events", "sql_text"]


def _sql_name(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def sql_text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


class EventColumns:
    """The spec's key and service-time columns under the names of the events view: ``k<i>`` for
    the i-th key column, ``s<j>`` for the j-th service-time column."""

    def __init__(self, spec: TopologySpec) -> None:
        self.keys = list(dict.fromkeys(spec.key_columns()))
        self.service = list(spec.service_time_columns())
        self.spec = spec

    def key_name(self, column: str) -> str:
        return f"k{self.keys.index(column)}"

    def service_name(self, column: str) -> str:
        return f"s{self.service.index(column)}"

    def key_expression(self, op: OperatorSpec) -> str:
        """The operator's key text (NULL when a part is missing or the whole is a null value)."""
        text = f" || {sql_text(KEY_SEPARATOR)} || ".join(self.key_name(c) for c in op.keys)
        return f"CASE WHEN ({text}) IN ({self.nulls()}) THEN NULL ELSE ({text}) END"

    def nulls(self) -> str:
        return ", ".join(sql_text(v) for v in self.spec.null_values) or "NULL"


def open_events(con: Any, request: StatsRequest, columns: EventColumns, scratch: Path) -> None:
    """Create the view ``events`` (us, k0.., s0..) over the request's events, checked."""
    spec, source = request.spec, request.source
    if isinstance(request.events, pd.DataFrame):
        check_columns(list(request.events.columns), spec, source)
        if len(request.events) == 0:
            raise no_rows(source)
        frame = normalise_events(request.events, spec)
        micros, seconds = check_values(frame, spec, source)
        con.register("events_staged", _staged(frame, micros, seconds, columns))
        con.execute("CREATE VIEW events AS SELECT * FROM events_staged")
        return
    path = Path(request.events)
    direct = None if is_csv(path) else _direct_select(path, columns)
    if direct is not None:
        scan_event_file(path, spec)
        con.execute(f"CREATE VIEW events AS {direct}")
        return
    staged = scratch / "events.parquet"
    _stage_file(path, spec, columns, staged)
    con.execute(f"CREATE VIEW events AS SELECT * FROM read_parquet({sql_text(str(staged))})")


def _stage_file(path: Path, spec: TopologySpec, columns: EventColumns, staged: Path) -> None:
    import pyarrow.parquet as pq

    writer = None

    def sink(batch: Any, micros: np.ndarray, seconds: dict[str, np.ndarray]) -> None:
        nonlocal writer
        import pyarrow as pa

        needed = [c for c in dict.fromkeys([*columns.keys, *columns.service]) if c in batch.schema.names]
        frame = normalise_events(pa.Table.from_batches([batch]).select(needed), spec)
        if is_csv(path):  # a CSV cell is text: the pandas twin reads it as it is, nulls missing
            frame = frame.replace(list(spec.null_values), None)
        table = _staged(frame, micros, seconds, columns)
        writer = writer or pq.ParquetWriter(staged, table.schema)
        writer.write_table(table)

    try:
        scan_event_file(path, spec, sink=sink)
    finally:
        if writer is not None:
            writer.close()


def _staged(
    frame: pd.DataFrame, micros: np.ndarray, seconds: dict[str, np.ndarray], columns: EventColumns
) -> Any:
    """The events view's columns for a checked batch, as the pandas twin computes its keys: each
    key cell's ``str`` (missing stays missing), times in microseconds, service seconds."""
    import pyarrow as pa

    data: dict[str, Any] = {"us": pa.array(micros, type=pa.int64())}
    for column in columns.keys:
        cells = frame[column].astype(object)
        present = cells.notna()
        text = pd.Series(None, index=cells.index, dtype=object)
        text[present] = cells[present].map(str)
        data[columns.key_name(column)] = pa.array(text.to_numpy(), type=pa.string(), from_pandas=True)
    for column in columns.service:
        data[columns.service_name(column)] = pa.array(seconds[column], type=pa.float64(), from_pandas=True)
    return pa.table(data)


def _direct_select(path: Path, columns: EventColumns) -> str | None:
    """A SELECT of the events view straight from the Parquet file(s) at ``path``, or None when a
    column's type would read differently from the pandas twin's reading (then it is staged)."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    spec = columns.spec
    try:
        dataset = ds.dataset(path, format="parquet")
    except (pa.ArrowException, OSError):
        return None  # the scan names the fault
    schema, paths = dataset.schema, dataset.files
    if not paths or any(
        name not in schema.names for name in [spec.timestamp, *columns.keys, *columns.service]
    ):
        return None
    time = _direct_time(schema.field(spec.timestamp).type)
    keys = [_direct_key(schema.field(c).type, c, columns) for c in columns.keys if c != spec.timestamp]
    service = [_direct_service(schema.field(c).type, c, columns) for c in columns.service]
    if time is None or spec.timestamp in columns.keys or None in keys or None in service:
        return None
    listed = ", ".join(sql_text(str(p)) for p in paths)
    select = ", ".join([time.format(_sql_name(spec.timestamp)) + " AS us", *keys, *service])
    return f"SELECT {select} FROM read_parquet([{listed}], hive_partitioning = false)"


def _direct_time(kind: Any) -> str | None:
    import pyarrow as pa

    if pa.types.is_timestamp(kind) and kind.unit in ("s", "ms", "us"):
        return "epoch_us({})"
    if (pa.types.is_integer(kind) or pa.types.is_floating(kind)) and not pa.types.is_boolean(kind):
        # as timestamp_micros: floor(seconds x 10^6) in doubles
        return "CAST(floor(CAST({} AS DOUBLE) * 1000000.0) AS BIGINT)"
    return None


def _direct_key(kind: Any, column: str, columns: EventColumns) -> str | None:
    import pyarrow as pa

    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_integer(kind)):
        return None
    text = f"CAST({_sql_name(column)} AS VARCHAR)"  # integers as Arrow casts them: 1545
    return f"CASE WHEN {text} IN ({columns.nulls()}) THEN NULL ELSE {text} END AS {columns.key_name(column)}"


def _direct_service(kind: Any, column: str, columns: EventColumns) -> str | None:
    import pyarrow as pa

    if not (pa.types.is_integer(kind) or pa.types.is_floating(kind)):
        return None
    value = f"CAST({_sql_name(column)} AS DOUBLE)"  # NaN is a missing cell, as in pandas
    return f"CASE WHEN isnan({value}) THEN NULL ELSE {value} END AS {columns.service_name(column)}"
