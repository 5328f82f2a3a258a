"""Print the JSON Schema of albic's snapshot or plan files.

    albic schema snapshot|plan

``albic.snapshot/1`` and ``albic.plan/1`` as JSON Schema 2020-12, so that another tool can check a
file before handing it to albic (e.g. ``albic schema plan > plan.schema.json`` and any JSON Schema
validator). The schema says the structure, types and ranges; albic's own reader also checks the
rules between fields and names every problem.
"""

from __future__ import annotations

import argparse

from albic.base.stdio import write_stdout
from albic.io.schemas import SCHEMAS, schema_text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", choices=list(SCHEMAS), metavar="snapshot|plan", help="which file format")


def run(args: argparse.Namespace) -> int:
    write_stdout(schema_text(args.name))
    return 0
