"""Progress bars for long work (tqdm), in a terminal and in a notebook, quiet where nobody watches.

Example
-------
>>> from albic.base.progress import progress
>>> total = 0
>>> for x in progress(range(3), "summing", enabled=False):
...     total += x
>>> total
3

A bar is drawn when stderr is a terminal or the code runs in a Jupyter kernel (or when
``enabled=True``), so logs and CI output are not flooded. tqdm's ``auto`` mode draws a widget in a
notebook that has ipywidgets and a text bar otherwise. :func:`spark_progress` draws the tasks of
the Spark jobs a block runs (the statistics job, PMC), polled from Spark's status tracker.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import warnings
from collections.abc import Iterable, Iterator
from typing import Any, TextIO, TypeVar

__all__ = ["progress", "spark_progress", "should_draw"]

T = TypeVar("T")

_POLL_SECONDS = 0.5  # how often the Spark bar asks Spark how far its jobs are


def should_draw(stream: TextIO | None = None) -> bool:
    """Whether a bar on ``stream`` (stderr) has a reader: a terminal or a Jupyter kernel."""
    stream = stream or sys.stderr
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None and hasattr(ipython, "get_ipython") else None
    if type(shell).__name__ == "ZMQInteractiveShell":  # a Jupyter kernel: the notebook shows stderr
        return True
    return bool(getattr(stream, "isatty", None) and stream.isatty())


def _tqdm(stream: TextIO | None) -> Any:
    """tqdm's ``auto`` class for the default stream (a widget in a notebook when ipywidgets is
    there), the plain text class for an explicit stream."""
    if stream is not None:
        from tqdm.std import tqdm

        return tqdm
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "IProgress not found": tqdm falls back to text itself
        from tqdm.auto import tqdm
    return tqdm


def progress(
    items: Iterable[T],
    label: str,
    *,
    total: int | None = None,
    enabled: bool | None = None,
    stream: TextIO | None = None,
) -> Iterator[T]:
    """Yield ``items`` while drawing ``label 3/10 [00:01<00:02]`` on ``stream`` (stderr)."""
    if enabled is None:
        enabled = should_draw(stream)
    if not enabled:
        yield from items
        return
    bar = _tqdm(stream)(items, desc=label, total=total, file=stream, dynamic_ncols=True, leave=True)
    with bar:
        yield from bar


@contextlib.contextmanager
def spark_progress(
    spark: Any, label: str, *, enabled: bool | None = None, stream: TextIO | None = None
) -> Iterator[None]:
    """While the block runs, draw the tasks of the Spark jobs it starts (done / seen so far).

    The total grows as Spark plans new stages, so the bar counts tasks rather than promising a
    time. Nothing is drawn (and Spark is not polled) when ``enabled`` is false or nobody watches.
    """
    if enabled is None:
        enabled = should_draw(stream)
    if not enabled:
        yield
        return
    tracker = spark.sparkContext.statusTracker()
    bar = _tqdm(stream)(total=0, desc=label, unit="task", file=stream, dynamic_ncols=True)
    stages: dict[int, list[int]] = {}  # stage id -> [tasks, completed]
    stop = threading.Event()

    def poll() -> None:
        active: set[int] = set()
        for stage_id in tracker.getActiveStageIds():
            info = tracker.getStageInfo(stage_id)
            if info is not None:
                stages[stage_id] = [info.numTasks, info.numCompletedTasks]
                active.add(stage_id)
        for stage_id, counts in stages.items():
            if stage_id not in active:
                counts[1] = counts[0]  # a stage no longer active has finished
        bar.total = sum(c[0] for c in stages.values())
        bar.n = sum(c[1] for c in stages.values())
        bar.refresh()

    def run() -> None:
        while not stop.wait(_POLL_SECONDS):
            with contextlib.suppress(Exception):  # the session may be stopping; the bar is cosmetic
                poll()

    def finish() -> None:
        """The jobs started in the block, from Spark's record of finished ones: a job faster than
        a poll (a warm session) was never seen active, and would leave an empty bar."""
        for job_id in set(tracker.getJobIdsForGroup(None)) - before:
            job = tracker.getJobInfo(job_id)
            for stage_id in job.stageIds if job is not None else []:
                info = tracker.getStageInfo(stage_id)
                # a stage Spark skipped (its output was reused) never ran a task: not counted
                if info is not None and stage_id not in stages and info.numCompletedTasks > 0:
                    stages[stage_id] = [info.numTasks, info.numCompletedTasks]
        poll()

    before = set(tracker.getJobIdsForGroup(None))
    thread = threading.Thread(target=run, name="albic-spark-progress", daemon=True)
    thread.start()
    try:
        yield
        with contextlib.suppress(Exception):
            finish()
    finally:
        stop.set()
        thread.join()
        bar.close()
