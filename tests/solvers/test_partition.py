"""albic.solvers.partition: balance, cut quality and determinism, checked independently."""

import numpy as np
import pytest
import scipy.sparse

from albic.solvers.partition import balanced_partition


def _ring_of_cliques(n_cliques, size, inner=10.0, outer=1.0):
    src, dst, w = [], [], []
    for c in range(n_cliques):
        members = range(c * size, (c + 1) * size)
        for a in members:
            for b in members:
                if a < b:
                    src.append(a), dst.append(b), w.append(inner)
        src.append((c + 1) * size - 1), dst.append(((c + 1) % n_cliques) * size), w.append(outer)
    n = n_cliques * size
    return scipy.sparse.coo_array((w, (src, dst)), shape=(n, n))


def test_cliques_are_kept_whole_and_parts_balanced():
    graph = _ring_of_cliques(4, 5)
    labels = balanced_partition(graph, np.ones(20), 4, seed=1)
    for c in range(4):
        assert len(set(labels[c * 5 : (c + 1) * 5].tolist())) == 1  # no clique edge cut
    assert sorted(np.bincount(labels).tolist()) == [5, 5, 5, 5]


def test_target_shares_are_respected_within_metis_tolerance():
    rng = np.random.default_rng(0)
    n = 60
    graph = scipy.sparse.random_array((n, n), density=0.1, random_state=1)
    weights = rng.uniform(1, 2, n)
    labels = balanced_partition(graph, weights, 2, target_shares=np.array([1.0, 2.0]), seed=0)
    share = weights[labels == 0].sum() / weights.sum()
    assert share == pytest.approx(1 / 3, abs=0.06)


def test_deterministic_under_a_seed_and_trivial_cases():
    graph = _ring_of_cliques(3, 4)
    a = balanced_partition(graph, np.ones(12), 3, seed=5)
    b = balanced_partition(graph, np.ones(12), 3, seed=5)
    assert a.tolist() == b.tolist()
    assert balanced_partition(graph, np.ones(12), 1).tolist() == [0] * 12
    assert balanced_partition(graph, np.ones(12), 12).tolist() == list(range(12))


def test_without_edges_weights_are_spread_greedily():
    empty = scipy.sparse.coo_array((4, 4))
    labels = balanced_partition(empty, np.array([4.0, 3.0, 2.0, 1.0]), 2)
    sums = np.bincount(labels, weights=[4.0, 3.0, 2.0, 1.0])
    assert sorted(sums.tolist()) == [5.0, 5.0]


def test_bad_input():
    with pytest.raises(ValueError, match="square graph"):
        balanced_partition(scipy.sparse.coo_array((2, 3)), np.ones(2), 2)
    with pytest.raises(ValueError, match="n_parts must be >= 1"):
        balanced_partition(scipy.sparse.coo_array((2, 2)), np.ones(2), 0)
