"""``albic plan SNAPSHOT``: plan one snapshot with one planner.

The plan goes to standard output as JSON, or with ``--out`` to a file and its summary to standard
output. The exit status is 3 when the planner made no plan (INFEASIBLE or NO_SOLUTION): the plan,
which keeps the current placement, is still written and stderr says why. A planner that breaks its
contract or crashes is reported as a bug in the planner (exit 1), bad input as one line (exit 2).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from albic.base.errors import AlbicError, PlannerBugError, PlannerCrash, UsageError
from albic.base.files import check_writable
from albic.base.stdio import write_stdout
from albic.cli.period_options import add_current_argument, add_period_argument
from albic.core.model import Snapshot
from albic.core.payoff import only_moves_that_pay
from albic.core.plan import Plan
from albic.core.planner import DEFAULT_PLANNER, Planner, get_planner, parse_value
from albic.evaluation.decide import parse_trigger
from albic.io import write_plan
from albic.io.datasets import statistics_identity
from albic.io.periods import read_input_snapshot
from albic.solvers.quiet import quiet_stdout

__all__ = ["add_arguments", "run", "parse_param", "check_output_file", "NO_PLAN_EXIT"]

#: The exit status of ``albic plan`` when the planner made no plan (INFEASIBLE or NO_SOLUTION).
NO_PLAN_EXIT = 3
# A contract broken in many ways is listed up to this many problems.
_MAX_LISTED = 20


def add_arguments(plan: argparse.ArgumentParser) -> None:
    plan.add_argument(
        "snapshot",
        metavar="SNAPSHOT",
        help="a snapshot JSON file, - for standard input, or a statistics folder of 'albic stats'",
    )
    add_period_argument(plan, "the period to plan")
    add_current_argument(plan)
    plan.add_argument(
        "--planner",
        default=DEFAULT_PLANNER,
        metavar="NAME",
        help=f"see 'albic planners' (default {DEFAULT_PLANNER})",
    )
    plan.add_argument(
        "-p",
        "--param",
        type=parse_param,
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a planner parameter (repeatable); VALUE is a JSON literal, none, or text",
    )
    plan.add_argument(
        "--pays",
        nargs="?",
        const="gain",
        metavar="gain[:z=Z,cost=C,margin=M]",
        help="keep only the moves that pay, and none unless they pay in all: the expected gain in "
        "load distance beyond the loads' noise against the moves' cost (albic/core/payoff.py); "
        "the plan's details and 'albic explain' say the gain, its noise, the cost and the break-even",
    )
    plan.add_argument(
        "--out",
        type=Path,
        metavar="PLAN.json",
        help="write the plan here and print a summary (default: print the plan JSON)",
    )


def parse_param(text: str) -> tuple[str, Any]:
    """``"max_moves=3"`` -> ``("max_moves", 3)``."""
    name, equals, value = text.partition("=")
    if not equals or not name.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name.strip(), parse_value(value)


def _params(pairs: Sequence[tuple[str, Any]]) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for name, value in pairs:
        if name in params:
            raise UsageError(f"--param {name} is given more than once")
        params[name] = value
    return params


def _run(planner: Planner, snapshot: Snapshot) -> Plan:
    """``planner.plan(snapshot)``; the planner's own failures become :class:`PlannerCrash`."""
    try:
        return planner.plan(snapshot)
    except PlannerBugError as err:
        if len(err.problems) == 1:
            detail = f"its plan breaks the planner contract: {err.problems[0]}"
        else:
            listed = "".join(f"\n  - {p}" for p in err.problems[:_MAX_LISTED])
            more = len(err.problems) - _MAX_LISTED
            listed += f"\n  ... and {more} more" if more > 0 else ""
            detail = f"its plan breaks the planner contract in {len(err.problems)} ways:{listed}"
        raise PlannerCrash(planner.name, detail) from None
    except (AlbicError, ImportError, KeyboardInterrupt):
        raise  # bad input, a missing optional module, or the user: not a planner bug
    except Exception as err:
        trace = "".join(traceback.format_exception(err))
        raise PlannerCrash(planner.name, f"{type(err).__name__}: {err}", trace) from None


def check_output_file(path: Path, *inputs: Path, what: str = "the plan") -> None:
    """Fail before the work (which may take long) if ``what`` could not be written to ``path``,
    or would replace one of the command's ``inputs``."""
    for source in inputs:
        if _same_file(path, source):
            raise UsageError(
                f"--out {path} is the input {source}: writing {what} there would destroy the "
                "input; give another file name"
            )
    try:
        check_writable(path)
    except OSError as err:
        raise UsageError(f"cannot write {what} to {path}: {err.strerror}") from None


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet)
        return os.path.realpath(a) == os.path.realpath(b)


def run(args: argparse.Namespace) -> int:
    if args.out is not None:
        check_output_file(args.out, args.snapshot)
    planner = get_planner(args.planner, **_params(args.param))
    rule = None
    if args.pays is not None:
        trigger = parse_trigger(args.pays)
        if trigger.gain is None or trigger.cooldown != 1:  # a dwell means nothing to one plan
            raise UsageError(f"--pays {args.pays!r}: use gain[:z=Z,cost=C,margin=M]")
        rule = trigger.gain
    snapshot = read_input_snapshot(args.snapshot, args.period, args.current)
    with quiet_stdout():  # METIS and solver logs must not corrupt the plan on stdout
        plan = _run(planner, snapshot)
    if rule is not None:
        plan = only_moves_that_pay(plan, snapshot, z=rule.z, cost=rule.cost, margin=rule.margin)
    if Path(args.snapshot).is_dir():
        record = {**plan.made_from_record(), "statistics": statistics_identity(args.snapshot)}
        plan = dataclasses.replace(plan, made_from=record)
    if args.out is None:
        write_stdout(plan.to_json() + "\n")
    else:
        write_plan(plan, args.out)
        write_stdout(plan.summary() + "\n")
    if plan.no_plan_reason is not None:
        print(
            f"albic: error: {planner.name} found no plan ({plan.status}): {plan.no_plan_reason}; "
            "the plan written keeps the current placement",
            file=sys.stderr,
        )
        return NO_PLAN_EXIT
    return 0
