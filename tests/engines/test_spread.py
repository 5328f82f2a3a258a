"""``KeyGroup.spread``: the model and the validator reject replicas sharing a node, the planners
tagged ``spread`` never put them together (checked here independently, and for ``milp`` against
brute force), and every other planner refuses such snapshots cleanly."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from albic import InvalidSnapshotError, UnsupportedSnapshotError, available_planners, get_planner
from albic.core.checks import plan_problems
from albic.core.model import KeyGroup, Node, Snapshot
from albic.core.plan import Plan
from albic.io import snapshot_from_dict, snapshot_to_dict
from albic.testing import replica_snapshot


def kafka_like(rng, n_brokers=5, n_partitions=6, rf=3, removing=1, new=1) -> Snapshot:
    """Partitions of ``rf`` replicas on distinct random brokers; the first ``removing`` brokers are
    leaving and the last ``new`` are empty (albic.testing.replica_snapshot)."""
    return replica_snapshot(
        rng, n_nodes=n_brokers, n_partitions=n_partitions, replication=rf, removing=removing, new_nodes=new
    )


def replicas_distinct(snapshot, assignment) -> bool:
    """Independent of albic: no node holds two key groups of one spread value."""
    seen = set()
    for kg in snapshot.key_groups:
        if kg.spread is not None:
            pair = (kg.spread, assignment[kg.id])
            if pair in seen:
                return False
            seen.add(pair)
    return True


def test_the_model_rejects_replicas_on_one_node():
    snap = Snapshot(
        [Node("a"), Node("b")],
        [KeyGroup("p/0", "t", 1.0, spread="p"), KeyGroup("p/1", "t", 1.0, spread="p")],
        {"p/0": "a", "p/1": "a"},
    )
    with pytest.raises(InvalidSnapshotError, match=r"'p/0', 'p/1' of spread 'p' are on node 'a' together"):
        snap.validate()
    bad = Snapshot([Node("a")], [KeyGroup("x", "t", 1.0, spread=True)], {"x": "a"})
    assert bad.problems() == ["key group 'x': spread = True, must be a non-empty string, an int or None"]


def test_spread_survives_json_and_gets_codes():
    snap = kafka_like(np.random.default_rng(0))
    assert snapshot_from_dict(snapshot_to_dict(snap)) == snap
    codes = snap.arrays().spread
    assert codes.tolist() == [i // 3 for i in range(18)]
    plain = Snapshot([Node("a")], [KeyGroup("x", "t", 1.0)], {"x": "a"})
    assert plain.arrays().spread.tolist() == [-1] and "spread" not in snapshot_to_dict(plain)["key_groups"][0]


def test_the_validator_rejects_a_plan_that_puts_replicas_together():
    snap = Snapshot(
        [Node("a"), Node("b")],
        [KeyGroup("p/0", "t", 1.0, spread=7), KeyGroup("p/1", "t", 1.0, spread=7)],
        {"p/0": "a", "p/1": "b"},
    )
    plan = Plan("by-hand", "FEASIBLE", {"p/0": "b", "p/1": "b"})
    assert (
        "key groups 'p/0', 'p/1' of spread 7 would be on node 'b' together; key groups of one "
        "spread must be on distinct nodes" in plan_problems(snap, plan)
    )


HONOURING = {"milp", "albic", "flux"}


@pytest.mark.parametrize("name", sorted(available_planners()))
def test_planners_honour_spread_or_refuse_cleanly(name):
    planner = get_planner(name)
    snaps = [
        kafka_like(np.random.default_rng(seed), removing=seed % 2, new=(seed + 1) % 2) for seed in range(4)
    ]
    if not planner.tags().spread:
        assert name not in HONOURING
        with pytest.raises(UnsupportedSnapshotError, match="'spread' values"):
            planner.plan(snaps[0])
        return
    for snap in snaps:
        for budget in ({}, {"max_moves": 2}):
            plan = get_planner(name, **budget).plan(snap)  # check_plan ran inside
            assert replicas_distinct(snap, plan.assignment)
            # Nothing onto removing brokers, and with no budget nothing left on them.
            removing = {n.id for n in snap.nodes if n.removing}
            if not budget and name != "albic":
                assert not removing & set(plan.assignment.values())


def test_the_honouring_planners_are_tagged():
    assert {n for n, cls in available_planners().items() if cls().tags().spread} == HONOURING


def brute_force_load_distance(snap, max_moves=None):
    """The least load distance over every placement that keeps replicas apart (plain Python)."""
    active = [n.id for n in snap.nodes if not n.removing]
    options = [
        active + ([snap.assignment[k.id]] if snap.assignment[k.id] not in active else [])
        for k in snap.key_groups
    ]
    best = math.inf
    for targets in itertools.product(*options):
        assignment = dict(zip((k.id for k in snap.key_groups), targets))
        if not replicas_distinct(snap, assignment):
            continue
        if max_moves is not None and sum(assignment[k] != v for k, v in snap.assignment.items()) > max_moves:
            continue
        load = dict.fromkeys(active, 0.0)
        for k in snap.key_groups:
            if assignment[k.id] in load:
                load[assignment[k.id]] += k.load
        mean = sum(k.load for k in snap.key_groups) / len(active)
        best = min(best, max(abs(v - mean) for v in load.values()))
    return best


@pytest.mark.parametrize("seed", range(4))
def test_milp_matches_brute_force_with_spread(seed):
    rng = np.random.default_rng(seed)
    snap = kafka_like(rng, n_brokers=3, n_partitions=3, rf=2, removing=0, new=1)
    for max_moves in (None, 2):
        plan = get_planner("milp", max_moves=max_moves).plan(snap)
        assert plan.status.value == "OPTIMAL"
        assert math.isclose(
            plan.metrics["load_distance"], brute_force_load_distance(snap, max_moves), abs_tol=1e-9
        )


def test_flux_leaves_a_replica_where_every_other_node_has_its_sibling():
    # Partition p has replicas on a (removing) and b; c already holds... nothing of p, so p/0 goes
    # to c even though b is emptier; q/0 cannot leave a: b and c both hold a replica of q.
    snap = Snapshot(
        [Node("a", removing=True), Node("b"), Node("c")],
        [
            KeyGroup("p/0", "t", 5.0, spread="p"),
            KeyGroup("p/1", "t", 5.0, spread="p"),
            KeyGroup("q/0", "t", 1.0, spread="q"),
            KeyGroup("q/1", "t", 1.0, spread="q"),
            KeyGroup("q/2", "t", 1.0, spread="q"),
            KeyGroup("x", "t", 9.0),
        ],
        {"p/0": "a", "p/1": "b", "q/0": "a", "q/1": "b", "q/2": "c", "x": "c"},
    )
    plan = get_planner("flux").plan(snap)
    assert plan.assignment["p/0"] == "c" and plan.assignment["q/0"] == "a"
