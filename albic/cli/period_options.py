"""The options every command that reads a statistics folder shares: ``--period P`` (which period)
and, on those that plan from it, ``--current PLAN_OR_MAP`` (where the key groups are now).

Example
-------
>>> import argparse
>>> parser = argparse.ArgumentParser()
>>> add_period_argument(parser, "the period the plan was made for")
>>> parser.parse_args(["--period", "-2"]).period
'-2'
"""

from __future__ import annotations

import argparse
from pathlib import Path

from albic.io.periods import CURRENT_HELP
from albic.io.plan_for import FORCE_HELP

__all__ = ["add_period_argument", "add_current_argument", "add_made_for_arguments"]


def add_period_argument(
    parser: argparse.ArgumentParser, what: str = "the period", default: str = "the last"
) -> None:
    """``--period P``: a period of a statistics folder, by label or index."""
    parser.add_argument(
        "--period",
        metavar="P",
        help=f"with a statistics folder: {what}, a label (2013-11-24T17:00) or an index "
        f"(0 first, -1 last; default {default})",
    )


def add_made_for_arguments(
    parser: argparse.ArgumentParser, *, required: bool, snapshot_help: str = ""
) -> None:
    """``--snapshot SNAPSHOT|STATS_DIR``, ``--period P`` and ``--force``: the snapshot a plan was
    made for, as every command that reads a plan with its snapshot takes it
    (:func:`albic.io.plan_for.read_plan_for`)."""
    parser.add_argument(
        "--snapshot",
        type=Path,
        required=required,
        metavar="SNAPSHOT|STATS_DIR",
        help="the snapshot file or statistics folder the plan was made for" + snapshot_help,
    )
    add_period_argument(parser, "the period the plan was made for", "the plan's own")
    parser.add_argument("--force", action="store_true", help=FORCE_HELP)


def add_current_argument(parser: argparse.ArgumentParser, what: str = "") -> None:
    """``--current PLAN_OR_MAP``: the placement a statistics period starts from."""
    parser.add_argument(
        "--current",
        metavar="PLAN_OR_MAP",
        help=(what + CURRENT_HELP).replace("%", "%%"),
    )
