"""Planners for the tests of ``albic compare --engine spark`` (tests/spark/test_compare_spark.py).

They live in a module of their own so that Spark's Python workers can import them: a subprocess
driver puts this folder on PYTHONPATH (which the workers inherit); the test process itself ships
them by value (``register_pickle_by_value``). Not collected as tests (no ``test_`` prefix).
"""

from __future__ import annotations

import os
import time

from albic.planners.flux import FluxPlanner


def _attempt() -> int:
    """The attempt number of the Spark task running this code (-1 outside Spark)."""
    from pyspark import TaskContext

    context = TaskContext.get()
    return -1 if context is None else context.attemptNumber()


class CrashOnce(FluxPlanner):
    """Flux, except that the first time any replay reaches period ``crash_at`` it kills its Python
    worker (no exception: the process is gone, as on an out-of-memory kill); ``marker`` is the file
    that records it happened, ``log`` gets one line per call: budget, period and task attempt."""

    name = "test_crash_once"

    def __init__(
        self,
        *,
        max_moves: int | None = None,
        max_migration_cost: float | None = None,
        crash_at: str = "",
        marker: str = "",
        log: str = "",
    ) -> None:
        super().__init__(max_moves=max_moves, max_migration_cost=max_migration_cost)
        self.crash_at = crash_at
        self.marker = marker
        self.log = log

    def _plan(self, snapshot):
        with open(self.log, "a", encoding="utf-8") as log:
            log.write(f"{self.max_moves} {snapshot.period} {_attempt()}\n")
        if snapshot.period == self.crash_at and not os.path.exists(self.marker):
            with open(self.marker, "w", encoding="utf-8") as marker:
                marker.write("crashed\n")
            os._exit(17)
        return super()._plan(snapshot)


class SlowFlux(FluxPlanner):
    """Flux that takes ``delay`` seconds more per period and logs ``budget period`` per call to
    ``log``: a grid slow enough to kill in the middle, and a record of which replays ran."""

    name = "test_slow_flux"

    def __init__(
        self,
        *,
        max_moves: int | None = None,
        max_migration_cost: float | None = None,
        delay: float = 0.0,
        log: str = "",
    ) -> None:
        super().__init__(max_moves=max_moves, max_migration_cost=max_migration_cost)
        self.delay = delay
        self.log = log

    def _plan(self, snapshot):
        time.sleep(self.delay)
        with open(self.log, "a", encoding="utf-8") as log:
            log.write(f"{self.max_moves} {snapshot.period}\n")
        return super()._plan(snapshot)
