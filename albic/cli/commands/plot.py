"""Draw one plan: node utilisation before and after, the mean and the target band, the moves.

    albic plot PLAN.json [--snapshot SNAPSHOT|STATS_DIR [--period P]] --out FIG.png [--band PCT]

The figure (albic.core.figure) has two bars per node (before the plan grey, after it blue; orange
above the target band, red on a node being removed), the mean utilisation and the target band
(mean +- PCT% of the mean: --band, else the planner's max_load_distance, else 10), an arrow per
pair of nodes that exchange key groups, the list of moves with their reasons and the warnings of
'albic explain'; the title says the moves, the state moved and the budget used. A plan file does
not carry its snapshot: without --snapshot the bars count key groups per node. The file type
follows --out's suffix (.png, .pdf, .svg, ...). Needs albic's extra 'plot' (matplotlib).
"""

from __future__ import annotations

import argparse
import io
from pathlib import Path

from albic.base.errors import UsageError
from albic.base.extras import need, require
from albic.base.files import atomic_write_bytes
from albic.cli.period_options import add_made_for_arguments
from albic.core.figure import plan_figure
from albic.io import check_writable, read_plan
from albic.io.plan_for import read_plan_for


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("plan", type=Path, metavar="PLAN.json")
    add_made_for_arguments(parser, required=False, snapshot_help=" (without it: key groups per node)")
    parser.add_argument(
        "--out",
        type=Path,
        required=True,
        metavar="FIG.png",
        help="the figure file; its suffix picks the type (.png, .pdf, .svg)",
    )
    parser.add_argument(
        "--band",
        type=float,
        metavar="PCT",
        help="half the target band around the mean, in percent of the mean "
        "(default: the plan's max_load_distance, else 10)",
    )


def run(args: argparse.Namespace) -> int:
    # Installed is checked first, imported last: matplotlib's import takes a second, and a bad
    # input file is refused before it: every command answers bad input within a second.
    need("matplotlib", "'albic plot'")
    if args.band is not None and not 0 <= args.band < 1e6:
        raise UsageError(f"--band {args.band:g}: must be a percentage of the mean >= 0")
    try:
        check_writable(args.out)
    except OSError as err:
        raise UsageError(f"cannot write the figure to {args.out}: {err.strerror}") from None
    if args.period is not None and args.snapshot is None:
        raise UsageError(
            "--period picks a period of the statistics folder given with --snapshot; give --snapshot too"
        )
    if args.snapshot is not None:
        plan, snapshot = read_plan_for(args.plan, args.snapshot, args.period, force=args.force)
    else:
        plan, snapshot = read_plan(args.plan), None
    kind = args.out.suffix.lower().lstrip(".")
    types = require("matplotlib.figure", "'albic plot'").Figure().canvas.get_supported_filetypes()
    if kind not in types:
        raise UsageError(
            f"--out {args.out}: matplotlib cannot write {args.out.suffix or 'files without a suffix'!r}"
            f"; give one of .{', .'.join(sorted(types))}"
        )
    figure = plan_figure(plan, snapshot, band=args.band)
    buffer = io.BytesIO()
    figure.savefig(buffer, format=kind, dpi=110)
    atomic_write_bytes(args.out, buffer.getvalue())
    print(f"wrote {args.out}")
    return 0
