"""Value iteration for the projected migration cost (state-migration paper, section 5.2, Figure 9;
design section 7), with a pluggable ``mapper`` so the same code runs locally or on Spark.

States are partitionings ``P``; ``group_of[i]`` is the index of state ``i``'s node count in the MTM.
One iteration computes, for every state ``i``::

    C'[i] = sum_g' T[group_of[i], g'] * min_{j in group g'} ( cost[i, j] + gamma * C[j] )

The rows live in *blocks* ``(row indices, cost rows)``. ``mapper(fn, blocks)`` applies ``fn`` to every
block and returns the results (``list(map(fn, blocks))`` locally; ``rdd.map(fn).collect()`` on Spark
with the blocks a cached RDD), so only the current ``C`` travels each iteration. Iteration stops when
``max |C' - C| <= tol`` (sup norm). With ``gamma < 1`` the update is a contraction and converges from
any start; with ``gamma = 1`` it may not, and stops at ``max_iterations`` with ``converged=False``.

Example: a 2-state toy (two tasks of state 1 on 1 or 2 nodes; moving between them costs 1)
-------------------------------------------------------------------------------------------
>>> import numpy as np
>>> cost = np.array([[0.0, 1.0], [1.0, 0.0]])
>>> T = np.array([[0.5, 0.5], [0.25, 0.75]])
>>> r = value_iteration(local_blocks(cost, 2), np.array([0, 1]), T, 0.5, tol=1e-12)
>>> np.round(r.values, 6).tolist(), r.converged
([0.857143, 0.571429], True)
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["MDPResult", "value_iteration", "bellman_block", "local_blocks", "local_mapper"]

Block = tuple[np.ndarray, np.ndarray]


@dataclass(frozen=True)
class MDPResult:
    """The values, the total number of iterations done, whether ``tol`` was reached (``stopped``:
    the run was told to stop early and can be resumed), and the last sup-norm change."""

    values: np.ndarray
    iterations: int
    converged: bool
    max_change: float
    stopped: bool = False


def local_blocks(cost: np.ndarray, size: int) -> list[Block]:
    """Row blocks of a dense cost matrix, ``size`` rows each."""
    rows = np.arange(cost.shape[0])
    return [(rows[i : i + size], cost[i : i + size]) for i in range(0, rows.size, max(size, 1))]


def local_mapper(fn: Callable[[Any], Any], blocks: Iterable[Any]) -> list[Any]:
    """The default mapper: plain ``map`` in this process."""
    return list(map(fn, blocks))


def bellman_block(
    block: Block,
    values: np.ndarray,
    group_of: np.ndarray,
    groups: Sequence[np.ndarray],
    transition: np.ndarray,
    gamma: float,
) -> tuple[np.ndarray, np.ndarray]:
    """One Bellman update of the rows of ``block``: ``(row indices, new values)``."""
    rows, cost = block
    new = np.zeros(rows.size)
    weights = transition[group_of[rows]]  # (rows, groups)
    for g, members in enumerate(groups):
        if members.size == 0:
            continue
        used = weights[:, g] > 0
        if not used.any():
            continue
        # Rows and columns are usually contiguous runs (states listed by node count): slices are
        # views, where fancy indexing would copy the block's costs every iteration.
        used_rows, cols = _as_slice(np.flatnonzero(used)), _as_slice(members)
        both_arrays = isinstance(used_rows, np.ndarray) and isinstance(cols, np.ndarray)
        sub = cost[np.ix_(used_rows, cols)] if both_arrays else cost[used_rows, cols]
        best = (sub + gamma * values[members]).min(axis=1)
        new[used_rows] += weights[used_rows, g] * best
    return rows, new


def _as_slice(index: np.ndarray) -> slice | np.ndarray:
    """``index`` (sorted, distinct) as a slice when it is one contiguous run, else unchanged."""
    if index.size and index[-1] - index[0] + 1 == index.size:
        return slice(int(index[0]), int(index[-1]) + 1)
    return index


def value_iteration(
    blocks: Any,
    group_of: np.ndarray,
    transition: np.ndarray,
    gamma: float,
    *,
    tol: float = 1e-6,
    max_iterations: int = 1000,
    mapper: Callable[[Callable[[Any], Any], Any], Iterable[tuple[np.ndarray, np.ndarray]]] = local_mapper,
    start: np.ndarray | None = None,
    start_iteration: int = 0,
    on_iteration: Callable[[int, np.ndarray, float], None] | None = None,
    stop_after: int | None = None,
) -> MDPResult:
    """Iterate the Bellman update from ``start`` (default zeros) until the change is ``<= tol``.

    ``on_iteration(iteration, values, change)`` runs after every iteration (checkpointing goes
    there); ``start``/``start_iteration`` resume a checkpointed run; ``stop_after`` stops after that
    many iterations *of this call* (a bounded or interrupted run, resumable from its checkpoint).
    """
    group_of = np.asarray(group_of, dtype=np.int64)
    transition = np.asarray(transition, dtype=float)
    n = group_of.size
    groups = [np.flatnonzero(group_of == g) for g in range(transition.shape[0])]
    values = np.zeros(n) if start is None else np.array(start, dtype=float)
    iteration, change, done_here = start_iteration, np.inf, 0
    while iteration < max_iterations:
        if stop_after is not None and done_here >= stop_after:
            return MDPResult(values, iteration, False, float(change), stopped=True)
        update = functools.partial(
            bellman_block,
            values=values,
            group_of=group_of,
            groups=groups,
            transition=transition,
            gamma=gamma,
        )
        new = np.empty(n)
        for rows, part in mapper(update, blocks):
            new[rows] = part
        change = float(np.max(np.abs(new - values))) if n else 0.0
        values = new
        iteration += 1
        done_here += 1
        if on_iteration is not None:
            on_iteration(iteration, values, change)
        if change <= tol:
            return MDPResult(values, iteration, True, change)
    return MDPResult(values, iteration, False, float(change))
