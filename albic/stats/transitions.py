"""The migration transition matrix (MTM) of the state-migration paper (section 5.2, Table 4).

``M[n, n']`` is the probability that the next period needs ``n'`` nodes when this one needs ``n``.
:func:`estimate_mtm` counts the transitions ``n -> n'`` between consecutive periods of a node-count
series (staying at ``n`` counts as ``n -> n``, as the diagonal of the paper's Table 4 does) and
normalises each row. A node count that never occurs as the *source* of a transition in the series
has no data; the ``unseen`` policy says what its row becomes, and the result lists those rows:

- ``"stay"`` (default): ``M[n, n] = 1`` -- no migration is expected from a count never left;
- ``"uniform"``: every state equally likely;
- ``"error"``: refuse (an :class:`~albic.base.errors.InvalidParameterError` naming the counts).

Example
-------
>>> mtm = estimate_mtm([2, 3, 3, 2, 3], states=[2, 3, 4])
>>> mtm.matrix.tolist()
[[0.0, 1.0, 0.0], [0.5, 0.5, 0.0], [0.0, 0.0, 1.0]]
>>> mtm.unseen_rows
[4]
>>> mtm.probability(3, 2)
0.5
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from albic.base.errors import AlbicError, InvalidParameterError
from albic.io import atomic_write_text
from albic.io.reader import read_input_json
from albic.stats.node_counts import MAX_NODES, check_counts, normalise_counts, read_series

__all__ = [
    "TransitionMatrix",
    "estimate_mtm",
    "read_mtm",
    "write_mtm",
    "read_node_counts",
    "normalise_node_counts",
    "MTM_SCHEMA",
    "UNSEEN_POLICIES",
]

MTM_SCHEMA = "albic.mtm/1"
UNSEEN_POLICIES = ("stay", "uniform", "error")


@dataclass(frozen=True)
class TransitionMatrix:
    """Row-stochastic ``matrix`` over ``states`` (node counts), the raw transition ``counts`` and
    the ``unseen_rows`` filled by the ``unseen`` policy."""

    states: list[int]
    matrix: np.ndarray
    counts: np.ndarray
    unseen_rows: list[int]
    unseen: str = "stay"

    def probability(self, n: int, n_next: int) -> float:
        """``M[n, n']`` (0 for counts outside ``states``)."""
        if n not in self.states or n_next not in self.states:
            return 0.0
        return float(self.matrix[self.states.index(n), self.states.index(n_next)])

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": MTM_SCHEMA,
            "states": list(self.states),
            "matrix": self.matrix.tolist(),
            "counts": self.counts.astype(int).tolist(),
            "unseen_rows": list(self.unseen_rows),
            "unseen": self.unseen,
        }

    @classmethod
    def from_dict(cls, data: Any, source: str = "MTM") -> TransitionMatrix:
        if not isinstance(data, dict) or data.get("schema") != MTM_SCHEMA:
            raise AlbicError(f"{source} is not an {MTM_SCHEMA} document")
        states = [int(s) for s in data["states"]]
        matrix = np.asarray(data["matrix"], dtype=float)
        if matrix.shape != (len(states), len(states)):
            raise AlbicError(f"{source}: matrix shape {matrix.shape} does not match {len(states)} states")
        if (matrix < 0).any() or not np.allclose(matrix.sum(axis=1), 1.0):
            raise AlbicError(f"{source}: every row of the matrix must be >= 0 and sum to 1")
        counts = np.asarray(data.get("counts", np.zeros_like(matrix)), dtype=float)
        return cls(
            states,
            matrix,
            counts,
            [int(s) for s in data.get("unseen_rows", [])],
            str(data.get("unseen", "stay")),
        )


def estimate_mtm(
    series: Sequence[int], *, states: Sequence[int] | None = None, unseen: str = "stay"
) -> TransitionMatrix:
    """The MTM of a node-count series; ``states`` defaults to ``min..max`` of the series."""
    if unseen not in UNSEEN_POLICIES:
        raise InvalidParameterError(f"unseen must be one of {UNSEEN_POLICIES}, got {unseen!r}")
    counts_series = [int(v) for v in series]
    if any(v < 1 for v in counts_series):
        raise InvalidParameterError(f"node counts must be >= 1, got {min(counts_series)}")
    if states is None:
        if not counts_series:
            raise InvalidParameterError("an empty node-count series needs explicit states")
        states = range(min(counts_series), max(counts_series) + 1)
    states = sorted({int(s) for s in states})
    if len(states) > MAX_NODES:
        raise InvalidParameterError(
            f"the transition matrix would have {len(states)} states ({states[0]}..{states[-1]} "
            f"nodes), over the limit of {MAX_NODES}; a node-count series spanning that much is "
            "usually a load or utilisation series: map it onto node counts with parameter normalise LO:HI"
        )
    outside = sorted(set(counts_series) - set(states))
    if outside:
        raise InvalidParameterError(f"the series has node counts {outside} outside the states {states}")
    where = {s: i for i, s in enumerate(states)}
    counts = np.zeros((len(states), len(states)))
    for a, b in zip(counts_series, counts_series[1:]):
        counts[where[a], where[b]] += 1
    totals = counts.sum(axis=1)
    unseen_rows = [s for s, t in zip(states, totals) if t == 0]
    if unseen_rows and unseen == "error":
        raise InvalidParameterError(
            f"node counts {unseen_rows} are never left in the series, so their rows have no data "
            "(use unseen='stay' or 'uniform')"
        )
    matrix = np.divide(counts, totals[:, None], out=np.zeros_like(counts), where=totals[:, None] > 0)
    for s in unseen_rows:
        i = where[s]
        if unseen == "stay":
            matrix[i, i] = 1.0
        else:
            matrix[i, :] = 1.0 / len(states)
    return TransitionMatrix(states, matrix, counts, unseen_rows, unseen)


def write_mtm(mtm: TransitionMatrix, path: str | os.PathLike[str]) -> Path:
    """Write ``mtm`` as JSON atomically."""
    return atomic_write_text(path, json.dumps(mtm.to_dict(), indent=2) + "\n")


def read_mtm(path: str | os.PathLike[str]) -> TransitionMatrix:
    """Read an MTM written by :func:`write_mtm` (``albic mtm``)."""
    return TransitionMatrix.from_dict(read_input_json(path, "MTM file"), str(path))


def read_node_counts(
    path: str | os.PathLike[str],
    column: str | None = None,
    *,
    normalise: tuple[int, int] | None = None,
) -> list[int]:
    """A node-count series, from one of:

    - a statistics dataset written by ``albic stats`` (a directory with a ``nodes`` table: the
      series is the number of nodes of each period, in period order);
    - a CSV or Parquet file with a count column (``column``; unnamed: ``nodes``, ``node_count``,
      ``n_nodes``, else the one numeric column), ordered by its time column (named ``time``,
      ``timestamp``, ``period``, ..., else the one holding times) when it has one -- the file
      ``albic stats --node-counts FILE[:COLUMN]`` reads -- or a directory
      holding ``node_counts.parquet`` or ``node_counts.csv``.

    With ``normalise=(LO, HI)`` the column may hold any numbers (e.g. utilisation), mapped linearly
    onto whole counts LO..HI; without it, it must hold whole counts in ``1..MAX_NODES``
    (:func:`albic.stats.node_counts.check_counts`, which names the fix).
    """
    import pandas as pd

    path = Path(path)
    if path.is_dir() and (path / "nodes").is_dir():
        if column is not None:
            raise InvalidParameterError(
                f"parameter column {column!r}: {path} is a statistics dataset, whose node counts are "
                "its 'nodes' table; parameter column names the column of a CSV/Parquet series"
            )
        nodes = pd.read_parquet(path / "nodes", columns=["period"])
        values = nodes.groupby("period").size().sort_index().astype(int).tolist()
        return normalise_counts(values, *normalise) if normalise else values
    if path.is_dir():
        found = [
            path / f"node_counts.{ext}"
            for ext in ("parquet", "csv")
            if (path / f"node_counts.{ext}").exists()
        ]
        if not found:
            raise AlbicError(
                f"{path} is neither a statistics dataset of 'albic stats' (no 'nodes' table) nor "
                "a folder holding node_counts.parquet or node_counts.csv"
            )
        path = found[0]
    _, values, name = read_series(path, column, timed=False)
    if normalise:
        numbers = pd.to_numeric(pd.Series(values), errors="coerce")
        if numbers.isna().any():
            row = int(numbers.isna().to_numpy().nonzero()[0][0])
            raise AlbicError(f"{name}: row {row} holds {values[row]!r}, not a number")
        return normalise_counts(numbers.to_numpy(dtype=float), *normalise)
    return check_counts(values, name)


#: The paper's normalisation; kept under its old name for notebooks and scripts.
normalise_node_counts = normalise_counts
