"""From a solve of ALBIC's MILP to a plan: the key groups' nodes, the details a plan reports, and
why a solve found nothing (shared by :class:`~albic.planners.albic_milp.MilpPlanner` and
:class:`~albic.planners.albic_milp.AlbicPlanner`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from albic.core import metrics
from albic.core.model import PlanStatus, Snapshot
from albic.core.plan import Plan
from albic.core.planner import Planner
from albic.planners.milp_items import Items, Outcome, named_levels
from albic.planners.work import WALL_CLOCK

__all__ = [
    "planned_result",
    "node_of_outcome",
    "removing_nodes_holding",
    "no_plan_reason",
    "active_load_distance_pct",
    "item_homes",
    "spread_clash",
]


def planned_result(
    planner: Planner,
    snapshot: Snapshot,
    outcome: Outcome,
    fallback: np.ndarray,
    details: dict[str, Any],
    item_members: list[np.ndarray] | None = None,
) -> Plan:
    """The plan of a solve's :class:`~albic.planners.milp_items.Outcome`: the key groups' nodes (over
    items when ``item_members`` is given; ``fallback`` when nothing was found), the status, the
    objective levels, removing nodes still holding key groups, and the proven lower bound."""
    arrays = snapshot.arrays()
    status = PlanStatus(outcome.status)
    if outcome.value is None or status in (PlanStatus.INFEASIBLE, PlanStatus.NO_SOLUTION):
        node_of = np.asarray(fallback)
        status = PlanStatus.INFEASIBLE if status is PlanStatus.INFEASIBLE else PlanStatus.NO_SOLUTION
        objective = None
    else:
        if item_members is None:
            node_of = outcome.where
        else:
            node_of = np.empty(len(arrays.key_group_ids), dtype=np.int64)
            for t, m in enumerate(item_members):
                node_of[m] = outcome.where[t]
        objective = float(outcome.value.max_deviation)
    deterministic = planner.tags().deterministic
    info = {
        "iterations": outcome.iterations,
        "solver_notes": outcome.solver_notes[:5],
        "stopped_by": outcome.stopped_by,
        # Reproducible: work alone decided it (a plan the wall clock cut is not).
        "deterministic": bool(deterministic and outcome.stopped_by != WALL_CLOCK),
        **details,
    }
    if deterministic:
        info["work"] = float(outcome.work)
    if outcome.value is not None:
        info["objective_levels"] = named_levels(outcome.value)
    holding = removing_nodes_holding(snapshot, node_of)
    if holding:
        info["removing_nodes_holding"] = holding
    # The proven lower bound on the load distance any plan within the budgets reaches
    # (solvers/balance_bound.py, or the solver's own bound when it proved more), and the gap.
    mean = metrics.mean_utilisation_of(arrays.loads, arrays.capacities, arrays.active)
    info["lower_bound"] = None if outcome.bound is None else float(outcome.bound)
    info["lower_bound_pct"] = (
        None if outcome.bound is None or mean <= 0 else float(100 * outcome.bound / mean)
    )
    return planner.result(
        snapshot,
        arrays.assignment(node_of),
        status=status,
        objective=objective,
        bound=outcome.bound,
        details=info,
    )


def node_of_outcome(
    outcome: Outcome, members: list[np.ndarray] | None, current: np.ndarray
) -> np.ndarray | None:
    """The key groups' nodes in an outcome (over items when ``members`` is given); None if none."""
    if outcome.value is None:
        return None
    if members is None:
        return np.asarray(outcome.where)
    node_of = np.asarray(current).copy()
    for t, m in enumerate(members):
        node_of[m] = outcome.where[t]
    return node_of


def removing_nodes_holding(snapshot: Snapshot, node_of: np.ndarray) -> dict[str, dict[str, float]]:
    """``{removing node: {"load": ..., "key_groups": ...}}`` for those the plan leaves non-empty."""
    arrays = snapshot.arrays()
    n_nodes = len(arrays.node_ids)
    count = np.bincount(node_of, minlength=n_nodes)
    load = np.bincount(node_of, weights=arrays.loads, minlength=n_nodes)
    return {
        arrays.node_ids[i]: {"load": float(load[i]), "key_groups": int(count[i])}
        for i in np.flatnonzero(arrays.removing & (count > 0)).tolist()
    }


def no_plan_reason(snapshot: Snapshot, items: Items, outcome: Outcome) -> dict[str, str]:
    """``{"reason": ...}`` for a plan that found nothing, naming what makes the instance impossible."""
    if outcome.status not in ("INFEASIBLE", "NO_SOLUTION"):
        return {}
    arrays = snapshot.arrays()
    if items.resource_caps is not None:
        for t, members in enumerate(items.members):
            for r, name in enumerate(items.resource_caps_names):
                need = float(items.item_resources[t, r])
                room = float(items.resource_caps[items.allowed[t], r].max(initial=0.0))
                if need > room * (1 + metrics.REL_NOISE):
                    who = ", ".join(repr(arrays.key_group_ids[k]) for k in members.tolist())
                    return {
                        "reason": f"key group(s) {who} need {name}={need:g} but no node they may "
                        f"use has a cap above {room:g}"
                    }
    if outcome.status == "INFEASIBLE":
        return {"reason": "no placement within the budgets satisfies the resource caps"}
    return {"reason": "the time limit ran out before any feasible placement was found"}


def active_load_distance_pct(items: Items, where: np.ndarray) -> float:
    """calcLoadDistance of step 4: the active nodes' load distance in percent of the mean (load
    still on removing nodes is the draining levels' business, not a reason to give up collocation)."""
    mean = items.mean()
    u = (items.node_loads(where) / items.capacities)[items.active]
    return 100 * float(np.abs(u - mean).max()) / mean if mean > 0 else 0.0


def item_homes(items: Items) -> np.ndarray:
    """Where each item starts: its members' node if they share one and it is allowed, else the
    first allowed node (the pinned node of step 3)."""
    rows = np.arange(len(items.members))
    home = np.maximum(items.home, 0)
    start = np.where((items.home >= 0) & items.allowed[rows, home], home, -1)
    for t in np.flatnonzero(start < 0).tolist():
        start[t] = int(np.argmax(items.allowed[t]))
    return start.astype(np.int64)


def spread_clash(spread: np.ndarray, members: np.ndarray) -> bool:
    """Whether two of ``members`` share a spread value (so they cannot move as one unit)."""
    codes = spread[members]
    codes = codes[codes >= 0]
    return np.unique(codes).size < codes.size
