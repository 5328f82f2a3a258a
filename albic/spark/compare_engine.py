"""``albic compare`` on Spark: every replay of the planner x budget grid is one Spark task.

::

    albic compare STATS_DIR --planner albic --planner milp --budgets max_moves=5,10,20,40 \\
        --engine spark --master spark://HOST:7077 --conf spark.executor.cores=4 --out DIR

    table = albic.compare(snapshots, ["albic", "milp"], budgets="max_moves=5,10",
                          engine="spark", master="local[2]")

A replay (one planner, one parameter set, one budget, over all periods, carrying the placement
from period to period) is the unit of work on both engines, and the replay itself is the same code
(:func:`albic.evaluation.compare.replay_run`): the Spark engine only decides where it runs. So the
table is the same, row for row, as on the local engine -- solve seconds aside, for deterministic
planners and for the time-limited ones run with ``deterministic=True`` (their default: the limit
is then the solver's work, not the wall clock, and a loaded executor gives the same plan).

How it runs:

- **The snapshots reach each executor once**: broadcast from the driver (default; each Python
  worker unpickles them once and keeps them for the tasks it runs), or, with
  ``snapshots_via="read"`` and a statistics folder every executor can read, read from the dataset
  by each Python worker (once, kept for its later tasks). Either way a worker pays once: for the
  demo's week (168 periods, 256 key groups) a pickle load of 0.26 s against a Parquet read and
  snapshot build of 0.65 s, and ``python -m benchmarks compare`` measured 8 Flux replays on a warm
  ``local[2]`` at 3.17 s broadcast against 3.22 s read (the same, within noise). Broadcast is the
  default because it needs no file system shared with the executors: the driver reads the folder.
- **One Spark job per replay**, each a single task, submitted together from driver threads: Spark
  runs as many at a time as it has cores, and each replay's rows reach the driver the moment it
  finishes, so the caller can keep it (``albic compare`` writes it to OUT: a killed driver loses
  only the replays in flight, ``--resume`` runs the others). A task is retried by Spark as its
  ``spark.task.maxFailures`` allows (locally: master ``local[N,F]``); a retried task replays from
  the first period with a fresh copy of the planner, so its rows do not depend on how often it ran.
  A replay whose task fails every attempt gets ERROR rows (:func:`~albic.evaluation.compare.error_rows`)
  and the grid goes on.
- **Executors without albic** fail in one line before any replay: a first small job imports albic
  on the executors (:func:`check_executors`).

This module is also where ``albic.compare`` lives (:func:`compare`): choosing between the local
and the Spark engine needs both, and this room is the first that sees both
(``base <- core <- io <- evaluation <- spark``); ``albic.evaluation`` never imports Spark.
"""

from __future__ import annotations

import functools
import re
import sys
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import pandas as pd

from albic import __version__
from albic.base.errors import InvalidParameterError, SparkJobError
from albic.base.progress import progress
from albic.core.model import Snapshot
from albic.evaluation.compare import (
    PlannerSpec,
    Run,
    Runner,
    Source,
    error_rows,
    local_runner,
    replay_run,
    source_periods,
)
from albic.evaluation.compare import (
    compare as compare_locally,
)
from albic.evaluation.recommend import Recommendation
from albic.evaluation.recommend import recommend as recommend_locally
from albic.evaluation.replay import ReplayRules
from albic.io import read_snapshots
from albic.spark.session import error_cause, spark_errors, spark_log_path, spark_session

__all__ = [
    "compare",
    "recommend",
    "runner_for",
    "keyword",
    "SparkRunner",
    "check_executors",
    "ENGINES",
    "SNAPSHOTS_VIA",
    "SHIPPING_HELP",
]

#: The engines ``albic.compare`` and ``albic compare --engine`` know.
ENGINES = ("local", "spark")
#: How the snapshots reach the executors.
SNAPSHOTS_VIA = ("broadcast", "read")
#: Where a user learns how to give the executors albic.
SHIPPING_HELP = (
    "ship albic and its dependencies to them: a packed virtual environment given to "
    "spark-submit --archives, or an image (README, 'albic compare on a Spark cluster')"
)

# Replays submitted to Spark at a time (each waits in a driver thread): enough to keep a large
# cluster busy, few enough that the driver's threads and Py4J connections stay cheap.
MAX_IN_FLIGHT = 256

_MISSING_MODULE = re.compile(r"No module named '([^']+)'")
_NO_PYTHON = re.compile(r'Cannot run program "([^"]+)"[^:]*: error=\d+, ([^\n]+)')


def compare(
    snapshots: Source,
    planners: Iterable[PlannerSpec] | Mapping[str, Any],
    *,
    show_progress: bool | None = None,
    jobs: int = 1,
    engine: str = "local",
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
    **rules: Any,
) -> pd.DataFrame:
    """:func:`albic.evaluation.compare.compare` on the local engine (``jobs`` processes) or, with
    ``engine="spark"``, every replay a Spark task on ``master`` (default: the running session's,
    spark-submit's, else ``local[*]``) with the Spark settings ``conf`` (:func:`runner_for`). The
    table is the same on both engines (module docstring). ``snapshots`` may be a statistics
    folder. ``rules``: the replays' rules, as ``rules=``
    (:class:`~albic.evaluation.replay.ReplayRules`, or
    :class:`~albic.evaluation.compare.CompareRules`) or keywords of their names (``decide_on``,
    ``trigger``, ``initial``, ``remote_cost``, ``stream``, ``budgets``, ``reference``,
    ``drop_partial``), as the local :func:`~albic.evaluation.compare.compare` takes them (a
    keyword overrides ``rules=``); ``budgets``: module docstring; ``reference``: the replay every run is
    judged against (default the engine's own split; ``None`` for none); ``drop_partial``: leave
    out the partial periods (the trace's first and last when its events cover only part of them).

    >>> compare([], ["flux"], engine="cluster")
    Traceback (most recent call last):
    ...
    albic.base.errors.InvalidParameterError: engine 'cluster': use one of local, spark
    """
    return compare_locally(
        snapshots,
        planners,
        runner=runner_for(engine, jobs=jobs, master=master, conf=conf),
        show_progress=show_progress,
        **rules,
    )


def keyword(setting: str, value: str | None = None) -> str:
    """How the API's messages name a setting (``jobs``) or a setting's value
    (``engine='spark'``): as its keyword."""
    return setting if value is None else f"{setting}={value!r}"


def runner_for(
    engine: str = "local",
    *,
    jobs: int = 1,
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
    named: Callable[..., str] = keyword,
) -> Runner:
    """The runner of a comparison's replays, the one choice ``albic.compare``, ``albic.recommend``
    and the command line make: on the local engine ``jobs`` worker processes
    (:func:`~albic.evaluation.compare.local_runner`), on ``"spark"`` a :class:`SparkRunner` on
    ``master`` with ``conf``; a setting of the other engine is refused. ``named`` spells a setting
    in the messages as the caller's user gives it (:func:`keyword`; the command line its flags).

    >>> runner_for("local", master="local[2]")
    Traceback (most recent call last):
    ...
    albic.base.errors.InvalidParameterError: master and conf are for engine='spark'
    """
    if engine not in ENGINES:
        raise InvalidParameterError(f"{named('engine')} {engine!r}: use one of {', '.join(ENGINES)}")
    if engine == "local":
        if master is not None or conf:
            raise InvalidParameterError(
                f"{named('master')} and {named('conf')} are for {named('engine', 'spark')}"
            )
        if jobs < 1:
            raise InvalidParameterError(f"{named('jobs')} must be at least 1, got {jobs}")
        return local_runner(jobs)
    if jobs != 1:
        raise InvalidParameterError(
            f"{named('jobs')} is for {named('engine', 'local')}; Spark runs as many replays at a time "
            "as it has cores"
        )
    return SparkRunner(master, conf)


def recommend(
    source: Source,
    *,
    jobs: int = 1,
    engine: str = "local",
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
    **options: Any,
) -> Recommendation:
    """:func:`albic.evaluation.recommend.recommend` on the local engine (``jobs`` processes) or,
    with ``engine="spark"``, every replay a Spark task on ``master`` (:func:`runner_for`): the
    same recommendation.

    >>> recommend([], engine="cluster")
    Traceback (most recent call last):
    ...
    albic.base.errors.InvalidParameterError: engine 'cluster': use one of local, spark
    """
    return recommend_locally(
        source, runner=runner_for(engine, jobs=jobs, master=master, conf=conf), **options
    )


class SparkRunner:
    """Runs replays as Spark tasks (:data:`albic.evaluation.compare.Runner`; module docstring).

    ``snapshots_via``: ``"broadcast"`` (default) or ``"read"`` (each Python worker reads the
    statistics folder itself; only when the comparison's snapshots are given as a folder).
    """

    def __init__(
        self,
        master: str | None = None,
        conf: Mapping[str, str] | None = None,
        *,
        snapshots_via: str = "broadcast",
        verbose: bool = False,
    ) -> None:
        if snapshots_via not in SNAPSHOTS_VIA:
            raise InvalidParameterError(
                f"snapshots_via {snapshots_via!r}: use one of {', '.join(SNAPSHOTS_VIA)}"
            )
        self.master = master
        self.conf = dict(conf or {})
        self.snapshots_via = snapshots_via
        self.verbose = verbose

    def __call__(
        self,
        source: list[Snapshot] | Path,
        todo: Sequence[tuple[int, Run]],
        rules: ReplayRules,
        show_progress: bool | None,
    ) -> Iterator[tuple[int, pd.DataFrame]]:
        if self.snapshots_via == "read" and not isinstance(source, Path):
            raise InvalidParameterError("snapshots_via='read' needs the snapshots as a statistics folder")
        spark = spark_session(self.master, "albic-compare", config=self.conf, verbose=self.verbose)
        context = spark.sparkContext
        master = context.master
        check_executors(context)
        periods = source_periods(source)
        if self.snapshots_via == "read":
            shared: tuple[str, Any] = ("read", str(Path(source).resolve()))
            handle = None
        else:
            with spark_errors(master):
                handle = context.broadcast(
                    list(read_snapshots(source)) if isinstance(source, Path) else list(source)
                )
            shared = ("broadcast", handle)
        stop = threading.Event()
        group = f"albic-compare-{uuid.uuid4().hex[:12]}"
        futures: dict[Any, int] = {}
        pool = ThreadPoolExecutor(min(len(todo), MAX_IN_FLIGHT) or 1, thread_name_prefix="albic-replay")
        try:
            for i, run in todo:
                futures[pool.submit(_run_job, context, group, shared, run, rules, periods, stop)] = i
            label = f"replays on Spark ({master})"
            for future in progress(as_completed(futures), label, total=len(todo), enabled=show_progress):
                yield futures[future], future.result()
        finally:  # also when the caller stops early (an interrupt): no job may outlive the grid
            if not all(future.done() for future in futures):
                stop.set()
                context.cancelJobGroup(group)
            pool.shutdown(wait=True, cancel_futures=True)
            if handle is not None:
                handle.unpersist()


def _run_job(
    context: Any,
    group: str,
    shared: tuple[str, Any],
    run: Run,
    rules: ReplayRules,
    periods: list[str],
    stop: threading.Event,
) -> pd.DataFrame:
    """One replay as a one-task Spark job (in a driver thread); ERROR rows if the task failed
    every attempt Spark gave it."""
    stopped = "not run: the comparison was stopped"
    decided_on = rules.decide_on
    if stop.is_set():
        return error_rows(run, periods, stopped, decided_on)
    context.setJobGroup(group, f"albic compare: {run.label}")
    task = functools.partial(_replay_task, shared, run, rules)
    try:
        return context.parallelize([0], 1).map(task).collect()[0]
    except Exception as err:  # recorded, not raised: one failing replay must not stop the grid
        return error_rows(
            run, periods, stopped if stop.is_set() else f"Spark task failed: {_task_failure(err)}", decided_on
        )


# Snapshots a Python worker read from a statistics folder (snapshots_via="read"), by folder: read
# once per worker, like a broadcast value. Snapshots are immutable, and replays copy them before
# placing key groups, so a replay's rows do not depend on which replays the worker ran before.
_READ: dict[str, list[Snapshot]] = {}


def _replay_task(shared: tuple[str, Any], run: Run, rules: ReplayRules, _: int) -> pd.DataFrame:
    """On an executor: one replay (the same code as on the local engine)."""
    how, value = shared
    if how == "read":
        if value not in _READ:
            _READ.clear()
            _READ[value] = list(read_snapshots(value))
        snapshots = _READ[value]
    else:
        snapshots = value.value
    return replay_run(snapshots, run, rules, show_progress=False)


def _executor_versions(_: int) -> tuple[str, str]:
    """On an executor: the albic and Python versions it runs (importing albic on the way)."""
    return __version__, ".".join(map(str, sys.version_info[:3]))


def check_executors(context: Any) -> None:
    """Fail in one line unless the executors import albic (the version the driver runs, on the
    same Python): a first job of a few tiny tasks, before any replay."""
    master = context.master
    tasks = max(1, min(int(context.defaultParallelism), 64))
    try:
        found = set(context.parallelize(range(tasks), tasks).map(_executor_versions).collect())
    except Exception as err:
        missing = _MISSING_MODULE.search(str(err))
        if missing:
            raise SparkJobError(
                f"the Spark executors of {master} cannot import albic (No module named "
                f"'{missing.group(1)}'): {SHIPPING_HELP}"
            ) from None
        python = _NO_PYTHON.search(str(err))
        if python:
            raise SparkJobError(
                f"the Spark executors of {master} cannot start Python {python.group(1)!r} "
                f"({python.group(2).strip()}; PYSPARK_PYTHON or spark.pyspark.python): "
                f"{SHIPPING_HELP}"
            ) from None
        raise SparkJobError(
            f"Spark job on master {master} failed: {error_cause(err)} (Spark's log: {spark_log_path()})"
        ) from None
    driver = (__version__, ".".join(map(str, sys.version_info[:3])))
    other = sorted(v for v in found if v != driver)
    if other:
        raise SparkJobError(
            f"the Spark executors of {master} run albic {other[0][0]} on Python {other[0][1]}, the "
            f"driver albic {driver[0]} on Python {driver[1]}: {SHIPPING_HELP}"
        )


def _task_failure(err: BaseException) -> str:
    """One line on why a replay's task failed every attempt."""
    text = str(err)
    crashed = re.search(r"Python worker exited unexpectedly[^\n]*", text)
    if crashed:
        return crashed.group(0).strip()
    missing = _MISSING_MODULE.search(text)
    if missing:
        return f"an executor cannot import {missing.group(1)!r}: {SHIPPING_HELP}"
    failures = re.search(r"Task \S+ in stage \S+ failed (\d+) times", text)
    cause = error_cause(err)
    return f"{cause} ({failures.group(0)})" if failures and failures.group(0) not in cause else cause
