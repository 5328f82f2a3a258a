"""Collocation steps of ALBIC's Algorithm 2 (albic.txt section 4.3.2): scores (step 1), merging
collocated pairs into sets and splitting them into partitions (step 2), and the pair to collocate
next (step 3). Used by :class:`albic.planners.albic_milp.AlbicPlanner`.

Example: two 1-to-1 pairs, one already collocated
-------------------------------------------------
>>> from albic.core.model import Node, KeyGroup, Snapshot, Traffic
>>> kgs = [KeyGroup(k, k[0], 1.0) for k in ("a1", "a2", "b1", "b2")]
>>> snap = Snapshot([Node("n1"), Node("n2")], kgs,
...                 {"a1": "n1", "b1": "n1", "a2": "n1", "b2": "n2"},
...                 [Traffic("a1", "b1", 10.0), Traffic("a2", "b2", 10.0)])
>>> collocated, candidates = collocation_pairs(snap, score_factor=1.5)
>>> [(int(k), int(j)) for k, j, _ in collocated], [(int(k), int(j)) for k, j, _ in candidates]
([(0, 2)], [(1, 3)])
"""

from __future__ import annotations

import math

import numpy as np

from albic.core import metrics
from albic.core.checks import within_budget
from albic.core.model import Snapshot
from albic.planners.work import SWAP_WORK_PER_CANDIDATE, SWAP_WORK_PER_PARTNER, Budget
from albic.solvers.partition import balanced_partition

__all__ = [
    "collocation_pairs",
    "max_traffic_pair",
    "heaviest_pairs",
    "merge_pairs",
    "split_sets",
    "move_gain",
    "undo_separations",
    "collocating_swaps",
    "largest_deviation",
]


def _downstream_sizes(snapshot: Snapshot) -> np.ndarray:
    """Per key group: the number of key groups of its operator's downstream operators."""
    arrays = snapshot.arrays()
    n_ops = len(arrays.operator_names)
    code = {name: i for i, name in enumerate(arrays.operator_names)}
    size = np.bincount(arrays.operator_of, minlength=n_ops)
    down: list[set[int]] = [set() for _ in range(n_ops)]
    listed = {op.name: op.downstream for op in snapshot.operators}
    coo = arrays.traffic.tocoo()
    for op, i in code.items():
        if op in listed:
            down[i] = {code[d] for d in listed[op] if d in code}
    for s, d in zip(arrays.operator_of[coo.row].tolist(), arrays.operator_of[coo.col].tolist()):
        if arrays.operator_names[s] not in listed:
            down[s].add(d)
    per_op = np.array([sum(int(size[d]) for d in ds) for ds in down])
    return per_op[arrays.operator_of] if n_ops else np.zeros(0)


def collocation_pairs(snapshot: Snapshot, score_factor: float):
    """Step 1: the pairs ``(k, j, rate)`` with ``out(k, j) > avg(k) * sF``, split into those already
    collocated (colGrps) and those not (toBeColGrps), as key-group positions."""
    arrays = snapshot.arrays()
    coo = arrays.traffic.tocoo()
    out = np.asarray(arrays.traffic.sum(axis=1)).ravel()
    n_down = _downstream_sizes(snapshot)
    avg = np.divide(out, n_down, out=np.zeros_like(out), where=n_down > 0)
    keep = (coo.data > avg[coo.row] * score_factor) & (coo.row != coo.col)
    rows, cols, rates = coo.row[keep], coo.col[keep], coo.data[keep]
    same = arrays.current[rows] == arrays.current[cols]
    collocated = list(zip(rows[same].tolist(), cols[same].tolist(), rates[same].tolist()))
    candidates = list(zip(rows[~same].tolist(), cols[~same].tolist(), rates[~same].tolist()))
    return collocated, candidates


def max_traffic_pair(snapshot: Snapshot, candidates, rng: np.random.Generator):
    """Step 3's pair: a random one among the candidates of maximum rate (None if there are none)."""
    if not candidates:
        return None
    top = max(r for _, _, r in candidates)
    best = sorted((k, j, r) for k, j, r in candidates if math.isclose(r, top, rel_tol=1e-12))
    return best[int(rng.integers(len(best)))]


def heaviest_pairs(candidates, rng: np.random.Generator, count: int) -> list:
    """Step 3's pairs in the order they are tried: decreasing rate, ties in a seeded random order.
    The first is :func:`max_traffic_pair`'s pick; a few more than ``count`` are returned, since a
    pair may be skipped (already joined this call, or over the budget)."""
    if not candidates:
        return []
    first = max_traffic_pair(None, candidates, rng)
    rest = list(candidates)
    rest.remove(first)  # the pick is a copy (max_traffic_pair sorts), so by value, once
    keys = rng.random(len(rest))
    # numpy's lexsort (last key first): rate descending, then the random key; the same order as
    # sorting by (-rate, key), in milliseconds at hundreds of thousands of pairs.
    order = np.lexsort((keys, -np.array([c[2] for c in rest], dtype=float)))
    return [first] + [rest[i] for i in order[: max(0, 4 * count - 1)].tolist()]


def merge_pairs(n: int, pairs) -> list[np.ndarray]:
    """Union-find: the sets (of size >= 2) that the pairs connect, sorted by smallest member.

    Hand-written rather than networkx's, because networkx is slower here: ``python -m benchmarks
    unionfind`` (the same pairs, the same sets, least CPU time of 7 runs; pairs between random key
    groups as step 1 makes them; two runs, 2 cores under load 5-9) measured

    ==========  =======  ============  ======================  ========================
    key groups  pairs    this          networkx.UnionFind      nx.connected_components
    ==========  =======  ============  ======================  ========================
    400         100      0.11 ms       0.23 ms (2.1-2.2 x)     0.21 ms
    2,400       600      0.64 ms       1.4 ms (2.1-2.2 x)      1.4 ms
    20,000      5,000    5.9-12 ms     13-14 ms (1.1-2.2 x)    14-18 ms
    100,000     20,000   34-55 ms      57-77 ms (1.4-1.7 x)    105-143 ms
    100,000     100,000  89-188 ms     209-326 ms (1.7-2.3 x)  452-592 ms
    ==========  =======  ============  ======================  ========================

    The paper's sizes are the first rows, and ALBIC calls this once per attempt, inside its time
    limit. (scipy's ``csgraph.connected_components``, in the same table, takes 0.6-1.0 x this time
    from 20,000 key groups on and 1.1-2.4 x below.)
    """
    parent = list(range(n))

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for k, j, *_ in pairs:
        ra, rb = find(k), find(j)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    groups: dict[int, list[int]] = {}
    for v in sorted({v for p in pairs for v in p[:2]}):
        groups.setdefault(find(v), []).append(v)
    return [np.array(g) for g in sorted(groups.values()) if len(g) > 1]


def split_sets(
    snapshot: Snapshot, collocated, max_load: float, max_moves: int | None, max_cost: float | None, seed: int
) -> list[np.ndarray]:
    """Step 2: merge the collocated pairs into sets and split each into partitions that respect
    ``max_load`` and the migration budget (see AlbicPlanner's docstring)."""
    arrays = snapshot.arrays()
    loads, costs = arrays.loads, arrays.state_sizes
    sym = arrays.traffic + arrays.traffic.T
    out: list[np.ndarray] = []
    stack = merge_pairs(len(arrays.key_group_ids), collocated)
    depth = 0
    while stack and depth < 10_000:
        depth += 1
        s = stack.pop()
        if s.size < 2:
            continue
        load, cost = float(loads[s].sum()), float(costs[s].sum())
        p1 = 1
        if max_cost is not None:
            # min() first: a budget of 5e-324 makes the ratio inf, which ceil() cannot take
            p1 = max(p1, s.size if max_cost <= 0 else math.ceil(min(cost / max_cost, s.size)))
        if max_moves is not None:
            p1 = max(p1, s.size if max_moves <= 0 else math.ceil(s.size / max_moves))
        p2 = s.size if max_load <= 0 else math.ceil(min(load / max_load, s.size))
        n_parts = min(max(p1, p2, 1), s.size)
        if n_parts == 1:
            out.append(s)
            continue
        by_cost = max_cost is not None and max_cost > 0 and max_load > 0 and cost / max_cost > load / max_load
        weights = costs[s] if by_cost else loads[s]
        sub = sym[s][:, s]
        labels = balanced_partition(sub, weights, n_parts, seed=seed)
        pieces = [s[labels == p] for p in range(n_parts) if np.any(labels == p)]
        if len(pieces) == 1:  # METIS could not split it: halve by position
            pieces = [s[: s.size // 2], s[s.size // 2 :]]
        stack.extend(pieces)  # re-checked: split again while a piece breaks a limit
    return sorted((p for p in out if p.size > 1), key=lambda p: int(p.min()))


def move_gain(sym, where: np.ndarray, unit: np.ndarray, target: int) -> float:
    """The traffic that becomes node-local minus the traffic that stops being local when the key
    groups ``unit`` move together to node ``target`` (everything else stays at ``where``);
    ``sym`` is the symmetric traffic matrix (CSR, ``traffic + traffic.T``).

    >>> import scipy.sparse as sp
    >>> sym = sp.csr_matrix(np.array([[0, 5, 1], [5, 0, 0], [1, 0, 0]], dtype=float))
    >>> move_gain(sym, np.array([0, 1, 0]), np.array([0]), 1)  # 5 becomes local, 1 stops being
    4.0
    """
    # Straight from the CSR arrays: scipy's row slicing costs ~0.5 ms a call, and step 3 ranks
    # every candidate pair each call.
    starts, ends = sym.indptr[unit], sym.indptr[unit + 1]
    picked = np.concatenate(
        [np.arange(a, b) for a, b in zip(starts.tolist(), ends.tolist())] or [np.zeros(0, int)]
    )
    src = np.repeat(unit, ends - starts)
    nbr, rate = sym.indices[picked], sym.data[picked]
    inside = np.isin(nbr, unit)
    before = where[src] == where[nbr]
    after = inside | (where[nbr] == target)
    # An edge inside the unit appears in two of its rows: count it once.
    weight = np.where(inside, 0.5, 1.0)
    return float((rate * weight * (after.astype(float) - before)).sum())


def undo_separations(arrays, sym, node_of: np.ndarray, max_ld: float) -> np.ndarray:
    """``node_of`` with moves undone that separated communicating key groups, most traffic first,
    as long as each undo makes more traffic node-local than it separates, keeps the active nodes'
    load distance (absolute, in utilisation) within ``max_ld``, never returns a key group to a
    removing node and keeps replicas (``spread``) apart.

    Why: the pure MILP, ALBIC's last attempt, ignores collocation, and moves a key group away from
    its partner for any gain in balance, however small, undoing what earlier calls collocated.

    >>> import scipy.sparse as sp
    >>> from albic.core.model import KeyGroup, Node, Snapshot, Traffic
    >>> snap = Snapshot([Node("a"), Node("b")], [KeyGroup(k, "op", 1.0) for k in "xyz"],
    ...                 {"x": "a", "y": "a", "z": "b"}, [Traffic("x", "y", 5.0)])
    >>> arrays = snap.arrays()
    >>> sym = (arrays.traffic + arrays.traffic.T).tocsr()
    >>> undo_separations(arrays, sym, np.array([1, 0, 1]), max_ld=0.6).tolist()  # x back to a
    [0, 0, 1]
    >>> undo_separations(arrays, sym, np.array([1, 0, 1]), max_ld=0.4).tolist()  # too unbalanced
    [1, 0, 1]
    """
    node_of = np.asarray(node_of).copy()
    current = np.asarray(arrays.current)
    caps, active = arrays.capacities, arrays.active
    if not active.any():
        return node_of
    load = np.bincount(node_of, weights=arrays.loads, minlength=caps.size)
    mean = metrics.mean_utilisation_of(arrays.loads, caps, active)
    moved = np.flatnonzero((node_of != current) & ~arrays.removing[current])
    gains = [(move_gain(sym, node_of, np.array([k]), int(current[k])), int(k)) for k in moved.tolist()]
    spread = arrays.spread
    for gain, k in sorted(gains, key=lambda g: (-g[0], g[1])):
        if not gain > 0:
            break
        home, there = int(current[k]), int(node_of[k])
        if move_gain(sym, node_of, np.array([k]), home) <= 0:
            continue  # its partners moved on meanwhile
        if spread[k] >= 0 and np.any((spread == spread[k]) & (node_of == home)):
            continue
        load[there] -= arrays.loads[k]
        load[home] += arrays.loads[k]
        if float(np.abs(load[active] / caps[active] - mean).max()) <= max_ld:
            node_of[k] = home
        else:
            load[there] += arrays.loads[k]
            load[home] -= arrays.loads[k]
    return node_of


def _deviation(arrays, nodes, load, mean: float):
    """How far ``load`` on ``nodes`` (arrays allowed) pushes the MILP's ``d``: ``|u - mean|`` on
    active nodes, ``max(u - mean, 0)`` on removing ones."""
    dev = load / arrays.capacities[nodes] - mean
    return np.where(arrays.removing[nodes], np.maximum(dev, 0.0), np.abs(dev))


def largest_deviation(arrays, node_of: np.ndarray) -> float:
    """The MILP's ``d`` of the placement ``node_of`` (absolute, in utilisation).

    >>> from albic.core.model import KeyGroup, Node, Snapshot
    >>> snap = Snapshot([Node("a"), Node("b")], [KeyGroup(k, "op", 1.0) for k in "xyz"],
    ...                 {"x": "a", "y": "a", "z": "b"})
    >>> largest_deviation(snap.arrays(), np.array([0, 0, 1]))  # 2 and 1 around a mean of 1.5
    0.5
    """
    n_nodes = arrays.capacities.size
    mean = metrics.mean_utilisation_of(arrays.loads, arrays.capacities, arrays.active)
    load = np.bincount(node_of, weights=arrays.loads, minlength=n_nodes)
    return float(_deviation(arrays, np.arange(n_nodes), load, mean).max(initial=0.0))


def collocating_swaps(
    arrays,
    sym,
    node_of: np.ndarray,
    movable: np.ndarray,
    max_deviation: float,
    moves_left: float,
    cost_left: float | None,
    clock: Budget | None = None,
) -> np.ndarray:
    """``node_of`` with moves added that make traffic node-local, spending at most ``moves_left``
    moves and ``cost_left`` state (None: no cost budget) counted against ``arrays.current``, and
    keeping every node's deviation from the mean utilisation within ``max_deviation`` (absolute;
    both ways on active nodes, above the mean only on removing ones, as the MILP's ``d``).

    Greedy, best gain first: a key group of ``movable`` goes to a node holding more of its
    partners' traffic than its own node does, alone when the loads allow it, else swapped with
    the key group there (also of ``movable``) that leaves the most traffic local, as long as the
    pair makes more traffic local than it separates and the loads stay within bounds. Gains are
    re-checked when their turn comes (earlier moves change them), and the candidates recomputed
    while a round takes any. Nothing moves onto a removing node, key groups with a ``spread``
    value stay put, and the search stops when ``clock`` (a :class:`albic.planners.work.Budget`, charged
    for every candidate examined and every swap partner scored) says so.

    Why: ALBIC's MILP balances load and ignores traffic, and step 3 pins one pair per call; the
    traffic outside the scored pairs (a key group sending a little to several others) is then
    collocated only by chance. A swap of two key groups of about the same load barely changes
    the balance, and makes such traffic local a move or two at a time.

    >>> import scipy.sparse as sp
    >>> from albic.core.model import KeyGroup, Node, Snapshot, Traffic
    >>> snap = Snapshot([Node("a"), Node("b")], [KeyGroup(k, "op", 1.0) for k in "wxyz"],
    ...                 {"w": "a", "x": "a", "y": "b", "z": "b"}, [Traffic("w", "y", 5.0)])
    >>> arrays = snap.arrays()
    >>> sym = (arrays.traffic + arrays.traffic.T).tocsr()
    >>> where = np.asarray(arrays.current)
    >>> collocating_swaps(arrays, sym, where, np.ones(4, bool), 0.0, 2, None).tolist()  # w <-> z
    [1, 0, 1, 0]
    >>> collocating_swaps(arrays, sym, where, np.ones(4, bool), 0.0, 1, None).tolist()  # no room
    [0, 0, 1, 1]
    """
    if not np.asarray(arrays.active).any() or sym.nnz == 0:
        return np.asarray(node_of).copy()
    search = _SwapSearch(arrays, sym, node_of, movable, max_deviation, moves_left, cost_left, clock)
    progressed = True
    # No stop at an empty budget: a key group already moved can move on, or a swap send one home.
    while progressed and search.go_on(0.0):
        progressed = False
        for k, to in search.candidates():
            if not search.go_on(SWAP_WORK_PER_CANDIDATE):
                break
            progressed |= search.collocate(k, to)
    return search.node_of


class _SwapSearch:
    """The state of :func:`collocating_swaps`: where every key group is, each node's load and movable
    key groups, and the budget left."""

    def __init__(
        self, arrays, sym, node_of, movable, max_deviation, moves_left, cost_left, clock: Budget | None
    ) -> None:
        self.arrays, self.sym, self.clock = arrays, sym, clock
        self.node_of = np.asarray(node_of).copy()
        self.current = np.asarray(arrays.current)
        self.removing = np.asarray(arrays.removing)
        self.moves_left, self.cost_left = moves_left, cost_left
        n_nodes = arrays.capacities.size
        self.mean = metrics.mean_utilisation_of(arrays.loads, arrays.capacities, ~self.removing)
        self.limit = max_deviation + 1e-9 * max(self.mean, 1.0)
        self.node_load = np.bincount(self.node_of, weights=arrays.loads, minlength=n_nodes)
        movable = (
            np.asarray(movable, dtype=bool) & ~self.removing[self.node_of] & (np.asarray(arrays.spread) < 0)
        )
        self.on_node: list[set[int]] = [set() for _ in range(n_nodes)]
        for k in np.flatnonzero(movable).tolist():
            self.on_node[int(self.node_of[k])].add(k)
        coo = sym.tocoo()
        keep = movable[coo.row]
        self.edge_rows, self.edge_cols, self.edge_rates = coo.row[keep], coo.col[keep], coo.data[keep]

    def go_on(self, work: float) -> bool:
        return self.clock is None or self.clock.spend(work)

    def candidates(self):
        """``(k, node)`` with node != k's, by decreasing gain (partner traffic there less at home)."""
        n_nodes, node_of = self.arrays.capacities.size, self.node_of
        key, inverse = np.unique(
            self.edge_rows.astype(np.int64) * n_nodes + node_of[self.edge_cols], return_inverse=True
        )
        total = np.bincount(inverse, weights=self.edge_rates)
        r, d = key // n_nodes, key % n_nodes
        home = d == node_of[r]
        gain = total - np.bincount(r[home], weights=total[home], minlength=node_of.size)[r]
        ok = ~home & ~self.removing[d] & (gain > 1e-12)
        order = np.lexsort((d[ok], r[ok], -gain[ok]))
        return zip(r[ok][order].tolist(), d[ok][order].tolist())

    def collocate(self, k: int, to: int) -> bool:
        """Move ``k`` to ``to`` alone, or swapped with the partner there that leaves the most
        traffic local, when that makes traffic local within the loads and the budget."""
        frm = int(self.node_of[k])
        gain = move_gain(self.sym, self.node_of, np.array([k]), to) if frm != to else 0.0
        if not gain > 1e-12:
            return False
        loads = self.arrays.loads
        m, c = self._spend(k, to)
        if (
            self._affordable(m, c)
            and self._deviation(frm, self.node_load[frm] - loads[k]) <= self.limit
            and self._deviation(to, self.node_load[to] + loads[k]) <= self.limit
        ):
            self._relocate(k, to)
            return True
        partner = self._best_partner(k, frm, to, gain, m, c)
        if partner < 0:
            return False
        self._relocate(k, to)
        self._relocate(partner, frm)
        return True

    def _best_partner(self, k: int, frm: int, to: int, gain: float, m, c) -> int:
        """The key group on ``to`` that, going to ``frm``, leaves the most traffic local with ``k``
        on ``to``, within the loads and the budget; -1 for none."""
        loads = self.arrays.loads
        others = np.array(sorted(self.on_node[to]), dtype=np.int64)
        if others.size == 0:
            return -1
        fits = (self._deviation(frm, self.node_load[frm] - loads[k] + loads[others]) <= self.limit) & (
            self._deviation(to, self.node_load[to] + loads[k] - loads[others]) <= self.limit
        )
        mj, cj = self._spend(others, np.full(others.size, frm))
        fits &= self._affordable(m + mj, c + cj)
        self.go_on(SWAP_WORK_PER_PARTNER * int(fits.sum()))
        best, best_total = -1, 1e-12
        self.node_of[k] = to  # a partner's gain with k already there
        for j in others[fits].tolist():
            total = gain + move_gain(self.sym, self.node_of, np.array([j]), frm)
            if total > best_total:
                best, best_total = j, total
        self.node_of[k] = frm
        return best

    def _deviation(self, n, load):
        return _deviation(self.arrays, n, load, self.mean)

    def _spend(self, k, to):
        """Moves and state that relocating ``k`` (arrays allowed) adds to the plan (-1: home)."""
        delta = (to != self.current[k]).astype(int) - (self.node_of[k] != self.current[k]).astype(int)
        return delta, self.arrays.state_sizes[k] * delta

    def _affordable(self, moves, cost):
        return (moves <= self.moves_left) & within_budget(cost, self.cost_left)

    def _relocate(self, k: int, to: int) -> None:
        m, c = self._spend(k, to)
        self.moves_left -= int(m)
        if self.cost_left is not None:
            self.cost_left -= float(c)
        frm = int(self.node_of[k])
        self.node_load[frm] -= self.arrays.loads[k]
        self.node_load[to] += self.arrays.loads[k]
        self.on_node[frm].discard(k)
        self.on_node[to].add(k)
        self.node_of[k] = to
