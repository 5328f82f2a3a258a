"""The options every Spark command shares: ``--master URL`` and ``--conf KEY=VALUE`` (repeatable),
passed to the Spark session as spark-submit's ``--conf`` would be; and sizes given on the command
line (``--max-input-size``, ``--memory-budget``).

Example
-------
>>> spark_settings(["spark.executor.memory=2g", "spark.task.maxFailures = 4"])
{'spark.executor.memory': '2g', 'spark.task.maxFailures': '4'}
"""

from __future__ import annotations

import argparse

from albic.base.errors import UsageError
from albic.io.reader import parse_size

__all__ = ["add_conf_argument", "spark_settings", "size_argument"]


def add_conf_argument(parser: argparse.ArgumentParser) -> None:
    """``--conf KEY=VALUE``, repeatable: any Spark setting for the command's session."""
    parser.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark setting for the session, as spark-submit's --conf (repeatable), "
        "e.g. --conf spark.executor.memory=4g",
    )


def spark_settings(pairs: list[str]) -> dict[str, str]:
    """``--conf KEY=VALUE`` options as Spark settings."""
    settings: dict[str, str] = {}
    for pair in pairs:
        key, equals, value = pair.partition("=")
        if not equals or not key.strip():
            raise UsageError(f"--conf {pair!r}: expected KEY=VALUE, e.g. spark.task.maxFailures=4")
        settings[key.strip()] = value.strip()
    return settings


def size_argument(text: str) -> int:
    """An argparse type: a size in bytes (``2G``, ``512m``, ``1000``), else the reason in one line."""
    try:
        return parse_size(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
