"""Interval partitioning with minimum state migration (Ding et al., "Optimal operator state migration
for elastic data stream processing", sections 4 and 5): the SSM dynamic program and the migration
cost ``c(P, P')`` between two interval partitionings.

Arrays in, arrays out: tasks are positions ``0..m-1`` with loads ``w`` and state sizes ``s``.

The model (Definition 4.1 as the issue reads it)
------------------------------------------------
The current placement is given per task as ``owner[j]``: the old node holding task ``j`` when that
node may keep state (an *active* node), or ``-1`` when it may not (a node being removed; its state
always moves). Each active old node holds one contiguous run of tasks. The new placement cuts the
tasks into at most ``k_max`` non-empty contiguous intervals (the remaining nodes get empty
intervals, which Definition 4.1 allows: it bounds only the maximum load), each with load at most
``cap`` -- except that a single task heavier than ``cap`` may sit alone on a node. Every interval
goes to a distinct node; an interval keeping its state on old node ``i`` gains the state of its
overlap with ``i``'s run. Minimising migrated state = maximising the total gain.

Why a matching of overlaps is enough: if new intervals ``J_a < J_b`` are matched with positive
overlap to old runs ``O_p`` and ``O_q``, then ``O_p`` cannot lie right of ``O_q`` (it would have to
reach left of ``J_b`` while ``O_q`` reaches into ``J_b``), so every useful matching is non-crossing
(the paper's Lemma 4.1) and only injectivity has to be enforced.

Three solvers, from obviously right to fast:

- :func:`ssm_simple`: DP over (cut position, intervals used, last matched old run); later intervals
  may only match runs after the last matched one. Pure Python, for cross-checks and the benchmark.
- :func:`ssm`: O(m^2 * k_max) time like the paper's SSM (Table 2), but in our
  own formulation rather than a transcription of Figure 7 (whose post-processing the paper omits):
  ``f[k, y, b]`` = best gain of ``k`` intervals covering ``[0, y)``, where ``b`` says whether the old
  run straddling the cut ``y`` (holding tasks ``y-1`` and ``y``) is already matched. An interval
  ``[x, y)`` can only usefully match its first run (unless the flag says it is taken), its last run,
  or the largest run strictly inside it; which of these it takes decides the flag at ``y``. These
  transition gains do not depend on ``k``, so they are computed once as ``m x m`` matrices (O(m^2)
  space, traded for speed) and each interval count is then one vectorised max-plus step over all
  ``(x, y)``: ``k_max`` numpy passes of O(m^2) each.
- :func:`match_gain` / :func:`migration_cost`: ``c(P, P')`` for given partitionings, by a left-to-
  right scan of the common refinement with two "interval already used" flags (vectorised over many
  ``P'`` at once for the PMC precomputation).

Example: the paper's Table 3, first step (20 equal tasks on 13 + 7, then 3 nodes, tau = 0.4)
---------------------------------------------------------------------------------------------
>>> import numpy as np
>>> w = s = np.ones(20)
>>> owner = np.array([0] * 13 + [1] * 7)
>>> sol = ssm(w, s, owner, 3, capacity_cap(20.0, 3, 0.4))
>>> float(20 - sol.gain), sol.intervals, sol.owners
(4.0, [(0, 4), (4, 13), (13, 20)], [-1, 0, 1])
>>> migration_cost(s, (13,), (9, 11))
4.0
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "IntervalSolution",
    "capacity_cap",
    "fits",
    "ssm",
    "ssm_simple",
    "ssm_prepare",
    "ssm_solve",
    "SSMTables",
    "runs_of",
    "match_gain",
    "match_gains",
    "migration_cost",
    "cut_mask",
    "balanced_partitionings",
    "count_balanced_partitionings",
    "intervals_of",
]

# Loads are compared with the cap up to this relative slack, so that a sum that equals the cap in
# exact arithmetic is not refused for float noise (e.g. three loads of 0.1 against a cap of 0.3).
_CAP_RTOL = 1e-9
_CAP_ATOL = 1e-12


def capacity_cap(total_load: float, n_nodes: int, tau: float) -> float:
    """The load-balancing cap ``(1 + tau) * W / n`` of Definition 4.1."""
    if n_nodes < 1:
        raise ValueError(f"the number of nodes must be >= 1, got {n_nodes}")
    return (1.0 + tau) * float(total_load) / n_nodes


def fits(load: float | np.ndarray, cap: float) -> bool | np.ndarray:
    """Whether an interval of ``load`` respects ``cap`` (one rule for planner, brute force, PMC)."""
    return load <= cap * (1 + _CAP_RTOL) + _CAP_ATOL


@dataclass(frozen=True)
class IntervalSolution:
    """The non-empty new intervals ``[lb, ub)`` in task order, the old node each one keeps its state
    on (``-1``: none, it goes to a node that held nothing of it), and the total gain (state kept)."""

    gain: float
    intervals: list[tuple[int, int]]
    owners: list[int]


def runs_of(owner: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The maximal runs of equal ``owner``: (starts, ends, owner of each run)."""
    owner = np.asarray(owner)
    if owner.size == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    change = np.flatnonzero(owner[1:] != owner[:-1]) + 1
    starts = np.concatenate(([0], change)).astype(np.int64)
    ends = np.concatenate((change, [owner.size])).astype(np.int64)
    return starts, ends, owner[starts].astype(np.int64)


def _prefix(values: np.ndarray) -> np.ndarray:
    return np.concatenate(([0.0], np.cumsum(np.asarray(values, dtype=float))))


def _check_inputs(loads, states, owner, k_max) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    loads = np.asarray(loads, dtype=float)
    states = np.asarray(states, dtype=float)
    owner = np.asarray(owner, dtype=np.int64)
    if not (loads.shape == states.shape == owner.shape and loads.ndim == 1):
        raise ValueError(
            f"loads, states and owner must be 1-d arrays of one length, got shapes "
            f"{loads.shape}, {states.shape}, {owner.shape}"
        )
    if k_max < 0:
        raise ValueError(f"k_max must be >= 0, got {k_max}")
    return loads, states, owner


# -- the simple exact DP --------------------------------------------------------------------------


def ssm_simple(loads, states, owner, k_max: int, cap: float) -> IntervalSolution | None:
    """The obviously exact DP (see the module docstring); ``None`` when no partitioning fits.

    >>> sol = ssm_simple([1, 1, 1, 1], [1, 1, 1, 1], [0, 0, 0, 0], 2, 2.0)
    >>> sol.gain, sol.intervals
    (2.0, [(0, 2), (2, 4)])
    """
    loads, states, owner = _check_inputs(loads, states, owner, k_max)
    m = loads.size
    if m == 0:
        return IntervalSolution(0.0, [], [])
    L, S = _prefix(loads), _prefix(states)
    starts, ends, run_owner = runs_of(owner)
    run_of = np.repeat(np.arange(starts.size), ends - starts)
    # best[(x, k, last)] = (gain, back pointer); last = index of the last matched run, or -1.
    best: dict[tuple[int, int, int], tuple[float, tuple | None]] = {(0, 0, -1): (0.0, None)}
    for x in range(m):
        for k in range(k_max):
            for last in range(-1, starts.size):
                here = best.get((x, k, last))
                if here is None:
                    continue
                for y in range(x + 1, m + 1):
                    if y - x > 1 and not fits(L[y] - L[x], cap):
                        break  # loads are >= 0: longer intervals only get heavier
                    options = [(0.0, last, -1)]
                    for r in range(max(last + 1, int(run_of[x])), int(run_of[y - 1]) + 1):
                        if run_owner[r] >= 0:
                            overlap = S[min(y, ends[r])] - S[max(x, starts[r])]
                            options.append((overlap, r, int(run_owner[r])))
                    for gain, new_last, kept_on in options:
                        key = (y, k + 1, new_last)
                        value = here[0] + gain
                        if key not in best or value > best[key][0]:
                            best[key] = (value, ((x, k, last), (x, y), kept_on))
    finals = [(v[0], key) for key, v in best.items() if key[0] == m]
    if not finals:
        return None
    gain, key = max(finals, key=lambda t: (t[0], -t[1][1]))
    intervals, owners = [], []
    while best[key][1] is not None:
        previous, interval, kept_on = best[key][1]
        intervals.append(interval)
        owners.append(kept_on)
        key = previous
    return IntervalSolution(float(gain), intervals[::-1], owners[::-1])


# -- the O(m^2 k) DP ------------------------------------------------------------------------------

_NONE, _FIRST, _LAST, _INSIDE = 0, 1, 2, 3


def _transition_gains(L, S, starts, ends, run_owner, run_of, cap):
    """For every interval ``[x, y)`` (rows x, columns y) and every pair of flags (at x, at y), the
    best gain and which run it matches (``_NONE``, ``_FIRST``, ``_LAST``, ``_INSIDE``); ``-inf``
    where the interval does not fit or the flags are impossible. Independent of the interval count,
    so computed once: the DP is then one max-plus product per interval count."""
    m = run_of.size
    neg = -np.inf
    x = np.arange(m)[:, None]
    y = np.arange(1, m + 1)[None, :]
    valid = (x < y) & (fits(L[y] - L[x], cap) | (y - x == 1))
    A = np.broadcast_to(run_of[:, None], (m, m))              # run of task x
    B = np.broadcast_to(run_of[None, :], (m, m))              # run of task y-1
    same = A == B
    straddles = np.zeros(m + 1, dtype=bool)
    straddles[1:m] = run_of[1:] == run_of[:-1]
    straddle_y = np.broadcast_to(straddles[None, 1:], (m, m))
    blocked = np.broadcast_to(straddles[:m, None], (m, m))    # the run straddling x may be taken
    matchable = run_owner >= 0
    g_first = np.where(same, S[y], S[ends[A]]) - S[x]
    g_first = np.where(matchable[A], g_first, neg)
    g_last = np.where(matchable[B], S[y] - S[starts[B]], neg)
    # Largest matchable run strictly between A and B: range maxima over run indices.
    run_value = np.where(matchable, S[ends] - S[starts], neg)
    R = run_value.size
    upper = np.where(np.arange(R)[None, :] >= np.arange(R)[:, None], run_value[None, :], neg)
    range_max = np.maximum.accumulate(upper, axis=1)          # range_max[a, c] = max over a..c
    inner = A + 1 < B
    g_inside = np.where(inner, range_max[np.minimum(A + 1, R - 1), np.maximum(B - 1, 0)], neg)
    zeros = np.zeros((m, m))
    negs = np.full((m, m), neg)
    gains, choices = {}, {}
    for b_from in (0, 1):
        carry = same & blocked & straddle_y if b_from else np.zeros((m, m), dtype=bool)
        first = np.where(blocked, neg, g_first) if b_from else g_first
        # Flag 0 at y: the run straddling y (if any) stays free.
        opts0 = np.stack([
            zeros,
            np.where(same & straddle_y, neg, first),
            np.where(~same & ~straddle_y, g_last, neg),
            g_inside,
        ])
        opts0[:, carry] = neg
        # Flag 1 at y: the run straddling y is matched, here or (carry) further left.
        opts1 = np.stack([
            np.where(carry, 0.0, neg),
            np.where(same, first, neg),
            np.where(~same, g_last, neg),
            negs,
        ])
        opts1[:, ~straddle_y] = neg
        for b_to, opts in ((0, opts0), (1, opts1)):
            choice = np.argmax(opts, axis=0)
            gain = np.take_along_axis(opts, choice[None], axis=0)[0]
            gains[b_from, b_to] = np.where(valid, gain, neg)
            choices[b_from, b_to] = choice.astype(np.int8)
    return gains, choices, run_value


@dataclass(frozen=True)
class SSMTables:
    """The transition gains of one instance (see :func:`ssm_prepare`), reusable across solves."""

    m: int
    gains: dict
    choices: dict
    run_of: np.ndarray
    run_owner: np.ndarray
    run_value: np.ndarray


def ssm_prepare(loads, states, owner, cap: float) -> SSMTables:
    """The O(m^2) transition gains of an instance, for several :func:`ssm_solve` calls."""
    loads, states, owner = _check_inputs(loads, states, owner, 0)
    L, S = _prefix(loads), _prefix(states)
    starts, ends, run_owner = runs_of(owner)
    run_of = np.repeat(np.arange(starts.size), ends - starts)
    if loads.size == 0:
        return SSMTables(0, {}, {}, run_of, run_owner, np.zeros(0))
    gains, choices, run_value = _transition_gains(L, S, starts, ends, run_owner, run_of, cap)
    return SSMTables(int(loads.size), gains, choices, run_of, run_owner, run_value)


def ssm(loads, states, owner, k_max: int, cap: float) -> IntervalSolution | None:
    """The optimal partitioning in O(m^2 * k_max) (see the module docstring); ``None`` when no
    partitioning into at most ``k_max`` fitting intervals exists.

    >>> ssm([1, 1, 1, 1], [5, 1, 1, 5], [0, 0, 1, 1], 3, 2.0).intervals
    [(0, 2), (2, 4)]
    """
    _check_inputs(loads, states, owner, k_max)
    return ssm_solve(ssm_prepare(loads, states, owner, cap), k_max)


def ssm_solve(tables: SSMTables, k_max: int, allowed: np.ndarray | None = None) -> IntervalSolution | None:
    """The DP over prepared gains; ``allowed[x, y - 1]`` False forbids the interval ``[x, y)``
    (e.g. to force cuts into windows), on top of the cap.

    >>> t = ssm_prepare([1, 1, 1, 1], [5, 1, 1, 5], [0, 0, 1, 1], 4.0)
    >>> only = np.zeros((4, 4), dtype=bool); only[0, 2] = only[3, 3] = True  # [0, 3) then [3, 4)
    >>> ssm_solve(t, 2, only).intervals
    [(0, 3), (3, 4)]
    """
    m = tables.m
    if m == 0:
        return IntervalSolution(0.0, [], [])
    if k_max == 0:
        return None
    gains = tables.gains
    if allowed is not None:
        gains = {key: np.where(allowed, g, -np.inf) for key, g in gains.items()}
    choices, run_of, run_owner, run_value = tables.choices, tables.run_of, tables.run_owner, tables.run_value
    K = min(k_max, m)  # more non-empty intervals than tasks is impossible
    neg = -np.inf
    # f[k, x, b]: best gain of k intervals covering [0, x) with flag b at x (x = 0..m).
    f = np.full((K + 1, m + 1, 2), neg)
    f[0, 0, 0] = 0.0
    back_x = np.zeros((K + 1, m + 1, 2), dtype=np.int64)
    back_b = np.zeros((K + 1, m + 1, 2), dtype=np.int8)
    cols = np.arange(m)
    for k in range(1, K + 1):
        for b_to in (0, 1):
            c0 = f[k - 1, :m, 0][:, None] + gains[0, b_to]
            c1 = f[k - 1, :m, 1][:, None] + gains[1, b_to]
            x0, x1 = np.argmax(c0, axis=0), np.argmax(c1, axis=0)
            v0, v1 = c0[x0, cols], c1[x1, cols]
            take1 = v1 > v0
            f[k, 1:, b_to] = np.where(take1, v1, v0)
            back_x[k, 1:, b_to] = np.where(take1, x1, x0)
            back_b[k, 1:, b_to] = take1
    finals = f[1:, m, 0]
    if not np.isfinite(finals).any():
        return None
    k = int(np.argmax(finals)) + 1  # fewest intervals among the best
    gain = float(finals[k - 1])
    intervals, owners = [], []
    y, b = m, 0
    while k > 0:
        x, b_prev = int(back_x[k, y, b]), int(back_b[k, y, b])
        c = int(choices[b_prev, b][x, y - 1])
        intervals.append((x, y))
        owners.append(_kept_on(c, x, y, run_of, run_owner, run_value))
        y, b, k = x, b_prev, k - 1
    return IntervalSolution(gain, intervals[::-1], owners[::-1])


def _kept_on(choice, x, y, run_of, run_owner, run_value) -> int:
    """The old node an interval ``[x, y)`` keeps its state on, given the DP's choice."""
    if choice == _FIRST:
        return int(run_owner[run_of[x]])
    if choice == _LAST:
        return int(run_owner[run_of[y - 1]])
    if choice == _INSIDE:
        a, b = int(run_of[x]), int(run_of[y - 1])
        return int(run_owner[a + 1 + int(np.argmax(run_value[a + 1 : b]))])
    return -1


# -- c(P, P') -------------------------------------------------------------------------------------


def cut_mask(cuts: Sequence[int], m: int) -> np.ndarray:
    """Boolean vector over positions ``0..m``: True at ``0``, ``m`` and every interior cut."""
    mask = np.zeros(m + 1, dtype=bool)
    mask[0] = mask[m] = True
    mask[np.asarray(list(cuts), dtype=np.int64)] = True
    return mask


def match_gains(states, old_cuts: np.ndarray, new_cuts: np.ndarray, keepable=None) -> np.ndarray:
    """Maximum state kept from an old to each of many new partitionings (vectorised over rows).

    ``old_cuts`` is a mask over positions ``0..m`` (see :func:`cut_mask`); ``new_cuts`` is one such
    mask or a 2-d array of them. ``keepable[j]`` False marks tasks whose old node cannot keep state
    (their overlap counts as nothing). The scan walks the common refinement left to right with two
    flags -- the current old and the current new interval are already matched -- that reset at
    their own cuts; a piece can be taken only when both are free.
    """
    states = np.asarray(states, dtype=float)
    m = states.size
    new = np.atleast_2d(np.asarray(new_cuts, dtype=bool))
    old = np.asarray(old_cuts, dtype=bool)
    rows = new.shape[0]
    weights = states if keepable is None else np.where(keepable, states, 0.0)
    neg = -np.inf
    # v[(a, b)]: best gain so far with the current old interval used (a) / new interval used (b).
    v00 = np.zeros(rows)
    v01 = np.full(rows, neg)
    v10 = np.full(rows, neg)
    v11 = np.full(rows, neg)
    piece = np.zeros(rows)
    for p in range(1, m + 1):
        piece = piece + weights[p - 1]
        boundary = new[:, p] | old[p]
        if not boundary.any():
            continue
        # Close the pieces ending at p: take the piece if both flags are free.
        take = v00 + piece
        c00, c01, c10, c11 = v00, v01, v10, np.maximum(v11, take)
        # Cuts reset the flags of the side that cuts.
        reset_old = old[p]
        reset_new = new[:, p]
        a0 = np.maximum(c00, c10) if reset_old else None
        a1 = np.maximum(c01, c11) if reset_old else None
        if reset_old:
            c00, c01, c10, c11 = a0, a1, np.full(rows, neg), np.full(rows, neg)
        n00 = np.where(reset_new, np.maximum(c00, c01), c00)
        n10 = np.where(reset_new, np.maximum(c10, c11), c10)
        n01 = np.where(reset_new, neg, c01)
        n11 = np.where(reset_new, neg, c11)
        v00 = np.where(boundary, n00, v00)
        v01 = np.where(boundary, n01, v01)
        v10 = np.where(boundary, n10, v10)
        v11 = np.where(boundary, n11, v11)
        piece = np.where(boundary, 0.0, piece)
    return np.maximum(np.maximum(v00, v01), np.maximum(v10, v11))


def match_gain(states, old_cuts: Sequence[int], new_cuts: Sequence[int], keepable=None) -> float:
    """Maximum state kept between two partitionings given by their interior cuts.

    >>> match_gain([1, 1, 1, 1], (2,), (1, 3))
    2.0
    """
    m = len(states)
    return float(match_gains(states, cut_mask(old_cuts, m), cut_mask(new_cuts, m), keepable)[0])


def migration_cost(states, old_cuts: Sequence[int], new_cuts: Sequence[int]) -> float:
    """``c(P, P')``: the least state moved from partitioning ``old_cuts`` to ``new_cuts``.

    >>> migration_cost([1, 1, 1, 1], (2,), (1, 3))
    2.0
    """
    return float(np.sum(states)) - match_gain(states, old_cuts, new_cuts)


# -- enumerating balanced partitionings -----------------------------------------------------------


def _reach(loads: np.ndarray, cap: float) -> np.ndarray:
    """``reach[x]``: the largest ``y`` such that ``[x, y)`` fits (at least ``x + 1``)."""
    m = loads.size
    L = _prefix(loads)
    reach = np.searchsorted(L, L[:m] + cap * (1 + _CAP_RTOL) + _CAP_ATOL, side="right") - 1
    return np.maximum(reach, np.arange(m) + 1).astype(np.int64)


def count_balanced_partitionings(loads, k_max: int, cap: float) -> int:
    """How many cut tuples :func:`balanced_partitionings` yields (without listing them).

    >>> count_balanced_partitionings([1, 1, 1, 1], 2, 2.0)
    1
    """
    loads = np.asarray(loads, dtype=float)
    m = loads.size
    if m == 0:
        return 1
    reach = _reach(loads, cap)
    # ways[k][x]: partitionings of [x, m) into exactly k fitting intervals (Python ints: no overflow)
    ways = [[0] * (m + 1) for _ in range(k_max + 1)]
    ways[0][m] = 1
    for k in range(1, k_max + 1):
        for x in range(m - 1, -1, -1):
            ways[k][x] = sum(ways[k - 1][y] for y in range(x + 1, int(reach[x]) + 1))
    return sum(ways[k][0] for k in range(1, k_max + 1))


def balanced_partitionings(loads, k_max: int, cap: float) -> Iterator[tuple[int, ...]]:
    """Every partitioning into at most ``k_max`` non-empty fitting intervals, as its interior cuts.

    >>> list(balanced_partitionings([1, 1, 1], 3, 2.0))
    [(1,), (1, 2), (2,)]
    """
    loads = np.asarray(loads, dtype=float)
    m = loads.size
    if m == 0:
        yield ()
        return
    reach = _reach(loads, cap).tolist()

    def extend(x: int, left: int, cuts: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
        if reach[x] >= m:
            yield cuts  # the rest fits in one interval
        if left > 1:
            for y in range(x + 1, min(reach[x], m - 1) + 1):
                yield from extend(y, left - 1, cuts + (y,))

    if k_max >= 1:
        yield from extend(0, k_max, ())


def intervals_of(cuts: Sequence[int], m: int) -> list[tuple[int, int]]:
    """The intervals ``[lb, ub)`` of a partitioning given by its interior cuts.

    >>> intervals_of((2, 3), 5)
    [(0, 2), (2, 3), (3, 5)]
    """
    bounds = [0, *cuts, m]
    return [(a, b) for a, b in zip(bounds, bounds[1:])]
