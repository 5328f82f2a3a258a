"""Consistent grouping: delegation invariants, the paper's heterogeneous experiments, the planner."""

import numpy as np
import pytest

from albic import InvalidParameterError, KeyGroup, Node, Snapshot
from albic.core import metrics
from albic.testing import check_planner
from planners.consistent_grouping import ConsistentGroupingPlanner, ConsistentGroupingRouter, Delegation
from planners.partitioners import PARTITIONERS
from solvers.supermarket import StaticRouter, simulate


def test_delegation_pairs_every_removal_with_an_addition_fcfs():
    d = Delegation()
    d.report(busy=[5, 2], idle=[1])
    assert list(d.pairs()) == [(5, 1)]
    d.report(busy=[7, 2], idle=[0, 3])  # 2 keeps its place ahead of the newcomer 7
    assert list(d.pairs()) == [(2, 0), (7, 3)]
    d.report(busy=[4], idle=[])
    d.report(busy=[], idle=[6])  # 4 recovered before anyone was idle: it leaves the busy queue
    assert list(d.pairs()) == [] and d.idle_queue == [6]


def zipf_keys(n, seed=0, keys=10_000, z=1.0):
    p = 1.0 / np.arange(1, keys + 1) ** z
    return np.random.default_rng(seed).choice(keys, size=n, p=p / p.sum())


HETEROGENEOUS = [5, 5, 5, 1, 1, 1, 1, 1, 1, 1]  # Figure 8: 10 workers, 3 of them 5x more powerful


def run(name, keys, caps, **kwargs):
    router = (
        ConsistentGroupingRouter(keys, len(caps))
        if name == "cg"
        else StaticRouter(PARTITIONERS[name](keys, len(caps)))
    )
    return router, simulate(router, len(keys), caps, slot=1000, **kwargs)


def test_delegation_never_changes_the_number_of_virtual_workers():
    router, _ = run("cg", zipf_keys(100_000), HETEROGENEOUS)
    assert router.moves, "the heterogeneous cluster must trigger delegation"
    assert len(router.owner) == 100
    assert sum(len(h) for h in router.held) == 100
    assert sorted(v for h in router.held for v in h) == list(range(100))
    for _, source, target in router.moves:
        assert source != target


def test_figure_8_cg_utilisation_spread_near_zero_with_unbounded_queues():
    keys = zipf_keys(200_000)
    _, kg = run("kg", keys, HETEROGENEOUS)
    _, cg = run("cg", keys, HETEROGENEOUS)
    assert cg.spread()[-1] <= 0.01 * kg.spread()[-1]
    assert cg.spread("queue_length")[-1] <= 0.01 * kg.spread("queue_length")[-1]
    assert cg.throughput[-20:].mean() > 0.95  # it keeps up with one message per unit of time


def test_figure_8_with_back_pressure_gives_the_papers_ratios_within_a_factor_of_two():
    """With unbounded queues KG's mean latency only grows with the run (about 190x CG's here), so
    "CG at most half of KG" could not fail. Bounded queues with back-pressure (queue_bound=64) give
    finite ratios, compared with the paper's Storm measurements (abstract, section 7 Q4): CG has
    3.44x lower latency and 2x higher throughput than KG. Measured: 3.95x and 2.39x."""
    keys = zipf_keys(200_000)
    kg, sg, cg = (run(name, keys, HETEROGENEOUS, queue_bound=64)[1] for name in ("kg", "sg", "cg"))
    latency = kg.latency.mean() / cg.latency.mean()
    throughput = cg.overall_throughput() / kg.overall_throughput()
    assert 3.44 / 2 <= latency <= 3.44 * 2
    assert 2.0 / 1.5 <= throughput <= 2.0 * 1.5
    assert cg.overall_throughput() > 0.95 > 0.7 > sg.overall_throughput()  # SG ignores capacity too
    # a full queue of the slowest worker is the longest wait
    assert kg.queue_length.max() <= 64 and kg.latency.max() <= 64 / kg.capacities.min() + 1e-6


def test_figure_12_cg_adapts_when_capacities_change():
    keys = zipf_keys(240_000, seed=1)
    changes = [(80_000, [1, 1, 1, 1, 1, 1, 1, 5, 5, 5]), (160_000, [1, 5, 1, 5, 1, 5, 1, 1, 1, 1])]
    _, cg = run("cg", keys, HETEROGENEOUS, changes=changes)
    _, kg = run("kg", keys, HETEROGENEOUS, changes=changes)
    late = cg.latency_by_slot()
    # after each change CG re-balances: the last slots before the next change are fast again
    for end in (79, 159, 239):
        assert late[end - 5 : end + 1].mean() < 0.05 * kg.latency_by_slot()[end]


# -- the planner on snapshots ---------------------------------------------------------------------


def snap(nodes, loads, placement, state=1.0):
    kgs = [KeyGroup(f"v{i}", "op", float(w), state) for i, w in enumerate(loads)]
    return Snapshot(nodes, kgs, {f"v{i}": n for i, n in enumerate(placement)})


def test_capacity_proportional_shares_after_delegation():
    s = snap([Node("a", capacity=3.0), Node("b")], [1.0] * 8, ["a"] * 4 + ["b"] * 4)
    plan = ConsistentGroupingPlanner().plan(s)
    assert list(plan.assignment.values()).count("a") == 6
    assert metrics.load_distance(s, plan.assignment) == 0.0


def test_an_added_worker_only_receives_and_old_workers_exchange_nothing():
    s = snap([Node("a"), Node("b"), Node("c")], [1.0] * 12, ["a"] * 7 + ["b"] * 5)
    plan = ConsistentGroupingPlanner().plan(s)
    assert plan.moves and all(m.target == "c" for m in plan.moves)
    assert list(plan.assignment.values()).count("c") == 4
    assert plan.details["scaling"] is True


def test_removing_workers_are_drained_to_the_furthest_below_share():
    s = snap(
        [Node("a"), Node("b"), Node("gone", removing=True)], [1.0] * 6, ["a", "a", "a", "b", "gone", "gone"]
    )
    plan = ConsistentGroupingPlanner().plan(s)
    assert sorted(plan.assignment.values()) == ["a", "a", "a", "b", "b", "b"]


def test_budgets_stop_the_moves():
    s = snap([Node("a", capacity=3.0), Node("b")], [1.0] * 8, ["a"] * 4 + ["b"] * 4, state=10.0)
    assert len(ConsistentGroupingPlanner(max_moves=1).plan(s).moves) == 1
    assert len(ConsistentGroupingPlanner(max_migration_cost=15.0).plan(s).moves) == 1


def test_thresholds_are_validated_together():
    with pytest.raises(
        InvalidParameterError, match="'idle' parameter of planner 'consistent_grouping' must be below"
    ):
        ConsistentGroupingPlanner(idle=0.9, busy=0.85).plan(snap([Node("a")], [1.0], ["a"]))


def test_conformance():
    assert "budgets" in check_planner(ConsistentGroupingPlanner())
