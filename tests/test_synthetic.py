"""albic.evaluation.synthetic against the generator's description (albic.txt sections 5.1 and 5.3)."""

import numpy as np
import pytest

from albic.core import metrics
from albic.evaluation.synthetic import perturb, synthetic_snapshot


def test_even_allocation_and_shifted_nodes():
    snap = synthetic_snapshot(20, 400, 10, varies=0.4, seed=7)
    counts = np.bincount(snap.arrays().current, minlength=20)
    assert counts.tolist() == [20] * 20  # evenly allocated
    loads = metrics.node_loads(snap)
    base = 50.0
    dev = loads / base - 1
    # 20% of the nodes (4) are shifted by +-varies/2 = +-20%: two up, two down; the others keep
    # the +-5% jitter of their key groups, whose sum stays within +-5% of the node load.
    assert sorted(np.round(dev[np.abs(dev) > 0.1], 1).tolist()) == [-0.2, -0.2, 0.2, 0.2]
    assert np.all(np.abs(dev[np.abs(dev) <= 0.1]) <= 0.05)


def test_one_to_one_share_and_determinism():
    snap = synthetic_snapshot(10, 100, 5, one_to_one=0.4, seed=1)
    pairs = [t for t in snap.traffic if t.rate == 100.0]
    members = {t.src for t in pairs} | {t.dst for t in pairs}
    assert len(members) == 40  # 40% of the key groups
    for t in pairs:  # key group i of operator j to key group i of operator j + 1
        (op_s, i_s), (op_d, i_d) = (x.split("/") for x in (t.src, t.dst))
        assert i_s == i_d and int(op_d[2:]) == int(op_s[2:]) + 1
    again = synthetic_snapshot(10, 100, 5, one_to_one=0.4, seed=1)
    assert again.key_groups == snap.key_groups and again.traffic == snap.traffic


def test_perturb_changes_a_fifth_of_the_nodes_by_at_most_two_percent():
    snap = synthetic_snapshot(10, 100, 5, seed=2)
    nxt = perturb(snap, seed=4)
    ratio = metrics.node_loads(nxt) / metrics.node_loads(snap)
    changed = np.abs(ratio - 1) > 1e-12
    assert changed.sum() == 2 and np.all(np.abs(ratio - 1) <= 0.02 + 1e-12)
    assert nxt.period == 1


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"n_nodes": 3, "n_key_groups": 10}, "multiple of n_nodes"),
        ({"varies": 1.5}, "varies"),
        ({"n_operators": 0}, "n_operators"),
    ],
)
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        synthetic_snapshot(**kwargs)
