"""Enorm's fusion and split/combine cost model against a literal reading and hand computations."""

import json

import numpy as np
import pytest

from albic.base.errors import InvalidParameterError
from albic.cli.main import main
from albic.core.model import KeyGroup, Node, Operator, Snapshot, Traffic
from albic.io import write_snapshot
from planners.enorm import (
    ComponentStatistics,
    baseline_fusion,
    combine_cost,
    decide_split_or_combine,
    fuse,
    inter_component_share,
    operator_rates,
    random_job,
    split_cost,
)


def literal_algorithm_1(operators, rates, score):
    """Algorithm 1 as printed: rescan every (i, j in i.downstream) pair after each fusion, attribute
    sets as Python sets, strict '>' (the first best pair wins)."""
    component = {op.name: frozenset([op.name]) for op in operators}
    pa = {op.name: set(op.partition_attributes) for op in operators}
    downstream = {
        op.name: list(dict.fromkeys(list(op.downstream) + [d for (s, d) in rates if s == op.name]))
        for op in operators
    }

    def get_pa(comp):
        return set.intersection(*(pa[m] for m in comp))

    while True:
        comps = set(component.values())
        commonness = {}
        for comp in comps:
            for a in get_pa(comp):
                commonness[a] = commonness.get(a, 0) + 1
        best, pair = 0.0, None
        for op in operators:
            src = component[op.name]
            for j in downstream[op.name]:
                if j in src:
                    continue
                shared = get_pa(src) & get_pa(component[j])
                if not shared:
                    continue
                value = (
                    rates.get((op.name, j), 0.0) if score == "comm" else sum(commonness[a] for a in shared)
                )
                if value > best:
                    best, pair = value, (op.name, j)
        if pair is None:
            break
        merged = component[pair[0]] | component[pair[1]]
        for m in merged:
            component[m] = merged
    order = {op.name: i for i, op in enumerate(operators)}
    groups = {frozenset(c) for c in component.values()}
    return sorted((sorted(g, key=order.get) for g in groups), key=lambda g: order[g[0]])


def _check_components(operators, components):
    names = [op.name for op in operators]
    flat = [m for c in components for m in c]
    assert sorted(flat) == sorted(names)  # each operator in exactly one component
    pa = {op.name: set(op.partition_attributes) for op in operators}
    for comp in components:
        if len(comp) > 1:
            assert set.intersection(*(pa[m] for m in comp)), f"{comp} share no partition attribute"


@pytest.mark.parametrize("score", ["comm", "pa"])
def test_fusion_matches_the_literal_algorithm_and_keeps_attributes_intersecting(score):
    rng = np.random.default_rng(1)
    for n in (3, 8, 20, 35):
        for _ in range(4):
            operators, rates = random_job(rng, n, n_attributes=8)
            got = fuse(operators, rates, score=score)
            _check_components(operators, got)
            assert got == literal_algorithm_1(operators, rates, score)


def test_baseline_keeps_attributes_intersecting_and_is_seeded():
    rng = np.random.default_rng(2)
    for n in (3, 10, 40):
        operators, rates = random_job(rng, n, n_attributes=6)
        got = baseline_fusion(operators, rates, seed=4)
        _check_components(operators, got)
        assert got == baseline_fusion(operators, rates, seed=4)


def test_fusion_by_hand():
    # a -> b (rate 10, share x), a -> c (rate 5, share y), b -> d (rate 7, share x and z).
    # COMM: fuse a+b (10; PA {x}); then a->c: {x} & {y} empty; b->d: {x} & {x, z} = {x}, 7 > 0:
    # fuse; components {a, b, d}, {c}; crossing traffic 5 of 22.
    ops = [
        Operator("a", ("b", "c"), ("x", "y")),
        Operator("b", ("d",), ("x",)),
        Operator("c", (), ("y",)),
        Operator("d", (), ("x", "z")),
    ]
    rates = {("a", "b"): 10.0, ("a", "c"): 5.0, ("b", "d"): 7.0}
    comm = fuse(ops, rates, score="comm")
    assert comm == [["a", "b", "d"], ["c"]]
    assert inter_component_share(comm, rates) == pytest.approx(5 / 22)
    # PA: commonness x = 3 (a, b, d), y = 2 (a, c), z = 1. Scores: a-b {x} 3, a-c {y} 2,
    # b-d {x} 3: a-b first (first of the best). Then {a,b} has PA {x}: commonness x = 2 ({a,b}, d),
    # (a,b)-c {} no, b-d {x} 2: fuse. Same components.
    assert fuse(ops, rates, score="pa") == [["a", "b", "d"], ["c"]]
    # Operators without a common attribute are never fused, whatever the rate.
    lone = [Operator("p", ("q",), ("u",)), Operator("q", (), ("v",))]
    assert fuse(lone, {("p", "q"): 1e9}) == [["p"], ["q"]]
    assert baseline_fusion(lone, {("p", "q"): 1e9}) == [["p"], ["q"]]


def test_bad_fusion_input():
    ops = [Operator("a", (), ("x",))]
    with pytest.raises(InvalidParameterError, match="unknown operator"):
        fuse(ops, {("a", "zz"): 1.0})
    with pytest.raises(InvalidParameterError, match="score"):
        fuse(ops, {}, score="rate")


def test_cost_model_by_hand():
    # T_p = 1000, E = 1, W = 4, PW_p = 10, MK_p = 5, K_1 = 2, 8 key groups, L = 0.5:
    # split = 1000*1 + 10*2*8 + 5*2 = 1170, latency 0; combine = 1000*4*1 + 5*2*10 = 4100,
    # latency 5*0.5 = 2.5.
    stats = ComponentStatistics(1000, 1.0, 4, 10, 5, 2.0, 8, 0.5)
    assert (split_cost(stats).cpu, split_cost(stats).latency) == (1170.0, 0.0)
    assert (combine_cost(stats).cpu, combine_cost(stats).latency) == (4100.0, 2.5)
    assert decide_split_or_combine(stats, max_latency=10.0) == "split"
    # One window: combine = 1000 + 100 = 1100 < 1170, chosen if its 2.5 s latency is allowed.
    one = ComponentStatistics(1000, 1.0, 1, 10, 5, 2.0, 8, 0.5)
    assert decide_split_or_combine(one, max_latency=2.5) == "combine"
    assert decide_split_or_combine(one, max_latency=2.4) == "split"
    with pytest.raises(InvalidParameterError):
        ComponentStatistics(-1, 1.0, 1, 10, 5, 2.0, 8, 0.5)


def _topology_snapshot():
    ops = [
        Operator("tailnum", ("route",), ("carrier", "tailnum")),
        Operator("route", (), ("carrier",)),
        Operator("delay", (), ("dest",)),
    ]
    kgs = [KeyGroup("t/0", "tailnum", 1.0), KeyGroup("r/0", "route", 1.0), KeyGroup("d/0", "delay", 1.0)]
    return Snapshot(
        [Node("n1")],
        kgs,
        {k.id: "n1" for k in kgs},
        [Traffic("t/0", "r/0", 6.0), Traffic("r/0", "d/0", 2.0)],
        operators=ops,
    )


def test_operator_rates_sum_key_group_traffic():
    assert operator_rates(_topology_snapshot()) == {("tailnum", "route"): 6.0, ("route", "delay"): 2.0}


def test_fuse_command(tmp_path, capsys):
    path = write_snapshot(_topology_snapshot(), tmp_path / "snap.json")
    out = tmp_path / "components.json"
    assert main(["fuse", str(path), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "component 1 [carrier]: tailnum, route" in printed
    assert "component 2 [dest]: delay" in printed and "25.00%" in printed
    data = json.loads(out.read_text())
    assert data["components"][0]["operators"] == ["tailnum", "route"]
    assert main(["fuse", str(path), "--score", "baseline"]) == 0
    assert main(["fuse", str(tmp_path / "missing.json")]) == 2
    assert "albic: error:" in capsys.readouterr().err
