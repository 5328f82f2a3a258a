"""A fast local-search polish for the items model of :mod:`albic.planners.milp_items`.

Hill climbing with single moves and pairwise swaps of items, always around the node of largest
deviation (then the next ones, up to ``FOCUS`` nodes, when it cannot be improved), accepting an
operation when it lowers the load distance ``D``, or keeps it and lowers the sum of squared
deviations (which makes progress while several nodes tie at the maximum). A node's deviation is
``|u - mean|`` when it is active and ``max(u - mean, 0)`` when it is removing (the model's
constraints (3) and (4)). Budgets (moves and migration cost, counted against the original
placement, so moving an item back home frees budget) and allowed nodes are respected.

The candidates of one step are few and chosen, so that a step costs about the same at 400 and at
100,000 key groups: for the focus node ``h`` and each of its ``PARTNERS`` partners on the other
side of the mean (the most under-loaded nodes when ``h`` is over-loaded, the most over-loaded ones
when it is under-loaded), every single move between the two, and for each item of one of them the
two swaps whose load difference is closest to the transfer that would level the pair (found by
binary search in the partner's sorted loads). They are evaluated at once with numpy. Used before
and after the neighbourhood search, where it finds in milliseconds what the solver needs seconds
for, and alone at scale.

>>> import numpy as np
>>> from albic.planners.milp_items import Items
>>> items = Items([np.array([k]) for k in range(4)], np.array([3., 3., 1., 1.]), np.ones(4),
...               np.array([0, 0, 1, 1]), np.ones(2), np.zeros(2, dtype=bool), np.ones((4, 2), dtype=bool),
...               max_moves=2)
>>> polish(items, np.array([0, 0, 1, 1])).tolist()
[1, 0, 0, 1]
"""

from __future__ import annotations

import math

import numpy as np

from albic.core.metrics import ABS_NOISE, REL_NOISE
from albic.planners.work import LEVEL_WORK_PER_STEP, POLISH_WORK_PER_CANDIDATE, POLISH_WORK_PER_STEP, Budget

__all__ = ["polish", "level", "LEVEL_ITEMS"]

FOCUS = 4
PARTNERS = 8
# At and above this many items a polish step (~10 ms at 500 items per node) is too dear to spend
# a large move budget one step at a time: solve_items levels first (see level()).
LEVEL_ITEMS = 10_000
# The takers (givers) level() tries for the node of largest deviation.
LEVEL_PARTNERS = 3


def level(items, where: np.ndarray, *, clock: Budget | None = None, max_steps: int = 1_000_000) -> np.ndarray:
    """Greedy levelling, for large instances before :func:`polish`: an improved copy of ``where``.

    Each step takes the node ``h`` of largest deviation and moves one item between it and one of
    its ``LEVEL_PARTNERS`` partners on the other side of the mean (most under-loaded takers for an
    over-loaded ``h``, most over-loaded givers for an under-loaded one): the item whose load is
    closest to the transfer ``x`` that would level the pair, among those that keep both nodes
    inside their current range (``w < 2 x`` and neither passes the other: so ``D`` never grows
    and the sum of squared deviations falls), fit the budgets, the allowed nodes and the spread
    rule. Ties: fewer moves counted (an item moving home frees one). It stops when ``h`` has no
    such move (then only swaps, the polish's, can help ``h``, and moves spent elsewhere would
    not lower ``D``), when the budget is spent, or when ``clock`` says so. A step costs well under
    a millisecond at 500 items per node, against ~10 ms for a polish step, so a budget of 1,000
    moves is spent in about a second; resource caps are not looked at (as in the polish, the
    caller's evaluation refuses a placement that breaks them).

    >>> import numpy as np
    >>> from albic.planners.milp_items import Items
    >>> items = Items([np.array([k]) for k in range(6)], np.array([3., 2., 2., 1., 1., 1.]), np.ones(6),
    ...               np.array([0, 0, 0, 0, 1, 1]), np.ones(2), np.zeros(2, dtype=bool), max_moves=1)
    >>> level(items, np.array([0, 0, 0, 0, 1, 1])).tolist()  # loads 8 / 2: the 3 levels them
    [1, 0, 0, 0, 1, 1]
    """
    state = _State(items, np.asarray(where).copy())
    active = np.flatnonzero(items.active)
    for _ in range(max_steps):
        absdev = state.absdev()
        h = int(np.argmax(absdev))
        if absdev[h] <= ABS_NOISE:
            break
        dev = state.dev
        if dev[h] > 0:
            pairs = [
                (h, int(k)) for k in active[np.argsort(dev[active], kind="stable")[: LEVEL_PARTNERS + 1]]
            ]
        else:
            pairs = [(int(g), h) for g in np.argsort(-dev, kind="stable")[: LEVEL_PARTNERS + 1]]
        step = next(
            ((t, k) for g, k in pairs if g != k and (t := _level_move(state, g, k)) is not None), None
        )
        if step is None:
            break
        state.move(*step)
        if clock is not None and not clock.spend(LEVEL_WORK_PER_STEP):
            break
    return state.where


def _level_move(state: _State, g: int, k: int) -> int | None:
    """The item of node ``g`` that best levels ``g`` with ``k`` by moving there (see level())."""
    items, dev, cap = state.items, state.dev, state.items.capacities
    gap = dev[g] - dev[k]
    on = state.on[g]
    if gap <= ABS_NOISE or on.size == 0:
        return None
    x = gap / (1 / cap[g] + 1 / cap[k])
    wl = state.w[on]
    slack = 1 - ABS_NOISE
    ok = (wl > 0) & (wl < 2 * x * slack) & (wl / cap[k] <= gap * slack) & (wl / cap[g] <= gap * slack)
    if not ok.any():
        return None
    on, wl = on[ok], wl[ok]
    ok = items.allowed[on, k]
    dm = items.moves_at[on, k] - items.moves_at[on, g]
    dc = items.cost_at[on, k] - items.cost_at[on, g]
    ok &= (state.moves + dm <= state.max_moves) & (state.cost + dc <= state.max_cost)
    on, wl, dm = on[ok], wl[ok], dm[ok]
    for best in np.lexsort((dm, np.abs(wl - x))).tolist():
        t = int(on[best])
        if items.spread_ok(state.where, [(t, k)]):
            return t
    return None


def polish(
    items, where: np.ndarray, *, max_steps: int = 100_000, clock: Budget | None = None, min_steps: int = 0
) -> np.ndarray:
    """An improved copy of placement ``where`` (feasible in, feasible out).

    ``clock``, when given, is charged for each step and the candidates it evaluated
    (``clock.spend(work)``, :mod:`albic.planners.work`) and says whether to go on: the search stops as
    soon as it returns False, except during the first ``min_steps`` steps.
    """
    where = np.asarray(where).copy()
    n_items = len(items.members)
    if n_items == 0:
        return where
    state = _State(items, where)
    for n_step in range(max_steps):
        absdev = state.absdev()
        d_now = absdev.max()
        ss_now = float((absdev**2).sum())
        step = None
        for h in np.argsort(-absdev, kind="stable")[:FOCUS].tolist():
            if absdev[h] <= ABS_NOISE:
                break
            step, evaluated = _best_step(state, absdev, h)
            if (
                clock is not None
                and not clock.spend(POLISH_WORK_PER_STEP + POLISH_WORK_PER_CANDIDATE * evaluated)
                and n_step >= min_steps
            ):
                return state.where
            if step is not None and (
                step[0] < d_now - _noise(d_now)
                or (step[0] <= d_now + _noise(d_now) and step[1] < ss_now * (1 - ABS_NOISE) - ABS_NOISE)
            ):
                break
            step = None
        if step is None:
            break
        for t, target in step[2]:
            state.move(t, target)
    return state.where


def _noise(distance: float) -> float:
    """The float noise forgiven on a load distance: a step lowers it only by more than this, and
    keeps it only within this."""
    return ABS_NOISE * (1 + distance)


class _State:
    """A placement with its deviations, budget use and the items of each node, kept up to date."""

    def __init__(self, items, where: np.ndarray) -> None:
        self.items, self.where = items, where
        n_items = len(items.members)
        idx = np.arange(n_items)
        self.moves = int(items.moves_at[idx, where].sum())
        self.cost = float(items.cost_at[idx, where].sum())
        self.max_moves = math.inf if items.max_moves is None else items.max_moves
        self.max_cost = math.inf if items.max_cost is None else items.max_cost * (1 + REL_NOISE)
        self.dev = items.node_loads(where) / items.capacities - items.mean()
        self.w = items.item_load
        order = np.argsort(where, kind="stable")
        bounds = np.searchsorted(where[order], np.arange(items.capacities.size + 1))
        self.on = [order[bounds[i] : bounds[i + 1]] for i in range(items.capacities.size)]

    def absdev(self) -> np.ndarray:
        dev = self.dev
        return np.where(self.items.active, np.abs(dev), np.maximum(dev, 0.0))

    def move(self, t: int, target: int) -> None:
        items, cap = self.items, self.items.capacities
        old = int(self.where[t])
        self.dev[old] -= self.w[t] / cap[old]
        self.dev[target] += self.w[t] / cap[target]
        self.moves += int(items.moves_at[t, target] - items.moves_at[t, old])
        self.cost += float(items.cost_at[t, target] - items.cost_at[t, old])
        self.where[t] = target
        self.on[old] = self.on[old][self.on[old] != t]
        self.on[target] = np.append(self.on[target], t)


def _rest_max(absdev: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Max of ``absdev`` over the nodes other than ``a[i]`` and ``b[i]`` (from the top three)."""
    top = np.argsort(-absdev, kind="stable")[:3]
    vals = np.r_[absdev[top], np.zeros(3 - top.size)]
    top = np.r_[top, -np.ones(3 - top.size, dtype=np.int64)]
    out = np.zeros(a.size)
    done = np.zeros(a.size, dtype=bool)
    for node, val in zip(top.tolist(), vals.tolist()):
        take = ~done & (a != node) & (b != node)
        out[take] = val
        done |= take
    return out


def _score(items, dev, absdev, a, b, delta):
    """(new D, new sum of squares) when load ``delta`` leaves node ``a`` for node ``b``."""
    cap, active = items.capacities, items.active
    da = dev[a] - delta / cap[a]
    db = dev[b] + delta / cap[b]
    ra = np.where(active[a], np.abs(da), np.maximum(da, 0.0))
    rb = np.where(active[b], np.abs(db), np.maximum(db, 0.0))
    d_new = np.maximum(_rest_max(absdev, a, b), np.maximum(ra, rb))
    ss = float((absdev**2).sum())
    ss_new = ss - absdev[a] ** 2 - absdev[b] ** 2 + ra**2 + rb**2
    return d_new, ss_new


def _pair(state: _State, src: int, dst: int, cands: list) -> None:
    """Candidates that shift load from ``src`` to ``dst``: every move, and for each item of the
    smaller node the two swaps closest to the levelling transfer."""
    w, cap = state.w, state.items.capacities
    on_s, on_d = state.on[src], state.on[dst]
    if on_s.size:
        cands.append(
            (on_s, np.full(on_s.size, -1), np.full(on_s.size, src), np.full(on_s.size, dst), w[on_s])
        )
    if not (on_s.size and on_d.size):
        return
    ideal = (state.dev[src] - state.dev[dst]) / (1 / cap[src] + 1 / cap[dst])  # load src -> dst
    if on_s.size <= on_d.size:
        base, other, sign = on_s, on_d, 1.0  # t1 on src, t2 on dst: w1 - w2 ~ ideal
    else:
        base, other, sign = on_d, on_s, -1.0
    order = other[np.argsort(w[other], kind="stable")]
    sorted_w = w[order]
    want = w[base] - sign * ideal  # the partner load that levels the pair
    pos = np.searchsorted(sorted_w, want)
    for shift in (-1, 0):
        p = np.clip(pos + shift, 0, order.size - 1)
        mate = order[p]
        t1, t2 = (base, mate) if sign > 0 else (mate, base)
        cands.append((t1, t2, np.full(t1.size, src), np.full(t1.size, dst), w[t1] - w[t2]))


def _best_step(state: _State, absdev: np.ndarray, h: int):
    """The best move or swap between node ``h`` and its partners -- (D, SS, [(item, target), ...])
    or None -- and the number of candidates evaluated."""
    items, dev = state.items, state.dev
    over = dev[h] > 0
    if over:  # partners: the most under-loaded active nodes
        nodes = np.flatnonzero(items.active)
        partners = nodes[np.argsort(dev[nodes], kind="stable")[: PARTNERS + 1]]
    else:  # the most over-loaded nodes (removing ones too: they give)
        partners = np.argsort(-dev, kind="stable")[: PARTNERS + 1]
    cands: list = []
    for j in partners.tolist():
        if j != h:
            _pair(state, h, j, cands) if over else _pair(state, j, h, cands)
    if not cands:
        return None, 0
    t1 = np.concatenate([c[0] for c in cands])
    t2 = np.concatenate([c[1] for c in cands])
    a = np.concatenate([c[2] for c in cands])
    b = np.concatenate([c[3] for c in cands])
    delta = np.concatenate([c[4] for c in cands])
    if t1.size == 0:
        return None, 0
    sw = t2 >= 0
    t2s = np.where(sw, t2, 0)
    ok = items.allowed[t1, b] & (~sw | (items.allowed[t2s, a] & (delta != 0)))
    # Budget: item t1 goes a -> b; item t2 (swaps) goes b -> a.
    dm = items.moves_at[t1, b] - items.moves_at[t1, a]
    dc = items.cost_at[t1, b] - items.cost_at[t1, a]
    dm = dm + np.where(sw, items.moves_at[t2s, a] - items.moves_at[t2s, b], 0)
    dc = dc + np.where(sw, items.cost_at[t2s, a] - items.cost_at[t2s, b], 0.0)
    ok &= (state.moves + dm <= state.max_moves) & (state.cost + dc <= state.max_cost)
    if not ok.any():
        return None, t1.size
    d_new, ss_new = _score(items, dev, absdev, a, b, delta)
    d_new = np.where(ok, d_new, np.inf)
    # The best candidate that keeps spread values on distinct nodes (Kafka replicas); without
    # spread values that is simply the first.
    d_now = absdev.max()
    for best in np.lexsort((dm, ss_new, d_new)).tolist():
        if not np.isfinite(d_new[best]) or d_new[best] > d_now + _noise(d_now):
            return None, t1.size  # no better candidate left: the caller would reject it anyway
        changes = [(int(t1[best]), int(b[best]))]
        if t2[best] >= 0:
            changes.append((int(t2[best]), int(a[best])))
        if items.spread_ok(state.where, changes):
            return (float(d_new[best]), float(ss_new[best]), changes), t1.size
    return None, t1.size
