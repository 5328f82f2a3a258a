"""Why a plan is what it is: each goal before and after, a reason per move, and warnings.

:func:`explain` (also :meth:`albic.core.plan.Plan.explain`) compares the snapshot's placement with the
plan's on every goal albic plans for -- load distance, the most utilised node, load left on
removing nodes, collocation factor, state moved and budget used -- gives each move its reason and
lists what a user would want flagged. A plan file does not carry its snapshot, so the snapshot is
passed in (``albic explain PLAN.json --snapshot SNAPSHOT.json``); a plan made in this process by
``planner.plan(snapshot)`` remembers its snapshot, so ``plan.explain()`` needs none.

Reasons, the first that applies:

- ``drain``: the key group leaves a removing node.
- ``collocate``: the move makes more of its traffic local: its traffic with key groups on the
  target (in the plan's placement) exceeds its traffic with those left on the source.
- ``balance``: anything else; the detail gives both nodes' utilisation before, as share of the mean.

Warnings: a removing node that still holds load; a budget that bound the result (all ``max_moves``
used, or too little ``max_migration_cost`` left for the smallest key group not moved) while the
load distance is not zero; a search that its time limit cut (status FEASIBLE from a planner whose
plans are otherwise proven optimal, or one that used its whole limit); a plan that found nothing.
The budgets and the time limit are those the plan records (``metrics["max_moves"]`` etc., written
by :meth:`albic.core.planner.Planner.plan`), or passed in for plans that lack them.

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

from albic.base.errors import InvalidSnapshotError
from albic.core import metrics
from albic.core.model import PlanStatus, Snapshot
from albic.core.registry import is_exact

if TYPE_CHECKING:  # the plan module imports this one: Plan.explain()
    from albic.core.plan import Plan

__all__ = ["explain", "explain_text"]

_TOL = 1e-9


def _goals_of(snapshot: Snapshot, assignment: Mapping[str, str]) -> dict[str, Any]:
    load = metrics.load_by_node(snapshot, assignment)
    active = [n for n in snapshot.nodes if not n.removing]
    top = max(active, key=lambda n: load[n.id] / n.capacity)
    mean = metrics.mean_utilisation(snapshot)
    return {
        "load_distance": metrics.load_distance(snapshot, assignment),
        "load_distance_pct": metrics.load_distance_pct(snapshot, assignment),
        "most_utilised": {"node": top.id, "utilisation": load[top.id] / top.capacity,
                          "of_mean": load[top.id] / top.capacity / mean if mean > 0 else None},
        "removing_load": math.fsum(load[n.id] for n in snapshot.nodes if n.removing),
        "collocation_factor": metrics.collocation_factor(snapshot, assignment),
    }


def _reason(snapshot: Snapshot, kid: str, source: str, target: str, final: Mapping[str, str],
            util_before: Mapping[str, float], mean: float,
            neighbours: Mapping[str, list[tuple[str, float]]], removing: set[str]) -> tuple[str, str]:
    if source in removing:
        return "drain", f"{source} is being removed"
    with_target = math.fsum(r for other, r in neighbours.get(kid, ()) if final[other] == target)
    with_source = math.fsum(r for other, r in neighbours.get(kid, ()) if final[other] == source)
    if with_target > with_source + _TOL:
        return "collocate", (f"{with_target:g} tuples/s with key groups on {target} become local "
                             f"({with_source:g} stay with {source})")
    share = (lambda n: f"{util_before[n] / mean:.2f}") if mean > 0 else (lambda n: "-")
    return "balance", (f"{source} at {share(source)} of the mean utilisation -> {target} at "
                       f"{share(target)}")


def check_fits(plan: Plan, snapshot: Snapshot) -> None:
    """Raise :class:`InvalidSnapshotError` unless ``plan`` was made for ``snapshot``: it places
    exactly the snapshot's key groups on its nodes, and each move starts where the key group is."""
    snapshot.validate()
    nodes = {n.id for n in snapshot.nodes}
    problems = [f"the plan does not place key group {kg.id!r}"
                for kg in snapshot.key_groups if kg.id not in plan.assignment]
    problems += [f"the plan places {kid!r} on {nid!r}, which the snapshot lacks"
                 for kid, nid in plan.assignment.items()
                 if kid not in snapshot.assignment or nid not in nodes]
    for move in plan.moves:
        here = snapshot.assignment.get(move.key_group)
        if here is not None and here != move.source:
            problems.append(f"the plan moves {move.key_group!r} from {move.source!r}, but the "
                            f"snapshot has it on {here!r}")
    if problems:
        shown = problems[:5] + ([f"... and {len(problems) - 5} more"] if len(problems) > 5 else [])
        raise InvalidSnapshotError(
            shown, subject="(is it the snapshot the plan was made for?)")


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
        exact = plan.__dict__["_exact"] if "_exact" in plan.__dict__ else is_exact(plan.planner)
    if snapshot is None:
        snapshot = plan.__dict__.get("_snapshot")
        if snapshot is None:
            raise InvalidSnapshotError(
                "a plan read from a file does not carry its snapshot: pass it "
                "(plan.explain(snapshot), or 'albic explain PLAN.json --snapshot SNAPSHOT.json')")
    check_fits(plan, snapshot)
    final = dict(plan.assignment)
    before, after = _goals_of(snapshot, snapshot.assignment), _goals_of(snapshot, final)
    goals = {name: {"before": before[name], "after": after[name]} for name in before}
    total_state = math.fsum(kg.state_size for kg in snapshot.key_groups)
    moved = math.fsum(m.cost for m in plan.moves)
    goals["state_moved"] = {"before": 0.0, "after": moved}

    limits = dict(plan.metrics)
    budget = {
        "moves": len(plan.moves),
        "max_moves": max_moves if max_moves is not None else limits.get("max_moves"),
        "migration_cost": moved,
        "migration_cost_pct": 100 * moved / total_state if total_state > 0 else 0.0,
        "max_migration_cost": (max_migration_cost if max_migration_cost is not None
                               else limits.get("max_migration_cost")),
    }
    time_limit = time_limit if time_limit is not None else limits.get("time_limit")
    goals["budget_used"] = {"before": 0.0, "after": _budget_share(budget)}

    nodes = {n.id: n for n in snapshot.nodes}
    removing = {n.id for n in snapshot.nodes if n.removing}
    load_before = metrics.load_by_node(snapshot, snapshot.assignment)
    util_before = {i: load_before[i] / nodes[i].capacity for i in nodes}
    active = [n for n in snapshot.nodes if not n.removing]
    mean = sum(load_before.values()) / sum(n.capacity for n in active)
    neighbours: dict[str, list[tuple[str, float]]] = {}
    for t in snapshot.traffic:
        neighbours.setdefault(t.src, []).append((t.dst, t.rate))
        neighbours.setdefault(t.dst, []).append((t.src, t.rate))
    moves = []
    for m in plan.moves:
        reason, detail = _reason(snapshot, m.key_group, m.source, m.target, final, util_before,
                                 mean, neighbours, removing)
        moves.append({"key_group": m.key_group, "from": m.source, "to": m.target, "cost": m.cost,
                      "reason": reason, "detail": detail})
    return {
        "planner": plan.planner,
        "status": str(plan.status),
        "goals": goals,
        "budget": budget,
        "moves": moves,
        "warnings": _warnings(snapshot, plan, final, after, budget, time_limit, exact),
    }


def _budget_share(budget: Mapping[str, Any]) -> float | None:
    """The larger share of a budget used (0..1), None without a budget."""
    shares = []
    if budget["max_moves"] is not None:
        shares.append(budget["moves"] / budget["max_moves"] if budget["max_moves"] else 1.0)
    if budget["max_migration_cost"] is not None:
        cap = budget["max_migration_cost"]
        shares.append(budget["migration_cost"] / cap if cap else 1.0)
    return max(shares) if shares else None


def _warnings(snapshot: Snapshot, plan: Plan, final: Mapping[str, str], after: Mapping[str, Any],
              budget: Mapping[str, Any], time_limit: float | None, exact: bool) -> list[str]:
    warnings = []
    load = metrics.load_by_node(snapshot, final)
    for n in snapshot.nodes:
        held = [kg.id for kg in snapshot.key_groups if final[kg.id] == n.id]
        if n.removing and held:
            warnings.append(f"removing node {n.id} still holds {len(held)} key group(s) with load "
                            f"{load[n.id]:g}: it cannot be shut down after this plan")
    if plan.status in (PlanStatus.INFEASIBLE, PlanStatus.NO_SOLUTION):
        reason = plan.details.get("reason") if isinstance(plan.details, Mapping) else None
        warnings.append(f"the planner found no plan ({plan.status}); the placement is unchanged"
                        + (f": {reason}" if reason else ""))
    improvable = after["load_distance"] > _TOL or after["removing_load"] > _TOL
    if improvable:
        bound = []
        if budget["max_moves"] is not None and budget["moves"] >= budget["max_moves"]:
            bound.append(f"all {budget['max_moves']} moves of max_moves used")
        cap = budget["max_migration_cost"]
        if cap is not None:
            unmoved = [kg.state_size for kg in snapshot.key_groups
                       if final[kg.id] == snapshot.assignment[kg.id]]
            left = cap - budget["migration_cost"]
            if unmoved and left + _TOL < min(unmoved):
                bound.append(f"max_migration_cost={cap:g} has {max(left, 0):g} left, less than "
                             f"the smallest key group not moved ({min(unmoved):g})")
        if bound:
            warnings.append(f"the budget bound the result ({'; '.join(bound)}): the load distance "
                            f"is still {after['load_distance_pct']:.2f}% of the mean")
    if time_limit is not None and plan.status is PlanStatus.FEASIBLE:
        if exact or plan.seconds >= 0.9 * time_limit:
            warnings.append(f"the time limit ({time_limit:g} s) cut the search: the plan is not "
                            "proven optimal; a longer time_limit may find a better one")
    return warnings


def explain_text(report: Mapping[str, Any]) -> str:
    """The explanation for people: goals, moves with reasons, warnings."""
    def fmt(value: Any) -> str:
        if value is None:
            return "-"
        if isinstance(value, dict):
            share = "" if value.get("of_mean") is None else f" ({value['of_mean']:.2f} x mean)"
            return f"{value['node']} {value['utilisation']:.4g}{share}"
        return f"{value:.4g}"

    lines = [f"{report['planner']}: {report['status']}", f"{'goal':<24} before  ->  after"]
    names = {"load_distance_pct": "load distance (% mean)", "most_utilised": "most utilised node",
             "removing_load": "load on removing", "collocation_factor": "collocation factor",
             "state_moved": "state moved", "budget_used": "budget used (share)"}
    for key, label in names.items():
        goal = report["goals"][key]
        lines.append(f"{label:<24} {fmt(goal['before'])}  ->  {fmt(goal['after'])}")
    lines.append(f"{len(report['moves'])} moves:")
    for m in report["moves"]:
        lines.append(f"  {m['key_group']}: {m['from']} -> {m['to']} ({m['cost']:,.0f} bytes) "
                     f"{m['reason']}: {m['detail']}")
    for w in report["warnings"]:
        lines.append(f"warning: {w}")
    return "\n".join(lines)
