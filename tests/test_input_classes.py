"""The table of input classes: every kind of bad (or odd) input `albic plan` may get.

Each row is one class: the input (a snapshot document, raw file bytes, or command-line arguments),
the exit code it must give, and the fragments its one-line message must hold (the object, the
value and the rule). Exit 0 must come with a plan that the independent validator accepts; exit 2
with exactly one line on stderr, ``albic: error: ...``; never a traceback, never exit 1 (that is
for bugs). The issue's probe had 83 classes, not listed; this table rebuilds them from its
findings and the model's rules, and adds the neighbours of each.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from albic.cli.main import main
from albic.core.checks import plan_problems
from albic.io import plan_from_dict, read_snapshot

GOOD: dict[str, Any] = {
    "schema": "albic.snapshot/1",
    "period": "h0",
    "nodes": [{"id": "n1", "capacity": 1.0}, {"id": "n2", "capacity": 2.0}],
    "key_groups": [
        {"id": "a", "operator": "op", "load": 3.0, "state_size": 10.0, "index": 0, "node": "n1"},
        {"id": "b", "operator": "op", "load": 1.0, "state_size": 5.0, "index": 1, "node": "n1"},
        {"id": "c", "operator": "op", "load": 2.0, "state_size": 1.0, "index": 2, "node": "n2"},
    ],
    "traffic": [{"src": "a", "dst": "b", "rate": 4.0}],
}


def edit(change: Callable[[dict], Any]) -> Callable[[], dict]:
    """A document made by applying ``change`` to a copy of GOOD."""

    def make() -> dict:
        doc = copy.deepcopy(GOOD)
        change(doc)
        return doc

    return make


def kg(field: str, value: Any, which: int = 0) -> Callable[[], dict]:
    return edit(lambda d: d["key_groups"][which].__setitem__(field, value))


def node(field: str, value: Any, which: int = 0) -> Callable[[], dict]:
    return edit(lambda d: d["nodes"][which].__setitem__(field, value))


def every_kg(field: str, value: Any) -> Callable[[], dict]:
    return edit(lambda d: [k.__setitem__(field, value) for k in d["key_groups"]])


def text(raw: str | bytes) -> Callable[[], bytes]:
    return lambda: raw.encode() if isinstance(raw, str) else raw


def json_with(doc_text: str) -> Callable[[], bytes]:
    """GOOD as JSON with ``"load": 3.0`` of key group 'a' replaced by ``doc_text`` verbatim."""
    body = json.dumps(GOOD).replace('"load": 3.0', f'"load": {doc_text}', 1)
    return lambda: body.encode()


def nested(depth: int) -> Callable[[], bytes]:
    body = json.dumps(GOOD).replace('"period": "h0"', '"period": ' + "[" * depth + "]" * depth, 1)
    return lambda: body.encode()


# (class name, snapshot input, extra command-line arguments, exit code, message fragments)
CLASSES: list[tuple[str, Callable[[], Any] | None, list[str], int, list[str]]] = [
    # -- the file -----------------------------------------------------------------------------
    ("missing file", None, [], 2, ["No such file"]),
    ("empty file", text(""), [], 2, ["not valid JSON"]),
    ("not JSON", text("nodes: [n1]"), [], 2, ["not valid JSON", "line 1"]),
    ("not UTF-8", text(b"\xff\xfe{}"), [], 2, ["not UTF-8"]),
    ("UTF-8 byte-order mark", text(b"\xef\xbb\xbf" + json.dumps(GOOD).encode()), [], 0, []),
    ("truncated JSON", text(json.dumps(GOOD)[:-20]), [], 2, ["not valid JSON"]),
    ("nested 200,000 levels", nested(200_000), [], 2, ["nested 200001 levels", "at most 64"]),
    ("nested just over the limit", nested(64), [], 2, ["nested 65 levels"]),
    ("top level is a list", text("[]"), [], 2, ["the document must be an object", "a list"]),
    ("top level is null", text("null"), [], 2, ["the document must be an object"]),
    ("duplicate key", text(json.dumps(GOOD)[:-1] + ', "nodes": []}'), [], 2, ["'nodes' twice", "unique"]),
    (
        "wrong schema",
        edit(lambda d: d.__setitem__("schema", "albic.snapshot/9")),
        [],
        2,
        ["'albic.snapshot/9'", "albic.snapshot/1"],
    ),
    ("missing schema", edit(lambda d: d.pop("schema")), [], 2, ["required field 'schema'"]),
    ("unknown top-level field", edit(lambda d: d.__setitem__("nodez", [])), [], 2, ["unknown field 'nodez'"]),
    ("integer of 5000 digits", json_with("1" * 5000), [], 2, ["4300 digits"]),
    ("NaN literal", json_with("NaN"), [], 2, ["'a'", "load = nan", "finite"]),
    ("Infinity literal", json_with("Infinity"), [], 2, ["'a'", "load = inf", "finite"]),
    ("number 1e400 (inf)", json_with("1e400"), [], 2, ["load = inf", "finite"]),
    # -- nodes --------------------------------------------------------------------------------
    ("nodes missing", edit(lambda d: d.pop("nodes")), [], 2, ["required field 'nodes'"]),
    ("nodes not a list", edit(lambda d: d.__setitem__("nodes", {"n1": {}})), [], 2, ["nodes must be a list"]),
    ("no nodes", edit(lambda d: d.__setitem__("nodes", [])), [], 2, ["no nodes"]),
    (
        "node is a string",
        edit(lambda d: d["nodes"].__setitem__(0, "n1")),
        [],
        2,
        ["nodes[0] must be an object"],
    ),
    (
        "node without id",
        edit(lambda d: d["nodes"][0].pop("id")),
        [],
        2,
        ["nodes[0] lacks the required field 'id'"],
    ),
    ("node with a typo field", node("capacty", 1.0), [], 2, ["unknown field 'capacty'"]),
    ("node id a number", node("id", 7), [], 2, ["node id 7", "non-empty string"]),
    ("node id empty", node("id", ""), [], 2, ["node id ''", "non-empty string"]),
    ("duplicate node id", node("id", "n2"), [], 2, ["'n2' appears 2 times"]),
    ("capacity 0", node("capacity", 0), [], 2, ["node 'n1'", "capacity = 0.0", "> 0"]),
    ("capacity negative", node("capacity", -1), [], 2, ["capacity = -1.0"]),
    ("capacity a string", node("capacity", "2"), [], 2, ["capacity = '2' (str)"]),
    ("capacity above range", node("capacity", 1e7), [], 2, ["capacity = 10000000.0", "1e+06"]),
    ("capacity below range", node("capacity", 1e-7), [], 2, ["capacity = 1e-07", "1e-06"]),
    ("capacity 1e308", node("capacity", 1e308), [], 2, ["capacity = 1e+308"]),
    (
        "capacities in a large unit",
        edit(lambda d: [n.__setitem__("capacity", 1e5 * n["capacity"]) for n in d["nodes"]]),
        [],
        0,
        [],
    ),
    ("removing a string", node("removing", "yes"), [], 2, ["removing = 'yes'", "True or False"]),
    ("removing an int", node("removing", 1), [], 2, ["removing = 1"]),
    ("cores 0", node("cores", 0), [], 2, ["cores = 0", "int in [1, 1000000]"]),
    ("cores fractional", node("cores", 2.5), [], 2, ["cores = 2.5"]),
    ("cores 10^7", node("cores", 10**7), [], 2, ["cores = 10000000"]),
    ("host a number", node("host", 5), [], 2, ["host = 5", "string or None"]),
    (
        "all nodes removing",
        edit(lambda d: [n.__setitem__("removing", True) for n in d["nodes"]]),
        [],
        2,
        ["every node is removing (2 nodes)"],
    ),
    ("a removing node with key groups", node("removing", True), [], 0, []),
    ("a new node", edit(lambda d: d["nodes"].append({"id": "n3"})), [], 0, []),
    # -- key groups ---------------------------------------------------------------------------
    ("key_groups missing", edit(lambda d: d.pop("key_groups")), [], 2, ["required field 'key_groups'"]),
    (
        "key_groups an object",
        edit(lambda d: d.__setitem__("key_groups", {})),
        [],
        2,
        ["key_groups must be a list"],
    ),
    (
        "no key groups",
        edit(lambda d: (d.__setitem__("key_groups", []), d.__setitem__("traffic", []))),
        [],
        0,
        [],
    ),
    (
        "key group without id",
        edit(lambda d: d["key_groups"][0].pop("id")),
        [],
        2,
        ["key_groups[0] lacks the required field 'id'"],
    ),
    ("key group id a number", kg("id", 5), [], 2, ["key_groups[0].id must be a string"]),
    (
        "key group without operator",
        edit(lambda d: d["key_groups"][0].pop("operator")),
        [],
        2,
        ["lacks the required field 'operator'"],
    ),
    ("operator empty", kg("operator", ""), [], 2, ["operator = ''"]),
    (
        "key group without node",
        edit(lambda d: d["key_groups"][0].pop("node")),
        [],
        2,
        ["lacks the required field 'node'"],
    ),
    ("key group on an unknown node", kg("node", "n9"), [], 2, ["'a'", "unknown node 'n9'"]),
    ("duplicate key group id", kg("id", "b"), [], 2, ["'b' appears 2 times"]),
    ("key group with a typo field", kg("laod", 1.0), [], 2, ["unknown field 'laod'"]),
    ("load negative", kg("load", -1), [], 2, ["'a'", "load = -1.0", ">= 0"]),
    ("load a string", kg("load", "3"), [], 2, ["load = '3' (str)"]),
    ("load null", kg("load", None), [], 2, ["load = None"]),
    ("load a boolean", kg("load", True), [], 2, ["load = True (bool)"]),
    ("load 1e308 everywhere", every_kg("load", 1e308), [], 2, ["3 problems", "load = 1e+308", "<= 1e+15"]),
    (
        "load an integer too large for a float",
        json_with("1" + "0" * 400),
        [],
        2,
        ["'a'", "load = 1000000000", "(401 characters)", "<= 1e+15"],
    ),
    ("load just above the range", kg("load", 1.1e15), [], 2, ["load = 1100000000000000.0", "<= 1e+15"]),
    ("load at the top of the range", every_kg("load", 1e15), [], 0, []),
    (
        "loads of bytes per second",
        edit(lambda d: [k.__setitem__("load", 7.3e11 * (i + 1) / 3) for i, k in enumerate(d["key_groups"])]),
        [],
        0,
        [],
    ),
    ("subnormal load", kg("load", 5e-324), [], 0, []),
    (
        "state_size 1e308 everywhere",
        every_kg("state_size", 1e308),
        [],
        2,
        ["state_size = 1e+308", "<= 1e+15"],
    ),
    ("state_size negative", kg("state_size", -5), [], 2, ["state_size = -5.0"]),
    ("index negative", kg("index", -1), [], 2, ["index = -1", "or None"]),
    ("index fractional", kg("index", 1.5), [], 2, ["index = 1.5"]),
    ("index beyond 2^53", kg("index", 2**60), [], 2, ["index = 1152921504606846976"]),
    ("resources not an object", kg("resources", [1, 2]), [], 2, ["resources = [1, 2]"]),
    ("resource amount negative", kg("resources", {"memory": -1}), [], 2, ["resources['memory'] = -1.0"]),
    ("resources null", kg("resources", None), [], 0, []),
    ("arrival_rate negative", kg("arrival_rate", -2), [], 2, ["arrival_rate = -2.0"]),
    ("service_rate 0", kg("service_rate", 0), [], 2, ["service_rate = 0.0", "> 0"]),
    ("service_rate 1e-300", kg("service_rate", 1e-300), [], 2, ["service_rate = 1e-300", "1e-09"]),
    ("a very long id", kg("node", "x" * 100_000), [], 2, ["(100002 characters)"]),
    # -- traffic, operators, period -----------------------------------------------------------
    ("traffic not a list", edit(lambda d: d.__setitem__("traffic", {})), [], 2, ["traffic must be a list"]),
    (
        "traffic to an unknown key group",
        edit(lambda d: d["traffic"][0].__setitem__("dst", "z")),
        [],
        2,
        ["unknown key group 'z'"],
    ),
    (
        "traffic rate negative",
        edit(lambda d: d["traffic"][0].__setitem__("rate", -4)),
        [],
        2,
        ["rate = -4.0"],
    ),
    (
        "traffic rate 1e300",
        edit(lambda d: d["traffic"][0].__setitem__("rate", 1e300)),
        [],
        2,
        ["rate = 1e+300"],
    ),
    (
        "traffic without rate",
        edit(lambda d: d["traffic"][0].pop("rate")),
        [],
        2,
        ["traffic[0] lacks the required field 'rate'"],
    ),
    ("traffic null", edit(lambda d: d.__setitem__("traffic", None)), [], 0, []),
    (
        "operator downstream undeclared",
        edit(lambda d: d.__setitem__("operators", [{"name": "op", "downstream": ["sink"]}])),
        [],
        2,
        ["downstream operator 'sink' is not declared"],
    ),
    (
        "key groups of an undeclared operator",
        edit(lambda d: d.__setitem__("operators", [{"name": "other"}])),
        [],
        2,
        ["operator 'op'", "not among the declared"],
    ),
    ("period a list", edit(lambda d: d.__setitem__("period", [1])), [], 2, ["period = [1]"]),
    ("period a boolean", edit(lambda d: d.__setitem__("period", False)), [], 2, ["period = False"]),
    # -- planners and parameters --------------------------------------------------------------
    ("unknown planner", edit(lambda d: None), ["--planner", "fluxx"], 2, ["Unknown planner 'fluxx'"]),
    ("unknown parameter", edit(lambda d: None), ["-p", "max_move=3"], 2, ["'max_move'"]),
    ("max_moves negative", edit(lambda d: None), ["-p", "max_moves=-1"], 2, ["'max_moves'", "Got -1"]),
    (
        "max_moves of 401 digits",
        edit(lambda d: None),
        ["-p", "max_moves=" + "9" * 401],
        2,
        ["'max_moves'", "[0, 1000000000]", "(401 characters)"],
    ),
    ("max_moves fractional", edit(lambda d: None), ["-p", "max_moves=1.5"], 2, ["Got 1.5"]),
    ("max_moves a word", edit(lambda d: None), ["-p", "max_moves=all"], 2, ["Got 'all'"]),
    (
        "max_migration_cost negative",
        edit(lambda d: None),
        ["-p", "max_migration_cost=-1"],
        2,
        ["'max_migration_cost'"],
    ),
    ("max_migration_cost NaN", edit(lambda d: None), ["-p", "max_migration_cost=NaN"], 2, ["Got nan"]),
    ("max_migration_cost 1e300", edit(lambda d: None), ["-p", "max_migration_cost=1e300"], 2, ["1e+21"]),
    ("max_migration_cost 0", edit(lambda d: None), ["-p", "max_migration_cost=0"], 0, []),
    (
        "the same parameter twice",
        edit(lambda d: None),
        ["-p", "max_moves=1", "-p", "max_moves=2"],
        2,
        ["more than once"],
    ),
    ("parameter without '='", edit(lambda d: None), ["-p", "max_moves"], 2, ["NAME=VALUE"]),
    ("time_limit 0", edit(lambda d: None), ["--planner", "milp", "-p", "time_limit=0"], 2, ["'time_limit'"]),
    (
        "time_limit 1e300",
        edit(lambda d: None),
        ["--planner", "milp", "-p", "time_limit=1e300"],
        2,
        ["'time_limit'", "1000000.0"],
    ),
    ("seed negative", edit(lambda d: None), ["--planner", "cola", "-p", "seed=-1"], 2, ["'seed'"]),
    (
        "seed beyond 32 bits",
        edit(lambda d: None),
        ["--planner", "cola", "-p", "seed=4294967296"],
        2,
        ["'seed'", "2147483647"],
    ),
    (
        "virtual_nodes 10^7",
        edit(lambda d: None),
        ["--planner", "consistent_hashing", "-p", "virtual_nodes=10000000"],
        2,
        ["'virtual_nodes'", "10000"],
    ),
    (
        "virtual_nodes 0",
        edit(lambda d: None),
        ["--planner", "consistent_hashing", "-p", "virtual_nodes=0"],
        2,
        ["'virtual_nodes'"],
    ),
    (
        "idle above busy",
        edit(lambda d: None),
        ["--planner", "consistent_grouping", "-p", "idle=0.9", "-p", "busy=0.5"],
        2,
        ["'idle'"],
    ),
    (
        "a partition-load step of 1e-300",
        edit(lambda d: None),
        ["--planner", "albic", "-p", "step_partition_load=1e-300"],
        2,
        ["step_partition_load"],
    ),
    ("phi of 1e-300", edit(lambda d: None), ["--planner", "elasticutor", "-p", "phi=1e-300"], 2, ["'phi'"]),
    (
        "a missing MTM table",
        node("capacity", 2.0),
        ["--planner", "mtm", "-p", "table=/nonexistent/table.parquet"],
        2,
        ["/nonexistent/table"],
    ),
    (
        "a planner outside its model",
        edit(lambda d: d["nodes"].append({"id": "n3", "capacity": 5})),
        ["--planner", "ssm"],
        2,
        ["cannot plan this snapshot", "homogeneous"],
    ),
    # -- the output file ----------------------------------------------------------------------
    ("--out is the input", edit(lambda d: None), ["--out", "{snapshot}"], 2, ["is the input", "destroy"]),
    (
        "--out in a missing folder",
        edit(lambda d: None),
        ["--out", "{tmp}/no/plan.json"],
        2,
        ["{tmp}/no/plan.json", "does not exist"],
    ),
    ("--out is a folder", edit(lambda d: None), ["--out", "{tmp}"], 2, ["is a folder"]),
    (
        "--out where no file can be made",
        edit(lambda d: None),
        ["--out", "/proc/plan.json"],
        2,
        ["/proc/plan.json"],
    ),
    ("--out a new file", edit(lambda d: None), ["--out", "{tmp}/plan.json"], 0, []),
]


def test_the_table_is_the_full_probe():
    names = [c[0] for c in CLASSES]
    assert len(set(names)) == len(names)
    assert len(names) >= 83


@pytest.mark.parametrize(
    "snapshot, args, code, fragments", [c[1:] for c in CLASSES], ids=[c[0] for c in CLASSES]
)
def test_input_class(capsys, tmp_path, snapshot, args, code, fragments):
    path = tmp_path / "snapshot.json"
    if snapshot is not None:
        made = snapshot()
        path.write_bytes(made if isinstance(made, bytes) else json.dumps(made).encode())
    args = [a.format(snapshot=path, tmp=tmp_path) for a in args]
    planner = [] if "--planner" in args else ["--planner", "flux"]
    got = main(["plan", str(path), *planner, *args])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    assert got == code, err
    if code == 2:
        assert err.startswith("albic: error: ") and err.count("\n") == 1, err
        for fragment in fragments:
            assert fragment.format(tmp=tmp_path) in err, (fragment, err)
        assert out == ""
        return
    assert err == ""
    written = Path(args[args.index("--out") + 1]) if "--out" in args else None
    data = json.loads(written.read_text() if written else out)
    problems = plan_problems(read_snapshot(path), plan_from_dict(data))
    assert problems == []
