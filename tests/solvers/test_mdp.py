"""The Bellman update of solvers.mdp against a plain transcription of its formula, on states whose
node-count groups are interleaved (not contiguous) as well as sorted (the PMC's layout)."""

from __future__ import annotations

import numpy as np
import pytest

from solvers.mdp import (
    CHUNK_ROWS,
    bellman_block,
    bellman_blocks,
    group_members,
    local_blocks,
    value_iteration,
)


def bellman_by_formula(cost, group_of, transition, gamma, values):
    """C'[i] = sum_g T[g(i), g] * min_{j in g} (cost[i, j] + gamma * C[j]), loop by loop."""
    new = np.zeros(len(values))
    for i in range(len(values)):
        for g in range(transition.shape[0]):
            members = [j for j in range(len(values)) if group_of[j] == g]
            if members and transition[group_of[i], g] > 0:
                new[i] += transition[group_of[i], g] * min(cost[i, j] + gamma * values[j] for j in members)
    return new


@pytest.mark.parametrize("layout", ["sorted", "interleaved"])
def test_value_iteration_equals_the_formula(layout):
    rng = np.random.default_rng(7)
    n, groups = 12, 3
    group_of = np.repeat(np.arange(groups), n // groups)
    if layout == "interleaved":
        group_of = rng.permutation(group_of)
    transition = rng.random((groups, groups)) * (rng.random((groups, groups)) < 0.7)
    transition[np.arange(groups), np.arange(groups)] += 0.1  # every row moves somewhere
    transition /= transition.sum(axis=1, keepdims=True)
    cost = rng.random((n, n)) * 5
    values = np.zeros(n)
    for _ in range(200):
        values = bellman_by_formula(cost, group_of, transition, 0.8, values)
    for size in (1, 5, n):  # blocks of rows: slices and index arrays both occur
        got = value_iteration(local_blocks(cost, size), group_of, transition, 0.8, tol=1e-12)
        assert got.converged
        np.testing.assert_allclose(got.values, values, rtol=1e-9)


def one_shot_update(cost, group_of, transition, gamma, values):
    """The update with every sum formed at once over the whole matrix (what bellman_block did
    before it formed the sums CHUNK_ROWS rows at a time), groups in order."""
    new = np.zeros(len(values))
    for g in range(transition.shape[0]):
        members = np.flatnonzero(group_of == g)
        used = transition[group_of, g] > 0
        if members.size and used.any():
            best = (cost[np.ix_(used, members)] + gamma * values[members]).min(axis=1)
            new[used] += transition[group_of[used], g] * best
    return new


@pytest.mark.parametrize("layout", ["sorted", "interleaved"])
def test_bellman_blocks_equal_the_one_shot_update_bit_for_bit(layout):
    """More rows than CHUNK_ROWS in one block, and the rows cut into blocks at random places: the
    new values are the one-shot update's to the last bit (the PMC table must not change)."""
    rng = np.random.default_rng(3)
    n, groups = 3 * CHUNK_ROWS + 17, 4
    group_of = np.sort(rng.integers(0, groups, n))
    if layout == "interleaved":
        group_of = rng.permutation(group_of)
    transition = rng.random((groups, groups)) * (rng.random((groups, groups)) < 0.6)
    transition[np.arange(groups), np.arange(groups)] += 0.1
    transition /= transition.sum(axis=1, keepdims=True)
    cost = rng.random((n, n)) * 100
    values = rng.random(n) * 50
    expected = one_shot_update(cost, group_of, transition, 0.8, values)
    members = group_members(group_of, groups)
    for cuts in ([], [CHUNK_ROWS], sorted(rng.choice(np.arange(1, n), 5, replace=False).tolist())):
        bounds = [0, *cuts, n]
        blocks = [(np.arange(a, b), cost[a:b]) for a, b in zip(bounds, bounds[1:])]
        got = np.concatenate(bellman_blocks(blocks, values, group_of, members, transition, 0.8))
        assert got.tobytes() == expected.tobytes()
    rows, alone = bellman_block((np.arange(n), cost), values, group_of, members, transition, 0.8)
    assert alone.tobytes() == expected.tobytes() and rows.tolist() == list(range(n))
