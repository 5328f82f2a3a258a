"""``albic stats`` on Spark: per-period key-group loads, state sizes, traffic and node counts.

The definitions (units, keys, periods, output layout) and the job's skeleton are in
:mod:`albic.stats.job`; this module is its Spark engine, the twin of
:class:`~albic.stats.pandas_engine.PandasEngine`; the tests compare the two tables for equality on
the real flights trace.

How the job runs: the events are read (CSV: every cell as text; Parquet: key columns cast to text),
the timestamp is checked and floored to its period, and each operator's composite key is built.
The events are counted per period, operator and key (per period and key pair for an edge) of the
trace as read; ``scale`` copies are never built event by event: copy c has the same events under
keys with ``#c`` appended, so each distinct key of an operator is hashed once, by a pandas UDF
calling :func:`albic.core.hashing.key_groups` (the one stable hash), into the key groups of its
``scale`` copies, joined back and exploded. A second aggregation by key group (by pair of key
groups for an edge) gives the ``key_groups`` and ``traffic`` tables, written as Parquet into a
temporary folder next to the target that is renamed into place at the end.

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

import pandas as pd

from albic.base.errors import AlbicError, TraceError
from albic.base.progress import spark_progress
from albic.core.hashing import key_groups as hash_key_groups
from albic.spark.session import spark_errors, spark_session
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
    wall_seconds,
)
from albic.stats.request import StatsRequest
from albic.stats.spec import KEY_SEPARATOR, TopologySpec

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["SparkEngine", "read_events", "compute_spark", "run_spark"]


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
    return {row["_period"]: (int(row["a"]), int(row["b"])) for row in rows}


def compute_spark(
    frame: DataFrame,
    spec: TopologySpec,
    *,
    period_seconds: int,
    key_groups: int,
    scale: int = 1,
    source: str = "events",
    timezone: str = "UTC",
    weeks: bool = False,
    cached: list[DataFrame] | None = None,
) -> tuple[DataFrame, DataFrame, int, list[str], dict[str, float | None], dict[str, float]]:
    """The ``key_groups`` and ``traffic`` tables (Spark DataFrames) of :mod:`albic.stats.job`, the
    number of events read (before scaling), the labels of every period, the operators'
    fallback service rates (:func:`albic.stats.job.service_rates`) and the partial periods
    (:func:`albic.stats.periods.partial_periods`). A DataFrame it caches on the
    way is appended to ``cached``, for the caller to unpersist once the tables are written (the
    session may be the caller's own, and outlive the job)."""
    key_groups = spec.key_group_count(key_groups)
    if key_groups < 1 or scale < 1:
        raise AlbicError(f"key_groups and scale must be >= 1, got {key_groups} and {scale}")
    check_columns(frame.columns, spec, source)
    service_columns = spec.service_time_columns()
    frame = _spread(frame, spec, cached)
    frame, rows, first, last, tick = _epoch_micros(frame, spec.timestamp, source, service_columns)
    # The origin is computed here once and shipped to the UDF: the pandas twin's, by the same call.
    origin = period_origin(first, period_seconds, timezone, weeks)
    frame = _with_period(frame, period_seconds, timezone, origin)
    partial = partial_periods(_period_bounds(frame), period_seconds, timezone, tick)
    keys, busy = _operator_keys(spec, service_columns)
    to_key_groups = _key_group_udf(key_groups, spec.hash, scale)
    grouped = _per_key_group(frame, spec, keys, busy, to_key_groups)
    periods = period_labels(period_grid(first, last, period_seconds, timezone, origin)).tolist()
    seconds = _period_seconds(periods, period_seconds, timezone, partial)
    measured: dict[str, tuple[float, float]] = {}
    if service_columns:
        grouped = grouped.cache()
        if cached is not None:
            cached.append(grouped)
        measured = _measured_service(grouped)
    defaults = service_rates(spec, measured)
    kg = _key_group_table(grouped, spec, defaults, seconds)
    traffic = _traffic_table(frame, spec, keys, to_key_groups, seconds)
    return kg, traffic, rows, periods, defaults, partial


def _spread(frame: DataFrame, spec: TopologySpec, cached: list[DataFrame] | None) -> DataFrame:
    """The columns the job uses, spread over at least ``spark.default.parallelism`` partitions and
    cached: a Parquet file of one row group is otherwise one task, which leaves every core but one
    idle in the heaviest stages, and the checks, the period bounds and both tables read the
    events again."""
    columns = list(dict.fromkeys([spec.timestamp, *spec.key_columns(), *spec.service_time_columns()]))
    frame = frame.select(*[f"`{c}`" for c in columns])
    parallelism = frame.sparkSession.sparkContext.defaultParallelism
    if frame.rdd.getNumPartitions() < parallelism:
        frame = frame.repartition(parallelism)
    frame = frame.cache()
    if cached is not None:
        cached.append(frame)
    return frame


def _with_period(frame: DataFrame, period_seconds: int, timezone: str, origin: int = 0) -> DataFrame:
    """The events with ``_period``, the label of the period each falls in."""
    from pyspark.sql import functions as F
    from pyspark.sql.functions import pandas_udf

    @pandas_udf("long")
    def to_period(micros: pd.Series) -> pd.Series:
        # The one definition of a period (albic.stats.periods.period_starts), shared with the pandas twin.
        return pd.Series(period_starts(micros.to_numpy(), period_seconds, timezone, origin))

    return frame.withColumn(
        "_period", F.date_format(F.timestamp_seconds(to_period("_micros")), "yyyy-MM-dd'T'HH:mm")
    )


def _operator_keys(spec: TopologySpec, service_columns: list[str]) -> tuple[list[Any], list[Any]]:
    """Per operator, its composite key column (null where a key column is) and its busy-time
    column (null for an operator without service times)."""
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
    return keys, busy


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


def _hashed_keys(per_key: DataFrame, column: str, key: str, to_key_groups: Any) -> DataFrame:
    """Each distinct (operator, key) of ``per_key`` once, with ``_groups``: its copies' key groups.
    Keys recur over many periods, so hashing this small table, not every (period, key) row, keeps
    the Python hash off the heavy rows."""
    from pyspark.sql import functions as F

    distinct = per_key.select(F.col(column).alias("_op"), F.col(key).alias("_key")).distinct()
    return distinct.withColumn("_groups", to_key_groups("_key"))


def _per_key_group(
    frame: DataFrame, spec: TopologySpec, keys: list[Any], busy: list[Any], to_key_groups: Any
) -> DataFrame:
    """Per period, operator and key group: events, distinct keys, timed events and busy time."""
    from pyspark.sql import functions as F

    # Long form, one row per (event, operator), counted per key of one copy: the copies of a
    # scaled trace have the same events under distinct keys, so each copy's key carries the
    # same counts and only its key group differs (exploded from the key's array of groups).
    names = F.array(*[F.lit(op.name) for op in spec.operators])
    per_op = (
        frame.select(
            "_period",
            F.explode(
                F.arrays_zip(
                    names.alias("operator"),
                    F.array(*keys).alias("key"),
                    F.array(*busy).alias("busy"),
                )
            ).alias("_x"),
        )
        .select("_period", "_x.operator", "_x.key", "_x.busy")
        .where("key IS NOT NULL")
    )
    per_key = per_op.groupBy("_period", "operator", "key").agg(
        F.count(F.lit(1)).alias("n"),
        F.count("busy").alias("timed"),
        F.sum("busy").alias("busy"),
    )
    hashed = _hashed_keys(per_key, "operator", "key", to_key_groups)
    joined = per_key.join(hashed, (F.col("operator") == F.col("_op")) & (F.col("key") == F.col("_key")))
    per_copy = joined.select("_period", "operator", F.explode("_groups").alias("index"), "n", "timed", "busy")
    return per_copy.groupBy("_period", "operator", "index").agg(
        F.sum("n").alias("events"),
        F.count(F.lit(1)).alias("keys"),
        F.sum("timed").alias("timed"),
        F.coalesce(F.sum("busy"), F.lit(0.0)).alias("busy"),
    )


def _measured_service(grouped: DataFrame) -> dict[str, tuple[float, float]]:
    """Per operator, the timed events and their busy time over the whole trace."""
    from pyspark.sql import functions as F

    return {
        row[0]: (float(row[1] or 0), float(row[2] or 0.0))
        for row in grouped.groupBy("operator").agg(F.sum("timed"), F.sum("busy")).collect()
    }


def _by_operator(spec: TopologySpec, value: Any) -> Any:
    """A map column from each operator's name to ``value(op)``."""
    from pyspark.sql import functions as F

    return F.create_map(*[x for op in spec.operators for x in (F.lit(op.name), value(op))])


def _key_group_table(
    grouped: DataFrame, spec: TopologySpec, defaults: dict[str, float | None], seconds: Any
) -> DataFrame:
    """The ``key_groups`` table of :mod:`albic.stats.job` from the per-key-group counts."""
    from pyspark.sql import functions as F

    costs = _by_operator(spec, lambda op: F.lit(float(op.cost)))
    sizes = _by_operator(spec, lambda op: F.lit(float(op.bytes_per_key)))
    fallback = _by_operator(spec, lambda op: F.lit(defaults[op.name]).cast("double"))
    return grouped.select(
        F.col("_period").alias("period"),
        "operator",
        "index",
        F.concat_ws("/", "operator", F.col("index").cast("string")).alias("id"),
        "events",
        "keys",
        (F.col("events") * costs[F.col("operator")] / seconds(F.col("_period"))).alias("load"),
        (F.col("keys") * sizes[F.col("operator")]).alias("state_size"),
        (F.col("events") / seconds(F.col("_period"))).alias("arrival_rate"),
        F.when(F.col("busy") > 0, F.col("timed") / F.col("busy"))
        .otherwise(fallback[F.col("operator")])
        .alias("service_rate"),
    )


def _traffic_table(
    frame: DataFrame, spec: TopologySpec, keys: list[Any], to_key_groups: Any, seconds: Any
) -> DataFrame:
    """The ``traffic`` table of :mod:`albic.stats.job`: events per period between the key groups
    of each edge's two operators (empty without edges)."""
    from pyspark.sql import functions as F

    if not spec.edges:
        return frame.sparkSession.createDataFrame(
            [], "period string, src string, dst string, events long, rate double"
        )
    position = {op.name: i for i, op in enumerate(spec.operators)}
    edges = F.array(
        *[
            F.struct(
                F.lit(e.src).alias("so"),
                F.lit(e.dst).alias("do"),
                keys[position[e.src]].alias("s"),
                keys[position[e.dst]].alias("d"),
            )
            for e in spec.edges
        ]
    )
    per_edge = (
        frame.select("_period", F.explode(edges).alias("_e"))
        .select("_period", "_e.so", "_e.do", "_e.s", "_e.d")
        .where("s IS NOT NULL AND d IS NOT NULL")
    )
    # Pairs of one copy's keys, then each pair's key groups in every copy: copy c's pair has
    # the same count under keys suffixed #c, so the scaled trace exists only as rows of key
    # groups, which the last aggregation folds before its shuffle.
    pairs = per_edge.groupBy("_period", "so", "do", "s", "d").agg(F.count(F.lit(1)).alias("n"))
    ends = per_edge.select(F.col("so").alias("o"), F.col("s").alias("k")).unionByName(
        per_edge.select(F.col("do").alias("o"), F.col("d").alias("k"))
    )
    hashed = _hashed_keys(ends, "o", "k", to_key_groups)
    src = hashed.select(F.col("_op").alias("so"), F.col("_key").alias("s"), F.col("_groups").alias("gss"))
    dst = hashed.select(F.col("_op").alias("do"), F.col("_key").alias("d"), F.col("_groups").alias("gds"))
    pairs = pairs.join(src, ["so", "s"]).join(dst, ["do", "d"])
    pairs = pairs.select(
        "_period", "so", "do", "n", F.explode(F.arrays_zip("gss", "gds")).alias("_g")
    ).select("_period", "so", "do", "n", F.col("_g.gss").alias("gs"), F.col("_g.gds").alias("gd"))
    return (
        pairs.groupBy("_period", "so", "gs", "do", "gd")
        .agg(F.sum("n").alias("events"))
        .select(
            F.col("_period").alias("period"),
            F.concat_ws("/", "so", F.col("gs").cast("string")).alias("src"),
            F.concat_ws("/", "do", F.col("gd").cast("string")).alias("dst"),
            "events",
            (F.col("events") / seconds(F.col("_period"))).alias("rate"),
        )
    )


def _period_seconds(periods: list[str], period_seconds: int, timezone: str, partial: dict[str, float]):
    """A function of a period-label column: the seconds the period's rates are over, as a double
    (:func:`albic.stats.periods.rate_seconds`, the pandas twin's definition: the true length, or
    a partial period's covered seconds). Only the few periods whose seconds differ from the
    period's (daylight-saving changes, partial periods) are sent to the executors."""
    from pyspark.sql import functions as F

    lengths = rate_seconds(wall_seconds(periods), period_seconds, timezone, partial)
    odd = [(label, float(n)) for label, n in zip(periods, lengths.tolist()) if n != period_seconds]
    if not odd:
        return lambda column: F.lit(float(period_seconds))
    table = F.create_map(*[F.lit(x) for pair in odd for x in pair])
    return lambda column: F.coalesce(table[column], F.lit(float(period_seconds)))


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
        frame = read_events(self.spark, request.events, request.spec)
        kg, traffic, rows, periods, defaults, partial = compute_spark(
            frame,
            request.spec,
            period_seconds=request.period_seconds,
            key_groups=request.key_groups,
            scale=request.scale,
            source=request.source,
            timezone=request.timezone,
            weeks=request.weeks,
            cached=self._cached,
        )
        return Computed(kg, traffic, rows, periods, defaults, partial)

    def write_tables(self, computed: Computed, folder: Path) -> None:
        # Absolute paths: the JVM's working directory may differ from this process's.
        folder = Path(folder).resolve()
        # One Parquet part per task, written in parallel: the tables are folders, read whole.
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
