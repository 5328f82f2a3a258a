"""The Bellman update of albic.solvers.mdp against a plain transcription of its formula, on states whose
node-count groups are interleaved (not contiguous) as well as sorted (the PMC's layout)."""

from __future__ import annotations

import numpy as np
import pytest

from albic.solvers.mdp import (
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
    group_of, transition, cost, values = instance(layout)
    n, groups = len(values), transition.shape[0]
    expected = one_shot_update(cost, group_of, transition, 0.8, values)
    members = group_members(group_of, groups)
    cut_anywhere = np.random.default_rng(0).choice(np.arange(1, n), 5, replace=False)
    for cuts in ([], [CHUNK_ROWS], sorted(cut_anywhere.tolist())):
        bounds = [0, *cuts, n]
        blocks = [(np.arange(a, b), cost[a:b]) for a, b in zip(bounds, bounds[1:])]
        got = np.concatenate(bellman_blocks(blocks, values, group_of, members, transition, 0.8))
        assert got.tobytes() == expected.tobytes()
    rows, alone = bellman_block((np.arange(n), cost), values, group_of, members, transition, 0.8)
    assert alone.tobytes() == expected.tobytes() and rows.tolist() == list(range(n))


def instance(layout, seed=3):
    """More rows than CHUNK_ROWS, four node counts, an MTM that reaches some counts from each."""
    rng = np.random.default_rng(seed)
    n, groups = 3 * CHUNK_ROWS + 17, 4
    group_of = np.sort(rng.integers(0, groups, n))
    if layout == "interleaved":
        group_of = rng.permutation(group_of)
    transition = rng.random((groups, groups)) * (rng.random((groups, groups)) < 0.6)
    transition[np.arange(groups), np.arange(groups)] += 0.1
    transition /= transition.sum(axis=1, keepdims=True)
    return group_of, transition, rng.random((n, n)) * 100, rng.random(n) * 50


@pytest.mark.parametrize("layout", ["sorted", "interleaved"])
def test_blocks_of_reached_columns_equal_the_one_shot_update_bit_for_bit(layout):
    """Blocks that store only the columns their rows read (those of the node counts their MTM rows
    reach), one block per node count and cut at random places: the one-shot update's bits."""
    group_of, transition, cost, values = instance(layout)
    expected = one_shot_update(cost, group_of, transition, 0.8, values)
    members = group_members(group_of, transition.shape[0])
    blocks = []
    for g, rows in enumerate(members):
        columns = np.flatnonzero(transition[g, group_of] > 0)
        for piece in np.array_split(rows, 3):
            blocks.append((piece, cost[np.ix_(piece, columns)], columns))
    got = np.empty(len(values))
    for (rows, *_), new in zip(blocks, bellman_blocks(blocks, values, group_of, members, transition, 0.8)):
        got[rows] = new
    assert got.tobytes() == expected.tobytes()


def test_a_block_without_a_column_its_rows_read_is_refused():
    group_of, transition, cost, values = instance("sorted")
    members = group_members(group_of, transition.shape[0])
    rows = members[0]
    columns = np.flatnonzero(transition[0, group_of] > 0)[1:]  # one state short
    with pytest.raises(ValueError, match="a block's rows reach states its columns do not hold"):
        bellman_blocks(
            [(rows, cost[np.ix_(rows, columns)], columns)], values, group_of, members, transition, 0.8
        )


def test_threads_give_the_same_values_as_one():
    group_of, transition, cost, _ = instance("interleaved")
    blocks = local_blocks(cost, 50)
    one = value_iteration(blocks, group_of, transition, 0.8, tol=1e-9)
    for threads in (2, 3, 100):
        many = value_iteration(blocks, group_of, transition, 0.8, tol=1e-9, threads=threads)
        assert many.values.tobytes() == one.values.tobytes() and many.iterations == one.iterations


def test_a_stopped_run_resumed_from_its_result_ends_where_an_uninterrupted_one_does():
    group_of, transition, cost, _ = instance("interleaved")
    blocks = local_blocks(cost, 50)
    whole = value_iteration(blocks, group_of, transition, 0.8, tol=1e-9)
    stopped = value_iteration(blocks, group_of, transition, 0.8, tol=1e-9, stop_after=3)
    assert stopped.stopped and not stopped.converged and stopped.iterations == 3
    counted = []
    resumed = value_iteration(
        blocks,
        group_of,
        transition,
        0.8,
        tol=1e-9,
        start=stopped,
        on_iteration=lambda i, *_: counted.append(i),
    )
    assert counted[0] == 4 and resumed.iterations == whole.iterations > 3 and resumed.converged
    assert resumed.values.tobytes() == whole.values.tobytes()


def test_a_sweep_that_leaves_rows_out_is_an_error_naming_them():
    """A sweep must give every row one new value: rows left out (or given twice) are named, never
    read from uninitialised memory."""
    group_of, transition = np.zeros(10, dtype=int), np.ones((1, 1))

    def leaves_out(values):
        return [(np.array([0, 1, 2, 5]), values[[0, 1, 2, 5]]), (np.array([7, 8]), values[[7, 8]])]

    with pytest.raises(ValueError, match=r"^value iteration got no new value for 4 of 10 rows: 3-4, 6, 9$"):
        value_iteration(None, group_of, transition, 0.5, sweep=leaves_out)

    def twice(values):
        return [(np.arange(10), values), (np.array([4]), values[[4]])]

    with pytest.raises(
        ValueError, match=r"^value iteration got more than one new value for 1 of 10 rows: 4$"
    ):
        value_iteration(None, group_of, transition, 0.5, sweep=twice)

    def short(values):
        return [(np.arange(10), values[:1])]

    with pytest.raises(ValueError, match=r"^value iteration got 1 new values for 10 rows$"):
        value_iteration(None, group_of, transition, 0.5, sweep=short)
