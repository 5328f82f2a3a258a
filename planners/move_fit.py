"""An exact search for the load distance under a small move budget (albic's, not the paper's): the
moves that bring every node within ``T`` of the mean, for ``T`` lower and lower.

Under a tight budget the best plan is an exact fit: on flights hours at 5 moves, the optimum
brings each of 8 nodes to 61 or 62 events (the mean 61.75) with five chosen key groups out of the
152 with load. CP-SAT's linear relaxation sees nothing of that, and its one worker needed 0.7-2.3
work units (0.3-0.9 of its deterministic seconds) to find such plans; this search finds them in
milliseconds, because every node outside ``[mean - T, mean + T]`` must take part in a move:

- **Branching.** The node furthest outside the range: if it is over, some item at home there must
  leave it (to any node it may go to); if under, some item must come to it (from any other node).
  Items of the same home, load, allowed nodes and size are one class (which of them moves changes
  nothing at this level; the one with the least state is taken), so a branch is a class and a
  node. Branches are tried by how much they leave outside the range, least first.
- **Pruning.** The moves still needed are at least the items an over node must shed (its
  heaviest first) summed over the over nodes, and at least the items an under node must take
  (the heaviest that may come) summed over the under nodes; a branch whose bound exceeds the
  budget left is cut. A set of moves already searched in another order is not searched again.
- **Levels of T.** From the start's load distance less one unit, each plan found sets the next
  ``T`` one unit below its own load distance. A search that ends without a plan proves that no
  plan reaches ``T``: the load distance found (or the start's) is then optimal, and the model's
  ``d`` can start from it.

Only the first objective (the load distance) is decided here; the state moved and the later
levels are the solver's and the neighbourhood search's (the remote traffic of ALBIC's witness
too: it only breaks ties of balance). The search applies where nothing but the move budget binds
a placement (:func:`applies`: no state budget, no removing node, no resources or spread, no item
split over nodes); every step is charged to its budget (``FIT_WORK_PER_STEP`` per branch
considered, to a :class:`albic.planners.work.Budget`), so it is deterministic.

>>> import numpy as np
>>> from albic.planners.milp_items import Items
>>> from albic.planners.milp_formulation import scale_items
>>> items = Items([np.array([k]) for k in range(5)], np.array([5., 4., 3., 1., 1.]), np.ones(5),
...               np.array([0, 0, 0, 1, 2]), np.ones(3), np.zeros(3, dtype=bool), None, max_moves=2)
>>> fit = fit_moves(items, scale_items(items), None)
>>> fit.where.tolist(), fit.proven
([0, 1, 2, 1, 2], True)
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass

import numpy as np

from albic.planners.milp_formulation import Scaled
from albic.planners.milp_items import Items
from albic.planners.work import FIT_WORK_PER_STEP, Budget

__all__ = ["Fit", "applies", "fit_moves"]


@dataclass
class Fit:
    """What :func:`fit_moves` found: ``where``, the placement of least load distance found (None
    when nothing beat the start), ``d`` its load distance in the model's integer units
    (:class:`albic.planners.milp_formulation.Scaled`), and whether ``proven`` optimal at that
    level (of ``where``, or of the start when ``where`` is None)."""

    where: np.ndarray | None
    d: int
    proven: bool
    steps: int


def applies(items: Items) -> bool:
    """Whether the load distance is all the search needs to respect (module docstring)."""
    return (
        items.max_moves is not None
        and items.max_cost is None
        and items.resources is None
        and items.spread is None
        and not items.removing.any()
        and bool((items.home >= 0).all())
    )


def fit_moves(items: Items, sc: Scaled, budget: Budget | None) -> Fit:
    """The search of the module docstring, from the items' homes (where the move budget is whole).
    ``budget`` (None: no limit) is charged ``FIT_WORK_PER_STEP`` per branch; when it runs out, the
    best plan so far is returned unproven."""
    search = _Search(items, sc, budget)
    best_path, d, proven = None, search.distance_after([]), False
    target = d - 1
    while target >= 0:
        path = search.run(target)
        if path is None:
            proven = not search.stopped
            break
        best_path, d = path, search.distance_after(path)
        target = d - 1
    else:
        proven = True
    where = None if best_path is None else search.placement(best_path)
    return Fit(where, d, proven, search.steps)


class _OutOfWork(Exception):
    pass


class _Search:
    """One instance's classes and the depth-first search over their moves (module docstring)."""

    def __init__(self, items: Items, sc: Scaled, budget: Budget | None) -> None:
        n_nodes = items.capacities.size
        self.work_budget, self.budget, self.steps, self.stopped = budget, int(items.max_moves), 0, False
        start = items.home
        self.start, self.n_nodes = start.copy(), n_nodes
        idx = np.arange(len(items.members))
        dev = np.bincount(start, weights=sc.load[idx, start], minlength=n_nodes).astype(np.int64) - sc.mean
        self.dev0 = [int(v) for v in dev]
        # Items of some load on some node (rounding can leave a light item's load 0 on one node only).
        moving = idx[items.item_load > 0]
        rows = np.asarray(sc.load[moving]) if moving.size else np.zeros((0, n_nodes), np.int64)
        some = rows.any(axis=1)
        moving, rows = moving[some], rows[some]
        allowed = np.asarray(items.allowed[moving]) if moving.size else np.zeros((0, n_nodes), bool)
        key = np.column_stack([start[moving], items.item_size[moving], rows, allowed]).astype(np.int64)
        _, first, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
        inverse = inverse.reshape(-1)
        # Members of a class, least state first: the one that moves.
        order = np.lexsort((moving, items.item_cost[moving], inverse))
        bounds = np.searchsorted(inverse[order], np.arange(first.size + 1))
        self.members = [moving[order[s:e]].tolist() for s, e in zip(bounds[:-1], bounds[1:])]
        self.home = start[moving[first]].tolist()
        self.weight = rows[first].tolist()  # per class, its load on each node
        self.size = items.item_size[moving[first]].tolist()
        self.dests = [
            [c for c in range(n_nodes) if c != h and ok[c]]
            for h, ok in zip(self.home, allowed[first].tolist())
        ]
        self.at_home = [[] for _ in range(n_nodes)]  # per node, its classes, heaviest first
        for k, h in enumerate(self.home):
            self.at_home[h].append(k)
        for i, ks in enumerate(self.at_home):
            ks.sort(key=lambda k, i=i: -self.weight[k][i])
        self.heaviest_in = [
            max((w[i] for w, ds in zip(self.weight, self.dests) if i in ds), default=0)
            for i in range(n_nodes)
        ]

    def distance_after(self, path: list[tuple[int, int]]) -> int:
        dev = list(self.dev0)
        for k, c in path:
            dev[self.home[k]] -= self.weight[k][self.home[k]]
            dev[c] += self.weight[k][c]
        return max((abs(v) for v in dev), default=0)

    def placement(self, path: list[tuple[int, int]]) -> np.ndarray:
        where = self.start.copy()
        taken: dict[int, int] = {}
        for k, c in path:
            j = taken.get(k, 0)
            taken[k] = j + 1
            where[self.members[k][j]] = c
        return where

    def run(self, target: int) -> list[tuple[int, int]] | None:
        """Moves that bring every node within ``target`` of the mean, or None (``stopped`` says
        whether the work budget ended the search or no such moves exist)."""
        self.target, self.dev = target, list(self.dev0)
        self.left = [len(m) for m in self.members]
        self.path: list[tuple[int, int]] = []
        self.seen: set[bytes] = set()
        try:
            return list(self.path) if self._extend(self.budget) else None
        except _OutOfWork:
            self.stopped = True
            return None

    def _outside(self, v: int) -> int:
        t = self.target
        return v - t if v > t else (-t - v if v < -t else 0)

    def _extend(self, moves_left: int) -> bool:
        """Whether the moves on ``path`` extend to a plan within ``moves_left`` more (found: kept
        on ``path``)."""
        dev = self.dev
        worst, node = 0, -1
        for i, v in enumerate(dev):
            out = self._outside(v)
            if out > worst:
                worst, node = out, i
        if node < 0:
            return True
        if self._moves_needed() > moves_left:
            return False
        branches = self._branches(node, moves_left)
        self.steps += 1 + len(branches)
        if self.work_budget is not None and not self.work_budget.spend(
            FIT_WORK_PER_STEP * (1 + len(branches))
        ):
            raise _OutOfWork
        branches.sort()
        for _, k, c in branches:
            self.path.append((k, c))
            # The set of moves, in four bytes a move: the memory of a long search stays small.
            key = array("I", sorted(k * self.n_nodes + c for k, c in self.path)).tobytes()
            if key not in self.seen:
                self.seen.add(key)
                h, w = self.home[k], self.weight[k]
                dev[h] -= w[h]
                dev[c] += w[c]
                self.left[k] -= 1
                if self._extend(moves_left - self.size[k]):
                    return True
                dev[h] += w[h]
                dev[c] -= w[c]
                self.left[k] += 1
            self.path.pop()
        return False

    def _branches(self, node: int, moves_left: int) -> list[tuple[int, int, int]]:
        """(what stays outside the range after it, class, destination) of every move that brings
        ``node`` towards the range: out of it when over, into it when under."""
        dev, out = self.dev, self._outside
        branches = []
        if dev[node] > self.target:
            for k in self.at_home[node]:
                if self.left[k] and self.size[k] <= moves_left:
                    w = self.weight[k]
                    after = out(dev[node] - w[node])
                    branches.extend((after + out(dev[c] + w[c]) - out(dev[c]), k, c) for c in self.dests[k])
            return branches
        for k, (h, w) in enumerate(zip(self.home, self.weight)):
            if self.left[k] and h != node and self.size[k] <= moves_left and node in self.dests[k]:
                branches.append((out(dev[node] + w[node]) + out(dev[h] - w[h]) - out(dev[h]), k, node))
        return branches

    def _moves_needed(self) -> int:
        """A lower bound on the moves still needed: the items over nodes must shed (their heaviest
        first), or the items under nodes must take (the heaviest that may come), whichever is
        more (every item moves at least one key group)."""
        t, shed, take = self.target, 0, 0
        for i, v in enumerate(self.dev):
            if v > t:
                need = v - t
                for k in self.at_home[i]:
                    w = self.weight[k][i]
                    if self.left[k] and w > 0:
                        count = min(self.left[k], -(-need // w))
                        shed += count
                        need -= count * w
                        if need <= 0:
                            break
                if need > 0:
                    return self.budget + 1  # the node cannot shed enough
            elif v < -t:
                w = self.heaviest_in[i]
                if w <= 0:
                    return self.budget + 1
                take += -(-(-t - v) // w)
        return max(shed, take)
