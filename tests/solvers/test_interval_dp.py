"""The SSM dynamic programs and c(P, P') against brute force (every partitioning x every matching)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from albic.solvers.interval_dp import (
    balanced_partitionings,
    capacity_cap,
    count_balanced_partitionings,
    cut_mask,
    fits,
    match_gain,
    match_gains,
    migration_cost,
    ssm,
    ssm_prepare,
    ssm_simple,
    ssm_solve,
)


def brute_partitionings(loads, k_max, cap, allow_empty=True):
    """Every cut tuple with <= k_max (exactly k_max unless allow_empty) non-empty intervals, each
    fitting or a single task."""
    m = len(loads)
    for k in range(1 if allow_empty else k_max, min(k_max, m) + 1):
        for cuts in itertools.combinations(range(1, m), k - 1):
            bounds = (0, *cuts, m)
            if all(b - a == 1 or fits(sum(loads[a:b]), cap) for a, b in zip(bounds, bounds[1:])):
                yield cuts


def brute_gain(states, owner, cuts):
    """Best injective matching of new intervals to old nodes (owner >= 0), by trying them all."""
    return brute_best(states, owner, cuts, [0.0] * len(states), True)[0]


def brute_best(states, owner, cuts, loads, allow_empty):
    """The lexicographically best (state kept, tasks kept, last tie-break term) over every injective
    matching of the intervals of ``cuts`` to old nodes, the tie-breaks written from the module
    docstring: the least sum of squared interval loads over the total (default reading), or the
    most tasks in intervals that keep state on their old node (the paper's reading)."""
    m = len(states)
    bounds = (0, *cuts, m)
    intervals = list(zip(bounds, bounds[1:]))
    nodes = sorted({o for o in owner if o >= 0})
    overlap = [
        [sum(s for j, s in enumerate(states[a:b], a) if owner[j] == node) for node in nodes]
        for a, b in intervals
    ]
    count = [[sum(1 for j in range(a, b) if owner[j] == node) for node in nodes] for a, b in intervals]
    total = sum(loads) or 1.0
    balance = -sum((sum(loads[a:b]) / total) ** 2 for a, b in intervals)
    best = (0.0, 0, balance if allow_empty else 0)
    # Each interval picks a node or nothing (None); nodes at most once.
    for choice in itertools.product([None, *range(len(nodes))], repeat=len(intervals)):
        used = [c for c in choice if c is not None]
        if len(used) == len(set(used)):
            picked = [(i, c) for i, c in enumerate(choice) if c is not None]
            key = (
                sum(overlap[i][c] for i, c in picked),
                sum(count[i][c] for i, c in picked),
                balance
                if allow_empty
                else sum(intervals[i][1] - intervals[i][0] for i, c in picked if count[i][c] > 0),
            )
            best = max(best, key)
    return best


def brute_ssm(loads, states, owner, k_max, cap, allow_empty=True):
    """The best (gain, tasks kept, tie-break) over every partitioning, or None if none fits."""
    keys = [
        brute_best(states, owner, cuts, loads, allow_empty)
        for cuts in brute_partitionings(loads, k_max, cap, allow_empty)
    ]
    return max(keys) if keys else None


@st.composite
def instances(draw, max_tasks=9, max_nodes=5):
    """Tasks on old nodes as contiguous runs (some runs on removing nodes: owner -1)."""
    m = draw(st.integers(1, max_tasks))
    n_old = draw(st.integers(1, min(max_nodes, m)))
    cuts = (
        sorted(draw(st.sets(st.integers(1, m - 1), min_size=n_old - 1, max_size=n_old - 1))) if m > 1 else []
    )
    n_old = len(cuts) + 1
    removed = draw(st.sets(st.integers(0, n_old - 1), max_size=n_old))
    bounds = [0, *cuts, m]
    owner = []
    for i, (a, b) in enumerate(zip(bounds, bounds[1:])):
        owner += [-1 if i in removed else i] * (b - a)
    loads = [float(draw(st.integers(0, 9))) for _ in range(m)]
    states = [float(draw(st.integers(0, 9))) for _ in range(m)]
    k_max = draw(st.integers(1, max_nodes))
    tau = draw(st.sampled_from([0.0, 0.2, 0.5, 1.0]))
    return loads, states, owner, k_max, capacity_cap(sum(loads), k_max, tau)


def check_solution(sol, loads, states, owner, k_max, cap):
    """The returned intervals tile [0, m), fit, and their claimed owners really keep that gain."""
    m = len(loads)
    assert len(sol.intervals) <= k_max
    assert [a for a, _ in sol.intervals][1:] == [b for _, b in sol.intervals][:-1]
    assert sol.intervals[0][0] == 0 and sol.intervals[-1][1] == m
    kept = [o for o in sol.owners if o >= 0]
    assert len(kept) == len(set(kept)), "an old node keeps state for two intervals"
    gain = 0.0
    for (a, b), o in zip(sol.intervals, sol.owners):
        assert b - a == 1 or fits(sum(loads[a:b]), cap)
        gain += sum(states[j] for j in range(a, b) if o >= 0 and owner[j] == o)
    assert gain == pytest.approx(sol.gain)


def solution_key(sol, loads, states, owner, allow_empty):
    """(gain, tasks kept, tie-break term) of a returned solution, recomputed from its intervals."""
    total = sum(loads) or 1.0
    kept = [(a, b, o) for (a, b), o in zip(sol.intervals, sol.owners) if o >= 0]
    gain = sum(states[j] for a, b, o in kept for j in range(a, b) if owner[j] == o)
    count = sum(1 for a, b, o in kept for j in range(a, b) if owner[j] == o)
    last = (
        -sum((sum(loads[a:b]) / total) ** 2 for a, b in sol.intervals)
        if allow_empty
        else sum(b - a for a, b, _ in kept)
    )
    return gain, count, last


@settings(max_examples=300, deadline=None)
@given(instances(), st.booleans())
def test_ssm_and_simple_dp_equal_brute_force(instance, allow_empty):
    loads, states, owner, k_max, cap = instance
    expected = brute_ssm(loads, states, owner, k_max, cap, allow_empty)
    for solver in (ssm, ssm_simple):
        sol = solver(loads, states, owner, k_max, cap, allow_empty=allow_empty)
        if expected is None:
            assert sol is None
        else:
            assert sol is not None and sol.gain == pytest.approx(expected[0])
            check_solution(sol, loads, states, owner, k_max, cap)
            if not allow_empty:
                assert len(sol.intervals) == k_max
    if expected is not None:
        # The fast DP also breaks ties exactly as the module docstring says: most tasks kept, then
        # balance (default) or the longest intervals that keep state (the paper's reading).
        got = solution_key(
            ssm(loads, states, owner, k_max, cap, allow_empty=allow_empty), loads, states, owner, allow_empty
        )
        assert got[:2] == pytest.approx(expected[:2]) and got[2] == pytest.approx(expected[2], abs=1e-9)


@settings(max_examples=100, deadline=None)
@given(instances(max_tasks=8, max_nodes=4), st.data())
def test_match_gain_equals_brute_matching(instance, data):
    loads, states, owner, k_max, cap = instance
    m = len(states)
    new_cuts = data.draw(st.sets(st.integers(1, m - 1), max_size=3)) if m > 1 else set()
    new_cuts = tuple(sorted(new_cuts))
    # Old partitioning: the runs of owner; old nodes that cannot keep state are masked out.
    old_cuts = tuple(j for j in range(1, m) if owner[j] != owner[j - 1])
    keepable = np.array(owner) >= 0
    got = match_gain(states, old_cuts, new_cuts, keepable)
    assert got == pytest.approx(brute_gain(states, owner, new_cuts))


def test_match_gains_is_vectorised_over_rows():
    states = [3.0, 1.0, 4.0, 1.0, 5.0]
    old = cut_mask((2,), 5)
    rows = [(1,), (2,), (1, 3), ()]
    batch = match_gains(states, old, np.array([cut_mask(r, 5) for r in rows]))
    assert batch.tolist() == [match_gain(states, (2,), r) for r in rows]
    # Hand check, row (1, 3): old {0,1},{2,3,4}; new {0},{1,2},{3,4}: keep 3 (task 0) + 6 (3,4).
    assert batch[2] == 9.0


def test_table3_single_step_and_costs():
    """The paper's Table 3: 20 equal tasks on 13 + 7, tau = 0.4.

    To 3 nodes the cap is 20/3 * 1.4 = 9.33, so intervals of at most 9 tasks: keeping 9 of N1's 13
    and all 7 of N2's moves 4 (e.g. 9 | 2 | 9 with N2 on the last 9), and no plan moves fewer
    (N1 can keep at most 9). The paper's own paths: 9,9,2 (cost 4) then 6,6,2,6 (cost 6).
    """
    w = s = np.ones(20)
    owner = np.array([0] * 13 + [1] * 7)
    sol = ssm(w, s, owner, 3, capacity_cap(20.0, 3, 0.4))
    assert 20 - sol.gain == 4.0
    assert migration_cost(s, (13,), (4, 13)) == 4.0  # 4/9/7: N1 keeps [4,13), N2 keeps [13,20)
    assert migration_cost(s, (4, 13), (4, 11, 13)) == 2.0  # then 4/7/2/7: only [11,13) moves


def test_table3_first_step_under_both_readings():
    """20 equal tasks on 13 + 7 to 3 nodes (cap 9): every reading moves 4. The default breaks the tie
    toward balance (4/9/7: node loads 4, 9, 7), the paper's reading as its Table 3 does (N1 and N2
    keep 9 each, the new node gets 2)."""
    w = s = np.ones(20)
    owner = np.array([0] * 13 + [1] * 7)
    cap = capacity_cap(20.0, 3, 0.4)
    default = ssm(w, s, owner, 3, cap)
    paper = ssm(w, s, owner, 3, cap, allow_empty=False)
    assert 20 - default.gain == 20 - paper.gain == 4.0
    assert sorted(b - a for a, b in default.intervals) == [4, 7, 9]
    assert sorted((b - a, o) for (a, b), o in zip(paper.intervals, paper.owners)) == [(2, -1), (9, 0), (9, 1)]


def test_ties_keep_the_current_placement_then_balance():
    """Zero state sizes: every plan moves no state. The current placement (4 + 4 tasks, within the
    cap) must be kept, not merged onto one node (a DP that takes the fewest intervals would move
    4 tasks); with all tasks on a node being removed, the plan spreads them evenly."""
    loads, zero = [1.0] * 8, [0.0] * 8
    kept = ssm(loads, zero, [0] * 4 + [1] * 4, 2, capacity_cap(8.0, 2, 1.0))
    assert kept.intervals == [(0, 4), (4, 8)] and kept.owners == [0, 1]
    spread = ssm(loads, zero, [-1] * 8, 2, capacity_cap(8.0, 2, 1.0))
    assert spread.intervals == [(0, 4), (4, 8)]
    # Fewer moves beats balance: 6 + 2 stays rather than become 4 + 4 by moving 2 tasks.
    assert ssm(loads, zero, [0] * 6 + [1] * 2, 2, capacity_cap(8.0, 2, 1.0)).intervals == [(0, 6), (6, 8)]


def test_paper_reading_needs_a_task_per_node():
    assert ssm([1.0, 1.0], [1.0, 1.0], [0, 0], 3, 10.0, allow_empty=False) is None
    assert ssm([1.0, 1.0], [1.0, 1.0], [0, 0], 3, 10.0).intervals == [(0, 2)]


def test_allowed_windows_restrict_the_intervals():
    """``allowed`` (MTM's windows) forbids intervals; the result equals brute force over the rest."""
    rng = np.random.default_rng(5)
    for _ in range(30):
        m = int(rng.integers(2, 8))
        loads = rng.integers(0, 5, m).astype(float)
        states = rng.integers(0, 5, m).astype(float)
        owner = np.repeat(np.arange(2), [m // 2, m - m // 2])
        cap = capacity_cap(loads.sum(), 3, 0.5)
        allowed = rng.random((m, m)) < 0.6
        sol = ssm_solve(ssm_prepare(loads, states, owner, cap), 3, allowed)
        options = [
            cuts
            for cuts in brute_partitionings(list(loads), 3, cap)
            if all(allowed[a, b - 1] for a, b in zip((0, *cuts), (*cuts, m)))
        ]
        if not options:
            assert sol is None
            continue
        assert all(allowed[a, b - 1] for a, b in sol.intervals)
        assert sol.gain == max(brute_gain(list(states), list(owner), c) for c in options)


def test_infeasible_and_degenerate_inputs():
    # loads 1, 2, 1 into 2 intervals with cap 2: [1,2] and [2,1] weigh 3, so three are needed.
    assert ssm([1, 2, 1], [1, 1, 1], [0, 0, 0], 2, 2.0) is None
    assert ssm_simple([1, 2, 1], [1, 1, 1], [0, 0, 0], 2, 2.0) is None
    # A task heavier than the cap may sit alone.
    assert ssm([5, 1], [1, 1], [0, 0], 2, 1.0).intervals == [(0, 1), (1, 2)]
    assert ssm([], [], [], 3, 1.0).intervals == []
    with pytest.raises(ValueError, match="one length"):
        ssm([1, 2], [1], [0, 0], 2, 1.0)


def test_enumeration_matches_its_count_and_brute_force():
    rng = np.random.default_rng(3)
    for _ in range(20):
        loads = rng.integers(0, 5, size=int(rng.integers(1, 8))).astype(float)
        k = int(rng.integers(1, 5))
        cap = capacity_cap(loads.sum(), k, 0.5)
        listed = list(balanced_partitionings(loads, k, cap))
        assert sorted(listed) == sorted(brute_partitionings(list(loads), k, cap))
        assert len(listed) == count_balanced_partitionings(loads, k, cap)
        exact = list(balanced_partitionings(loads, k, cap, k))
        assert sorted(exact) == sorted(brute_partitionings(list(loads), k, cap, allow_empty=False))
        assert len(exact) == count_balanced_partitionings(loads, k, cap, k)


@st.composite
def larger_instances(draw):
    """Up to 40 tasks on up to 12 old nodes (some removing), loads and states of any size."""
    m = draw(st.integers(1, 40))
    n_old = draw(st.integers(1, min(12, m)))
    cuts = (
        sorted(draw(st.sets(st.integers(1, m - 1), min_size=n_old - 1, max_size=n_old - 1))) if m > 1 else []
    )
    removed = draw(st.sets(st.integers(0, len(cuts)), max_size=3))
    bounds = [0, *cuts, m]
    owner = [
        -1 if i in removed else i for i, (a, b) in enumerate(zip(bounds, bounds[1:])) for _ in range(b - a)
    ]
    amounts = st.floats(0.0, 100.0, allow_nan=False, allow_infinity=False, allow_subnormal=False)
    loads = draw(st.lists(amounts, min_size=m, max_size=m))
    states = draw(st.lists(amounts, min_size=m, max_size=m))
    k_max = draw(st.integers(1, 16))
    tau = draw(st.sampled_from([0.0, 0.2, 0.5, 1.2, 3.0]))
    return loads, states, owner, k_max, capacity_cap(sum(loads), k_max, tau)


@settings(max_examples=400, deadline=None)
@given(larger_instances(), st.booleans())
def test_vectorised_dp_equals_the_simple_dp(instance, allow_empty):
    """The vectorised DP (ssm) keeps as much state as the obviously exact one (ssm_simple) on
    instances too large for brute force, and says None exactly when it does."""
    loads, states, owner, k_max, cap = instance
    fast = ssm(loads, states, owner, k_max, cap, allow_empty=allow_empty)
    simple = ssm_simple(loads, states, owner, k_max, cap, allow_empty=allow_empty)
    assert (fast is None) == (simple is None)
    if fast is not None:
        # ssm's tie-breaks may trade up to TIE_WEIGHT of all state for fewer moves or balance.
        assert fast.gain == pytest.approx(simple.gain, rel=1e-7, abs=1e-9 * (1 + sum(states)))
        check_solution(fast, loads, states, owner, k_max, cap)
        if not allow_empty:
            assert len(fast.intervals) == k_max
