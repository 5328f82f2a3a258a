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

from albic.io.periods import CURRENT_HELP

__all__ = ["add_period_argument", "add_current_argument"]


def add_period_argument(parser: argparse.ArgumentParser, what: str = "the period") -> None:
    """``--period P``: a period of a statistics folder, by label or index."""
    parser.add_argument(
        "--period",
        metavar="P",
        help=f"with a statistics folder: {what}, a label (2013-11-24T17:00) or an index "
        "(0 first, -1 last; default the last)",
    )


def add_current_argument(parser: argparse.ArgumentParser, what: str = "") -> None:
    """``--current PLAN_OR_MAP``: the placement a statistics period starts from."""
    parser.add_argument(
        "--current",
        metavar="PLAN_OR_MAP",
        help=(what + CURRENT_HELP).replace("%", "%%"),
    )
