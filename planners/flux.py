"""Flux: pairwise load balancing by moving the largest suitable key group (Shah et al., ICDE 2003).

As the ALBIC and Enorm papers describe it (albic.txt section 2.2, enorm.txt section 3.2): each
period, sort the nodes by load, descending; move the biggest suitable partition from the first node
to the last one "such that load variance is decreased", then from the second node to the second
last, and so on.

The reading implemented here (the papers leave these points open):

- Load is utilisation ``u_i = load_i / capacity_i``, so heterogeneous clusters are balanced
  relative to capacity.
- Key groups still on removing nodes are drained first, largest load first (ties: snapshot order),
  each onto the active node whose utilisation is lowest after receiving it. A key group whose state
  does not fit the remaining cost budget is skipped (smaller ones are still tried); draining stops
  when the move budget is spent.
- Then rounds: the active nodes sorted by utilisation, descending (ties: snapshot order), are paired
  first with last, second with second last, ... (an odd middle node stays unpaired). For each pair
  ``(hi, lo)`` the largest-load key group on ``hi`` that is *suitable* and fits the remaining budget
  moves to ``lo``; one move per pair per round. Rounds repeat until one makes no move.
- Suitable means ``w > 0`` and the move strictly lowers ``|u_hi - u_lo|``, i.e.
  ``w * (1/c_hi + 1/c_lo) < 2 * (u_hi - u_lo)`` (the capacity-weighted variance
  ``sum_i c_i * (u_i - mean)^2`` decreases: "such that load variance is decreased"), *and* neither
  node passes the other's utilisation: ``w / c_lo <= u_hi - u_lo`` and ``w / c_hi <= u_hi - u_lo``.
  With equal capacities the second condition follows from the first, so this is plain Flux. With
  unequal ones the first alone can lift a small node far above every other node and end worse than
  the current placement: capacities 1, 2, 1 with key groups of load 7 and 4 on the middle node
  (load distance 2.75) would move the 7 onto the last node (``u = 7`` against a mean of 2.75, load
  distance 4.25) and stop there. The second keeps every round inside the current range of
  utilisations, so the rounds never worsen the load distance (draining may: its load must go
  somewhere).
- Budgets count the *final* difference from the current placement: a key group is one move (and its
  state size once) if its tentative node differs from its current node, however often it moved
  within the plan, and a key group moved back home costs nothing. Hence a spent budget does not end
  the rounds by itself: moves of key groups already counted, or moves home, are still made.
- Key groups with a ``spread`` value (Kafka replicas) never move onto a node that already holds
  one of the same value: draining takes the best node without one, and a balancing move to such a
  node is not suitable.
- With node racks (``Node.rack``), every move also keeps the rack rule of :mod:`albic.planners.racks`
  (replicas spread over racks as evenly as the active nodes allow). A placement that breaks it now
  is repaired first: replicas move from racks over their bound to racks under theirs (onto the
  least utilised node there without a sibling, the replica on a removing node or with the least
  state first), each move lowering the rule's violation. If the budget runs out before the rule
  holds, the plan is NO_SOLUTION (the current placement) with ``details["reason"]``.
- ``details["rounds"]`` counts the rounds that moved something (the final, empty round is not
  counted); ``details["drained"]`` counts the key groups moved off removing nodes.

Example: three key groups on one of two nodes
---------------------------------------------
>>> from albic.core.model import Node, KeyGroup, Snapshot
>>> snap = Snapshot([Node("n1"), Node("n2")],
...                 [KeyGroup("a", "op", 3.0), KeyGroup("b", "op", 2.0), KeyGroup("c", "op", 1.0)],
...                 {"a": "n1", "b": "n1", "c": "n1"})
>>> plan = FluxPlanner().plan(snap)
>>> dict(plan.assignment), plan.details
({'a': 'n2', 'b': 'n1', 'c': 'n1'}, {'rounds': 1, 'drained': 0})
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from albic.core.metrics import ABS_NOISE, REL_NOISE
from albic.core.model import PlanStatus, Snapshot, SnapshotArrays
from albic.core.plan import Plan
from albic.core.planner import BUDGET_PARAMETERS, Planner, PlannerTags
from albic.planners.racks import RackRule, node_racks

__all__ = ["FluxPlanner", "flux_placement"]


class FluxPlanner(Planner):
    """Flux (Shah et al.) with ALBIC's shared budgets; see the module docstring for the reading."""

    name = "flux"
    parameters = {**BUDGET_PARAMETERS}

    def __init__(self, *, max_moves: int | None = None, max_migration_cost: float | None = None):
        self.max_moves = max_moves
        self.max_migration_cost = max_migration_cost

    def tags(self) -> PlannerTags:
        return PlannerTags(budget=True, deterministic=True, spread=True, racks=True)

    def _plan(self, snapshot: Snapshot) -> Plan:
        node_of, details = flux_placement(snapshot, self.max_moves, self.max_migration_cost)
        if node_of is None:
            return self.result(snapshot, snapshot.assignment, status=PlanStatus.NO_SOLUTION, details=details)
        return self.result(
            snapshot,
            snapshot.arrays().assignment(node_of),
            status=PlanStatus.FEASIBLE,
            details=details,
        )


def flux_placement(
    snapshot: Snapshot, max_moves: int | None = None, max_migration_cost: float | None = None
) -> tuple[np.ndarray | None, dict[str, Any]]:
    """Flux's placement of a (validated) snapshot within the budgets: each key group's node index
    and the details (``rounds``, ``drained``); ``None`` and the ``reason`` when the budget runs
    out before the replicas keep the rack rule. What :class:`FluxPlanner` plans, without
    :meth:`~albic.core.planner.Planner.plan`'s derivations and checks: for callers that use it as
    a start and check it themselves (ALBIC's warm start, at 100,000 key groups)."""
    state = _FluxState(snapshot.arrays(), max_moves, max_migration_cost, node_racks(snapshot))
    if not _repair_racks(state):
        return None, {
            "rounds": 0,
            "drained": 0,
            "reason": "the budget ran out before the replicas were spread over the racks",
        }
    drained = _drain(state)
    rounds = 0
    while _balance_round(state):
        rounds += 1
    return state.node_of, {"rounds": rounds, "drained": drained}


class _FluxState:
    """The tentative placement, node loads and budget use while Flux plans."""

    def __init__(
        self,
        arrays: SnapshotArrays,
        max_moves: int | None,
        max_cost: float | None,
        racks: np.ndarray | None = None,
    ) -> None:
        self.arrays = arrays
        self.node_of = arrays.current.copy()
        self.node_load = arrays.node_loads(self.node_of)
        self.max_moves = math.inf if max_moves is None else max_moves
        # Summing the same state sizes in another order must not refuse a move that fits exactly.
        self.max_cost = math.inf if max_cost is None else max_cost * (1 + ABS_NOISE)
        self.moves_used = 0
        self.cost_used = 0.0
        # spread_on[i, s]: key groups of spread code s on node i (one spare column for "none").
        self.n_spread = int(arrays.spread.max(initial=-1)) + 1
        self.spread_on = np.zeros((len(arrays.node_ids), self.n_spread + 1), dtype=np.int64)
        np.add.at(self.spread_on, (self.node_of, arrays.spread), 1)
        # The rack rule: on_rack[c, j] key groups of spread code c on rack j (planners/racks.py).
        self.rule = None
        if racks is not None and self.n_spread:
            self.rule = RackRule(arrays.spread, racks, arrays.removing)
            self.rack = racks
            self.on_rack = np.zeros((self.n_spread, self.rule.n_racks), dtype=np.int64)
            has = arrays.spread >= 0
            np.add.at(self.on_rack, (arrays.spread[has], racks[self.node_of[has]]), 1)

    def spread_clash(self, key_groups: np.ndarray, targets: np.ndarray) -> np.ndarray:
        """Whether each target node already holds a key group of the same spread value, or the
        move would break the rack rule."""
        codes = self.arrays.spread[key_groups]
        clash = (codes >= 0) & (self.spread_on[targets, codes] > 0)
        if self.rule is None:
            return clash
        c = np.maximum(codes, 0)
        a, b = self.rack[self.node_of[key_groups]], self.rack[targets]
        keeps = (a == b) | (
            (self.on_rack[c, a] - 1 >= self.rule.lo[c, a]) & (self.on_rack[c, b] + 1 <= self.rule.hi[c])
        )
        return clash | ((codes >= 0) & ~keeps)

    def utilisation(self) -> np.ndarray:
        return self.node_load / self.arrays.capacities

    def budget_delta(self, key_groups: np.ndarray, targets: np.ndarray) -> np.ndarray:
        """Change of the move count if each key group went to its target: -1, 0 or +1.

        The migration cost changes by the same sign times the key group's state size.
        """
        home = self.arrays.current[key_groups]
        return (targets != home).astype(np.int64) - (self.node_of[key_groups] != home)

    def fits(self, delta_moves: np.ndarray, delta_cost: np.ndarray) -> np.ndarray:
        return (self.moves_used + delta_moves <= self.max_moves) & (
            self.cost_used + delta_cost <= self.max_cost
        )

    def move(self, k: int, target: int, delta_moves: int) -> None:
        load = self.arrays.loads[k]
        code = self.arrays.spread[k]
        self.spread_on[self.node_of[k], code] -= 1
        self.spread_on[target, code] += 1
        if self.rule is not None and code >= 0:
            self.on_rack[code, self.rack[self.node_of[k]]] -= 1
            self.on_rack[code, self.rack[target]] += 1
        self.node_load[self.node_of[k]] -= load
        self.node_load[target] += load
        self.node_of[k] = target
        self.moves_used += delta_moves
        self.cost_used += delta_moves * float(self.arrays.state_sizes[k])


def _violation(state: _FluxState, c: int) -> np.ndarray:
    """Per rack, how far spread code ``c`` is from the rack rule (over plus under its bounds)."""
    count = state.on_rack[c]
    return np.maximum(count - state.rule.hi[c], 0) + np.maximum(state.rule.lo[c] - count, 0)


def _repair_racks(state: _FluxState) -> bool:
    """Move replicas until every spread code keeps the rack rule (see the module docstring);
    False if the budget runs out first."""
    if state.rule is None:
        return True
    arrays, rule = state.arrays, state.rule
    active = np.flatnonzero(arrays.active)
    for c in range(state.n_spread):
        while _violation(state, c).sum() > 0:
            members = rule.members[c]
            count = state.on_rack[c]
            best = None
            for k in members.tolist():
                a = int(state.rack[state.node_of[k]])
                free = active[state.spread_on[active, c] == 0]
                for b in np.unique(state.rack[free]).tolist():
                    if b == a:
                        continue
                    gain = (
                        int(count[a] > rule.hi[c])
                        - int(count[a] <= rule.lo[c, a])
                        + int(count[b] < rule.lo[c, b])
                        - int(count[b] >= rule.hi[c])
                    )
                    if gain <= 0:
                        continue
                    on_b = free[state.rack[free] == b]
                    target = int(
                        on_b[np.argmin((state.node_load[on_b] + arrays.loads[k]) / arrays.capacities[on_b])]
                    )
                    d_moves = int(state.budget_delta(np.array([k]), np.array([target]))[0])
                    if not state.fits(np.array([d_moves]), np.array([d_moves * arrays.state_sizes[k]]))[0]:
                        continue
                    key = (
                        -gain,
                        not arrays.removing[state.node_of[k]],
                        float(arrays.state_sizes[k]),
                        k,
                        target,
                    )
                    if best is None or key < best[0]:
                        best = (key, k, target, d_moves)
            if best is None:
                return False
            state.move(best[1], best[2], best[3])
    return True


def _drain(state: _FluxState) -> int:
    """Move key groups off removing nodes as the budget allows; return how many moved."""
    arrays = state.arrays
    on_removing = np.flatnonzero(arrays.removing[arrays.current])
    if on_removing.size == 0:
        return 0
    # Largest load first; the stable sort keeps snapshot order among equal loads.
    on_removing = on_removing[np.argsort(-arrays.loads[on_removing], kind="stable")]
    active = np.flatnonzero(arrays.active)
    capacities = arrays.capacities[active]
    drained = 0
    for k in on_removing.tolist():
        if state.moves_used + 1 > state.max_moves:
            break  # every key group still to drain would be one more move
        size = float(arrays.state_sizes[k])
        if state.cost_used + size > state.max_cost:
            continue  # a smaller state may still fit
        # argmin takes the first of equal utilisations, i.e. snapshot order.
        after = (state.node_load[active] + arrays.loads[k]) / capacities
        after[state.spread_clash(np.full(active.size, k), active)] = np.inf
        if not np.isfinite(after).any():
            continue  # every active node holds a replica of its spread: it stays
        target = int(active[np.argmin(after)])
        state.move(k, target, 1)
        drained += 1
    return drained


def _pairs(state: _FluxState) -> tuple[np.ndarray, np.ndarray]:
    """The ``(hi, lo)`` node pairs of one round: first with last, second with second last, ..."""
    active = np.flatnonzero(state.arrays.active)
    by_utilisation = active[np.argsort(-state.utilisation()[active], kind="stable")]
    half = by_utilisation.size // 2
    return by_utilisation[:half], by_utilisation[::-1][:half]


def _candidates(state: _FluxState, hi: np.ndarray, lo: np.ndarray) -> tuple[np.ndarray, ...]:
    """The suitable moves of one round, grouped by pair (in pair order), largest load first.

    Returns the key groups, their pair's rank and their targets.
    """
    arrays = state.arrays
    n_nodes = len(arrays.node_ids)
    partner = np.full(n_nodes, -1, dtype=np.int64)
    partner[hi] = lo
    rank = np.full(n_nodes, -1, dtype=np.int64)
    rank[hi] = np.arange(hi.size)

    k = np.flatnonzero((partner[state.node_of] >= 0) & (arrays.loads > 0))
    source = state.node_of[k]
    target = partner[source]
    u = state.utilisation()
    c = arrays.capacities
    w = arrays.loads[k]
    # Termination: moving w from hi to lo changes sum_i L_i^2 / c_i (over the active nodes) by
    # w * (w * (1/c_hi + 1/c_lo) - 2 * gap), negative exactly when the pair's gap shrinks. Requiring
    # the gap to shrink by more than a tolerance makes every move lower that sum by a finite step;
    # the sum is >= 0, so the rounds end, and float noise (e.g. 0.1 + 0.2 - 0.1 > 0.2) cannot make
    # two nodes trade a key group back and forth.
    gap = u[source] - u[target]
    tol = REL_NOISE * u[source]
    suitable = w * (1 / c[source] + 1 / c[target]) < 2 * (gap - tol)
    # Neither node may pass the other: keeps the utilisations within their current range.
    suitable &= (w / c[source] <= gap) & (w / c[target] <= gap)
    suitable &= ~state.spread_clash(k, target)
    k, source, target = k[suitable], source[suitable], target[suitable]
    # By pair rank, then largest load; lexsort is stable, so equal loads keep snapshot order.
    order = np.lexsort((-arrays.loads[k], rank[source]))
    return k[order], rank[source][order], target[order]


def _balance_round(state: _FluxState) -> bool:
    """Make at most one move per pair; return whether anything moved."""
    hi, lo = _pairs(state)
    if hi.size == 0:
        return False
    key_groups, ranks, targets = _candidates(state, hi, lo)
    delta_moves = state.budget_delta(key_groups, targets)
    delta_cost = delta_moves * state.arrays.state_sizes[key_groups]
    # Pairs are disjoint, so one pair's move changes no other pair's candidates; only the shared
    # budget makes the pairs depend on each other, and earlier (more unbalanced) pairs go first.
    starts = np.searchsorted(ranks, np.arange(hi.size + 1))
    moved = False
    for start, stop in zip(starts[:-1].tolist(), starts[1:].tolist()):
        if start == stop:
            continue
        fitting = np.flatnonzero(state.fits(delta_moves[start:stop], delta_cost[start:stop]))
        if state.rule is not None:  # racks: an earlier pair's move may have changed a rack's count
            fitting = [
                f
                for f in fitting.tolist()
                if not state.spread_clash(
                    key_groups[start + f : start + f + 1], targets[start + f : start + f + 1]
                )[0]
            ][:1]
        if len(fitting):
            i = start + int(fitting[0])
            state.move(int(key_groups[i]), int(targets[i]), int(delta_moves[i]))
            moved = True
    return moved
