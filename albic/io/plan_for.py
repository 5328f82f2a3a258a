"""A plan file and the snapshot it was made for, read together and checked to be that snapshot.

Every command that takes a plan and a snapshot or statistics folder (``albic explain``, ``plot``,
``schedule``, ``export flink``, ``kafka export``) reads them with :func:`read_plan_for`. A plan
records what it was made from (``made_from``: :meth:`albic.core.plan.Plan.made_from_record`):

- ``period``: with a statistics folder and no ``--period``, the plan's own period is used (not
  the folder's last one); a ``--period`` that names another is refused;
- ``snapshot``: the digest of the snapshot (:meth:`albic.core.model.Snapshot.digest`); a snapshot
  file or period whose content differs (another trace, node-count rule, placement, an edited
  file) is refused;
- ``statistics``: for a plan ``albic plan`` made from a statistics folder, the folder's identity
  (:func:`albic.io.datasets.statistics_identity`); another folder is refused even where its period
  happens to hold the same snapshot.

A refusal is one :class:`~albic.base.errors.NotMadeForError` line naming both files; ``force``
turns it into a warning (the command then says its figures are for the snapshot given). A plan file
without the record (written before albic kept it) is read as before, with a warning that nothing
checks it.

Example
-------
>>> plan, snapshot = read_plan_for("plan.json", "out/stats")   # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from albic.base.errors import InvalidPlanFileError, InvalidSnapshotError, NotMadeForError
from albic.core.explain import check_fits
from albic.core.model import Snapshot
from albic.core.plan import Plan
from albic.io import read_plan
from albic.io.datasets import statistics_identity
from albic.io.periods import STDIN, period_labels, read_input_snapshot

__all__ = ["read_plan_for", "FORCE_HELP"]

#: ``--force``'s help, the same on every command that takes a plan and its snapshot.
FORCE_HELP = (
    "use the snapshot or period given even if it is not the one the plan was made for (the plan "
    "records its period and a digest of its snapshot); the output then says so"
)


def read_plan_for(
    plan_path: str | os.PathLike[str],
    snapshot_source: str | os.PathLike[str],
    period: str | int | None = None,
    *,
    moves: bool = True,
    force: bool = False,
) -> tuple[Plan, Snapshot]:
    """A plan file and the snapshot it was made for (a file, ``-`` or a period of a statistics
    folder: by default the plan's own period), checked to be that snapshot (module docstring) and
    to fit it: the plan places exactly the snapshot's key groups on its nodes and, with ``moves``,
    each move starts where the snapshot has the key group (:func:`albic.core.explain.check_fits`).

    Statistics are placement-free, so a period of a statistics folder gets the placement the plan
    was made from, which the plan records (:attr:`~albic.core.plan.Plan.previous_assignment`): a
    plan made with ``--current`` needs no ``--current`` again.
    """
    plan = read_plan(plan_path)
    record = plan.made_from
    folder = str(snapshot_source) != STDIN and Path(snapshot_source).is_dir()
    where = f"{snapshot_source}" + (" period {}" if folder else "")
    forced = False
    if folder:
        period, forced = _chosen_period(plan_path, snapshot_source, period, record or {}, force)
    snapshot = read_input_snapshot(snapshot_source, period)
    if folder:
        snapshot = snapshot.with_placement(plan.previous_assignment)
    mismatch = None if forced else _mismatch(record or {}, snapshot, snapshot_source if folder else None)
    if mismatch:
        made_for, instead = mismatch
        forced = _refuse(
            f"{plan_path} was made for {made_for}, but {where.format(snapshot.period)} {instead}", force
        )
    if forced:  # said once; from here on it is a plan without a record
        plan = dataclasses.replace(plan, made_from=None)
    try:
        if moves:
            check_fits(plan, snapshot)
        else:
            _check_same_key_groups(plan, snapshot)
    except InvalidSnapshotError as err:
        raise InvalidPlanFileError(
            err.problems,
            subject=f"in {plan_path} for the snapshot {snapshot_source} (is it the snapshot the plan was made for?)",
        ) from None
    if record is None:  # said last: a refusal above stays one line
        warnings.warn(
            f"{plan_path} does not record the snapshot it was made for (it was written before "
            f"albic recorded it): nothing checks that {snapshot_source} is that snapshot",
            stacklevel=2,
        )
    return plan, snapshot


def _chosen_period(
    plan_path: Any, folder: Any, period: str | int | None, record: Mapping[str, Any], force: bool
) -> tuple[str | int | None, bool]:
    """The period of the statistics folder to read: ``period`` if given, else the plan's own; a
    given one that is not the plan's, or a plan's period the folder lacks, is refused (or, with
    ``force``, read after a warning: the second value says so)."""
    made_for = record.get("period")
    if made_for is None:
        return period, False
    made_for = str(made_for)
    labels = period_labels(folder)
    if period is None:
        if made_for in labels:
            return made_for, False
        return None, _refuse(
            f"{plan_path} was made for period {made_for}, which {folder} does not have (its "
            f"periods run {labels[0]} .. {labels[-1]}): it is not the statistics the plan was made "
            "from",
            force,
        )
    given = _label_of(labels, period)
    if given != made_for:
        return period, _refuse(
            f"{plan_path} was made for period {made_for}, but parameter period {period} is {given} of "
            f"{folder}: the plan's figures would be another period's",
            force,
            remedy="leave out parameter period to use the plan's own",
        )
    return period, False


def _label_of(labels: list[str], period: str | int) -> str:
    """The label ``--period`` names (a label, or an index as :func:`period_position` reads it)."""
    text = str(period).strip()
    if text in labels:
        return text
    try:
        return labels[int(text)]
    except (ValueError, IndexError):
        return text  # read_input_snapshot says what is wrong with it


def _mismatch(
    record: Mapping[str, Any], snapshot: Snapshot, folder: str | os.PathLike[str] | None
) -> tuple[str, str] | None:
    """What the plan was made for and what the snapshot at hand is instead, or None if they agree."""
    made_for = record.get("period")
    if made_for is not None and snapshot.period is not None and str(made_for) != str(snapshot.period):
        return f"period {made_for}", f"is period {snapshot.period}"
    statistics = record.get("statistics")
    if folder is not None and statistics is not None:
        here = statistics_identity(folder)
        if here != statistics:
            return (
                f"other statistics (dataset {_short(statistics)})",
                f"is dataset {_short(here)}: another node-count rule, period length, topology or trace",
            )
    digest = record.get("snapshot")
    if digest is not None and digest != snapshot.digest():
        return (
            f"another snapshot (digest {_short(digest)})",
            f"is {_short(snapshot.digest())}: other loads, nodes, state sizes or placement (another "
            "trace or node-count rule, or an edited file)",
        )
    return None


def _short(digest: str) -> str:
    return digest.removeprefix("sha256:")[:12]


def _refuse(message: str, force: bool, remedy: str = "give the one it was made for") -> bool:
    """Refuse, or with ``force`` warn and return True."""
    if not force:
        raise NotMadeForError(f"{message}; {remedy}, or set parameter force to use this one")
    warnings.warn(f"parameter force: {message}; the figures below are for the snapshot given", stacklevel=3)
    return True


def _check_same_key_groups(plan: Plan, snapshot: Snapshot) -> None:
    ids = {kg.id for kg in snapshot.key_groups}
    problems = [f"the plan does not place key group {kid!r}" for kid in sorted(ids - set(plan.assignment))]
    problems += [f"the snapshot has no key group {kid!r}" for kid in sorted(set(plan.assignment) - ids)]
    if problems:
        raise InvalidSnapshotError(
            problems[:5] + ([f"... and {len(problems) - 5} more"] if len(problems) > 5 else [])
        )
