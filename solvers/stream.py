"""Kernels of the stream model (albic.evaluation.stream): state transfers over links, a node's
fluid queue over a period, and the M/M/1 sojourn-time percentile.

Numbers in, numbers out. The model they implement, its assumptions and where it departs from a
simulation are in albic.evaluation.stream's docstring.

**Transfers** (:func:`transfer_schedule`). Every move sends its state from its source node's
outgoing link to its target node's incoming link at ``bandwidth`` bytes/s. A link carries one
transfer at a time; links work in parallel. Transfers are taken in Smith's order (state / load
ascending: the order that minimises the load-weighted sum of completion times on one link, i.e.
the tuples buffered), each starting as soon as both its links are free, and never preempted. A
move with no state crosses no link and completes at once.

**A node's fluid queue** (:func:`fluid_queue`). Tuples arrive at ``rate`` and are served at
``service`` while the queue ``Q`` is not empty: ``dQ/dt = rate - service`` while ``Q > 0``, and
``Q`` stays 0 while ``rate <= service``. At each event time the queue jumps by the tuples a key
group brings (those buffered while it moved, and any backlog it carries) and the arrival rate
rises by its rate from then on. :func:`empty_times` says when the queue is first empty after its
start and after each event: when the tuples queued by then have all been served.

**Latency** (:func:`mm1_p99`). A node with a steady state (``rate < service``) is an M/M/1
queue: its sojourn time is exponential with rate ``service - rate``, so its p-th percentile is
``ln(1 / (1 - p)) / (service - rate)``.

Example
-------
>>> transfer_schedule([100.0, 100.0], [0, 0], [1, 2], loads=[1.0, 2.0], bandwidth=100.0).tolist()
[2.0, 1.0]
>>> end, drained = fluid_queue(0.0, 1.0, 2.0, times=[1.0], jumps=[3.0], rates=[0.5], horizon=10.0)
>>> end, drained    # 3 tuples land at t=1; the node then drains at 2 - 1.5 = 0.5 a second
(0.0, 7.0)
>>> start, after = empty_times(4.0, 1.0, 2.0, times=[1.0], jumps=[3.0], rates=[0.5], horizon=20.0)
>>> start, after.tolist()    # 4 queued at 0 drain at 1/s: 3 left at t=1, 6 after the jump
(13.0, [13.0])
>>> round(mm1_p99(1.0, 2.0), 4)   # ln(100) / (2 - 1)
4.6052
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["transfer_schedule", "fluid_queue", "empty_times", "mm1_p99"]


def transfer_schedule(
    sizes: Sequence[float],
    sources: Sequence[int],
    targets: Sequence[int],
    *,
    loads: Sequence[float],
    bandwidth: float,
) -> np.ndarray:
    """The completion time (seconds from the period's start) of every transfer, in input order.

    ``sizes`` in bytes, ``sources`` and ``targets`` node indices, ``loads`` the moved key groups'
    arrival rates (for Smith's order: ties and zero loads by input position).
    """
    sizes = np.asarray(sizes, dtype=float)
    loads = np.asarray(loads, dtype=float)
    done = np.zeros(len(sizes))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ratio = np.where(loads > 0, sizes / np.where(loads > 0, loads, 1.0), np.inf)
    order = np.lexsort((np.arange(len(sizes)), ratio))
    out_free: dict[int, float] = {}
    in_free: dict[int, float] = {}
    for k in order:
        if sizes[k] <= 0:
            continue
        source, target = int(sources[k]), int(targets[k])
        start = max(out_free.get(source, 0.0), in_free.get(target, 0.0))
        done[k] = start + sizes[k] / bandwidth
        out_free[source] = in_free[target] = done[k]
    return done


def fluid_queue(
    q0: float,
    rate: float,
    service: float,
    *,
    times: Sequence[float],
    jumps: Sequence[float],
    rates: Sequence[float],
    horizon: float,
) -> tuple[float, float]:
    """``(Q(horizon), drained)``: the queue at the period's end, and the first time at or after
    the last event (or 0 without events) at which the queue is empty, ``inf`` if it never empties
    (``rate >= service`` at the end with tuples queued). ``drained`` may lie beyond ``horizon``:
    it is where the queue empties if the period's rates went on.
    """
    q, t = float(q0), 0.0
    order = np.argsort(np.asarray(times, dtype=float), kind="stable")
    for i in order:
        q = _drain(q, rate - service, min(float(times[i]), horizon) - t)
        t = min(float(times[i]), horizon)
        q += float(jumps[i])
        rate += float(rates[i])
    last = t
    end = _drain(q, rate - service, horizon - last)
    if q <= 0:
        return end, last
    if rate >= service:
        return end, math.inf
    return end, last + q / (service - rate)


def empty_times(
    q0: float,
    rate: float,
    service: float,
    *,
    times: Sequence[float],
    jumps: Sequence[float],
    rates: Sequence[float],
    horizon: float,
) -> tuple[float, np.ndarray]:
    """The queue of :func:`fluid_queue` (same arguments): the first time at or after 0 at which it
    is empty, and for each event (in input order) the first time at or after its jump; ``inf``
    where the queue is not empty again by ``horizon``. A tuple queued at a time has been served by
    the first time after it that the queue is empty (FIFO)."""
    times = np.minimum(np.asarray(times, dtype=float), horizon)
    order = np.argsort(times, kind="stable")
    ends = [*times[order], horizon]
    # zeros[s]: the first time in segment s (before event s, from the one before it) the queue is 0.
    zeros = np.full(len(ends), math.inf)
    q, t = float(q0), 0.0
    for s, end in enumerate(ends):
        net = rate - service
        if q <= 0:
            zeros[s] = t
        elif net < 0 and q + net * (end - t) <= 0:
            zeros[s] = t + q / -net
        q = _drain(q, net, end - t)
        t = end
        if s < len(order):
            q += float(jumps[order[s]])
            rate += float(rates[order[s]])
    after = np.minimum.accumulate(zeros[::-1])[::-1]
    out = np.empty(len(order))
    out[order] = after[1:]
    return float(after[0]), out


def _drain(q: float, net: float, dt: float) -> float:
    return max(0.0, q + net * dt) if dt > 0 else q


def mm1_p99(rate: float, service: float, percentile: float = 0.99) -> float:
    """The ``percentile`` of an M/M/1 queue's sojourn time (seconds); ``inf`` without a steady
    state (``rate >= service``)."""
    if rate >= service:
        return math.inf
    return math.log(1.0 / (1.0 - percentile)) / (service - rate)
