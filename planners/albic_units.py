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

    pinning = _Pinning(snapshot, parts, max_moves, max_migration_cost)
    pins = []
    for pair in pinning.in_step_3_order(pairs):
        pin = pinning.pin(pair)
        if pin is not None:
            pins.append(pin)
            if len(pins) >= n_pins:
                break
    swapped = pinning.swap(swaps)
    members, allowed, units = pinning.items()
    return members, allowed, units, pins, swapped


class _Pinning:
    """Step 3's units as they are made: the partitions, then pinned units, each with its node, and
    the budget the pins leave."""

    def __init__(
        self, snapshot: Snapshot, parts: list[np.ndarray], max_moves: int | None, max_cost: float | None
    ) -> None:
        self.arrays = arrays = snapshot.arrays()
        # Replicas of one spread value cannot move as one unit (they must stay on distinct nodes).
        parts = [p for p in parts if not spread_clash(arrays.spread, p)]
        self.part_of = np.full(len(arrays.key_group_ids), -1)
        self.groups = [np.asarray(p) for p in parts]  # partitions, then pinned units as they are made
        for p, members in enumerate(self.groups):
            self.part_of[members] = p
        self.target_of: dict[int, int] = {}  # group index -> pinned node
        self.u = metrics.utilisation(snapshot)
        self.sym = (arrays.traffic + arrays.traffic.T).tocsr()
        self.where = np.asarray(arrays.current).copy()  # with this call's pins applied
        self.moves_left = math.inf if max_moves is None else max_moves
        self.cost_left = None if max_cost is None else float(max_cost)

    def pin_for(self, pair):
        """(case, node, unit) of the paper's three cases for ``pair``, or None."""
        arrays, part_of, groups, target_of = self.arrays, self.part_of, self.groups, self.target_of
        gi, gj = int(pair[0]), int(pair[1])
        n1, n2 = int(arrays.current[gi]), int(arrays.current[gj])
        pi, pj = int(part_of[gi]), int(part_of[gj])
        if pi >= 0 and pi == pj:
            return None  # already in one unit
        lesser = [n for n in sorted((n1, n2), key=lambda n: (self.u[n], n)) if not arrays.removing[n]]
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

    def rank(self, pair) -> tuple[float, float]:
        """Most traffic made local first, then the least load to move."""
        pin = self.pin_for(pair)
        if pin is None:
            return (math.inf, math.inf)
        return (-move_gain(self.sym, self.where, pin[2], pin[1]), float(self.arrays.loads[pin[2]].sum()))

    def in_step_3_order(self, pairs):
        """``pairs`` (heaviest first, equal ones in seeded random order), each run of equally
        heavy pairs re-ranked in windows of RANK_WINDOW (ranking all of hundreds of equal
        pairs would cost a good part of a 0.25 s limit)."""
        start = 0
        while start < len(pairs):
            end = start
            while end < len(pairs) and end - start < RANK_WINDOW and pairs[end][2] == pairs[start][2]:
                end += 1
            yield from sorted(pairs[start:end], key=self.rank)  # stable: ties keep the random order
            start = end

    def pin(self, pair):
        """Pin ``pair``'s unit to its node when that makes traffic local within the budget left;
        ``(pair, case, node)``, or None when it waits for a later call."""
        pin = self.pin_for(pair)
        if pin is None:
            return None
        case, target, unit = pin
        if not move_gain(self.sym, self.where, unit, target) > 0:
            return None  # collocates nothing on balance (it would separate as much as it joins)
        extra_moves, extra_cost = self._extra_spend(unit, target)
        if extra_moves > self.moves_left or (
            self.cost_left is not None and not within_budget(extra_cost, self.cost_left)
        ):
            return None  # a pair that cannot move within the budget waits for a later call
        if spread_clash(self.arrays.spread, unit):
            return None  # two members that must be on different nodes cannot move as one unit
        self.moves_left -= extra_moves
        if self.cost_left is not None:
            self.cost_left -= extra_cost
        self._add_unit(unit, target)
        self.where[unit] = target
        return (pair, case, target)

    def _extra_spend(self, unit: np.ndarray, target: int) -> tuple[int, float]:
        """What pinning ``unit`` to ``target`` adds to the moves and state already pinned."""
        arrays = self.arrays
        previously = [g for g in {int(self.part_of[k]) for k in unit.tolist()} if g in self.target_of]
        away = unit[arrays.current[unit] != target]
        before_away = [
            k for g in previously for k in self.groups[g].tolist() if arrays.current[k] != self.target_of[g]
        ]
        extra_cost = float(arrays.state_sizes[away].sum() - arrays.state_sizes[before_away].sum())
        return away.size - len(before_away), extra_cost

    def _add_unit(self, unit: np.ndarray, node: int) -> None:
        g = len(self.groups)
        self.groups.append(unit)
        self.part_of[unit] = g
        self.target_of[g] = node

    def swap(self, swaps: Swaps) -> list:
        """Step 3's swaps with what the pins left of the budget, each a unit pinned to its node."""
        pinned = np.zeros(len(self.part_of), dtype=bool)
        for g in self.target_of:
            pinned[self.groups[g]] = True
        swapped = swaps(self.sym, self.where, ~pinned, self.moves_left, self.cost_left)
        for k, node in swapped:
            if self.part_of[k] >= 0:  # leaves its partition (the swap's gain counted what it separates)
                g = self.part_of[k]
                self.groups[g] = self.groups[g][self.groups[g] != k]
            self._add_unit(np.array([k]), node)
        return swapped

    def items(self) -> tuple[list[np.ndarray], dict[int, np.ndarray], list[np.ndarray]]:
        """``(members, allowed, units)``: the units (pinned ones restricted to their node), then
        every key group in none as an item of its own."""
        n_nodes = len(self.arrays.node_ids)
        members: list[np.ndarray] = []
        allowed: dict[int, np.ndarray] = {}  # only the pinned units are restricted
        for g in sorted({int(g) for g in self.part_of.tolist() if g >= 0}):
            if g in self.target_of:
                row = np.zeros(n_nodes, dtype=bool)
                row[self.target_of[g]] = True
                allowed[len(members)] = row
            members.append(self.groups[g])
        units = list(members)
        members += list(np.flatnonzero(self.part_of < 0).reshape(-1, 1))
        return members, allowed, units
