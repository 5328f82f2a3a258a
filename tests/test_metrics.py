"""Metrics against values worked out by hand (design section 5)."""

import pytest

from albic import KeyGroup, Node, Snapshot, Traffic
from albic.core import metrics as m
from albic.core.checks import plain_type_problems

# n1 (capacity 1), n2 (capacity 2), n3 (removing). Total load 12 over active capacity 3: mean 4.
SNAP = Snapshot(
    nodes=[Node("n1"), Node("n2", capacity=2.0), Node("n3", removing=True)],
    key_groups=[
        KeyGroup("a", "x", 4.0, 100.0),
        KeyGroup("b", "x", 2.0, 50.0),
        KeyGroup("c", "y", 6.0, 30.0),
        KeyGroup("d", "y", 0.0, 20.0),
    ],
    assignment={"a": "n1", "b": "n2", "c": "n3", "d": "n2"},
    traffic=[Traffic("a", "b", 3.0), Traffic("c", "d", 1.0), Traffic("a", "c", 6.0)],
)
# After: c leaves the removing node for n2, so n1 carries 4 (u=4) and n2 carries 8 (u=4).
AFTER = {"a": "n1", "b": "n2", "c": "n2", "d": "n2"}


def test_current_placement():
    # utilisations: n1 4/1 = 4, n2 2/2 = 1; the removing node's 6 counts in the mean only.
    assert m.node_loads(SNAP).tolist() == [4.0, 2.0, 6.0]
    assert m.utilisation(SNAP).tolist() == [4.0, 1.0, 6.0]
    assert m.mean_utilisation(SNAP) == 4.0
    assert m.load_distance(SNAP) == 3.0  # |1 - 4|
    assert m.load_distance_pct(SNAP) == 75.0
    assert m.imbalance(SNAP) == 1.5  # 4 - (4 + 1) / 2
    assert m.skew(SNAP) == 1.6  # 4 / 2.5
    assert m.removing_load(SNAP) == 6.0
    assert m.collocation_factor(SNAP) == 0.0
    assert m.remote_traffic(SNAP) == 10.0


def test_after_placement():
    assert m.load_distance(SNAP, AFTER) == 0.0
    assert m.imbalance(SNAP, AFTER) == 0.0
    assert m.skew(SNAP, AFTER) == 1.0
    assert m.removing_load(SNAP, AFTER) == 0.0
    assert m.moves(SNAP, AFTER) == 1
    assert m.migration_cost(SNAP, AFTER) == 30.0
    assert m.migration_cost_pct(SNAP, AFTER) == 15.0  # 30 of 200
    assert m.collocation_factor(SNAP, AFTER) == pytest.approx(0.1)  # only c -> d is local
    assert m.remote_traffic(SNAP, AFTER) == pytest.approx(9.0)
    assert m.effective_load(SNAP, AFTER, remote_cost=0.5) == pytest.approx(16.5)
    assert m.load_index(SNAP, AFTER, remote_cost=0.5) == pytest.approx(16.5 / 12)
    assert m.load_index(SNAP, AFTER, remote_cost=0.5, reference=33.0) == pytest.approx(0.5)


def test_placements_may_be_given_as_index_arrays():
    where = m.node_of(SNAP, AFTER)
    assert where.tolist() == [0, 1, 1, 1]
    assert m.load_distance(SNAP, where) == m.load_distance(SNAP, AFTER)


def test_degenerate_cases_have_defined_values():
    empty = Snapshot([Node("n1"), Node("n2")], [KeyGroup("a", "x", 0.0)], {"a": "n1"})
    assert m.load_distance_pct(empty) == 0.0
    assert m.skew(empty) == 1.0
    assert m.collocation_factor(empty) == 1.0  # no traffic: nothing crosses the network
    assert m.migration_cost_pct(empty, {"a": "n2"}) == 0.0  # no state at all
    assert m.load_index(empty, remote_cost=1.0) == 1.0


def test_plan_metrics_are_plain_python_and_include_before_values():
    out = m.plan_metrics(SNAP, AFTER)
    assert plain_type_problems(out, "metrics") == []
    assert out["load_distance_before"] == 3.0 and out["load_distance"] == 0.0
    assert out["moves"] == 1 and out["migration_cost"] == 30.0
