"""The ``albic`` command line.

::

    albic plan SNAPSHOT [--planner NAME] [--param NAME=VALUE ...] [--period P] [--current PLAN_OR_MAP]
               [--out PLAN.json]
    albic compare STATS_DIR --planner NAME[:k=v,...] ... [--budgets max_moves=5,10] --out DIR
    albic planners
    albic stats TRACE --out DIR [--spec TOPOLOGY.toml] [--period 1h] [--key-groups K] ...
    albic demo [--out DIR] [--days N] ...
    albic kafka import LOG_DIRS.json --out SNAPSHOT.json [--rates ...] [--remove ID,...] [--add ID,...]
    albic kafka export PLAN.json --out REASSIGNMENT.json
    albic export flink PLAN.json --snapshot SNAPSHOT|STATS_DIR [--out RANGES.json] [--custom-assignment]
    albic flink advise SNAPSHOT|STATS_DIR --subtask-capacity C [--max-parallelism N] [--current P]
                       [--target-utilisation U] [--out ADVICE.json]
    albic schedule PLAN.json --snapshot SNAPSHOT|STATS_DIR [--period P] [--max-per-node K] [--bandwidth BYTES/S]
    albic explain PLAN.json --snapshot SNAPSHOT|STATS_DIR [--period P]
    albic plot PLAN.json [--snapshot SNAPSHOT|STATS_DIR [--period P]] --out FIG.png
    albic snapshot STATS_DIR [--period P] [--current PLAN_OR_MAP] --out SNAPSHOT.json
    albic schema snapshot|plan
    albic --version
    albic --max-input-size SIZE COMMAND ...   (the largest input file read; default 1 GiB)

Exit codes: 0 success; 2 bad input (a snapshot, plan file, planner name or parameter that albic
rejects, a file that cannot be read or written, a usage error) or a command that needs an extra
that is not installed (``pip install 'albic[plot]'``, :mod:`albic.base.extras`), reported in one
message on stderr without a traceback; 1 an internal error (a planner broke its contract), a
missing module of the core, or standard output that could not take the result (closed, a reader
that left the pipe, a full disk); 3 the planner made no plan (``albic plan``: status INFEASIBLE or
NO_SOLUTION; the plan, which keeps the current placement, is still written and stderr says why);
130 interrupted.

Standard output carries nothing but the result: what C libraries and solvers print while a plan is
made is discarded (:func:`solvers.quiet.quiet_stdout`). ``--out`` is checked before any work starts:
it must not be the input snapshot, its folder must take a new file and an existing file must be
writable; an existing file keeps its permission bits, and a symbolic link is followed (the file
it points to is replaced, the link stays), as the shell's ``>`` does.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import os
import sys
import traceback
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from albic import __version__
from albic.base.errors import AlbicError, PlannerBugError, PlannerCrash, ProblemList, StdoutError, UsageError
from albic.base.extras import missing_extra
from albic.base.stdio import write_stdout
from albic.cli.period_options import add_current_argument, add_period_argument
from albic.cli.spark_options import size_argument
from albic.core.model import Snapshot
from albic.core.plan import Plan
from albic.core.planner import DEFAULT_PLANNER, Planner, get_planner, parse_value
from albic.core.registry import available_planners
from albic.io import check_writable, write_plan
from albic.io.periods import read_input_snapshot
from albic.io.reader import DEFAULT_MAX_INPUT_BYTES, MAX_INPUT_ENV, format_size, input_limit
from solvers.quiet import quiet_stdout

__all__ = ["main", "build_parser", "parse_param", "COMMAND_MODULES"]

# Commands that live in modules of their own (albic/cli/commands/<name>.py). Each module defines
# COMMAND (its name), HELP (one line), add_arguments(parser) and run(args) -> exit code, and keeps
# its module-level imports light: every `albic` call imports it to build the parser, so heavy
# imports (pyspark, solvers) belong inside run(). Errors: raise AlbicError or OSError for bad input.
COMMAND_MODULES: tuple[str, ...] = (
    "albic.cli.commands.fuse",
    "albic.cli.commands.mtm",
    "albic.cli.commands.precompute",
    "albic.cli.commands.stats",
    "albic.cli.commands.compare",
    "albic.cli.commands.demo",
    "albic.cli.commands.kafka",
    "albic.cli.commands.export",
    "albic.cli.commands.flink",
    "albic.cli.commands.schedule",
    "albic.cli.commands.explain",
    "albic.cli.commands.plot",
    "albic.cli.commands.snapshot",
    "albic.cli.commands.schema",
)

#: The exit status of ``albic plan`` when the planner made no plan (INFEASIBLE or NO_SOLUTION).
NO_PLAN_EXIT = 3
_REPORT_REQUEST = "This is a bug in the planner, not in your input; please report it."
_NO_PLANNERS = "albic: error: no planner is registered; is albic installed (pip install -e .)?"
_MAX_LISTED = 20


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors become one ``albic: error:`` line, not an exit."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')")


# -- parameters -----------------------------------------------------------------------------------


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


# -- helpers --------------------------------------------------------------------------------------


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


# -- commands -------------------------------------------------------------------------------------


def _cmd_plan(args: argparse.Namespace) -> int:
    if args.out is not None:
        check_output_file(args.out, args.snapshot)
    planner = get_planner(args.planner, **_params(args.param))
    snapshot = read_input_snapshot(args.snapshot, args.period, args.current)
    with quiet_stdout():  # METIS and solver logs must not corrupt the plan on stdout
        plan = _run(planner, snapshot)
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


def _describe_planner(cls: type[Planner]) -> tuple[str, str, str]:
    """Class path, tags and parameters (with defaults) of a registered planner class."""
    try:
        tags = ", ".join(cls().tags().names()) or "-"
    except TypeError:  # a planner with a required parameter
        tags = "?"
    params = [
        f"{p.name}={p.default!r}" if p.default is not p.empty else f"{p.name} (required)"
        for p in inspect.signature(cls.__init__).parameters.values()
        if p.kind is p.KEYWORD_ONLY
    ]
    return f"{cls.__module__}:{cls.__qualname__}", tags, ", ".join(params) or "-"


def _cmd_planners(args: argparse.Namespace) -> int:
    planners = available_planners()
    if not planners:
        print(_NO_PLANNERS, file=sys.stderr)
        return 1
    described = {name: _describe_planner(cls) for name, cls in planners.items()}
    width = max(map(len, planners))
    path_width = max(len(path) for path, _, _ in described.values())
    for name, (path, tags, params) in described.items():
        print(f"{name:<{width}}  {path:<{path_width}}  tags: {tags}  parameters: {params}")
    return 0


# -- the parser and main --------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="albic",
        description="Load-balancing and state-migration planners for stream processors.",
    )
    parser.add_argument("--version", action="version", version=f"albic {__version__}")
    parser.add_argument(
        "--max-input-size",
        type=size_argument,
        metavar="SIZE",
        help=f"the largest input file albic reads, e.g. 2G (default {format_size(DEFAULT_MAX_INPUT_BYTES)}, "
        f"or {MAX_INPUT_ENV})",
    )
    commands = parser.add_subparsers(metavar="COMMAND", required=True)

    plan = commands.add_parser("plan", help="plan one snapshot with one planner")
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
        "--out",
        type=Path,
        metavar="PLAN.json",
        help="write the plan here and print a summary (default: print the plan JSON)",
    )
    plan.set_defaults(run=_cmd_plan)

    planners = commands.add_parser("planners", help="list the registered planners")
    planners.set_defaults(run=_cmd_planners)

    for module_name in COMMAND_MODULES:
        module = importlib.import_module(module_name)
        sub = commands.add_parser(
            module.COMMAND,
            help=module.HELP,
            description=module.__doc__,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        module.add_arguments(sub)
        sub.set_defaults(run=module.run)
    return parser


def _error(message: str) -> int:
    print(f"albic: error: {message}", file=sys.stderr)
    return 2


def _print_crash(crash: PlannerCrash) -> None:
    print(f"albic: internal error in planner {crash.planner}: {crash.detail}", file=sys.stderr)
    if crash.trace:
        print(crash.trace, end="", file=sys.stderr)
    print(_REPORT_REQUEST, file=sys.stderr)


def _os_error_message(err: OSError) -> str:
    if err.filename is not None and err.strerror:
        return f"{err.filename}: {err.strerror}"
    return str(err)


def main(argv: list[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); return the exit code."""
    _hold_closed_stdout()
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        return _main(argv)


def _show_warning(message: Warning | str, *args: Any, **kwargs: Any) -> None:
    print(f"albic: warning: {message}", file=sys.stderr)


def _main(argv: list[str] | None) -> int:
    try:
        try:
            args = build_parser().parse_args(argv)
        except SystemExit as done:  # --help and --version
            return done.code if isinstance(done.code, int) else 0
        with input_limit(args.max_input_size):
            return args.run(args)
    except UsageError as err:
        return _error(str(err))
    except PlannerCrash as crash:
        _print_crash(crash)
        return 1
    except PlannerBugError as err:  # from a command that plans without _run (e.g. a replay)
        print(f"albic: internal error: {err.one_line()}", file=sys.stderr)
        print(_REPORT_REQUEST, file=sys.stderr)
        return 1
    except ProblemList as err:  # every problem of a snapshot or plan file, on one line
        return _error(err.one_line())
    except AlbicError as err:
        return _error(str(err))
    except StdoutError as err:  # the result is lost: that must not look like success
        _silence_stdout()
        print(f"albic: error: {err}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # e.g. `albic stats ... | head`: a command's progress output
        _silence_stdout()
        print("albic: error: cannot write to standard output: Broken pipe", file=sys.stderr)
        return 1
    except OSError as err:
        return _error(_os_error_message(err))
    except ImportError as err:
        extra = missing_extra(err, f"'albic {_command(argv)}'" if _command(argv) else "albic")
        if extra is not None:  # a module of an extra that no require() guarded
            return _error(str(extra))
        print(f"albic: error: a module albic needs cannot be imported: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _command(argv: list[str] | None) -> str:
    """The subcommand of ``argv`` (its first word that is not an option), for messages."""
    words = sys.argv[1:] if argv is None else argv
    return next((w for w in words if not w.startswith("-")), "")


def _hold_closed_stdout() -> None:
    """If descriptor 1 is closed (``albic ... >&-``), hold it with /dev/null, so that no file
    albic opens later becomes descriptor 1 and receives what C libraries print; ``sys.stdout``
    stays None, and :func:`albic.base.stdio.write_stdout` reports the closed output."""
    if sys.stdout is not None:
        return
    try:
        os.fstat(1)
    except OSError:
        fd = os.open(os.devnull, os.O_WRONLY)
        if fd != 1:
            os.dup2(fd, 1)
            os.close(fd)


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that Python's final flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass  # stdout is not a real file (e.g. captured by a test)


if __name__ == "__main__":
    sys.exit(main())
