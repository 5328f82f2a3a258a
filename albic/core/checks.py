"""The independent plan validator.

:func:`check_plan` re-derives everything a plan claims from the snapshot alone, in plain Python and
without :mod:`albic.core.metrics` or numpy, so that a mistake in the shared metric code or in a planner
cannot hide itself. :meth:`albic.core.planner.Planner.plan` runs it on every plan, and the conformance
suite (:mod:`albic.testing`) relies on it.

Example
-------
>>> from albic.core.model import Node, KeyGroup, Snapshot
>>> from albic.core.plan import Plan
>>> snap = Snapshot([Node("n1"), Node("n2")], [KeyGroup("a", "op", 1.0)], {"a": "n1"})
>>> plan_problems(snap, Plan("by-hand", "FEASIBLE", {}))
["the plan does not place key group 'a'"]
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from albic.base.errors import PlannerBugError
from albic.base.formats import count
from albic.core.model import Move, PlanStatus, Snapshot, spread_problems
from albic.core.plan import Plan

__all__ = ["check_plan", "plan_problems", "plain_type_problems", "rack_problems", "rack_limit"]

# Relative and absolute slack for budgets: a plan may exceed max_migration_cost by float noise only.
_REL_TOL = 1e-7
_ABS_TOL = 1e-9
# Slack for comparing a recomputed metric with the one a plan reports, relative to the magnitude of
# the numbers that went into it (a sum of loads, a total state size), never to the result alone: a
# load distance of exactly 0 computed by fsum here and by numpy's pairwise sum in albic.core.metrics
# differs by rounding in the last bits of the *loads* (1.9e-9 at loads of 10^6), while a real
# mistake is off by at least one key group's share. 1e-9 of the scale is 10^6 times any rounding
# of sums of up to 10^6 terms, and below any one key group that is not itself float noise.
_SCALE_TOL = 1e-9


def within_budget(cost: float, max_migration_cost: float | None) -> bool:
    """Whether ``cost`` respects ``max_migration_cost`` up to float noise (one rule everywhere)."""
    return max_migration_cost is None or cost <= max_migration_cost * (1 + _REL_TOL) + _ABS_TOL


def check_plan(
    snapshot: Snapshot,
    plan: Plan,
    *,
    max_moves: int | None = None,
    max_migration_cost: float | None = None,
) -> Plan:
    """Return ``plan`` if it keeps the planner contract, else raise :class:`PlannerBugError`.

    Checked: every key group placed exactly once on a known node; nothing moved onto a removing
    node; key groups of one ``spread`` value on distinct nodes, and over racks as
    :func:`rack_problems` says (for a plan with a solution); ``moves`` equal to the difference between the current and the new assignment, each costing
    its state size; the budgets; the current assignment kept when the status says no plan was found;
    reported metrics that agree with an independent recomputation; plain Python types only.
    """
    problems = plan_problems(snapshot, plan, max_moves=max_moves, max_migration_cost=max_migration_cost)
    if problems:
        raise PlannerBugError(problems, subject=f"from planner {getattr(plan, 'planner', '?')!r}")
    return plan


def plan_problems(
    snapshot: Snapshot,
    plan: Plan,
    *,
    max_moves: int | None = None,
    max_migration_cost: float | None = None,
) -> list[str]:
    """Every way ``plan`` breaks the contract for ``snapshot`` (empty when it keeps it)."""
    if not isinstance(plan, Plan):
        return [f"the planner returned a {type(plan).__name__}, expected albic.core.plan.Plan"]
    problems: list[str] = []
    if not isinstance(plan.status, PlanStatus):
        problems.append(f"status {plan.status!r} is not one of {[s.value for s in PlanStatus]}")
    nodes = {n.id: n for n in snapshot.nodes}
    current = dict(snapshot.assignment)
    new = plan.assignment
    if not isinstance(new, Mapping):
        return problems + [f"assignment is a {type(new).__name__}, expected a mapping"]

    for kg in snapshot.key_groups:
        if kg.id not in new:
            problems.append(f"the plan does not place key group {kg.id!r}")
    for kid, nid in new.items():
        if kid not in current:
            problems.append(f"the plan places unknown key group {kid!r}")
        elif type(nid) is not str or nid not in nodes:
            problems.append(f"key group {kid!r} is placed on unknown node {nid!r}")
        elif nid != current[kid] and nodes[nid].removing:
            problems.append(f"key group {kid!r} is moved onto removing node {nid!r}")
    if problems:
        return problems  # what follows assumes a complete, well-formed assignment

    problems += list(spread_problems(snapshot.key_groups, new, "would be"))
    if plan.status in (PlanStatus.OPTIMAL, PlanStatus.FEASIBLE):
        problems += rack_problems(snapshot, new)
    problems += _move_problems(snapshot, plan, current)
    problems += _budget_problems(plan, max_moves, max_migration_cost)
    if plan.status in (PlanStatus.INFEASIBLE, PlanStatus.NO_SOLUTION) and dict(new) != current:
        problems.append(f"status {plan.status.value} but the assignment differs from the current one")
    problems += _metric_problems(snapshot, plan)
    for name in ("objective", "bound"):
        value = getattr(plan, name)
        if value is not None and type(value) not in (float, int):
            problems.append(f"{name} is {value!r} ({type(value).__name__}), expected float or None")
    if type(plan.seconds) is not float or not plan.seconds >= 0:
        problems.append(f"seconds is {plan.seconds!r}, expected a float >= 0")
    problems += plain_type_problems(dict(plan.metrics), "metrics")
    problems += plain_type_problems(dict(plan.details), "details")
    return problems


def rack_limit(replicas: int, active_per_rack: Mapping[str, int]) -> int:
    """The most replicas of one ``spread`` value a rack may hold: the least ``m >= 1`` with
    ``sum over racks of min(m, active nodes of the rack) >= replicas`` -- 1 (no two on one rack)
    when there are at least as many racks as replicas, else as evenly as the racks' active nodes
    allow."""
    m = 1
    while m < replicas and sum(min(m, b) for b in active_per_rack.values()) < replicas:
        m += 1
    return m


def rack_problems(snapshot: Snapshot, assignment: Mapping[str, str]) -> list[str]:
    """Where ``assignment`` breaks the rack rule (empty for a snapshot without racks).

    For each ``spread`` value with ``r`` key groups (a Kafka partition's replicas), with ``m =``
    :func:`rack_limit`: every rack holds at most ``m`` of them, and every rack with active nodes at
    least ``min(its active nodes, m - 1)`` -- with ``m = 1`` no two replicas share a rack; otherwise
    they spread as evenly as the racks allow (Cruise Control's RackAwareGoal and
    RackAwareDistributionGoal: no rack short of a replica while another has two more).
    """
    rack = {n.id: n.rack for n in snapshot.nodes}
    if not any(r is not None for r in rack.values()):
        return []
    active: dict[str, int] = {}
    for node in snapshot.nodes:
        if not node.removing:
            active[node.rack] = active.get(node.rack, 0) + 1
    members: dict[Any, list[str]] = {}
    for kg in snapshot.key_groups:
        if kg.spread is not None:
            members.setdefault(kg.spread, []).append(kg.id)
    problems = []
    for spread, ids in members.items():
        m = rack_limit(len(ids), active)
        held: dict[str, int] = {}
        for kid in ids:
            held[rack[assignment[kid]]] = held.get(rack[assignment[kid]], 0) + 1
        for name, held_there in sorted(held.items()):
            if held_there > m:
                problems.append(
                    f"spread {spread!r}: rack {name!r} would hold {held_there} of its {len(ids)} key groups; "
                    f"at most {m} may share a rack (with {len(active)} racks of active nodes)"
                )
        for name, nodes in sorted(active.items()):
            need = min(nodes, m - 1)
            if held.get(name, 0) < need:
                problems.append(
                    f"spread {spread!r}: rack {name!r} would hold {held.get(name, 0)} of its {len(ids)} "
                    f"key groups while another holds {m}; each rack must hold at least {need} "
                    "(spread over racks as evenly as their nodes allow)"
                )
    return problems


def _move_problems(snapshot: Snapshot, plan: Plan, current: dict[str, str]) -> list[str]:
    sizes = {kg.id: kg.state_size for kg in snapshot.key_groups}
    expected = {
        kid: Move(kid, current[kid], nid, sizes[kid])
        for kid, nid in plan.assignment.items()
        if nid != current[kid]
    }
    reported: dict[str, Move] = {}
    problems = []
    for move in plan.moves:
        if not isinstance(move, Move):
            problems.append(f"moves holds a {type(move).__name__}, expected albic.core.model.Move")
        elif move.key_group in reported:
            problems.append(f"key group {move.key_group!r} is moved twice")
        else:
            reported[move.key_group] = move
    for kid, move in expected.items():
        if kid not in reported:
            problems.append(f"key group {kid!r} changes node but has no move")
        elif reported[kid] != move:
            problems.append(f"move of {kid!r} is {reported[kid]}, expected {move}")
    for kid in reported.keys() - expected.keys():
        problems.append(f"key group {kid!r} has a move but keeps its node")
    return problems


def _budget_problems(plan: Plan, max_moves: int | None, max_migration_cost: float | None) -> list[str]:
    problems = []
    if max_moves is not None and len(plan.moves) > max_moves:
        n = len(plan.moves)
        problems.append(f"{count(n, 'move')} exceed{'s' * (n == 1)} the budget max_moves={max_moves}")
    if max_migration_cost is not None:
        cost = math.fsum(m.cost for m in plan.moves)
        if not within_budget(cost, max_migration_cost):
            problems.append(
                f"migration cost {cost:g} exceeds the budget max_migration_cost={max_migration_cost:g}"
            )
    return problems


def _load_distance(snapshot: Snapshot, assignment: Mapping[str, str]) -> float:
    loads: dict[str, list[float]] = {n.id: [] for n in snapshot.nodes}
    for kg in snapshot.key_groups:
        loads[assignment[kg.id]].append(kg.load)
    load = {nid: math.fsum(values) for nid, values in loads.items()}
    active = [n for n in snapshot.nodes if not n.removing]
    mean = math.fsum(load.values()) / math.fsum(n.capacity for n in active)
    return max(abs(load[n.id] / n.capacity - mean) for n in active)


def _utilisation_scale(snapshot: Snapshot) -> float:
    """The largest utilisation any placement could give: all load on the smallest active node."""
    smallest = min(n.capacity for n in snapshot.nodes if not n.removing)
    return math.fsum(kg.load for kg in snapshot.key_groups) / smallest


def _metric_problems(snapshot: Snapshot, plan: Plan) -> list[str]:
    load_scale = _utilisation_scale(snapshot)
    state_scale = math.fsum(kg.state_size for kg in snapshot.key_groups)
    expected = {  # name: (recomputed value, magnitude of the numbers it is computed from)
        "moves": (len(plan.moves), 0.0),
        "migration_cost": (math.fsum(m.cost for m in plan.moves), state_scale),
        "load_distance": (_load_distance(snapshot, plan.assignment), load_scale),
        "load_distance_before": (_load_distance(snapshot, snapshot.assignment), load_scale),
    }
    problems = []
    for name, (value, scale) in expected.items():
        if name not in plan.metrics:
            problems.append(f"metrics lack {name!r}")
        elif not _agrees(plan.metrics[name], value, scale):
            problems.append(
                f"metrics[{name!r}] = {plan.metrics[name]!r}, recomputed {value!r} "
                f"(tolerance {_SCALE_TOL:g} x {scale:g})"
            )
    return problems


def _agrees(reported: Any, recomputed: float, scale: float) -> bool:
    """Whether a reported metric equals its recomputation up to rounding of numbers of ``scale``."""
    if isinstance(reported, bool) or not isinstance(reported, (int, float)):
        return False
    return math.isclose(reported, recomputed, rel_tol=_REL_TOL, abs_tol=_SCALE_TOL * scale)


_PLAIN_SCALARS = (str, int, float, bool, type(None))


def plain_type_problems(value: Any, where: str) -> list[str]:
    """Where ``value`` holds anything but plain JSON-ready Python types (dict, list, str, ...)."""
    if type(value) in _PLAIN_SCALARS:
        if type(value) is float and not math.isfinite(value):
            return [f"{where} is {value!r}; JSON has no NaN or infinity (use None)"]
        return []
    if type(value) is dict:
        problems = []
        for key, item in value.items():
            if type(key) is not str:
                problems.append(f"{where} has key {key!r} ({type(key).__name__}), expected str")
            problems += plain_type_problems(item, f"{where}[{key!r}]")
        return problems
    if type(value) is tuple:
        return [
            f"{where} is a tuple; use a list (JSON has no tuples, so a tuple would not survive a round trip)"
        ]
    if type(value) is list:
        problems = []
        for i, item in enumerate(value):
            problems += plain_type_problems(item, f"{where}[{i}]")
        return problems
    return [
        f"{where} is {value!r} of type {type(value).__module__}.{type(value).__name__}, "
        "expected a plain Python type (dict, list, str, int, float, bool, None)"
    ]
