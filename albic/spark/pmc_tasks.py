"""What PMC's Spark tasks run (:mod:`albic.spark.precompute`): a block's cost rows and, when the
executors keep them, their Bellman updates.

Kept apart from ``precompute`` so that a Python worker unpickling a task imports numpy, the solvers
and this module, not ``precompute``'s pandas and pyarrow: 0.6-0.7 s per worker measured, paid
before any task can start, on one core and on two alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from solvers.interval_dp import cost_rows
from solvers.mdp import bellman_blocks, reached_columns

__all__ = ["block_costs", "bellman_step"]

Block = tuple[np.ndarray, np.ndarray, np.ndarray]


def block_costs(
    rows: np.ndarray, *, masks: np.ndarray, states: np.ndarray, group_of: np.ndarray, transition: np.ndarray
) -> list[Block]:
    """The cost rows of ``rows`` as blocks ``(rows, costs, columns)``, one per node count among
    them: each row against the states its Bellman update reads (:func:`solvers.mdp.reached_columns`),
    the only costs the value iteration needs.

    >>> from solvers.interval_dp import cut_mask
    >>> masks = np.array([cut_mask([], 2), cut_mask([1], 2)])
    >>> [(r.tolist(), c.tolist(), k.tolist()) for r, c, k in block_costs(
    ...     np.array([0, 1]), masks=masks, states=np.array([1.0, 2.0]), group_of=np.array([0, 1]),
    ...     transition=np.array([[0.0, 1.0], [0.5, 0.5]]))]
    [([0], [[1.0]], [1]), ([1], [[1.0, 0.0]], [0, 1])]
    """
    blocks = []
    for group in np.unique(group_of[rows]).tolist():
        mine = rows[group_of[rows] == group]
        columns = reached_columns(group, group_of, transition)
        blocks.append((mine, cost_rows(mine, masks, states, columns), columns))
    return blocks


def bellman_step(
    blocks: Sequence[Block],
    *,
    values: Any,
    group_of: np.ndarray,
    groups: Sequence[np.ndarray],
    transition: np.ndarray,
    gamma: float,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(rows, new values)`` of each block (:func:`solvers.mdp.bellman_blocks`) for the values
    of the Spark broadcast ``values``."""
    news = bellman_blocks(blocks, values.value, group_of, groups, transition, gamma)
    return [(block[0], new) for block, new in zip(blocks, news)]
