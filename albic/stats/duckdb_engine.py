"""The statistics on one machine with DuckDB: ``albic stats --engine duckdb``.

The same tables as the Spark job and the pandas twin (definitions: :mod:`albic.stats.job`), from
one process that uses every core and spills to disk when the trace does not fit in memory.

How it computes them, and why it is fast:

1. **Events, read once by the shared rules.** :func:`albic.stats.events.scan_event_file` checks
   the file as for every engine. A Parquet file whose columns DuckDB can read as pandas does
   (timestamps in micro- or milliseconds or numbers of seconds, keys of text or integers, numeric
   service times) is then read by DuckDB directly; any other file (CSV, texts for times, other
   key types) is staged during the check as a Parquet file of event times in microseconds, key
   texts and service seconds, computed by the very functions the pandas twin uses.
2. **Aggregate before hashing.** Per operator, events are counted per period and *key*; per edge,
   per period and *pair of keys*. Only then are keys mapped to key groups, by a table of each
   operator's distinct keys hashed once in Python (:func:`albic.core.hashing.key_groups`, the one
   hash) for every copy of ``--scale``: copies only change the keys' suffix, so scaling costs the
   distinct keys and pairs times the scale, never the events times the scale.
3. **Periods in integers.** A period start is the event's wall-clock second floored as
   :func:`albic.stats.periods.period_starts` floors it; outside UTC the wall clock's offset comes
   from a table of quarter hours (zones change offset on quarter hours, as
   :func:`~albic.stats.periods.period_grid` assumes; checked at both ends of every quarter).
   Labels, period lengths and partial periods come from :mod:`albic.stats.periods`, so the rates
   are the same floating-point operations on the same numbers as in the other engines.
4. **Aggregated while written.** Each operator's and edge's rows are aggregated as they are
   written, one at a time (so memory holds one of them, never the tables), with their texts --
   period labels, operators, key-group ids -- as Parquet dictionary columns: each text once per
   row group instead of once per row. Rows are in no particular order, as Spark writes them;
   :func:`albic.io.read_snapshots` orders what it reads.

Measured sums of service seconds are added in DuckDB's order, as Spark adds them in its own:
measured service rates agree to rounding, every other column exactly.

Example
-------
>>> import pandas as pd, tempfile, pathlib
>>> from albic.stats.spec import parse_spec
>>> spec = parse_spec('timestamp = "t"\\n[[operators]]\\nname = "w"\\nkeys = ["w"]\\ncost = 2.0')
>>> events = pd.DataFrame({"t": ["2013-01-01 00:10", "2013-01-01 00:20", "2013-01-01 01:05"],
...                        "w": ["a", "a", "b"]})
>>> out = run_duckdb(events, spec, pathlib.Path(tempfile.mkdtemp()) / "stats", key_groups=1)
>>> kg = pd.read_parquet(out / "key_groups")
>>> kg[["period", "id", "events", "keys", "state_size"]].to_dict("records")[0]
{'period': '2013-01-01T00:00', 'id': 'w/0', 'events': 2, 'keys': 1, 'state_size': 256.0}
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from albic.base import files
from albic.base.errors import AlbicError
from albic.base.extras import require
from albic.base.progress import progress
from albic.core.hashing import key_groups as hash_key_groups
from albic.stats.duckdb_events import EventColumns, open_events
from albic.stats.job import Computed, Engine, run, service_rates
from albic.stats.periods import (
    TICKS,
    partial_periods,
    period_grid,
    period_labels,
    period_origin,
    rate_seconds,
    tick_of,
)
from albic.stats.request import StatsRequest
from albic.stats.spec import OperatorSpec, TopologySpec

__all__ = ["DuckDBEngine", "run_duckdb"]

#: Rows of distinct keys hashed per call: bounds the Python strings alive at once.
_HASH_CHUNK = 262_144
#: Microseconds in the quarter hour on which every time zone changes its offset.
_QUARTER = 900_000_000


@dataclass
class _Work:
    """What :meth:`DuckDBEngine.compute` leaves for writing: the events are coded and hashed in
    DuckDB; the tables are aggregated while they are written, one operator or edge at a time, so
    no more than one of them is ever held in memory."""

    spec: TopologySpec
    codes: _Codes
    key_groups: int
    labels: list[str]  # the periods, by position n
    operator_events: pd.DataFrame  # period, operator, events: the node counts' input


class DuckDBEngine(Engine):
    """The job in this process, on DuckDB (:func:`albic.stats.job.run`).

    ``threads``: DuckDB's worker threads (default: every core); ``memory_limit``: how much memory
    DuckDB may hold before it spills to a scratch folder beside the output (DuckDB's own text,
    e.g. ``"2GB"``; default DuckDB's, 80 % of the machine's memory).
    """

    def __init__(self, *, threads: int | None = None, memory_limit: str | None = None) -> None:
        if threads is not None and threads < 1:
            raise AlbicError(f"DuckDBEngine: threads must be >= 1, got {threads}")
        self.threads = threads
        self.memory_limit = memory_limit
        self._con: Any = None
        self._scratch: Path | None = None

    @contextlib.contextmanager
    def running(self, request: StatsRequest) -> Iterator[None]:
        duckdb = require("duckdb", "the DuckDB statistics engine")
        parent = Path(request.out).resolve().parent
        files.remove_stale_scratch("duckdb", parent)
        with tempfile.TemporaryDirectory(prefix=files.scratch_prefix("duckdb"), dir=parent) as scratch:
            config = {"temp_directory": str(Path(scratch) / "spill"), "preserve_insertion_order": True}
            if self.threads is not None:
                config["threads"] = self.threads
            if self.memory_limit is not None:
                config["memory_limit"] = self.memory_limit
            try:
                self._con = duckdb.connect(config=config)
            except duckdb.Error as err:
                raise AlbicError(f"DuckDB refused its settings {config}: {err}") from None
            self._scratch = Path(scratch)
            try:
                yield
            finally:
                self._con.close()
                self._con = self._scratch = None

    def compute(self, request: StatsRequest) -> Computed:
        con, spec = self._con, request.spec
        key_groups = request.key_groups  # the spec's count, checked by the request
        columns = EventColumns(spec)
        open_events(con, request, columns, self._scratch)
        count, first, last, tick = _overview(con)
        origin = period_origin(first, request.period_seconds, request.timezone, request.weeks)
        _periods_view(con, request, columns, origin, first, last)
        grid = period_grid(first, last, request.period_seconds, request.timezone, origin)
        partial = partial_periods(_period_bounds(con), request.period_seconds, request.timezone, tick)
        periods = pd.DataFrame({"p": grid, "n": np.arange(len(grid)), "label": period_labels(grid)})
        periods["seconds"] = rate_seconds(grid, request.period_seconds, request.timezone, partial)
        con.register("periods", periods)
        codes = _Codes(columns)
        _code_events(con, codes, spec, key_groups, request.scale)
        defaults = service_rates(spec, _measured(con, codes, request.scale))
        _lookups(con, spec, defaults)
        labels = periods["label"].tolist()
        work = _Work(spec, codes, key_groups, labels, _operator_events(con, codes, request.scale))
        return Computed(work, None, count, labels, defaults, partial)

    def write_tables(self, computed: Computed, folder: Path) -> None:
        work = computed.key_groups
        spec = work.spec
        tables = {
            "key_groups": (
                _kg_plan(work),
                [(op, _key_group_query(at, op, work)) for at, op in enumerate(spec.operators)],
            ),
            "traffic": (_traffic_plan(work), [(edge, _traffic_query(edge, work)) for edge in spec.edges]),
        }
        steps = [(table, item, sql) for table, (_, queries) in tables.items() for item, sql in queries]
        outputs = {}
        try:
            for table, (plan, _) in tables.items():
                (folder / table).mkdir()
                outputs[table] = _ParquetOutput(folder / table / "part-0.parquet", plan)
            for table, _, sql in progress(steps, "statistics (duckdb)", total=len(steps)):
                outputs[table].append(self._con, sql)
            for output in outputs.values():
                output.finish()
        finally:
            for output in outputs.values():
                output.close()

    def operator_events(self, computed: Computed, folder: Path) -> pd.DataFrame:
        return computed.key_groups.operator_events

    def label(self) -> str:
        return "duckdb"


def run_duckdb(events: Any, spec: TopologySpec, out: str | os.PathLike[str], **settings: Any) -> Path:
    """The whole job on DuckDB: ``run(StatsRequest(events, spec, out, **settings), DuckDBEngine())``;
    ``events`` is an events file or a DataFrame; the settings are
    :class:`~albic.stats.request.StatsRequest`'s (period, key_groups, scale, nodes, timezone, ...)."""
    return run(StatsRequest(events, spec, out, **settings), DuckDBEngine())


# -- periods --------------------------------------------------------------------------------------


def _overview(con: Any) -> tuple[int, int, int, int]:
    """Events, first and last event time, and the trace's tick (:func:`albic.stats.periods.time_tick`)."""
    off = ", ".join(f"count(*) FILTER (WHERE us % {tick} <> 0)" for tick in TICKS)
    row = con.sql(f"SELECT count(*), min(us), max(us), {off} FROM events").fetchall()[0]
    return int(row[0]), int(row[1]), int(row[2]), tick_of([int(x) for x in row[3:]])


def _periods_view(
    con: Any, request: StatsRequest, columns: EventColumns, origin: int, first: int, last: int
) -> None:
    """The view ``ev``: the events with their period start ``p`` (wall-clock seconds)."""
    con.execute("CREATE MACRO floor_mod(a, b) AS ((a % b) + b) % b")
    con.execute("CREATE MACRO floor_div(a, b) AS (a - floor_mod(a, b)) // b")
    wall, join = "floor_div(us, 1000000)", ""
    if request.timezone != "UTC":
        con.register("offsets", _quarter_offsets(first, last, request.timezone))
        wall, join = (
            wall + " + offsets.offset",
            f" JOIN offsets ON offsets.quarter = floor_div(us, {_QUARTER})",
        )
    period = request.period_seconds
    names = [columns.key_name(c) for c in columns.keys] + [columns.service_name(c) for c in columns.service]
    con.execute(
        f"CREATE VIEW ev AS SELECT w - floor_mod(w - {origin}, {period}) AS p, us, {', '.join(names)} "
        f"FROM (SELECT {wall} AS w, events.* FROM events{join})"
    )


def _quarter_offsets(first: int, last: int, timezone: str) -> pd.DataFrame:
    """Each quarter hour's wall-clock offset (seconds) in ``timezone``, from the first event's
    quarter to the last one's; refuses a zone whose offset changes inside a quarter."""
    quarters = np.arange(first // _QUARTER, last // _QUARTER + 1, dtype=np.int64)
    starts, ends = quarters * _QUARTER, quarters * _QUARTER + _QUARTER - 1
    offsets = [_offset_seconds(instants, timezone) for instants in (starts, ends)]
    if not np.array_equal(*offsets):
        at = pd.to_datetime(starts[np.flatnonzero(offsets[0] != offsets[1])[0]], unit="us", utc=True)
        raise AlbicError(
            f"time zone {timezone!r} changes its offset inside the quarter hour from {at}: the duckdb "
            "engine takes a zone's offset a quarter hour at a time; the pandas and Spark engines "
            "take it event by event"
        )
    return pd.DataFrame({"quarter": quarters, "offset": offsets[0]})


def _offset_seconds(micros: np.ndarray, timezone: str) -> np.ndarray:
    """The wall clock minus UTC, in seconds, at each instant (as :func:`period_starts` takes it)."""
    utc = pd.DatetimeIndex(pd.to_datetime(micros, unit="us", utc=True))
    wall = utc.tz_convert(timezone).tz_localize(None)
    return (wall - utc.tz_localize(None)).to_numpy().astype("timedelta64[s]").astype(np.int64)


def _period_bounds(con: Any) -> dict[str, tuple[int, int]]:
    bounds = con.sql("SELECT p, min(us), max(us) FROM ev GROUP BY p ORDER BY p").fetchnumpy()
    labels = period_labels(bounds["p"]).tolist()
    return dict(zip(labels, zip(bounds["min(us)"].tolist(), bounds["max(us)"].tolist())))


# -- the tables -----------------------------------------------------------------------------------


class _Codes:
    """Each distinct key expression of the spec (operators keyed alike share one) as column
    ``c<j>`` of the table ``coded``: the key's integer code in ``dict_<j>`` (key, kid), whose key
    groups per copy are in ``hash_<j>`` (kid, copy, idx)."""

    def __init__(self, columns: EventColumns) -> None:
        self.expressions = list(dict.fromkeys(columns.key_expression(op) for op in columns.spec.operators))
        self.columns = columns

    def of(self, op: OperatorSpec) -> int:
        return self.expressions.index(self.columns.key_expression(op))


def _code_events(con: Any, codes: _Codes, spec: TopologySpec, key_groups: int, scale: int) -> None:
    """Tables ``dict_<j>``, ``hash_<j>`` and ``coded`` (p, c0.., s0..): the events with integer key codes."""
    joins, selected = [], ["ev.p"]
    for j, expression in enumerate(codes.expressions):
        con.execute(
            f"""CREATE TABLE dict_{j} AS SELECT key, CAST(row_number() OVER () - 1 AS INTEGER) AS kid
            FROM (SELECT DISTINCT {expression} AS key FROM ev) WHERE key IS NOT NULL"""
        )
        _hash_table(con, j, spec, key_groups, scale)
        joins.append(f"LEFT JOIN dict_{j} ON dict_{j}.key = {expression}")
        selected.append(f"dict_{j}.kid AS c{j}")
    selected += [f"ev.{codes.columns.service_name(c)}" for c in codes.columns.service]
    con.execute(f"CREATE TABLE coded AS SELECT {', '.join(selected)} FROM ev {' '.join(joins)}")


def _hash_table(con: Any, j: int, spec: TopologySpec, key_groups: int, scale: int) -> None:
    """Table ``hash_<j>`` (kid, copy, idx): every distinct key in every copy's key group, hashed
    here by :func:`albic.core.hashing.key_groups` (the one hash), a chunk of keys at a time."""
    import pyarrow as pa

    keys = con.sql(f"SELECT kid, key FROM dict_{j}").to_arrow_table()
    con.execute(f"CREATE TABLE hash_{j} (kid INTEGER, copy INTEGER, idx INTEGER)")
    for start in range(0, keys.num_rows, _HASH_CHUNK):
        chunk = keys.slice(start, _HASH_CHUNK)
        texts = chunk.column("key").to_pylist()
        for copy in range(scale):
            suffix = f"#{copy}" if copy else ""
            groups = hash_key_groups([f"{k}{suffix}" for k in texts], key_groups, method=spec.hash)
            part = pa.table(
                {
                    "kid": chunk.column("kid"),
                    "copy": pa.array(np.full(len(texts), copy, dtype=np.int32)),
                    "idx": pa.array(groups.astype(np.int32)),
                }
            )
            con.register("hash_part", part)
            con.execute(f"INSERT INTO hash_{j} SELECT * FROM hash_part")
            con.unregister("hash_part")


def _measured(con: Any, codes: _Codes, scale: int) -> dict[str, tuple[float, float]]:
    """Each timed operator's (timed events, busy seconds) over the whole trace, every copy."""
    measured = {}
    for op in codes.columns.spec.operators:
        if op.service_time:
            service, j = codes.columns.service_name(op.service_time), codes.of(op)
            timed, busy = con.sql(
                f"SELECT count({service}), sum({service}) FROM coded WHERE c{j} IS NOT NULL"
            ).fetchall()[0]
            measured[op.name] = (int(timed) * scale, float(busy or 0.0) * scale)
    return measured


def _operator_events(con: Any, codes: _Codes, scale: int) -> pd.DataFrame:
    """Events per period and operator (period, operator, events), every copy: the node counts' input."""
    ops = codes.columns.spec.operators
    counts = ", ".join(f"count(c{codes.of(op)}) * {scale} AS e{at}" for at, op in enumerate(ops))
    wide = con.sql(
        f"SELECT periods.label AS period, {counts} FROM coded JOIN periods USING (p) GROUP BY ALL"
    ).df()
    long = wide.melt(id_vars="period", var_name="o", value_name="events")
    long["operator"] = [ops[int(o[1:])].name for o in long.pop("o")]
    long = long[long["events"] > 0]
    return long[["period", "operator", "events"]].astype({"events": np.int64}).reset_index(drop=True)


def _key_group_query(at: int, op: OperatorSpec, work: _Work) -> str:
    """The ``key_groups`` rows of operator ``at``: counted per key, then per key group, with the
    positions of their texts (n, o, at) and each rate the twin's operations on its numbers."""
    j, columns = work.codes.of(op), work.codes.columns
    service = columns.service_name(op.service_time) if op.service_time else "CAST(NULL AS DOUBLE)"
    return f"""WITH per_key AS (
            SELECT p, c{j} AS kid, count(*) AS events, count({service}) AS timed, sum({service}) AS busy
            FROM coded WHERE c{j} IS NOT NULL GROUP BY p, c{j}),
        grouped AS (
            SELECT p, idx, sum(events) AS events, count(*) AS keys, sum(timed) AS timed,
                   coalesce(sum(busy), 0.0) AS busy
            FROM per_key JOIN hash_{j} USING (kid) GROUP BY p, idx)
        SELECT periods.n, ops.o, g.idx, ops.o * {work.key_groups} + g.idx AS at,
               CAST(g.events AS BIGINT) AS events, CAST(g.keys AS BIGINT) AS keys,
               CAST(g.events AS DOUBLE) * ops.cost / periods.seconds AS load,
               CAST(g.keys AS DOUBLE) * ops.per_key AS state_size,
               CAST(g.events AS DOUBLE) / periods.seconds AS arrival_rate,
               CASE WHEN g.busy > 0 THEN CAST(g.timed AS DOUBLE) / g.busy
                    WHEN isnan(ops.fallback) THEN NULL ELSE ops.fallback END AS service_rate
        FROM grouped g JOIN periods USING (p) JOIN ops ON ops.o = {at}"""


def _traffic_query(edge: Any, work: _Work) -> str:
    """The ``traffic`` rows of ``edge``: counted per pair of keys, then per pair of key groups of
    the same copy, with the positions of their texts (n, si, di: ids at ``o x K + idx``)."""
    position = {op.name: at for at, op in enumerate(work.spec.operators)}
    src, dst = (work.spec.operators[position[name]] for name in (edge.src, edge.dst))
    a, b, k = work.codes.of(src), work.codes.of(dst), work.key_groups
    return f"""WITH pairs AS (
            SELECT p, c{a} AS a, c{b} AS b, count(*) AS events
            FROM coded WHERE c{a} IS NOT NULL AND c{b} IS NOT NULL GROUP BY p, c{a}, c{b}),
        grouped AS (
            SELECT p, hs.idx AS s, hd.idx AS d, sum(events) AS events
            FROM pairs JOIN hash_{a} hs ON hs.kid = pairs.a
                       JOIN hash_{b} hd ON hd.kid = pairs.b AND hd.copy = hs.copy
            GROUP BY p, s, d)
        SELECT periods.n, {position[edge.src] * k} + g.s AS si, {position[edge.dst] * k} + g.d AS di,
               CAST(g.events AS BIGINT) AS events, CAST(g.events AS DOUBLE) / periods.seconds AS rate
        FROM grouped g JOIN periods USING (p)"""


def _lookups(con: Any, spec: TopologySpec, defaults: dict[str, float | None]) -> None:
    """Register the small table ``ops`` (o, cost, per_key, fallback)."""
    ops = pd.DataFrame(
        {
            "o": np.arange(len(spec.operators), dtype=np.int32),
            "cost": [float(op.cost) for op in spec.operators],
            "per_key": [float(op.bytes_per_key) for op in spec.operators],
            "fallback": [
                np.nan if defaults[op.name] is None else float(defaults[op.name]) for op in spec.operators
            ],
        }
    )
    con.register("ops", ops)


def _ids(work: _Work) -> list[str]:
    return [f"{op.name}/{k}" for op in work.spec.operators for k in range(work.key_groups)]


def _kg_plan(work: _Work) -> list[tuple[str, str, Any]]:
    """The ``key_groups`` table's columns: (name, source column, texts by position or a type)."""
    import pyarrow as pa

    numbers = [("events", pa.int64()), ("keys", pa.int64())]
    numbers += [(c, pa.float64()) for c in ("load", "state_size", "arrival_rate", "service_rate")]
    names = [op.name for op in work.spec.operators]
    return [
        ("period", "n", work.labels),
        ("operator", "o", names),
        ("index", "idx", pa.int64()),
        ("id", "at", _ids(work)),
        *((c, c, kind) for c, kind in numbers),
    ]


def _traffic_plan(work: _Work) -> list[tuple[str, str, Any]]:
    import pyarrow as pa

    ids = _ids(work)
    return [
        ("period", "n", work.labels),
        ("src", "si", ids),
        ("dst", "di", ids),
        ("events", "events", pa.int64()),
        ("rate", "rate", pa.float64()),
    ]


#: Rows per batch written: bounds the memory of writing to a few hundred MB.
_WRITE_BATCH = 1 << 20


class _ParquetOutput:
    """One Parquet file written from the results of queries, in batches, as the columns of a plan:
    (name, source column, texts or a type): the text at each position of the source column,
    written as a dictionary column (each text once per row group, not once per row), or the
    source column as that type."""

    def __init__(self, target: Path, plan: list[tuple[str, str, Any]]) -> None:
        import pyarrow as pa

        self.target, self.plan = target, plan
        self.dictionaries = {
            name: pa.array(kind, type=pa.string()) for name, _, kind in plan if isinstance(kind, list)
        }
        self.writer: Any = None

    def append(self, con: Any, sql: str) -> None:
        import pyarrow.parquet as pq

        # Results are read from relations (con.sql), which DuckDB 2 runs to their end on their own.
        reader = con.sql(sql).to_arrow_reader(_WRITE_BATCH)
        for batch in reader:
            data = self._as_written({name: batch.column(name) for name in batch.schema.names})
            if self.writer is None:
                # Without the Arrow schema a reader sees plain text columns; statistics of texts
                # (min and max per page) would cost as much as writing them.
                numbers = [name for name, _, kind in self.plan if not isinstance(kind, list)]
                self.writer = pq.ParquetWriter(
                    self.target,
                    data.schema,
                    store_schema=False,
                    use_dictionary=list(self.dictionaries),
                    write_statistics=numbers,
                )
            self.writer.write_table(data)

    def _as_written(self, columns: dict[str, Any]) -> Any:
        import pyarrow as pa

        data = {}
        for name, source, kind in self.plan:
            if isinstance(kind, list):
                data[name] = pa.DictionaryArray.from_arrays(
                    columns[source].cast(pa.int32()), self.dictionaries[name]
                )
            else:
                data[name] = columns[source].cast(kind)
        return pa.table(data)

    def finish(self) -> None:
        """Write the columns without rows if no query gave any."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        if self.writer is None:
            kinds = {source: pa.int32() if isinstance(kind, list) else kind for _, source, kind in self.plan}
            empty = self._as_written({source: pa.array([], type=kind) for source, kind in kinds.items()})
            self.writer = pq.ParquetWriter(self.target, empty.schema, store_schema=False)
            self.writer.write_table(empty)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
