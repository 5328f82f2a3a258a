"""The ALBIC MILP of section 4.3.1 over *items*, and the large-neighbourhood search that solves it.

An item is a set of key groups that moves as a unit (one key group for the plain MILP, a partition
of collocated key groups for ALBIC). ``x[t, i] = 1`` places item ``t`` on node ``i``; item ``t`` may
go to any active node it is allowed on, or stay where all its members are now if that is a removing
node (nothing ever moves onto a removing node: Lemma 4.1's conclusion, made a rule). Everything the
model needs is a coefficient per (item, node): its load, the moves and the migration cost it makes
there, and the load and members it leaves on a removing node.

With ``u_i = load_i / capacity_i`` and ``mean = total load / total active capacity``, the paper's
constraints read: (3) ``u_i <= mean + (d - d_u)`` on **every** node, removing ones included (so
load sitting on a node that is going away counts against ``d`` like an overload), and (4)
``u_i >= mean - (d - d_l)`` on the active nodes only. Constraint (5), ``mean - d >= 0``, is **not
imposed**: it does not always hold -- a removing node holding more than twice the mean (the
``{1, 1, 1, 6}`` example: ``u = 9``, ``mean = 3``, so ``d >= 6``) or a key group heavier than
twice the mean forces ``d > mean``, and imposing it would make such instances (and their current
placement) infeasible. Its purpose in the paper, keeping (4)'s lower bound non-negative, is moot
since loads are never negative.

Objective, lexicographic (each level only breaks ties of the ones before), named in
:data:`OBJECTIVE_LEVELS` (``plan.details["objective_levels"]`` maps these names to values):

1. ``max_deviation`` = ``d``: ``max(max_{i in N} (u_i - mean), max_{i in A} (mean - u_i))``.
   Without removing nodes it is albic.core.metrics.load_distance (the paper's ``ceil()`` of the mean is
   for its integer percent loads and is left out);
2. ``load_on_removing`` = the paper's second objective ``sum_{n in B} load_n`` (raw load, as
   albic.core.metrics.removing_load): with a tight budget the most load leaves first;
3. ``key_groups_on_removing``: the number of key groups left there (a node can only be terminated
   empty, and a key group of zero load would never leave by load alone);
4. ``one_sided_deviations`` = ``(max_{i in N} u_i - mean) + (mean - min_{i in A} u_i)``: the
   paper's "maximise ``d_u + d_l``" with ``d`` fixed is exactly minimising ``d - d_u`` and
   ``d - d_l``, the tightest upper and lower bounds;
5. ``state_moved``: the migration cost (sum of the state sizes moved), so an unbudgeted plan moves
   no more state than the balance it reaches needs. Among plans moving equal state, fewer moves
   win (a tie-break inside this level, visible for key groups of zero state; ``Outcome.value``
   carries the move count as a sixth entry).

The budgets (``max_moves``, ``max_migration_cost``), the resource caps and ``spread`` (key groups
of one spread value, e.g. the replicas of a Kafka partition, on distinct nodes: one row per spread
value and node, ``sum x <= 1``; an item holding two members of one spread value can go nowhere) are
constraints.

Solving: the data are scaled to integers (exactly when loads, capacities and state sizes are
integers, then the integer optimum is the true one; otherwise to ~2**20 steps of the mean, and the
final choice among candidate plans is always made on the true floating-point objective). Each solve
runs in phases on CP-SAT (or another backend): minimise ``d``; then, with ``d`` fixed, the later
levels, packed into as few weighted solves as keep every integer weight below 2**53 (usually one;
each solved level is fixed before the next), so the priorities are never blurred by floating point.

Small instances (up to ``FULL_MODEL_VARIABLES`` item-node pairs) are solved whole, and a plan is
OPTIMAL only when every phase was proven optimal on exactly scaled data. Larger ones go through a
large-neighbourhood search: starting from the best of the current placement and the warm starts
(Flux's plan), repeatedly pick a few nodes (the most over- and under-loaded, plus random ones, seeded)
and re-solve exactly the items on them with every other item fixed (their moves and cost still
count against the budget), keeping a result only when it improves the true objective. A plan is
therefore never worse than the current placement or any warm start (where a node is removing,
"worse" includes the load it still holds: draining can raise the active nodes' load distance).
From ``LEVEL_ITEMS`` (10,000) items on, each start is first levelled greedily
(:func:`planners.local_search.level`: one move at a time between the node of largest deviation
and its partners across the mean, with all the time but the final reserve) and then polished:
a polish step or a neighbourhood solve costs milliseconds to seconds there, and a budget of
1,000 moves spent one polish step at a time would take longer than the time limit. Below that
size each start is polished as it is and then, while the polish's share of the limit lasts,
levelled and polished too (another local optimum, sometimes better).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from albic.core.checks import within_budget
from solvers.milp import Model
from planners.local_search import LEVEL_ITEMS, level, polish
from solvers.balance_bound import load_distance_bound

__all__ = ["Items", "Outcome", "solve_items", "named_levels", "OBJECTIVE_LEVELS", "FULL_MODEL_VARIABLES",
           "NEIGHBOURHOOD_VARIABLES"]

#: The objective's levels, most important first (see the module docstring).
OBJECTIVE_LEVELS = ("max_deviation", "load_on_removing", "key_groups_on_removing",
                    "one_sided_deviations", "state_moved")

FULL_MODEL_VARIABLES = 4000
NEIGHBOURHOOD_VARIABLES = 600
# Share of the time limit one neighbourhood solve may take.
SLICE_SHARE = 0.04
# Share of the time limit the first polish may take (it does most of the work), and the share
# kept for the last one.
POLISH_SHARE = 0.4
FINAL_POLISH_SHARE = 0.08
# Polish steps made on whole (small) models even when the clock has run out (well under a
# millisecond each there): a plan cut short by a loaded machine still gets the first, largest
# improvements.
MIN_POLISH_STEPS = 5


class PairTable:
    """An ``[item, node]`` table computed on demand, never stored whole (100,000 items x 1,000
    nodes would take gigabytes). Indexed like a numpy array with two broadcastable index arrays
    (``table[t, i]``) or by item rows (``table[t]``, every node); ``fn(t, i)`` computes entries.

    >>> table = PairTable(lambda t, i: t * 10 + i, (3, 4))
    >>> table[np.array([0, 2]), np.array([1, 3])].tolist(), table[1].tolist(), int(table.sum())
    ([1, 23], [10, 11, 12, 13], 138)
    """

    def __init__(self, fn, shape: tuple[int, int]) -> None:
        self.fn, self.shape = fn, shape

    def __getitem__(self, key):
        if isinstance(key, tuple):
            t, i = key
            return self.fn(np.asarray(t), np.asarray(i))
        t = np.asarray(key)
        return self.fn(t[..., None], np.arange(self.shape[1]))

    def sum(self, rows: int = 4096):
        """The sum of every entry, computed by blocks of rows."""
        total = 0
        for start in range(0, self.shape[0], rows):
            total += self[np.arange(start, min(start + rows, self.shape[0]))].sum()
        return total

    def max(self, initial=0):
        result = initial
        for start in range(0, self.shape[0], 4096):
            result = max(result, self[np.arange(start, min(start + 4096, self.shape[0]))].max(initial=initial))
        return result


@dataclass
class Items:
    """The placement problem over items; ``where`` arrays give the node index of each item.

    ``allowed`` is None (every node), a dense ``bool[item, node]`` array, or ``{item: bool[node]}``
    for the few items restricted (e.g. ALBIC's pinned unit). The per-(item, node) coefficients are
    :class:`PairTable`: an item's coefficients differ from node to node only where its members
    sit now, so they are computed from per-item data (and dense rows for the rare items whose
    members sit on several nodes), which keeps 1,000 nodes x 100,000 key groups in memory."""

    members: list[np.ndarray]          # key-group positions of each item
    loads: np.ndarray                  # per key group
    state_sizes: np.ndarray            # per key group
    current: np.ndarray                # node index of each key group now
    capacities: np.ndarray             # per node
    removing: np.ndarray               # per node
    allowed: Any = None                # see the class docstring; a PairTable after __post_init__
    max_moves: int | None = None
    max_cost: float | None = None
    resources: np.ndarray | None = None  # float[key group, resource]
    resource_caps: np.ndarray | None = None  # float[node, resource], active nodes only
    resource_caps_names: list[str] = field(default_factory=list)  # the resources' names, in order
    spread: np.ndarray | None = None   # int[key group]: spread code, -1 for none (None: no spread)
    # derived
    item_load: np.ndarray = field(init=False)
    moves_at: PairTable = field(init=False)   # int[item, node]: members not home at node
    cost_at: PairTable = field(init=False)    # float[item, node]
    left_at: PairTable = field(init=False)    # int[item, node]: members left on a removing node
    left_load_at: PairTable = field(init=False)  # float[item, node]: their load
    item_resources: np.ndarray | None = field(init=False, default=None)  # float[item, resource]
    item_codes: list[np.ndarray] | None = field(init=False, default=None)  # spread codes per item
    code_items: dict[int, list[int]] | None = field(init=False, default=None)  # items per code

    def __post_init__(self) -> None:
        n_items, n_nodes = len(self.members), self.capacities.size
        # One flat pass over every member (no per-item Python loop: items number 100,000s).
        sizes = np.array([m.size for m in self.members], dtype=np.int64)
        flat = np.concatenate(self.members).astype(np.int64) if n_items else np.zeros(0, dtype=np.int64)
        item_of = np.repeat(np.arange(n_items), sizes)
        self.item_load = np.bincount(item_of, weights=self.loads[flat], minlength=n_items)
        costs = np.bincount(item_of, weights=self.state_sizes[flat], minlength=n_items)
        self.item_size = sizes
        self.item_cost = costs
        # Home: the node all members share, or -1 (split item, kept as dense rows).
        nodes = self.current[flat]
        first = np.r_[0, np.cumsum(sizes)[:-1]] if n_items else np.zeros(0, dtype=np.int64)
        nonempty = sizes > 0
        low = np.full(n_items, -1, dtype=np.int64)
        high = np.full(n_items, -1, dtype=np.int64)
        if nonempty.any():
            low[nonempty] = np.minimum.reduceat(nodes, first[nonempty])
            high[nonempty] = np.maximum.reduceat(nodes, first[nonempty])
        self.home = np.where(low == high, low, -1)
        split = np.flatnonzero(self.home < 0)
        self._split_row = np.full(n_items, -1, dtype=np.int64)
        self._split_row[split] = np.arange(split.size)
        split_count = np.zeros((split.size, n_nodes))
        split_cost = np.zeros((split.size, n_nodes))
        split_load = np.zeros((split.size, n_nodes))
        in_split = self._split_row[item_of] >= 0
        np.add.at(split_count, (self._split_row[item_of][in_split], nodes[in_split]), 1)
        np.add.at(split_cost, (self._split_row[item_of][in_split], nodes[in_split]),
                  self.state_sizes[flat][in_split])
        np.add.at(split_load, (self._split_row[item_of][in_split], nodes[in_split]),
                  self.loads[flat][in_split])
        self._split_count, self._split_cost, self._split_load = split_count, split_cost, split_load
        shape = (n_items, n_nodes)
        self.moves_at = PairTable(lambda t, i: self.item_size[t] - self._home_count(t, i), shape)
        self.cost_at = PairTable(lambda t, i: self.item_cost[t] - self._home_part(t, i, self.item_cost, self._split_cost), shape)
        self.left_at = PairTable(lambda t, i: self._home_count(t, i) * self.removing[i], shape)
        self.left_load_at = PairTable(
            lambda t, i: self._home_part(t, i, self.item_load, self._split_load) * self.removing[i], shape)
        given = self.allowed
        if isinstance(given, np.ndarray):
            given = given.astype(bool)
            base = lambda t, i: given[t, i]  # noqa: E731
        elif isinstance(given, dict):
            rows = np.full(n_items, -1, dtype=np.int64)
            table = np.ones((max(len(given), 1), n_nodes), dtype=bool)
            for r, (t, row) in enumerate(sorted(given.items())):
                rows[t], table[r] = r, row
            base = lambda t, i: np.where(rows[t] >= 0, table[np.maximum(rows[t], 0), i], True)  # noqa: E731
        else:
            base = lambda t, i: np.ones(np.broadcast(t, i).shape, dtype=bool)  # noqa: E731
        # Never onto a removing node: only where every member already is.
        self._blocked = np.zeros(n_items, dtype=bool)
        self.allowed = PairTable(
            lambda t, i: base(t, i) & ~self._blocked[t] & ~(self.removing[i] & (self.moves_at[t, i] > 0)), shape)
        if self.resources is not None:
            self.item_resources = np.zeros((n_items, self.resources.shape[1]))
            np.add.at(self.item_resources, item_of, self.resources[flat])
        if self.spread is not None and (self.spread >= 0).any():
            self._init_spread()

    def _init_spread(self) -> None:
        self.item_codes, self.code_items = [], {}
        for t, m in enumerate(self.members):
            codes = self.spread[m][self.spread[m] >= 0]
            unique = np.unique(codes)
            if unique.size < codes.size:  # two replicas of one spread cannot share a node
                self._blocked[t] = True  # allowed nowhere
            self.item_codes.append(unique)
            for c in unique.tolist():
                self.code_items.setdefault(c, []).append(t)

    def spread_ok(self, where: np.ndarray, changes: list[tuple[int, int]]) -> bool:
        """Whether moving each ``(item, target)`` of ``changes`` keeps every spread value on
        distinct nodes (``where`` already does)."""
        if self.code_items is None:
            return True
        moved = dict(changes)
        for t, target in changes:
            for c in self.item_codes[t].tolist():
                for u in self.code_items[c]:
                    if u != t and moved.get(u, where[u]) == target:
                        return False
        return True

    def spread_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """``(item, spread code)`` pairs, one per spread value an item holds."""
        if self.item_codes is None:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        items = np.repeat(np.arange(len(self.members)), [c.size for c in self.item_codes])
        return items, np.concatenate(self.item_codes).astype(np.int64)

    def _home_part(self, t, i, per_item, split_rows):
        """``per_item[t]`` where item ``t``'s members all sit on node ``i``, the split rows' entry
        for split items, else 0."""
        t, i = np.broadcast_arrays(np.asarray(t), np.asarray(i))
        out = np.where(self.home[t] == i, per_item[t], 0).astype(float)
        row = self._split_row[t]
        if split_rows.shape[0] and np.any(row >= 0):
            sel = row >= 0
            out[sel] = split_rows[row[sel], i[sel]]
        return out

    def _home_count(self, t, i):
        return np.round(self._home_part(t, i, self.item_size, self._split_count)).astype(np.int64)

    @property
    def active(self) -> np.ndarray:
        return ~self.removing

    def node_loads(self, where: np.ndarray) -> np.ndarray:
        return np.bincount(where, weights=self.item_load, minlength=self.capacities.size)

    def mean(self) -> float:
        return float(self.loads.sum() / self.capacities[self.active].sum())

    def deviations(self, where: np.ndarray) -> np.ndarray:
        """Per node, how far it pushes ``d``: ``|u_i - mean|`` on active nodes (constraints (3) and
        (4)), ``max(u_i - mean, 0)`` on removing ones (constraint (3) only)."""
        dev = self.node_loads(where) / self.capacities - self.mean()
        return np.where(self.removing, np.maximum(dev, 0.0), np.abs(dev))

    def evaluate(self, where: np.ndarray) -> tuple[float, ...] | None:
        """The true objective of a placement -- the :data:`OBJECTIVE_LEVELS` then the number of
        moves (the tie-break inside ``state_moved``) -- or None if it breaks a constraint."""
        idx = np.arange(len(self.members))
        if len(self.members) and not self.allowed[idx, where].all():
            return None
        moves = int(self.moves_at[idx, where].sum())
        cost = float(math.fsum(self.cost_at[idx, where].tolist()))
        if self.max_moves is not None and moves > self.max_moves:
            return None
        if not within_budget(cost, self.max_cost):
            return None
        if self.resource_caps is not None and len(self.members):
            use = np.zeros((self.capacities.size, self.item_resources.shape[1]))
            np.add.at(use, where, self.item_resources)
            over = use[self.active] - self.resource_caps[self.active]
            if np.any(over > 1e-9 * (1 + np.abs(self.resource_caps[self.active]))):
                return None
        if self.item_codes is not None:
            items, codes = self.spread_pairs()
            keys = codes * self.capacities.size + where[items]
            if np.unique(keys).size < keys.size:
                return None
        dev = self.node_loads(where) / self.capacities - self.mean()
        up = float(dev.max())                       # constraint (3): every node
        low = float((-dev[self.active]).max())      # constraint (4): active nodes
        left_load = float(math.fsum(self.left_load_at[idx, where].tolist()))
        left = float(self.left_at[idx, where].sum())
        return (max(up, low), left_load, left, up + low, cost, float(moves))


@dataclass
class Outcome:
    where: np.ndarray
    value: tuple | None
    status: str            # OPTIMAL, FEASIBLE, INFEASIBLE, NO_SOLUTION
    bound: float | None    # proven lower bound on D (true units), when known
    iterations: int
    solver_notes: list[str]
    reason: dict | None = None
    stopped_by: str = "done"  # "done", "work budget", "time limit" or "wall clock" (_Clock)


def named_levels(value: tuple) -> dict[str, float]:
    """``{level name: value}`` of an objective value (the move-count tie-break left out)."""
    return {name: float(v) for name, v in zip(OBJECTIVE_LEVELS, value)}


def better(a: tuple | None, b: tuple | None) -> bool:
    """Whether objective ``a`` is lexicographically better than ``b`` (None = infeasible)."""
    if a is None:
        return False
    if b is None:
        return True
    for x, y in zip(a, b):
        if not math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12):
            return x < y
    return False


# -- integer scaling -----------------------------------------------------------------------------


def _integral(values: np.ndarray) -> bool:
    return bool(np.all(np.abs(values - np.round(values)) <= 1e-9 * np.maximum(1, np.abs(values))))


@dataclass
class _Scaled:
    load: PairTable      # int[item, node]: round(item load * s / capacity)
    mean: int            # round(total * s / active capacity)
    cost: PairTable      # int[item, node]
    max_cost: int | None
    res: np.ndarray | None   # int[item, resource]
    res_caps: np.ndarray | None  # int[node, resource]
    scale: float
    exact: bool
    raw: np.ndarray      # int[item]: round(item load * s), the load_on_removing level
    state: PairTable     # int[item, node]: state moved, the state_moved level (<= 2**24 in all)


def _scale(items: Items) -> _Scaled:
    caps, loads = items.capacities, items.loads
    active_cap = caps[items.active].sum()
    scale, exact = None, False
    if _integral(loads) and _integral(caps):
        s = math.lcm(*(int(round(c)) for c in caps), int(round(active_cap)))
        if s * max(float(loads.sum()), 1.0) < 2**45:
            scale, exact = float(s), True
    if scale is None:
        ref = max(float(loads.sum() / active_cap), float((items.item_load.max(initial=0.0)) / caps.min()), 1e-300)
        scale = 2.0**20 / ref
    shape = items.moves_at.shape
    load = PairTable(lambda t, i: np.round(items.item_load[t] * scale / caps[i]).astype(np.int64), shape)
    mean = int(round(float(loads.sum()) * scale / active_cap))
    if _integral(items.state_sizes) and items.state_sizes.sum() < 2**45:
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
        whole = [_integral(items.item_resources[:, r]) and _integral(items.resource_caps[:, r])
                 for r in range(ref.size)]
        s = np.where(whole, 1.0, s)
        res = np.ceil(items.item_resources * s[None, :] - 1e-9).astype(np.int64)
        res_caps = np.floor(items.resource_caps * s[None, :] + 1e-6).astype(np.int64)
        exact = exact and _integral(items.item_resources * s) and _integral(items.resource_caps * s)
    raw = np.round(items.item_load * scale).astype(np.int64)
    total_state = float(items.state_sizes.sum())
    if _integral(items.state_sizes) and total_state <= 2**24:
        state = PairTable(lambda t, i: np.round(items.cost_at[t, i]).astype(np.int64), shape)
    else:
        state_s = 2.0**24 / max(total_state, 1e-300)
        state = PairTable(lambda t, i: np.round(items.cost_at[t, i] * state_s).astype(np.int64), shape)
        exact = exact and total_state == 0
    return _Scaled(load, mean, cost, max_cost, res, res_caps, scale, exact, raw, state)


# -- one (sub)model -------------------------------------------------------------------------------


class _SubModel:
    """The integer model of the items on ``nodes``, every other item fixed where ``where`` puts it."""

    def __init__(self, items: Items, sc: _Scaled, where: np.ndarray, nodes: np.ndarray,
                 local: bool = False) -> None:
        # local: the deviations bounded are those of the neighbourhood's nodes only (the nodes
        # outside are fixed, so the global maximum may not move even when these improve).
        self.items, self.sc = items, sc
        n_nodes = items.capacities.size
        in_v = np.zeros(n_nodes, dtype=bool)
        in_v[nodes] = True
        free = np.flatnonzero(in_v[where])
        fixed = np.flatnonzero(~in_v[where])
        self.free = free
        self.nodes = nodes
        pairs_t, pairs_i = np.nonzero(items.allowed[free[:, None], nodes[None, :]])
        self.var_item = free[pairs_t]
        self.var_node = nodes[pairs_i]
        m = Model()
        self.model = m
        n_x = self.var_item.size
        x = m.add_variables(n_x)
        # Constants from the fixed items.
        fixed_load = np.zeros(n_nodes, dtype=np.int64)
        np.add.at(fixed_load, where[fixed], sc.load[fixed, where[fixed]])
        const_moves = int(items.moves_at[fixed, where[fixed]].sum())
        const_cost = int(sc.cost[fixed, where[fixed]].sum())
        active = items.active
        heaviest = int(round(float(items.item_load.max(initial=0.0)) * sc.scale / float(items.capacities.min())))
        total_int = heaviest * max(len(items.members), 1) + sc.mean + 1
        d = m.add_variables(1, lb=0, ub=total_int)[0]
        up = m.add_variables(1, lb=-total_int, ub=total_int)[0]
        low = m.add_variables(1, lb=-total_int, ub=total_int)[0]
        self.d, self.up, self.low, self.x = d, up, low, x
        self.abs_dev: list[int] = []
        self.dev_nodes: list[int] = []  # the node of each abs_dev variable
        self.local = local
        # Each free item on exactly one node.
        order = np.argsort(self.var_item, kind="stable")
        starts = np.searchsorted(self.var_item[order], free)
        ends = np.searchsorted(self.var_item[order], free, side="right")
        for s, e in zip(starts.tolist(), ends.tolist()):
            m.add_row(x[order[s:e]], np.ones(e - s), lo=1, hi=1)
        # Deviations: in the neighbourhood linear, outside constant. Constraint (3) bounds every
        # node from above, constraint (4) the active ones from below.
        out_dev = (fixed_load - sc.mean)[active & ~in_v]
        out_up = (fixed_load - sc.mean)[~in_v]
        d_lb = int(max(np.abs(out_dev).max(initial=0), out_up.max(initial=0)))
        up_lb = int(out_up.max(initial=-total_int))
        low_lb = int((-out_dev).max(initial=-total_int))
        if not local:
            m.lb[d], m.lb[up], m.lb[low] = float(d_lb), float(max(up_lb, -total_int)), float(max(low_lb, -total_int))
        coef = sc.load[self.var_item, self.var_node]
        for i in nodes.tolist():
            sel = np.flatnonzero(self.var_node == i)
            cols, a = x[sel], coef[sel]
            base = sc.mean - int(fixed_load[i])
            removing_i = not active[i]
            if removing_i and not cols.size and fixed_load[i] == 0:
                continue  # an empty removing node that nothing may enter bounds nothing
            # (3) u_i - mean <= d, up on every node; (4) mean - u_i <= d, low on active ones
            m.add_row(np.r_[cols, d], np.r_[a, -1], hi=base)
            m.add_row(np.r_[cols, up], np.r_[a, -1], hi=base)
            if not removing_i:
                m.add_row(np.r_[cols, d], np.r_[-a, -1], hi=-base)
                m.add_row(np.r_[cols, low], np.r_[-a, -1], hi=-base)
            if local:  # e_i >= its deviation: the sum breaks ties of the neighbourhood's maximum
                e = m.add_variables(1, lb=0, ub=total_int)[0]
                m.add_row(np.r_[cols, e], np.r_[a, -1], hi=base)
                if not removing_i:
                    m.add_row(np.r_[cols, e], np.r_[-a, -1], hi=-base)
                self.abs_dev.append(e)
                self.dev_nodes.append(i)
            if removing_i:
                continue
            if sc.res is not None:
                for r in range(sc.res.shape[1]):
                    used = sc.res[fixed[where[fixed] == i], r].sum()
                    m.add_row(cols, sc.res[self.var_item[sel], r], hi=float(sc.res_caps[i, r] - used))
        if items.item_codes is not None:
            self._spread_rows(fixed, where)
        moves = items.moves_at[self.var_item, self.var_node]
        if items.max_moves is not None:
            m.add_row(x, moves, hi=items.max_moves - const_moves)
        if sc.max_cost is not None:
            m.add_row(x, sc.cost[self.var_item, self.var_node], hi=sc.max_cost - const_cost)
        self.moves_coef = moves
        self.left_coef = items.left_at[self.var_item, self.var_node]
        hint = self.values_for(where)
        if local:  # never worse than now on the neighbourhood: also keeps the weights small
            m.ub[d] = float(hint[d])
            for e in self.abs_dev:
                m.ub[e] = float(hint[d])
        m.set_hint(hint)

    def _spread_rows(self, fixed: np.ndarray, where: np.ndarray) -> None:
        """At most one item of each spread value per node: ``sum x <= 1 - fixed ones there``."""
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
        codes = (np.concatenate([items.item_codes[t] for t in self.var_item.tolist()]).astype(np.int64)
                 if var.size else np.zeros(0, dtype=np.int64))
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
        if self.abs_dev:
            # max deviation first, then the sum of deviations: exact integer weights.
            weight = (len(self.abs_dev) + 1) * (int(self.model.ub[self.d]) + 1)
            self.model.minimise([self.d, *self.abs_dev], [weight] + [1] * len(self.abs_dev))
        else:
            self.model.minimise([self.d], [1])

    def later_levels(self, d_value: float) -> list[tuple[np.ndarray, np.ndarray]]:
        """Fix ``d``; the objectives that follow, in order: the levels after ``max_deviation``
        packed into weighted sums whose integer weights stay below 2**53 (see the module
        docstring). Each is ``(columns, coefficients)``; levels with nothing to decide are left out."""
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
            (np.r_[self.up, self.low], np.array([1, 1]), int(4 * d_value)),
            (x, state, int(sc.state[self.var_item, self.var_node].clip(0).sum()) * n_moves + n_moves),
        ]
        groups: list[list[tuple[np.ndarray, np.ndarray, int]]] = [[]]
        product = 1
        for level in levels:
            if level[2] <= 0 and not np.any(level[1] < 0):
                continue  # constant (e.g. nothing on removing nodes): nothing to decide
            width = level[2] + 1
            if groups[-1] and product * width >= 2**53:
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


@dataclass
class SolveSettings:
    backend: str = "cpsat"
    time_limit: float | None = 1.0
    deterministic: bool = True
    workers: int = 1
    seed: int = 0
    full_model_variables: int = FULL_MODEL_VARIABLES
    neighbourhood_variables: int = NEIGHBOURHOOD_VARIABLES
    polish: bool = True  # the local search of planners/local_search.py (off: the solver alone)
    started: float | None = None  # time.perf_counter() when planning began (wall-clock limits)
    deadline: float | None = None  # the wall-clock guard: time.perf_counter() to stop by, every mode
    bound: float | None = None  # the counting bound when already known (solvers/balance_bound.py)


class _Clock:
    """Time left, by two limits. ``time_limit`` is the budget that decides *what* is done: CP-SAT
    work units plus a deterministic charge for model building and polish steps when
    ``deterministic`` (so the same budget does the same work on any machine), wall-clock seconds
    otherwise. ``deadline`` is the wall-clock guard that decides *when to stop*, in every mode.
    ``stopped_by`` tells which one ended the search: a deterministic plan is reproducible unless
    it is ``"wall clock"``."""

    def __init__(self, settings: SolveSettings) -> None:
        self.s = settings
        self.start = time.perf_counter() if settings.started is None else settings.started
        self.work = 0.0
        self.deterministic = settings.deterministic and settings.backend == "cpsat"
        self.stopped_by = "done"

    def own_left(self) -> float:
        if self.s.time_limit is None:
            return math.inf
        used = self.work if self.deterministic else time.perf_counter() - self.start
        return self.s.time_limit - used

    def wall_left(self) -> float:
        return math.inf if self.s.deadline is None else self.s.deadline - time.perf_counter()

    def left(self) -> float:
        return min(self.own_left(), self.wall_left())

    def out_of_time(self, reserve: float = 0.0) -> bool:
        """Whether less than ``reserve`` is left; records which limit ran out."""
        own, wall = self.own_left(), self.wall_left()
        if wall <= reserve and (wall < own or not self.deterministic):
            self.stopped_by = "wall clock" if self.deterministic else "time limit"
            return True
        if own <= reserve:
            self.stopped_by = "work budget" if self.deterministic else "time limit"
            return True
        return False

    def spend(self, work: float) -> bool:
        """Charge ``work`` (deterministic units; ignored in wall-clock mode); whether to go on."""
        if self.deterministic:
            self.work += work
        return not self.out_of_time()


def _run(sub: _SubModel, clock: _Clock, settings: SolveSettings, limit: float, notes: list[str]):
    """One solve of the submodel's current objective within ``limit`` (None when no time is left);
    the wall-clock guard caps the solver's own wall time in every mode."""
    limit = min(limit, clock.own_left())
    wall = clock.wall_left()
    if limit <= 0 or wall <= 0:
        clock.out_of_time()
        return None
    if clock.deterministic and wall < limit:
        clock.stopped_by = "wall clock"  # this solve may be cut short: not reproducible
    sol = sub.model.solve(settings.backend, time_limit=limit if math.isfinite(limit) else None,
                          deterministic=settings.deterministic, workers=settings.workers, seed=settings.seed,
                          wall_limit=wall if math.isfinite(wall) else None)
    clock.work += sol.work
    if sol.note:
        notes.append(sol.note)
    return sol


def _solve_sub(sub: _SubModel, clock: _Clock, settings: SolveSettings, slice_: float, notes: list[str]):
    """Every phase on one submodel: ``d`` gets two thirds of the slice, the later levels share the
    rest and whatever ``d`` left. Returns (values or None, status of the ``d`` phase, the worst
    status of the later phases, bound on ``d``)."""
    slice_ = min(slice_, clock.left())
    sub.phase1()
    s1 = _run(sub, clock, settings, 2 * slice_ / 3 if math.isfinite(slice_) else slice_, notes)
    if s1 is None or s1.values is None:
        return None, s1.status if s1 else "NO_SOLUTION", "NO_SOLUTION", None
    values, status = s1.values, "OPTIMAL"
    spent = s1.work if settings.deterministic else s1.seconds
    groups = sub.later_levels(round(s1.values[sub.d]))
    for n, (cols, coefs) in enumerate(groups):
        sub.model.minimise(cols, coefs)
        sub.model.set_hint(values)
        share = (slice_ - spent) / (len(groups) - n) if math.isfinite(slice_) else slice_
        s2 = _run(sub, clock, settings, max(share, 0.02), notes)
        if s2 is None or s2.values is None:
            status = s2.status if s2 else "NO_SOLUTION"
            break
        spent += s2.work if settings.deterministic else s2.seconds
        values = s2.values
        if s2.status != "OPTIMAL":
            status = s2.status
        # Fix this group at the value found before the next one breaks its ties.
        sub.model.add_row(cols, coefs, hi=float(np.dot(coefs, values[cols])))
    return values, s1.status, status, s1.bound


def _neighbourhood(items: Items, where: np.ndarray, rng: np.random.Generator, budget: int) -> np.ndarray:
    """Nodes to re-solve: most over- and under-loaded first, then random ones, within ``budget``
    item-node pairs; removing nodes that still hold items join when they fit."""
    n_nodes = items.capacities.size
    u = items.node_loads(where) / items.capacities
    dev = u - items.mean()
    active = np.flatnonzero(items.active)
    by_dev = active[np.argsort(-dev[active], kind="stable")]
    count = np.bincount(where, minlength=n_nodes)
    holding_removing = [i for i in np.flatnonzero(items.removing).tolist() if count[i]]
    rest = rng.permutation(active).tolist()
    order = []
    lo, hi = 0, by_dev.size - 1
    # Alternate extremes (most over, most under) with random nodes, mostly extremes.
    while lo <= hi or rest:
        if lo <= hi:
            order.append(int(by_dev[lo])); lo += 1
        if lo <= hi:
            order.append(int(by_dev[hi])); hi -= 1
        if rest and rng.random() < 0.5:
            order.append(int(rest.pop()))
        if lo > hi and not rest:
            break
        if lo > hi:
            order.extend(int(r) for r in rest)
            break
    chosen: list[int] = []
    seen = set()
    held = 0  # items on the chosen nodes (from the per-node counts: no pass over the items)
    for i in holding_removing + order:
        if i in seen:
            continue
        n_vars = (held + int(count[i])) * (len(chosen) + 1)
        if n_vars > budget and len(chosen) >= 2:
            continue
        chosen.append(i)
        seen.add(i)
        held += int(count[i])
    return np.array(sorted(chosen), dtype=np.int64)


def solve_items(items: Items, starts: list[np.ndarray], settings: SolveSettings) -> Outcome:
    """Best placement found; see the module docstring."""

    clock = _Clock(settings)
    notes: list[str] = []
    n_items, n_nodes = len(items.members), items.capacities.size
    best, best_value = None, None
    for start in starts:
        value = items.evaluate(start)
        if best is None or better(value, best_value):
            best, best_value = start.copy(), value
    if n_items == 0:
        return Outcome(best, best_value, "OPTIMAL", 0.0, 0, notes)
    counted = _counting_bound(items) if settings.bound is None else settings.bound
    sc = _scale(items)
    # Pairs to decide, at most n_items * n_nodes: count them only when that product is small.
    n_pairs = n_items * n_nodes
    if n_pairs <= 4 * settings.full_model_variables:
        n_pairs = int(items.allowed.sum())
    full = n_pairs <= settings.full_model_variables or best_value is None or n_nodes <= 2
    rng = np.random.default_rng(settings.seed)
    if full:
        proven, st1, bound = False, "NO_SOLUTION", None
        if settings.polish and best_value is not None:
            # A polished start first: a better hint, and a plan even when the clock is gone.
            cand = polish(items, best, clock=clock, min_steps=MIN_POLISH_STEPS)
            value = items.evaluate(cand)
            if better(value, best_value):
                best, best_value = cand, value
        if not clock.out_of_time() and _affordable(clock, n_pairs):
            sub = _SubModel(items, sc, best, np.arange(n_nodes))
            clock.spend(BUILD_WORK_PER_VARIABLE * sub.model.n_variables)
            # Keep a share for the polish, which only runs when the solve proves nothing.
            slice_ = clock.left() - (0.0 if settings.time_limit is None else FINAL_POLISH_SHARE * settings.time_limit)
            values, st1, st2, bound = _solve_sub(sub, clock, settings, max(slice_, 1e-3), notes)
            if values is not None:
                cand = sub.placement(values, best)
                value = items.evaluate(cand)
                if better(value, best_value):
                    best, best_value = cand, value
            proven = st1 == "OPTIMAL" and st2 == "OPTIMAL" and sc.exact
        if not proven and best_value is not None and settings.polish:
            # Every start too, not only the best: a warm start that spent the whole budget (Flux
            # draining a removing node) can be a dead end for the polish that the current
            # placement, with its budget intact, is not. Each gets at least MIN_POLISH_STEPS.
            for start in {w.tobytes(): w for w in [best, *starts]}.values():
                if items.evaluate(start) is None:
                    continue
                cand = polish(items, start, clock=clock, min_steps=MIN_POLISH_STEPS)
                value = items.evaluate(cand)
                if better(value, best_value):
                    best, best_value = cand, value
        if st1 == "INFEASIBLE" and best_value is None:
            return Outcome(best, None, "INFEASIBLE", None, 1, notes, stopped_by=clock.stopped_by)
        status = "OPTIMAL" if proven and best_value is not None else (
            "FEASIBLE" if best_value is not None else "NO_SOLUTION")
        if status == "OPTIMAL":
            clock.stopped_by = "done"  # proven: whatever the clocks did, the plan is the same
        true_bound = float(bound) / sc.scale if bound is not None and sc.exact else None
        return Outcome(best, best_value, status, _max_bound(true_bound, counted), 1, notes,
                       stopped_by=clock.stopped_by)
    # Large-neighbourhood search. The search walks by _walk_key (leximax of the node deviations
    # after the first three levels), which improves when any of several nodes tied at the maximum
    # improves; the plan returned is the best by the true objective.
    limit = settings.time_limit
    # The first polish gets a share of the limit (it does most of the work), the last one a
    # reserve; in deterministic mode both are counted in work units.
    first_share = math.inf if limit is None else POLISH_SHARE * limit
    reserve = 0.0 if limit is None else FINAL_POLISH_SHARE * limit
    large = n_items >= LEVEL_ITEMS
    # Polish every start, the best first (the current placement has a fresh budget, so its
    # polish may beat the polished warm start); one shared share of the limit.
    # Large instances level each start first (with all the time but the reserve: cheap greedy
    # steps spend the move budget); smaller ones polish each start as it is, then, while the share
    # lasts, each start levelled (a different local optimum, sometimes better).
    share = _Share(clock, first_share)
    distinct = list({start.tobytes(): start for start in [*starts[:1], best, *starts[1:]]}.values())
    runs = [(start, True) for start in distinct] if large else (
        [(start, False) for start in distinct] + [(start, True) for start in distinct])
    for start, levelled in runs:
        if share.exhausted():
            break
        if levelled:
            # At scale the levelling may use all the time but the final reserve, else the share.
            level_clock = share if not large else (
                clock if limit is None else _Share(clock, clock.own_left() - reserve))
            start = level(items, start, clock=level_clock)
        cand = polish(items, start, clock=share)
        value = items.evaluate(cand)
        if better(value, best_value):
            best, best_value = cand, value
    iterations, stall = 0, 0
    slice_ = max(0.05, (limit or 10.0) * SLICE_SHARE)
    here, here_key = best.copy(), _walk_key(items, best, best_value)
    while not clock.out_of_time(reserve) and stall < MAX_STALL:
        nodes = _neighbourhood(items, here, rng, settings.neighbourhood_variables)
        if not _affordable(clock, int(np.isin(here, nodes).sum()) * nodes.size):
            break  # two nodes' items already make too big a model: the polish alone goes on
        sub = _SubModel(items, sc, here, nodes, local=True)
        # Building a model takes real time that CP-SAT's work count does not see: charge it by
        # size (deterministically), so that a time limit in work units stays close to seconds.
        clock.spend(BUILD_WORK_PER_VARIABLE * sub.model.n_variables)
        values, _, _, _ = _solve_sub(sub, clock, settings, slice_, notes)
        iterations += 1
        improved = False
        if values is not None:
            cand = sub.placement(values, here)
            value = items.evaluate(cand)
            key = _walk_key(items, cand, value)
            if value is not None and _key_less(key, here_key):
                here, here_key, improved = cand, key, True
                if better(value, best_value):
                    best, best_value = cand.copy(), value
        stall = 0 if improved else stall + 1
    cand = polish(items, best, clock=clock)
    value = items.evaluate(cand)
    if better(value, best_value):
        best, best_value = cand, value
    return Outcome(best, best_value, "FEASIBLE", counted, iterations, notes, stopped_by=clock.stopped_by)


class _Share:
    """A share of a clock: charges the clock, and runs out after ``amount`` of its own limit."""

    def __init__(self, clock: _Clock, amount: float) -> None:
        self.clock = clock
        self.until = clock.own_left() - amount

    def exhausted(self) -> bool:
        return self.clock.out_of_time() or self.clock.own_left() <= self.until

    def spend(self, work: float) -> bool:
        return self.clock.spend(work) and self.clock.own_left() > self.until


def _counting_bound(items: Items) -> float:
    """The combinatorial lower bound of :mod:`solvers.balance_bound` on ``D`` (key-group level:
    items moving as units and other restrictions only raise the optimum)."""

    return load_distance_bound(items.loads, items.current, items.capacities, items.removing,
                               max_moves=items.max_moves, max_cost=items.max_cost,
                               state_sizes=items.state_sizes)


def _max_bound(a: float | None, b: float | None) -> float | None:
    known = [v for v in (a, b) if v is not None]
    return max(known) if known else None


MAX_STALL = 40
BUILD_WORK_PER_VARIABLE = 5e-5
# Wall seconds to build and hint a model, per item-node pair, measured on this machine under load
# (2 nodes x 20,000 key groups: ~5 s for 40,000 pairs); models below ALWAYS_BUILD_SECONDS by this
# estimate are always built (what the limits allowed before).
BUILD_SECONDS_PER_VARIABLE = 1e-4
ALWAYS_BUILD_SECONDS = 0.5


def _affordable(clock: _Clock, n_variables: int) -> bool:
    """Whether a model of ``n_variables`` item-node pairs may be built: building is not
    interruptible, so the wall-clock guard must decide before it starts. A model whose estimated
    build takes more than half the time left is skipped (and the limit that decided recorded);
    the polish goes on without it."""
    estimate = BUILD_SECONDS_PER_VARIABLE * n_variables
    if estimate <= ALWAYS_BUILD_SECONDS:
        return True
    own, wall = clock.own_left(), clock.wall_left()
    if estimate > wall / 2 and (wall < own or not clock.deterministic):
        clock.stopped_by = "wall clock" if clock.deterministic else "time limit"
        return False
    if estimate > own / 2:
        clock.stopped_by = "work budget" if clock.deterministic else "time limit"
        return False
    return True


def _walk_key(items: Items, where: np.ndarray, value: tuple | None):
    """The walk's order: the first three levels, then the leximax of the node deviations (every
    deviation sorted in decreasing order; it improves when any of several nodes tied at the
    maximum improves, where ``one_sided_deviations`` would not), then state moved and moves."""
    if value is None:
        return None
    return (value[:3], np.sort(items.deviations(where))[::-1], value[4:])


def _key_less(a, b) -> bool:
    """Lexicographic over :func:`_walk_key`, with a float tolerance."""
    if a is None:
        return False
    if b is None:
        return True
    for x, y in zip(a[0], b[0]):
        if not math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12):
            return x < y
    diff = a[1] - b[1]
    tol = 1e-9 * (1 + np.abs(b[1]))
    idx = np.flatnonzero(np.abs(diff) > tol)
    if idx.size:
        return bool(diff[idx[0]] < 0)
    for x, y in zip(a[2], b[2]):
        if not math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12):
            return x < y
    return False
