"""What a plan does to the stream: migration pauses, buffered tuples, catch-up, backlog, latency.

A replay row says how balanced a placement was and how much state a plan moved; this model says
what both cost the stream during the period (design section 7b). Per period, with the period's
actual statistics (under forward scoring, loads the plan did not see):

**Rates.** A key group's tuples arrive at its ``load`` (load per second: tuples per second when a
tuple costs one unit; "tuples" below are load x seconds). Node ``i`` serves ``capacity_i x
node_rate``. ``node_rate`` is given, or derived from the whole replay so that the busiest period's
mean utilisation at its node count is ``target_utilisation`` (default :data:`PEAK_UTILISATION`):
``node_rate = max_t (total load_t / total active capacity_t) / target_utilisation``.

**Migration.** Each moved key group's state (its size in the state the plan moved, as
``migration_cost``) crosses its source's outgoing and its target's incoming link at ``bandwidth``
bytes/s (default :data:`DEFAULT_BANDWIDTH`, 1 Gbit/s); a link carries one transfer at a time,
links work in parallel, transfers go in Smith's order (state / load ascending), each as soon as
both its links are free (:func:`albic.solvers.stream.transfer_schedule`). Key group ``k`` is paused from
the period's start until its transfer completes at ``c_k``; ``migration_seconds = max_k c_k``.
Its tuples are buffered meanwhile: ``buffered_tuples = sum_k load_k c_k``.

**Catch-up and backlog** (a fluid model per node, :func:`albic.solvers.stream.fluid_queue`). A node
serves its staying key groups' tuples from the start, and each arriving key group's buffered
tuples (plus any backlog it carries) from ``c_k`` on, with its load added from then on; the queue
drains at ``service - arrivals`` and grows at ``arrivals - service`` when that is positive.
``catch_up_seconds`` is the longest time, after the last transfer, until a node's queue is empty
(over the nodes with a steady state; it may exceed the period: the queue left at its end is also
in the backlog). ``backlog_tuples`` is what is queued at the period's end (over
``period_seconds``: given, or the labels' most common spacing, :func:`period_seconds`); it is
carried into the next period split over the node's key groups by load, and travels with a key
group that moves. ``overloaded_nodes`` counts the nodes whose arrivals reach their service rate.

**Latency.** Each node with a steady state (arrivals below service) is an M/M/1 queue (one server
of the node's whole rate; its cores are not modelled): its sojourn time is exponential with rate
``service - arrivals``, so ``p99 = ln(100) / (service - arrivals)``. ``p99_latency_ms`` is the
mean of the nodes' p99 weighted by their arrivals; a node at or above capacity has no steady state
and counts in ``overloaded_nodes`` and ``backlog_tuples`` instead. A period whose every loaded node
is overloaded has no latency (NaN). ``p99_service_times`` is the same p99 in the model's own unit:
over the time one unit of load takes on one unit of capacity (``p99 seconds x node_rate``; on a
node of capacity 1 at utilisation ``rho``, ``ln(100) / (1 - rho)``): it does not depend on a
derived node rate, which sets only the scale of the seconds.

**Steady and overloaded periods.** A period is ``steady`` when no loaded node's arrivals reach
its service rate (``overloaded_nodes == 0``); its p99 is then the nodes' steady-state latency
(a migration's catch-up and a backlog carried in are in ``catch_up_seconds`` and
``backlog_tuples``, not in the p99). ``drain_seconds`` is how long the queue a period leaves takes
to drain: from the period's end until every node holding its backlog has been empty once (FIFO:
its tuples have then been served), at the following periods' loads and placements, the backlog
travelling with its key groups as above (:class:`StreamReplay`); 0 when the period leaves no
queue (every steady period whose migration has caught up), NaN when the queue has not drained by
the end of the replay. Near saturation the p99 grows as ``1 / (1 - rho)``: a mean over periods
is ruled by the few busiest ones, which is why a comparison's summary takes the median and p95
over the steady periods and counts the overloaded ones apart with their drain times.

Where this departs from a tuple-level simulation (checked in tests/test_stream_model.py): the
fluid queue ignores the steady-state queue a node has anyway (``rho / (1 - rho)`` tuples on
average), so its catch-up is short by about that over the spare rate; a migration's pause and
buffered tuples are exact in expectation; the p99 is M/M/1's (exponential service).

Example
-------
>>> from albic.core.model import Node, KeyGroup, Snapshot
>>> snap = Snapshot([Node("n1"), Node("n2")],
...                 [KeyGroup("a", "op", 1.0, 2e6), KeyGroup("b", "op", 1.0, 0.0)],
...                 {"a": "n1", "b": "n1"}, period="t0")
>>> model = StreamModel(bandwidth=1e6, node_rate=2.0, period_seconds=60.0)
>>> row, backlog = model.period(snap, snap, {"a": "n2", "b": "n1"}, {})
>>> row["migration_seconds"], row["buffered_tuples"], row["catch_up_seconds"]   # 2 s; 2 tuples at 1/s spare
(2.0, 2.0, 2.0)
>>> round(row["p99_latency_ms"], 1)                       # each node: ln(100) / (2 - 1) s
4605.2
>>> round(row["p99_service_times"], 2), row["steady"], row["drain_seconds"]   # ln(100) / (1 - 1/2)
(9.21, True, 0.0)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from albic.base.errors import InvalidParameterError
from albic.base.formats import seconds
from albic.core import metrics
from albic.core.model import Snapshot
from albic.core.planner import Interval, check_params
from albic.solvers.stream import empty_times, fluid_queue, mm1_p99, transfer_schedule

__all__ = [
    "StreamModel",
    "STREAM_COLUMNS",
    "DEFAULT_BANDWIDTH",
    "PEAK_UTILISATION",
    "DEFAULT_PERIOD_SECONDS",
    "period_seconds",
    "derived_node_rate",
    "plan_migration",
    "StreamReplay",
]

#: Bytes per second of one link: 1 Gbit/s.
DEFAULT_BANDWIDTH = 125e6
#: The busiest period's mean utilisation that a derived node rate gives it: a calibration of the
#: model (a cluster with a fifth of headroom at its peak), not a target any engine scales to (Flink's
#: autoscaler aims each subtask at :data:`albic.rollout.flink.AUTOSCALER_TARGET_UTILISATION`).
PEAK_UTILISATION = 0.8
#: A period's length when its labels are not times.
DEFAULT_PERIOD_SECONDS = 3600.0
#: What the model adds to every replay row.
STREAM_COLUMNS = (
    "migration_seconds",
    "buffered_tuples",
    "catch_up_seconds",
    "backlog_tuples",
    "overloaded_nodes",
    "p99_latency_ms",
    "p99_service_times",
    "steady",
    "drain_seconds",
)


def _positive(unit: str) -> Interval:
    return Interval(float, 0, closed="neither", note=unit)


# The model's settings; node_rate and period_seconds may be None until calibrated.
_MODEL_RULES = {
    "bandwidth": _positive("bytes per second"),
    "node_rate": [_positive("load per second per unit of capacity"), None],
    "period_seconds": [_positive("seconds"), None],
    "target_utilisation": Interval(float, 0, 1, closed="right", note="the busiest period's mean utilisation"),
}


def period_seconds(labels: Sequence[Any]) -> float:
    """The most common spacing of the period labels in seconds (:data:`DEFAULT_PERIOD_SECONDS`
    when they are not times or there is only one).

    >>> period_seconds(["2013-11-24T05", "2013-11-24T06", "2013-11-24T08"])
    3600.0
    """
    times = pd.to_datetime(pd.Series([str(x) for x in labels]), errors="coerce", utc=True, format="ISO8601")
    if len(times) < 2 or times.isna().any():
        return DEFAULT_PERIOD_SECONDS
    steps = times.diff().dt.total_seconds().iloc[1:]
    steps = steps[steps > 0]
    return float(steps.mode().iloc[0]) if len(steps) else DEFAULT_PERIOD_SECONDS


def derived_node_rate(snapshots: Sequence[Snapshot], target_utilisation: float) -> tuple[float, str]:
    """``node_rate`` such that the busiest period's mean utilisation is ``target_utilisation``,
    and the sentence that says how it was derived and what it implies: the time one unit of load
    takes, the scale of every latency in seconds.

    >>> from albic.core.model import Node, KeyGroup, Snapshot
    >>> snap = Snapshot([Node("n1")], [KeyGroup("a", "op", 0.002, 0.0)], {"a": "n1"}, period="t0")
    >>> rate, how = derived_node_rate([snap], 0.8)
    >>> rate, how.split(";")[0]
    (0.0025, 'node rate derived: one unit of load takes 6 min 40 s on one unit of capacity (rate 0.0025), at 0.8 utilisation of the busiest period (t0, mean load 0.002 per unit of capacity)')
    """
    busiest, label = 0.0, None
    for snapshot in snapshots:
        utilisation = metrics.mean_utilisation(snapshot)
        if utilisation > busiest:
            busiest, label = utilisation, snapshot.period
    if busiest <= 0:
        return 1.0, "node rate 1 per unit of capacity (no period has any load)"
    rate = busiest / target_utilisation
    return rate, (
        f"node rate derived: one unit of load takes {seconds(1 / rate)} on one unit of capacity "
        f"(rate {rate:.6g}), at {target_utilisation:g} utilisation of the busiest period ({label}, "
        f"mean load {busiest:.6g} per unit of capacity); latencies in seconds are on that scale"
    )


@dataclass(frozen=True)
class StreamModel:
    """The stream model's settings (module docstring). ``node_rate`` and ``period_seconds`` may be
    left ``None`` and derived from a replay's periods by :meth:`calibrated`."""

    bandwidth: float = DEFAULT_BANDWIDTH
    node_rate: float | None = None
    target_utilisation: float = PEAK_UTILISATION
    period_seconds: float | None = None
    derivation: str = ""

    def __post_init__(self) -> None:
        check_params("StreamModel", {name: getattr(self, name) for name in _MODEL_RULES}, _MODEL_RULES)

    def calibrated(self, snapshots: Sequence[Snapshot]) -> StreamModel:
        """This model with ``node_rate`` and ``period_seconds`` derived from ``snapshots`` where
        they are not given; ``derivation`` says how."""
        model = self
        if model.node_rate is None:
            rate, how = derived_node_rate(snapshots, model.target_utilisation)
            model = replace(model, node_rate=rate, derivation=how)
        else:
            model = replace(
                model,
                derivation=f"node rate {model.node_rate:g} per unit of capacity (given): one unit of "
                f"load takes {seconds(1 / model.node_rate)} on one unit of capacity",
            )
        if model.period_seconds is None:
            model = replace(model, period_seconds=period_seconds([s.period for s in snapshots]))
        return model

    def period(
        self,
        scored: Snapshot,
        state: Snapshot,
        after: Mapping[str, str] | np.ndarray,
        backlog: Mapping[str, float],
    ) -> tuple[dict[str, float], dict[str, float]]:
        """The stream figures of one period (:data:`STREAM_COLUMNS`) and the backlog each key
        group carries into the next. ``scored`` holds the period's loads and the placement before
        the plan, ``state`` the state sizes that move, ``after`` the placement during the period,
        ``backlog`` tuples per key group carried from the period before. Alone, a period knows
        no later one: its ``drain_seconds`` is 0 without a backlog, else NaN (:class:`StreamReplay`
        follows the backlog over the periods that come after)."""
        figures = self._period(scored, state, after, backlog)
        return figures.row, figures.backlog

    def _period(self, scored, state, after, backlog) -> _Period:
        if self.node_rate is None or self.period_seconds is None:
            raise InvalidParameterError("StreamModel.period needs node_rate and period_seconds: calibrate it")
        arrays = scored.arrays()
        before = arrays.current
        after = metrics.node_of(scored, after)
        loads = arrays.loads
        carried = np.array([backlog.get(kg, 0.0) for kg in arrays.key_group_ids])
        moved, done = _transfers(scored, state, after, self.bandwidth)
        buffered = loads[moved] * done
        service = arrays.capacities * self.node_rate
        queues = self._queues(arrays, before, after, moved, done, buffered + carried[moved], carried)
        arrivals = np.bincount(after, weights=loads, minlength=len(service))
        steady = arrivals < service
        migration = float(done.max()) if len(done) else 0.0
        catch_up = [
            max(0.0, float(d) - migration) for d, ok in zip(queues.drained, steady) if ok and math.isfinite(d)
        ]
        p99 = _weighted_p99(arrivals, service)
        overloaded = int((~steady & (arrivals > 0)).sum())
        row = {
            "migration_seconds": migration,
            "buffered_tuples": float(buffered.sum()),
            "catch_up_seconds": max(catch_up, default=0.0),
            "backlog_tuples": float(queues.ends.sum()),
            "overloaded_nodes": overloaded,
            "p99_latency_ms": 1000.0 * p99,
            "p99_service_times": p99 * self.node_rate,
            "steady": overloaded == 0,
            "drain_seconds": 0.0 if queues.ends.sum() <= 0 else math.nan,
        }
        ids = arrays.key_group_ids
        held = np.flatnonzero((carried > 0) | (queues.ends[after] > 0))
        return _Period(
            row=row,
            backlog=_split_backlog(ids, after, loads, queues.ends),
            cleared={ids[k]: float(queues.cleared[k]) for k in np.flatnonzero(carried > 0)},
            node={ids[k]: int(after[k]) for k in held},
        )

    def _queues(self, arrays, before, after, moved, done, jumps, carried) -> _Queues:
        """Every node's queue at the period's end, the time it empties after its last arrival,
        and when each key group's carried backlog has been served (``inf``: not in the period)."""
        loads = arrays.loads
        staying = np.ones(len(loads), dtype=bool)
        staying[moved] = False
        nodes = len(arrays.capacities)
        q0 = np.bincount(before[staying], weights=carried[staying], minlength=nodes)
        rate0 = np.bincount(before[staying], weights=loads[staying], minlength=nodes)
        out = _Queues(np.zeros(nodes), np.zeros(nodes), np.full(len(loads), math.inf))
        for node in range(nodes):
            landing = after[moved] == node
            arguments = (q0[node], rate0[node], arrays.capacities[node] * self.node_rate)
            events = {
                "times": done[landing],
                "jumps": jumps[landing],
                "rates": loads[moved][landing],
                "horizon": self.period_seconds,
            }
            out.ends[node], out.drained[node] = fluid_queue(*arguments, **events)
            start, each = empty_times(*arguments, **events)
            out.cleared[staying & (before == node)] = start
            out.cleared[moved[landing]] = each
        return out


@dataclass(frozen=True)
class _Queues:
    ends: np.ndarray
    drained: np.ndarray
    cleared: np.ndarray


@dataclass(frozen=True)
class _Period:
    """One period's figures, the backlog it leaves, when each key group's carried backlog was
    served in it (seconds from its start, ``inf``: not in it) and each key group's node."""

    row: dict[str, Any]
    backlog: dict[str, float]
    cleared: dict[str, float]
    node: dict[str, int]


class StreamReplay:
    """The stream model over a replay's periods, in order: each period's figures (:meth:`period`)
    with the backlog carried from one to the next, and each period's ``drain_seconds`` once the
    queue it left has drained (:meth:`drain_seconds`).

    A key group that holds backlog remembers the earliest period whose queue it still holds part
    of; a period's queue has drained when no key group holds any of it: every node it was queued
    at has been empty once since (the module docstring).

    >>> from albic.core.model import Node, KeyGroup, Snapshot
    >>> def snap(load):
    ...     return Snapshot([Node("n1")], [KeyGroup("a", "op", load, 0.0)], {"a": "n1"})
    >>> stream = StreamReplay(StreamModel(node_rate=10.0, period_seconds=100.0))
    >>> rows = [stream.period(snap(x), snap(x), {"a": "n1"}) for x in (12.0, 11.0, 6.0)]
    >>> [r["backlog_tuples"] for r in rows], [r["steady"] for r in rows]
    ([200.0, 300.0, 0.0], [False, False, True])
    >>> stream.drain_seconds()      # 300 tuples at 10 - 6 = 4 a second: 75 s into the third
    [175.0, 75.0, 0.0]
    """

    def __init__(self, model: StreamModel) -> None:
        self.model = model
        self._backlog: dict[str, float] = {}
        self._since: dict[str, int] = {}
        self._drains: list[float] = []
        self._open: dict[int, float] = {}

    def period(
        self, scored: Snapshot, state: Snapshot, after: Mapping[str, str] | np.ndarray
    ) -> dict[str, Any]:
        """The next period's figures (:meth:`StreamModel.period`, with the backlog the periods
        before it left); its ``drain_seconds`` is known only later: :meth:`drain_seconds`."""
        step = len(self._drains)
        figures = self.model._period(scored, state, after, self._backlog)
        horizon = float(self.model.period_seconds)
        latest: dict[int, float] = {}  # by the earliest period a key group held: its latest clearing
        for kg, cleared in figures.cleared.items():
            if math.isfinite(cleared):
                since = self._since.get(kg, step)
                latest[since] = max(latest.get(since, 0.0), cleared)
        for t in self._open:
            done = [cleared for since, cleared in latest.items() if since <= t]
            if done:
                self._open[t] = max(self._open[t], (step - t - 1) * horizon + max(done))
        # A node's queue at the end holds what its uncleared key groups carried in, and the new.
        oldest: dict[int, int] = {}
        for kg, cleared in figures.cleared.items():
            if not math.isfinite(cleared):
                node = figures.node[kg]
                oldest[node] = min(oldest.get(node, step), self._since.get(kg, step))
        self._backlog = figures.backlog
        self._since = {kg: oldest.get(figures.node[kg], step) for kg in figures.backlog}
        self._drains.append(figures.row["drain_seconds"])
        if figures.row["backlog_tuples"] > 0:
            self._open[step] = 0.0
        held = min(self._since.values(), default=step + 1)
        for t in [t for t in self._open if t < held]:
            self._drains[t] = self._open.pop(t)
        return figures.row

    def drain_seconds(self) -> list[float]:
        """Every period's ``drain_seconds`` so far: NaN for a queue not drained yet."""
        return list(self._drains)


def _transfers(
    scored: Snapshot, state: Snapshot, after: np.ndarray, bandwidth: float
) -> tuple[np.ndarray, np.ndarray]:
    """The key groups that move (indices) and when each one's state has arrived (seconds)."""
    before = scored.arrays().current
    moved = np.flatnonzero(before != after)
    done = transfer_schedule(
        state.arrays().state_sizes[moved],
        before[moved],
        after[moved],
        loads=scored.arrays().loads[moved],
        bandwidth=bandwidth,
    )
    return moved, done


def plan_migration(
    snapshot: Snapshot, assignment: Mapping[str, str], bandwidth: float = DEFAULT_BANDWIDTH
) -> dict[str, float]:
    """What carrying out one plan pauses, on the snapshot it was made for: its migration seconds
    and the tuples buffered meanwhile at the snapshot's loads (module docstring), at
    ``bandwidth`` bytes/s a link.

    >>> from albic.core.model import Node, KeyGroup, Snapshot
    >>> snap = Snapshot([Node("n1"), Node("n2")], [KeyGroup("a", "op", 5.0, 3e6)], {"a": "n1"})
    >>> plan_migration(snap, {"a": "n2"}, bandwidth=1e6)
    {'bandwidth': 1000000.0, 'migration_seconds': 3.0, 'buffered_tuples': 15.0}
    """
    check_params("plan_migration()", {"bandwidth": bandwidth}, _MODEL_RULES)
    moved, done = _transfers(snapshot, snapshot, metrics.node_of(snapshot, assignment), bandwidth)
    return {
        "bandwidth": float(bandwidth),
        "migration_seconds": float(done.max()) if len(done) else 0.0,
        "buffered_tuples": float((snapshot.arrays().loads[moved] * done).sum()),
    }


def _weighted_p99(arrivals: np.ndarray, service: np.ndarray) -> float:
    """The nodes' M/M/1 p99 in seconds, weighted by their arrivals, over the loaded nodes with a
    steady state; NaN when there is none."""
    steady = (arrivals > 0) & (arrivals < service)
    if not steady.any():
        return math.nan
    p99 = np.array([mm1_p99(a, s) for a, s in zip(arrivals[steady], service[steady])])
    return float(np.average(p99, weights=arrivals[steady]))


def _split_backlog(ids, after, loads, ends) -> dict[str, float]:
    """A node's queue at the period's end, split over its key groups by load (evenly where they
    carry none)."""
    out: dict[str, float] = {}
    for node in np.flatnonzero(ends > 0):
        members = np.flatnonzero(after == node)
        if not len(members):
            continue
        weights = loads[members] if loads[members].sum() > 0 else np.ones(len(members))
        for k, share in zip(members, ends[node] * weights / weights.sum()):
            out[ids[k]] = float(share)
    return out
