"""Interval partitioning with minimum state migration (Ding et al., "Optimal operator state migration
for elastic data stream processing", sections 4 and 5): the SSM dynamic program and the migration
cost ``c(P, P')`` between two interval partitionings.

Arrays in, arrays out: tasks are positions ``0..m-1`` with loads ``w`` and state sizes ``s``.

The model (Definition 4.1, two readings)
----------------------------------------
The current placement is given per task as ``owner[j]``: the old node holding task ``j`` when that
node may keep state (an *active* node), or ``-1`` when it may not (a node being removed; its state
always moves). Each active old node holds one contiguous run of tasks. The new placement cuts the
tasks into non-empty contiguous intervals, each with load at most ``cap`` -- except that a single
task heavier than ``cap`` may sit alone on a node. Every interval goes to a distinct node; an
interval keeping its state on old node ``i`` gains the state of its overlap with ``i``'s run.
Minimising migrated state = maximising the total gain. How many intervals:

- ``allow_empty=True`` (the default): *at most* ``k_max``; the remaining nodes get empty intervals,
  which Definition 4.1 permits if read literally (it bounds only the maximum load), e.g. a new node
  that nothing needs to move to.
- ``allow_empty=False`` (the paper's reading: Definition 4.1 assigns every node ``N_1 .. N_n'`` a
  task interval ``I'_i``, and the SSM of Figures 5-7 fills them all): *exactly* ``k_max``, so
  ``None`` when ``m < k_max``.

Ties (many partitionings often keep the same state, e.g. when all state sizes are 0) are broken
toward, in this order: the most state kept, then the most *tasks* kept (fewest moves: the current
placement wins whenever it is among the cheapest and fits), then a last term worth less than one
task in total. They ride on the gain as one value, state kept over all state plus
``TIE_WEIGHT / (m + 1)`` per task kept: plans whose kept state differs by less than ``TIE_WEIGHT``
(1e-8) of all state count as equally cheap. The last term:

- default reading: better balance, the least sum of squared interval loads (a smooth stand-in for
  the load distance, which is a maximum and not additive over intervals);
- paper's reading: the paper's own choice (Figure 6, ``Solve_P1``): an interval that keeps state on
  its old node is as long as the cap allows, so nodes that keep state absorb the most tasks and the
  nodes that held nothing get what is left. This is what makes Table 3's SSM assign 9, 9, 2 tasks
  to N1-N3 and pay again at the next step (see :func:`albic.planners.ssm.oms`).

Why a matching of overlaps is enough: if new intervals ``J_a < J_b`` are matched with positive
overlap to old runs ``O_p`` and ``O_q``, then ``O_p`` cannot lie right of ``O_q`` (it would have to
reach left of ``J_b`` while ``O_q`` reaches into ``J_b``), so every useful matching is non-crossing
(the paper's Lemma 4.1) and only injectivity has to be enforced.

Three solvers, from obviously right to fast:

- :func:`ssm_simple`: DP over (cut position, intervals used, last matched old run); later intervals
  may only match runs after the last matched one. Pure Python, for cross-checks and the benchmark
  (it optimises the gain only, without the tie-breaks).
- :func:`ssm`: O(m * D * k_max) time, ``D`` the most tasks a fitting interval can hold (about
  ``(1 + tau) m / n'`` for even loads, at most ``m``: the paper's O(m^2 n') of Table 2 at worst), in
  our own formulation rather than a transcription of Figure 7 (whose post-processing the paper
  omits): ``f[k, y, b]`` = best gain of ``k`` intervals covering ``[0, y)``, where ``b`` says whether
  the old run straddling the cut ``y`` (holding tasks ``y-1`` and ``y``) is already matched. An
  interval ``[x, y)`` can only usefully match its first run (unless the flag says it is taken), its
  last run, or the best run strictly inside it; which of these it takes decides the flag at ``y``.
  These transition gains do not depend on ``k``, so they are computed once, for the ``m x D``
  intervals that fit (the *band*: interval end x length), and each interval count is then one
  vectorised max-plus step over all ends, lengths and flags.
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
from typing import NamedTuple

import numpy as np

__all__ = [
    "cost_rows",
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


def ssm_simple(
    loads, states, owner, k_max: int, cap: float, *, allow_empty: bool = True
) -> IntervalSolution | None:
    """The obviously exact DP (see the module docstring); ``None`` when no partitioning fits.
    ``allow_empty`` as in :func:`ssm`; ties are not broken as :func:`ssm` breaks them.

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
    finals = [(v[0], key) for key, v in best.items() if key[0] == m and (allow_empty or key[1] == k_max)]
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

# The tie-breaks ride on the gain with this much weight in total: plans whose kept state differs by
# less than TIE_WEIGHT of all state count as equally cheap. Large enough that one key group kept
# (TIE_WEIGHT / (m + 1) of the normalised gain) stands far above float noise in the gain sums, small
# enough that no one cares about the state it may cost.
TIE_WEIGHT = 1e-8

# ssm_solve keeps every step's candidates up to this many numbers (8 MB; m = 64, n' = 16: 53,248).
_KEEP_CANDIDATES = 1 << 20


@dataclass(frozen=True)
class SSMTables:
    """The transition gains of one instance (see :func:`ssm_prepare`), reusable across solves.

    ``value[b_x, d, b_y, e]`` is the value of the interval ``[e - d, e + 1)`` between the flags
    ``b_x`` and ``b_y`` (see :func:`_transitions`); ``first``, ``last`` and ``inside`` (band ``[d,
    e]``) the values of keeping its first run, its last run or ``inside_run`` (with the flag free at
    ``e + 1``), from which the backtracking tells which run a chosen interval keeps."""

    m: int
    allow_empty: bool
    value: np.ndarray
    first: np.ndarray
    last: np.ndarray
    inside: np.ndarray
    inside_run: np.ndarray
    run_of: np.ndarray
    straddles: np.ndarray
    band: int
    starts: np.ndarray
    ends: np.ndarray
    run_owner: np.ndarray
    state_prefix: np.ndarray


class _Runs(NamedTuple):
    """The old placement as maximal runs of one owner: each run's ``starts``, ``ends`` and
    ``owner`` (-1: it cannot keep state), the run of every task, and ``straddles[p]``: one run
    holds tasks ``p - 1`` and ``p`` (``m + 1`` entries, False at both ends)."""

    starts: np.ndarray
    ends: np.ndarray
    owner: np.ndarray
    of_task: np.ndarray
    straddles: np.ndarray


def _runs(owner: np.ndarray) -> _Runs:
    m = owner.size
    starts, ends, run_owner = runs_of(owner)
    run_of = np.repeat(np.arange(starts.size), ends - starts)
    straddles = np.zeros(m + 1, dtype=bool)
    straddles[1:m] = run_of[1:] == run_of[:-1]
    return _Runs(starts, ends, run_owner, run_of, straddles)


class _Band(NamedTuple):
    """The intervals that may fit, in band layout ``[d, e]`` (see :func:`_transitions`), and how
    they lie on the old runs."""

    size: int  # D: the most tasks a fitting interval holds
    x: np.ndarray  # each interval's first task (clipped to 0 where it would start before task 0)
    y: np.ndarray  # the end of each column's intervals (e = y - 1)
    valid: np.ndarray  # the interval starts at a task and fits the cap
    first_run: np.ndarray  # the run of its first task (runs.of_task, broadcast: of its last)
    same: np.ndarray  # its first and last task are in one run
    blocked: np.ndarray  # a run straddles its start x
    straddle_y: np.ndarray  # a run straddles its end y


def _band(L: np.ndarray, cap: float, runs: _Runs) -> _Band:
    m = L.size - 1
    reach = _reach_of_prefix(L, cap)
    D = int((reach - np.arange(m)).max())
    y = np.arange(1, m + 1)
    x = y - 1 - np.arange(D)[:, None]
    valid = x >= 0
    x = np.maximum(x, 0)
    valid &= y <= reach[x]
    first_run = runs.of_task[x]
    return _Band(D, x, y, valid, first_run, first_run == runs.of_task, runs.straddles[x], runs.straddles[1:])


class _Option(NamedTuple):
    """Keeping the state of one old run, per interval of the band: the state kept (-inf where the
    interval cannot keep that run) and the tasks kept."""

    state: np.ndarray
    tasks: np.ndarray


def _first_and_last_run(S: np.ndarray, runs: _Runs, band: _Band) -> tuple[_Option, _Option]:
    """Keeping the run of the interval's first task, and the run of its last one."""
    x, y = band.x, band.y
    run_end, run_start = runs.ends[runs.of_task], runs.starts[runs.of_task]
    task_matchable = (runs.owner >= 0)[runs.of_task]
    end_first = np.where(band.same, y, run_end[x])
    first = _Option(np.where(task_matchable[x], S[end_first] - S[x], -np.inf), end_first - x)
    last = _Option(np.where(task_matchable, S[1:] - S[run_start], -np.inf), y - run_start)  # y only
    return first, last


def _best_inner_run(S: np.ndarray, runs: _Runs, band: _Band) -> tuple[_Option, np.ndarray]:
    """Keeping the best run strictly inside the interval (by state, then tasks), and that run (-1:
    none)."""
    # Rank the matchable runs by (state, tasks); inner[a, b] is the best rank strictly between runs
    # a and b (-1: none), so the best inner run of every interval is one gather.
    R = runs.starts.size
    run_value, run_len = S[runs.ends] - S[runs.starts], runs.ends - runs.starts
    order = np.lexsort((run_len, run_value))
    order = order[(runs.owner >= 0)[order]]
    rank = np.full(R, -1)
    rank[order] = np.arange(order.size)
    upto = np.maximum.accumulate(np.where(np.arange(R) > np.arange(R)[:, None], rank, -1), axis=1)
    inner = np.full((R, R), -1)
    inner[:, 1:] = upto[:, :-1]
    best_rank = inner[band.first_run, runs.of_task]
    # By rank, with a last entry for rank -1 (no inner run): the run, its state and its tasks.
    inside = _Option(np.append(run_value[order], -np.inf)[best_rank], np.append(run_len[order], 0)[best_rank])
    return inside, np.append(order, -1)[best_rank]


def _last_tie_break(L: np.ndarray, band: _Band, allow_empty: bool) -> tuple:
    """The last tie-break term of an interval that keeps no state and of one that keeps some (see
    the module docstring): worth less than one task in total."""
    m = L.size - 1
    x, y = band.x, band.y
    if allow_empty:
        total = L[m] if L[m] > 0 else 1.0
        t_none = t_match = -0.5 * ((L[y] - L[x]) / total) ** 2
    else:
        t_none, t_match = 0.0, 0.5 * (y - x) / m
    return t_none, t_match


def _flag_values(
    band: _Band, v_first: np.ndarray, v_last: np.ndarray, v_inside: np.ndarray, v_none: np.ndarray | float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The value of every interval between each pair of flags ``(b_x, d, b_y, e)``, and the values
    of keeping its first or last run with the flag free at ``y`` (what :func:`_kept_run` reads)."""
    neg = -np.inf
    same, blocked, straddle_y, valid = band.same, band.blocked, band.straddle_y, band.valid
    carry = same & blocked & straddle_y  # inside a run straddling x and y that is matched already
    # Flag 0 at y: the run straddling y (if any) stays free; the best option, or none. Flag 1 at x
    # (the run straddling x is matched) forbids the first run when it is that run.
    first_0 = np.where(same & straddle_y, neg, v_first)
    last_0 = np.where(same | straddle_y, neg, v_last)
    free_0 = np.maximum(last_0, v_inside)
    value = np.empty((2, band.size, 2, band.y.size))
    for b_from, first in ((0, first_0), (1, np.where(blocked, neg, first_0))):
        best = np.maximum(first, free_0)
        # A matched run keeps at least one task, so matching beats none whenever it is possible.
        best = np.where(best == neg, v_none, best)
        value[b_from, :, 0] = np.where(valid & ~carry, best, neg) if b_from else np.where(valid, best, neg)
    # Flag 1 at y: the run straddling y is matched: the first run if it is that run, else the last.
    fits_1 = valid & straddle_y
    value[0, :, 1] = np.where(fits_1, np.where(same, v_first, v_last), neg)
    taken = np.where(carry, v_none, np.where(same, np.where(blocked, neg, v_first), v_last))
    value[1, :, 1] = np.where(fits_1, taken, neg)
    return value, first_0, last_0


def _transitions(loads, states, owner, cap, allow_empty) -> SSMTables:
    """The gains of every interval ``[x, y)`` that fits, in *band* layout: index ``(d, e)`` is the
    interval ending at task ``e = y - 1`` with ``d = y - 1 - x`` (``d < D``, the longest interval
    that fits). The tables hold the value of each pair of flags as one array ``(2 flag at x, D, 2
    flag at y, m)`` (state kept over all state, plus ``TIE_WEIGHT / (m + 1)`` x (tasks kept + the
    last tie-break term)), and the band arrays :func:`_kept_run` needs to tell which run an interval
    keeps (the values of keeping its first run, its last run and the best run inside, and that
    inner run).

    The band is what makes the DP fast: an interval can hold only so many tasks before its load
    exceeds the cap (about ``(1 + tau) * m / n'`` of them), so only ``m x D`` of the ``m^2``
    intervals exist. Every quantity is one numpy expression over the whole band (no loop over
    intervals); per-task and per-run lookups are gathered into it, so the cost is a fixed number of
    array operations of size ``m x D``."""
    m = loads.size
    L, S = _prefix(loads), _prefix(states)
    runs = _runs(owner)
    band = _band(L, cap, runs)
    first, last = _first_and_last_run(S, runs, band)
    inside, inside_run = _best_inner_run(S, runs, band)
    t_none, t_match = _last_tie_break(L, band, allow_empty)
    # One value per option: normalised gain + weight x (tasks kept + last term).
    scale = 1.0 / S[m] if S[m] > 0 else 1.0
    weight = TIE_WEIGHT / (m + 1)
    v_first = first.state * scale + weight * (first.tasks + t_match)
    v_last = last.state * scale + weight * (last.tasks + t_match)
    v_inside = inside.state * scale + weight * (inside.tasks + t_match)
    value, first_0, last_0 = _flag_values(band, v_first, v_last, v_inside, weight * t_none)
    return SSMTables(
        m=m,
        allow_empty=allow_empty,
        value=value,
        first=first_0,
        last=last_0,
        inside=v_inside,
        inside_run=inside_run,
        run_of=runs.of_task,
        straddles=runs.straddles,
        band=band.size,
        starts=runs.starts,
        ends=runs.ends,
        run_owner=runs.owner,
        state_prefix=S,
    )


def ssm_prepare(loads, states, owner, cap: float, *, allow_empty: bool = True) -> SSMTables:
    """The transition gains of an instance (O(m * D) for the ``D`` tasks the longest fitting
    interval holds), for several :func:`ssm_solve` calls; ``allow_empty`` as in :func:`ssm`.

    >>> ssm_prepare([1, 1, 1, 1], [5, 1, 1, 5], [0, 0, 1, 1], 2.0).value.shape  # (flag at x, d, flag at y, e)
    (2, 2, 2, 4)
    """
    loads, states, owner = _check_inputs(loads, states, owner, 0)
    if loads.size == 0:
        empty = np.zeros(0)
        return SSMTables(0, allow_empty, *[empty] * 7, 0, empty, empty, empty, np.zeros(1))
    return _transitions(loads, states, owner, cap, allow_empty)


def ssm(loads, states, owner, k_max: int, cap: float, *, allow_empty: bool = True) -> IntervalSolution | None:
    """The optimal partitioning (see the module docstring); ``None`` when no partitioning into at
    most ``k_max`` fitting intervals exists -- exactly ``k_max`` non-empty ones when
    ``allow_empty`` is False (the paper's reading; then also ``None`` when ``m < k_max``).

    >>> ssm([1, 1, 1, 1], [5, 1, 1, 5], [0, 0, 1, 1], 3, 2.0).intervals
    [(0, 2), (2, 4)]
    >>> ssm([1, 1, 1, 1], [5, 1, 1, 5], [0, 0, 1, 1], 3, 2.0, allow_empty=False).intervals
    [(0, 2), (2, 3), (3, 4)]
    """
    loads, states, owner = _check_inputs(loads, states, owner, k_max)
    return ssm_solve(ssm_prepare(loads, states, owner, cap, allow_empty=allow_empty), k_max)


def _band_mask(allowed: np.ndarray, m: int, D: int) -> np.ndarray:
    """``allowed[x, y - 1]`` in band layout ``[y - 1 - x, y - 1]`` (False outside the matrix)."""
    e = np.arange(m)
    x = e - np.arange(D)[:, None]
    return np.where(x >= 0, np.asarray(allowed, dtype=bool)[np.maximum(x, 0), e], False)


def ssm_solve(tables: SSMTables, k_max: int, allowed: np.ndarray | None = None) -> IntervalSolution | None:
    """The DP over prepared gains; ``allowed[x, y - 1]`` False forbids the interval ``[x, y)``
    (e.g. to force cuts into windows), on top of the cap.

    Each interval count is one max-plus step over the whole band at once: every (end, flag) pair
    takes the best of its ``2 D`` candidates (start, flag) in one reduction; only the values are
    kept, and the few intervals of the optimum are found again when backtracking.

    >>> t = ssm_prepare([1, 1, 1, 1], [5, 1, 1, 5], [0, 0, 1, 1], 4.0)
    >>> only = np.zeros((4, 4), dtype=bool); only[0, 2] = only[3, 3] = True  # [0, 3) then [3, 4)
    >>> ssm_solve(t, 2, only).intervals
    [(0, 3), (3, 4)]
    """
    m, D = tables.m, tables.band
    if m == 0:
        return IntervalSolution(0.0, [], [])
    if k_max == 0 or (not tables.allow_empty and k_max > m):
        return None
    value = tables.value
    if allowed is not None:
        value = np.where(_band_mask(allowed, m, D)[None, :, None, :], value, -np.inf)
    K = min(k_max, m)  # more non-empty intervals than tasks is impossible
    # f[k, b, D - 1 + x]: best value of k intervals covering [0, x) with flag b at x; the D - 1
    # leading entries stay -inf so that a sliding window reads f[x - d] for every d.
    off = D - 1
    f = np.full((K + 1, 2, m + D), -np.inf)
    f[0, 0, off] = 0.0
    # A view, made once: [k, b_x, d, b_y, e] -> f[k] at x = e - d with flag b_x, the same for
    # both b_y (it sees later writes to f); e innermost, so each addition runs along rows of m.
    s0, s1, s2 = f.strides
    previous = np.ndarray((K + 1, 2, D, 2, m), f.dtype, f, off * s2, (s0, s1, -s2, 0, s2))
    # The candidates of every step are kept when small (the backtracking then only reads them),
    # else one step's are, and the backtracking adds again the few it needs.
    keep = K * value.size <= _KEEP_CANDIDATES
    candidates = np.empty((K if keep else 1, *value.shape))
    for k in range(1, K + 1):
        step = candidates[k - 1 if keep else 0]
        np.add(previous[k - 1], value, out=step)
        # the 2 D candidates (b_x, d) of every (b_y, e), in one reduction
        np.maximum.reduce(step.reshape(2 * D, 2, m), axis=0, out=f[k, :, off + 1 : off + m + 1])
    finals = f[1:, 0, off + m]
    k = int(np.argmax(finals)) + 1 if tables.allow_empty else K  # fewest intervals on exact ties
    if not np.isfinite(finals[k - 1]):
        return None
    S, starts, ends, run_owner = tables.state_prefix, tables.starts, tables.ends, tables.run_owner
    intervals, owners, gain = [], [], 0.0
    y, b = m, 0
    while k > 0:
        # The candidate that gave f[k] at (y, b), the first of equal ones: (b_x, d) in row order.
        e = y - 1
        column = candidates[k - 1, :, :, b, e] if keep else previous[k - 1, :, :, 0, e] + value[:, :, b, e]
        b_prev, d = divmod(int(column.argmax()), D)
        x = y - 1 - d
        run = _kept_run(tables, b, b_prev, x, y, d)
        intervals.append((x, y))
        owners.append(int(run_owner[run]) if run >= 0 else -1)
        if run >= 0:  # the exact state kept, recomputed (the DP sums it in another order)
            gain += S[min(y, ends[run])] - S[max(x, starts[run])]
        y, b, k = x, b_prev, k - 1
    return IntervalSolution(float(gain), intervals[::-1], owners[::-1])


def _kept_run(tables: SSMTables, b_y: int, b_x: int, x: int, y: int, d: int) -> int:
    """The old run the chosen interval ``[x, y)`` keeps its state on (-1: none), between the flags
    ``b_x`` at ``x`` and ``b_y`` at ``y``: the option that gave its value in :func:`_transitions`,
    ties to the earlier of first run, last run, inner run."""
    run_of, straddles = tables.run_of, tables.straddles
    first, last = int(run_of[x]), int(run_of[y - 1])
    if b_y:  # the run straddling y is matched: the first run if it is that run, else the last
        carried = b_x and first == last and straddles[x] and straddles[y]
        return -1 if carried else first if first == last else last
    e = y - 1
    run, best = first, tables.first[d, e]
    if b_x and straddles[x]:  # the first run is matched already
        best = -np.inf
    if tables.last[d, e] > best:
        run, best = last, tables.last[d, e]
    if tables.inside[d, e] > best:
        run, best = int(tables.inside_run[d, e]), tables.inside[d, e]
    return -1 if best == -np.inf else run


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


def cost_rows(rows: np.ndarray, masks: np.ndarray, states, columns: np.ndarray | None = None) -> np.ndarray:
    """Migration costs ``c(P_i, P_j) = total state - match_gains`` for ``i`` in ``rows`` (one row
    each) against every partitioning ``j`` of ``masks`` (one :func:`cut_mask` per partitioning),
    or only against those of ``columns`` (indices into ``masks``; one column each).

    >>> masks = np.array([cut_mask([], 2), cut_mask([1], 2)])
    >>> cost_rows(np.array([0, 1]), masks, [1.0, 2.0]).tolist()
    [[0.0, 1.0], [1.0, 0.0]]
    >>> cost_rows(np.array([0]), masks, [1.0, 2.0], columns=np.array([1])).tolist()
    [[1.0]]
    """
    states = np.asarray(states, dtype=float)
    total = float(states.sum())
    targets = masks if columns is None else masks[columns]
    costs = np.empty((len(rows), targets.shape[0]))
    for r, i in enumerate(np.asarray(rows).tolist()):
        costs[r] = total - match_gains(states, masks[i], targets)
    return costs


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
    return _reach_of_prefix(_prefix(loads), cap)


def _reach_of_prefix(L: np.ndarray, cap: float) -> np.ndarray:
    """:func:`_reach` from the load prefix sums ``L`` (``m + 1`` numbers)."""
    m = L.size - 1
    reach = np.searchsorted(L, L[:m] + cap * (1 + _CAP_RTOL) + _CAP_ATOL, side="right") - 1
    return np.maximum(reach, np.arange(1, m + 1))


def count_balanced_partitionings(loads, k_max: int, cap: float, k_min: int = 1) -> int:
    """How many cut tuples :func:`balanced_partitionings` yields (without listing them).

    >>> count_balanced_partitionings([1, 1, 1, 1], 2, 2.0), count_balanced_partitionings([1, 1, 1, 1], 3, 2.0, 3)
    (1, 3)
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
    return sum(ways[k][0] for k in range(max(k_min, 1), k_max + 1))


def balanced_partitionings(loads, k_max: int, cap: float, k_min: int = 1) -> Iterator[tuple[int, ...]]:
    """Every partitioning into ``k_min`` to ``k_max`` non-empty fitting intervals, as its interior
    cuts.

    >>> list(balanced_partitionings([1, 1, 1], 3, 2.0)), list(balanced_partitionings([1, 1, 1], 3, 2.0, 3))
    ([(1,), (1, 2), (2,)], [(1, 2)])
    """
    loads = np.asarray(loads, dtype=float)
    m = loads.size
    if m == 0:
        yield ()
        return
    reach = _reach(loads, cap).tolist()

    def extend(x: int, left: int, cuts: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
        if reach[x] >= m and k_max - left + 1 >= k_min:
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
