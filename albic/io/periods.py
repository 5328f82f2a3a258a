"""One snapshot from what a user has at hand: a snapshot JSON file, standard input, or one period
of a statistics dataset (the folder ``albic stats`` writes).

:func:`read_input_snapshot` is what ``albic plan`` reads. For a statistics dataset the period is
chosen by its label (``2013-11-24T17:00``) or by its index in time order (``0`` is the first, ``-1``
the last; a negative index counts from the end, as in Python); the default is the last period. A
label is tried first, so a label that looks like a number still wins over an index. The snapshot's
placement is the dataset's default (each operator's key groups split consecutively over the
period's nodes, as stock Flink does for statistics made with Flink's hash, else as Storm's default
does: :func:`albic.io.datasets.default_placement`), or the user's (``--current``:
:func:`read_placement`).

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
    InvalidSnapshotError,
)
from albic.base.formats import count
from albic.core.model import Snapshot
from albic.io import PLAN_SCHEMA, SNAPSHOT_SCHEMA, read_plan, read_snapshot, read_snapshots
from albic.io.datasets import MANIFEST, default_placement
from albic.io.documents import snapshot_from_text
from albic.io.reader import check_input_folder, read_input_json, read_stdin_text

__all__ = [
    "STDIN",
    "CURRENT_SPLITS",
    "CURRENT_HELP",
    "period_labels",
    "period_position",
    "read_period",
    "read_placement",
    "read_input_snapshot",
]

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
            f"parameter period {period!r} is neither a period label of this dataset nor an index; "
            f"it has {count(len(labels), 'period')}: {', '.join(shown)} (or give an index 0..{len(labels) - 1}, "
            f"or -1 for the last)"
        ) from None
    if not -len(labels) <= index < len(labels):
        raise InvalidParameterError(
            f"parameter period {index} is out of range: the dataset has {count(len(labels), 'period')} "
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


#: What ``--current`` takes besides a file: an engine's own split at the period's node count.
CURRENT_SPLITS = {"storm": False, "flink": True}
#: ``--current``'s help, the same on every command that takes it.
CURRENT_HELP = (
    "with a statistics folder: where the key groups are now: a plan file (its assignment), a JSON "
    "object {key group: node}, or storm / flink (that engine's even split); nodes the period does "
    "not have become removing nodes. Default: stock Flink's own split at the period's node count "
    'for statistics made with hash = "flink", else Storm\'s default split'
)


def read_placement(source: str | os.PathLike[str], snapshot: Snapshot) -> dict[str, str]:
    """The placement ``--current`` names for ``snapshot`` (a period of a statistics folder): a
    plan file's assignment, a snapshot file's, a JSON object ``{key group: node}``, or ``storm`` /
    ``flink`` (:data:`CURRENT_SPLITS`). It must place every key group of the period and no other."""
    text = str(source)
    if text in CURRENT_SPLITS:
        return default_placement(snapshot, flink=CURRENT_SPLITS[text])
    data = read_input_json(source, "placement file (parameter current)")
    schema = data.get("schema") if isinstance(data, dict) else None
    if schema == PLAN_SCHEMA:
        placement = dict(read_plan(source).assignment)
    elif schema == SNAPSHOT_SCHEMA:
        placement = dict(read_snapshot(source).assignment)
    elif isinstance(data, dict) and all(isinstance(v, str) for v in data.values()):
        placement = dict(data)
    else:
        raise InvalidParameterError(
            f"parameter current {text}: neither a plan file, a snapshot file, nor a JSON object "
            "{key group: node}, nor storm or flink"
        )
    return _checked_placement(text, placement, snapshot)


def _checked_placement(source: str, placement: dict[str, str], snapshot: Snapshot) -> dict[str, str]:
    ids = [kg.id for kg in snapshot.key_groups]
    missing = [kid for kid in ids if kid not in placement]
    unknown = sorted(set(placement) - set(ids))
    for names, what in ((missing, "does not place"), (unknown, "places key groups the period lacks:")):
        if names:
            shown = ", ".join(names[:3]) + (f", ... ({len(names)} in all)" if len(names) > 3 else "")
            raise InvalidParameterError(
                f"parameter current {source} {what} {shown}; it must place every key group of period "
                f"{snapshot.period} ({count(len(ids), 'key group')}) and no other"
            )
    return placement


def _read_stdin() -> Snapshot:
    try:
        text = read_stdin_text()
    except InputFileError as err:
        raise InvalidSnapshotError(err.rule, subject="in standard input") from None
    return snapshot_from_text(text, "in standard input")


def read_input_snapshot(
    source: str | os.PathLike[str],
    period: str | int | None = None,
    current: str | os.PathLike[str] | None = None,
) -> Snapshot:
    """A snapshot JSON file, ``-`` (standard input), or a period of a statistics dataset folder.

    ``period`` and ``current`` (the placement: :func:`read_placement`; by default the dataset's
    own, :func:`albic.io.datasets.default_placement`) apply to a statistics dataset only; giving
    them for a single snapshot is an error (it would be silently meaningless: a snapshot file has
    its period and placement).
    """
    is_stdin = str(source) == STDIN
    is_dataset = not is_stdin and Path(source).is_dir()
    for option, value in (("parameter period", period), ("parameter current", current)):
        if value is not None and not is_dataset:
            raise InvalidParameterError(
                f"{option} {str(value)!r} applies to a statistics dataset (a folder written by "
                f"'albic stats'), but {'standard input' if is_stdin else source} is a single "
                "snapshot, with its own period and placement"
            )
    if is_stdin:
        return _read_stdin()
    if is_dataset:
        snapshot = read_period(source, period)
        if current is None:
            return snapshot
        return snapshot.with_placement(read_placement(current, snapshot)).validate()
    return read_snapshot(source)
