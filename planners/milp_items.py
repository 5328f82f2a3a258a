"""The placement problem of ALBIC's MILP (section 4.3.1) over *items*: its data, its objective
and the true (floating-point) evaluation every candidate plan is judged by.

An item is a set of key groups that moves as a unit (one key group for the plain MILP, a partition
of collocated key groups for ALBIC). ``x[t, i] = 1`` places item ``t`` on node ``i``; item ``t`` may
go to any active node it is allowed on, or stay where all its members are now if that is a removing
node (nothing ever moves onto a removing node: Lemma 4.1's conclusion, made a rule). Everything the
model needs is a coefficient per (item, node): its load, the moves and the migration cost it makes
there, and the load and members it leaves on a removing node.

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
constraints, and with node racks so is the rack rule (:mod:`albic.planners.racks`: one row per spread
value and rack, ``lo <= sum x <= hi``).

The integer model built from these data is :mod:`albic.planners.milp_formulation`; the search that
solves it, :mod:`albic.planners.milp_search`.

Example
-------
>>> import numpy as np
>>> items = Items([np.array([0]), np.array([1])], loads=np.array([3.0, 1.0]),
...               state_sizes=np.array([1.0, 1.0]), current=np.array([0, 0]),
...               capacities=np.array([1.0, 1.0]), removing=np.array([False, False]))
>>> named_levels(items.evaluate(np.array([0, 0])))["max_deviation"], items.evaluate(np.array([0, 1])).max_deviation
(2.0, 1.0)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import scipy.sparse

from albic.core import metrics
from albic.core.checks import within_budget
from albic.planners.racks import RackRule

__all__ = [
    "Items",
    "Outcome",
    "PairTable",
    "Value",
    "WitnessValue",
    "named_levels",
    "better",
    "OBJECTIVE_LEVELS",
    "REMOTE_LEVELS",
]


class Value(NamedTuple):
    """A placement's objective, level by level, most important first (see the module docstring),
    then the number of moves (the tie-break inside ``state_moved``); compared as a tuple."""

    max_deviation: float
    load_on_removing: float
    key_groups_on_removing: float
    one_sided_deviations: float
    state_moved: float
    moves: float


class WitnessValue(NamedTuple):
    """The objective of ALBIC's balance witness (``Items(traffic=...)``): :class:`Value` with the
    remote traffic after the levels of balance (see :data:`REMOTE_LEVELS`)."""

    max_deviation: float
    load_on_removing: float
    key_groups_on_removing: float
    one_sided_deviations: float
    remote_traffic: float
    state_moved: float
    moves: float


#: The objective's levels, most important first (see the module docstring).
OBJECTIVE_LEVELS = Value._fields[:-1]

#: The levels of ALBIC's balance witness (``Items(traffic=...)``): the plain MILP's, with the remote
#: traffic breaking ties of balance (``d``, the removing nodes' levels and the one-sided
#: deviations) before the state moved -- among the placements as balanced as the plain MILP's
#: best, the one that keeps the most traffic node-local (the ALBIC paper's order: balance first,
#: then collocation with what balance leaves). The one-sided deviations are balance too: with
#: ``d`` fixed they pull the nodes on the other side towards the mean, and the next period's shift
#: of load starts from there. Traded for traffic they keep ``d`` and loosen the rest: measured
#: over the flights weeks of ``python -m benchmarks albic`` at 5 and 20 moves, the periods after
#: such a witness were less balanced than milp's (README, "Benchmarks").
REMOTE_LEVELS = WitnessValue._fields[:-1]


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
            result = max(
                result, self[np.arange(start, min(start + 4096, self.shape[0]))].max(initial=initial)
            )
        return result


@dataclass
class Items:
    """The placement problem over items; ``where`` arrays give the node index of each item.

    ``allowed`` is None (every node), a dense ``bool[item, node]`` array, or ``{item: bool[node]}``
    for the few items restricted (e.g. ALBIC's pinned unit). The per-(item, node) coefficients are
    :class:`PairTable`: an item's coefficients differ from node to node only where its members
    sit now, so they are computed from per-item data (and dense rows for the rare items whose
    members sit on several nodes), which keeps 1,000 nodes x 100,000 key groups in memory."""

    members: list[np.ndarray]  # key-group positions of each item
    loads: np.ndarray  # per key group
    state_sizes: np.ndarray  # per key group
    current: np.ndarray  # node index of each key group now
    capacities: np.ndarray  # per node
    removing: np.ndarray  # per node
    allowed: Any = None  # see the class docstring; a PairTable after __post_init__
    max_moves: int | None = None
    max_cost: float | None = None
    resources: np.ndarray | None = None  # float[key group, resource]
    resource_caps: np.ndarray | None = None  # float[node, resource], active nodes only
    resource_caps_names: list[str] = field(default_factory=list)  # the resources' names, in order
    spread: np.ndarray | None = None  # int[key group]: spread code, -1 for none (None: no spread)
    racks: np.ndarray | None = None  # int[node]: rack code (None: no racks); planners/racks.py
    # Symmetric traffic between key groups (scipy CSR, each direction's rate on both sides; None:
    # no collocation level). Singleton items only: ALBIC's balance witness (see REMOTE_LEVELS).
    traffic: Any = None
    # derived
    item_load: np.ndarray = field(init=False)
    moves_at: PairTable = field(init=False)  # int[item, node]: members not home at node
    cost_at: PairTable = field(init=False)  # float[item, node]
    left_at: PairTable = field(init=False)  # int[item, node]: members left on a removing node
    left_load_at: PairTable = field(init=False)  # float[item, node]: their load
    item_resources: np.ndarray | None = field(init=False, default=None)  # float[item, resource]
    item_codes: list[np.ndarray] | None = field(init=False, default=None)  # spread codes per item
    code_items: dict[int, list[int]] | None = field(init=False, default=None)  # items per code
    rack_rule: RackRule | None = field(init=False, default=None)  # with racks and spread values

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
        np.add.at(
            split_cost,
            (self._split_row[item_of][in_split], nodes[in_split]),
            self.state_sizes[flat][in_split],
        )
        np.add.at(
            split_load, (self._split_row[item_of][in_split], nodes[in_split]), self.loads[flat][in_split]
        )
        self._split_count, self._split_cost, self._split_load = split_count, split_cost, split_load
        shape = (n_items, n_nodes)
        self.moves_at = PairTable(lambda t, i: self.item_size[t] - self._home_count(t, i), shape)
        self.cost_at = PairTable(
            lambda t, i: self.item_cost[t] - self._home_part(t, i, self.item_cost, self._split_cost), shape
        )
        self.left_at = PairTable(lambda t, i: self._home_count(t, i) * self.removing[i], shape)
        self.left_load_at = PairTable(
            lambda t, i: self._home_part(t, i, self.item_load, self._split_load) * self.removing[i], shape
        )
        if self.traffic is not None:
            self._init_traffic(sizes)
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
            lambda t, i: base(t, i) & ~self._blocked[t] & ~(self.removing[i] & (self.moves_at[t, i] > 0)),
            shape,
        )
        if self.resources is not None:
            self.item_resources = np.zeros((n_items, self.resources.shape[1]))
            np.add.at(self.item_resources, item_of, self.resources[flat])
        if self.spread is not None and (self.spread >= 0).any():
            self._init_spread()
            if self.racks is not None:  # the rack rule: one check here, the rows in SubModel
                self.rack_rule = RackRule(self.spread, self.racks, self.removing)
                self.kg_item = np.empty(self.loads.size, dtype=np.int64)
                self.kg_item[flat] = item_of

    def _init_traffic(self, sizes: np.ndarray) -> None:
        """``remote_at[t, i]``: the traffic of key group ``t`` that is remote when it sits on node
        ``i`` and its partners where they are now (the MILP's linear stand-in for the remote
        traffic a plan leaves; :meth:`evaluate` counts the true one)."""
        if np.any(sizes != 1):
            raise ValueError("the remote-traffic level is for singleton items (one key group each)")
        n_kg, n_nodes = self.loads.size, self.capacities.size
        onehot = scipy.sparse.csr_matrix(
            (np.ones(n_kg), (np.arange(n_kg), self.current)), shape=(n_kg, n_nodes)
        )
        self.traffic = scipy.sparse.csr_matrix(self.traffic)
        by_node = (self.traffic @ onehot).tocsr()
        total = np.asarray(self.traffic.sum(axis=1)).ravel()
        self.remote_at = PairTable(
            lambda t, i: total[t] - np.asarray(by_node[t.ravel(), i.ravel()]).reshape(np.shape(t)),
            (n_kg, n_nodes),
        )

    def remote_traffic(self, where: np.ndarray) -> float:
        """The traffic between key groups on different nodes under ``where`` (singleton items)."""
        coo = self.traffic.tocoo()
        return 0.5 * float(coo.data[where[coo.row] != where[coo.col]].sum())

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
        return self.racks_ok(where, changes)

    def racks_ok(self, where: np.ndarray, changes: list[tuple[int, int]] = ()) -> bool:
        """Whether ``where`` with ``changes`` keeps the rack rule (for the codes the changes touch;
        every code when there are none)."""
        if self.rack_rule is None:
            return True
        new = where.copy()
        for t, target in changes:
            new[t] = target
        codes = np.unique(np.concatenate([self.item_codes[t] for t, _ in changes])) if changes else None
        return self.rack_rule.holds(new[self.kg_item], codes)

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
        return metrics.mean_utilisation_of(self.loads, self.capacities, self.active)

    def deviations(self, where: np.ndarray) -> np.ndarray:
        """Per node, how far it pushes ``d``: ``|u_i - mean|`` on active nodes (constraints (3) and
        (4)), ``max(u_i - mean, 0)`` on removing ones (constraint (3) only)."""
        dev = self.node_loads(where) / self.capacities - self.mean()
        return np.where(self.removing, np.maximum(dev, 0.0), np.abs(dev))

    def evaluate(self, where: np.ndarray) -> Value | WitnessValue | None:
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
            if np.any(over > metrics.REL_NOISE * (1 + np.abs(self.resource_caps[self.active]))):
                return None
        if self.item_codes is not None:
            items, codes = self.spread_pairs()
            keys = codes * self.capacities.size + where[items]
            if np.unique(keys).size < keys.size:
                return None
            if not self.racks_ok(where):
                return None
        dev = self.node_loads(where) / self.capacities - self.mean()
        up = float(dev.max())  # constraint (3): every node
        low = float((-dev[self.active]).max())  # constraint (4): active nodes
        left_load = float(math.fsum(self.left_load_at[idx, where].tolist()))
        left = float(self.left_at[idx, where].sum())
        if self.traffic is not None:
            return WitnessValue(
                max(up, low), left_load, left, up + low, self.remote_traffic(where), cost, float(moves)
            )
        return Value(max(up, low), left_load, left, up + low, cost, float(moves))


@dataclass
class Outcome:
    where: np.ndarray
    value: Value | WitnessValue | None
    status: str  # OPTIMAL, FEASIBLE, INFEASIBLE, NO_SOLUTION
    bound: float | None  # proven lower bound on D (true units), when known
    iterations: int
    solver_notes: list[str]
    reason: dict | None = None
    stopped_by: str = "done"  # "done", "work budget", "time limit" or "wall clock" (planners/work.py)
    work: float = 0.0  # the work units the search charged (deterministic mode)


def named_levels(value: Value | WitnessValue) -> dict[str, float]:
    """``{level name: value}`` of an objective value (the move-count tie-break left out)."""
    return {name: float(v) for name, v in value._asdict().items() if name != "moves"}


def better(a: tuple | None, b: tuple | None) -> bool:
    """Whether objective ``a`` is lexicographically better than ``b`` (None = infeasible)."""
    if a is None:
        return False
    if b is None:
        return True
    return metrics.lexicographically_less(a, b)
