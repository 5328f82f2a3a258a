"""The parameters of ``milp`` and ``albic``, declared once: each is a field of a frozen dataclass
that carries its default, its rule (the constraints :meth:`albic.core.planner.Planner.validate_parameters`
checks) and what it means. Everything else derives from the fields:

- the planners' keyword-only ``__init__`` (:func:`keyword_init`), whose signature
  ``get_params()``, ``clone()``, ``repr()``, ``albic planners`` and the JSON specs read as for any
  planner (the public names, in the declarations' order);
- their ``parameters`` rules (:func:`rules_of`);
- the search's settings (:class:`albic.planners.milp_search.SolveSettings` extends
  :class:`SolverSettings`, and :func:`values_of` copies a planner's values into it).

``milp`` takes :class:`Budgets` and :class:`SolverSettings`; ``albic`` takes :class:`Budgets`,
:class:`CollocationSettings` (Algorithm 2's) and :class:`SolverSettings`, in that order.

>>> from albic.planners.albic_milp import MilpPlanner
>>> MilpPlanner.parameter_names()[:4]
['max_moves', 'max_migration_cost', 'time_limit', 'backend']
>>> MilpPlanner(max_moves=3, seed=2)
MilpPlanner(max_moves=3, seed=2)
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from albic.core.planner import (
    BUDGET_PARAMETERS,
    MAX_TIME_LIMIT,
    SEED_PARAMETER,
    TIME_LIMIT_PARAMETER,
    Boolean,
    Constraint,
    Interval,
    NoneValue,
    predicate,
)
from albic.solvers.milp import BACKENDS, is_backend

__all__ = [
    "Budgets",
    "SolverSettings",
    "CollocationSettings",
    "COLLOCATION_SLACK",
    "SLACK_GAIN",
    "COLLOCATION_TIME",
    "keyword_init",
    "rules_of",
    "values_of",
]


def declared(default: Any, rules: list[Constraint], doc: str) -> Any:
    """A parameter's field: its ``default``, the ``rules`` a value must meet one of, and ``doc``."""
    return field(default=default, metadata={"rules": tuple(rules), "doc": doc})


def _caps_ok(value: Any) -> bool:
    return value is None or (
        isinstance(value, Mapping)
        and all(
            isinstance(k, str)
            and isinstance(v, (int, float))
            and not isinstance(v, bool)
            and math.isfinite(v)
            and v >= 0
            for k, v in value.items()
        )
    )


@dataclass(frozen=True)
class Budgets:
    """The budgets of a plan (they mean the same for every planner: design section 4)."""

    max_moves: int | None = declared(
        None, BUDGET_PARAMETERS["max_moves"], "the most key groups a plan moves (None: no budget)"
    )
    max_migration_cost: float | None = declared(
        None, BUDGET_PARAMETERS["max_migration_cost"], "the most state a plan moves (None: no budget)"
    )


@dataclass(frozen=True)
class SolverSettings:
    """How the MILP is searched (why each: :class:`albic.planners.albic_milp.MilpPlanner`)."""

    time_limit: float | None = declared(
        0.25,
        TIME_LIMIT_PARAMETER["time_limit"],
        "work units with deterministic=True and CP-SAT, else wall-clock seconds (planners/work.py); "
        "None: no limit",
    )
    backend: str = declared(
        "cpsat",
        [
            predicate(
                is_backend,
                f"one of {{{', '.join(map(repr, BACKENDS))}}} or 'pulp:NAME' "
                "(NAME: a PuLP solver, e.g. 'pulp:GUROBI_CMD')",
            )
        ],
        "the MILP solver (albic.solvers.milp)",
    )
    deterministic: bool = declared(
        True, [Boolean()], "time_limit counts work, not time: the same plan on any machine (CP-SAT)"
    )
    wall_clock_limit: float | None = declared(
        None,
        [Interval(float, 0, MAX_TIME_LIMIT, closed="right"), NoneValue()],
        "a safety net: wall-clock seconds after which the search stops in either mode (None: off)",
    )
    workers: int = declared(
        1, [Interval(int, 1, 64)], "CP-SAT's threads, and those of a PuLP solver that takes them"
    )
    warm_start: bool = declared(True, [Boolean()], "also start from Flux's plan")
    resource_caps: Mapping[str, float] | None = declared(
        None,
        [predicate(_caps_ok, "a mapping of resource name to a finite cap >= 0, or None")],
        "{resource: cap}: each active node's sum of the key groups' resources within cap x capacity",
    )
    seed: int = declared(0, SEED_PARAMETER["seed"], "the seed of every random choice of the search")


# The defaults of collocation_slack, slack_gain and collocation_time (why: AlbicPlanner's
# docstring), with the data they were measured on. collocation_slack and slack_gain: the paper's
# one-to-one instance of section 5.3 (a pin, about 0.01 of the traffic, earns a fifth of the slack)
# and the words trace at 128 key groups, 20 and 40 moves. collocation_time: 100 calls at 10 moves
# on section 5.3's instance, 0.950 with 1.0 and COLA's 0.953 with 1.5. Re-derived by `python -m
# benchmarks search-constants --full` (albic at time_limit 0.25): the words trace's first two days
# at 128 key groups replayed in hindsight give the same plans at collocation_slack 0.25 / 0.5 / 1.0
# and slack_gain 0.02 / 0.05 / 0.1 (mean load distance 0.377 % at 20 moves, 0.206 % at 40;
# collocation 0.312 / 0.342, milp's 0.226 / 0.229: the slack decides no plan there); with
# collocation_time 1.0 / 1.5 / 2.5, collocation 0.303 / 0.312 / 0.314 at 20 moves, and after 100
# calls on section 5.3's instance 0.947 / 0.954 / 0.955.
COLLOCATION_SLACK = 0.5
SLACK_GAIN = 0.05
COLLOCATION_TIME = 1.5


@dataclass(frozen=True)
class CollocationSettings:
    """Algorithm 2's parameters (the paper's Table 3, then albic's extensions; why each:
    :class:`albic.planners.albic_milp.AlbicPlanner`)."""

    score_factor: float = declared(
        1.5, [Interval(float, 0)], "sF: a pair counts when its traffic exceeds sF x its source's average"
    )
    max_load_distance: float = declared(
        10.0, [Interval(float, 0)], "maxLD, in percent of the mean utilisation"
    )
    max_partition_load: float = declared(
        25.0, [Interval(float, 0)], "maxPL, in percent of the mean load of a node of capacity 1"
    )
    step_partition_load: float = declared(
        5.0, [Interval(float, 0, closed="neither")], "stepPL, maxPL's step between attempts"
    )
    pairs_per_call: int = declared(1, [Interval(int, 1, 10_000)], "pairs pinned per call")
    swap_share: float = declared(
        0.5, [Interval(float, 0, 1)], "the share of the budget the pins leave that swaps may spend"
    )
    collocation_slack: float = declared(
        COLLOCATION_SLACK,
        [Interval(float, 0)],
        "how much less balanced than the witness (x maxLD) collocation may make a plan",
    )
    slack_gain: float = declared(
        SLACK_GAIN, [Interval(float, 0, 1)], "the collocation gain that earns all of the slack"
    )
    collocation_time: float = declared(
        COLLOCATION_TIME,
        [Interval(float, 0, 100)],
        "the attempts' work besides the witness's, in time limits",
    )


def _fields(declarations: tuple[type, ...]) -> list[dataclasses.Field]:
    return [f for cls in declarations for f in dataclasses.fields(cls)]


def rules_of(*declarations: type) -> dict[str, list[Constraint]]:
    """The ``parameters`` rules of a planner taking the fields of ``declarations``."""
    return {f.name: list(f.metadata["rules"]) for f in _fields(declarations)}


def values_of(obj: Any, declaration: type) -> dict[str, Any]:
    """The values ``obj`` (a planner) holds for the fields of ``declaration``, by name."""
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(declaration)}


def keyword_init(*declarations: type) -> Callable[..., None]:
    """A planner's ``__init__`` taking the fields of ``declarations`` as keyword-only parameters
    (their defaults; no logic, as in scikit-learn: each is stored as the attribute of its name).
    Its signature is the declared one, so what reads a planner's parameters from ``__init__``
    (``get_params``, ``repr``, ``albic planners``) sees them; its docstring lists them."""
    declared_fields = _fields(declarations)
    names = [f.name for f in declared_fields]
    hints = {name: hint for cls in declarations for name, hint in typing.get_type_hints(cls).items()}

    def __init__(self, /, **params: Any) -> None:
        unknown = [name for name in params if name not in names]
        if unknown:
            raise TypeError(f"{type(self).__name__}() got an unexpected keyword argument {unknown[0]!r}")
        for f in declared_fields:
            setattr(self, f.name, params.get(f.name, f.default))

    self_parameter = inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)
    __init__.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [self_parameter]
        + [
            inspect.Parameter(
                f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default, annotation=hints[f.name]
            )
            for f in declared_fields
        ],
        return_annotation=None,
    )
    __init__.__doc__ = "Parameters (keyword-only):\n\n" + "\n".join(
        f"- ``{f.name}`` ({f.default!r}): {f.metadata['doc']}" for f in declared_fields
    )
    return __init__
