"""Size a keyed Flink operator as stock Flink will run it.

    albic flink advise SNAPSHOT|STATS_DIR --subtask-capacity C [--period P] [--max-parallelism N] [--current P]
                       [--target-utilisation U] [--operator NAME] [--busy-time-aggregator MAX|AVG]
                       [--out ADVICE.json] [--figure ADVICE.png]

For every candidate parallelism: each subtask's load under Flink's own key-group ranges, the busiest
subtask's utilisation (its load over C, the load one subtask carries at 100 %, in the snapshot's
load unit), the imbalance, and the key groups and state that change subtask from the current
parallelism (P; default the snapshot's active nodes). Recommends the smallest parallelism whose
busiest subtask stays at or under the target U (default 0.7, as Flink's autoscaler) -- over a
statistics folder, in every period (the peak that matters; ``--period`` picks one) -- and shows beside it what Flink's
autoscaler rule would pick and whether that pick overloads a subtask. ``recommended`` is null with
the reason when no parallelism can meet the target (one key group alone over it). The snapshot's key
groups must be Flink's (``hash = "flink"`` in the ``albic stats`` spec). Prints a table; ``--out``
writes ADVICE.json (``albic export flink ADVICE.json`` writes its ranges), ``--figure`` the plot.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from albic.cli.period_options import add_period_argument
from albic.io import atomic_write_text, check_writable, dumps
from albic.io.periods import read_input_snapshot
from albic.rollout import flink

COMMAND = "flink"
HELP = "advise a keyed Flink operator's parallelism (skew-aware, Flink's ranges)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(metavar="ACTION", required=True)
    adv = sub.add_parser("advise", help="the parallelism whose busiest subtask meets the target")
    adv.add_argument("source", type=Path, metavar="SNAPSHOT|STATS_DIR")
    adv.add_argument(
        "--subtask-capacity",
        type=float,
        required=True,
        metavar="C",
        help="the load one subtask carries at 100 %% (the snapshot's load unit)",
    )
    adv.add_argument(
        "--max-parallelism",
        type=int,
        metavar="N",
        help="the job's maximum parallelism (default: the statistics', else Flink's default)",
    )
    add_period_argument(adv, "one period to advise on (default: every period; the peak decides)")
    adv.add_argument(
        "--current", type=int, metavar="P", help="the current parallelism (default: active nodes)"
    )
    adv.add_argument(
        "--target-utilisation",
        type=float,
        default=flink.DEFAULT_TARGET_UTILISATION,
        metavar="U",
        help="the busiest subtask's target utilisation (default 0.7)",
    )
    adv.add_argument("--operator", metavar="NAME", help="the operator (default: the only one)")
    adv.add_argument(
        "--busy-time-aggregator",
        choices=["MAX", "AVG"],
        default="MAX",
        help="the autoscaler's busy-time aggregation (default MAX, as Flink's)",
    )
    adv.add_argument("--out", type=Path, metavar="ADVICE.json", help="write the advice here")
    adv.add_argument("--figure", type=Path, metavar="ADVICE.png", help="write the figure here")
    adv.set_defaults(run=_run_advise)


def run(args: argparse.Namespace) -> int:
    return args.run(args)


def _run_advise(args: argparse.Namespace) -> int:
    for path in (args.out, args.figure):
        if path is not None:
            check_writable(path)
    source = args.source if args.period is None else read_input_snapshot(args.source, args.period)
    advice = flink.advise(
        source,
        subtask_capacity=args.subtask_capacity,
        max_parallelism=args.max_parallelism,
        current=args.current,
        target_utilisation=args.target_utilisation,
        operator=args.operator,
        busy_time_aggregator=args.busy_time_aggregator,
    )
    if args.figure is not None:
        flink.plot_advice(advice, args.figure)
    if args.out is not None:
        atomic_write_text(args.out, dumps(advice) + "\n")
    print(flink.advice_table(advice))
    return 0
