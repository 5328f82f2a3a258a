"""The statistics in one process, with pandas: the engine of :func:`albic.stats.job.run` that the
tests take as the oracle and the benchmark as the baseline (definitions: :mod:`albic.stats.job`).

Example: the hand-checkable statistics of three events
------------------------------------------------------
>>> import pandas as pd
>>> from albic.stats.spec import parse_spec
>>> spec = parse_spec('timestamp = "t"\\n[[operators]]\\nname = "w"\\nkeys = ["w"]\\ncost = 2.0')
>>> events = pd.DataFrame({"t": ["2013-01-01 00:10", "2013-01-01 00:20", "2013-01-01 01:05"],
...                        "w": ["a", "a", "b"]})
>>> tables = compute_pandas(events, spec, period_seconds=3600, key_groups=1)
>>> kg = tables.key_groups
>>> kg[["period", "id", "events", "keys", "state_size"]].to_dict("records")[0]
{'period': '2013-01-01T00:00', 'id': 'w/0', 'events': 2, 'keys': 1, 'state_size': 256.0}
>>> tables.partial                      # the events cover 00:10-01:00 and 01:00-01:06 (minute stamps)
{'2013-01-01T00:00': 3000.0, '2013-01-01T01:00': 360.0}
>>> kg["load"].round(9).tolist()        # 2 events x cost 2 over 3,000 s, then 1 x 2 over 360 s
[0.001333333, 0.005555556]
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from albic.base.errors import AlbicError
from albic.core.hashing import key_groups as hash_key_groups
from albic.io.datasets import write_table
from albic.stats.events import check_columns, check_service_times, is_csv, no_rows, scan_event_file
from albic.stats.job import Computed, Engine, run, service_rates
from albic.stats.periods import (
    epoch_micros,
    partial_periods,
    period_grid,
    period_labels,
    period_origin,
    period_starts,
    rate_seconds,
    time_tick,
)
from albic.stats.request import StatsRequest
from albic.stats.spec import KEY_SEPARATOR, TopologySpec

__all__ = [
    "PandasEngine",
    "run_pandas",
    "read_events",
    "normalise_events",
    "compute_pandas",
    "canonical",
    "KG_COLUMNS",
    "TRAFFIC_COLUMNS",
]

KG_COLUMNS = [
    "period",
    "operator",
    "index",
    "id",
    "events",
    "keys",
    "load",
    "state_size",
    "arrival_rate",
    "service_rate",
]
TRAFFIC_COLUMNS = ["period", "src", "dst", "events", "rate"]


class PandasEngine(Engine):
    """The job in this process (:func:`albic.stats.job.run`)."""

    def compute(self, request: StatsRequest) -> Computed:
        events, spec, source = request.events, request.spec, request.source
        if isinstance(events, pd.DataFrame):
            check_columns(list(events.columns), spec, source)
            frame = normalise_events(events, spec)
        else:
            frame = read_events(events, spec)
        tables = compute_pandas(
            frame,
            spec,
            period_seconds=request.period_seconds,
            key_groups=request.key_groups,
            scale=request.scale,
            source=source,
            timezone=request.timezone,
            weeks=request.weeks,
        )
        return Computed(
            tables.key_groups,
            tables.traffic,
            len(frame),
            tables.periods,
            tables.service_rates,
            tables.partial,
        )

    def write_tables(self, computed: Computed, folder: Path) -> None:
        write_table(computed.key_groups, folder / "key_groups")
        write_table(computed.traffic, folder / "traffic")

    def operator_events(self, computed: Computed, folder: Path) -> pd.DataFrame:
        return computed.key_groups

    def label(self) -> str:
        return "pandas"


def run_pandas(
    events: pd.DataFrame | str | os.PathLike[str],
    spec: TopologySpec,
    out: str | os.PathLike[str],
    **settings: Any,
) -> Path:
    """The whole job in pandas: ``run(StatsRequest(events, spec, out, **settings), PandasEngine())``; the settings are
    :class:`~albic.stats.request.StatsRequest`'s (period, key_groups, scale, nodes, timezone, ...)."""
    return run(StatsRequest(events, spec, out, **settings), PandasEngine())


def read_events(path: str | os.PathLike[str], spec: TopologySpec) -> pd.DataFrame:
    """The event table at ``path`` (CSV: every cell as text, the spec's null values missing;
    Parquet: key columns as text), checked by :func:`albic.stats.events.scan_event_file`, the rules
    the Spark job follows too."""
    table = scan_event_file(path, spec, keep=True)
    if is_csv(path):
        return table.to_pandas().replace(list(spec.null_values), None)
    return normalise_events(table, spec)


def normalise_events(events: Any, spec: TopologySpec) -> pd.DataFrame:
    """A typed event table (pyarrow Table or DataFrame) as the Spark job sees it: key columns cast
    to text (Arrow's casts: integers as ``1545``), key cells equal to a null value missing."""
    import pyarrow as pa
    import pyarrow.compute as pc

    table = events if isinstance(events, pa.Table) else pa.Table.from_pandas(events, preserve_index=False)
    for name in spec.key_columns():
        if name == spec.timestamp or name not in table.column_names:
            continue
        position = table.column_names.index(name)
        table = table.set_column(position, name, pc.cast(table[name], "string"))
    frame = table.to_pandas()
    # Key and service-time cells equal to a null value are missing, as the Spark job reads them.
    keys = [
        c
        for c in dict.fromkeys([*spec.key_columns(), *spec.service_time_columns()])
        if c != spec.timestamp and c in frame.columns
    ]
    frame[keys] = frame[keys].replace(list(spec.null_values), None)
    return frame


def _ids(operators: pd.Series, indices: pd.Series) -> np.ndarray:
    """``operator/index`` ids, formatted once per distinct pair."""
    op_codes, names = pd.factorize(operators.to_numpy(dtype=object))
    index = indices.to_numpy(dtype=np.int64)
    width = int(index.max()) + 1 if index.size else 1
    table = np.array([f"{op}/{i}" for op in names for i in range(width)], dtype=object)
    return table[op_codes * width + index]


# -- the pandas twin ------------------------------------------------------------------------------


def _key_text(events: pd.DataFrame, keys: Sequence[str]) -> pd.Series:
    """The composite key text of every event (missing when any key column is missing)."""
    text = events[keys[0]].astype(object)
    missing = text.isna()
    for column in keys[1:]:
        part = events[column].astype(object)
        missing |= part.isna()
        text = text.where(missing, text.astype(str) + KEY_SEPARATOR + part.astype(str))
    return text.where(~missing, None)


class Tables(NamedTuple):
    """What :func:`compute_pandas` computes."""

    key_groups: pd.DataFrame
    traffic: pd.DataFrame
    periods: list[str]
    service_rates: dict[str, float | None]
    partial: dict[str, float] = {}


def compute_pandas(
    events: pd.DataFrame,
    spec: TopologySpec,
    *,
    period_seconds: int,
    key_groups: int,
    scale: int = 1,
    source: str = "events",
    timezone: str = "UTC",
    weeks: bool = False,
) -> Tables:
    """The ``key_groups`` and ``traffic`` tables of the module docstring, in pandas, the labels of
    every period (:func:`period_grid`), the operators' fallback service rates and the partial
    periods (:func:`albic.stats.periods.partial_periods`); ``weeks``: periods are ISO weeks."""
    key_groups = spec.key_group_count(key_groups)
    if key_groups < 1 or scale < 1:
        raise AlbicError(f"key_groups and scale must be >= 1, got {key_groups} and {scale}")
    check_columns(list(events.columns), spec, source)
    if len(events) == 0:
        raise no_rows(source)
    micros = epoch_micros(events[spec.timestamp], spec.timestamp, source)
    first, last = int(micros.min()), int(micros.max())
    origin = period_origin(first, period_seconds, timezone, weeks)
    period = period_starts(micros, period_seconds, timezone, origin)
    busy = {c: check_service_times(events[c], c, source) for c in spec.service_time_columns()}
    # Factorize each operator's key once; copies only change the suffix, hashed per distinct key.
    codes, uniques = {}, {}
    for op in spec.operators:
        text = _key_text(events, op.keys)
        text = text.where(~text.isin(list(spec.null_values)), None)
        codes[op.name], uniques[op.name] = pd.factorize(text, use_na_sentinel=True)
    kg_keys, traffic_keys = ["p", "operator", "index"], ["p", "src_op", "s", "dst_op", "d"]
    kg_values = ["events", "keys", "timed", "busy"]
    kg = pd.DataFrame(columns=[*kg_keys, *kg_values])
    traffic = pd.DataFrame(columns=[*traffic_keys, "events"])
    for copy in range(scale):
        suffix = f"#{copy}" if copy else ""
        group, kg_parts, traffic_parts = {}, [kg], [traffic]
        for op in spec.operators:
            hashed = hash_key_groups([f"{k}{suffix}" for k in uniques[op.name]], key_groups, method=spec.hash)
            code = codes[op.name]
            group[op.name] = np.where(code >= 0, hashed[np.maximum(code, 0)], -1)
            present = code >= 0
            frame = pd.DataFrame(
                {
                    "p": period[present],
                    "index": group[op.name][present],
                    "code": code[present],
                    "busy": busy[op.service_time][present] if op.service_time else np.nan,
                }
            )
            agg = frame.groupby(["p", "index"]).agg(
                events=("code", "size"),
                keys=("code", "nunique"),
                timed=("busy", "count"),
                busy=("busy", "sum"),
            )
            kg_parts.append(agg.reset_index().assign(operator=op.name))
        for edge in spec.edges:
            src, dst = group[edge.src], group[edge.dst]
            both = (src >= 0) & (dst >= 0)
            frame = pd.DataFrame({"p": period[both], "s": src[both], "d": dst[both]})
            agg = frame.groupby(["p", "s", "d"]).size().rename("events").reset_index()
            traffic_parts.append(agg.assign(src_op=edge.src, dst_op=edge.dst))
        # Fold each copy in at once: copies share key groups, so the running tables stay the size
        # of one copy's (copies have distinct keys, so distinct-key counts add up too).
        kg = _fold(kg_parts, kg_keys, kg_values)
        traffic = _fold(traffic_parts, traffic_keys, ["events"])
    grid = period_grid(first, last, period_seconds, timezone, origin)
    partial = partial_periods(_period_bounds(period, micros), period_seconds, timezone, time_tick(micros))
    totals = kg.groupby("operator")[["timed", "busy"]].sum()
    defaults = service_rates(spec, {op: (r.timed, r.busy) for op, r in totals.iterrows()})
    return Tables(
        _finish_key_groups(kg, spec, rate_seconds(kg["p"], period_seconds, timezone, partial), defaults),
        _finish_traffic(traffic, rate_seconds(traffic["p"], period_seconds, timezone, partial)),
        period_labels(grid).tolist(),
        defaults,
        partial,
    )


def _period_bounds(period: np.ndarray, micros: np.ndarray) -> dict[str, tuple[int, int]]:
    """Each period's (label ->) first and last event time (:func:`albic.stats.periods.partial_periods`)."""
    bounds = pd.DataFrame({"p": period, "m": micros}).groupby("p")["m"].agg(["min", "max"])
    labels = period_labels(bounds.index.to_numpy()).tolist()
    return dict(zip(labels, zip(bounds["min"].tolist(), bounds["max"].tolist())))


def _fold(parts: list[pd.DataFrame], keys: list[str], values: list[str]) -> pd.DataFrame:
    parts = [p for p in parts if len(p)]
    if not parts:
        return pd.DataFrame(columns=[*keys, *values])
    return pd.concat(parts).groupby(keys, as_index=False)[values].sum()


def _finish_key_groups(
    kg: pd.DataFrame, spec: TopologySpec, seconds: np.ndarray, defaults: dict[str, float | None]
) -> pd.DataFrame:
    """Derived columns and canonical order/types; ``seconds`` is each row's period length."""
    timed, busy = kg["timed"].to_numpy(dtype=float), kg["busy"].to_numpy(dtype=float)
    fallback = kg["operator"].map(defaults).to_numpy(dtype=float)
    measured = np.divide(timed, busy, out=np.zeros_like(timed), where=busy > 0)
    cost = kg["operator"].map({op.name: float(op.cost) for op in spec.operators})
    per_key = kg["operator"].map({op.name: float(op.bytes_per_key) for op in spec.operators})
    out = pd.DataFrame(
        {
            "period": period_labels(kg["p"].to_numpy()),
            "operator": kg["operator"].to_numpy(dtype=object),
            "index": kg["index"].to_numpy(dtype=np.int64),
            "id": _ids(kg["operator"], kg["index"]),
            "events": kg["events"].to_numpy(dtype=np.int64),
            "keys": kg["keys"].to_numpy(dtype=np.int64),
            "load": (kg["events"].to_numpy(dtype=np.int64) * cost.to_numpy() / seconds.astype(float)),
            "state_size": kg["keys"].to_numpy(dtype=np.int64) * per_key.to_numpy(),
            "arrival_rate": kg["events"].to_numpy(dtype=np.int64) / seconds.astype(float),
            "service_rate": np.where(busy > 0, measured, fallback),
        }
    )
    return canonical(out, KG_COLUMNS)


def _finish_traffic(traffic: pd.DataFrame, seconds: np.ndarray) -> pd.DataFrame:
    events = traffic["events"].to_numpy(dtype=np.int64)
    out = pd.DataFrame(
        {
            "period": period_labels(traffic["p"].to_numpy(dtype=np.int64)),
            "src": _ids(traffic["src_op"], traffic["s"]),
            "dst": _ids(traffic["dst_op"], traffic["d"]),
            "events": events,
            "rate": events / seconds.astype(float),
        }
    )
    return canonical(out, TRAFFIC_COLUMNS)


def canonical(frame: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """Rows sorted by their identifying columns, a fresh index: the form tests compare."""
    keys = [c for c in ("period", "operator", "index", "src", "dst", "id") if c in columns]
    return frame[columns].sort_values(keys, kind="stable").reset_index(drop=True)
