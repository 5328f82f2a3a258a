"""Estimate the migration transition matrix (MTM) from a node-count series.

SERIES is the output folder of ``albic stats`` (its ``nodes`` table gives each period's node
count), a CSV or Parquet file with a count column (``--column NAME``; default ``nodes``,
``node_count`` or ``n_nodes``; rows ordered by a ``time``/``timestamp``/``period`` column when
present), or a directory holding ``node_counts.parquet`` or ``node_counts.csv``. A series whose
counts span more than 1,000 states is refused before any work (use ``--normalise LO:HI``). Transitions n -> n' between consecutive periods
are counted and each row normalised; rows of node counts never left are filled by --unseen.

Example::

    albic mtm stats/ --first 720 --out mtm.json
    albic mtm cluster.csv --column cpu --normalise 8:16 --out mtm.json
"""

from __future__ import annotations

import argparse
from pathlib import Path

from albic.base.errors import InvalidParameterError
from albic.stats.node_counts import MAX_NODES, parse_range
from albic.stats.transitions import estimate_mtm, read_node_counts, write_mtm


def _normalise(values: list[str]) -> tuple[int, int]:

    if len(values) == 1:
        low, high = parse_range(values[0], "--normalise")
    elif len(values) == 2:
        low, high = parse_range(":".join(values), "--normalise")
    else:
        raise InvalidParameterError(f"--normalise: expected LO:HI, got {' '.join(values)!r}")
    return low, high


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "series",
        type=Path,
        metavar="SERIES",
        help="node-count series: an `albic stats` output folder, a CSV/Parquet "
        "file, or a directory with node_counts.*",
    )
    parser.add_argument(
        "--column",
        metavar="NAME",
        help="column of SERIES holding the counts (default: nodes, node_count or "
        "n_nodes); the same file and column `albic stats --node-counts "
        "FILE:COLUMN` reads",
    )
    parser.add_argument(
        "--out", type=Path, metavar="MTM.json", help="write the matrix here (default: print it)"
    )
    parser.add_argument(
        "--states",
        type=int,
        nargs=2,
        metavar=("MIN", "MAX"),
        help="node counts the matrix covers (default: the series' min..max)",
    )
    parser.add_argument(
        "--normalise",
        nargs="+",
        metavar="LO:HI",
        help="first scale the series linearly into LO..HI whole nodes (the paper's "
        "8:16), e.g. when SERIES holds loads or utilisation rather than counts",
    )
    parser.add_argument(
        "--first",
        type=int,
        metavar="PERIODS",
        help="use only the first PERIODS periods (e.g. one month of hours)",
    )
    parser.add_argument(
        "--unseen",
        choices=("stay", "uniform", "error"),
        default="stay",
        help="row of a node count never left in the series (default: stay)",
    )


def run(args: argparse.Namespace) -> int:

    normalise = _normalise(args.normalise) if args.normalise else None
    if args.states and not 1 <= args.states[0] <= args.states[1]:
        raise InvalidParameterError(f"--states {args.states[0]} {args.states[1]}: need 1 <= MIN <= MAX")
    if args.states and args.states[1] - args.states[0] + 1 > MAX_NODES:
        raise InvalidParameterError(
            f"--states {args.states[0]} {args.states[1]}: {args.states[1] - args.states[0] + 1} states "
            f"is over the limit of {MAX_NODES}"
        )
    series = read_node_counts(args.series, args.column, normalise=normalise)
    if args.first is not None:
        if not 2 <= args.first <= len(series):
            raise InvalidParameterError(
                f"--first {args.first}: must be between 2 and the series' {len(series)} periods"
            )
        series = series[: args.first]
    states = range(args.states[0], args.states[1] + 1) if args.states else None
    mtm = estimate_mtm(series, states=states, unseen=args.unseen)
    if args.out:
        write_mtm(mtm, args.out)
        print(
            f"wrote the {len(mtm.states)}x{len(mtm.states)} MTM over {len(series)} periods to "
            f"{args.out}"
            + (f"; rows never left ({args.unseen}): {mtm.unseen_rows}" if mtm.unseen_rows else "")
        )
    else:
        import json

        print(json.dumps(mtm.to_dict(), indent=2))
    return 0
