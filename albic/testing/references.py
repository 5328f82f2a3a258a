"""Brute force and reference objectives: the truth the conformance suite compares planners with.

The ``exact`` check compares a plan with brute force under a *reference objective* written here
from the paper's definition (:func:`reference_objective`), not under the planner's own
``evaluate()``: a wrong objective in the planner would sit on both sides of that comparison.
Other engineers' planners plug theirs in with :func:`register_reference_objective`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping

from albic.core.checks import within_budget
from albic.core.model import Snapshot
from albic.core.planner import Planner

# Objectives of exact planners are compared with this relative slack (solvers' own tolerances).
_OBJECTIVE_RTOL = 1e-6
_OBJECTIVE_ATOL = 1e-6
# Load caps of the interval model hold up to float noise (the same slack as albic.solvers.interval_dp).
_CAP_RTOL = 1e-9
_CAP_ATOL = 1e-9

Objective = Callable[[Snapshot, Mapping[str, str]], "tuple[float, ...] | None"]


# -- brute force ----------------------------------------------------------------------------------


def _allowed_targets(snapshot: Snapshot) -> list[list[str]]:
    """Per key group, the nodes it may end on: any active node, or where it is now."""
    active = [n.id for n in snapshot.nodes if not n.removing]
    out = []
    for kg in snapshot.key_groups:
        here = snapshot.assignment[kg.id]
        out.append(active if here in active else active + [here])
    return out


def brute_force_best(
    snapshot: Snapshot, evaluate: Callable[[Snapshot, Mapping[str, str]], tuple[float, ...] | None]
) -> tuple[tuple[float, ...] | None, dict[str, str] | None]:
    """The best value of ``evaluate`` over every assignment a plan may make, and one assignment
    reaching it; ``(None, None)`` when no assignment is feasible.

    Meant for instances of at most 8 key groups and 3 nodes (3^8 = 6561 assignments).
    """
    ids = [kg.id for kg in snapshot.key_groups]
    best: tuple[float, ...] | None = None
    best_assignment: dict[str, str] | None = None
    for targets in itertools.product(*_allowed_targets(snapshot)):
        assignment = dict(zip(ids, targets))
        value = evaluate(snapshot, assignment)
        if value is not None and (best is None or lexicographically_less(value, best)):
            best, best_assignment = tuple(value), assignment
    return best, best_assignment


def albic_milp_objective(
    snapshot: Snapshot,
    assignment: Mapping[str, str],
    *,
    max_moves: int | None = None,
    max_migration_cost: float | None = None,
) -> tuple[float, ...] | None:
    """The ALBIC paper's MILP (albic.txt section 4.3.1) scored directly from its text, for brute
    force; independent of the ``milp`` planner's code on purpose.

    With ``u_i = load_i / capacity_i`` and ``mean = total load / active capacity``: constraint (3)
    bounds ``u_i - mean`` on every node (removing ones too), (4) bounds ``mean - u_i`` on active
    ones, and (2) is the budget; nothing may move onto a removing node (Lemma 4.1). Returns, to be
    compared lexicographically: ``d`` (the larger of the two bounds), the load left on removing
    nodes (the paper's ``sum_{n in B} load_n``), the key groups left there, ``(d - d_u) + (d -
    d_l)`` with ``d_u, d_l`` maximised, and the state moved; None when the assignment is infeasible.

    >>> from albic.core.model import KeyGroup, Node, Snapshot
    >>> snap = Snapshot([Node("r", removing=True), Node("a"), Node("b"), Node("c")],
    ...                 [KeyGroup(f"k{i}", "op", w, 1.0) for i, w in enumerate([1, 1, 1, 6])],
    ...                 {f"k{i}": "r" for i in range(4)})
    >>> albic_milp_objective(snap, {"k0": "r", "k1": "r", "k2": "r", "k3": "a"}, max_moves=1)
    (3.0, 3.0, 3.0, 6.0, 1.0)
    """
    nodes = {n.id: n for n in snapshot.nodes}
    load = {n.id: 0.0 for n in snapshot.nodes}
    moved_state: list[float] = []
    left_load: list[float] = []
    left = 0
    for kg in snapshot.key_groups:
        target = assignment[kg.id]
        if target != snapshot.assignment[kg.id]:
            if nodes[target].removing:
                return None
            moved_state.append(kg.state_size)
        if nodes[target].removing:
            left_load.append(kg.load)
            left += 1
        load[target] += kg.load
    if max_moves is not None and len(moved_state) > max_moves:
        return None
    state = math.fsum(moved_state)
    if not within_budget(state, max_migration_cost):
        return None
    active = [n for n in snapshot.nodes if not n.removing]
    mean = math.fsum(kg.load for kg in snapshot.key_groups) / math.fsum(n.capacity for n in active)
    upper = max(load[n.id] / n.capacity - mean for n in snapshot.nodes)  # (3)
    lower = max(mean - load[n.id] / n.capacity for n in active)  # (4)
    return (max(upper, lower), math.fsum(left_load), float(left), upper + lower, state)


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=_OBJECTIVE_RTOL, abs_tol=_OBJECTIVE_ATOL)


def lexicographically_less(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    for x, y in zip(a, b):
        if not _close(x, y):
            return x < y
    return False


# -- reference objectives (from the papers, independent of the planners' code) --------------------


def interval_objective(planner: Planner) -> Objective:
    """SSM's problem (state-migration paper, Definition 4.1) for ``planner``'s ``tau``,
    ``operator`` and ``allow_empty``, written from the definition in plain Python.

    Feasible: key groups of other operators stay; nothing stays on or moves onto a removing node;
    each active node's share of the operator is one contiguous index run whose load is at most
    ``(1 + tau) * W / n'`` (``W`` the operator's load, ``n'`` the active nodes) unless it is a
    single task (a task heavier than the cap may sit alone, the reading of planners/ssm.py); with
    ``allow_empty=False`` (the paper's reading) every active node holds at least one task.
    Objective: ``(state moved,)``.
    """
    params = planner.get_params()
    tau = float(params["tau"])
    operator = params.get("operator")
    allow_empty = params.get("allow_empty", True)  # the MTM-aware planner takes none: it allows them

    def objective(snapshot: Snapshot, assignment: Mapping[str, str]) -> tuple[float] | None:
        name = operator
        if name is None:
            names = sorted({kg.operator for kg in snapshot.key_groups})
            name = names[0] if names else None
        removing = {n.id for n in snapshot.nodes if n.removing}
        active = [n.id for n in snapshot.nodes if not n.removing]
        runs: dict[str, list[tuple[int, float]]] = {}
        moved = []
        for kg in snapshot.key_groups:
            here, there = snapshot.assignment[kg.id], assignment[kg.id]
            if kg.operator != name:
                if there != here:
                    return None
                continue
            if there in removing:
                return None
            runs.setdefault(there, []).append((kg.index, kg.load))
            if there != here:
                moved.append(kg.state_size)
        total = math.fsum(load for run in runs.values() for _, load in run)
        cap = (1.0 + tau) * total / len(active)
        for run in runs.values():
            indices = sorted(i for i, _ in run)
            if indices[-1] - indices[0] + 1 != len(indices):
                return None
            load = math.fsum(v for _, v in run)
            if len(run) > 1 and load > cap * (1 + _CAP_RTOL) + _CAP_ATOL:
                return None
        if not allow_empty and len(runs) < len(active):
            return None
        return (math.fsum(moved),)

    return objective


def milp_objective(planner: Planner) -> Objective:
    """ALBIC's MILP for ``planner``'s budgets and ``resource_caps``: :func:`albic_milp_objective`
    (the paper's text), plus the resource caps ``planners/milp_formulation.py`` adds (on every active
    node, each capped resource at most ``cap * capacity``)."""
    limits = planner.limits()
    max_moves, max_cost = limits.get("max_moves"), limits.get("max_migration_cost")
    resource_caps = planner.get_params().get("resource_caps") or {}

    def objective(snapshot: Snapshot, assignment: Mapping[str, str]) -> tuple[float, ...] | None:
        if resource_caps:
            used = {n.id: {r: 0.0 for r in resource_caps} for n in snapshot.nodes}
            for kg in snapshot.key_groups:
                for r in resource_caps:
                    used[assignment[kg.id]][r] += kg.resources.get(r, 0.0)
            for n in snapshot.nodes:
                if n.removing:
                    continue
                for r, cap in resource_caps.items():
                    if used[n.id][r] > cap * n.capacity * (1 + 1e-9) + 1e-9:
                        return None
        return albic_milp_objective(snapshot, assignment, max_moves=max_moves, max_migration_cost=max_cost)

    return objective


# Registry name -> factory of the reference objective for a planner instance (its parameters).
_REFERENCES: dict[str, Callable[[Planner], Objective]] = {
    "ssm": interval_objective,
    "mtm": interval_objective,  # exact only without a table, where it is SSM
    "milp": milp_objective,
}


def register_reference_objective(name: str, factory: Callable[[Planner], Objective]) -> None:
    """Use ``factory(planner)`` as the exact check's objective for planners named ``name``.

    The factory reads the planner's parameters and returns ``objective(snapshot, assignment)``:
    a tuple compared lexicographically (lower is better), or ``None`` when the assignment breaks
    a constraint. Write it from the paper's definition, not from the planner's code.
    """
    _REFERENCES[name] = factory


def reference_objective(planner: Planner) -> tuple[Objective, str]:
    """The objective the exact check compares ``planner``'s plans under, and where it comes from:
    the suite's reference for its registry name, else the planner's own ``evaluate()``."""
    factory = _REFERENCES.get(getattr(planner, "name", ""))
    if factory is not None:
        return factory(planner), f"albic.testing reference for {planner.name!r}"
    return planner.evaluate, "the planner's own evaluate() (no reference registered)"
