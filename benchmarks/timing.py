"""Timing shared by the benchmarks."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def median_seconds(fn: Callable[[], T], repeat: int) -> tuple[float, T]:
    """Median wall time of ``repeat`` calls of ``fn`` (at least one), and the last call's result."""
    times = []
    for _ in range(max(1, repeat)):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def min_cpu_seconds(fn: Callable[[], T], repeat: int) -> tuple[float, T]:
    """Least CPU time of this process over ``repeat`` calls of ``fn`` (at least one), and the last
    call's result. On a shared machine the wall clock counts the time other processes hold the
    cores; the CPU time of a single-threaded call does not (cache and memory contention remain)."""
    times = []
    for _ in range(max(1, repeat)):
        start = time.process_time()
        result = fn()
        times.append(time.process_time() - start)
    return min(times), result
