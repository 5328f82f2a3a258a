"""Every exception albic raises, each with one line on when.

Bad input is an exception raised before any solving; an infeasible instance is a plan status, not an
exception (design section 4). Every error derives from :class:`AlbicError`, and the input errors also
derive from the builtin a caller would expect (``ValueError``, ``TypeError``).
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "AlbicError",
    "ProblemList",
    "InvalidSnapshotError",
    "InvalidPlanFileError",
    "InvalidParameterError",
    "NotMadeForError",
    "UnsupportedSnapshotError",
    "PlannerBugError",
    "SolverError",
    "TopologyCycleError",
    "InvalidSpecError",
    "TraceError",
    "NotContiguousError",
    "NotStockFlinkError",
    "KeyHashError",
    "KafkaFileError",
    "FlinkRestError",
    "SparkUnavailableError",
    "SparkJobError",
    "MissingExtraError",
    "StdoutError",
    "CheckFailed",
    "UsageError",
    "PlannerCrash",
    "DuplicateKeyError",
    "InputFileError",
]


# A snapshot with thousands of bad key groups should not print thousands of lines.
_MAX_LISTED = 20


def shown(value: object) -> str:
    """``repr(value)`` for an error message, cut short when long: a 401-digit integer or a
    megabyte-long id keeps the message one readable line."""
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:40]}...{text[-10:]} ({len(text)} characters)"


class AlbicError(Exception):
    """Base class of every error albic raises on purpose."""


class ProblemList(AlbicError):
    """An error that carries every problem found, not just the first one."""

    what = "object"

    def __init__(self, problems: Iterable[str] | str, *, subject: str | None = None) -> None:
        self.problems: list[str] = [problems] if isinstance(problems, str) else list(problems)
        self.subject = subject
        super().__init__(self._message())

    def _message(self) -> str:
        where = f" {self.subject}" if self.subject else ""
        if len(self.problems) == 1:
            return f"Invalid {self.what}{where}: {self.problems[0]}"
        shown = self.problems[:_MAX_LISTED]
        listed = "\n".join(f"  - {p}" for p in shown)
        more = len(self.problems) - len(shown)
        tail = f"\n  ... and {more} more (see the exception's .problems)" if more else ""
        return f"Invalid {self.what}{where}, {len(self.problems)} problems:\n{listed}{tail}"

    def one_line(self, listed: int = 3) -> str:
        """The message on one line (for the command line): the first ``listed`` problems."""
        where = f" {self.subject}" if self.subject else ""
        if len(self.problems) == 1:
            return f"Invalid {self.what}{where}: {self.problems[0]}"
        more = len(self.problems) - listed
        tail = f"; ... and {more} more" if more > 0 else ""
        return (
            f"Invalid {self.what}{where}, {len(self.problems)} problems: "
            + "; ".join(self.problems[:listed])
            + tail
        )


class InvalidSnapshotError(ProblemList, ValueError):
    """A snapshot (or snapshot file) breaks a rule of the shared model.

    ``problems`` lists every problem found; each names the object, the value and the rule.
    """

    what = "snapshot"


class InvalidPlanFileError(ProblemList, ValueError):
    """A plan file that does not follow schema ``albic.plan/1`` (:func:`albic.io.read_plan`)."""

    what = "plan file"


class InvalidParameterError(AlbicError, ValueError):
    """A planner parameter (or a planner name) is not acceptable."""


class NotMadeForError(AlbicError, ValueError):
    """A plan given with a snapshot or statistics period it was not made for: another period,
    another dataset, an edited file (:func:`albic.io.plan_for.read_plan_for`). Its figures
    would be for a snapshot the plan never saw, so albic refuses rather than recompute them."""


class UnsupportedSnapshotError(AlbicError, TypeError):
    """A valid snapshot that this planner cannot handle (e.g. heterogeneous nodes for SSM)."""


class PlannerBugError(ProblemList, RuntimeError):
    """A planner returned a plan that breaks the planner contract.

    Raised by :func:`albic.core.checks.check_plan`; it is a bug in the planner, never bad input.
    """

    what = "plan"


class SolverError(AlbicError, RuntimeError):
    """A MILP backend found and started failed while solving: a PuLP solver without its licence, a
    crashed solver binary (``albic.planners.milp_search``; the message names the backend)."""


class TopologyCycleError(InvalidParameterError):
    """An operator topology with a cycle given to Enorm's fusion, which takes a DAG (Nasir et al.,
    section 3); ``cycle`` lists the operators of the one networkx found, first one repeated last."""

    def __init__(self, message: str, cycle: list[str]) -> None:
        super().__init__(message)
        self.cycle = cycle


class InvalidSpecError(AlbicError, ValueError):
    """A topology spec (TOML) that albic cannot use (:func:`albic.stats.spec.read_spec`)."""


class TraceError(AlbicError, ValueError):
    """An event table albic cannot use: missing column, bad timestamp, no events
    (:mod:`albic.stats.events`, the same rules on both statistics engines)."""


class NotContiguousError(InvalidParameterError):
    """A plan that gives some node key groups that are not one contiguous range
    (:func:`albic.rollout.flink.flink_ranges`)."""


class NotStockFlinkError(InvalidParameterError):
    """A plan whose key-group -> node assignment is stock Flink's split at no parallelism
    (:func:`albic.rollout.flink.stock_flink_ranges`): Flink cannot be told other ranges."""


class KeyHashError(AlbicError, ValueError):
    """A snapshot whose key groups were not made with the hash a command needs (Flink's, for the
    stock-Flink export and the Flink advisor), or that does not say which hash made them."""


class KafkaFileError(AlbicError, ValueError):
    """A Kafka tool's file (kafka-log-dirs output, a reassignment file, a racks CSV) that albic
    cannot read; the message names the file, the field and the rule (:mod:`albic.rollout.kafka`)."""


class FlinkRestError(AlbicError, RuntimeError):
    """A running Flink cannot do what a command asks through its REST API: the address does not
    answer, it has no such job or vertex, the job is not running, or Flink refused a request; the
    message names the object, the value and the rule (:mod:`albic.rollout.flink_rest`)."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class SparkUnavailableError(AlbicError, RuntimeError):
    """Spark cannot start here (no Java, pyspark missing, master unreachable, master conflict)."""


class SparkJobError(AlbicError, RuntimeError):
    """A Spark job failed; the message names the master and the cause in one line."""


class MissingExtraError(AlbicError, ImportError):
    """A module of one of albic's extras is not installed (:func:`albic.base.extras.require`); the
    message names the extra to install, e.g. ``pip install 'albic[plot]'``."""

    def __init__(self, message: str, *, extra: str, module: str) -> None:
        super().__init__(message, name=module)
        self.extra = extra


class StdoutError(OSError):
    """Standard output could not take what albic had to write (:mod:`albic.base.stdio`)."""


class CheckFailed(AssertionError):
    """A conformance check found a planner breaking the contract
    (:func:`albic.testing.check_planner`)."""


class UsageError(Exception):
    """Bad command-line usage: an option the parser took but the command cannot (``albic`` exits 2)."""


#: What the command line adds when a planner fails in a way that is its bug (exit 1).
REPORT_REQUEST = "This is a bug in the planner, not in your input; please report it."


class PlannerCrash(Exception):
    """A planner failed in the command line in a way that is a bug, not bad input (exit 1)."""

    def __init__(self, planner: str, detail: str, trace: str | None = None) -> None:
        super().__init__(detail)
        self.planner, self.detail, self.trace = planner, detail, trace


class DuplicateKeyError(ValueError):
    """A JSON object with the same key twice (:func:`albic.io.loads` turns it into one line)."""


class InputFileError(AlbicError, ValueError):
    """A file given to albic to read that it refuses before making sense of it: not a regular file
    (a FIFO, a device, a folder, a symbolic-link loop), over the size limit, compressed, binary,
    not UTF-8, or JSON breaking a reading rule (a key twice, too deep, NaN, 1e400); raised by
    :mod:`albic.io.reader`. ``path`` is the file, ``rule`` what it breaks, ``what`` what the file
    was to be (``"plan file"``), and the message names all three on one line."""

    def __init__(self, path: str, rule: str, *, what: str = "input file") -> None:
        self.path, self.rule, self.what = path, rule, what
        super().__init__(f"{what} {path}: {rule}")
