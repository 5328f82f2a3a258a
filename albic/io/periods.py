"""One snapshot from what a user has at hand: a snapshot JSON file, standard input, or one period
of a statistics dataset (the folder ``albic stats`` writes).

:func:`read_input_snapshot` is what ``albic plan`` reads. For a statistics dataset the period is
chosen by its label (``2013-11-24T17:00``) or by its index in time order (``0`` is the first, ``-1``
the last; a negative index counts from the end, as in Python); the default is the last period. A
label is tried first, so a label that looks like a number still wins over an index. The snapshot's
placement is the dataset's placeholder (each operator's key groups split evenly and consecutively
over the period's nodes, as Storm's default does; :func:`albic.io.read_snapshots`).

Example
-------
>>> labels = ["2013-11-24T00:00", "2013-11-24T01:00", "2013-11-24T02:00"]
>>> period_position(labels, "2013-11-24T01:00"), period_position(labels, "-1"), period_position(labels, None)
(1, 2, 2)
"""

from __future__ import annotations

import os
from pathlib import Path

from albic.base.errors import (
    InputFileError,
    InvalidParameterError,
    InvalidPlanFileError,
    InvalidSnapshotError,
)
from albic.base.formats import count
from albic.core.explain import check_fits
from albic.core.model import Snapshot
from albic.core.plan import Plan
from albic.io import read_plan, read_snapshot, read_snapshots
from albic.io.datasets import MANIFEST
from albic.io.documents import snapshot_from_text
from albic.io.reader import check_input_folder, read_stdin_text

__all__ = ["STDIN", "period_labels", "period_position", "read_period", "read_input_snapshot", "read_plan_for"]

#: The name that means "read the snapshot JSON from standard input".
STDIN = "-"


def period_labels(stats_dir: str | os.PathLike[str]) -> list[str]:
    """The period labels of a statistics dataset, in time order."""
    import pandas as pd

    root = Path(stats_dir)
    check_input_folder(root, "statistics folder")
    if not (root / MANIFEST).is_file():
        raise InvalidSnapshotError(
            f"{root} is not a statistics dataset: it has no {MANIFEST} (write one with 'albic stats')"
        )
    nodes = pd.read_parquet(root / "nodes", columns=["period"])
    return sorted(str(p) for p in nodes["period"].unique())


def period_position(labels: list[str], period: str | int | None) -> int:
    """The position in ``labels`` of ``period`` (a label, or an index; ``None``: the last)."""
    if not labels:
        raise InvalidSnapshotError("the statistics dataset has no periods")
    if period is None:
        return len(labels) - 1
    text = str(period).strip()
    if text in labels:
        return labels.index(text)
    try:
        index = int(text)
    except ValueError:
        shown = labels if len(labels) <= 4 else [*labels[:2], "...", *labels[-2:]]
        raise InvalidParameterError(
            f"--period {period!r} is neither a period label of this dataset nor an index; "
            f"it has {count(len(labels), 'period')}: {', '.join(shown)} (or give an index 0..{len(labels) - 1}, "
            f"or -1 for the last)"
        ) from None
    if not -len(labels) <= index < len(labels):
        raise InvalidParameterError(
            f"--period {index} is out of range: the dataset has {count(len(labels), 'period')} "
            f"(indices 0..{len(labels) - 1}, or -{len(labels)}..-1 from the end)"
        )
    return index % len(labels)


def read_period(stats_dir: str | os.PathLike[str], period: str | int | None = None) -> Snapshot:
    """The snapshot of one period of a statistics dataset (default: the last period)."""
    labels = period_labels(stats_dir)
    position = period_position(labels, period)
    for snapshot in read_snapshots(stats_dir):
        if snapshot.period == labels[position]:
            return snapshot
    raise InvalidSnapshotError(f"{stats_dir}: period {labels[position]} has no snapshot")  # pragma: no cover


def _read_stdin() -> Snapshot:
    try:
        text = read_stdin_text()
    except InputFileError as err:
        raise InvalidSnapshotError(err.rule, subject="in standard input") from None
    return snapshot_from_text(text, "in standard input")


def read_input_snapshot(source: str | os.PathLike[str], period: str | int | None = None) -> Snapshot:
    """A snapshot JSON file, ``-`` (standard input), or a period of a statistics dataset folder.

    ``period`` applies to a statistics dataset only; giving it for a single snapshot is an error
    (it would be silently meaningless).
    """
    is_stdin = str(source) == STDIN
    is_dataset = not is_stdin and Path(source).is_dir()
    if period is not None and not is_dataset:
        raise InvalidParameterError(
            f"--period {period!r} selects a period of a statistics dataset (a folder written by "
            f"'albic stats'), but {'standard input' if is_stdin else source} is a single snapshot"
        )
    if is_stdin:
        return _read_stdin()
    if is_dataset:
        return read_period(source, period)
    return read_snapshot(source)


def read_plan_for(
    plan_path: str | os.PathLike[str],
    snapshot_source: str | os.PathLike[str],
    period: str | int | None = None,
    *,
    moves: bool = True,
) -> tuple[Plan, Snapshot]:
    """A plan file and the snapshot it was made for (a file, ``-`` or a period of a statistics
    folder), checked to belong together: the plan places exactly the snapshot's key groups on its
    nodes and, with ``moves``, each move starts where the snapshot has the key group
    (:func:`albic.core.explain.check_fits`). A plan for another snapshot -- the classic slip --
    is an :class:`InvalidPlanFileError` naming both files, not an error deep in a command.
    """
    plan = read_plan(plan_path)
    snapshot = read_input_snapshot(snapshot_source, period)
    try:
        if moves:
            check_fits(plan, snapshot)
        else:  # a statistics folder's placement is a placeholder: only the key groups must agree
            ids = {kg.id for kg in snapshot.key_groups}
            problems = [
                f"the plan does not place key group {kid!r}" for kid in sorted(ids - set(plan.assignment))
            ]
            problems += [
                f"the snapshot has no key group {kid!r}" for kid in sorted(set(plan.assignment) - ids)
            ]
            if problems:
                raise InvalidSnapshotError(
                    problems[:5] + ([f"... and {len(problems) - 5} more"] if len(problems) > 5 else [])
                )
    except InvalidSnapshotError as err:
        raise InvalidPlanFileError(
            err.problems,
            subject=f"in {plan_path} for the snapshot {snapshot_source} (is it the snapshot the plan was made for?)",
        ) from None
    return plan, snapshot
