"""``albic stats`` on Spark: per-period key-group loads, state sizes, traffic and node counts.

The definitions (units, keys, periods, output layout) and the job's skeleton are in
:mod:`albic.stats.job`; this module is its Spark engine, the twin of
:class:`~albic.stats.pandas_engine.PandasEngine`; the tests compare the two tables for equality on
the real flights trace.

How the job runs: the events are read (CSV: every cell as text; Parquet: key columns cast to text),
the timestamp is checked and floored to its period (in the JVM for UTC, else by a pandas UDF),
cached, and spread over the cluster's cores when they are many enough to pay for it. Each
operator's composite key is built and the events are counted per period, operator and key of
the trace as read; ``scale`` copies are never built event by event: copy c has the same events
under keys with ``#c`` appended, so each distinct key of an operator is hashed once, by a pandas
UDF calling :func:`albic.core.hashing.key_groups` (the one stable hash), into the key groups of
its ``scale`` copies. That small table is cached and joined to both tables' rows (an edge's keys
are its operators'), whose copies are exploded from it; a last aggregation by key group (by pair
of key groups for an edge) gives the ``key_groups`` and ``traffic`` tables, written as Parquet
into a temporary folder next to the target that is renamed into place at the end.

Example
-------
>>> from albic.spark.stats_engine import run_spark                    # doctest: +SKIP
>>> run_spark("events.parquet", spec, "out/stats", period="1h", key_groups=128)  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from albic.base.errors import AlbicError, TraceError
from albic.base.progress import spark_progress
from albic.core.hashing import key_groups as hash_key_groups
from albic.io.reader import parse_size
from albic.spark.session import spark_errors, spark_session, task_slots
from albic.stats import events as event_files
from albic.stats.events import check_columns, is_csv
from albic.stats.job import Computed, Engine, run, service_rates
from albic.stats.periods import (
    TICKS,
    partial_periods,
    period_grid,
    period_labels,
    period_origin,
    period_starts,
    rate_seconds,
    tick_of,
)
from albic.stats.request import StatsRequest
from albic.stats.spec import KEY_SEPARATOR, TopologySpec

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["SparkEngine", "read_events", "compute_spark", "run_spark", "spread_partitions"]


def read_events(spark: SparkSession, path: str | os.PathLike[str], spec: TopologySpec) -> DataFrame:
    """The event table (CSV read as text, Parquet as typed), key and service-time columns with the
    spec's null values missing.

    The file is first checked by :func:`albic.stats.events.scan_event_file` (one pyarrow pass), the
    rules and messages the pandas engine follows, so Spark never meets a file it would fail on
    with a long Java error, or read where pandas refuses. Nanosecond timestamps (pandas' default
    in Parquet), which Spark reads only as longs, are turned back into timestamps here; that
    sets ``spark.sql.legacy.parquet.nanosAsLong`` on the session."""
    from pyspark.errors import AnalysisException
    from pyspark.sql import functions as F

    event_files.scan_event_file(path, spec)
    path = Path(path)
    nanos = event_files.nanosecond_columns(path)
    if nanos:
        spark.conf.set("spark.sql.legacy.parquet.nanosAsLong", "true")
    # Spark resolves a relative path against its JVM's working directory, which is this
    # process's directory when the session started, not now: give it the absolute path.
    where = str(path.resolve())
    try:
        if is_csv(path):
            frame = spark.read.option("header", True).option("mode", "FAILFAST").csv(where)
        else:
            frame = spark.read.parquet(where)
    except AnalysisException as err:
        raise TraceError(f"{path}: cannot read the event table: {err}") from None
    from pyspark.sql import types as T

    for name in nanos:  # floored to the microsecond (exact long arithmetic), as pandas does
        if isinstance(frame.schema[name].dataType, T.LongType):
            micros = F.expr(f"(`{name}` - pmod(`{name}`, 1000)) div 1000")
            frame = frame.withColumn(name, F.timestamp_micros(micros))
    check_columns(frame.columns, spec, str(path))
    nulls = list(spec.null_values)
    for name in spec.key_columns():
        if name == spec.timestamp:
            continue
        text = F.col(name).cast("string")
        frame = frame.withColumn(name, F.when(~text.isin(nulls), text))
    for name in spec.service_time_columns():
        frame = frame.withColumn(name, F.when(~F.col(name).cast("string").isin(nulls), F.col(name)))
    return frame


def _epoch_micros(
    frame: DataFrame, column: str, source: str, service_columns: list[str] = ()
) -> tuple[DataFrame, int, int, int, int]:
    """Adds ``_micros`` (event time, µs since the epoch, UTC) and ``_busy_<c>`` (service seconds)
    for each service-time column; fails naming the column and value when a timestamp is missing
    or cannot be parsed, or a service time is not a number >= 0 (one Spark action). Returns the
    frame, the number of rows, the first and last event times and the times' resolution
    (:func:`albic.stats.periods.time_tick`)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    raw = F.col(column)
    kind = frame.schema[column].dataType
    if isinstance(kind, (T.TimestampType, T.TimestampNTZType)):
        micros = F.unix_micros(raw.cast("timestamp"))
    elif isinstance(kind, T.NumericType):
        micros = F.floor(raw.cast("double") * 1_000_000).cast("long")
    else:  # text: parsed by the pandas engine's own rule, so both accept the same texts
        from pyspark.sql.functions import pandas_udf

        @pandas_udf("long")
        def parse(texts: pd.Series) -> pd.Series:
            micros, bad = event_files.timestamp_micros(texts)
            return pd.Series(pd.array(micros, dtype="Int64")).mask(bad)

        micros = parse(raw.cast("string"))
    frame = frame.withColumn("_micros", micros)
    bad = F.col("_micros").isNull() & raw.isNotNull()
    checks = []
    for i, name in enumerate(service_columns):
        value = F.col(name)
        if not isinstance(frame.schema[name].dataType, T.NumericType):
            value = F.expr(f"try_cast(`{name}` AS double)")
        frame = frame.withColumn(f"_busy_{i}", value.cast("double"))
        wrong = (F.col(f"_busy_{i}").isNull() & F.col(name).isNotNull()) | (F.col(f"_busy_{i}") < 0)
        checks += [
            F.sum(wrong.cast("int")).alias(f"bad_{i}"),
            F.first(F.when(wrong, F.col(name).cast("string")), ignorenulls=True).alias(f"example_{i}"),
        ]
    check = frame.agg(
        F.count(F.lit(1)).alias("rows"),
        F.sum(raw.isNull().cast("int")).alias("missing"),
        F.sum(bad.cast("int")).alias("bad"),
        F.first(F.when(bad, raw.cast("string")), ignorenulls=True).alias("example"),
        F.min("_micros").alias("first"),
        F.max("_micros").alias("last"),
        *[F.sum((F.pmod("_micros", F.lit(t)) != 0).cast("long")).alias(f"off_{t}") for t in TICKS],
        *checks,
    ).collect()[0]
    # The messages of the file checks (albic.stats.events), without a row number: a frame that
    # did not come from a checked file has no row order here.
    if check["rows"] == 0:
        raise event_files.no_rows(source)
    if check["missing"]:
        raise event_files.missing_timestamp(source, column, check["missing"])
    if check["bad"]:
        raise event_files.bad_timestamp(source, column, check["example"], check["bad"])
    for i, name in enumerate(service_columns):
        if check[f"bad_{i}"]:
            raise event_files.bad_service_time(source, name, check[f"example_{i}"], check[f"bad_{i}"])
    tick = tick_of([int(check[f"off_{t}"]) for t in TICKS])
    return frame, int(check["rows"]), int(check["first"]), int(check["last"]), tick


def _period_bounds(frame: DataFrame) -> dict[str, tuple[int, int]]:
    """Each period's (label ->) first and last event time, one row a period collected
    (:func:`albic.stats.periods.partial_periods`)."""
    from pyspark.sql import functions as F

    rows = frame.groupBy("_period").agg(F.min("_micros").alias("a"), F.max("_micros").alias("b")).collect()
    labels = period_labels([row["_period"] for row in rows])
    return {label: (int(row["a"]), int(row["b"])) for label, row in zip(labels, rows)}


def compute_spark(frame: DataFrame, request: StatsRequest, cached: list[DataFrame] | None = None) -> Computed:
    """The ``key_groups`` and ``traffic`` tables (Spark DataFrames) of :mod:`albic.stats.job` for
    ``request`` (its spec, period, key groups, scale, time zone) on the events ``frame``, with the
    number of events read (before scaling), the labels of every period, the operators'
    fallback service rates (:func:`albic.stats.job.service_rates`) and the partial periods
    (:func:`albic.stats.periods.partial_periods`). A DataFrame it caches on the
    way is appended to ``cached``, for the caller to unpersist once the tables are written (the
    session may be the caller's own, and outlive the job)."""
    spec, scale, source = request.spec, request.scale, request.source
    period_seconds, timezone = request.period_seconds, request.timezone
    key_groups = request.key_groups  # the spec's count, checked by the request
    check_columns(frame.columns, spec, source)
    service_columns = spec.service_time_columns()
    frame = _used_columns(frame, spec)
    frame, rows, first, last, tick = _epoch_micros(frame, spec.timestamp, source, service_columns)
    # The origin is computed here once and shipped to the executors: the pandas twin's, by the same call.
    origin = period_origin(first, period_seconds, timezone, request.weeks)
    frame = _spread(_with_period(frame, period_seconds, timezone, origin), rows, cached)
    partial = partial_periods(_period_bounds(frame), period_seconds, timezone, tick)
    keys, busy = _operator_keys(spec, service_columns)
    to_key_groups = _key_group_udf(key_groups, spec.hash, scale)
    per_op = _per_operator(frame, keys, busy)
    hashed = _cache(_hashed_keys(per_op, to_key_groups), cached)
    grouped = _per_key_group(per_op, hashed)
    grid = period_grid(first, last, period_seconds, timezone, origin)
    periods = period_labels(grid).tolist()
    seconds = _period_seconds(grid, period_seconds, timezone, partial)
    measured: dict[str, tuple[float, float]] = {}
    if service_columns:
        grouped = _cache(grouped, cached)
        measured = _measured_service(grouped, spec)
    defaults = service_rates(spec, measured)
    kg = _key_group_table(grouped, spec, defaults, seconds)
    traffic = _traffic_table(frame, spec, keys, hashed, seconds, scale)
    return Computed(kg, traffic, rows, periods, defaults, partial)


def _cache(frame: DataFrame, cached: list[DataFrame] | None) -> DataFrame:
    frame = frame.cache()
    if cached is not None:
        cached.append(frame)
    return frame


def _used_columns(frame: DataFrame, spec: TopologySpec) -> DataFrame:
    """Only the columns the job reads: the timestamp, the key and the service-time columns."""
    columns = list(dict.fromkeys([spec.timestamp, *spec.key_columns(), *spec.service_time_columns()]))
    return frame.select(*[f"`{c}`" for c in columns])


def _spread(frame: DataFrame, rows: int, cached: list[DataFrame] | None) -> DataFrame:
    """The events, cached (the period bounds and both tables read them again), spread over the
    cluster's task slots when the input has fewer partitions (a Parquet file of one row group is
    one task, which leaves every core but one idle in the stages over the events) and the events
    are many enough to pay for the shuffle that spreads them (:func:`spread_partitions`)."""
    spark = frame.sparkSession
    wanted = spread_partitions(
        rows,
        _row_bytes(frame.schema),
        task_slots(spark.sparkContext),
        parse_size(spark.conf.get("spark.sql.files.openCostInBytes", "4m")),
    )
    if frame.rdd.getNumPartitions() < wanted:
        frame = frame.repartition(wanted)
    return _cache(frame, cached)


def spread_partitions(rows: int, row_bytes: int, slots: int, open_cost: int) -> int:
    """How many partitions to spread ``rows`` events of ``row_bytes`` each over: one per task
    slot, but none holding less than ``open_cost`` bytes (``spark.sql.files.openCostInBytes``,
    4 MiB by default: Spark's own reckoning of a task's fixed cost in bytes it could read
    meanwhile, below which it does not split an input file either). A small trace stays in one
    partition, spared a shuffle and tasks that would cost more than they share.

    >>> spread_partitions(336_776, 184, 2, 4 << 20), spread_partitions(26_865, 184, 2, 4 << 20)
    (2, 1)
    >>> spread_partitions(10**8, 184, 16, 4 << 20), spread_partitions(10**8, 184, 1, 4 << 20)
    (16, 1)
    """
    return max(1, min(slots, rows * row_bytes // max(1, open_cost)))


def _row_bytes(schema: Any) -> int:
    """A row's width as Spark estimates it when it knows nothing better (each type's
    ``defaultSize``: 20 bytes a text, 8 a number or a time)."""
    from pyspark.sql import types as T

    return sum(20 if isinstance(f.dataType, (T.StringType, T.BinaryType)) else 8 for f in schema.fields)


def _with_period(frame: DataFrame, period_seconds: int, timezone: str, origin: int = 0) -> DataFrame:
    """The events with ``_period``: the wall-clock start second of the period each falls in
    (:func:`albic.stats.periods.period_starts`; labelled once per output row, at the end)."""
    from pyspark.sql import functions as F
    from pyspark.sql.functions import pandas_udf

    if timezone == "UTC":
        # period_starts' own arithmetic, exact on longs: in UTC the wall clock is the epoch, so
        # the JVM computes it without a pass of every event through Python.
        seconds = F.expr("(_micros - pmod(_micros, 1000000)) div 1000000")
        return frame.withColumn("_period", seconds - F.pmod(seconds - F.lit(origin), F.lit(period_seconds)))

    @pandas_udf("long")
    def to_period(micros: pd.Series) -> pd.Series:
        # The one definition of a period (albic.stats.periods.period_starts), shared with the pandas twin.
        return pd.Series(period_starts(micros.to_numpy(), period_seconds, timezone, origin))

    return frame.withColumn("_period", to_period("_micros"))


def _label(column: str) -> Any:
    """The ``YYYY-MM-DDTHH:MM`` label of a period column (:func:`albic.stats.periods.period_labels`;
    the session's time zone is UTC, so wall-clock seconds print as they are)."""
    from pyspark.sql import functions as F

    return F.date_format(F.timestamp_seconds(F.col(column)), "yyyy-MM-dd'T'HH:mm")


def _operator_keys(spec: TopologySpec, service_columns: list[str]) -> tuple[list[Any], list[Any] | None]:
    """Per operator, its composite key column (null where a key column is) and its busy-time
    column (null for an operator without service times); no busy columns at all when no
    operator has service times."""
    from pyspark.sql import functions as F

    keys, busy = [], []
    for op in spec.operators:
        if op.service_time:
            busy.append(F.col(f"_busy_{service_columns.index(op.service_time)}"))
        else:
            busy.append(F.lit(None).cast("double"))
        present = F.lit(True)
        for column in op.keys:
            present = present & F.col(column).isNotNull()
        keys.append(F.when(present, F.concat_ws(KEY_SEPARATOR, *[F.col(c) for c in op.keys])))
    return keys, busy if service_columns else None


def _key_group_udf(key_groups: int, method: str, scale: int) -> Any:
    """A pandas UDF: for each key text, the key groups (:func:`albic.core.hashing.key_groups`) of
    its ``scale`` copies, copy c's key being the text with ``#c`` appended (none for copy 0)."""
    from pyspark.sql.functions import pandas_udf

    suffixes = [f"#{c}" if c else "" for c in range(scale)]

    @pandas_udf("array<long>")
    def to_key_groups(texts: pd.Series) -> pd.Series:
        flat = hash_key_groups([t + s for t in texts.tolist() for s in suffixes], key_groups, method=method)
        return pd.Series([flat[i : i + scale] for i in range(0, len(flat), scale)], dtype=object)

    return to_key_groups


def _per_operator(frame: DataFrame, keys: list[Any], busy: list[Any] | None) -> DataFrame:
    """The events in long form: one row per event and operator it passes (period, ``op``: the
    operator's position in the spec, key, busy time when measured). Operators travel as their
    position, a small integer, through every shuffle; their names are put back at the end."""
    from pyspark.sql import functions as F

    if busy is None:
        long = frame.select("_period", F.posexplode(F.array(*keys)).alias("op", "key"))
    else:
        zipped = F.arrays_zip(F.array(*keys).alias("key"), F.array(*busy).alias("busy"))
        long = frame.select("_period", F.posexplode(zipped).alias("op", "_x"))
        long = long.select("_period", "op", "_x.key", "_x.busy")
    return long.where("key IS NOT NULL")


def _hashed_keys(per_op: DataFrame, to_key_groups: Any) -> DataFrame:
    """Each distinct (operator, key) once, with ``groups``: its copies' key groups. Keys recur
    over many periods, so hashing this small table, not every (period, key) row, keeps the
    Python hash off the heavy rows; both tables join it (an edge's keys are its operators').
    The distinct keys are few, but hashing them into ``scale`` copies is not: exactly one
    partition per task slot, so every core hashes an even share in one Python task
    (``repartition``: Spark would merge so small a shuffle's partitions into one, which one core
    then hashed alone, 14 s of the year at 30x)."""
    slots = task_slots(per_op.sparkSession.sparkContext)
    distinct = per_op.select("op", "key").distinct().repartition(slots)
    return distinct.withColumn("groups", to_key_groups("key"))


def _per_key_group(per_op: DataFrame, hashed: DataFrame) -> DataFrame:
    """Per period, operator and key group: events, distinct keys, timed events and busy time.

    Counted per key of the trace as read first: the copies of a scaled trace have the same
    events under distinct keys, so each copy's key carries its key's counts and only its key
    group differs (exploded from the key's groups)."""
    from pyspark.sql import functions as F

    timed = "busy" in per_op.columns
    measures = [F.count("busy").alias("timed"), F.sum("busy").alias("busy")] if timed else []
    per_key = per_op.groupBy("_period", "op", "key").agg(F.count(F.lit(1)).alias("n"), *measures)
    joined = per_key.join(hashed, ["op", "key"])
    carried = ["timed", "busy"] if timed else []
    per_copy = joined.select("_period", "op", F.explode("groups").alias("index"), "n", *carried)
    if timed:
        measures = [F.sum("timed").alias("timed"), F.coalesce(F.sum("busy"), F.lit(0.0)).alias("busy")]
    else:
        measures = [F.lit(0).cast("long").alias("timed"), F.lit(0.0).alias("busy")]
    return per_copy.groupBy("_period", "op", "index").agg(
        F.sum("n").alias("events"), F.count(F.lit(1)).alias("keys"), *measures
    )


def _measured_service(grouped: DataFrame, spec: TopologySpec) -> dict[str, tuple[float, float]]:
    """Per operator, the timed events and their busy time over the whole trace."""
    from pyspark.sql import functions as F

    return {
        spec.operators[row[0]].name: (float(row[1] or 0), float(row[2] or 0.0))
        for row in grouped.groupBy("op").agg(F.sum("timed"), F.sum("busy")).collect()
    }


def _by_operator(spec: TopologySpec, value: Any) -> Any:
    """``value(op)`` of each row's operator (an array column indexed by the position ``op``)."""
    from pyspark.sql import functions as F

    return F.array(*[value(op) for op in spec.operators])[F.col("op")]


def _by_edge(values: list[Any]) -> Any:
    """``values[edge]`` of each row's edge (an array column indexed by the position ``edge``)."""
    from pyspark.sql import functions as F

    return F.array(*[F.lit(v) for v in values])[F.col("edge")]


def _key_group_table(
    grouped: DataFrame, spec: TopologySpec, defaults: dict[str, float | None], seconds: Any
) -> DataFrame:
    """The ``key_groups`` table of :mod:`albic.stats.job` from the per-key-group counts."""
    from pyspark.sql import functions as F

    name = _by_operator(spec, lambda op: F.lit(op.name))
    cost = _by_operator(spec, lambda op: F.lit(float(op.cost)))
    size = _by_operator(spec, lambda op: F.lit(float(op.bytes_per_key)))
    fallback = _by_operator(spec, lambda op: F.lit(defaults[op.name]).cast("double"))
    return grouped.select(
        _label("_period").alias("period"),
        name.alias("operator"),
        "index",
        F.concat_ws("/", name, F.col("index").cast("string")).alias("id"),
        "events",
        "keys",
        (F.col("events") * cost / seconds(F.col("_period"))).alias("load"),
        (F.col("keys") * size).alias("state_size"),
        (F.col("events") / seconds(F.col("_period"))).alias("arrival_rate"),
        F.when(F.col("busy") > 0, F.col("timed") / F.col("busy")).otherwise(fallback).alias("service_rate"),
    )


def _traffic_table(
    frame: DataFrame, spec: TopologySpec, keys: list[Any], hashed: DataFrame, seconds: Any, scale: int
) -> DataFrame:
    """The ``traffic`` table of :mod:`albic.stats.job`: events per period between the key groups
    of each edge's two operators (empty without edges).

    Each event's pair of keys becomes its copies' pairs of key groups (copy c's pair has the same
    events under keys suffixed #c); the scaled trace exists only as rows of key groups, which the
    last aggregation folds before its shuffle. A scaled trace first counts its events per pair of
    keys, so that the rows multiplied by the copies come out of a shuffle, spread over all its
    partitions; at 1x a pair of keys rarely recurs within a period, and that count would only
    add a shuffle."""
    from pyspark.sql import functions as F

    if not spec.edges:
        return frame.sparkSession.createDataFrame(
            [], "period string, src string, dst string, events long, rate double"
        )
    position = {op.name: i for i, op in enumerate(spec.operators)}
    ends = [(position[e.src], position[e.dst]) for e in spec.edges]
    pairs = F.array(*[F.struct(keys[s].alias("s"), keys[d].alias("d")) for s, d in ends])
    per_edge = (
        frame.select("_period", F.posexplode(pairs).alias("edge", "_e"))
        .select("_period", "edge", "_e.s", "_e.d")
        .where("s IS NOT NULL AND d IS NOT NULL")
    )
    if scale > 1:
        per_edge = per_edge.groupBy("_period", "edge", "s", "d").agg(F.count(F.lit(1)).alias("n"))
    else:
        per_edge = per_edge.withColumn("n", F.lit(1).cast("long"))
    src_op, dst_op = _by_edge([s for s, _ in ends]), _by_edge([d for _, d in ends])
    src = hashed.select(F.col("op").alias("so"), F.col("key").alias("s"), F.col("groups").alias("gss"))
    dst = hashed.select(F.col("op").alias("do"), F.col("key").alias("d"), F.col("groups").alias("gds"))
    per_copy = (
        per_edge.withColumn("so", src_op)
        .withColumn("do", dst_op)
        .join(src, ["so", "s"])
        .join(dst, ["do", "d"])
        .select("_period", "edge", "n", F.explode(F.arrays_zip("gss", "gds")).alias("_g"))
        .select("_period", "edge", "n", F.col("_g.gss").alias("gs"), F.col("_g.gds").alias("gd"))
    )
    src_name, dst_name = _by_edge([e.src for e in spec.edges]), _by_edge([e.dst for e in spec.edges])
    return (
        per_copy.groupBy("_period", "edge", "gs", "gd")
        .agg(F.sum("n").alias("events"))
        .select(
            _label("_period").alias("period"),
            F.concat_ws("/", src_name, F.col("gs").cast("string")).alias("src"),
            F.concat_ws("/", dst_name, F.col("gd").cast("string")).alias("dst"),
            "events",
            (F.col("events") / seconds(F.col("_period"))).alias("rate"),
        )
    )


def _period_seconds(starts: np.ndarray, period_seconds: int, timezone: str, partial: dict[str, float]):
    """A function of a period column (wall-clock start seconds): the seconds the period's rates
    are over, as a double (:func:`albic.stats.periods.rate_seconds`, the pandas twin's definition:
    the true length, or a partial period's covered seconds). Only the few periods whose seconds
    differ from the period's (daylight-saving changes, partial periods) are sent to the executors."""
    from pyspark.sql import functions as F

    lengths = rate_seconds(starts, period_seconds, timezone, partial)
    odd = [
        (int(start), float(n)) for start, n in zip(starts.tolist(), lengths.tolist()) if n != period_seconds
    ]
    if not odd:
        return lambda column: F.lit(float(period_seconds))
    table = F.create_map(*[F.lit(x) for pair in odd for x in pair])
    return lambda column: F.coalesce(table[column], F.lit(float(period_seconds)))


@contextlib.contextmanager
def _session_conf(spark: SparkSession, settings: dict[str, str]) -> Iterator[None]:
    """The session with ``settings`` while the block runs, as it was afterwards (the session may be
    the caller's own)."""
    saved = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


class SparkEngine(Engine):
    """The job on Spark (:func:`albic.stats.job.run`): ``master`` (default ``local[*]`` or the one
    spark-submit set) or an existing ``spark`` session. A failing Spark call is one
    :class:`~albic.base.errors.SparkJobError` line naming the master; a bar shows the job's tasks
    where someone watches (:func:`albic.base.progress.spark_progress`)."""

    def __init__(
        self,
        *,
        master: str | None = None,
        spark: SparkSession | None = None,
        verbose: bool = False,
        show_progress: bool | None = None,
        config: dict[str, str] | None = None,
    ) -> None:
        self.master, self.spark, self.verbose, self.show_progress = master, spark, verbose, show_progress
        self.config = dict(config or {})
        self._cached: list[DataFrame] = []

    @contextlib.contextmanager
    def running(self, request: StatsRequest) -> Iterator[None]:
        self.spark = self.spark or spark_session(
            self.master, "albic-stats", config=self.config, verbose=self.verbose
        )
        try:
            with (
                spark_errors(self.spark.sparkContext.master),
                spark_progress(self.spark, "albic stats on Spark", enabled=self.show_progress),
            ):
                yield
        finally:  # written or failed, the job's cache goes: the session may be a long-lived one
            while self._cached:
                self._cached.pop().unpersist()

    def compute(self, request: StatsRequest) -> Computed:
        if isinstance(request.events, pd.DataFrame):
            raise AlbicError(
                "the Spark engine reads an events file; write the DataFrame to Parquet first "
                "(albic.stats.traces.write_events) or use the pandas engine"
            )
        return compute_spark(read_events(self.spark, request.events, request.spec), request, self._cached)

    def write_tables(self, computed: Computed, folder: Path) -> None:
        # Absolute paths: the JVM's working directory may differ from this process's.
        folder = Path(folder).resolve()
        # One Parquet part per task, written in parallel: the tables are folders, read whole.
        # Most rows the tables aggregate are distinct (a period's keys, its pairs of key
        # groups), so a partial aggregation before each shuffle built hash maps, and spilled
        # them, to shrink little: without it the job took ~20 % less CPU (the flights year at
        # 1x and 10x). Spark versions without the setting ignore it.
        with _session_conf(self.spark, {"spark.sql.execution.bypassPartialAggregation": "true"}):
            computed.key_groups.write.parquet(str(folder / "key_groups"))
            computed.traffic.write.parquet(str(folder / "traffic"))

    def operator_events(self, computed: Computed, folder: Path) -> pd.DataFrame:
        return pd.read_parquet(
            Path(folder).resolve() / "key_groups", columns=["period", "operator", "events"]
        )

    def label(self) -> str:
        return f"spark {self.spark.sparkContext.master}"


def run_spark(
    events: str | os.PathLike[str],
    spec: TopologySpec,
    out: str | os.PathLike[str],
    *,
    master: str | None = None,
    spark: SparkSession | None = None,
    verbose: bool = False,
    show_progress: bool | None = None,
    **settings: Any,
) -> Path:
    """The whole job on Spark: ``run(StatsRequest(events, spec, out, **settings), SparkEngine(...))``; the settings
    are :class:`~albic.stats.request.StatsRequest`'s (period, key_groups, scale, nodes, ...)."""
    engine = SparkEngine(master=master, spark=spark, verbose=verbose, show_progress=show_progress)
    return run(StatsRequest(events, spec, out, **settings), engine)
