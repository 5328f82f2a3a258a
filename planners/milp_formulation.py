"""The integer model of ALBIC's MILP (section 4.3.1), built in sections: one function per
constraint block, each with its formula from the paper.

Notation (the paper's): ``x[t, i] = 1`` places item ``t`` on node ``i``; ``gLoad`` the load,
``mc`` the migration cost, ``q[i, t] = 1`` where the item is now; ``N`` every node, ``A`` the
active ones, ``B`` those marked for removal (``kill_i = 1``).

With ``u_i = load_i / capacity_i`` and ``mean = total load / total active capacity``, the paper's
constraints read: (3) ``u_i <= mean + (d - d_u)`` on **every** node, removing ones included (so
load sitting on a node that is going away counts against ``d`` like an overload), and (4)
``u_i >= mean - (d - d_l)`` on the active nodes only. Constraint (5), ``mean - d >= 0``, is **not
imposed**: it does not always hold -- a removing node holding more than twice the mean (the
``{1, 1, 1, 6}`` example: ``u = 9``, ``mean = 3``, so ``d >= 6``) or a key group heavier than
twice the mean forces ``d > mean``, and imposing it would make such instances (and their current
placement) infeasible. Its purpose in the paper, keeping (4)'s lower bound non-negative, is moot
since loads are never negative.

Solving: the data are scaled to integers (exactly when the loads are whole multiples of one
quantum -- measured loads are counts over a period -- and capacities and state sizes are
integers, then the integer optimum is the true one; otherwise to ~2**20 steps of the mean, and the
final choice among candidate plans is always made on the true floating-point objective).

A :class:`SubModel` is the model of the items on some nodes, every other item fixed (the whole
model when the nodes are all of them); :mod:`albic.planners.milp_search` solves it in phases.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from albic.planners.milp_items import Items, PairTable
from albic.planners.racks import add_rack_rows
from albic.solvers.milp import Model

__all__ = [
    "SubModel",
    "Scaled",
    "scale_items",
    "integral",
    "add_assignment_rows",
    "add_deviation_rows",
    "add_local_deviation",
    "add_resource_rows",
    "add_budget_rows",
]


# -- integer scaling ------------------------------------------------------------------------------


def integral(values: np.ndarray) -> bool:
    """Whether every value is a whole number (to float noise)."""
    return bool(np.all(np.abs(values - np.round(values)) <= 1e-9 * np.maximum(1, np.abs(values))))


# The most steps of the common quantum: more than 2**40 of them in the total load and the model's
# coefficients would lose CP-SAT its exactness headroom (every row's range must stay below 2**62).
MAX_QUANTUM_STEPS = 2.0**40


def load_quantum(values: np.ndarray) -> float | None:
    """The largest ``q`` of which every value is a whole multiple (to float noise), or None when
    there is none with at most :data:`MAX_QUANTUM_STEPS` steps in the total.

    Why: measured loads are counts over a period (events / 3600 s), never whole numbers, yet
    whole multiples of one quantum. Scaled by ``1 / q`` they are integers, the integer model is
    the true one and its proven optimum the true optimum; without it every plan of real
    statistics was FEASIBLE (rounded to 2**20 steps of the mean, nothing can be proven).

    >>> q = load_quantum(np.array([17, 3, 0, 9]) / 3600)
    >>> round(1 / q, 6)
    3600.0
    >>> load_quantum(np.array([0.1, 0.25])), load_quantum(np.array([1.0, np.pi]))
    (0.05, None)
    """
    v = np.unique(np.abs(np.asarray(values, dtype=float)))
    v = v[v > 0]
    if not v.size:
        return 1.0
    total, q = float(v.sum()), float(v[0])
    for _ in range(64):
        r = v / q
        rest = np.abs(r - np.round(r))
        bad = rest > 1e-7 * np.maximum(1.0, r) ** 0.5
        if not bad.any():
            return q
        # Euclid's step: the remainder of a value that is not a multiple becomes the quantum.
        q = float(((r[bad] - np.floor(r[bad])) * q).clip(min=0).min())
        if q <= 0 or total / q > MAX_QUANTUM_STEPS:
            return None
    return None


@dataclass
class Scaled:
    """The items' data as integers (module docstring): what the model's rows are made of."""

    load: PairTable  # int[item, node]: round(item load * s / capacity)
    mean: int  # round(total * s / active capacity)
    cost: PairTable  # int[item, node]
    max_cost: int | None
    res: np.ndarray | None  # int[item, resource]
    res_caps: np.ndarray | None  # int[node, resource]
    scale: float
    exact: bool
    raw: np.ndarray  # int[item]: round(item load * s), the load_on_removing level
    state: PairTable  # int[item, node]: state moved, the state_moved level (<= 2**24 in all)


def scale_items(items: Items) -> Scaled:
    """The integer data of ``items``: exact when loads, capacities and state sizes are integers."""
    caps, loads = items.capacities, items.loads
    active_cap = caps[items.active].sum()
    scale, exact = None, False
    quantum = load_quantum(loads) if integral(caps) else None
    if quantum is not None:
        s = math.lcm(*(int(round(c)) for c in caps), int(round(active_cap)))
        if s * max(float(loads.sum()) / quantum, 1.0) < 2**45:
            scale, exact = float(s) / quantum, True
    if scale is None:
        ref = max(
            float(loads.sum() / active_cap), float((items.item_load.max(initial=0.0)) / caps.min()), 1e-300
        )
        scale = 2.0**20 / ref
    shape = items.moves_at.shape
    load = PairTable(lambda t, i: np.round(items.item_load[t] * scale / caps[i]).astype(np.int64), shape)
    # Not metrics.mean_utilisation_of: scaled before the division, the exact mean stays an integer.
    mean = int(round(float(loads.sum()) * scale / active_cap))
    if integral(items.state_sizes) and items.state_sizes.sum() < 2**45:
        cost = PairTable(lambda t, i: np.round(items.cost_at[t, i]).astype(np.int64), shape)
        max_cost = None if items.max_cost is None else int(math.floor(items.max_cost * (1 + 1e-9) + 1e-9))
    else:  # conservative: costs rounded up, the budget down
        ref = max(items.max_cost or 0.0, float(items.state_sizes.sum()), 1e-300)
        s = 2.0**30 / ref
        cost = PairTable(lambda t, i: np.ceil(items.cost_at[t, i] * s - 1e-9).astype(np.int64), shape)
        max_cost = None if items.max_cost is None else int(math.floor(items.max_cost * s))
    res = res_caps = None
    if items.resource_caps is not None:
        ref = np.maximum(np.max(np.abs(items.resource_caps), axis=0), 1e-300)
        s = 2.0**30 / ref
        # Integer data stay exact: rounding 4 + 1 up and a cap of 5 down would forbid a set
        # that fits exactly (CP-SAT then proves the model infeasible).
        whole = [
            integral(items.item_resources[:, r]) and integral(items.resource_caps[:, r])
            for r in range(ref.size)
        ]
        s = np.where(whole, 1.0, s)
        res = np.ceil(items.item_resources * s[None, :] - 1e-9).astype(np.int64)
        res_caps = np.floor(items.resource_caps * s[None, :] + 1e-6).astype(np.int64)
        exact = exact and integral(items.item_resources * s) and integral(items.resource_caps * s)
    raw = np.round(items.item_load * scale).astype(np.int64)
    total_state = float(items.state_sizes.sum())
    if integral(items.state_sizes) and total_state <= 2**24:
        state = PairTable(lambda t, i: np.round(items.cost_at[t, i]).astype(np.int64), shape)
    else:
        state_s = 2.0**24 / max(total_state, 1e-300)
        state = PairTable(lambda t, i: np.round(items.cost_at[t, i] * state_s).astype(np.int64), shape)
        exact = exact and total_state == 0
    return Scaled(load, mean, cost, max_cost, res, res_caps, scale, exact, raw, state)


# -- the constraint blocks ------------------------------------------------------------------------


def add_assignment_rows(m: Model, x: np.ndarray, var_item: np.ndarray, free: np.ndarray) -> None:
    """Constraint (1): each item on exactly one node, ``for all t: sum_i x[t, i] = 1`` (over the
    nodes item ``t`` is allowed on; one row per free item)."""
    order = np.argsort(var_item, kind="stable")
    starts = np.searchsorted(var_item[order], free)
    ends = np.searchsorted(var_item[order], free, side="right")
    for s, e in zip(starts.tolist(), ends.tolist()):
        m.add_row(x[order[s:e]], np.ones(e - s), lo=1, hi=1)


def add_deviation_rows(
    m: Model, cols: np.ndarray, a: np.ndarray, base: int, removing: bool, d: int, up: int, low: int
) -> None:
    """Constraints (3) and (4) for one node ``i``, in scaled load units (``a`` its items' loads
    over its capacity, ``base = mean - fixed load on i``):

    - (3) ``sum_t x[t, i] * gLoad_t <= mean + (d - d_u)``, on every node (removing ones too: load
      left on a node going away counts against ``d``), written as ``u_i - mean <= d`` and
      ``u_i - mean <= up`` with ``up = d - d_u``;
    - (4) ``sum_t x[t, i] * gLoad_t >= mean - (d - d_l)``, on active nodes only (``kill_i = 0``),
      written as ``mean - u_i <= d`` and ``mean - u_i <= low`` with ``low = d - d_l``.

    (5) ``mean - d >= 0`` is not imposed (module docstring)."""
    m.add_row(np.r_[cols, d], np.r_[a, -1], hi=base)
    m.add_row(np.r_[cols, up], np.r_[a, -1], hi=base)
    if not removing:
        m.add_row(np.r_[cols, d], np.r_[-a, -1], hi=-base)
        m.add_row(np.r_[cols, low], np.r_[-a, -1], hi=-base)


def add_local_deviation(
    m: Model, cols: np.ndarray, a: np.ndarray, base: int, removing: bool, total: int
) -> int:
    """A neighbourhood's tie-break (albic's, not the paper's): a variable ``e_i >= |u_i - mean|``
    (``>= u_i - mean`` on a removing node), whose sum breaks ties of the neighbourhood's
    maximum deviation. Returns the variable."""
    e = int(m.add_variables(1, lb=0, ub=total)[0])
    m.add_row(np.r_[cols, e], np.r_[a, -1], hi=base)
    if not removing:
        m.add_row(np.r_[cols, e], np.r_[-a, -1], hi=-base)
    return e


def add_resource_rows(
    m: Model, cols: np.ndarray, use: np.ndarray, caps: np.ndarray, used: np.ndarray
) -> None:
    """Resource caps on one active node ``i`` (the paper's "limiting the maximum memory usage on a
    node", section 5): ``for each resource r: sum_t x[t, i] * res[t, r] <= cap[i, r] - (used by
    the fixed items)``."""
    for r in range(use.shape[1]):
        m.add_row(cols, use[:, r], hi=float(caps[r] - used[r]))


def add_budget_rows(
    m: Model,
    x: np.ndarray,
    moves: np.ndarray,
    cost: np.ndarray | None,
    max_moves: int | None,
    max_cost: int | None,
) -> None:
    """The budgets. Constraint (2), ``sum_i sum_t (1 - q[i, t]) * x[t, i] * mc_t <= maxMigrCost``
    (``cost`` the state an item moves on each node), and its twin in moves (albic's
    ``max_moves``): ``sum (members not home at i) * x[t, i] <= max_moves`` (both less what the
    fixed items already spend)."""
    if max_moves is not None:
        m.add_row(x, moves, hi=max_moves)
    if max_cost is not None:
        m.add_row(x, cost, hi=max_cost)


# -- one (sub)model -------------------------------------------------------------------------------


class SubModel:
    """The integer model of the items on ``nodes`` (those ``free`` marks, when given: a bool per
    item), every other item fixed where ``where`` puts it."""

    def __init__(
        self,
        items: Items,
        sc: Scaled,
        where: np.ndarray,
        nodes: np.ndarray,
        local: bool = False,
        free: np.ndarray | None = None,
    ) -> None:
        # local: the deviations bounded are those of the neighbourhood's nodes only (the nodes
        # outside are fixed, so the global maximum may not move even when these improve).
        self.items, self.sc, self.nodes, self.local = items, sc, nodes, local
        in_v = np.zeros(items.capacities.size, dtype=bool)
        in_v[nodes] = True
        decided = in_v[where] if free is None else in_v[where] & free
        self.free, fixed = np.flatnonzero(decided), np.flatnonzero(~decided)
        pairs_t, pairs_i = np.nonzero(items.allowed[self.free[:, None], nodes[None, :]])
        self.var_item = self.free[pairs_t]
        self.var_node = nodes[pairs_i]
        self.model = m = Model()
        self.x = m.add_variables(self.var_item.size)
        fixed_load = np.zeros(items.capacities.size, dtype=np.int64)
        np.add.at(fixed_load, where[fixed], sc.load[fixed, where[fixed]])
        total_int = self._deviation_variables(fixed_load, in_v)
        add_assignment_rows(m, self.x, self.var_item, self.free)
        self._node_rows(fixed_load, fixed, where, total_int)
        if items.item_codes is not None:
            self._spread_rows(fixed, where)
            if items.rack_rule is not None:
                add_rack_rows(
                    m, self.x, self.var_item, self.var_node, items.item_codes, fixed, where, items.rack_rule
                )
        self._budget_rows(fixed, where)
        hint = self.values_for(where)
        if local:  # never worse than now on the neighbourhood: also keeps the weights small
            m.ub[self.d] = float(hint[self.d])
            for e in self.abs_dev:
                m.ub[e] = float(hint[self.d])
        m.set_hint(hint)

    def _deviation_variables(self, fixed_load: np.ndarray, in_v: np.ndarray) -> int:
        """The variables ``d`` (the largest deviation), ``up`` and ``low`` (the one-sided ones),
        bounded below by the deviations of the nodes outside the neighbourhood (constant there)
        unless the model is local; returns the bound on any integer load, ``total_int``."""
        items, sc, m = self.items, self.sc, self.model
        heaviest = int(
            round(float(items.item_load.max(initial=0.0)) * sc.scale / float(items.capacities.min()))
        )
        total_int = heaviest * max(len(items.members), 1) + sc.mean + 1
        self.d = m.add_variables(1, lb=0, ub=total_int)[0]
        self.up = m.add_variables(1, lb=-total_int, ub=total_int)[0]
        self.low = m.add_variables(1, lb=-total_int, ub=total_int)[0]
        self.abs_dev: list[int] = []
        self.dev_nodes: list[int] = []  # the node of each abs_dev variable
        out_dev = (fixed_load - sc.mean)[items.active & ~in_v]
        out_up = (fixed_load - sc.mean)[~in_v]
        if not self.local:
            m.lb[self.d] = float(int(max(np.abs(out_dev).max(initial=0), out_up.max(initial=0))))
            m.lb[self.up] = float(max(int(out_up.max(initial=-total_int)), -total_int))
            m.lb[self.low] = float(max(int((-out_dev).max(initial=-total_int)), -total_int))
        return total_int

    def _node_rows(
        self, fixed_load: np.ndarray, fixed: np.ndarray, where: np.ndarray, total_int: int
    ) -> None:
        """Per node of the neighbourhood, in node order: its deviation rows (constraint (3) bounds
        every node from above, constraint (4) the active ones from below), then its resource rows
        (the order of rows and variables is part of what a solver sees; it is kept as it always
        was)."""
        items, sc, m = self.items, self.sc, self.model
        coef = sc.load[self.var_item, self.var_node]
        for i in self.nodes.tolist():
            sel = np.flatnonzero(self.var_node == i)
            cols, a = self.x[sel], coef[sel]
            base = sc.mean - int(fixed_load[i])
            removing_i = not items.active[i]
            if removing_i and not cols.size and fixed_load[i] == 0:
                continue  # an empty removing node that nothing may enter bounds nothing
            add_deviation_rows(m, cols, a, base, removing_i, self.d, self.up, self.low)
            if self.local:
                self.abs_dev.append(add_local_deviation(m, cols, a, base, removing_i, total_int))
                self.dev_nodes.append(i)
            if not removing_i and sc.res is not None:
                already = sc.res[fixed[where[fixed] == i]].sum(axis=0)
                add_resource_rows(m, cols, sc.res[self.var_item[sel]], sc.res_caps[i], already)

    def _budget_rows(self, fixed: np.ndarray, where: np.ndarray) -> None:
        """The move and state budgets, less what the fixed items already spend."""
        items, sc = self.items, self.sc
        const_moves = int(items.moves_at[fixed, where[fixed]].sum())
        const_cost = int(sc.cost[fixed, where[fixed]].sum())
        moves = items.moves_at[self.var_item, self.var_node]
        add_budget_rows(
            self.model,
            self.x,
            moves,
            sc.cost[self.var_item, self.var_node] if sc.max_cost is not None else None,
            None if items.max_moves is None else items.max_moves - const_moves,
            None if sc.max_cost is None else sc.max_cost - const_cost,
        )
        self.moves_coef = moves
        self.left_coef = items.left_at[self.var_item, self.var_node]

    def _spread_rows(self, fixed: np.ndarray, where: np.ndarray) -> None:
        """Spread (albic's, for replicas; not in the paper): at most one item of each spread
        value ``c`` per node, ``for all i, c: sum_{t holds c} x[t, i] <= 1 - (fixed items holding c
        on i)``; rows only where more than the room could land."""
        items, n_nodes = self.items, self.items.capacities.size
        pair_item, pair_code = items.spread_pairs()
        is_fixed = np.zeros(len(items.members), dtype=bool)
        is_fixed[fixed] = True
        taken: dict[int, int] = {}
        for t, c in zip(pair_item[is_fixed[pair_item]].tolist(), pair_code[is_fixed[pair_item]].tolist()):
            key = c * n_nodes + int(where[t])
            taken[key] = taken.get(key, 0) + 1
        # Expand each variable (item t on node i) by the spread codes of t.
        counts = np.array([items.item_codes[t].size for t in self.var_item.tolist()], dtype=np.int64)
        var = np.repeat(np.arange(self.var_item.size), counts)
        codes = (
            np.concatenate([items.item_codes[t] for t in self.var_item.tolist()]).astype(np.int64)
            if var.size
            else np.zeros(0, dtype=np.int64)
        )
        keys = codes * n_nodes + self.var_node[var]
        order = np.argsort(keys, kind="stable")
        keys, var = keys[order], var[order]
        bounds = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1], True]) if keys.size else []
        for s, e in zip(bounds[:-1], bounds[1:]):
            room = 1 - taken.get(int(keys[s]), 0)
            if e - s > room:
                self.model.add_row(self.x[var[s:e]], np.ones(e - s), hi=float(room))

    def values_for(self, where: np.ndarray) -> np.ndarray:
        """Model values of a placement (hint), with the deviation variables at their minimum."""
        vals = np.zeros(self.model.n_variables)
        vals[self.x] = (where[self.var_item] == self.var_node).astype(float)
        sc, items = self.sc, self.items
        load = np.zeros(items.capacities.size, dtype=np.int64)
        idx = np.arange(len(items.members))
        np.add.at(load, where, sc.load[idx, where])
        dev = load - sc.mean
        # Constraint (3) on every node, (4) on active ones.
        node_dev = np.where(items.active, np.abs(dev), np.maximum(dev, 0))
        if self.local:
            vals[self.d] = node_dev[self.dev_nodes].max(initial=0)
        else:
            vals[self.d] = max(node_dev.max(initial=0), self.model.lb[self.d])
        vals[self.up] = max(dev.max(initial=0), self.model.lb[self.up])
        vals[self.low] = max((-dev[items.active]).max(initial=0), self.model.lb[self.low])
        if self.abs_dev:
            vals[self.abs_dev] = node_dev[self.dev_nodes]
        return vals

    def placement(self, values: np.ndarray, where: np.ndarray) -> np.ndarray:
        new = where.copy()
        chosen = values[self.x] > 0.5
        new[self.var_item[chosen]] = self.var_node[chosen]
        return new

    def phase1(self) -> None:
        """The first objective: ``min d`` (the paper's ``w1 * d`` term). In a neighbourhood, ties
        of the maximum are broken by the sum of the nodes' deviations ``e_i`` (exact integer
        weights)."""
        if self.abs_dev:
            # max deviation first, then the sum of deviations: exact integer weights.
            weight = (len(self.abs_dev) + 1) * (int(self.model.ub[self.d]) + 1)
            self.model.minimise([self.d, *self.abs_dev], [weight] + [1] * len(self.abs_dev))
        else:
            self.model.minimise([self.d], [1])

    def later_levels(self, d_value: float) -> list[tuple[np.ndarray, np.ndarray]]:
        """Fix ``d``; the objectives that follow, in order. On a whole model each level is its own
        solve (fixed before the next): CP-SAT proves one level at a time far faster than a weighted
        sum of several (measured on the demo's statistics: the state level of a packed
        solve was rarely proven within a second, level by level it often is); in a neighbourhood
        (``local``), where solves are many and small, the levels are packed into weighted sums
        whose integer weights stay below 2**53. Each is ``(columns, coefficients)``; levels with
        nothing to decide are left out."""
        m, sc, items = self.model, self.sc, self.items
        m.ub[self.d] = float(d_value)
        # With d fixed, -d <= up, low <= d (some active node is at or below the mean + low, and
        # the top node is at or above it - low): tight bounds keep S's range, and the weights, small.
        for v in (self.up, self.low):
            m.lb[v], m.ub[v] = max(m.lb[v], -float(d_value)), float(d_value)
        removing = ~items.active[self.var_node]
        drain = np.where(removing, sc.raw[self.var_item], 0)
        n_moves = int(self.moves_coef.sum()) + 1
        state = sc.state[self.var_item, self.var_node] * n_moves + self.moves_coef
        x = self.x
        levels = [  # (columns, coefficients, range of the level's value)
            (x, drain, int(drain.sum())),
            (x, self.left_coef, int(self.left_coef.sum())),
        ]
        levels.append((np.r_[self.up, self.low], np.array([1, 1]), int(4 * d_value)))
        if items.traffic is not None:  # ALBIC's witness: collocation once balance is met (REMOTE_LEVELS)
            remote = items.remote_at[self.var_item, self.var_node]
            step = 2.0**20 / max(float(remote.max(initial=0.0)), 1e-300)
            remote = np.round(remote * step).astype(np.int64)
            levels.append((x, remote, int(remote.sum())))
        levels.append(
            (x, state, int(sc.state[self.var_item, self.var_node].clip(0).sum()) * n_moves + n_moves)
        )
        groups: list[list[tuple[np.ndarray, np.ndarray, int]]] = [[]]
        product = 1
        for level in levels:
            if level[2] <= 0 and not np.any(level[1] < 0):
                continue  # constant (e.g. nothing on removing nodes): nothing to decide
            width = level[2] + 1
            if groups[-1] and (not self.local or product * width >= 2**53):
                groups.append([])
                product = 1
            groups[-1].append(level)
            product *= width
        out = []
        for group in groups:
            if not group:
                continue
            weight, cols, coefs = 1, [], []
            for c, a, r in reversed(group):
                cols.append(c)
                coefs.append(np.asarray(a, dtype=float) * weight)
                weight *= r + 1
            out.append((np.concatenate(cols[::-1]), np.concatenate(coefs[::-1])))
        return out
