"""Per-period statistics of a trace: the pieces shared by the Spark job and its pandas twin.

``albic stats`` (design sections 1, 6, 7) turns an event table and a topology spec
(:mod:`albic.stats.spec`) into, for every period:

- per operator key group: ``events`` (events whose key falls in it), ``load`` =
  ``events x operator cost / period seconds``, ``keys`` (distinct keys seen), ``state_size`` =
  ``keys x bytes_per_key``, ``arrival_rate`` = ``events / period seconds`` and ``service_rate``
  (events per second of one core: ``1 / cost``, or measured; :func:`service_rates`);
- per edge and key-group pair: ``rate`` = ``events / period seconds``;
- the node-count series (:mod:`albic.stats.node_counts`: load mapping, fixed, or an external series).

**Units.** ``Traffic.rate`` is tuples per second (design section 3), so ``load`` is in the same
unit: cost-weighted events per second, averaged over the period. With the default cost of 1 both
are plain event rates, and ALBIC's load index (``load + remote_cost x remote rate``) adds like
units; ``remote_cost`` is then the cost of one remote tuple relative to processing one event.

**Keys.** A key is the text of the operator's key columns joined by ``|``; it goes to key group
:func:`albic.core.hashing.key_group` (blake2b, 8 bytes, big-endian, mod K). ``--scale K`` replays the
trace K times: copy ``c > 0`` appends ``#c`` to every key, so each copy has distinct keys (loads and
traffic grow K-fold, spread over the same key groups; state grows K-fold too).

**Rates.** ``cost`` is read as the seconds one core spends on one event, so ``load`` is in busy
cores and ``1 / cost`` is the service rate; an operator with a ``service_time`` column gets measured
rates instead (timed events / their busy seconds; see :func:`service_rates` for key groups without
timed events). Key groups without events in a period have ``arrival_rate`` 0 and the operator's
fallback service rate (in the manifest's ``service_rate``), as :func:`albic.io.read_snapshots`
fills them in.

**Periods.** An event falls in the period ``floor(wall clock / P) x P`` of the ``timezone`` (default
UTC; :func:`period_starts`); the period's label is its start as ``YYYY-MM-DDTHH:MM`` on that wall
clock. Every period from the first event's to the last event's is a snapshot, empty ones included
(:func:`period_grid`): the ``nodes`` table lists them all and the manifest counts them
(``periods``); the ``key_groups`` and ``traffic`` tables hold only rows with events.

**Output** (a folder, written atomically: built in a hidden temporary folder next to the target and
renamed into place at the end; a failed run leaves nothing): Parquet tables ``key_groups/``
(period, operator, index, id, events, keys, load, state_size, arrival_rate, service_rate),
``traffic/`` (period, src, dst, events, rate), ``nodes/`` (period, id, capacity, cores) and
``manifest.json`` (the spec, the settings, the number of periods, the time zone, the fallback
service rates and the key-group count K per operator), which :func:`albic.io.read_snapshots` reads back.

This module is also the single-process twin of the Spark job (:func:`compute_pandas`), the oracle
of the tests and the baseline of the benchmark.

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
>>> (kg["load"] * 3600).round(9).tolist()        # 2 events x cost 2 per hour, then 1 x 2
[4.0, 2.0]
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from albic.base import files as tempfiles
from albic.base.errors import AlbicError
from albic.stats.events import (
    TraceError,
    check_columns,
    check_service_times,
    check_timestamps,
    is_csv,
    no_rows,
    scan_event_file,
)
from albic.core.hashing import key_groups as hash_key_groups
from albic.stats.node_counts import ExternalNodeCounts, NodeCountRule
from albic.stats.periods import (
    epoch_micros,
    parse_period,
    parse_timezone,
    period_grid,
    period_labels,
    period_starts,
)
from albic.stats.spec import KEY_SEPARATOR, TopologySpec
from albic.io.datasets import MANIFEST
from albic.io.datasets import STATS_SCHEMA

__all__ = [
    "TraceError",
    "NodeCountRule",
    "check_columns",
    "read_events",
    "compute_pandas",
    "nodes_table",
    "atomic_output",
    "write_manifest",
    "write_dataset_pandas",
    "run_pandas",
    "KG_COLUMNS",
    "TRAFFIC_COLUMNS",
]

KG_COLUMNS = [
    "period", "operator", "index", "id", "events", "keys", "load", "state_size", "arrival_rate",
    "service_rate",
]
TRAFFIC_COLUMNS = ["period", "src", "dst", "events", "rate"]


# -- reading events -------------------------------------------------------------------------------


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
    keys = [c for c in dict.fromkeys([*spec.key_columns(), *spec.service_time_columns()])
            if c != spec.timestamp and c in frame.columns]
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


def compute_pandas(
    events: pd.DataFrame,
    spec: TopologySpec,
    *,
    period_seconds: int,
    key_groups: int,
    scale: int = 1,
    source: str = "events",
    timezone: str = "UTC",
) -> Tables:
    """The ``key_groups`` and ``traffic`` tables of the module docstring, in pandas, the labels of
    every period (:func:`period_grid`) and the operators' fallback service rates."""
    key_groups = spec.key_group_count(key_groups)
    if key_groups < 1 or scale < 1:
        raise AlbicError(f"key_groups and scale must be >= 1, got {key_groups} and {scale}")
    check_columns(list(events.columns), spec, source)
    if len(events) == 0:
        raise no_rows(source)
    micros = epoch_micros(events[spec.timestamp], spec.timestamp, source)
    period = period_starts(micros, period_seconds, timezone)
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
            hashed = hash_key_groups([f"{k}{suffix}" for k in uniques[op.name]], key_groups,
                                     method=spec.hash)
            code = codes[op.name]
            group[op.name] = np.where(code >= 0, hashed[np.maximum(code, 0)], -1)
            present = code >= 0
            frame = pd.DataFrame({
                "p": period[present], "index": group[op.name][present], "code": code[present],
                "busy": busy[op.service_time][present] if op.service_time else np.nan,
            })
            agg = frame.groupby(["p", "index"]).agg(
                events=("code", "size"), keys=("code", "nunique"), timed=("busy", "count"),
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
    grid = period_grid(int(micros.min()), int(micros.max()), period_seconds, timezone)
    totals = kg.groupby("operator")[["timed", "busy"]].sum()
    defaults = service_rates(spec, {op: (r.timed, r.busy) for op, r in totals.iterrows()})
    return Tables(
        _finish_key_groups(kg, spec, period_seconds, defaults),
        _finish_traffic(traffic, period_seconds),
        period_labels(grid).tolist(),
        defaults,
    )


def service_rates(spec: TopologySpec, measured: dict[str, tuple[float, float]]) -> dict[str, float | None]:
    """Each operator's service rate (events per second of one core) for key groups with no timed
    events in a period: ``1 / cost`` (``None`` when the cost is 0), or, with a ``service_time``
    column, the operator's timed events over their busy seconds across the whole trace
    (``measured[op] = (timed events, busy seconds)``).

    >>> from albic.stats.spec import parse_spec
    >>> spec = parse_spec('timestamp = "t"\\n[[operators]]\\nname = "a"\\nkeys = ["k"]\\ncost = 0.5\\n'
    ...                   '[[operators]]\\nname = "b"\\nkeys = ["k"]\\nservice_time = "s"')
    >>> service_rates(spec, {"b": (6, 3.0)})
    {'a': 2.0, 'b': 2.0}
    """
    rates: dict[str, float | None] = {}
    for op in spec.operators:
        timed, seconds = measured.get(op.name, (0, 0.0))
        if op.service_time and seconds > 0:
            rates[op.name] = float(timed) / float(seconds)
        else:
            rates[op.name] = 1.0 / float(op.cost) if op.cost > 0 else None
    return rates


def _fold(parts: list[pd.DataFrame], keys: list[str], values: list[str]) -> pd.DataFrame:
    parts = [p for p in parts if len(p)]
    if not parts:
        return pd.DataFrame(columns=[*keys, *values])
    return pd.concat(parts).groupby(keys, as_index=False)[values].sum()


def _finish_key_groups(
    kg: pd.DataFrame, spec: TopologySpec, period_seconds: int, defaults: dict[str, float | None]
) -> pd.DataFrame:
    """Derived columns and canonical order/types."""
    timed, busy = kg["timed"].to_numpy(dtype=float), kg["busy"].to_numpy(dtype=float)
    fallback = kg["operator"].map(defaults).to_numpy(dtype=float)
    measured = np.divide(timed, busy, out=np.zeros_like(timed), where=busy > 0)
    cost = kg["operator"].map({op.name: float(op.cost) for op in spec.operators})
    per_key = kg["operator"].map({op.name: float(op.bytes_per_key) for op in spec.operators})
    out = pd.DataFrame({
        "period": period_labels(kg["p"].to_numpy()),
        "operator": kg["operator"].to_numpy(dtype=object),
        "index": kg["index"].to_numpy(dtype=np.int64),
        "id": _ids(kg["operator"], kg["index"]),
        "events": kg["events"].to_numpy(dtype=np.int64),
        "keys": kg["keys"].to_numpy(dtype=np.int64),
        "load": (kg["events"].to_numpy(dtype=np.int64) * cost.to_numpy() / float(period_seconds)),
        "state_size": kg["keys"].to_numpy(dtype=np.int64) * per_key.to_numpy(),
        "arrival_rate": kg["events"].to_numpy(dtype=np.int64) / float(period_seconds),
        "service_rate": np.where(busy > 0, measured, fallback),
    })
    return canonical(out, KG_COLUMNS)


def _finish_traffic(traffic: pd.DataFrame, period_seconds: int) -> pd.DataFrame:
    events = traffic["events"].to_numpy(dtype=np.int64)
    out = pd.DataFrame({
        "period": period_labels(traffic["p"].to_numpy(dtype=np.int64)),
        "src": _ids(traffic["src_op"], traffic["s"]),
        "dst": _ids(traffic["dst_op"], traffic["d"]),
        "events": events,
        "rate": events / float(period_seconds),
    })
    return canonical(out, TRAFFIC_COLUMNS)


def canonical(frame: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """Rows sorted by their identifying columns, a fresh index: the form tests compare."""
    keys = [c for c in ("period", "operator", "index", "src", "dst", "id") if c in columns]
    return frame[columns].sort_values(keys, kind="stable").reset_index(drop=True)


def nodes_table(
    key_groups: pd.DataFrame, rule: NodeCountRule | ExternalNodeCounts, spec: TopologySpec,
    period_seconds: int,
    periods: Sequence[str] | None = None,
    cores: int = 1,
) -> pd.DataFrame:
    """The node-count series as rows (period, id, capacity, cores): nodes ``n1 .. n_count`` of
    ``cores`` cores each for every period of ``periods`` (default: those with events), in time
    order; it defines the snapshots.

    ``key_groups`` needs the columns period, operator and events (the full table or per-operator
    sums). A period's total load is computed from per-operator event counts (exact integers) as
    ``sum_op events_op x cost_op / P`` (0 for an empty period), so both engines get bit-identical
    totals and node counts.
    """
    events = key_groups.groupby(["period", "operator"], sort=True)["events"].sum().unstack(fill_value=0)
    if periods is not None:
        events = events.reindex(list(periods), fill_value=0)
    totals = np.zeros(len(events))
    for op in spec.operators:
        if op.name in events.columns:
            totals = totals + events[op.name].to_numpy(dtype=np.int64) * float(op.cost) / period_seconds
    counts = rule.for_periods(totals, list(events.index))
    rows = [
        (period, f"n{i + 1}", 1.0, cores)
        for period, count in zip(events.index, counts) for i in range(count)
    ]
    return pd.DataFrame(rows, columns=["period", "id", "capacity", "cores"])


# -- writing --------------------------------------------------------------------------------------


@contextlib.contextmanager
def atomic_output(out: str | os.PathLike[str]) -> Iterator[Path]:
    """A temporary folder next to ``out`` that replaces ``out`` only if the block succeeds.

    ``out`` may not exist, be an empty folder, or be an earlier albic stats dataset (it has a
    manifest); anything else is refused before any work, so nothing of the user's is overwritten.
    """
    out = Path(out).resolve()
    if out.exists():
        if not out.is_dir():
            raise AlbicError(f"cannot write the statistics to {out}: it is a file")
        if any(out.iterdir()) and not (out / MANIFEST).exists():
            raise AlbicError(
                f"cannot write the statistics to {out}: the folder is not empty and is not an albic "
                "stats dataset; choose a new or empty folder"
            )
    out.parent.mkdir(parents=True, exist_ok=True)
    # Temporaries named by host and pid: a later run removes those of a killed run (issue 15).
    tempfiles.remove_stale(out)
    tmp = tempfiles.make_folder(out)
    try:
        yield tmp
        old = None
        if out.exists():
            old = tempfiles.sibling(out)
            out.rename(old)
        tmp.rename(out)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def write_manifest(folder: Path, **fields: Any) -> None:
    (folder / MANIFEST).write_text(
        json.dumps({"schema": STATS_SCHEMA, **fields}, indent=2, sort_keys=True) + "\n",
        encoding="utf-8",
    )


def manifest_fields(
    spec: TopologySpec, *, trace: str, period_seconds: int, key_groups: int, scale: int,
    rule: NodeCountRule | ExternalNodeCounts, engine: str, events: int, periods: int,
    timezone: str = "UTC", service_rates: dict[str, float | None] | None = None,
) -> dict[str, Any]:
    return {
        "periods": periods,
        "timezone": timezone,
        "service_rate": service_rates or {},
        "trace": trace,
        "engine": engine,
        "period_seconds": period_seconds,
        "key_groups": {op.name: key_groups for op in spec.operators},
        "scale": scale,
        "events": events,
        "node_count_rule": rule.describe(),
        "spec": spec.to_dict(),
    }


def write_table(frame: pd.DataFrame, folder: Path) -> None:
    folder.mkdir()
    frame.to_parquet(folder / "part-0.parquet", index=False)


def write_dataset_pandas(
    folder: Path, key_groups: pd.DataFrame, traffic: pd.DataFrame, nodes: pd.DataFrame,
    manifest: dict[str, Any],
) -> None:
    write_table(key_groups, folder / "key_groups")
    write_table(traffic, folder / "traffic")
    write_table(nodes, folder / "nodes")
    write_manifest(folder, **manifest)


def run_pandas(
    events: pd.DataFrame | str | os.PathLike[str],
    spec: TopologySpec,
    out: str | os.PathLike[str],
    *,
    period: str | int = "1h",
    key_groups: int = 128,
    scale: int = 1,
    nodes: NodeCountRule | ExternalNodeCounts | None = None,
    trace: str | None = None,
    timezone: str | None = None,
    cores: int = 1,
) -> Path:
    """The whole job in pandas: read, compute, write the dataset atomically to ``out``."""
    key_groups = spec.key_group_count(key_groups)
    rule = nodes or NodeCountRule()
    seconds = parse_period(period)
    timezone = parse_timezone(timezone)
    with atomic_output(out) as tmp:
        source = "events" if isinstance(events, pd.DataFrame) else str(events)
        if isinstance(events, pd.DataFrame):
            check_columns(list(events.columns), spec, source)
            frame = normalise_events(events, spec)
        else:
            frame = read_events(events, spec)
        tables = compute_pandas(
            frame, spec, period_seconds=seconds, key_groups=key_groups, scale=scale, source=source,
            timezone=timezone,
        )
        manifest = manifest_fields(
            spec, trace=trace or source, period_seconds=seconds, key_groups=key_groups,
            scale=scale, rule=rule, engine="pandas", events=len(frame) * scale,
            periods=len(tables.periods), timezone=timezone, service_rates=tables.service_rates,
        )
        nodes_rows = nodes_table(tables.key_groups, rule, spec, seconds, tables.periods, cores)
        write_dataset_pandas(tmp, tables.key_groups, tables.traffic, nodes_rows, manifest)
    return Path(out)

