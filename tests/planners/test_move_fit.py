"""The move fit (planners/move_fit.py) against brute force: every placement of small instances
(2-4 nodes of capacity 1 or 2, up to 7 items of one or two key groups, move budgets 0-4, some
nodes forbidden to some items) enumerated, and the least load distance within the budget
compared with what the fit proves; its plans checked by an independent evaluation."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from albic.planners.milp_formulation import scale_items
from albic.planners.milp_items import Items
from albic.planners.move_fit import applies, fit_moves
from albic.planners.work import Budget


def _items(loads, homes, sizes, capacities, forbidden, budget, removing=None, max_cost=None):
    members, kg_loads, current, start = [], [], [], 0
    for load, home, size in zip(loads, homes, sizes):
        members.append(np.arange(start, start + size))
        kg_loads += [load / size] * size
        current += [home] * size
        start += size
    n = len(capacities)
    allowed = np.ones((len(loads), n), dtype=bool)
    for t, i in forbidden:
        if homes[t] != i:
            allowed[t, i] = False
    return Items(
        members,
        np.array(kg_loads, dtype=float),
        np.ones(start),
        np.array(current),
        np.array(capacities, dtype=float),
        np.zeros(n, dtype=bool) if removing is None else np.array(removing),
        allowed,
        max_moves=budget,
        max_cost=max_cost,
    )


def _distance(sc, where):
    """The model's ``d`` of a placement, in its integer units, computed here from the scaled loads."""
    n = sc.load.shape[1]
    node_load = [0] * n
    for t, i in enumerate(where.tolist()):
        node_load[i] += int(sc.load[np.array([t]), np.array([i])][0])
    return max(abs(v - sc.mean) for v in node_load)


def _moves(items, where):
    return sum(int(items.item_size[t]) for t in range(where.size) if where[t] != items.home[t])


def _brute_force(items, sc):
    """The least ``d`` over every placement within the budget and the allowed nodes."""
    n, t = items.capacities.size, np.arange(len(items.members))
    every = np.array(list(itertools.product(range(n), repeat=t.size)))
    load = np.asarray(sc.load[t])  # [item, node]
    allowed = np.asarray(items.allowed[t])
    on = every[:, :, None] == np.arange(n)  # [placement, item, node]
    ok = allowed[t, every].all(axis=1)
    ok &= ((every != items.home) * items.item_size).sum(axis=1) <= items.max_moves
    d = np.abs((on * load).sum(axis=1) - sc.mean).max(axis=1)
    return int(d[ok].min())


instances = st.integers(2, 4).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(0, 9), min_size=1, max_size=7).flatmap(
            lambda loads: st.tuples(
                st.just(loads),
                st.lists(st.integers(0, n - 1), min_size=len(loads), max_size=len(loads)),
                st.lists(st.integers(1, 2), min_size=len(loads), max_size=len(loads)),
            )
        ),
        st.lists(st.sampled_from([1, 2]), min_size=n, max_size=n),
        st.lists(st.tuples(st.integers(0, 6), st.integers(0, n - 1)), max_size=4),
        st.integers(0, 4),
    )
)


@settings(max_examples=300, deadline=None)
@given(instances)
def test_the_fit_proves_the_least_load_distance_that_brute_force_finds(instance):
    (loads, homes, sizes), capacities, forbidden, budget = instance
    forbidden = [(t, i) for t, i in forbidden if t < len(loads)]
    items = _items(loads, homes, sizes, capacities, forbidden, budget)
    sc = scale_items(items)
    fit = fit_moves(items, sc, None)
    assert fit.proven  # no clock: the search always ends
    assert fit.d == _brute_force(items, sc)
    if fit.where is None:
        assert _distance(sc, items.home) == fit.d
    else:
        assert _distance(sc, fit.where) == fit.d < _distance(sc, items.home)
        assert _moves(items, fit.where) <= budget
        assert items.evaluate(fit.where) is not None  # budget and allowed nodes, by the planner's own rules


def test_an_exact_fit_of_five_moves_is_found_and_proven():
    # Eight nodes of loads 65, 61, 81, 77, 39, 38, 62, 71 (mean 61.75) and five moves: every node
    # must end at 61 or 62 (the flights hour of the issue, in miniature: the same node loads).
    # Node 2 holds 20 + 61, node 3 holds 21 + 6 + 50, node 7 holds 6 + 3 + 62, node 0 holds 3 + 62.
    groups = [
        [3, 62],
        [61],
        [20, 61],
        [21, 6, 50],
        [39],
        [38],
        [62],
        [6, 3, 62],
    ]
    loads = [w for g in groups for w in g]
    homes = [i for i, g in enumerate(groups) for _ in g]
    items = _items(loads, homes, [1] * len(loads), [1] * 8, [], 5)
    sc = scale_items(items)
    fit = fit_moves(items, sc, None)
    assert fit.proven
    # No placement at all does better: the loads are integers summing to 494 = 2 x 61 + 6 x 62,
    # so at best two nodes hold 61 and six hold 62.
    assert sum(loads) == 494
    node_loads = np.bincount(fit.where, weights=np.array(loads, dtype=float), minlength=8)
    assert sorted(node_loads.tolist()) == [61, 61, 62, 62, 62, 62, 62, 62]
    assert _moves(items, fit.where) <= 5
    assert fit.d == _distance(sc, fit.where)  # the distance it reports is its placement's


def test_a_fit_out_of_work_returns_its_best_so_far_unproven():
    items = _items([5, 4, 3, 1, 1], [0, 0, 0, 1, 2], [1] * 5, [1, 1, 1], [], 2)
    fit = fit_moves(items, scale_items(items), Budget(0.0, deterministic=True))  # nothing to spend
    assert not fit.proven
    assert fit.where is None and fit.steps > 0


@pytest.mark.parametrize(
    "change",
    [
        {"removing": [False, False, True]},
        {"max_cost": 10.0},
        {"budget": None},
    ],
)
def test_the_fit_stays_out_where_more_than_the_load_distance_binds(change):
    args = dict(budget=2) | change
    items = _items([5, 4, 3, 1, 1], [0, 0, 0, 1, 2], [1] * 5, [1, 1, 1], [], **args)
    assert not applies(items)
    assert applies(_items([5, 4, 3, 1, 1], [0, 0, 0, 1, 2], [1] * 5, [1, 1, 1], [], 2))
