"""The Bellman update of solvers.mdp against a plain transcription of its formula, on states whose
node-count groups are interleaved (not contiguous) as well as sorted (the PMC's layout)."""

from __future__ import annotations

import numpy as np
import pytest

from solvers.mdp import local_blocks, value_iteration


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
