"""ALBIC's step 3 (Algorithm 2, section 4.3.2): the units the MILP moves. Collocated partitions
(step 2) move as one item; the heaviest scored pairs are pinned together onto one node by the
paper's three cases; key groups outside them may be swapped onto their partners' nodes (the
``swaps`` callback, :meth:`albic.planners.albic_milp.AlbicPlanner._swaps`); everything else is a
singleton item."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from albic.core import metrics
from albic.core.checks import within_budget
from albic.core.model import Snapshot
from albic.planners.collocation import move_gain
from albic.planners.milp_results import spread_clash

__all__ = ["albic_units", "RANK_WINDOW"]

# How many equally heavy pairs step 3 ranks by benefit at a time.
RANK_WINDOW = 32

#: Step 3's swaps: ``(sym, where, movable, moves_left, cost_left) -> [(key group, node)]``.
Swaps = Callable[..., list[tuple[int, int]]]


def albic_units(
    snapshot: Snapshot,
    parts: list[np.ndarray],
    pairs,
    n_pins: int,
    max_moves: int | None,
    max_migration_cost: float | None,
    swaps: Swaps,
):
    """Items: the pinned units of step 3, the partitions, singletons for everything else.

    Pairs are pinned by the paper's three cases in order of traffic (``pairs`` comes
    heaviest first), among equally heavy pairs the one whose pin makes the most traffic
    node-local first (:func:`albic.planners.collocation.move_gain`, the paper's "maximum
    benefit"); a pin that would make no traffic local on balance is not made. A key group
    already in a unit pinned this call makes that unit its partition (case 2 onto the unit's
    node). A pin whose unit cannot reach its node within what is left of the budget waits for
    a later call. ``swaps(sym, where, movable, moves_left, cost_left)`` gives step 3's swaps with
    what the pins left of the budget; each becomes a unit of its own, pinned to its node. Returns
    ``(members, allowed, units, pins, swaps)`` with pins ``(pair, case, node)``."""

    arrays = snapshot.arrays()
    n_kg, n_nodes = len(arrays.key_group_ids), len(arrays.node_ids)
    # Replicas of one spread value cannot move as one unit (they must stay on distinct nodes).
    parts = [p for p in parts if not spread_clash(arrays.spread, p)]
    part_of = np.full(n_kg, -1)
    groups = [np.asarray(p) for p in parts]  # partitions, then pinned units as they are made
    for p, members in enumerate(groups):
        part_of[members] = p
    target_of: dict[int, int] = {}  # group index -> pinned node
    u = metrics.utilisation(snapshot)
    sym = (arrays.traffic + arrays.traffic.T).tocsr()
    where = np.asarray(arrays.current).copy()  # with this call's pins applied
    moves_left = math.inf if max_moves is None else max_moves
    cost_left = None if max_migration_cost is None else float(max_migration_cost)

    def pin_for(pair):
        """(case, node, unit) of the paper's three cases for ``pair``, or None."""
        gi, gj = int(pair[0]), int(pair[1])
        n1, n2 = int(arrays.current[gi]), int(arrays.current[gj])
        pi, pj = int(part_of[gi]), int(part_of[gj])
        if pi >= 0 and pi == pj:
            return None  # already in one unit
        lesser = [n for n in sorted((n1, n2), key=lambda n: (u[n], n)) if not arrays.removing[n]]
        if pi < 0 and pj < 0:
            case, target, unit = 1, lesser[:1], np.array([gi, gj])
        elif pi >= 0 and pj < 0:
            node = target_of.get(pi, n1)
            case, target, unit = 2, [node] if not arrays.removing[node] else [], np.r_[groups[pi], gj]
        elif pi < 0 and pj >= 0:
            node = target_of.get(pj, n2)
            case, target, unit = 2, [node] if not arrays.removing[node] else [], np.r_[groups[pj], gi]
        else:
            fixed = [target_of[g] for g in (pi, pj) if g in target_of]
            case, target, unit = 3, (fixed[:1] if fixed else lesser[:1]), np.r_[groups[pi], groups[pj]]
        return (case, target[0], np.unique(unit)) if target else None

    def rank(pair) -> tuple[float, float]:
        """Most traffic made local first, then the least load to move."""
        pin = pin_for(pair)
        if pin is None:
            return (math.inf, math.inf)
        return (-move_gain(sym, where, pin[2], pin[1]), float(arrays.loads[pin[2]].sum()))

    def in_step_3_order():
        """``pairs`` (heaviest first, equal ones in seeded random order), each run of equally
        heavy pairs re-ranked in windows of RANK_WINDOW (ranking all of hundreds of equal
        pairs would cost a good part of a 0.25 s limit)."""
        start = 0
        while start < len(pairs):
            end = start
            while end < len(pairs) and end - start < RANK_WINDOW and pairs[end][2] == pairs[start][2]:
                end += 1
            yield from sorted(pairs[start:end], key=rank)  # stable: ties keep the random order
            start = end

    pins = []
    for pair in in_step_3_order():
        pin = pin_for(pair)
        if pin is None:
            continue
        case, target, unit = pin
        if not move_gain(sym, where, unit, target) > 0:
            continue  # collocates nothing on balance (it would separate as much as it joins)
        # Budget: what this unit adds to the moves already pinned.
        previously = [g for g in {int(part_of[k]) for k in unit.tolist()} if g in target_of]
        away = unit[arrays.current[unit] != target]
        before_away = [k for g in previously for k in groups[g].tolist() if arrays.current[k] != target_of[g]]
        extra_moves = away.size - len(before_away)
        extra_cost = float(arrays.state_sizes[away].sum() - arrays.state_sizes[before_away].sum())
        if extra_moves > moves_left or (cost_left is not None and not within_budget(extra_cost, cost_left)):
            continue  # a pair that cannot move within the budget waits for a later call
        if spread_clash(arrays.spread, unit):
            continue  # two members that must be on different nodes cannot move as one unit
        moves_left -= extra_moves
        if cost_left is not None:
            cost_left -= extra_cost
        g = len(groups)
        groups.append(unit)
        part_of[unit] = g
        target_of[g] = target
        where[unit] = target
        pins.append((pair, case, target))
        if len(pins) >= n_pins:
            break
    pinned = np.zeros(n_kg, dtype=bool)
    for g in target_of:
        pinned[groups[g]] = True
    swapped = swaps(sym, where, ~pinned, moves_left, cost_left)
    for k, node in swapped:
        if part_of[k] >= 0:  # leaves its partition (the swap's gain counted what it separates)
            groups[part_of[k]] = groups[part_of[k]][groups[part_of[k]] != k]
        g = len(groups)
        groups.append(np.array([k]))
        part_of[k] = g
        target_of[g] = node
    members: list[np.ndarray] = []
    allowed: dict[int, np.ndarray] = {}  # only the pinned units are restricted
    live = sorted({int(g) for g in part_of.tolist() if g >= 0})
    for g in live:
        if g in target_of:
            row = np.zeros(n_nodes, dtype=bool)
            row[target_of[g]] = True
            allowed[len(members)] = row
        members.append(groups[g])
    units = list(members)
    members += list(np.flatnonzero(part_of < 0).reshape(-1, 1))
    return members, allowed, units, pins, swapped
