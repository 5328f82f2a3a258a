"""The counting lower bound of solvers/balance_bound.py against brute force: never above the best
load distance any plan within the budget reaches, and often equal to it."""

import itertools

import numpy as np
import pytest

from solvers.balance_bound import effective_moves, key_group_floor, load_distance_bound


def _best(w, cur, cap, removing, max_moves, sizes=None, max_cost=None):
    """The smallest load distance over every placement within the budgets (nothing onto a
    removing node, as the planners do; the bound does not need that rule)."""
    active = ~removing
    mean = w.sum() / cap[active].sum()
    best = np.inf
    for placement in itertools.product(range(cap.size), repeat=w.size):
        p = np.array(placement)
        moved = p != cur
        if moved.sum() > max_moves or np.any(removing[p] & moved):
            continue
        if max_cost is not None and sizes[moved].sum() > max_cost:
            continue
        u = np.bincount(p, weights=w, minlength=cap.size) / cap
        best = min(best, np.abs(u[active] - mean).max())
    return best


def _instances(count, seed):
    rng = np.random.default_rng(seed)
    for trial in range(count):
        n_nodes, n_kg = int(rng.integers(2, 4)), int(rng.integers(2, 7))
        w = rng.integers(0, 6, n_kg).astype(float) if trial % 2 else rng.uniform(0, 5, n_kg)
        cap = rng.choice([1.0, 2.0], n_nodes) if trial % 3 == 0 else np.ones(n_nodes)
        removing = np.zeros(n_nodes, dtype=bool)
        removing[0] = trial % 5 == 0
        yield (
            w,
            rng.integers(0, n_nodes, n_kg),
            cap,
            removing,
            int(rng.integers(0, 4)),
            rng.integers(1, 4, n_kg).astype(float),
        )


def test_never_above_the_brute_force_optimum_and_often_equal():
    cases = tight = positive = 0
    for w, cur, cap, removing, budget, _sizes in _instances(160, seed=1):
        best = _best(w, cur, cap, removing, budget)
        bound = load_distance_bound(w, cur, cap, removing, max_moves=budget)
        assert bound <= best + 1e-9, (w, cur, cap, removing, budget, bound, best)
        cases += 1
        positive += bound > 0
        tight += bound >= best * (1 - 1e-5) - 1e-12
    # A bound that is always 0 would pass the first assertion: it must prove something.
    assert cases == 160 and positive >= 60 and tight >= 60, (positive, tight)


def test_a_cost_budget_counts_as_the_moves_it_can_pay_for():
    for w, cur, cap, removing, budget, sizes in _instances(60, seed=2):
        max_cost = float(budget * 2)
        best = _best(w, cur, cap, removing, w.size, sizes, max_cost)
        bound = load_distance_bound(w, cur, cap, removing, max_cost=max_cost, state_sizes=sizes)
        assert bound <= best + 1e-9
    assert effective_moves(np.array([3.0, 1.0, 2.0]), None, 3.0) == 2
    assert effective_moves(np.array([3.0, 1.0, 2.0]), 1, 3.0) == 1
    assert effective_moves(np.array([3.0]), None, None) == np.inf


def test_worked_example_and_more_moves_never_raise_it():
    # Loads 6 and 2 around a mean of 4 in key groups of 1: each move closes the gap by 2.
    w, on = np.ones(8), np.array([0] * 6 + [1] * 2)
    bounds = [load_distance_bound(w, on, np.ones(2), np.zeros(2, bool), max_moves=m) for m in range(4)]
    assert bounds == pytest.approx([2.0, 1.0, 0.0, 0.0], abs=1e-5)
    assert all(b <= a for a, b in zip(bounds, bounds[1:]))


def test_the_key_group_floor_is_never_above_any_placement_and_often_the_optimum():
    cases = tight = positive = 0
    for w, _cur, cap, removing, _budget, _sizes in _instances(160, seed=3):
        floor, k = key_group_floor(w, cap, removing)
        # Any placement at all, moves onto removing nodes included: the floor needs no budget.
        active, mean = ~removing, w.sum() / cap[~removing].sum()
        every = min(
            np.abs(np.bincount(np.array(p), weights=w, minlength=cap.size)[active] / cap[active] - mean).max()
            for p in itertools.product(range(cap.size), repeat=w.size)
        )
        assert floor <= every + 1e-9, (w, cap, removing, floor, every)
        assert (k == -1) == (floor == 0) and (k == -1 or w[k] == w.max())
        cases += 1
        positive += floor > 0
        tight += floor > 0 and floor >= every * (1 - 1e-9)
    assert cases == 160 and positive >= 30 and tight >= 20, (positive, tight)


def test_the_floor_by_hand():
    # Heaviest load 7 on two nodes of capacity 1 and 2 (mean 9 / 3 = 3): 7 / 2 - 3 = 0.5.
    assert key_group_floor(np.array([7.0, 1.0, 1.0]), np.array([1.0, 2.0]), np.zeros(2, bool)) == (0.5, 0)
    # With a removing node it may sit there instead: load 9 alone, four active nodes (mean 9 / 4):
    # on an active node 9 - 2.25 = 6.75, on the removing one every active node is 2.25 below.
    removing = np.array([False, False, False, False, True])
    assert key_group_floor(np.array([9.0, 0.0]), np.ones(5), removing) == (2.25, 0)
    assert key_group_floor(np.ones(4), np.ones(2), np.zeros(2, bool)) == (0.0, -1)
