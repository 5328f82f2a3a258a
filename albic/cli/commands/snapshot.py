"""Write one period of a statistics folder as a snapshot file.

    albic snapshot STATS_DIR [--period P] [--current PLAN_OR_MAP] [--out SNAPSHOT.json]

The snapshot holds the period's nodes, key groups (loads, state sizes, rates), traffic and
operators, placed as ``albic plan`` would plan them: the statistics' default placement (stock
Flink's split for statistics made with Flink's hash, else Storm's default split) or ``--current``.
Every command that takes a snapshot file takes it (``albic plan``, ``explain``, ``schedule``,
``plot``, ``fuse``, ``flink advise``), and so does any tool that reads schema ``albic.snapshot/1``.
Without ``--out`` the JSON goes to standard output.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from albic.base.errors import UsageError
from albic.base.formats import count
from albic.base.stdio import write_stdout
from albic.cli.period_options import add_current_argument, add_period_argument
from albic.io import check_writable, dumps, snapshot_to_dict, write_snapshot
from albic.io.periods import period_labels, read_input_snapshot

COMMAND = "snapshot"
HELP = "write one period of a statistics folder as a snapshot file"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("stats", type=Path, metavar="STATS_DIR", help="a folder written by 'albic stats'")
    add_period_argument(parser, "the period to write")
    add_current_argument(parser)
    parser.add_argument(
        "--out", type=Path, metavar="SNAPSHOT.json", help="write it here (default: print the JSON)"
    )


def run(args: argparse.Namespace) -> int:
    if args.stats.is_file():
        raise UsageError(
            f"{args.stats} is a file, not a statistics folder ('albic stats' writes one); a "
            "snapshot file is already what this command writes"
        )
    if args.out is not None:
        check_writable(args.out)
    period_labels(args.stats)  # names a missing, special or looping folder as every command does
    snapshot = read_input_snapshot(args.stats, args.period, args.current)
    if args.out is None:
        write_stdout(dumps(snapshot_to_dict(snapshot)) + "\n")
        return 0
    write_snapshot(snapshot, args.out)
    empty = sum(1 for kg in snapshot.key_groups if kg.load == 0 and kg.state_size == 0)
    print(
        f"period {snapshot.period}: {count(len(snapshot.nodes), 'node')}, "
        f"{count(len(snapshot.key_groups), 'key group')} ({empty:,} without events) -> {args.out}"
    )
    return 0
