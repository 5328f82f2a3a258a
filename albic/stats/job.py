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

**Periods.** An event falls in the period ``floor((wall clock - origin) / P) x P + origin`` of the
``timezone`` (default UTC; :func:`period_starts`); the period's label is its start as
``YYYY-MM-DDTHH:MM`` on that wall clock. Periods up to a day divide the local day (origin 0: ``1d``
starts at local midnight); ``Nd`` counts from the first event's local midnight and ``Nw`` from the
Monday 00:00 on or before it, ISO weeks (:func:`albic.stats.periods.period_origin`). A period's
seconds are its true length, from the UTC instant it starts at to the one its successor starts at
(:func:`albic.stats.periods.period_lengths`): under daylight saving the hour repeated when clocks
go back lasts 7,200 s, the days clocks change 82,800 s or 90,000 s and such a week 604,800 ± 3,600 s.
Every period from the first event's to the last event's is a snapshot, empty ones included
(:func:`period_grid`): the ``nodes`` table lists them all and the manifest counts them
(``periods``); the ``key_groups`` and ``traffic`` tables hold only rows with events.

**Partial periods.** The first period from the first event's instant to its end, and the last
from its start to the end of the last event's tick (the trace's time resolution,
:func:`albic.stats.periods.time_tick`), are all the events cover of them; when the stretch they
leave empty is longer than in 9 of 10 whole periods (a day's start before its first departure is
not missing data) the period is *partial* (:func:`albic.stats.periods.partial_periods`) and every
rate of it (``load``, ``arrival_rate``, traffic ``rate``, the total load behind the node counts) is
over the covered seconds, so a trace that starts on a Wednesday shows its first week's real load.
The manifest lists them (``partial_periods``: label -> covered seconds; absent when there are none)
and :func:`albic.io.read_snapshots` marks their snapshots (``Snapshot.covered_seconds``). Every
other rate is events over the period's true length.

**Output** (a folder, written atomically: built in a hidden temporary folder next to the target and
renamed into place at the end; a failed run leaves nothing): Parquet tables ``key_groups/``
(period, operator, index, id, events, keys, load, state_size, arrival_rate, service_rate),
``traffic/`` (period, src, dst, events, rate), ``nodes/`` (period, id, capacity, cores) and
``manifest.json`` (the spec, the settings, the number of periods, the time zone, the fallback
service rates and the key-group count K per operator), which :func:`albic.io.read_snapshots` reads back.

This module is the job's skeleton, :func:`run`: a :class:`~albic.stats.request.StatsRequest` carried out on
an :class:`Engine` that supplies only what differs -- :class:`~albic.stats.pandas_engine.PandasEngine`
(one process; the oracle of the tests), :class:`~albic.stats.duckdb_engine.DuckDBEngine` (one
machine, every core, out of core) or :class:`~albic.spark.stats_engine.SparkEngine`. Reading the
events, the shared definitions (:func:`service_rates`, :func:`nodes_table`), writing the dataset
atomically and its manifest happen here once for all.
"""

from __future__ import annotations

import abc
import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from albic.io.datasets import dataset_folder, write_manifest, write_table
from albic.stats.node_counts import ExternalNodeCounts, NodeCountRule
from albic.stats.periods import rate_seconds, wall_seconds
from albic.stats.request import StatsRequest
from albic.stats.spec import TopologySpec

__all__ = ["Engine", "Computed", "run", "service_rates", "nodes_table", "manifest_fields"]


@dataclass
class Computed:
    """What an engine computed: the ``key_groups`` and ``traffic`` tables (the engine's own
    kind), the events read before scaling, every period's label, the operators' fallback
    service rates (:func:`service_rates`) and the partial periods (label -> covered seconds,
    :func:`albic.stats.periods.partial_periods`)."""

    key_groups: Any
    traffic: Any
    events: int
    periods: list[str]
    service_rates: dict[str, float | None]
    partial: dict[str, float] = field(default_factory=dict)


class Engine(abc.ABC):
    """What differs between the pandas and the Spark statistics: the steps of :func:`run`."""

    @contextlib.contextmanager
    def running(self, request: StatsRequest) -> Iterator[None]:
        """Around reading, computing and writing the tables (Spark: its session, errors, bar)."""
        yield

    @abc.abstractmethod
    def compute(self, request: StatsRequest) -> Computed:
        """Read the events and compute the tables."""

    @abc.abstractmethod
    def write_tables(self, computed: Computed, folder: Path) -> None:
        """Write ``key_groups/`` and ``traffic/`` into the dataset folder."""

    @abc.abstractmethod
    def operator_events(self, computed: Computed, folder: Path) -> pd.DataFrame:
        """Events per period and operator (columns period, operator, events) for the node counts."""

    @abc.abstractmethod
    def label(self) -> str:
        """The manifest's ``engine``."""


def run(request: StatsRequest, engine: Engine) -> Path:
    """The whole job: compute the request's tables on ``engine`` and write the dataset
    atomically to ``request.out`` (tables, the node-count series, the manifest)."""
    with dataset_folder(request.out) as folder:
        with engine.running(request):
            computed = engine.compute(request)
            engine.write_tables(computed, folder)
        counts = engine.operator_events(computed, folder)
        write_table(
            nodes_table(
                counts,
                request.rule,
                request.spec,
                request.period_seconds,
                computed.periods,
                request.cores,
                request.timezone,
                computed.partial,
            ),
            folder / "nodes",
        )
        write_manifest(
            folder,
            **manifest_fields(request, computed, engine.label()),
        )
    return request.out


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


def nodes_table(
    key_groups: pd.DataFrame,
    rule: NodeCountRule | ExternalNodeCounts,
    spec: TopologySpec,
    period_seconds: int,
    periods: Sequence[str] | None = None,
    cores: int = 1,
    timezone: str = "UTC",
    partial: dict[str, float] | None = None,
) -> pd.DataFrame:
    """The node-count series as rows (period, id, capacity, cores): nodes ``n1 .. n_count`` of
    ``cores`` cores each for every period of ``periods`` (default: those with events), in time
    order; it defines the snapshots.

    ``key_groups`` needs the columns period, operator and events (the full table or per-operator
    sums). A period's total load is computed from per-operator event counts (exact integers) as
    ``sum_op events_op x cost_op / P`` (0 for an empty period; ``P`` the period's true length in
    ``timezone``, or for a period of ``partial`` its covered seconds:
    :func:`albic.stats.periods.rate_seconds`), so every engine gets bit-identical totals and node
    counts.
    """
    events = key_groups.groupby(["period", "operator"], sort=True)["events"].sum().unstack(fill_value=0)
    if periods is not None:
        events = events.reindex(list(periods), fill_value=0)
    totals = np.zeros(len(events))
    seconds = rate_seconds(wall_seconds(events.index), period_seconds, timezone, partial)
    for op in spec.operators:
        if op.name in events.columns:
            totals = totals + events[op.name].to_numpy(dtype=np.int64) * float(op.cost) / seconds
    counts = rule.for_periods(totals, list(events.index))
    rows = [
        (period, f"n{i + 1}", 1.0, cores) for period, count in zip(events.index, counts) for i in range(count)
    ]
    return pd.DataFrame(rows, columns=["period", "id", "capacity", "cores"])


def manifest_fields(request: StatsRequest, computed: Computed, engine: str) -> dict[str, Any]:
    """The manifest's account of a run (design section 6): what was asked, on which engine
    (``engine``, its label), how many events and periods it found, and its partial periods
    (``partial_periods``, only when there are some: older readers and datasets stay as they were)."""
    spec = request.spec
    partial = {"partial_periods": dict(computed.partial)} if computed.partial else {}
    return {
        "periods": len(computed.periods),
        "timezone": request.timezone,
        "service_rate": computed.service_rates or {},
        "trace": request.trace_name,
        "engine": engine,
        "period_seconds": request.period_seconds,
        "key_groups": {op.name: request.key_groups for op in spec.operators},
        "scale": request.scale,
        "events": computed.events * request.scale,
        "node_count_rule": request.rule.describe(),
        "spec": spec.to_dict(),
        **partial,
    }
