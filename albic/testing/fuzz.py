"""Random snapshots across every magnitude, and one fuzzing step: plan, then check independently.

The standing fuzz test (``tests/test_fuzz.py``) and its larger run in the benchmarks
(``python -m benchmarks fuzz``) share this module, so both run exactly the same check.

:func:`wild_snapshots` draws snapshots with loads, state sizes and traffic rates spread over
10^-6 .. 10^12 (and zeros), capacities over 10^-3 .. 10^3 (heterogeneous or not), removing and new
nodes, queueing rates and cores, in three shapes: ``general`` (several operators, any placement),
``queueing`` (the same, with arrival and service rates on every key group: Elasticutor's model)
and ``interval`` (one operator, key groups in index order on contiguous runs of homogeneous nodes,
the model of SSM and MTM). With ``spread`` it also gives key groups ``spread`` values (replica
groups that must sit on distinct nodes, ints or strings, valid in the current placement): in some
snapshots (``"some"``, for the planners tagged ``spread``) or in every snapshot with two or more
key groups (``"always"``, to check that the other planners refuse them cleanly).
:func:`spread_for` picks the setting for a planner. :func:`fuzz_parameters` draws budgets (moves
and migration cost) and small time limits. :func:`fuzz_one` plans one snapshot and classifies the result:

- ``"ok"``: a plan that the independent validator (:func:`albic.core.checks.plan_problems`, run again
  here with the budgets) accepts;
- ``"unsupported"``: :class:`~albic.base.errors.UnsupportedSnapshotError`, the documented clean refusal
  of a valid snapshot outside a planner's model (the only right outcome for a snapshot with
  ``spread`` values and a planner not tagged ``spread``: a plan for it is an ``"invalid plan"``);
- ``"invalid plan"``, ``"budget violation"``: the validator found a problem (a
  :class:`~albic.base.errors.PlannerBugError` from :meth:`~albic.core.planner.Planner.plan`, or one found
  here);
- ``"crash"``: any other exception.

Example
-------
>>> from hypothesis import given, settings
>>> @settings(max_examples=5, database=None, derandomize=True)
... @given(wild_snapshots(), fuzz_parameters("flux"))
... def run(snapshot, params):
...     assert fuzz_one("flux", snapshot, params).kind == "ok"
>>> run()
"""

from __future__ import annotations

import dataclasses
import math
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from albic.base.errors import PlannerBugError, UnsupportedSnapshotError
from albic.core import checks
from albic.core.model import KeyGroup, Node, Snapshot, Traffic
from albic.core.planner import get_planner
from albic.core.registry import planner_class

__all__ = ["wild_snapshots", "fuzz_parameters", "fuzz_one", "Outcome", "FAILURES", "shape_for", "spread_for"]

#: The outcomes that are failures (anything else is "ok" or "unsupported").
FAILURES = ("crash", "invalid plan", "budget violation")

# Small time limits keep a fuzzed solve in CI time; CP-SAT counts them in deterministic seconds.
_TIME_LIMIT = 0.05


def shape_for(planner: str) -> str:
    """The snapshot shape that exercises ``planner``: SSM and MTM need the interval model,
    Elasticutor queueing rates on every key group."""
    return {"ssm": "interval", "mtm": "interval", "elasticutor": "queueing"}.get(planner, "general")


def spread_for(planner: str) -> str:
    """``"some"`` for a planner tagged ``spread`` (it plans snapshots with and without replica
    groups), ``"never"`` for the others (their refusal is checked with ``"always"``)."""

    return "some" if get_planner(planner).tags().spread else "never"


def _magnitude(draw: Callable[[Any], Any], st: Any, low: int = -6, high: int = 12) -> float:
    return 10.0 ** draw(st.integers(low, high))


def _amounts(draw: Callable[[Any], Any], st: Any, count: int) -> list[float]:
    """``count`` amounts of one magnitude 10^-6..10^12, some zero, some up to 1000 times smaller."""
    scale = _magnitude(draw, st)
    values = []
    for _ in range(count):
        if draw(st.integers(0, 9)) == 0:
            values.append(0.0)
        else:
            mantissa = draw(st.floats(0.001, 1.0, allow_nan=False))
            values.append(mantissa * scale * 10.0 ** -draw(st.integers(0, 3)))
    return values


def wild_snapshots(
    *,
    shape: str = "general",
    max_nodes: int = 5,
    max_key_groups: int = 10,
    spread: str = "never",
) -> Any:
    """A hypothesis strategy of valid snapshots across magnitudes (see the module docstring);
    ``spread`` is ``"never"``, ``"some"`` or ``"always"``."""
    from hypothesis import strategies as st

    if spread not in ("never", "some", "always"):
        raise ValueError(f"spread = {spread!r}, must be 'never', 'some' or 'always'")

    @st.composite
    def build(draw: Callable[[Any], Any]) -> Snapshot:
        n_nodes = draw(st.integers(1, max_nodes))
        n_removing = draw(st.integers(0, n_nodes - 1))
        n_new = draw(st.integers(0, n_nodes - 1 - n_removing)) if n_nodes - n_removing > 1 else 0
        unit = _magnitude(draw, st, -3, 3)  # capacities are relative: any common unit
        homogeneous = shape == "interval" or draw(st.booleans())
        caps = [
            unit if homogeneous else unit * draw(st.sampled_from([0.5, 1.0, 2.0, 3.0]))
            for _ in range(n_nodes)
        ]
        nodes = [
            Node(f"n{i}", capacity=caps[i], removing=i < n_removing, cores=draw(st.integers(1, 4)))
            for i in range(n_nodes)
        ]
        n_ops = 1 if shape == "interval" else draw(st.integers(1, 2))
        # hypothesis favours 0 (its simplest value) for about 1 in 5 draws; an empty snapshot is
        # worth 1 in 10 at most, the rest is better spent on key groups
        n_kg = 0 if draw(st.integers(0, 9)) == 9 else draw(st.integers(1, max(max_key_groups, 1)))
        loads = _amounts(draw, st, n_kg)
        sizes = _amounts(draw, st, n_kg)
        queueing = shape == "queueing" or draw(st.booleans())
        arrivals = _amounts(draw, st, n_kg) if queueing else [None] * n_kg
        # service rates near the arrival rates (stable and unstable queues), never below the
        # model's MIN_SERVICE_RATE
        service = [None if a is None else max((a or 1.0) * draw(st.floats(0.1, 4.0)), 1e-6) for a in arrivals]
        key_groups = [
            KeyGroup(
                f"op{k % n_ops}/{k // n_ops}",
                f"op{k % n_ops}",
                loads[k],
                sizes[k],
                index=k // n_ops,
                arrival_rate=arrivals[k],
                service_rate=service[k],
            )
            for k in range(n_kg)
        ]
        holders = [n.id for n in nodes[: n_nodes - n_new]]
        if shape == "interval":
            # contiguous runs in index order, one per holder (some holders may get none)
            cuts = sorted(
                draw(st.lists(st.integers(0, n_kg), min_size=len(holders) - 1, max_size=len(holders) - 1))
            )
            bounds = [0, *cuts, n_kg]
            assignment = {
                key_groups[k].id: holders[j]
                for j in range(len(holders))
                for k in range(bounds[j], bounds[j + 1])
            }
        else:
            assignment = {kg.id: draw(st.sampled_from(holders)) for kg in key_groups}
        edges = []
        if n_kg >= 2 and draw(st.booleans()):
            ids = [kg.id for kg in key_groups]
            pairs = draw(st.lists(st.tuples(st.sampled_from(ids), st.sampled_from(ids)), max_size=8))
            rates = _amounts(draw, st, len(pairs))
            edges = [Traffic(a, b, r) for (a, b), r in zip(pairs, rates) if a != b]
        if spread == "always" and n_kg >= 2 or spread == "some" and draw(st.booleans()):
            key_groups = _with_spread(draw, st, key_groups, assignment)
        return Snapshot(nodes, key_groups, assignment, edges)

    return build()


def _with_spread(
    draw: Callable[[Any], Any], st: Any, key_groups: list[KeyGroup], assignment: Mapping[str, str]
) -> list[KeyGroup]:
    """``key_groups`` with spread values drawn from a few labels (ints or strings), valid in
    ``assignment``: a key group whose label is already on its node keeps none. The first two key
    groups on distinct nodes share a label, so a drawn snapshot always has a replica group when
    its placement allows one. Groups may have more members than there are active nodes: the
    planner must then keep what it cannot place apart (or refuse), never co-locate two."""
    labels = draw(st.sampled_from([[0, 1, 2], ["p0", "p1"], [0, "p1", 7, "p3"]]))
    codes = [draw(st.one_of(st.none(), st.sampled_from(labels))) for _ in key_groups]
    first = next(
        (
            k
            for k in range(1, len(key_groups))
            if assignment[key_groups[k].id] != assignment[key_groups[0].id]
        ),
        None,
    )
    if first is not None:
        codes[0] = codes[first] = labels[0]
    taken: set[tuple[Any, str]] = set()
    result = []
    for kg, code in zip(key_groups, codes):
        where = (code, assignment[kg.id])
        if code is None or where in taken:
            result.append(kg)
            continue
        taken.add(where)
        result.append(dataclasses.replace(kg, spread=code))
    return result


def fuzz_parameters(planner: str) -> Any:
    """A hypothesis strategy of parameters for ``planner``: budgets where it takes them (a number
    of moves, or a migration cost as a share of the total state size, filled in by
    :func:`fuzz_one`), small time limits for the solvers."""
    from hypothesis import strategies as st

    names = set(planner_class(planner).parameter_names())
    fixed: dict[str, Any] = {}
    if "time_limit" in names:
        fixed["time_limit"] = _TIME_LIMIT
    budget: dict[str, Any] = {}
    if "max_moves" in names:
        budget["max_moves"] = st.one_of(st.none(), st.integers(0, 6))
    if "max_migration_cost" in names:
        budget["max_migration_cost_share"] = st.one_of(
            st.none(), st.sampled_from([0.0, 0.01, 0.1, 0.3, 0.5, 1.0])
        )
    return st.fixed_dictionaries({**{k: st.just(v) for k, v in fixed.items()}, **budget})


@dataclass(frozen=True)
class Outcome:
    """What became of one fuzzed plan: ``kind`` (see the module docstring) and a one-line
    ``detail`` for failures and refusals (the refusal's message)."""

    kind: str
    detail: str = ""


def fuzz_one(planner: str, snapshot: Snapshot, params: Mapping[str, Any]) -> Outcome:
    """Plan ``snapshot`` with ``planner`` and ``params``; check the plan; classify the outcome."""

    params = dict(params)
    share = params.pop("max_migration_cost_share", None)
    if share is not None:
        params["max_migration_cost"] = share * math.fsum(kg.state_size for kg in snapshot.key_groups)
    try:
        instance = get_planner(planner, **params)
        plan = instance.plan(snapshot)
    except UnsupportedSnapshotError as err:
        return Outcome("unsupported", str(err))
    except PlannerBugError as err:
        return _invalid(err.problems)
    except Exception as err:  # everything else is a crash: the point of fuzzing
        last = traceback.extract_tb(err.__traceback__)[-1]
        return Outcome("crash", f"{type(err).__name__}: {err} (at {last.filename}:{last.lineno})")
    if not instance.tags().spread and any(kg.spread is not None for kg in snapshot.key_groups):
        return Outcome(
            "invalid plan",
            f"planner {planner!r} is not tagged 'spread' but planned a "
            "snapshot with spread values instead of refusing it",
        )
    problems = checks.plan_problems(
        snapshot,
        plan,
        max_moves=params.get("max_moves"),
        max_migration_cost=params.get("max_migration_cost"),
    )
    return _invalid(problems) if problems else Outcome("ok")


def _invalid(problems: list[str]) -> Outcome:
    # checks.plan_problems names the budget a plan breaks: "... exceed(s) the budget max_moves=..."
    kind = "budget violation" if any(" the budget max_" in p for p in problems) else "invalid plan"
    return Outcome(kind, "; ".join(problems[:3]))
