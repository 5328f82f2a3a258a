"""Order a plan's moves into throttled batches (see albic.rollout.schedule for the rules).

    albic schedule PLAN.json --snapshot SNAPSHOT|STATS_DIR [--period P] [--max-per-node K]
                   [--bandwidth BYTES/S] [--json] [--out SCHEDULE.json]

A plan file does not carry its snapshot (loads, capacities, removing nodes), so ``--snapshot``
names the snapshot it was made for. A statistics folder with ``--period`` (the period it was made
for; default the last) serves too: the plan records where its key groups were, so the placement it
was made from (``albic plan --current``) comes from the plan itself. Prints a table (or, with
``--json``, the JSON); ``--out`` also writes the JSON.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from albic.cli.period_options import add_made_for_arguments
from albic.io import atomic_write_text, check_writable, dumps
from albic.io.plan_for import read_plan_for
from albic.rollout.schedule import DEFAULT_MAX_PER_NODE, schedule, schedule_table


def add_arguments(parser: argparse.ArgumentParser) -> None:

    parser.add_argument("plan", type=Path, metavar="PLAN.json")
    add_made_for_arguments(parser, required=True)
    parser.add_argument(
        "--max-per-node",
        type=int,
        default=DEFAULT_MAX_PER_NODE,
        metavar="K",
        help=f"moves a node may send or receive at once (default {DEFAULT_MAX_PER_NODE})",
    )
    parser.add_argument(
        "--bandwidth",
        type=float,
        metavar="BYTES/S",
        help="transfer rate per node, to estimate each batch's duration",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--out", type=Path, metavar="SCHEDULE.json", help="also write the JSON here")


def run(args: argparse.Namespace) -> int:

    if args.out is not None:
        check_writable(args.out)
    plan, snapshot = read_plan_for(args.plan, args.snapshot, args.period, force=args.force)
    result = schedule(
        plan,
        snapshot,
        max_per_node=args.max_per_node,
        bandwidth=args.bandwidth,
    )
    if args.out is not None:
        atomic_write_text(args.out, dumps(result) + "\n")
    print(dumps(result) if args.json else schedule_table(result))
    return 0
