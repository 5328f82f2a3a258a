"""Size a keyed Flink operator as stock Flink will run it, read a running job, check the
prediction against it and apply the advice.

    albic flink status --rest URL [--job ID] [--json]
    albic flink check --rest URL --job ID --vertex NAME STATS_DIR|SNAPSHOT [--operator NAME]
                      [--tolerance POINTS] [--json]
    albic flink rescale --rest URL --job ID (--parallelism P | --advice ADVICE.json) [--vertex NAME]
                        [--via auto|adaptive|savepoint] [--jar JAR_ID [--entry-class CLASS]
                        [--program-args ARGS]] [--savepoint-dir URI] [--wait SECONDS] [--dry-run] [--json]
    albic flink advise SNAPSHOT|STATS_DIR --subtask-capacity C [--period P] [--max-parallelism N] [--current P]
                       [--target-utilisation U] [--operator NAME] [--busy-time-aggregator MAX|AVG]
                       [--out ADVICE.json] [--figure ADVICE.png]

For every candidate parallelism: each subtask's load under Flink's own key-group ranges, the busiest
subtask's utilisation (its load over C, the load one subtask carries at 100 %, in the snapshot's
load unit), the imbalance, and the key groups and state that change subtask from the current
parallelism (P; default the snapshot's active nodes). Recommends the smallest parallelism whose
busiest subtask stays at or under the target U (by default Flink's autoscaler's) -- over a
statistics folder, in every period (the peak that matters; ``--period`` picks one) -- and shows beside it what Flink's
autoscaler rule would pick and whether that pick overloads a subtask. ``recommended`` is null with
the reason when no parallelism can meet the target (one key group alone over it). The snapshot's key
groups must be Flink's (``hash = "flink"`` in the ``albic stats`` spec). Prints a table; ``--out``
writes ADVICE.json (``albic export flink ADVICE.json`` writes its ranges), ``--figure`` the plot.

``status``, ``check`` and ``rescale`` talk to a running Flink through its REST API
(:mod:`albic.rollout.flink_rest`, :mod:`albic.rollout.flink_check`, :mod:`albic.rollout.flink_rescale`):
``status`` prints each vertex's parallelism, maximum parallelism and per-subtask records in and busy
time; ``check`` puts albic's predicted share of each subtask beside the measured share of records in
and exits 1 when the largest difference is beyond the tolerance (percentage points);
``rescale`` sets the keyed vertices' parallelism through the adaptive scheduler or a savepoint and
waits until the job runs at it.
"""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from albic.cli.period_options import add_period_argument
from albic.io import atomic_write_text, check_writable, dumps
from albic.io.periods import read_input_snapshot
from albic.rollout import flink, flink_check, flink_rescale, flink_rest


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
        default=flink.AUTOSCALER_TARGET_UTILISATION,
        metavar="U",
        help="the busiest subtask's target utilisation "
        f"(default {flink.AUTOSCALER_TARGET_UTILISATION:g}, Flink's autoscaler's)",
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
    _add_status(sub)
    _add_check(sub)
    _add_rescale(sub)


def _rest_arguments(parser: argparse.ArgumentParser, *, job_required: bool) -> None:
    parser.add_argument(
        "--rest", required=True, metavar="URL", help="Flink's REST API, e.g. http://localhost:8081"
    )
    parser.add_argument(
        "--job",
        required=job_required,
        metavar="ID",
        help="the job id" + ("" if job_required else " (default: the only running job)"),
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")


def _add_status(sub: argparse._SubParsersAction) -> None:
    status = sub.add_parser(
        "status", help="a running job's vertices and per-subtask records in and busy time"
    )
    _rest_arguments(status, job_required=False)
    status.set_defaults(run=_run_status)


def _add_check(sub: argparse._SubParsersAction) -> None:
    check = sub.add_parser(
        "check", help="albic's predicted share of each subtask beside Flink's measured one"
    )
    _rest_arguments(check, job_required=True)
    check.add_argument(
        "--vertex",
        required=True,
        metavar="NAME",
        help="the vertex: its name, a chained operator's name or its id",
    )
    check.add_argument("source", type=Path, metavar="STATS_DIR|SNAPSHOT")
    check.add_argument(
        "--operator", metavar="NAME", help="the statistics' operator (default: the one the vertex names)"
    )
    check.add_argument(
        "--tolerance",
        type=float,
        default=flink_check.DEFAULT_TOLERANCE,
        metavar="POINTS",
        help="the largest difference of shares, in percentage points, that passes "
        f"(default {flink_check.DEFAULT_TOLERANCE:g})",
    )
    check.set_defaults(run=_run_check)


def _add_rescale(sub: argparse._SubParsersAction) -> None:
    res = sub.add_parser("rescale", help="set a running job's keyed parallelism and wait until it runs at it")
    _rest_arguments(res, job_required=True)
    target = res.add_mutually_exclusive_group(required=True)
    target.add_argument("--parallelism", type=int, metavar="P", help="the new parallelism")
    target.add_argument("--advice", type=Path, metavar="ADVICE.json", help="take its recommended parallelism")
    res.add_argument(
        "--vertex", metavar="NAME", help="rescale this vertex only (default: every keyed vertex)"
    )
    res.add_argument(
        "--via",
        choices=flink_rescale.VIA,
        default="auto",
        help="adaptive scheduler or savepoint (default: the job's scheduler decides)",
    )
    res.add_argument(
        "--jar", metavar="JAR_ID", help="resubmit from the savepoint with this jar uploaded to the REST API"
    )
    res.add_argument("--entry-class", metavar="CLASS", help="the jar's entry class")
    res.add_argument(
        "--program-args",
        default="",
        metavar="ARGS",
        help="the job's program arguments (one shell-quoted string)",
    )
    res.add_argument(
        "--savepoint-dir",
        metavar="URI",
        help="where the savepoint goes (default: Flink's state.savepoints.dir)",
    )
    res.add_argument(
        "--wait",
        type=float,
        default=flink_rescale.DEFAULT_WAIT,
        metavar="SECONDS",
        help=f"how long to wait for the job at P (default {flink_rescale.DEFAULT_WAIT:g})",
    )
    res.add_argument("--dry-run", action="store_true", help="print the requests without sending them")
    res.set_defaults(run=_run_rescale)


def run(args: argparse.Namespace) -> int:
    return args.run(args)


def _print(document: dict, text: str, as_json: bool) -> None:
    print(dumps(document) if as_json else text)


def _run_status(args: argparse.Namespace) -> int:
    status = flink_rest.job_status(args.rest, args.job)
    _print(status, flink_rest.status_table(status), args.json)
    return 0


def _run_check(args: argparse.Namespace) -> int:
    check = flink_check.check_prediction(
        args.rest, args.job, args.vertex, args.source, operator=args.operator, tolerance=args.tolerance
    )
    _print(check, flink_check.check_table(check), args.json)
    return 0 if check["within"] else 1


def _run_rescale(args: argparse.Namespace) -> int:
    parallelism = args.parallelism if args.advice is None else flink_rescale.advised_parallelism(args.advice)
    resubmit = (
        None
        if args.jar is None
        else flink_rescale.Resubmission(args.jar, args.entry_class, tuple(shlex.split(args.program_args)))
    )
    result = flink_rescale.rescale(
        args.rest,
        args.job,
        parallelism,
        dry_run=args.dry_run,
        wait=args.wait,
        vertex=args.vertex,
        via=args.via,
        resubmit=resubmit,
        savepoint_dir=args.savepoint_dir,
    )
    _print(result.document(), flink_rescale.rescale_text(result), args.json)
    return 0


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
