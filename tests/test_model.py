"""Snapshot.validate(): every malformed snapshot is rejected with a message naming the offender."""

import math
import pickle

import numpy as np
import pytest

from albic import InvalidSnapshotError, KeyGroup, Node, Operator, Snapshot, Traffic
from albic.io import snapshot_from_dict, snapshot_to_dict


def good(**changes):
    parts = dict(
        nodes=[Node("n1"), Node("n2", capacity=2.0)],
        key_groups=[KeyGroup("a", "op", 3.0, 10.0), KeyGroup("b", "op", 1.0, 5.0)],
        assignment={"a": "n1", "b": "n2"},
        traffic=[Traffic("a", "b", 2.0)],
    )
    parts.update(changes)
    return Snapshot(**parts)


def problems_of(snapshot):
    with pytest.raises(InvalidSnapshotError) as info:
        snapshot.validate()
    return info.value.problems, str(info.value)


def test_a_valid_snapshot_validates_and_returns_itself():
    snap = good()
    assert snap.validate() is snap
    assert snap.problems() == []


@pytest.mark.parametrize(
    "changes, fragments",
    [
        ({"assignment": {"a": "n9", "b": "n2"}}, ["'a'", "unknown node 'n9'"]),
        ({"assignment": {"a": "n1"}}, ["'b'", "not in the assignment"]),
        ({"assignment": {"a": "n1", "b": "n2", "zz": "n1"}}, ["unknown key group 'zz'"]),
        (
            {"key_groups": [KeyGroup("a", "op", 3.0), KeyGroup("a", "op", 1.0)], "traffic": []},
            ["key group id 'a' appears 2 times"],
        ),
        ({"nodes": [Node("n1"), Node("n1"), Node("n2")]}, ["node id 'n1' appears 2 times"]),
        (
            {"key_groups": [KeyGroup("a", "op", -1.0), KeyGroup("b", "op", 1.0)]},
            ["'a'", "load = -1.0", ">= 0"],
        ),
        ({"key_groups": [KeyGroup("a", "op", math.nan), KeyGroup("b", "op", 1.0)]}, ["'a'", "load = nan"]),
        ({"key_groups": [KeyGroup("a", "op", math.inf), KeyGroup("b", "op", 1.0)]}, ["'a'", "load = inf"]),
        (
            {"key_groups": [KeyGroup("a", "op", 1.0, -5), KeyGroup("b", "op", 1.0)]},
            ["'a'", "state_size = -5.0"],
        ),
        (
            {"key_groups": [KeyGroup("a", "op", 1.0, math.nan), KeyGroup("b", "op", 1.0)]},
            ["'a'", "state_size = nan"],
        ),
        (
            {"key_groups": [KeyGroup("a", "op", "heavy"), KeyGroup("b", "op", 1.0)]},
            ["'a'", "load = 'heavy' (str)"],
        ),
        ({"nodes": [Node("n1", capacity=0), Node("n2")]}, ["node 'n1'", "capacity = 0.0", "> 0"]),
        ({"nodes": [Node("n1", capacity=-2), Node("n2")]}, ["node 'n1'", "capacity = -2.0"]),
        ({"nodes": [Node("n1"), Node("n2", capacity=math.inf)]}, ["node 'n2'", "capacity = inf"]),
        ({"nodes": [Node("n1", cores=0), Node("n2")]}, ["node 'n1'", "cores = 0"]),
        (
            {"traffic": [Traffic("a", "ghost", 1.0)]},
            ["traffic from 'a' to 'ghost'", "unknown key group 'ghost'"],
        ),
        ({"traffic": [Traffic("a", "b", -3.0)]}, ["traffic from 'a' to 'b'", "rate = -3.0"]),
        (
            {"nodes": [Node("n1", removing=True), Node("n2", removing=True)]},
            ["every node is removing (2 nodes)"],
        ),
        ({"nodes": [], "assignment": {}, "key_groups": [], "traffic": []}, ["no nodes"]),
        ({"nodes": [Node(7), Node("n2")]}, ["id 7 must be a non-empty string"]),
        (
            {"key_groups": [KeyGroup("a", "op", 1.0, index=-1), KeyGroup("b", "op", 1.0)]},
            ["'a'", "index = -1"],
        ),
        (
            {"key_groups": [KeyGroup("a", "op", 1.0, resources={"mem": -1}), KeyGroup("b", "op", 1.0)]},
            ["'a'", "resources['mem'] = -1.0"],
        ),
        (
            {"key_groups": [KeyGroup("a", "op", 1.0, service_rate=0), KeyGroup("b", "op", 1.0)]},
            ["'a'", "service_rate = 0.0", "> 0"],
        ),
        ({"operators": [Operator("op", downstream=("sink",))]}, ["downstream operator 'sink'"]),
        ({"operators": [Operator("other")]}, ["operator 'op'", "not among the declared operators"]),
        ({"nodes": [{"id": "n1"}, Node("n2")]}, ["nodes[0] is a dict"]),
        # Rules the bulk check (model._quickly_valid) reads in bulk, each broken once.
        (
            {
                "key_groups": [KeyGroup("a", "op", 1.0, spread="p"), KeyGroup("b", "op", 1.0, spread="p")],
                "assignment": {"a": "n1", "b": "n1"},
            },
            ["spread 'p' are on node 'n1' together"],
        ),
        ({"key_groups": [KeyGroup("a", "op", 1.0, spread=""), KeyGroup("b", "op", 1.0)]}, ["spread = ''"]),
        (
            {"key_groups": [KeyGroup("a", "op", 1.0, index=2**60), KeyGroup("b", "op", 1.0)]},
            ["index = 1152921504606846976"],
        ),
        ({"key_groups": [KeyGroup("a", "op", 10**400), KeyGroup("b", "op", 1.0)]}, ["'a'", "load = 1000"]),
        (
            {"key_groups": [KeyGroup("a", "op", 2e15), KeyGroup("b", "op", 1.0)]},
            ["'a'", "load = 2000000000000000.0"],
        ),
        (
            {"key_groups": [KeyGroup("a", "op", 1.0, arrival_rate=-1), KeyGroup("b", "op", 1.0)]},
            ["arrival_rate = -1.0"],
        ),
        (
            {"key_groups": [KeyGroup("a", "op", 1.0, service_rate=math.nan), KeyGroup("b", "op", 1.0)]},
            ["service_rate = nan"],
        ),
        (
            {"key_groups": [KeyGroup("a", "op", 1.0, resources={3: 1.0}), KeyGroup("b", "op", 1.0)]},
            ["resource name 3"],
        ),
        (
            {"key_groups": [KeyGroup("a", "op", 1.0, resources={"mem": None}), KeyGroup("b", "op", 1.0)]},
            ["resources['mem'] = None"],
        ),
        (
            {
                "key_groups": [KeyGroup("", "op", 1.0), KeyGroup("b", "op", 1.0)],
                "assignment": {"": "n1", "b": "n2"},
                "traffic": [],
            },
            ["key group id '' must be a non-empty string"],
        ),
        ({"key_groups": [KeyGroup("a", "", 1.0), KeyGroup("b", "op", 1.0)]}, ["operator = ''"]),
        ({"key_groups": [KeyGroup("a", "op", None), KeyGroup("b", "op", 1.0)]}, ["load = None"]),
        ({"traffic": [Traffic("a", "b", math.inf)]}, ["rate = inf"]),
        ({"traffic": [("a", "b", 1.0)]}, ["traffic[0] is a tuple"]),
        ({"period": True}, ["period = True"]),
        ({"nodes": [Node("n1", host=3), Node("n2")]}, ["host = 3"]),
    ],
)
def test_each_malformed_snapshot_is_rejected_naming_the_offender(changes, fragments):
    problems, message = problems_of(good(**changes))
    joined = "\n".join(problems)
    for fragment in fragments:
        assert fragment in joined, f"{fragment!r} missing from {problems}"
    assert problems[0] in message


def test_a_valid_snapshot_of_every_shape_passes_the_bulk_check():
    """The bulk check (which validate() tries first) accepts what the rule-by-rule pass accepts
    in the usual shapes, so 100,000 key groups validate in a fraction of a second; the malformed
    snapshots above show it accepts nothing the rule-by-rule pass refuses."""
    from albic.core.model import _quickly_valid
    from albic.evaluation.synthetic import synthetic_snapshot

    snap = good(
        key_groups=[
            KeyGroup(
                "a",
                "op",
                3.0,
                10.0,
                index=0,
                resources={"mem": 2.0},
                spread=1,
                arrival_rate=1.0,
                service_rate=2.0,
            ),
            KeyGroup("b", "op", 1.0, 5.0, index=2**53, spread=1),
        ],
        operators=[Operator("op")],
        period="p1",
    )
    assert snap.problems() == [] and _quickly_valid(snap)
    big = synthetic_snapshot(10, 1000, 4, seed=3)
    assert big.problems() == [] and _quickly_valid(big)


def test_a_key_group_listed_twice_in_a_file_is_rejected():
    data = snapshot_to_dict(good())
    data["key_groups"].append(dict(data["key_groups"][0], node="n2"))
    with pytest.raises(InvalidSnapshotError, match="key group id 'a' appears 2 times"):
        snapshot_from_dict(data)


def test_every_problem_is_reported_at_once():
    snap = good(
        nodes=[Node("n1", capacity=-1), Node("n2")],
        key_groups=[KeyGroup("a", "op", -1.0), KeyGroup("b", "op", math.nan)],
        assignment={"a": "n9"},
    )
    problems, message = problems_of(snap)
    assert len(problems) == 5, problems
    assert "5 problems" in message


def test_long_problem_lists_are_truncated_in_the_message_but_kept_whole():
    kgs = [KeyGroup(f"k{i}", "op", -1.0) for i in range(50)]
    snap = Snapshot([Node("n")], kgs, {k.id: "n" for k in kgs})
    problems, message = problems_of(snap)
    assert len(problems) == 50
    assert "and 30 more" in message and message.count("\n") < 25


def test_non_sequence_and_non_mapping_arguments_fail_at_construction():
    with pytest.raises(InvalidSnapshotError, match="'nodes' must be a sequence"):
        Snapshot(Node("n1"), [], {})
    with pytest.raises(InvalidSnapshotError, match="'assignment' must be a mapping"):
        Snapshot([Node("n1")], [], [("a", "n1")])


def test_numbers_are_normalised_to_python_floats():
    kg = KeyGroup("a", "op", np.float32(1.5), np.int64(3), index=np.int64(2))
    assert type(kg.load) is float and type(kg.state_size) is float and type(kg.index) is int
    assert type(Node("n", capacity=np.int32(2)).capacity) is float


def test_the_assignment_is_read_only_and_a_copy():
    source = {"a": "n1", "b": "n2"}
    snap = good(assignment=source)
    source["a"] = "n2"
    assert snap.assignment["a"] == "n1"
    with pytest.raises(TypeError):
        snap.assignment["a"] = "n2"


def test_arrays_are_cached_read_only_and_in_snapshot_order():
    snap = good(traffic=[Traffic("a", "b", 2.0), Traffic("a", "b", 1.0)])
    arrays = snap.arrays()
    assert arrays is snap.arrays()
    assert arrays.loads.tolist() == [3.0, 1.0]
    assert arrays.capacities.tolist() == [1.0, 2.0]
    assert arrays.current.tolist() == [0, 1]
    assert arrays.traffic.toarray().tolist() == [[0.0, 3.0], [0.0, 0.0]]  # parallel edges summed
    with pytest.raises(ValueError):
        arrays.loads[0] = 9.0


def test_arrays_refuses_an_invalid_snapshot():
    with pytest.raises(InvalidSnapshotError):
        good(assignment={"a": "n9", "b": "n2"}).arrays()


def test_snapshots_pickle_and_compare_equal():
    snap = good()
    snap.arrays()  # the cache must not get in the way
    back = pickle.loads(pickle.dumps(snap))
    assert back == snap
    assert back.assignment == snap.assignment
    with pytest.raises(TypeError):
        back.assignment["a"] = "n2"


def test_with_assignment_keeps_everything_else():
    snap = good()
    moved = snap.with_assignment({"a": "n2", "b": "n2"})
    assert moved.assignment == {"a": "n2", "b": "n2"}
    assert (moved.nodes, moved.key_groups, moved.traffic) == (snap.nodes, snap.key_groups, snap.traffic)


# -- graphs (networkx) -----------------------------------------------------------------------------


def _every_field():
    """A snapshot using every field, its traffic listed by source in key-group order, one record
    per pair (the graph's own order), with a declared edge without traffic (b -> c) and traffic
    no operator declares (a -> c)."""
    return Snapshot(
        nodes=[Node("n1", capacity=2.0, cores=4, host="h1"), Node("n2", removing=True), Node("n3")],
        key_groups=[
            KeyGroup(
                "a/0",
                "a",
                3.0,
                10.0,
                index=0,
                resources={"mem": 2.0},
                arrival_rate=5.0,
                service_rate=7.0,
                spread="p0",
            ),
            KeyGroup("a/1", "a", 1.0, 5.0, index=1, spread="p0"),
            KeyGroup("b/0", "b", 2.0),
            KeyGroup("c/0", "c", 0.5, spread=3),
        ],
        assignment={"a/0": "n1", "a/1": "n2", "b/0": "n1", "c/0": "n2"},
        traffic=[
            Traffic("a/0", "b/0", 2.0),
            Traffic("a/0", "c/0", 1.5),
            Traffic("a/1", "a/0", 4.0),
            Traffic("b/0", "c/0", 0.25),
        ],
        operators=[
            Operator("a", ("b",), ("x", "y")),
            Operator("b", ("c",), ("x",)),
            Operator("c", (), ("y",)),
        ],
        period="2013-07-01T10:00",
    ).validate()


def test_the_traffic_graph_holds_the_snapshot():
    snap = _every_field()
    g = snap.traffic_graph()
    assert list(g) == [kg.id for kg in snap.key_groups]
    for kg in snap.key_groups:
        data = g.nodes[kg.id]
        assert (data["operator"], data["load"], data["state_size"], data["node"]) == (
            kg.operator,
            kg.load,
            kg.state_size,
            snap.assignment[kg.id],
        )
        assert (data["index"], data["resources"], data["spread"]) == (kg.index, kg.resources, kg.spread)
    assert {(u, v): r for u, v, r in g.edges(data="rate")} == {(t.src, t.dst): t.rate for t in snap.traffic}
    assert g.graph["period"] == snap.period and list(g.graph["nodes"]) == ["n1", "n2", "n3"]
    assert g.graph["nodes"]["n1"] == {"capacity": 2.0, "removing": False, "cores": 4, "host": "h1"}


def test_the_operator_graph_holds_the_topology_and_the_summed_rates():
    snap = _every_field()
    g = snap.operator_graph()
    assert list(g) == ["a", "b", "c"] and g.nodes["a"]["partition_attributes"] == ("x", "y")
    # by hand: a -> b 2.0, a -> c 1.5, b -> c 0.25 (declared), a/1 -> a/0 stays inside a
    assert {(u, v): (d["rate"], d["declared"]) for u, v, d in g.edges(data=True)} == {
        ("a", "b"): (2.0, True),
        ("a", "c"): (1.5, False),
        ("b", "c"): (0.25, True),
    }
    bare = Snapshot(
        [Node("n")],
        [KeyGroup("p/0", "p", 1.0), KeyGroup("q/0", "q", 1.0)],
        {"p/0": "n", "q/0": "n"},
        [Traffic("p/0", "q/0", 3.0)],
    )
    g = bare.operator_graph()
    assert dict(g.nodes(data="declared")) == {"p": False, "q": False}
    assert list(g.edges(data="rate")) == [("p", "q", 3.0)]


def test_snapshot_to_graphs_to_snapshot_is_the_same_snapshot():
    import json

    import networkx as nx

    snap = _every_field()
    assert Snapshot.from_graphs(snap.traffic_graph(), snap.operator_graph()) == snap
    # the graph is plain data: through JSON (networkx's node-link form) and back, still equal
    text = json.dumps(
        [
            nx.node_link_data(snap.traffic_graph(), edges="links"),
            nx.node_link_data(snap.operator_graph(), edges="links"),
        ]
    )
    traffic, operators = (nx.node_link_graph(d, edges="links") for d in json.loads(text))
    assert Snapshot.from_graphs(traffic, operators) == snap
    bare = Snapshot([Node("n")], [KeyGroup("p/0", "p", 1.0)], {"p/0": "n"})  # no declared operators
    assert Snapshot.from_graphs(bare.traffic_graph(), bare.operator_graph()) == bare


def test_graph_round_trips_of_generated_snapshots():
    """Any valid snapshot comes back equal, except that its traffic is one record per pair in
    the graph's order: compared here as rates summed per pair, counted independently."""
    from collections import Counter

    from albic.io.examples import example_snapshot
    from albic.testing.generators import Size, random_snapshot

    rng = np.random.default_rng(5)
    snaps = [example_snapshot()] + [
        random_snapshot(
            rng, Size(5, 30, 3), traffic=True, new_nodes=1, removing=1, heterogeneous=True, period=i
        )
        for i in range(5)
    ]
    for snap in snaps:
        back = Snapshot.from_graphs(snap.traffic_graph(), snap.operator_graph())
        assert (back.nodes, back.key_groups, back.operators, back.period) == (
            snap.nodes,
            snap.key_groups,
            snap.operators,
            snap.period,
        )
        assert dict(back.assignment) == dict(snap.assignment)
        summed = Counter()
        for t in snap.traffic:
            summed[t.src, t.dst] += t.rate
        assert {(t.src, t.dst): t.rate for t in back.traffic} == dict(summed)
        assert len(back.traffic) == len(summed)


def test_a_snapshot_from_a_users_graph_and_its_problems_named():
    import networkx as nx

    g = nx.DiGraph()
    g.add_node("k1", operator="src", load=2.0, node="w1", colour="red")  # a tool's own attribute
    g.add_node("k2", operator="sink", load=1.0, node="w2")
    g.add_edge("k1", "k2", rate=5.0)
    snap = Snapshot.from_graphs(g)
    assert [n.id for n in snap.nodes] == ["w1", "w2"] and snap.nodes[0] == Node("w1")
    assert snap.key_groups[0] == KeyGroup("k1", "src", 2.0) and snap.traffic == (Traffic("k1", "k2", 5.0),)
    del g.nodes["k2"]["load"]
    g.edges["k1", "k2"]["rate"] = -1.0
    with pytest.raises(InvalidSnapshotError) as info:
        Snapshot.from_graphs(g)
    assert any("key group 'k2': load = None" in p for p in info.value.problems)
    assert any("traffic from 'k1' to 'k2': rate = -1.0" in p for p in info.value.problems)
    with pytest.raises(InvalidSnapshotError, match="'traffic' must be a networkx.DiGraph, got MultiDiGraph"):
        Snapshot.from_graphs(nx.MultiDiGraph(g))
