"""Enorm's fusion and split/combine cost model against a literal reading and hand computations."""

import json
from pathlib import Path

import numpy as np
import pytest

from albic.base.errors import InvalidParameterError, TopologyCycleError
from albic.cli.main import main
from albic.core.model import KeyGroup, Node, Operator, Snapshot, Traffic, operator_graph
from albic.io import write_snapshot
from albic.planners.enorm import (
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


def reference_jobs():
    """The topologies whose fusions were recorded (tests/planners/enorm_reference.json) at commit
    e5d9d51, before the fusion moved onto networkx: random jobs of 3-60 operators over
    2-30 attributes."""
    rng = np.random.default_rng(123)
    return [
        random_job(rng, n, n_attributes=attrs)
        for n in (3, 5, 8, 12, 20, 35, 60)
        for attrs in (2, 3, 8, 30)
        for _ in range(2)
    ]


def test_fusion_outputs_are_the_recorded_ones():
    """COMM, PA and the baseline (two seeds) give what they gave before networkx took over the
    graph work; the baseline has no other truth to compare with than its own earlier outputs."""
    recorded = json.loads((Path(__file__).parent / "enorm_reference.json").read_text())
    jobs = reference_jobs()
    assert len(recorded) == len(jobs) == 56
    for (operators, rates), want in zip(jobs, recorded):
        assert fuse(operators, rates, score="comm") == want["comm"]
        assert fuse(operators, rates, score="pa") == want["pa"]
        assert baseline_fusion(operators, rates, seed=0) == want["baseline0"]
        assert baseline_fusion(operators, rates, seed=7) == want["baseline7"]
    # not vacuous: the recorded fusions do fuse, and the heuristics differ somewhere
    assert sum(len(w["comm"]) for w in recorded) < sum(len(op) for op, _ in jobs)
    assert any(w["comm"] != w["pa"] for w in recorded) and any(w["pa"] != w["baseline0"] for w in recorded)


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


# -- the operator graph (networkx) -----------------------------------------------------------------


def test_fusion_on_a_users_graph_matches_the_literal_algorithm():
    """A DiGraph built by hand with networkx (nodes not in topological order, edges without a rate
    meaning 0) fuses as the literal algorithm fuses the same operators and rates."""
    import networkx as nx

    rng = np.random.default_rng(8)
    for _ in range(6):
        operators, rates = random_job(rng, 15, n_attributes=5)
        order = rng.permutation(len(operators))  # the operator order need not be topological
        operators = [operators[i] for i in order]
        g = nx.DiGraph()
        for op in operators:
            g.add_node(op.name, partition_attributes=list(op.partition_attributes))
        for op in operators:
            g.add_edges_from((op.name, d) for d in op.downstream)
        for (src, dst), rate in rates.items():
            g.add_edge(src, dst, rate=rate)
        for score in ("comm", "pa"):
            assert fuse(g, score=score) == literal_algorithm_1(operators, rates, score)
        assert baseline_fusion(g, seed=3) == baseline_fusion(operators, rates, seed=3)


def test_the_snapshots_operator_graph_fuses_as_its_operators_and_rates():
    snap = _topology_snapshot()
    rates = operator_rates(snap)
    for score in ("comm", "pa"):
        assert fuse(snap.operator_graph(), score=score) == fuse(list(snap.operators), rates, score=score)


def _is_cycle_of(cycle, graph):
    return (
        cycle[0] == cycle[-1]
        and len(cycle) >= 2
        and all(graph.has_edge(u, v) for u, v in zip(cycle, cycle[1:]))
    )


@pytest.mark.parametrize(
    "fusion",
    [
        lambda t, r: fuse(t, r),
        lambda t, r: fuse(t, r, score="pa"),
        lambda t, r: baseline_fusion(t, r, seed=1),
    ],
)
def test_a_topology_with_a_cycle_is_refused_naming_the_cycle(fusion):
    ops = [
        Operator("a", ("b",), ("x",)),
        Operator("b", ("c",), ("x",)),
        Operator("c", ("a",), ("x",)),
        Operator("d", (), ("x",)),
    ]
    with pytest.raises(TopologyCycleError) as info:
        fusion(ops, {("c", "d"): 1.0})
    assert info.value.cycle == ["a", "b", "c", "a"] and "a -> b -> c -> a" in str(info.value)
    # a cycle closed only by traffic (d sends back to a), and an operator sending to itself
    with pytest.raises(TopologyCycleError) as info:
        fusion([Operator("a", ("b",), ("x",)), Operator("b", (), ("x",))], {("b", "a"): 2.0})
    assert _is_cycle_of(
        info.value.cycle, operator_graph([Operator("a", ("b",)), Operator("b")], {("b", "a"): 1})
    )
    with pytest.raises(TopologyCycleError, match="a -> a"):
        fusion([Operator("a", ("a",), ("x",))], {})
    assert isinstance(info.value, InvalidParameterError)  # bad input, before any fusing


def test_random_cyclic_topologies_are_refused_with_a_real_cycle_and_dags_are_not():
    """Truth from a brute-force check: a topology has a cycle iff some operator reaches itself."""
    import networkx as nx

    rng = np.random.default_rng(11)
    refused = 0
    for _ in range(40):
        names = [f"o{i}" for i in range(6)]
        edges = {(names[i], names[j]) for i, j in rng.integers(0, 6, size=(7, 2)).tolist()}
        ops = [Operator(n, tuple(d for s, d in sorted(edges) if s == n), ("x",)) for n in names]

        def reaches(start, goal, seen=()):
            return any(
                d == goal or (d not in seen and reaches(d, goal, seen + (d,))) for s, d in edges if s == start
            )

        cyclic = any(reaches(n, n) for n in names)
        try:
            fuse(ops, {})
        except TopologyCycleError as err:
            refused += 1
            assert cyclic and _is_cycle_of(err.cycle, nx.DiGraph(sorted(edges)))
        else:
            assert not cyclic
    assert 0 < refused < 40


def test_fuse_command_refuses_a_cycle_in_one_line(tmp_path, capsys):
    ops = [Operator("a", ("b",), ("x",)), Operator("b", ("c",), ("x",)), Operator("c", ("a",), ("x",))]
    kgs = [KeyGroup(f"{o}/0", o, 1.0) for o in "abc"]
    path = write_snapshot(
        Snapshot([Node("n1")], kgs, {k.id: "n1" for k in kgs}, operators=ops), tmp_path / "cycle.json"
    )
    assert main(["fuse", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"albic: error: {path}: the operator topology has a cycle, a -> b -> c -> a")


def test_bad_graph_input():
    import networkx as nx

    with pytest.raises(InvalidParameterError, match="rates come from the graph"):
        fuse(nx.DiGraph([("a", "b")]), {("a", "b"): 1.0})
    with pytest.raises(
        InvalidParameterError, match="takes a networkx.DiGraph of operators, got MultiDiGraph"
    ):
        fuse(nx.MultiDiGraph([("a", "b")]))
    g = nx.DiGraph()
    g.add_edge("a", "b", rate=-2.0)
    with pytest.raises(InvalidParameterError, match="rate from 'a' to 'b' = -2.0 must be >= 0"):
        fuse(g)
    g = nx.DiGraph()
    g.add_node("a", partition_attributes="xy")
    with pytest.raises(InvalidParameterError, match="partition_attributes = 'xy' must be a list"):
        fuse(g)
