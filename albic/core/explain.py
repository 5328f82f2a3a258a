"""Why a plan is what it is: each goal before and after, a reason per move, and warnings.

:func:`explain` (also :meth:`albic.core.plan.Plan.explain`) compares the snapshot's placement with the
plan's on every goal albic plans for -- load distance, the most utilised node, load left on
removing nodes, collocation factor, state moved and budget used -- gives each move its reason and
lists what a user would want flagged. A plan file does not carry its snapshot, so the snapshot is
passed in (``albic explain PLAN.json --snapshot SNAPSHOT.json``); a plan made in this process by
``planner.plan(snapshot)`` remembers its snapshot, so ``plan.explain()`` needs none.

Reasons: :mod:`albic.core.reasons`, the one vocabulary every command uses (``drain``, ``collocate``,
``balance``).

Warnings: a removing node that still holds load; a key group that sets the floor (one key group
alone too heavy for any node to stay near the mean: no placement, with any budget, goes below the
floor, and a plan at it is told so instead of blaming the budget; :func:`key_group_floor`); a
budget that bound the result (all ``max_moves`` used, or too little ``max_migration_cost`` left
for the smallest key group not moved) while the load distance is above that floor, with the
least load distance any plan within the budget can reach (the counting bound of
:mod:`albic.solvers.balance_bound`); a plan that lowers the collocation factor (by how many percentage
points, and how much traffic more crosses nodes); a search that a limit cut (status
FEASIBLE, and the limit the plan's ``details["stopped_by"]`` names; from a planner that does not say,
one whose plans are otherwise proven optimal or one that used its whole limit); a plan that found
nothing.
The budgets and the time limit are those the plan records (``metrics["max_moves"]`` etc., written
by :meth:`albic.core.planner.Planner.plan`), or passed in for plans that lack them; a value passed
in that contradicts the record, or is not a valid limit (a negative budget), is refused.

Example
-------
>>> from albic.core.model import Node, KeyGroup, Snapshot
>>> from albic.core.planner import get_planner
>>> snap = Snapshot([Node("a", removing=True), Node("b"), Node("c")],
...                 [KeyGroup("x", "op", 2.0, 10), KeyGroup("y", "op", 1.0, 10)],
...                 {"x": "a", "y": "b"})
>>> report = get_planner("flux", max_moves=1).plan(snap).explain()
>>> report["moves"][0]["reason"], report["goals"]["removing_load"]
('drain', {'before': 2.0, 'after': 0.0})
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from albic.base.errors import InvalidParameterError, InvalidSnapshotError, NotMadeForError
from albic.base.formats import count, number, percent, points, seconds, share, size, times
from albic.core import metrics
from albic.core.model import PlanStatus, Snapshot
from albic.core.reasons import move_reasons
from albic.core.registry import is_exact
from albic.solvers.balance_bound import key_group_floor as floor_of
from albic.solvers.balance_bound import load_distance_bound

if TYPE_CHECKING:  # the plan module imports this one: Plan.explain()
    from albic.core.plan import Plan

__all__ = [
    "explain",
    "explain_text",
    "budget_share",
    "check_fits",
    "check_made_for",
    "key_group_floor",
    "reaches_floor",
    "AT_FLOOR",
]

_TOL = 1e-9
#: A load distance this close to the key-group floor (relative) is at it: the floor is exact
#: arithmetic, a plan's load distance a sum of floats.
AT_FLOOR = 1e-6


def key_group_floor(snapshot: Snapshot) -> dict[str, Any] | None:
    """The load distance no placement of ``snapshot`` goes below, whatever the budget, and the key
    group that sets it (:func:`albic.solvers.balance_bound.key_group_floor`): ``{"key_group", "load",
    "of_mean"`` (its load over the mean utilisation of the largest node), ``"load_distance",
    "load_distance_pct"}``; None when no key group is heavy enough to set one.

    >>> from albic.core.model import Node, KeyGroup
    >>> snap = Snapshot([Node("a"), Node("b")], [KeyGroup("x", "op", 7.0), KeyGroup("y", "op", 3.0)],
    ...                 {"x": "a", "y": "a"})
    >>> floor = key_group_floor(snap)
    >>> floor["key_group"], floor["of_mean"], floor["load_distance_pct"]
    ('x', 1.4, 40.0)
    """
    arrays = snapshot.arrays()
    distance, k = floor_of(arrays.loads, arrays.capacities, arrays.removing)
    mean = metrics.mean_utilisation(snapshot)
    if k < 0 or mean <= 0:
        return None
    largest = float(arrays.capacities[arrays.active].max())
    return {
        "key_group": arrays.key_group_ids[k],
        "load": float(arrays.loads[k]),
        "of_mean": float(arrays.loads[k] / largest / mean),
        "load_distance": distance,
        "load_distance_pct": 100.0 * distance / mean,
    }


def reaches_floor(load_distance: Any, floor: Any) -> Any:
    """Whether ``load_distance`` is at the key-group ``floor`` (the same unit: absolute or % of the
    mean), forgiving :data:`AT_FLOOR` of it and float noise; element-wise on arrays and Series.

    >>> reaches_floor(40.00001, 40.0), reaches_floor(40.1, 40.0)
    (True, False)
    """
    return load_distance <= floor * (1 + AT_FLOOR) + _TOL


def _at_floor(load_distance: float, floor: Mapping[str, Any] | None) -> bool:
    return floor is not None and bool(reaches_floor(load_distance, floor["load_distance"]))


def _budget_bound(snapshot: Snapshot, budget: Mapping[str, Any]) -> float | None:
    """The least load distance any plan within ``budget`` reaches, in % of the mean (counting
    bound, :func:`albic.solvers.balance_bound.load_distance_bound`); None without a budget."""
    if budget["max_moves"] is None and budget["max_migration_cost"] is None:
        return None
    arrays = snapshot.arrays()
    bound = load_distance_bound(
        arrays.loads,
        arrays.current,
        arrays.capacities,
        arrays.removing,
        max_moves=budget["max_moves"],
        max_cost=budget["max_migration_cost"],
        state_sizes=arrays.state_sizes,
    )
    mean = metrics.mean_utilisation(snapshot)
    return 100.0 * bound / mean if mean > 0 else 0.0


def _goals_of(snapshot: Snapshot, assignment: Mapping[str, str]) -> dict[str, Any]:
    load = metrics.load_by_node(snapshot, assignment)
    active = [n for n in snapshot.nodes if not n.removing]
    top = max(active, key=lambda n: load[n.id] / n.capacity)
    mean = metrics.mean_utilisation(snapshot)
    return {
        "load_distance": metrics.load_distance(snapshot, assignment),
        "load_distance_pct": metrics.load_distance_pct(snapshot, assignment),
        "most_utilised": {
            "node": top.id,
            "utilisation": load[top.id] / top.capacity,
            "of_mean": load[top.id] / top.capacity / mean if mean > 0 else None,
        },
        "removing_load": math.fsum(load[n.id] for n in snapshot.nodes if n.removing),
        "collocation_factor": metrics.collocation_factor(snapshot, assignment),
    }


def check_made_for(plan: Plan, snapshot: Snapshot) -> None:
    """Raise :class:`NotMadeForError` when ``plan`` records the digest of another snapshot than
    ``snapshot`` (:meth:`albic.core.model.Snapshot.digest`): its figures would be those of a
    snapshot it was not made for.

    >>> from albic.core.model import Node, KeyGroup
    >>> from albic.core.planner import get_planner
    >>> snap = Snapshot([Node("a"), Node("b")], [KeyGroup("x", "op", 1.0)], {"x": "a"}, period="h0")
    >>> plan = get_planner("flux").plan(snap)
    >>> check_made_for(plan, snap.with_assignment({"x": "b"}))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    albic.base.errors.NotMadeForError: the flux plan was made for another snapshot than the one given (period h0, digest ...
    """
    record = plan.made_from_record() or {}
    digest = record.get("snapshot")
    if digest is None or snapshot is plan.snapshot or digest == snapshot.digest():
        return
    raise NotMadeForError(
        f"the {plan.planner} plan was made for another snapshot than the one given (period "
        f"{record.get('period')}, digest {_short(digest)}; given: period {snapshot.period}, digest "
        f"{_short(snapshot.digest())}): its figures would be that snapshot's, not the plan's; pass "
        "the snapshot it was made for"
    )


def _short(digest: str) -> str:
    return digest.removeprefix("sha256:")[:12]


def check_fits(plan: Plan, snapshot: Snapshot) -> None:
    """Raise unless ``plan`` was made for ``snapshot``: a :class:`NotMadeForError` when the plan
    records another snapshot (:meth:`albic.core.plan.Plan.made_from_record`: its digest), else an
    :class:`InvalidSnapshotError` unless it places exactly the snapshot's key groups on its nodes
    and each move starts where the key group is (what a plan without the record is checked by)."""
    snapshot.validate()
    check_made_for(plan, snapshot)
    nodes = {n.id for n in snapshot.nodes}
    problems = [
        f"the plan does not place key group {kg.id!r}"
        for kg in snapshot.key_groups
        if kg.id not in plan.assignment
    ]
    problems += [
        f"the plan places {kid!r} on {nid!r}, which the snapshot lacks"
        for kid, nid in plan.assignment.items()
        if kid not in snapshot.assignment or nid not in nodes
    ]
    for move in plan.moves:
        here = snapshot.assignment.get(move.key_group)
        if here is not None and here != move.source:
            problems.append(
                f"the plan moves {move.key_group!r} from {move.source!r}, but the snapshot has it on {here!r}"
            )
    if problems:
        shown = problems[:5] + ([f"... and {len(problems) - 5} more"] if len(problems) > 5 else [])
        raise InvalidSnapshotError(shown, subject="(is it the snapshot the plan was made for?)")


def explain(
    plan: Plan,
    snapshot: Snapshot | None = None,
    *,
    max_moves: int | None = None,
    max_migration_cost: float | None = None,
    time_limit: float | None = None,
    exact: bool | None = None,
) -> dict[str, Any]:
    """The explanation of ``plan`` for ``snapshot`` (see the module docstring), as plain data:
    ``{"planner", "status", "goals": {name: {"before", "after"}}, "budget", "moves": [{"key_group",
    "from", "to", "cost", "reason", "detail"}], "warnings": [...]}``.

    ``exact``: whether the planner proves its plans optimal when its search is not cut (its
    ``tags().exact``); by default what the planner that made the plan in this process said, or
    for a plan read from a file what the registry says of its name (:func:`albic.core.registry.is_exact`).
    """
    if exact is None:
        exact = plan.exact if plan.exact is not None else is_exact(plan.planner)
    if snapshot is None:
        snapshot = plan.snapshot
        if snapshot is None:
            raise InvalidSnapshotError(
                "a plan read from a file does not carry its snapshot: pass it as parameter "
                "snapshot (plan.explain(snapshot))"
            )
    check_fits(plan, snapshot)
    final = dict(plan.assignment)
    before, after = _goals_of(snapshot, snapshot.assignment), _goals_of(snapshot, final)
    goals = {name: {"before": before[name], "after": after[name]} for name in before}
    total_state = math.fsum(kg.state_size for kg in snapshot.key_groups)
    moved = math.fsum(m.cost for m in plan.moves)
    goals["state_moved"] = {"before": 0.0, "after": moved}

    budget = {
        "moves": len(plan.moves),
        "max_moves": _limit(plan, "max_moves", max_moves),
        "migration_cost": moved,
        "migration_cost_pct": 100 * moved / total_state if total_state > 0 else 0.0,
        "max_migration_cost": _limit(plan, "max_migration_cost", max_migration_cost),
    }
    time_limit = _limit(plan, "time_limit", time_limit)
    goals["budget_used"] = {"before": 0.0, "after": budget_share(budget)}
    budget["bound_load_distance_pct"] = _budget_bound(snapshot, budget)

    moves = [
        {
            "key_group": m.key_group,
            "from": m.source,
            "to": m.target,
            "cost": m.cost,
            "reason": reason,
            "detail": detail,
        }
        for m, (reason, detail) in zip(plan.moves, move_reasons(snapshot, plan))
    ]
    return {
        "planner": plan.planner,
        "status": str(plan.status),
        "goals": goals,
        "budget": budget,
        "floor": key_group_floor(snapshot),
        "moves": moves,
        "payoff": dict(plan.details.get("payoff") or {}),
        "warnings": _warnings(snapshot, plan, final, before, after, budget, time_limit, exact),
    }


# What each limit :func:`explain` takes must be.
_LIMITS = {
    "max_moves": (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0, "a whole number >= 0"),
    "max_migration_cost": (
        lambda v: isinstance(v, (int, float)) and 0 <= v < math.inf,
        "a number of bytes >= 0",
    ),
    "time_limit": (lambda v: isinstance(v, (int, float)) and 0 < v < math.inf, "a number of seconds > 0"),
}


def _limit(plan: Plan, name: str, given: Any) -> Any:
    """The limit ``name`` the plan was made under: the one it records (albic records every limit
    its planner has, ``None`` for none), else ``given`` for a plan that records none. A given
    value that contradicts the record, or is not a valid limit, is refused."""
    if given is not None and not _LIMITS[name][0](given):
        raise InvalidParameterError(f"parameter {name} = {given!r}: must be {_LIMITS[name][1]}")
    recorded = dict(plan.metrics)
    if name not in recorded:
        return given
    if given is not None and given != recorded[name]:
        raise InvalidParameterError(
            f"parameter {name} = {given!r}, but the plan records {name} = {recorded[name]!r}, the "
            "limit it was made under; the parameter is for plans that record none"
        )
    return recorded[name]


def budget_share(budget: Mapping[str, Any]) -> float | None:
    """The larger share of a budget used (0..1), None without a budget."""
    shares = []
    if budget["max_moves"] is not None:
        shares.append(budget["moves"] / budget["max_moves"] if budget["max_moves"] else 1.0)
    if budget["max_migration_cost"] is not None:
        cap = budget["max_migration_cost"]
        shares.append(budget["migration_cost"] / cap if cap else 1.0)
    return max(shares) if shares else None


def _warnings(
    snapshot: Snapshot,
    plan: Plan,
    final: Mapping[str, str],
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    budget: Mapping[str, Any],
    time_limit: float | None,
    exact: bool,
) -> list[str]:
    warnings = []
    load = metrics.load_by_node(snapshot, final)
    for n in snapshot.nodes:
        held = [kg.id for kg in snapshot.key_groups if final[kg.id] == n.id]
        if n.removing and held:
            warnings.append(
                f"removing node {n.id} still holds {count(len(held), 'key group')} "
                f"with load {number(load[n.id])}: it cannot be shut down after this plan"
            )
    if plan.no_plan_reason is not None:
        warnings.append(
            f"the planner found no plan ({plan.status}); the placement is unchanged: {plan.no_plan_reason}"
        )
    floor = key_group_floor(snapshot)
    at_floor = after["removing_load"] <= _TOL and _at_floor(after["load_distance"], floor)
    warnings += _balance_warnings(snapshot, final, after, budget, floor if at_floor else None)
    lost = before["collocation_factor"] - after["collocation_factor"]
    if lost > _TOL:
        crossing = metrics.remote_traffic(snapshot, final) - metrics.remote_traffic(
            snapshot, snapshot.assignment
        )
        warnings.append(
            f"the plan lowers the collocation factor by {points(lost)}, from "
            f"{share(before['collocation_factor'])} to "
            f"{share(after['collocation_factor'])} of the traffic: "
            f"{number(crossing)} tuples/s more cross between nodes"
        )
    if time_limit is not None and plan.status is PlanStatus.FEASIBLE and not at_floor:
        cut = _limit_that_cut(plan, time_limit, exact)
        if cut is not None:
            warnings.append(
                f"{cut} cut the search: the plan is not proven optimal; a longer time_limit may "
                "find a better one"
            )
    return warnings


def _limit_that_cut(plan: Plan, time_limit: float, exact: bool) -> str | None:
    """The limit that ended an unproven plan's search, None when none did. A planner that says
    (``details["stopped_by"]``, albic.planners.work) is taken at its word: a search that ended on
    its own ("done") was not cut, and more time would not change it. Otherwise an exact planner's
    unproven plan, or one that used nearly all of its time, was cut by the time limit."""
    limit = seconds(time_limit)
    stopped_by = plan.details.get("stopped_by")
    if stopped_by is not None:
        return {
            "time limit": f"the time limit ({limit})",
            "work budget": f"the work budget (time_limit={time_limit:g} in deterministic mode)",
            "wall clock": "the wall-clock safety net (wall_clock_limit; the plan is not deterministic)",
        }.get(stopped_by)
    if exact or plan.seconds >= 0.9 * time_limit:
        return f"the time limit ({limit})"
    return None


def _balance_warnings(
    snapshot: Snapshot,
    final: Mapping[str, str],
    after: Mapping[str, Any],
    budget: Mapping[str, Any],
    reached: Mapping[str, Any] | None,
) -> list[str]:
    """Why the load distance stays where it is: the key-group floor the plan ``reached`` (no
    budget helps, and no search does better), or the budget that bound the result (with the
    least any plan within it reaches)."""
    if reached is not None:
        floor = reached
        return [
            f"a key group sets the floor: {floor['key_group']} alone carries {times(floor['of_mean'])} "
            f"the mean utilisation, so no placement goes below {percent(floor['load_distance_pct'])} "
            "of the mean whatever the budget; this plan is at that floor: no plan, with any budget or time limit, does better"
        ]
    if after["load_distance"] <= _TOL and after["removing_load"] <= _TOL:
        return []
    floor = key_group_floor(snapshot)
    used = _budget_limits(snapshot, final, budget)
    if not used:
        return []
    text = (
        f"the budget bound the result ({'; '.join(used)}): the load distance is still "
        f"{percent(after['load_distance_pct'])} of the mean"
    )
    bound = budget["bound_load_distance_pct"] or 0.0
    keeps = (
        None
        if floor is None
        else f"{floor['key_group']} alone keeps every placement at {percent(floor['load_distance_pct'])} or more"
    )
    if keeps is not None and floor["load_distance_pct"] >= bound:
        return [f"{text}; {keeps}, whatever the budget"]  # the floor is the better bound
    if bound > 0:
        text += f"; no plan within this budget goes below {percent(bound)}"
    return [text + (f" ({keeps})" if keeps else "")]


def _budget_limits(snapshot: Snapshot, final: Mapping[str, str], budget: Mapping[str, Any]) -> list[str]:
    """The budgets the plan used up: all ``max_moves``, or too little ``max_migration_cost`` left
    for the smallest key group not moved."""
    used = []
    if budget["max_moves"] is not None and budget["moves"] >= budget["max_moves"]:
        used.append(f"all {count(budget['max_moves'], 'move')} of max_moves used")
    cap = budget["max_migration_cost"]
    if cap is not None:
        unmoved = [kg.state_size for kg in snapshot.key_groups if final[kg.id] == snapshot.assignment[kg.id]]
        left = cap - budget["migration_cost"]
        if unmoved and left + _TOL < min(unmoved):
            used.append(
                f"max_migration_cost={cap:g} has {size(max(left, 0))} left, less "
                f"than the smallest key group not moved ({size(min(unmoved))})"
            )
    return used


#: The goals of :func:`explain_text`, in order: key -> (label, format of its values).
_GOALS = {
    "load_distance_pct": ("load distance (of mean)", percent),
    "most_utilised": (
        "most utilised node",
        lambda v: (
            "-"
            if v is None
            else f"{v['node']} {number(v['utilisation'])}"
            + ("" if v.get("of_mean") is None else f" ({times(v['of_mean'])} mean)")
        ),
    ),
    "removing_load": ("load on removing nodes", number),
    "collocation_factor": ("collocation factor", share),
    "state_moved": ("state moved", size),
    "budget_used": ("budget used", share),
}


def explain_text(report: Mapping[str, Any]) -> str:
    """The explanation for people: goals, moves with reasons, warnings."""
    rows = [("goal", "before", "after")]
    rows += [
        (label, shown(report["goals"][key]["before"]), shown(report["goals"][key]["after"]))
        for key, (label, shown) in _GOALS.items()
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(2)]
    lines = [f"{report['planner']}: {report['status']}"]
    lines += [f"{goal:<{widths[0]}}  {was:>{widths[1]}}  ->  {now}" for goal, was, now in rows]
    moves = report["moves"]
    lines.append(f"{count(len(moves), 'move')}{':' if moves else ''}")
    for m in moves:
        lines.append(
            f"  {m['key_group']}: {m['from']} -> {m['to']} ({size(m['cost'])}) {m['reason']}: {m['detail']}"
        )
    if report.get("payoff"):
        lines.append(_payoff_line(report["payoff"]))
    for w in report["warnings"]:
        lines.append(f"warning: {w}")
    return "\n".join(lines)


def _payoff_line(judged: Mapping[str, Any]) -> str:
    """Whether the plan's moves pay (:func:`albic.core.payoff.only_moves_that_pay`), in words."""
    kept, dropped = judged["moves_kept"], judged["moves_dropped"]
    if judged["pays"]:
        verdict = f"the {kept} that pay are applied" + (
            f", {dropped} that did not {'was' if dropped == 1 else 'were'} dropped" if dropped else ""
        )
    else:
        verdict = f"of the planner's {kept + dropped} moves none is applied ({dropped} did not pay alone, the rest not in all)"
    breaks_even = judged["break_even_periods"]
    even = (
        "at once (no cost given)"
        if breaks_even == 0
        else ("never" if breaks_even is None else f"after {breaks_even:.1f} periods")
    )
    exact = (
        ""
        if judged.get("load_errors_known", True)
        else " (no load_error in the snapshot: loads taken as exact)"
    )
    return (
        f"payoff{exact}: expected gain {judged['expected_gain_pct']:.2f} points of load distance a period, "
        f"noise {judged['gain_noise_pct']:.2f}, cost {judged['cost_pct']:.2f} (applied when gain - "
        f"{judged['z']:g} x noise > cost + {judged['margin']:g}); breaks even {even}; {verdict}"
    )
