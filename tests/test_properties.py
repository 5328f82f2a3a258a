"""Properties over hypothesis-generated snapshots: I/O, metrics and every registered planner."""

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from albic import available_planners, get_planner
from albic.core import metrics
from albic.io import snapshot_from_dict, snapshot_to_dict
from albic.testing import snapshots

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(snapshots())
def test_generated_snapshots_are_valid_and_round_trip_through_json(snapshot):
    snapshot.validate()
    text = json.dumps(snapshot_to_dict(snapshot))
    assert snapshot_from_dict(json.loads(text)) == snapshot


@SETTINGS
@given(snapshots(), st.randoms(use_true_random=False))
def test_metrics_match_a_direct_computation(snapshot, rnd):
    active = [n for n in snapshot.nodes if not n.removing]
    placement = {
        kg.id: (rnd.choice(active).id if rnd.random() < 0.5 else snapshot.assignment[kg.id])
        for kg in snapshot.key_groups
    }
    load = {n.id: 0.0 for n in snapshot.nodes}
    for kg in snapshot.key_groups:
        load[placement[kg.id]] += kg.load
    mean = sum(load.values()) / sum(n.capacity for n in active)
    util = [load[n.id] / n.capacity for n in active]
    assert math.isclose(
        metrics.load_distance(snapshot, placement), max(abs(u - mean) for u in util), abs_tol=1e-9
    )
    assert math.isclose(
        metrics.imbalance(snapshot, placement), max(util) - sum(util) / len(util), abs_tol=1e-9
    )
    moved = [kg for kg in snapshot.key_groups if placement[kg.id] != snapshot.assignment[kg.id]]
    assert metrics.moves(snapshot, placement) == len(moved)
    assert metrics.migration_cost(snapshot, placement) == pytest.approx(sum(k.state_size for k in moved))
    total = sum(t.rate for t in snapshot.traffic)
    local = sum(t.rate for t in snapshot.traffic if placement[t.src] == placement[t.dst])
    expected = local / total if total else 1.0
    assert metrics.collocation_factor(snapshot, placement) == pytest.approx(expected)


@pytest.mark.parametrize("name", sorted(available_planners()))
def test_every_planner_keeps_the_contract_on_generated_snapshots(name):
    planner = get_planner(name)
    budgeted = planner.clone(max_moves=2) if planner.tags().budget else planner

    @SETTINGS
    @given(snapshots())
    def run(snapshot):
        for p in (planner, budgeted):
            try:
                plan = p.plan(snapshot)  # check_plan inside raises PlannerBugError on any breach
            except TypeError as err:  # UnsupportedSnapshotError is a TypeError
                assert "cannot plan this snapshot" in str(err)
                continue
            assert set(plan.assignment) == {kg.id for kg in snapshot.key_groups}

    run()
