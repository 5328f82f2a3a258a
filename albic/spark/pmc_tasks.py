"""What PMC's Spark tasks run (:mod:`albic.spark.precompute`): a block's cost rows and its Bellman
updates.

Kept apart from ``precompute`` so that a Python worker unpickling a task imports numpy, the solvers
and this module, not ``precompute``'s pandas and pyarrow: 0.6-0.7 s per worker measured, paid
before any task can start, on one core and on two alike.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from solvers.interval_dp import cost_rows
from solvers.mdp import bellman_blocks, reached_columns

__all__ = ["block_costs", "bellman_step", "host_cost_rows", "costs_on_host", "spark_directory"]

Block = tuple[np.ndarray, np.ndarray]


def block_costs(
    rows: np.ndarray, *, masks: np.ndarray, states: np.ndarray, group_of: np.ndarray, transition: np.ndarray
) -> Block:
    """``(rows, cost rows)``: each row only where its Bellman update reads (NaN elsewhere)."""
    return rows, cost_rows(rows, masks, states, reached_columns(rows, group_of, transition))


def bellman_step(
    blocks: Sequence[Block],
    values: np.ndarray,
    *,
    group_of: np.ndarray,
    groups: Sequence[np.ndarray],
    transition: np.ndarray,
    gamma: float,
) -> np.ndarray:
    """The new values of the blocks' rows, concatenated (:func:`solvers.mdp.bellman_blocks`)."""
    news = bellman_blocks(blocks, values, group_of, groups, transition, gamma)
    return np.concatenate(news) if news else np.empty(0)


# The cost blocks this Python worker has memory-mapped, of one run (one directory) at a time.
_MAPPED: dict[str, np.ndarray] = {}


def host_cost_rows(directory: str, rows: np.ndarray, compute: Callable[[], np.ndarray]) -> np.ndarray:
    """The cost rows of ``rows``, memory-mapped from their file in ``directory``; the first task
    on a host that needs them computes them (``compute()``) and writes the file atomically, so
    the Python workers of a host share one copy in the page cache, and a task that runs elsewhere
    computes the same rows again (the costs are a deterministic function of the inputs).

    >>> import tempfile
    >>> where = tempfile.mkdtemp()
    >>> host_cost_rows(where, np.arange(2), lambda: np.eye(2)).tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    >>> host_cost_rows(where, np.arange(2), lambda: 1 / 0).tolist()  # from the file now
    [[1.0, 0.0], [0.0, 1.0]]
    """
    path = os.path.join(directory, f"rows-{int(rows[0])}-{int(rows[-1])}.npy")
    costs = _MAPPED.get(path)
    if costs is not None:
        return costs
    if not os.path.exists(path):
        os.makedirs(directory, exist_ok=True)
        tmp = f"{path}.{os.getpid()}-{uuid.uuid4().hex}.tmp"
        with open(tmp, "wb") as handle:
            np.save(handle, compute())
        os.replace(tmp, path)
    for old in [p for p in _MAPPED if os.path.dirname(p) != directory]:
        del _MAPPED[old]  # an earlier run's blocks
    costs = _MAPPED[path] = np.load(path, mmap_mode="r")
    return costs


def spark_directory(run: str) -> str:
    """Where run ``run`` keeps its cost blocks on the host of the calling process (driver or
    executor): Spark's per-application directory, which Spark removes when the application ends."""
    from pyspark import SparkFiles  # Spark is running wherever this is called

    return os.path.join(SparkFiles.getRootDirectory(), f"albic-pmc-{run}")


def costs_on_host(
    rows: np.ndarray,
    *,
    run: str,
    masks: Any,
    states: np.ndarray,
    group_of: np.ndarray,
    transition: np.ndarray,
) -> Block:
    """``(rows, cost rows)`` for one Spark job per iteration: computed once per host into a file,
    memory-mapped by every later task (:func:`host_cost_rows`). ``masks`` is a Spark broadcast."""

    def compute() -> np.ndarray:
        return block_costs(rows, masks=masks.value, states=states, group_of=group_of, transition=transition)[
            1
        ]

    return rows, host_cost_rows(spark_directory(run), rows, compute)
