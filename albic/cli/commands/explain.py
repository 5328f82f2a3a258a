"""Explain a plan: each goal before and after, why each move, and warnings.

    albic explain PLAN.json --snapshot SNAPSHOT|STATS_DIR [--period P] [--max-moves N]
                  [--max-migration-cost C] [--time-limit S] [--bandwidth BYTES_PER_S] [--json]

A plan file does not carry its snapshot, so ``--snapshot`` names the snapshot it was made for. A
statistics folder with ``--period`` (the period it was made for; default the last) serves too:
the plan records where its key groups were, so the placement it was made from (``albic plan
--current``) comes from the plan itself. The budgets and the time limit are read from the plan
(albic records them); the options give them for plans that lack them (one that contradicts the
plan's record, or a negative budget, is refused). ``--bandwidth`` adds what carrying the plan out
pauses: its migration seconds over links of that bandwidth and the tuples buffered meanwhile at the
snapshot's loads (albic/evaluation/stream.py).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from albic.cli.period_options import add_made_for_arguments
from albic.core.explain import explain, explain_text
from albic.evaluation.stream import plan_migration
from albic.io import dumps
from albic.io.plan_for import read_plan_for


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("plan", type=Path, metavar="PLAN.json")
    add_made_for_arguments(parser, required=True)
    limits = "for a plan that does not record it (albic's plans record theirs, which win)"
    parser.add_argument("--max-moves", type=int, metavar="N", help=f"the move budget, {limits}")
    parser.add_argument(
        "--max-migration-cost", type=float, metavar="C", help=f"the state budget in bytes, {limits}"
    )
    parser.add_argument("--time-limit", type=float, metavar="S", help=f"the time limit in seconds, {limits}")
    parser.add_argument(
        "--bandwidth",
        type=float,
        metavar="BYTES_PER_S",
        help="also say how long moving the state takes over links of this bandwidth, and the "
        "tuples buffered meanwhile",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")


def run(args: argparse.Namespace) -> int:

    plan, snapshot = read_plan_for(args.plan, args.snapshot, args.period, force=args.force)
    report = explain(
        plan,
        snapshot,
        max_moves=args.max_moves,
        max_migration_cost=args.max_migration_cost,
        time_limit=args.time_limit,
    )
    if args.bandwidth is not None:
        report["stream"] = plan_migration(snapshot, plan.assignment, args.bandwidth)
    text = explain_text(report)
    if args.bandwidth is not None:
        stream = report["stream"]
        text += (
            f"\nmigration: {stream['migration_seconds']:.6g} s over links of {args.bandwidth:g} bytes/s, "
            f"{stream['buffered_tuples']:.6g} tuples buffered meanwhile"
        )
    print(dumps(report) if args.json else text)
    return 0
