"""A discrete-time supermarket model of workers behind a stream partitioner.

The consistent-grouping paper's simulation (section 6, "Supermarket Model"; section 7): one message
arrives per unit of time; a router sends it to a worker; each worker serves its FIFO queue with a
deterministic service time ``1 / c_w`` (``c_w`` messages per unit of time); capacities are scaled so
that the cluster runs at ``load`` (e.g. 0.8) of its total capacity, and may change during the run.
Time is cut into slots; after each slot every worker reports how busy it was, and the router may
react (consistent grouping's worker delegation) once the report reaches it ``ack_delay`` slots later
(piggybacked on acknowledgements).

Example: three equal workers, round robin, 80% load: nobody waits
-----------------------------------------------------------------
Each worker serves 1/3/0.8 messages per unit of time (2.4 units each) and gets every third message,
so each message is served at once; at the end, the last two messages are still in service.

>>> import numpy as np
>>> result = simulate(StaticRouter(np.arange(300) % 3), 300, [1.0, 1.0, 1.0], slot=100)
>>> round(float(result.latency.max()), 9), result.queue_length[-1].tolist()
(2.4, [0, 1, 1])

Bounded queues (``queue_bound``): a worker holds at most ``queue_bound`` messages (waiting or in
service), as an executor's receive buffer in Storm. When the message's worker is full, either the
source waits until a slot frees (``overflow="block"``, back-pressure: every later message waits
too, as with Storm's ``max.spout.pending``, so throughput falls instead of latency growing without
bound) or the message is lost (``overflow="drop"``). The source emits at most one message per unit
of time and, once behind, emits as fast as it may (its backlog lives upstream, e.g. in Kafka, and
is not part of the execute latency). Without a bound (the default) every message is emitted at its
arrival time, the paper's unbounded queues (section 3).

What is measured (the paper's Table 4): queue length per worker at the end of each slot; resource
utilisation ``queue length / capacity``; execute latency ``finish - emit`` of every message
(``emit`` = arrival without a bound; NaN for a dropped message); throughput, messages finished per
unit of time in each slot. The busy signal of a worker is its *offered load* over the slot plus
its backlog, relative to what it can serve in the slot's time: ``(arrived + queue) / (c_w *
duration)``; a worker above ``busy`` (0.85) says busy, below ``idle`` (0.75)
says idle. (The paper's thresholds read ``U_w < 0.75 c_w`` and ``U_w > 0.85 c_w`` with ``U_w`` a
queue length over capacity; taken literally that compares a time with a rate. The reading here keeps
its two numbers as fractions of each worker's own service capacity, so a cluster balanced at 80%
load sits between them, which is what the thresholds are for.)

Example: one worker of capacity 0.8 behind a 4-message queue, back-pressure: the source is held to
the worker's pace, so latency stops growing at 4 service times and throughput is the capacity.

>>> r = simulate(StaticRouter(np.zeros(100, dtype=int)), 100, [1.0], slot=100, load=1.25, queue_bound=4)
>>> round(float(r.latency[-1]), 6), round(float(r.emitted[-1]), 6), r.throughput.round(3).tolist()
(5.0, 120.0, [0.793])

The service loops are numba-compiled: this module needs albic's extra ``stream`` (``pip install
'albic[stream]'``); no planner imports it.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from numba import njit

__all__ = [
    "Router",
    "StaticRouter",
    "SimulationResult",
    "SimulationSettings",
    "simulate",
    "scaled_capacities",
]


class Router(Protocol):
    """Routes messages to workers, and hears the workers' busy/idle reports."""

    def route(self, start: int, stop: int) -> np.ndarray:
        """Worker ids of messages ``start .. stop-1``."""

    def report(self, busy: np.ndarray, idle: np.ndarray) -> None:
        """Worker ids that reported busy and idle (in report order), ``ack_delay`` slots late."""


class StaticRouter:
    """A router that ignores reports: a precomputed worker per message (KG, SG, PKG, ...)."""

    def __init__(self, workers: np.ndarray) -> None:
        self.workers = np.asarray(workers, dtype=np.int64)

    def route(self, start: int, stop: int) -> np.ndarray:
        return self.workers[start:stop]

    def report(self, busy: np.ndarray, idle: np.ndarray) -> None:
        pass


@dataclass
class SimulationResult:
    """Per slot (rows) and worker (columns) measurements, and per-message latencies."""

    slot_end: np.ndarray  # time at the end of each slot
    queue_length: np.ndarray  # messages waiting or in service, per slot and worker
    utilisation: np.ndarray  # queue length / capacity (the paper's resource utilisation)
    offered: np.ndarray  # (arrived + queue) / (capacity * slot): what the signals use
    throughput: np.ndarray  # messages finished per unit of time, per slot
    latency: np.ndarray  # finish - emit, per message (NaN if dropped)
    workers: np.ndarray  # worker of each message
    capacities: np.ndarray  # capacity per slot and worker (messages per unit of time)
    emitted: np.ndarray | None = None  # time each message entered its worker's queue
    dropped: np.ndarray | None = None  # per message: lost to a full queue (overflow="drop")

    def overall_throughput(self) -> float:
        """Messages finished per unit of time over the whole run (until the last one finishes)."""
        done = np.isfinite(self.latency)
        emitted = self.emitted if self.emitted is not None else np.arange(len(self.latency), dtype=float)
        if not done.any():
            return 0.0
        return float(done.sum() / (emitted[done] + self.latency[done]).max())

    def latency_by_slot(self) -> np.ndarray:
        """Mean execute latency of the messages arriving in each slot (dropped ones left out)."""
        per_slot = len(self.latency) // len(self.slot_end)
        return np.nanmean(
            self.latency[: per_slot * len(self.slot_end)].reshape(len(self.slot_end), -1), axis=1
        )

    def spread(self, what: str = "utilisation") -> np.ndarray:
        """Max minus min over workers, per slot (how the paper plots Figures 7, 8 and 12)."""
        values = getattr(self, what)
        return values.max(axis=1) - values.min(axis=1)


def scaled_capacities(relative: Sequence[float], load: float) -> np.ndarray:
    """Capacities proportional to ``relative`` whose sum makes one message per unit of time
    ``load`` of the total (``load = 0.8``: the cluster runs at 80%)."""
    relative = np.asarray(relative, dtype=float)
    if relative.ndim != 1 or len(relative) == 0 or not np.all(np.isfinite(relative)) or (relative <= 0).any():
        raise ValueError(f"capacities must be finite numbers > 0, got {relative.tolist()}")
    if not (np.isfinite(load) and load > 0):  # above 1 is an overloaded cluster: allowed
        raise ValueError(f"load must be a finite number > 0, got {load!r}")
    return relative / relative.sum() / load


@njit(cache=True)
def _serve(start, workers, service, last_finish, latency):
    # FIFO with deterministic service: a message starts when it arrives or when the worker's
    # previous message finishes, whichever is later.
    for i in range(workers.shape[0]):
        w = workers[i]
        arrival = float(start + i)
        begin = arrival if arrival > last_finish[w] else last_finish[w]
        last_finish[w] = begin + service[w]
        latency[start + i] = last_finish[w] - arrival


@njit(cache=True)
def _serve_bounded(start, workers, service, queues, measured, bound, drop):
    # Arrays travel in tuples (numba takes tuples of arrays, not records): ``queues`` is the
    # workers' state (last_finish, ring, count, clock), ``measured`` the per-message results
    # (latency, emitted, dropped).
    last_finish, ring, count, clock = queues
    latency, emitted, dropped = measured
    # ring[w, count[w] % bound] is the finish time of worker w's count[w]-th accepted message, so
    # the oldest of its last `bound` ones -- the one whose finish frees a place -- is at
    # count[w] % bound once count[w] >= bound (finish times of one worker only increase).
    for i in range(workers.shape[0]):
        w = workers[i]
        emit = float(start + i)
        if clock[0] + 1.0 > emit:
            emit = clock[0] + 1.0  # the source is behind: one message per unit of time at most
        frees = ring[w, count[w] % bound] if count[w] >= bound else -1.0
        if frees > emit:
            if drop:
                latency[start + i] = np.nan
                emitted[start + i] = emit
                dropped[start + i] = True
                clock[0] = emit
                continue
            emit = frees  # back-pressure: wait for a place
        begin = emit if emit > last_finish[w] else last_finish[w]
        last_finish[w] = begin + service[w]
        ring[w, count[w] % bound] = last_finish[w]
        count[w] += 1
        latency[start + i] = last_finish[w] - emit
        emitted[start + i] = emit
        clock[0] = emit


@dataclass(frozen=True)
class SimulationSettings:
    """How :func:`simulate` runs (see the module docstring).

    - ``slot``: messages per slot, the unit of reports and measurements (with back-pressure a slot
      lasts longer than ``slot`` units of time);
    - ``load``: the share of the cluster's total capacity one message per unit of time takes;
    - ``changes``: ``(message index, new relative capacities)``: from that message on (rounded down
      to a slot boundary) the workers serve at the new rates, scaled to the same ``load``;
    - ``ack_delay``: slots between a worker's report and the router hearing it;
    - ``busy``, ``idle``: the thresholds of the busy and idle signals;
    - ``queue_bound``: the most messages a worker holds (None: unbounded); ``overflow``: what a full
      queue does (``"block"``: back-pressure, ``"drop"``: the message is lost).
    """

    slot: int = 1000
    load: float = 0.8
    changes: Sequence[tuple[int, Sequence[float]]] = ()
    ack_delay: int = 1
    busy: float = 0.85
    idle: float = 0.75
    queue_bound: int | None = None
    overflow: str = "block"


def _check_simulation(n_messages: int, settings: SimulationSettings) -> None:
    """Refuse settings :func:`simulate` cannot run, naming the setting."""
    slot, queue_bound, overflow = settings.slot, settings.queue_bound, settings.overflow
    if slot < 1 or n_messages < slot:
        raise ValueError(f"need 1 <= slot <= n_messages, got slot={slot}, n_messages={n_messages}")
    if settings.ack_delay < 0:
        raise ValueError(f"ack_delay must be >= 0, got {settings.ack_delay}")
    if queue_bound is not None and (
        isinstance(queue_bound, bool) or not isinstance(queue_bound, int) or queue_bound < 1
    ):
        raise ValueError(f"queue_bound must be an int >= 1 or None, got {queue_bound!r}")
    if overflow not in ("block", "drop"):
        raise ValueError(f"overflow must be 'block' or 'drop', got {overflow!r}")


def _capacity_schedule(
    changes: Sequence[tuple[int, Sequence[float]]], slot: int, load: float, n_workers: int
) -> list[tuple[int, np.ndarray]]:
    """``(slot, scaled capacities)`` of every change, in order of slot; changes within one slot keep
    their given order, so the last of them holds for that slot."""
    schedule = sorted(
        ((int(at) // slot, scaled_capacities(c, load)) for at, c in changes), key=lambda change: change[0]
    )
    for _, caps in schedule:
        if len(caps) != n_workers:
            raise ValueError(f"a capacity change has {len(caps)} workers, expected {n_workers}")
    return schedule


def _capacities_by_slot(
    initial: np.ndarray, schedule: list[tuple[int, np.ndarray]], n_slots: int
) -> np.ndarray:
    """The workers' scaled capacities in each slot: ``initial`` until the first change."""
    by_slot = np.zeros((n_slots, initial.size))
    current = initial
    for k in range(n_slots):
        while schedule and schedule[0][0] <= k:
            current = schedule.pop(0)[1]
        by_slot[k] = current
    return by_slot


class _Simulation:
    """One run's state: the workers' queues, the measurements so far and the reports on their way
    to the router."""

    def __init__(self, settings: SimulationSettings, n_slots: int, n_workers: int) -> None:
        self.settings, self.n_workers = settings, n_workers
        n_messages = n_slots * settings.slot
        self.last_finish = np.zeros(n_workers)
        self.latency = np.zeros(n_messages)
        self.workers = np.zeros(n_messages, dtype=np.int64)
        self.emitted = np.arange(n_messages, dtype=float)
        self.dropped = np.zeros(n_messages, dtype=np.bool_)
        # Bounded queues only: the finish times of each worker's last messages (see _serve_bounded),
        # how many each accepted, and the time the source last emitted.
        bounded = settings.queue_bound is not None
        self.ring = np.zeros((n_workers, settings.queue_bound if bounded else 1))
        self.accepted = np.zeros(n_workers, dtype=np.int64)
        self.clock = np.array([-1.0])
        self.slot_end = (np.arange(n_slots) + 1.0) * settings.slot
        self.queue = np.zeros((n_slots, n_workers), dtype=np.int64)
        self.offered = np.zeros((n_slots, n_workers))
        self.throughput = np.zeros(n_slots)
        self.routed = np.zeros(n_workers, dtype=np.int64)
        self.finished_before = 0
        self.began = 0.0
        self.pending: deque[tuple[np.ndarray, np.ndarray]] = deque()

    def route(self, router: Router, k: int) -> np.ndarray:
        """The worker of each message of slot ``k``, as the router says (checked)."""
        start, stop = k * self.settings.slot, (k + 1) * self.settings.slot
        workers = np.asarray(router.route(start, stop), dtype=np.int64)
        if workers.shape != (self.settings.slot,) or (workers < 0).any() or (workers >= self.n_workers).any():
            raise ValueError(f"the router returned invalid worker ids for messages {start}..{stop - 1}")
        self.workers[start:stop] = workers
        return workers

    def serve(self, k: int, workers: np.ndarray, capacities: np.ndarray) -> np.ndarray:
        """Serve slot ``k``'s messages; how many each worker accepted."""
        settings = self.settings
        start, stop = k * settings.slot, (k + 1) * settings.slot
        if settings.queue_bound is None:
            _serve(start, workers, 1.0 / capacities, self.last_finish, self.latency)
            return np.bincount(workers, minlength=self.n_workers)
        _serve_bounded(
            start,
            workers,
            1.0 / capacities,
            (self.last_finish, self.ring, self.accepted, self.clock),
            (self.latency, self.emitted, self.dropped),
            settings.queue_bound,
            settings.overflow == "drop",
        )
        self.slot_end[k] = self.clock[0] + 1.0
        return np.bincount(workers[~self.dropped[start:stop]], minlength=self.n_workers)

    def measure(self, k: int, arrived: np.ndarray, capacities: np.ndarray) -> None:
        """Slot ``k``'s queue lengths, offered load and throughput."""
        self.routed += arrived
        end, length = self.slot_end[k], self.slot_end[k] - self.began
        # Service is back to back while a queue is non-empty, so the backlog at the slot's end is
        # the unfinished work divided by the service time.
        self.queue[k] = np.maximum(0, np.ceil((self.last_finish - end) * capacities - 1e-9)).astype(np.int64)
        self.offered[k] = (arrived + self.queue[k]) / (capacities * length)
        finished = int(self.routed.sum() - self.queue[k].sum())
        self.throughput[k] = (finished - self.finished_before) / length
        self.finished_before, self.began = finished, end

    def report(self, router: Router, k: int) -> None:
        """Send slot ``k``'s busy and idle workers; the router hears them ``ack_delay`` slots late."""
        offered = self.offered[k]
        self.pending.append(
            (np.flatnonzero(offered > self.settings.busy), np.flatnonzero(offered < self.settings.idle))
        )
        if len(self.pending) > self.settings.ack_delay:
            router.report(*self.pending.popleft())

    def result(self, capacities_by_slot: np.ndarray) -> SimulationResult:
        return SimulationResult(
            slot_end=self.slot_end,
            queue_length=self.queue,
            utilisation=self.queue / capacities_by_slot,
            offered=self.offered,
            throughput=self.throughput,
            latency=self.latency,
            workers=self.workers,
            capacities=capacities_by_slot,
            emitted=self.emitted,
            dropped=self.dropped,
        )


def simulate(
    router: Router,
    n_messages: int,
    capacities: Sequence[float],
    settings: SimulationSettings | None = None,
    **options: Any,
) -> SimulationResult:
    """Run ``n_messages`` through ``router`` onto workers of relative ``capacities``.

    ``settings`` (:class:`SimulationSettings`: slot, load, capacity changes, report delay, busy and
    idle thresholds, queue bound and overflow), with the fields named in ``options`` replaced:
    ``simulate(router, n, caps, slot=100)`` is ``simulate(router, n, caps,
    SimulationSettings(slot=100))``.
    """
    settings = dataclasses.replace(settings or SimulationSettings(), **options)
    _check_simulation(n_messages, settings)
    initial = scaled_capacities(capacities, settings.load)
    schedule = _capacity_schedule(settings.changes, settings.slot, settings.load, len(initial))
    n_slots = n_messages // settings.slot
    capacities_by_slot = _capacities_by_slot(initial, schedule, n_slots)
    run = _Simulation(settings, n_slots, len(initial))
    for k, current in enumerate(capacities_by_slot):
        workers = run.route(router, k)
        arrived = run.serve(k, workers, current)
        run.measure(k, arrived, current)
        run.report(router, k)
    return run.result(capacities_by_slot)
