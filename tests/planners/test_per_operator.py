"""SSM and MTM on a snapshot of several operators and no `operator`: planned operator by operator."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from albic.base.errors import UnsupportedSnapshotError
from albic.core import checks
from albic.core.model import KeyGroup, Node, PlanStatus, Snapshot
from albic.core.planner import get_planner


def two_operators(seed=0, m=5, nodes=3):
    """Operators 'a' and 'b' with m key groups each, both on consecutive blocks of the nodes."""
    rng = np.random.default_rng(seed)
    kgs = [
        KeyGroup(f"{op}/{i}", op, float(rng.integers(1, 9)), float(rng.integers(1, 5)), index=i)
        for op in "ab"
        for i in range(m)
    ]
    node_ids = [f"n{j}" for j in range(nodes)]
    assignment = {
        f"{op}/{i}": node_ids[min(i * (nodes - 1) // m, nodes - 2)] for op in "ab" for i in range(m)
    }  # the last node is new: it holds nothing
    return Snapshot([Node(n) for n in node_ids], kgs, assignment)


def interval_assignments(snapshot, operator, m, node_ids):
    """Every assignment of operator's m key groups to contiguous runs (one run per node at most)."""
    for owners in itertools.product(node_ids, repeat=m):
        runs = [n for n, _ in itertools.groupby(owners)]
        if len(runs) == len(set(runs)):
            yield {f"{operator}/{i}": owners[i] for i in range(m)}


def brute_force_cost(snapshot, op, tau):
    """The least state moved by a contiguous split of operator op within its cap, or None."""
    node_ids = [n.id for n in snapshot.nodes]
    kgs = [kg for kg in snapshot.key_groups if kg.operator == op]
    cap = (1 + tau) * sum(kg.load for kg in kgs) / len(node_ids)
    best = None
    for part in interval_assignments(snapshot, op, len(kgs), node_ids):
        loads = {}
        for kg in kgs:
            loads.setdefault(part[kg.id], []).append(kg.load)
        if any(len(v) > 1 and sum(v) > cap + 1e-9 for v in loads.values()):
            continue
        moved = sum(kg.state_size for kg in kgs if part[kg.id] != snapshot.assignment[kg.id])
        best = moved if best is None else min(best, moved)
    return best


@pytest.mark.parametrize("name", ["ssm", "mtm"])
@pytest.mark.parametrize("seed", range(6))
def test_each_operator_gets_its_own_optimal_intervals(name, seed):
    snapshot = two_operators(seed)
    tau = 0.3
    plan = get_planner(name, tau=tau).plan(snapshot)
    assert plan.details["per_operator"] is True and plan.details["operators"] == ["a", "b"]
    checks.check_plan(snapshot, plan)
    costs = {op: brute_force_cost(snapshot, op, tau) for op in "ab"}
    if None in costs.values():  # one operator cannot be split within its cap
        assert plan.status == PlanStatus.INFEASIBLE and plan.moves == ()
        return
    assert plan.status == PlanStatus.OPTIMAL
    assert plan.metrics["migration_cost"] == pytest.approx(sum(costs.values()))
    assert plan.objective == pytest.approx(sum(costs.values()))
    for op in "ab":
        # The operator's own plan (operator named) is today's behaviour; the merged plan keeps it.
        alone = get_planner(name, tau=tau, operator=op).plan(snapshot)
        assert "per_operator" not in alone.details
        ids = [kg.id for kg in snapshot.key_groups if kg.operator == op]
        assert {k: alone.assignment[k] for k in ids} == {k: plan.assignment[k] for k in ids}


def test_the_brute_force_sees_both_outcomes():
    outcomes = {
        None in (brute_force_cost(two_operators(s), "a", 0.3), brute_force_cost(two_operators(s), "b", 0.3))
        for s in range(6)
    }
    assert outcomes == {True, False}


def test_naming_an_operator_leaves_the_others_where_they_are():
    kgs = [KeyGroup(f"{op}/{i}", op, 1.0, 1.0, index=i) for op in "ab" for i in range(6)]
    assignment = {kg.id: "n0" if kg.index < 3 else "n1" for kg in kgs}  # n2 is new
    snapshot = Snapshot([Node("n0"), Node("n1"), Node("n2")], kgs, assignment)
    plan = get_planner("ssm", operator="a", tau=0.0).plan(snapshot)
    assert all(
        plan.assignment[kg.id] == snapshot.assignment[kg.id]
        for kg in snapshot.key_groups
        if kg.operator == "b"
    )
    assert any(m.key_group.startswith("a/") for m in plan.moves)


def test_an_operator_outside_the_model_is_named():
    snapshot = two_operators(4)
    scattered = dict(snapshot.assignment, **{"b/0": "n1", "b/1": "n0", "b/2": "n1"})
    snapshot = Snapshot(snapshot.nodes, snapshot.key_groups, scattered)
    with pytest.raises(UnsupportedSnapshotError, match="operator by operator, operator 'b'.*contiguous"):
        get_planner("ssm").plan(snapshot)


def test_an_infeasible_operator_makes_the_whole_plan_infeasible_and_moves_nothing():
    # Operator 'b' has 3 heavy key groups that need 3 nodes; only 2 are active.
    kgs = [KeyGroup(f"a/{i}", "a", 1.0, 1.0, index=i) for i in range(2)]
    kgs += [KeyGroup(f"b/{i}", "b", load, 1.0, index=i) for i, load in enumerate([5.0, 5.0, 5.0])]
    assignment = {"a/0": "n0", "a/1": "n1", "b/0": "n0", "b/1": "n0", "b/2": "n1"}
    snapshot = Snapshot([Node("n0"), Node("n1")], kgs, assignment)
    plan = get_planner("ssm", tau=0.0).plan(snapshot)
    assert plan.status == PlanStatus.INFEASIBLE
    assert plan.details["by_operator"]["b"]["status"] == "INFEASIBLE"
    assert "'b'" in plan.details["reason"] and plan.moves == ()


def test_mtm_with_a_table_needs_an_operator(tmp_path):
    with pytest.raises(UnsupportedSnapshotError, match="name it with the 'operator' parameter"):
        get_planner("mtm", table=str(tmp_path)).plan(two_operators(5))
