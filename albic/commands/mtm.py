"""Estimate the migration transition matrix (MTM) from a node-count series.

SERIES is the output folder of ``albic stats`` (its ``nodes`` table gives each period's node
count), a CSV or Parquet file with a ``nodes`` column (or ``node_count`` / ``n_nodes``; rows
ordered by ``period`` when present), or a directory holding ``node_counts.parquet`` or
``node_counts.csv``. Transitions n -> n' between consecutive periods
are counted and each row normalised; rows of node counts never left are filled by --unseen.

Example::

    albic mtm stats/ --normalise 8 16 --first 720 --out mtm.json
"""
from __future__ import annotations

import argparse
from pathlib import Path

COMMAND = "mtm"
HELP = "estimate the migration transition matrix from a node-count series"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("series", type=Path, metavar="SERIES",
                        help="node-count series: CSV/Parquet file, or a directory with node_counts.*")
    parser.add_argument("--out", type=Path, metavar="MTM.json",
                        help="write the matrix here (default: print it)")
    parser.add_argument("--states", type=int, nargs=2, metavar=("MIN", "MAX"),
                        help="node counts the matrix covers (default: the series' min..max)")
    parser.add_argument("--normalise", type=int, nargs=2, metavar=("LOW", "HIGH"),
                        help="first scale the series linearly into [LOW, HIGH] nodes (the paper's "
                             "[8, 16]), e.g. when SERIES holds loads rather than node counts")
    parser.add_argument("--first", type=int, metavar="PERIODS",
                        help="use only the first PERIODS periods (e.g. one month of hours)")
    parser.add_argument("--unseen", choices=("stay", "uniform", "error"), default="stay",
                        help="row of a node count never left in the series (default: stay)")


def run(args: argparse.Namespace) -> int:
    from albic.errors import InvalidParameterError
    from albic.mtm import estimate_mtm, normalise_node_counts, read_node_counts, write_mtm

    series = read_node_counts(args.series)
    if args.normalise:
        series = normalise_node_counts(series, *args.normalise)
    if args.first is not None:
        if args.first < 2:
            raise InvalidParameterError(f"--first needs at least 2 periods, got {args.first}")
        series = series[: args.first]
    states = range(args.states[0], args.states[1] + 1) if args.states else None
    mtm = estimate_mtm(series, states=states, unseen=args.unseen)
    if args.out:
        write_mtm(mtm, args.out)
        print(f"wrote the {len(mtm.states)}x{len(mtm.states)} MTM over {len(series)} periods to "
              f"{args.out}" + (f"; rows never left ({args.unseen}): {mtm.unseen_rows}" if mtm.unseen_rows else ""))
    else:
        import json

        print(json.dumps(mtm.to_dict(), indent=2))
    return 0
