"""The planner contract and the planner registry (design section 4, a *contract*).

A planner is a :class:`Planner` subclass with a registry ``name``, keyword-only hyperparameters
stored as attributes of the same name (no logic in ``__init__``, as in scikit-learn), declared
``parameters`` constraints, ``tags()``, and ``_plan(snapshot)``. :meth:`Planner.plan` does the rest:
it validates the parameters and the snapshot, calls ``_plan``, derives the moves and metrics, and
checks the plan with the independent validator :func:`albic.core.checks.check_plan`.

Example: a planner that never moves anything
--------------------------------------------
>>> from albic.core.planner import Planner, PlannerTags
>>> class StayPut(Planner):
...     name = "stay_put"
...     def tags(self):
...         return PlannerTags(exact=False)
...     def _plan(self, snapshot):
...         return self.result(snapshot, dict(snapshot.assignment), status="OPTIMAL")
>>> from albic.core.model import Node, KeyGroup, Snapshot
>>> snap = Snapshot([Node("n1")], [KeyGroup("a", "op", 1.0)], {"a": "n1"})
>>> StayPut().plan(snap).moves
()

Registering: add the class to the ``albic.planners`` entry-point group of your package
(``[project.entry-points."albic.planners"] stay_put = "mypkg.module:StayPut"``), or call
:func:`register_planner` at run time.
"""

from __future__ import annotations

import abc
import contextvars
import dataclasses
import functools
import inspect
import json
import math
import numbers
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, final

import numpy as np

from albic.base.errors import InvalidParameterError, PlannerBugError, UnsupportedSnapshotError, shown
from albic.base.formats import did_you_mean
from albic.core import checks, metrics, registry
from albic.core.model import PlanStatus, Snapshot
from albic.core.payoff import only_moves_that_pay
from albic.core.plan import Plan, moves_to

__all__ = [
    "Planner",
    "PlannerTags",
    "Constraint",
    "Interval",
    "Options",
    "Boolean",
    "NoneValue",
    "check_params",
    "get_planner",
    "DEFAULT_PLANNER",
    "register_planner",
    "plan",
    "plan_started",
    "planner_name",
]


# When the innermost running Planner.plan() call began (time.perf_counter()), so that a time limit
# can cover everything from the call to its return: validation, solving, moves and checks.
_PLAN_STARTED: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "albic_plan_started", default=None
)


def plan_started() -> float:
    """``time.perf_counter()`` at the start of the running :meth:`Planner.plan` call (now, outside
    one): a planner's time limit counts from there."""
    started = _PLAN_STARTED.get()
    return time.perf_counter() if started is None else started


@dataclass(frozen=True)
class PlannerTags:
    """What a planner promises; the conformance suite picks its checks from these.

    - ``exact``: its plans are optimal for its model; the suite compares them with brute force on
      small instances through :meth:`Planner.evaluate`.
    - ``deterministic``: the same snapshot and parameters (and ``seed``, if it has one) always give
      the same plan.
    - ``budget``: honours ``max_moves`` and ``max_migration_cost``.
    - ``collocation``: uses traffic to collocate communicating key groups.
    - ``interval``: keeps each node's key groups of an operator a contiguous index interval.
    - ``precompute``: needs a precomputed table (e.g. MTM).
    - ``queueing``: plans executors with ``arrival_rate``/``service_rate`` onto node ``cores`` (a
      queueing model, e.g. Elasticutor) and reports ``details["cores"]``; the suite plans it on
      snapshots with rates and checks that the cores fit and keep every executor stable.
    - ``spread``: keeps key groups of one ``KeyGroup.spread`` value on distinct nodes (Kafka
      replicas); a planner without it refuses snapshots that use ``spread``.
    - ``racks``: also spreads them over the nodes' racks (``Node.rack``) as
      :func:`albic.core.checks.rack_problems` requires; a planner without it refuses snapshots with
      racks and ``spread`` values.
    """

    exact: bool = False
    deterministic: bool = True
    budget: bool = False
    collocation: bool = False
    interval: bool = False
    precompute: bool = False
    queueing: bool = False
    spread: bool = False
    racks: bool = False

    def names(self) -> list[str]:
        """The names of the tags that are set."""
        return [f.name for f in dataclasses.fields(self) if getattr(self, f.name)]


# -- parameter constraints ------------------------------------------------------------------------


class Constraint(abc.ABC):
    """One admissible kind of value for a planner parameter."""

    @abc.abstractmethod
    def accepts(self, value: Any) -> bool: ...

    @abc.abstractmethod
    def describe(self) -> str: ...


@dataclass(frozen=True)
class Interval(Constraint):
    """A number of ``kind`` (``int`` or ``float``) within ``[low, high]`` (open ends by ``closed``).

    ``float`` accepts ints too (of any size: ``10**400`` is compared exactly, never converted);
    neither accepts ``bool``, NaN or infinity.
    """

    kind: type
    low: float | None = None
    high: float | None = None
    closed: str = "both"  # "both", "left", "right" or "neither"
    #: Said after the range in messages: the unit, or why the range.
    note: str = ""

    def accepts(self, value: Any) -> bool:
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            return False
        if self.kind is int and not isinstance(value, numbers.Integral):
            return False
        if not isinstance(value, numbers.Integral) and not math.isfinite(value):
            return False
        left_closed = self.closed in ("both", "left")
        right_closed = self.closed in ("both", "right")
        if self.low is not None and (value < self.low or (value == self.low and not left_closed)):
            return False
        if self.high is not None and (value > self.high or (value == self.high and not right_closed)):
            return False
        return True

    def describe(self) -> str:
        kind = "an int" if self.kind is int else "a float"
        left = ">=" if self.closed in ("both", "left") else ">"
        right = "<=" if self.closed in ("both", "right") else "<"
        if self.low is not None and self.high is not None:
            opening = "[" if left == ">=" else "("
            closing = "]" if right == "<=" else ")"
            text = f"{kind} in {opening}{self.low}, {self.high}{closing}"
        elif self.low is not None:
            text = f"{kind} {left} {self.low}"
        elif self.high is not None:
            text = f"{kind} {right} {self.high}"
        else:
            text = kind
        return f"{text} ({self.note})" if self.note else text


@dataclass(frozen=True)
class Options(Constraint):
    """One of a fixed set of values."""

    values: tuple[Any, ...]

    def accepts(self, value: Any) -> bool:
        return any(value == v and type(value) is type(v) for v in self.values)

    def describe(self) -> str:
        return "one of {" + ", ".join(repr(v) for v in self.values) + "}"


class Boolean(Constraint):
    """``True`` or ``False``."""

    def accepts(self, value: Any) -> bool:
        return isinstance(value, bool)

    def describe(self) -> str:
        return "a bool"


class NoneValue(Constraint):
    """``None`` (e.g. for 'no budget')."""

    def accepts(self, value: Any) -> bool:
        return value is None

    def describe(self) -> str:
        return "None"


class _Predicate(Constraint):
    def __init__(self, check: Callable[[Any], bool], description: str) -> None:
        self._check, self._description = check, description

    def accepts(self, value: Any) -> bool:
        return bool(self._check(value))

    def describe(self) -> str:
        return self._description


def predicate(check: Callable[[Any], bool], description: str) -> Constraint:
    """A constraint from a function, for values the built-in constraints cannot describe."""
    return _Predicate(check, description)


#: What a parameter's rule may be: a constraint, ``None`` (the value ``None``), or a list of these,
#: one of which must accept the value.
Rule = Constraint | None | list


def _constraints(rule: Rule) -> list[Constraint]:
    rules = rule if isinstance(rule, list) else [rule]
    return [NoneValue() if r is None else r for r in rules]


def check_params(owner: str, params: Mapping[str, Any], rules: Mapping[str, Rule]) -> None:
    """Raise :class:`InvalidParameterError` for the first of ``params`` that its rule refuses,
    naming ``owner`` (the object the parameters are of), the parameter, the rule and the value;
    a parameter without a rule is not checked (scikit-learn's ``validate_params`` is the model).

    >>> rules = {"tau": Interval(float, 0), "mode": Options(("fast", "slow")), "table": [Options(("a", "b")), None]}
    >>> check_params("planner 'demo'", {"tau": 0.2, "mode": "fast", "table": None}, rules)
    >>> check_params("StreamModel", {"bandwidth": 0},
    ...              {"bandwidth": Interval(float, 0, closed="neither", note="bytes per second")})
    Traceback (most recent call last):
    ...
    albic.base.errors.InvalidParameterError: The 'bandwidth' parameter of StreamModel must be a float > 0 (bytes per second). Got 0 instead.
    """
    for name, value in params.items():
        constraints = _constraints(rules[name]) if name in rules else []
        if constraints and not any(c.accepts(value) for c in constraints):
            allowed = " or ".join(c.describe() for c in constraints)
            raise InvalidParameterError(
                f"The {name!r} parameter of {owner} must be {allowed}. Got {shown(value)} instead."
            )


# Every parameter has bounds that keep memory, time and the solvers' integer types sane: a
# value outside them is an InvalidParameterError before any work, never an overflow deep inside.
#: The largest move budget: more than any snapshot has key groups, and it fits a 32-bit solver int.
MAX_MOVES = 10**9
#: The largest migration-cost budget (a million key groups of the largest state size).
MAX_MIGRATION_COST = 1e21
#: The largest seed: METIS and CP-SAT take a 32-bit signed int.
MAX_SEED = 2**31 - 1
#: The longest time limit, in seconds (11.6 days).
MAX_TIME_LIMIT = 1e6

# The budgets mean the same everywhere (design section 4); planners reuse these two declarations.
BUDGET_PARAMETERS: dict[str, list[Constraint]] = {
    "max_moves": [Interval(int, 0, MAX_MOVES), NoneValue()],
    "max_migration_cost": [Interval(float, 0, MAX_MIGRATION_COST), NoneValue()],
}
SEED_PARAMETER: dict[str, list[Constraint]] = {"seed": [Interval(int, 0, MAX_SEED)]}
TIME_LIMIT_PARAMETER: dict[str, list[Constraint]] = {
    "time_limit": [Interval(float, 0, MAX_TIME_LIMIT, closed="right"), NoneValue()]
}


#: The parameters that limit a plan, whichever planner takes them (:meth:`Planner.limits`).
LIMIT_PARAMETERS = ("max_moves", "max_migration_cost", "time_limit", "max_load_distance")


# -- the base class -------------------------------------------------------------------------------


class Planner(abc.ABC):
    """Base class of every planner; see the module docstring for the contract."""

    name: ClassVar[str]
    #: Admissible values of each ``__init__`` parameter; a value must satisfy one constraint.
    parameters: ClassVar[Mapping[str, list[Constraint]]] = {}

    # -- what subclasses provide ------------------------------------------------------------------

    def tags(self) -> PlannerTags:
        """What this planner promises (see :class:`PlannerTags`)."""
        return PlannerTags()

    @abc.abstractmethod
    def _plan(self, snapshot: Snapshot) -> Plan:
        """Plan a validated snapshot; build the result with :meth:`result`."""

    def _check_supported(self, snapshot: Snapshot) -> None:  # noqa: B027 (a hook: most planners take any snapshot)
        """Raise :class:`UnsupportedSnapshotError` for a valid snapshot this planner cannot handle."""

    def evaluate(self, snapshot: Snapshot, assignment: Mapping[str, str]) -> tuple[float, ...] | None:
        """This planner's objective for ``assignment`` (lower is better, compared lexicographically),
        or ``None`` if the assignment breaks one of its constraints (budgets included).

        Exact planners must implement it: the conformance suite compares their plans with the best
        assignment found by brute force under this function.
        """
        raise NotImplementedError(f"{type(self).__name__} does not define evaluate()")

    # -- the contract -----------------------------------------------------------------------------

    @final
    def plan(self, snapshot: Snapshot) -> Plan:
        """Plan ``snapshot``: validate, solve, derive moves and metrics, check the result.

        Raises :class:`~albic.base.errors.InvalidParameterError` for bad parameters,
        :class:`~albic.base.errors.InvalidSnapshotError` for an invalid snapshot,
        :class:`~albic.base.errors.UnsupportedSnapshotError` for a snapshot this planner cannot handle
        (all before any solving), and :class:`~albic.base.errors.PlannerBugError` if the planner breaks
        the contract. An infeasible instance is a plan with status INFEASIBLE, not an exception.
        """
        token = _PLAN_STARTED.set(time.perf_counter())
        try:
            return self._plan_checked(snapshot)
        finally:
            _PLAN_STARTED.reset(token)

    def _plan_checked(self, snapshot: Snapshot) -> Plan:
        self.validate_parameters()
        if not isinstance(snapshot, Snapshot):
            raise TypeError(
                f"{type(self).__name__}.plan() takes an albic.core.model.Snapshot, "
                f"got {type(snapshot).__name__}"
            )
        snapshot.arrays()  # validates, and builds the cached views outside the timed solve
        tags = self.tags()
        for need in TAGGED_NEEDS:
            if not getattr(tags, need.tag) and need.present(snapshot):
                raise unsupported(self, need.reason)
        self._check_supported(snapshot)
        start = time.perf_counter()
        raw = self._plan(snapshot)
        seconds = time.perf_counter() - start
        if not isinstance(raw, Plan):
            raise PlannerBugError(
                f"_plan() returned a {type(raw).__name__}, expected albic.core.plan.Plan "
                "(build it with self.result(...))",
                subject=f"from planner {self.name!r}",
            )
        finished = self._finish(snapshot, raw, seconds)
        limits = self.limits()
        checked = checks.check_plan(
            snapshot,
            finished,
            max_moves=limits.get("max_moves"),
            max_migration_cost=limits.get("max_migration_cost"),
        )
        return dataclasses.replace(checked, snapshot=snapshot, exact=bool(tags.exact))

    def result(
        self,
        snapshot: Snapshot,
        assignment: Mapping[str, str],
        *,
        status: PlanStatus | str = PlanStatus.FEASIBLE,
        objective: float | None = None,
        bound: float | None = None,
        details: Mapping[str, Any] | None = None,
        metrics: Mapping[str, Any] | None = None,
    ) -> Plan:
        """The plan ``_plan`` returns: a new assignment plus what only the planner knows.

        ``metrics`` may add planner-specific figures (e.g. a solver gap); the standard metrics and
        the moves are derived by :meth:`plan`.
        """
        return Plan(
            planner=self.name,
            status=status,
            assignment=dict(assignment),
            metrics=dict(metrics or {}),
            objective=objective,
            bound=bound,
            details=dict(details or {}),
        )

    def _finish(self, snapshot: Snapshot, raw: Plan, seconds: float) -> Plan:
        """Derive moves and metrics from the two assignments (never trusted from the planner).

        By node indices (numpy), not by a pass over the key groups: 100,000 key groups take a
        few milliseconds, inside the planner's time limit."""
        where = _node_indices(snapshot, raw.assignment)
        if where is None:
            # An incomplete or malformed assignment: let the validator name every problem.
            return dataclasses.replace(raw, planner=self.name, seconds=float(seconds))
        return dataclasses.replace(
            raw,
            planner=self.name,
            moves=moves_to(snapshot, where),
            metrics={**dict(raw.metrics), **metrics.plan_metrics(snapshot, where), **self.limits()},
            seconds=float(seconds),
        )

    def limits(self) -> dict[str, Any]:
        """The limits its plans are made under, by name: those of its parameters named in
        :data:`LIMIT_PARAMETERS`, which mean the same for every planner. The validator holds a
        plan to ``max_moves`` and ``max_migration_cost``, explanations compare it with its budget
        and ``time_limit``, figures draw the ``max_load_distance`` band; a plan's metrics carry
        them."""
        # By the contract's names rather than by each planner's word: the independent validator
        # must hold every planner that takes a max_moves to it, whatever the planner declares.
        params = self.get_params()
        return {name: params[name] for name in LIMIT_PARAMETERS if name in params}

    # -- parameters -------------------------------------------------------------------------------

    @classmethod
    def parameter_names(cls) -> list[str]:
        """The keyword-only parameters of ``__init__``, in declaration order."""
        return list(_keyword_only(cls.__init__))

    def get_params(self) -> dict[str, Any]:
        """The planner's hyperparameters by name."""
        return {name: getattr(self, name) for name in self.parameter_names()}

    def clone(self, **changes: Any) -> Planner:
        """A new planner of the same class and parameters, with ``changes`` applied."""
        return make_planner(type(self), **{**self.get_params(), **changes})

    def validate_parameters(self) -> None:
        """Raise :class:`InvalidParameterError` naming the first parameter with a bad value."""
        check_params(f"planner {planner_name(type(self))!r}", self.get_params(), self.parameters)

    def __repr__(self) -> str:
        defaults = {p.name: p.default for p in inspect.signature(type(self).__init__).parameters.values()}
        changed = [f"{k}={v!r}" for k, v in self.get_params().items() if defaults.get(k, object()) != v]
        return f"{type(self).__name__}({', '.join(changed)})"

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self.get_params() == other.get_params()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(type(self))


def _has_spread(snapshot: Snapshot) -> bool:
    return any(kg.spread is not None for kg in snapshot.key_groups)


def _spreads_over_racks(snapshot: Snapshot) -> bool:
    return any(n.rack is not None for n in snapshot.nodes) and _has_spread(snapshot)


@dataclass(frozen=True)
class TaggedNeed:
    """What a snapshot may ask of a planner that only planners with the tag ``tag`` (a field of
    :class:`PlannerTags`) honour: :meth:`Planner.plan` refuses a snapshot where ``present`` holds
    for a planner without the tag, with ``reason``, before any solving."""

    tag: str
    present: Callable[[Snapshot], bool]
    reason: str


#: The needs the base class refuses on a planner's behalf, by its tags: a new tag that a snapshot
#: can need is a row here, not a branch in :meth:`Planner.plan`.
TAGGED_NEEDS = (
    TaggedNeed(
        "spread",
        _has_spread,
        "its key groups have 'spread' values (replicas that must stay on distinct nodes), which "
        "this planner does not honour; use one tagged 'spread' (see 'albic planners')",
    ),
    TaggedNeed(
        "racks",
        _spreads_over_racks,
        "its nodes have racks and its key groups 'spread' values (replicas to spread over racks), "
        "which this planner does not honour; use one tagged 'racks' (see 'albic planners')",
    ),
)


def planner_name(cls: type[Planner]) -> str:
    """How messages name a planner: its registry name (``flux``), as users type it; the class
    name for a class without one."""
    name = getattr(cls, "name", None)
    return name if isinstance(name, str) and name else cls.__name__


def make_planner(cls: type[Planner], **params: Any) -> Planner:
    """Instantiate ``cls`` with ``params``, naming unknown parameters clearly."""
    known = cls.parameter_names()
    unknown = [p for p in params if p not in known]
    if unknown:
        listed = ", ".join(known) if known else "none"
        raise InvalidParameterError(
            f"Planner {planner_name(cls)!r} has no parameter {unknown[0]!r}"
            f"{did_you_mean(unknown[0], known)}. Its parameters: {listed}."
        )
    planner = cls(**params)
    planner.validate_parameters()
    return planner


# -- the registry ---------------------------------------------------------------------------------


def register_planner(cls: type[Planner], *, replace: bool = False) -> type[Planner]:
    """Make ``cls`` available under ``cls.name`` in this process (usable as a class decorator).

    Installed packages register through the ``albic.planners`` entry-point group instead.
    """
    if not (isinstance(cls, type) and issubclass(cls, Planner)):
        raise InvalidParameterError(f"register_planner takes a Planner subclass, got {cls!r}")
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name:
        raise InvalidParameterError(f"{cls.__name__} needs a non-empty class attribute 'name'")
    existing = registry.planner_source(name)
    if existing is not None and registry.REGISTERED.get(name) is not cls and not replace:
        raise InvalidParameterError(
            f"a planner named {name!r} is already registered ({existing}); pass replace=True to override it"
        )
    registry.REGISTERED[name] = cls
    return cls


def get_planner(name: str, **params: Any) -> Planner:
    """A planner instance by registry name, e.g. ``get_planner("flux", max_moves=10)``; imports
    the module of that planner only."""
    cls = registry.planner_class(name)
    if cls is None:
        if name in registry.LOAD_ERRORS:
            raise InvalidParameterError(f"Planner {name!r} is installed but {registry.LOAD_ERRORS[name]}")
        names = registry.planner_names()
        known = ", ".join(names) or "none: no planner is registered; is albic installed (pip install -e .)?"
        raise InvalidParameterError(
            f"Unknown planner {name!r}{did_you_mean(name, names)}. Known planners: {known}."
        )
    return make_planner(cls, **params)


def _node_indices(snapshot: Snapshot, assignment: Any) -> np.ndarray | None:
    """The node index of every key group under ``assignment`` (as :func:`metrics.node_of`), or
    None unless it maps every key group of ``snapshot`` to one of its nodes."""
    if not isinstance(assignment, Mapping):
        return None
    index = snapshot.arrays().node_index
    where = [
        index.get(node) if isinstance(node := assignment.get(k), str) else None
        for k in snapshot.arrays().key_group_ids
    ]
    return None if None in where else np.array(where, dtype=np.int64)


@functools.cache
def _keyword_only(init: Callable[..., Any]) -> tuple[str, ...]:
    """The keyword-only parameter names of an ``__init__`` (cached: inspect.signature costs tens
    of microseconds, several times per plan() call)."""
    return tuple(
        p.name
        for p in inspect.signature(init).parameters.values()
        if p.kind is inspect.Parameter.KEYWORD_ONLY
    )


#: The planner :func:`plan` and ``albic plan`` use when none is named (README: "uses albic by default").
DEFAULT_PLANNER = "albic"


def plan(
    snapshot: Snapshot, planner: str | Planner = DEFAULT_PLANNER, *, pays: bool = False, **params: Any
) -> Plan:
    """Plan ``snapshot`` with a planner given by name (and parameters) or as an instance. With
    ``pays=True`` only the plan's moves that pay are kept, and none unless they pay in all: their
    gain, judged on the rates behind the loads' noise, beyond that noise
    (:func:`albic.core.payoff.only_moves_that_pay`, whose details the plan then carries)."""
    if isinstance(planner, Planner):
        made = (planner.clone(**params) if params else planner).plan(snapshot)
    else:
        made = get_planner(planner, **params).plan(snapshot)
    return only_moves_that_pay(made, snapshot) if pays else made


def unsupported(planner: Planner, reason: str) -> UnsupportedSnapshotError:
    """The error a planner raises for a valid snapshot outside its model."""
    return UnsupportedSnapshotError(
        f"Planner {planner_name(type(planner))!r} cannot plan this snapshot: {reason}"
    )


def parse_value(text: str) -> Any:
    """A planner parameter written as text (``albic plan --param``, ``albic compare``'s
    ``NAME:key=value``): a JSON literal when it is one (``3``, ``0.5``, ``true``, ``null``),
    ``None`` for ``none``/``None``, else the text itself."""
    if text in ("none", "None"):
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text
