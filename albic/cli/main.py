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

The library names what a user gives by its parameter (``parameter period 6 is out of range``);
an error or warning printed here names the command's option instead (``--period 6 is out of
range``), so that the command line's flags live in ``albic.cli`` only.

Standard output carries nothing but the result: what C libraries and solvers print while a plan is
made is discarded (:func:`albic.solvers.quiet.quiet_stdout`). ``--out`` is checked before any work starts:
it must not be the input snapshot, its folder must take a new file and an existing file must be
writable; an existing file keeps its permission bits, and a symbolic link is followed (the file
it points to is replaced, the link stays), as the shell's ``>`` does.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import os
import re
import sys
import warnings
from collections.abc import Collection
from typing import TYPE_CHECKING, Any, NoReturn

from albic import __version__
from albic.base.errors import (
    REPORT_REQUEST,
    AlbicError,
    PlannerBugError,
    PlannerCrash,
    ProblemList,
    StdoutError,
    UsageError,
)
from albic.base.extras import missing_extra
from albic.cli.spark_options import size_argument
from albic.io.reader import DEFAULT_MAX_INPUT_BYTES, MAX_INPUT_ENV, format_size, input_limit

if TYPE_CHECKING:
    pass

__all__ = ["main", "build_parser", "COMMANDS"]

# Commands that live in modules of their own, by name: the module and the one line ``albic
# --help`` shows. Each module defines add_arguments(parser) and run(args) -> exit code. Only the
# module of the command being run is imported (``albic --help`` imports none), so a module's own
# imports cost only its command. Errors: raise AlbicError or OSError for bad input.
COMMANDS: dict[str, tuple[str, str]] = {
    "plan": ("albic.cli.commands.plan", "plan one snapshot with one planner"),
    "planners": ("albic.cli.commands.planners", "list the registered planners"),
    "fuse": ("albic.cli.commands.fuse", "fuse a snapshot's operators into components (Enorm)"),
    "mtm": ("albic.cli.commands.mtm", "estimate the migration transition matrix from a node-count series"),
    "precompute": (
        "albic.cli.commands.precompute",
        "precompute projected migration costs (PMC) for the MTM-aware planner on Spark",
    ),
    "stats": (
        "albic.cli.commands.stats",
        "per-period statistics of a trace (Spark, DuckDB or the pandas twin)",
    ),
    "compare": (
        "albic.cli.commands.compare",
        "replay a statistics dataset through several planners at equal budgets; table and figures",
    ),
    "recommend": (
        "albic.cli.commands.recommend",
        "backtest planner x budget x decision rule x trigger on your history; recommend one",
    ),
    "demo": (
        "albic.cli.commands.demo",
        "the main job: Spark statistics of a week of flights, every planner compared at equal budgets",
    ),
    "kafka": (
        "albic.cli.commands.kafka",
        "import a Kafka cluster (kafka-log-dirs) as a snapshot; export a plan as reassignments; verify",
    ),
    "export": (
        "albic.cli.commands.export",
        "write a plan for an engine (flink: stock Flink's key-group ranges, or --custom-assignment)",
    ),
    "flink": (
        "albic.cli.commands.flink",
        "advise a keyed Flink operator's parallelism; read, check and rescale a running job",
    ),
    "schedule": (
        "albic.cli.commands.schedule",
        "order a plan's moves into batches (per-node concurrency, bandwidth)",
    ),
    "explain": (
        "albic.cli.commands.explain",
        "explain a plan: goals before/after, a reason per move, warnings",
    ),
    "plot": (
        "albic.cli.commands.plot",
        "draw a plan: node utilisation before and after, the moves, the budget used",
    ),
    "snapshot": ("albic.cli.commands.snapshot", "write one period of a statistics folder as a snapshot file"),
    "schema": ("albic.cli.commands.schema", "print the JSON Schema of snapshot or plan files"),
}


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors become one ``albic: error:`` line, not an exit."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')")


# -- the parser and main --------------------------------------------------------------------------


def build_parser(in_full: Collection[str] | None = None) -> argparse.ArgumentParser:
    """The command line's parser: every command in full, or those named ``in_full`` in full and
    every other by its help line only, so that a run imports the module of its own command and no
    other (``albic --help`` imports none)."""
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
    for name, (module_name, help_line) in COMMANDS.items():
        if in_full is not None and name not in in_full:
            commands.add_parser(name, help=help_line)
            continue
        module = importlib.import_module(module_name)
        sub = commands.add_parser(
            name,
            help=help_line,
            description=module.__doc__,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        module.add_arguments(sub)
        sub.set_defaults(run=module.run)
    return parser


# How the library names a parameter in its messages (see the module docstring).
_PARAMETER = re.compile(r"\bparameter ([a-z][a-z0-9_]*)\b")
# How albic.core.planner.check_params names one: "The 'name' parameter of OWNER must be ...".
_CHECKED = re.compile(r"\bThe '([a-z][a-z0-9_]*)' parameter of \S+ (?=must be)")
# What the library names that is not a parameter of the command, in the command line's words.
_SPELLINGS = {"input_limit(SIZE)": "'albic --max-input-size SIZE'"}


def _option_names(parser: argparse.ArgumentParser) -> dict[str, str]:
    """Each option's parameter (its ``dest``) -> its first long flag, over ``parser`` and the
    parsers of its subcommands.

    >>> _option_names(build_parser([]))["max_input_size"]
    '--max-input-size'
    """
    names: dict[str, str] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                names = {**_option_names(sub), **names}
        flag = next((o for o in action.option_strings if o.startswith("--")), None)
        if flag is not None:
            names.setdefault(action.dest, flag)
    return names


def _in_options(message: str, options: dict[str, str]) -> str:
    """``message`` with each ``parameter NAME`` that is an option of the command as its flag.

    >>> _in_options("name one with parameter job", {"job": "--job"})
    'name one with --job'
    >>> _in_options("The 'tau' parameter of f() must be a float > 0. Got 0 instead.", {"tau": "--tau"})
    '--tau must be a float > 0. Got 0 instead.'
    """
    for python, command_line in _SPELLINGS.items():
        message = message.replace(python, command_line)
    message = _CHECKED.sub(
        lambda found: f"{options[found.group(1)]} " if found.group(1) in options else found.group(0), message
    )
    return _PARAMETER.sub(lambda found: options.get(found.group(1), found.group(0)), message)


def _error(message: str) -> int:
    print(f"albic: error: {message}", file=sys.stderr)
    return 2


def _print_crash(crash: PlannerCrash) -> None:
    print(f"albic: internal error in planner {crash.planner}: {crash.detail}", file=sys.stderr)
    if crash.trace:
        print(crash.trace, end="", file=sys.stderr)
    print(REPORT_REQUEST, file=sys.stderr)


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


def _show_warning(
    message: Warning | str, *args: Any, options: dict[str, str] | None = None, **kwargs: Any
) -> None:
    print(f"albic: warning: {_in_options(str(message), options or {})}", file=sys.stderr)


def _main(argv: list[str] | None) -> int:
    options: dict[str, str] = {}
    try:
        try:
            words = sys.argv[1:] if argv is None else argv
            command = next((w for w in words if w in COMMANDS), None)
            parser = build_parser([command] if command else [])
            args = parser.parse_args(argv)
        except SystemExit as done:  # --help and --version
            return done.code if isinstance(done.code, int) else 0
        options = _option_names(parser)
        warnings.showwarning = functools.partial(_show_warning, options=options)
        with input_limit(args.max_input_size):
            return args.run(args)
    except UsageError as err:
        return _error(str(err))
    except PlannerCrash as crash:
        _print_crash(crash)
        return 1
    except PlannerBugError as err:  # from a command that plans without _run (e.g. a replay)
        print(f"albic: internal error: {err.one_line()}", file=sys.stderr)
        print(REPORT_REQUEST, file=sys.stderr)
        return 1
    except ProblemList as err:  # every problem of a snapshot or plan file, on one line
        return _error(_in_options(err.one_line(), options))
    except AlbicError as err:
        return _error(_in_options(str(err), options))
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
