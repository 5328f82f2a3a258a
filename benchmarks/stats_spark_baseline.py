"""A hand-written PySpark job computing the aggregates of ``albic stats``: the Spark benchmark's
baseline (``benchmarks.stats_speed``).

What a competent Spark user writes in an afternoon, with none of albic's own tricks: the events
are cross-joined with ``range(scale)`` (copy c > 0 appends ``#c`` to every key), each operator's key
is hashed row by row into its key group by a pandas UDF (albic's hash: blake2b, 8 bytes,
big-endian, mod K), the period is the event's hour in UTC, and two ``groupBy``s give

- per period, operator and key group: events, distinct keys, timed events and busy seconds;
- per edge, period and pair of key groups: events;

written as Parquet. The hashed, scaled events feed both tables, so they are cached once.

Only pyspark, pandas and hashlib: the job does not import albic, so it cannot borrow albic's
code by accident. ``Operator`` and ``Edge`` describe the topology; :func:`topology` builds them from
an albic spec (used by the benchmark only).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import pandas as pd


@dataclass(frozen=True)
class Operator:
    name: str
    keys: tuple[str, ...]
    service_time: str | None = None


@dataclass(frozen=True)
class Edge:
    src: str
    dst: str


def topology(spec) -> tuple[list[Operator], list[Edge]]:
    """The operators and edges of an albic :class:`~albic.stats.spec.TopologySpec`."""
    ops = [Operator(op.name, tuple(op.keys), op.service_time) for op in spec.operators]
    return ops, [Edge(e.src, e.dst) for e in spec.edges]


def key_group_udf(key_groups: int):
    """A pandas UDF: the key group of each key text (null for a null key)."""
    from pyspark.sql.functions import pandas_udf

    def one(key):
        if key is None:
            return None
        digest = hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest()
        return int.from_bytes(digest, "big") % key_groups

    @pandas_udf("long")
    def key_group(keys: pd.Series) -> pd.Series:
        return keys.map(one).astype("Int64")

    return key_group


def run_baseline(
    spark,
    events: str,
    timestamp: str,
    operators: list[Operator],
    edges: list[Edge],
    out: str | Path,
    *,
    key_groups: int = 128,
    scale: int = 1,
) -> None:
    """Writes ``out/key_groups`` (period, operator, index, events, keys, timed, busy) and
    ``out/traffic`` (period, src, dst, src_index, dst_index, events) as Parquet."""
    from pyspark.sql import functions as F

    out = Path(out).resolve()
    frame = spark.read.parquet(str(Path(events).resolve()))
    copies = spark.range(scale).withColumnRenamed("id", "copy")
    frame = frame.crossJoin(copies)
    suffix = F.when(F.col("copy") > 0, F.concat(F.lit("#"), F.col("copy").cast("string"))).otherwise("")
    period = F.date_format(F.date_trunc("hour", F.col(timestamp)), "yyyy-MM-dd'T'HH:mm")
    key_group = key_group_udf(key_groups)
    columns = [period.alias("period")]
    for op in operators:
        present = F.lit(True)
        for name in op.keys:
            present = present & F.col(name).isNotNull()
        key = F.when(present, F.concat(F.concat_ws("|", *[F.col(c).cast("string") for c in op.keys]), suffix))
        busy = F.col(op.service_time).cast("double") if op.service_time else F.lit(None).cast("double")
        columns += [key.alias(f"key_{op.name}"), busy.alias(f"busy_{op.name}")]
    wide = frame.select(*columns)
    for op in operators:
        wide = wide.withColumn(f"kg_{op.name}", key_group(F.col(f"key_{op.name}")))
    wide = wide.cache()

    per_operator = [
        wide.where(F.col(f"key_{op.name}").isNotNull())
        .groupBy("period", F.col(f"kg_{op.name}").alias("index"))
        .agg(
            F.count(F.lit(1)).alias("events"),
            F.countDistinct(f"key_{op.name}").alias("keys"),
            F.count(f"busy_{op.name}").alias("timed"),
            F.coalesce(F.sum(f"busy_{op.name}"), F.lit(0.0)).alias("busy"),
        )
        .withColumn("operator", F.lit(op.name))
        for op in operators
    ]
    per_edge = [
        wide.where(F.col(f"key_{e.src}").isNotNull() & F.col(f"key_{e.dst}").isNotNull())
        .groupBy("period", F.col(f"kg_{e.src}").alias("src_index"), F.col(f"kg_{e.dst}").alias("dst_index"))
        .agg(F.count(F.lit(1)).alias("events"))
        .withColumn("src", F.lit(e.src))
        .withColumn("dst", F.lit(e.dst))
        for e in edges
    ]
    try:
        _union(per_operator).write.parquet(str(out / "key_groups"))
        _union(per_edge).write.parquet(str(out / "traffic"))
    finally:
        wide.unpersist()


def _union(frames):
    whole = frames[0]
    for frame in frames[1:]:
        whole = whole.unionByName(frame)
    return whole


def same_aggregates(albic: str | Path, baseline: str | Path) -> str | None:
    """``None`` when albic's tables (``albic stats`` output) and the hand-written job's hold the same
    events and distinct keys per operator, period and key group, and the same events per edge,
    period and pair of key groups; else what differs."""
    albic, baseline = Path(albic), Path(baseline)
    by_group = ["operator", "period", "index"]
    ours = pd.read_parquet(albic / "key_groups", columns=[*by_group, "events", "keys"])
    theirs = pd.read_parquet(baseline / "key_groups", columns=[*by_group, "events", "keys"])
    problem = _differ(ours, theirs, by_group, "key_groups")
    if problem:
        return problem
    ours = pd.read_parquet(albic / "traffic", columns=["period", "src", "dst", "events"])
    theirs = pd.read_parquet(baseline / "traffic")
    theirs = pd.DataFrame(
        {
            "period": theirs["period"],
            "src": theirs["src"] + "/" + theirs["src_index"].astype(str),
            "dst": theirs["dst"] + "/" + theirs["dst_index"].astype(str),
            "events": theirs["events"],
        }
    )
    return _differ(ours, theirs, ["period", "src", "dst"], "traffic")


def _differ(ours: pd.DataFrame, theirs: pd.DataFrame, keys: list[str], table: str) -> str | None:
    merged = ours.merge(theirs, on=keys, how="outer", suffixes=("_albic", "_baseline"), indicator=True)
    if (merged["_merge"] != "both").any():
        only = merged[merged["_merge"] != "both"]
        return f"{table}: {len(only)} rows in one table only, e.g. {only.iloc[0][keys].to_dict()}"
    for column in ours.columns.difference(keys):
        wrong = merged[f"{column}_albic"].astype("int64") != merged[f"{column}_baseline"].astype("int64")
        if wrong.any():
            return f"{table}: {column} differs in {int(wrong.sum())} rows, e.g. {merged[wrong].iloc[0].to_dict()}"
    return None
