"""Write a plan in a stream processor's own terms.

    albic export flink PLAN.json [--out RANGES.json]

``flink``: each node's contiguous range of Flink key groups per operator (inclusive
``start``/``end``, as Flink's ``KeyGroupRange``), from key-group ids ``OPERATOR/NUMBER`` as
``albic stats`` writes them (with ``hash = "flink"`` in its spec the numbers are Flink's own key
groups). A plan that gives some node key groups that are not one contiguous range is refused,
naming them; the interval planners (``ssm``, ``mtm``, ``flink_default``) always give ranges.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from albic.io import atomic_write_text, dumps, read_plan
from albic.rollout.flink import flink_ranges

COMMAND = "export"
HELP = "write a plan for an engine (flink: contiguous key-group ranges per node)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(metavar="ENGINE", required=True)
    flink = sub.add_parser("flink", help="contiguous key-group ranges per node")
    flink.add_argument("plan", type=Path, metavar="PLAN.json")
    flink.add_argument(
        "--out", type=Path, metavar="RANGES.json", help="write the ranges here (default: print them as JSON)"
    )
    flink.set_defaults(run=_run_flink)


def run(args: argparse.Namespace) -> int:
    return args.run(args)


def _run_flink(args: argparse.Namespace) -> int:

    plan = read_plan(args.plan)
    ranges = flink_ranges(plan.assignment)
    document = {
        "schema": "albic.flink-ranges/1",
        "planner": plan.planner,
        "operators": {
            op: {"max_parallelism": rows[-1]["end"] + 1, "parallelism": len(rows), "ranges": rows}
            for op, rows in ranges.items()
        },
    }
    text = dumps(document) + "\n"
    if args.out is None:
        print(text, end="")
        return 0
    atomic_write_text(args.out, text)
    for op, body in document["operators"].items():
        cut = ", ".join(f"{r['node']} {r['start']}-{r['end']}" for r in body["ranges"])
        print(f"{op}: {body['parallelism']} subtasks over {body['max_parallelism']} key groups: {cut}")
    return 0
