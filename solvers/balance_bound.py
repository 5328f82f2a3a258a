"""A proven lower bound on the load distance a move budget can reach (combinatorial, no solver).

The question: key groups of loads ``w`` sit on nodes of capacities ``c`` (some of them removing);
at most ``max_moves`` key groups may move (and their state sizes may sum to at most
``max_cost``). What is the smallest load distance ``D = max_i |u_i - mean|`` over the active nodes
that *any* plan can reach? :func:`load_distance_bound` returns a number ``D_lb`` with the proof
that no plan within the budget reaches a load distance below it. It counts *move endpoints*:

- Every move leaves one node and enters another, so it touches at most two active nodes, and it
  is one departure and one arrival. With ``M`` moves there are at most ``M`` departures, ``M``
  arrivals and ``2 M`` endpoints on active nodes (``M`` is ``max_moves``, lowered to the largest
  number of key groups whose smallest state sizes fit ``max_cost``).
- For a target ``D``, an active node ``i`` with deviation ``dev_i = u_i - mean > D`` must lose,
  net, between ``(dev_i - D) c_i`` and ``(dev_i + D) c_i`` of load. Arrivals only add load, so it
  needs at least ``k_i`` departures, the fewest of *its* key groups whose largest loads reach
  ``(dev_i - D) c_i``; and if no single key group of it has a load inside that window, one move
  cannot do it: at least two endpoints. A node with ``dev_i < -D`` likewise needs at least the
  fewest arrivals of the largest loads anywhere that reach ``(-dev_i - D) c_i``, and two
  endpoints unless some key group's load lies in its window.
- A target ``D`` is reachable only if the departures, the arrivals and the endpoints these needs
  add up to fit ``M``, ``M`` and ``2 M``. The needs only fall as ``D`` grows, so a bisection
  finds the largest ``D`` proven unreachable; that is the bound.

It ignores every other rule (resource caps, allowed nodes, units that move together, the spread
rule), which can only raise the true optimum, so it is a bound for all of those models too.
Float sums are rounded in the bound's favour (windows widened, thresholds lowered by ``1e-9``
relative): the bound may be slightly weaker than the exact argument, never above it.

Example: two nodes of loads 6 and 2 (mean 4), key groups of load 1; one move reaches 5 / 3
(``D = 1``), two moves reach 4 / 4. With one move no plan is better than 1:

>>> import numpy as np
>>> w = np.ones(8); on = np.array([0] * 6 + [1] * 2)
>>> round(load_distance_bound(w, on, np.ones(2), np.zeros(2, bool), max_moves=1), 4)
1.0
>>> load_distance_bound(w, on, np.ones(2), np.zeros(2, bool), max_moves=2)
0.0
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["load_distance_bound", "effective_moves", "key_group_floor"]

_REL = 1e-9


def effective_moves(state_sizes: np.ndarray, max_moves: int | None, max_cost: float | None) -> float:
    """The most key groups that can move: ``max_moves``, and the most whose smallest state sizes
    fit ``max_cost`` (``inf`` when neither limits)."""
    moves = math.inf if max_moves is None else float(max_moves)
    if max_cost is not None:
        sizes = np.sort(np.asarray(state_sizes, dtype=float))
        fit = int(np.searchsorted(np.cumsum(sizes), max_cost * (1 + _REL) + 1e-300, side="right"))
        moves = min(moves, float(fit))
    return moves


def load_distance_bound(
    loads: np.ndarray,
    current: np.ndarray,
    capacities: np.ndarray,
    removing: np.ndarray,
    *,
    max_moves: int | None = None,
    max_cost: float | None = None,
    state_sizes: np.ndarray | None = None,
    iterations: int = 24,
) -> float:
    """A proven lower bound on the load distance reachable within the budgets (module docstring).

    ``loads[k]`` and ``current[k]`` (node index) per key group, ``capacities`` and ``removing`` per
    node; ``state_sizes`` is needed only with ``max_cost``.
    """
    w = np.asarray(loads, dtype=float)
    cur = np.asarray(current, dtype=np.int64)
    cap = np.asarray(capacities, dtype=float)
    active = ~np.asarray(removing, dtype=bool)
    n_nodes = cap.size
    if w.size == 0 or not active.any() or cap[active].sum() <= 0:
        return 0.0
    moves = effective_moves(
        np.zeros(w.size) if state_sizes is None else state_sizes,
        max_moves,
        max_cost if state_sizes is not None else None,
    )
    mean = float(w.sum() / cap[active].sum())
    dev = np.bincount(cur, weights=w, minlength=n_nodes) / cap - mean
    d_now = float(np.abs(dev[active]).max())
    if not math.isfinite(moves) or d_now <= 0:
        return 0.0
    need = _Needs(w, cur, cap, active, dev)
    if need.fits(0.0, moves):
        return 0.0
    lo, hi = 0.0, d_now  # lo: proven unreachable; hi: not excluded by the counting
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        if need.fits(mid, moves):
            hi = mid
        else:
            lo = mid
        if hi - lo <= 1e-6 * max(hi, 1e-300):
            break
    return lo


def key_group_floor(loads: np.ndarray, capacities: np.ndarray, removing: np.ndarray) -> tuple[float, int]:
    """The load distance no placement goes below, whatever the budget, and the key group that
    sets it: ``(D_floor, k)``, ``k = -1`` when nothing sets one.

    The proof: key group ``k`` (load ``w_k``) sits on one node. On an active node ``i`` it alone
    puts ``u_i >= w_k / c_i >= w_k / c_max``, so ``D >= w_k / c_max - mean``. On a removing node,
    the active nodes hold at most ``W - w_k`` over their capacity ``C``, so one of them is at
    least ``w_k / C`` below the mean: ``D >= w_k / C``. Without removing nodes the floor is the
    first, with them the smaller of the two; both grow with ``w_k``, so the heaviest key group
    sets it. Budgets, traffic and every other rule can only raise the true optimum, so the floor
    holds for every planner; :func:`load_distance_bound` counts moves instead, and the larger of
    the two is the better bound at a budget.

    One key group of load 7 among loads 1 on three nodes (mean 3): some node carries at least 7.

    >>> key_group_floor(np.array([7.0, 1.0, 1.0]), np.ones(3), np.zeros(3, bool))
    (4.0, 0)
    """
    w = np.asarray(loads, dtype=float)
    cap = np.asarray(capacities, dtype=float)
    active = ~np.asarray(removing, dtype=bool)
    if w.size == 0 or not active.any() or cap[active].sum() <= 0:
        return 0.0, -1
    k = int(np.argmax(w))
    total = float(cap[active].sum())
    floor = float(w[k] / cap[active].max() - w.sum() / total)
    if not active.all():
        floor = min(floor, float(w[k] / total))
    return (floor, k) if floor > 0 else (0.0, -1)


class _Needs:
    """The per-node counting of the module docstring, vectorised over nodes."""

    def __init__(self, w, cur, cap, active, dev) -> None:
        self.cap, self.active, self.dev = cap, active, dev
        n_nodes = cap.size
        # Per node, loads in decreasing order, as one global cumulative sum (loads >= 0, so it is
        # non-decreasing and a node's "largest k" sum is a difference of two entries).
        order = np.lexsort((-w, cur))
        self.seg_start = np.searchsorted(cur[order], np.arange(n_nodes), side="left")
        self.seg_end = np.searchsorted(cur[order], np.arange(n_nodes), side="right")
        self.cum = np.r_[0.0, np.cumsum(w[order])]
        # Per node, loads in increasing order keyed by node, for "a load inside the window".
        asc = np.lexsort((w, cur))
        self.node_sorted = cur[asc]
        self.w_sorted_by_node = w[asc]
        # Every load, decreasing (for arrivals) and increasing (for windows).
        self.all_desc_cum = np.r_[0.0, np.cumsum(np.sort(w)[::-1])]
        self.all_asc = np.sort(w)
        # (node, rank of the load among all loads) as one exact integer key, sorted like the pairs:
        # a load >= low has a rank >= the number of loads below low, and a load < low a smaller one.
        self.keys = self.node_sorted * (w.size + 1) + np.searchsorted(
            self.all_asc, self.w_sorted_by_node, side="left"
        )

    def _has_load_in(self, nodes: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
        """Whether node ``nodes[j]`` holds a key group with load in ``[low[j], high[j]]``: one
        binary search in the (node, load rank) keys, exact (integer keys, no loop over nodes)."""
        rank = np.searchsorted(self.all_asc, low, side="left")  # loads below low[j]
        p = np.searchsorted(self.keys, nodes * (self.all_asc.size + 1) + rank, side="left")
        ok = p < self.keys.size
        p = np.minimum(p, self.keys.size - 1)
        return ok & (self.node_sorted[p] == nodes) & (self.w_sorted_by_node[p] <= high)

    def fits(self, d: float, moves: float) -> bool:
        """Whether the counting allows load distance ``d`` with ``moves`` moves."""
        cap, dev = self.cap, self.dev
        slack = _REL * (1 + abs(d))
        over = np.flatnonzero(self.active & (dev > d + slack))
        under = np.flatnonzero(self.active & (dev < -d - slack))
        # Over nodes: departures of their own largest loads.
        need_load = (dev[over] - d) * cap[over] * (1 - _REL)
        base = self.cum[self.seg_start[over]]
        pos = np.searchsorted(self.cum, base + need_load, side="left")  # first prefix reaching it
        k_out = pos - self.seg_start[over]
        if np.any(pos > self.seg_end[over]):
            return False  # shedding every key group is not enough (cannot happen with loads >= 0)
        single = self._has_load_in(over, need_load, (dev[over] + d) * cap[over] * (1 + _REL))
        ends_over = np.maximum(k_out, np.where(single, 1, 2))
        # Under nodes: arrivals of the largest loads anywhere.
        need_in = (-dev[under] - d) * cap[under] * (1 - _REL)
        k_in = np.searchsorted(self.all_desc_cum, need_in, side="left")
        if np.any(k_in >= self.all_desc_cum.size):
            return False
        high = (-dev[under] + d) * cap[under] * (1 + _REL)
        p = np.searchsorted(self.all_asc, need_in, side="left")
        single_in = (p < self.all_asc.size) & (self.all_asc[np.minimum(p, self.all_asc.size - 1)] <= high)
        ends_under = np.maximum(k_in, np.where(single_in, 1, 2))
        departures = float(k_out.sum())
        arrivals = float(k_in.sum())
        endpoints = float(ends_over.sum() + ends_under.sum())
        return departures <= moves and arrivals <= moves and endpoints <= 2 * moves
