"""The table of input classes: every kind of bad (or odd) input `albic plan` may get.

Each row is one class: the input (a snapshot document, raw file bytes, or command-line arguments),
the exit code it must give, and the fragments its one-line message must hold (the object, the
value and the rule). Exit 0 must come with a plan that the independent validator accepts; exit 2
with exactly one line on stderr, ``albic: error: ...``; never a traceback, never exit 1 (that is
for bugs). The issue's probe had 83 classes, not listed; this table rebuilds them from its
findings and the model's rules, and adds the neighbours of each.
"""

from __future__ import annotations

import argparse
import copy
import gzip
import json
import os
import random
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from albic.cli.main import build_parser, main
from albic.core.checks import plan_problems
from albic.io import plan_from_dict, read_snapshot
from albic.io.reader import MAX_INPUT_ENV

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


# == every command, every input file ==============================================================
#
# The table below is one row per input file a command takes (a positional file or a file option),
# crossed with the classes of bad files. Each cell must give exit 2 and one line naming the file and
# the rule; the special files (FIFO, devices, folders, links in a loop) within a second. A test
# reads the command line's own parser and fails when a command or file option is missing here.

LOG_DIRS = {
    "version": 1,
    "brokers": [
        {
            "broker": broker,
            "logDirs": [
                {
                    "logDir": "/data",
                    "error": None,
                    "partitions": [
                        {"partition": p, "size": size, "offsetLag": 0, "isFuture": False} for p, size in held
                    ],
                }
            ],
        }
        for broker, held in ((1, [("t-0", 100), ("t-1", 200)]), (2, [("t-0", 100)]), (3, [("t-1", 200)]))
    ],
}
STATUS = "Querying brokers for log directories information\nReceived log directory information from brokers 1,2,3\n"
# Flink's hash declared, so that 'albic flink advise' and 'albic export flink' take it too.
FLINK_GOOD = {**GOOD, "operators": [{"name": "op", "key_hash": "flink", "max_parallelism": 3}]}
OTHER = {**GOOD, "key_groups": [{**k, "id": k["id"] + "x"} for k in GOOD["key_groups"]], "traffic": []}
EVENTS = "ts,user\n" + "".join(
    f"2024-01-01T{h:02d}:{m:02d}:00Z,u{(h * 7 + m) % 5}\n" for h in range(5) for m in range(0, 60, 6)
)

# The good files every row starts from, by name; each row swaps one of them for a bad one.
GOOD_FILES: dict[str, str] = {
    "snapshot.json": json.dumps(FLINK_GOOD),
    "other.json": json.dumps(OTHER),
    "log-dirs.json": STATUS + json.dumps(LOG_DIRS),
    "rates.csv": "topic,partition,rate\nt,0,5.0\nt,1,7.5\n",
    "current.json": json.dumps(
        {
            "version": 1,
            "partitions": [
                {"topic": "t", "partition": 0, "replicas": [2, 1]},
                {"topic": "t", "partition": 1, "replicas": [1, 3]},
            ],
        }
    ),
    "racks.csv": "broker,rack\n1,r1\n2,r2\n3,r1\n",
    "spec.toml": 'timestamp = "ts"\n\n[[operators]]\nname = "users"\nkeys = ["user"]\ncost = 1.5\n',
    "events.csv": EVENTS,
    "counts.csv": "nodes\n4\n5\n4\n6\n5\n4\n",
    "timed.csv": "time,nodes\n2024-01-01T00:00Z,2\n2024-01-01T01:00Z,3\n",
    "tasks.csv": "load,state_size\n1.0,2.0\n3.0,4.0\n2.0,1.0\n1.0,1.0\n",
}
# albic stats on the good events file, on the pandas engine.
STATS = ["stats", "events.csv", "--spec", "spec.toml", "--engine", "pandas"]
# albic recommend's smallest grid: one candidate.
RECOMMEND = [
    "--planner",
    "flux",
    "--budgets",
    "max_moves=1",
    "--decide-on",
    "previous",
    "--trigger",
    "always",
]
# Made by albic itself from the good files, in this order: (file, command line).
MADE = [
    ("plan.json", ["plan", "snapshot.json", "--planner", "flux", "--out", "plan.json"]),
    # Broker 3 removed: the plan moves its replicas, so 'kafka export' has something to export.
    ("kafka.json", ["kafka", "import", "log-dirs.json", "--remove", "3", "--out", "kafka.json"]),
    ("kafka-plan.json", ["plan", "kafka.json", "--planner", "flux", "--out", "kafka-plan.json"]),
    ("other-plan.json", ["plan", "other.json", "--planner", "flux", "--out", "other-plan.json"]),
    ("mtm.json", ["mtm", "counts.csv", "--out", "mtm.json"]),
    ("advice.json", ["flink", "advise", "snapshot.json", "--subtask-capacity", "10", "--out", "advice.json"]),
    (
        "stats",
        [
            *STATS,
            "--node-counts",
            "2",
            "--out",
            "stats",
        ],
    ),
    ("stats-plan.json", ["plan", "stats", "--planner", "flux", "--out", "stats-plan.json"]),
    ("rec", ["recommend", "stats", *RECOMMEND, "--out", "rec"]),
]

# The REST address and job of the Flink commands' rows (nothing listens on port 9, the discard port).
NO_FLINK = ["--rest", "http://localhost:9", "--job", "0123456789abcdef0123456789abcdef"]
# Every input file of every command: (command, the option or positional's name as argparse knows it
# (its dest), the file kind, the command line with the file in the place of {}); an output given
# as out/... is checked to stay unwritten. The kinds say which bad files apply (FORMATS below).
INPUTS: list[tuple[str, str, str, list[str]]] = [
    ("plan", "snapshot", "snapshot", ["plan", "{}", "--planner", "flux", "--out", "out/plan.json"]),
    ("fuse", "snapshot", "snapshot", ["fuse", "{}", "--out", "out/components.json"]),
    ("mtm", "series", "counts", ["mtm", "{}", "--out", "out/mtm.json"]),
    (
        "precompute",
        "tasks",
        "tasks",
        ["precompute", "--tasks", "{}", "--mtm", "mtm.json", "--tau", "1.2", "--out", "out/pmc"],
    ),
    (
        "precompute",
        "mtm",
        "mtm",
        ["precompute", "--tasks", "tasks.csv", "--mtm", "{}", "--tau", "1.2", "--out", "out/pmc"],
    ),
    (
        "stats",
        "source",
        "events",
        ["stats", "{}", "--spec", "spec.toml", "--engine", "pandas", "--out", "out/stats"],
    ),
    (
        "stats",
        "spec",
        "spec",
        ["stats", "events.csv", "--spec", "{}", "--engine", "pandas", "--out", "out/stats"],
    ),
    (
        "stats",
        "node_counts",
        "timed-counts",
        [
            *STATS,
            "--node-counts",
            "{}",
            "--out",
            "out/stats",
        ],
    ),
    (
        "demo",
        "node_counts",
        "timed-counts",
        ["demo", "--engine", "pandas", "--days", "1", "--node-counts", "{}", "--out", "out/demo"],
    ),
    ("compare", "stats", "dataset", ["compare", "{}", "--planner", "flux", "--out", "out/compare"]),
    (
        "compare",
        "recommendation",
        "recommendation",
        ["compare", "stats", "--recommendation", "{}", "--out", "out/compare"],
    ),
    ("recommend", "stats", "dataset", ["recommend", "{}", *RECOMMEND, "--out", "out/rec"]),
    ("kafka import", "log_dirs", "log-dirs", ["kafka", "import", "{}", "--out", "out/s.json"]),
    (
        "kafka import",
        "rates",
        "rates",
        ["kafka", "import", "log-dirs.json", "--rates", "{}", "--out", "out/s.json"],
    ),
    (
        "kafka import",
        "current",
        "current",
        ["kafka", "import", "log-dirs.json", "--current", "{}", "--out", "out/s.json"],
    ),
    (
        "kafka import",
        "racks",
        "racks",
        ["kafka", "import", "log-dirs.json", "--racks", "{}", "--out", "out/s.json"],
    ),
    ("kafka export", "plan", "kafka-plan", ["kafka", "export", "{}", "--out", "out/r.json"]),
    (
        "kafka export",
        "snapshot",
        "kafka-snapshot",
        ["kafka", "export", "kafka-plan.json", "--batches", "out/batches", "--snapshot", "{}"],
    ),
    ("kafka verify", "plan", "kafka-plan", ["kafka", "verify", "{}", "log-dirs.json"]),
    ("kafka verify", "log_dirs", "log-dirs", ["kafka", "verify", "kafka-plan.json", "{}"]),
    (
        "export flink",
        "plan",
        "plan",
        [
            "export",
            "flink",
            "{}",
            "--snapshot",
            "snapshot.json",
            "--custom-assignment",
            "--out",
            "out/t.json",
        ],
    ),
    (
        "export flink",
        "snapshot",
        "snapshot",
        ["export", "flink", "plan.json", "--snapshot", "{}", "--custom-assignment", "--out", "out/t.json"],
    ),
    (
        "flink advise",
        "source",
        "snapshot",
        ["flink", "advise", "{}", "--subtask-capacity", "10", "--out", "out/a.json"],
    ),
    # Read before Flink is asked anything: no Flink answers at this address.
    ("flink check", "source", "snapshot", ["flink", "check", *NO_FLINK, "--vertex", "op", "{}"]),
    ("flink rescale", "advice", "advice", ["flink", "rescale", *NO_FLINK, "--advice", "{}"]),
    ("schedule", "plan", "plan", ["schedule", "{}", "--snapshot", "snapshot.json", "--out", "out/s.json"]),
    (
        "schedule",
        "snapshot",
        "snapshot",
        ["schedule", "plan.json", "--snapshot", "{}", "--out", "out/s.json"],
    ),
    ("explain", "plan", "plan", ["explain", "{}", "--snapshot", "snapshot.json"]),
    ("explain", "snapshot", "snapshot", ["explain", "plan.json", "--snapshot", "{}"]),
    ("plot", "plan", "plan", ["plot", "{}", "--snapshot", "snapshot.json", "--out", "out/f.png"]),
    ("plot", "snapshot", "snapshot", ["plot", "plan.json", "--snapshot", "{}", "--out", "out/f.png"]),
    ("snapshot", "stats", "dataset", ["snapshot", "{}", "--out", "out/s.json"]),
    ("snapshot", "current", "stats-plan", ["snapshot", "stats", "--current", "{}", "--out", "out/s.json"]),
    (
        "plan",
        "current",
        "stats-plan",
        ["plan", "stats", "--current", "{}", "--planner", "flux", "--out", "out/p.json"],
    ),
    (
        "compare",
        "current",
        "stats-plan",
        ["compare", "stats", "--current", "{}", "--planner", "flux", "--out", "out/compare"],
    ),
]
# Commands that take no input file (their options are names, numbers and outputs).
NO_INPUT_FILES = {"planners", "schema", "flink status"}
# Options of type Path (or naming a file) that are outputs, not inputs.
OUTPUTS = {"out", "batches", "figure"}

# The good file of each kind, its suffix, and where a number sits in it (for the number classes):
# (kind, good file, format, the text of a number to replace).
KINDS: dict[str, tuple[str, str, str | None]] = {
    "snapshot": ("snapshot.json", "json", '"load": 3.0'),
    "plan": ("plan.json", "json", '"cost": 10.0'),
    "kafka-plan": ("kafka-plan.json", "json", '"seconds": '),
    "stats-plan": ("stats-plan.json", "json", '"seconds": '),
    "kafka-snapshot": ("kafka.json", "json", '"load": 100.0'),
    "log-dirs": ("log-dirs.json", "json", '"size": 200'),
    "current": ("current.json", "json", '"partition": 1'),
    "mtm": ("mtm.json", "json", "0.5"),
    "rates": ("rates.csv", "csv", "7.5"),
    "racks": ("racks.csv", "csv", None),  # no numbers but broker ids
    "tasks": ("tasks.csv", "csv", "3.0"),
    "counts": ("counts.csv", "csv", "6"),
    "timed-counts": ("timed.csv", "csv", "Z,3"),
    "events": ("events.csv", "csv", None),  # times and keys: text, no numbers
    "spec": ("spec.toml", "toml", "1.5"),
    "dataset": ("stats", "folder", None),
    "advice": ("advice.json", "json", '"target_utilisation": 0.7'),
    "recommendation": ("rec/recommendation.json", "json", '"share": 0.6'),
}


def _sparse_garbage(path: Path) -> None:
    """200 MB of garbage, cheaply: 64 kB of random bytes, then a hole up to 200 MB."""
    rng = random.Random(27)
    path.write_bytes(bytes(rng.randrange(256) for _ in range(1 << 16)))
    os.truncate(path, 200 * 1024 * 1024)


def _number(value: str) -> Callable[[str, str, str | None], bytes | None]:
    """The good text with its number replaced by ``value``."""

    def make(good: str, fmt: str, site: str | None) -> bytes | None:
        if site is None:
            return None
        if site.endswith(": "):  # a field whose value is unknown in advance
            start = good.index(site) + len(site)
            end = min(good.index(c, start) for c in ",}\n" if c in good[start:])
            return (good[:start] + value + good[end:]).encode()
        shown = {"NaN": "nan", "Infinity": "inf"}.get(value, value) if fmt == "toml" else value
        return good.replace(site, re.sub(r"[-0-9.]+$", shown, site), 1).encode()

    return make


def _duplicate(good: str, fmt: str, site: str | None) -> bytes | None:
    if fmt == "json":
        at = good.index("{") + 1
        return (good[:at] + '"dup": 1, "dup": 2, ' + good[at:]).encode()
    if fmt == "csv":  # a header naming a column twice
        header, _, rest = good.partition("\n")
        first = header.split(",")[0]
        return (f"{header},{first}\n" + "".join(f"{line},x\n" for line in rest.splitlines())).encode()
    if fmt == "toml":
        return (good + 'timestamp = "again"\n').encode()
    return None


def _nested(good: str, fmt: str, site: str | None) -> bytes | None:
    deep = "[" * 100_000 + "]" * 100_000
    if fmt == "json":
        at = good.index("{") + 1
        return (good[:at] + f'"deep": {deep}, ' + good[at:]).encode()
    if fmt == "toml":
        return (f"deep = {deep}\n" + good).encode()
    return None  # CSV has no nesting


# The classes of bad regular files: (name, how the bad file is made from the good text, fragments of
# the message besides the file's name). Returning None: the class does not apply to that format.
FILE_CLASSES: list[tuple[str, Callable[[str, str, str | None], bytes | None], list[str]]] = [
    ("empty file", lambda good, fmt, site: b"" if fmt != "folder" else None, []),
    (
        "gzip",
        lambda good, fmt, site: gzip.compress(good.encode()) if fmt != "folder" else None,
        ["gzip", "decompress"],
    ),
    (
        "not UTF-8",
        lambda good, fmt, site: (
            good.encode()[:12] + b"\xe9" + good.encode()[12:] if fmt != "folder" else None
        ),
        ["UTF-8", "byte 12"],
    ),
    ("duplicate keys", _duplicate, []),
    ("nested 100,000 deep", _nested, []),
    ("NaN", _number("NaN"), []),
    ("Infinity", _number("Infinity"), []),
    ("1e400", _number("1e400"), []),
    ("integer 10**400", _number("1" + "0" * 400), []),
]
# The special files: (name, how to make it at a path; None when the path is left missing).
SPECIAL_CLASSES: list[tuple[str, Callable[[Path], None], list[str]]] = [
    ("FIFO", lambda p: os.mkfifo(p), ["FIFO"]),
    ("/dev/zero", lambda p: p.symlink_to("/dev/zero"), ["device"]),
    ("/dev/urandom", lambda p: p.symlink_to("/dev/urandom"), ["device"]),
    ("folder", lambda p: p.mkdir(), []),
    ("symlink loop", lambda p: p.symlink_to(p), ["loop"]),
    ("missing", lambda p: None, ["No such file"]),
    ("200 MB of garbage", _sparse_garbage, []),
]

# A file of the right format that breaks a rule of its kind (what albic must say: fragments).
BREAKS_A_RULE: dict[str, tuple[str, list]] = {
    "snapshot": (json.dumps(FLINK_GOOD).replace('"node": "n1"', '"node": "n9"', 1), ["unknown node 'n9'"]),
    "plan": ("@plan.json", ["status is 'DONE'"]),  # made below: the plan with an unknown status
    "kafka-plan": ("@plan.json", ["not a Kafka replica id"]),
    "kafka-snapshot": ("@other.json", ["was made for another snapshot"]),
    "log-dirs": (
        STATUS + json.dumps(LOG_DIRS).replace('"broker": 2', '"broker": "two"'),
        ["integer 'broker' id"],
    ),
    "current": ('{"version": 1, "partitions": [{"topic": "t"}]}', ["expected"]),
    "mtm": ('{"schema": "albic.mtm/1", "states": [4, 5], "matrix": [[1.0]]}', []),
    "rates": ("topic,partition,rate\nt,9,1.0\n", ["t-9", "no broker holds"]),
    "racks": ("broker,rack\n1,r1\n", ["no rack"]),
    "tasks": ("load\n1.0\n", ["state_size"]),
    "counts": ("nodes\n0\n1\n", ["whole node count"]),
    "timed-counts": ("time,nodes\n2024-01-01T00:00Z,0\n", ["whole node count"]),
    "events": (EVENTS.replace("ts,", "when,", 1), ["'ts'"]),
    "spec": ('timestamp = "ts"\n\n[[operators]]\nname = "users"\nkeys = ["user"]\ncots = 1\n', ["'cots'"]),
    "advice": (
        '{"schema": "albic.flink-advice/1", "recommended": null, "reason": "key group 2 alone"}',
        ["recommends no parallelism", "key group 2 alone"],
    ),
    "recommendation": ('{"schema": "albic.recommendation/1", "decide_on": "previous"}', ["has no 'spec'"]),
}
# A plan and a snapshot that belong to each other, given one of another snapshot (the classic slip).
PAIRED = {"schedule", "explain", "plot", "export flink"}
ANOTHER = {"plan": "@other-plan.json", "snapshot": "@other.json"}


def _bad_text(world: Path, text: str, kind: str) -> bytes:
    """``text``, or the bytes of the world's file it names with a leading @ (a plan of kind
    'plan' with an unknown status)."""
    if not text.startswith("@"):
        return text.encode()
    data = (world / text[1:]).read_bytes()
    return data.replace(b'"FEASIBLE"', b'"DONE"') if kind == "plan" and text == "@plan.json" else data


def _cases() -> list[tuple[str, tuple, str, Any, list]]:
    """Every (row, class) cell: (id, row, class name, how to make the bad file, fragments)."""
    cases = []
    for row in INPUTS:
        command, dest, kind, _ = row
        good_name, fmt, site = KINDS[kind]
        for name, make, fragments in FILE_CLASSES:
            cases.append((f"{command}:{dest}:{name}", row, name, ("file", make), fragments))
        if kind in BREAKS_A_RULE:
            text, fragments = BREAKS_A_RULE[kind]
            cases.append((f"{command}:{dest}:breaks a rule", row, "breaks a rule", ("text", text), fragments))
        if command in PAIRED:
            cases.append(
                (f"{command}:{dest}:another snapshot's", row, "another", ("text", ANOTHER[kind]), [])
            )
    return cases


def _specials() -> list[tuple[str, tuple, str, Any, list]]:
    return [
        (f"{row[0]}:{row[1]}:{name}", row, name, make, fragments)
        for row in INPUTS
        for name, make, fragments in SPECIAL_CLASSES
    ]


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Path:
    """The good files every case starts from (GOOD_FILES, then MADE by albic from them)."""
    folder = tmp_path_factory.mktemp("world")
    for name, text in GOOD_FILES.items():
        (folder / name).write_text(text, encoding="utf-8")
    here = Path.cwd()
    os.chdir(folder)
    try:
        for name, argv in MADE:
            assert main(argv) in (0, 1), name
            assert (folder / name).exists(), name
    finally:
        os.chdir(here)
    return folder


def _argv(row: tuple, world: Path, bad: Path, out: Path) -> list[str]:
    made = set(GOOD_FILES) | {name for name, _ in MADE}
    words = len(row[0].split())  # the command's own words are never files
    argv = list(row[3][:words])
    for arg in row[3][words:]:
        if arg == "{}":
            arg = str(bad)
        elif arg in made:
            arg = str(world / arg)
        elif arg.startswith("out/"):
            arg = str(out / arg[4:])
        argv.append(arg)
    return argv


def _check_refusal(code: int, out: str, err: str, bad: Path, fragments: list, written: Path) -> None:
    assert "Traceback" not in err, err
    assert code == 2, (code, out, err)
    assert err.startswith("albic: error: ") and err.count("\n") == 1, err
    assert bad.name in err, ("the message names the file", err)
    for fragment in fragments:
        options = fragment if isinstance(fragment, tuple) else (fragment,)
        assert any(o in err for o in options), (fragment, err)
    assert "nan" not in out and "inf" not in out.replace("info", ""), out
    assert not any(written.iterdir()), f"written on failure: {list(written.iterdir())}"


FILE_CASES = _cases()


@pytest.mark.parametrize(
    "row, name, make, fragments", [c[1:] for c in FILE_CASES], ids=[c[0] for c in FILE_CASES]
)
def test_every_input_file_refuses_bad_files(capsys, tmp_path, world, row, name, make, fragments):
    good_name, fmt, site = KINDS[row[2]]
    how, what = make
    if fmt == "folder":
        if how == "file":
            pytest.skip("a folder input: its files are those of the statistics dataset")
    if how == "file":
        good = (world / good_name).read_text(encoding="utf-8")
        data = what(good, fmt, site)
        if data is None:
            pytest.skip(f"{name} does not apply to a {fmt} file")
    else:
        data = _bad_text(world, what, row[2])
    suffix = ".toml" if fmt == "toml" else ".csv" if fmt == "csv" else ".json"
    bad = tmp_path / f"bad-{row[2]}{suffix}"
    bad.write_bytes(data)
    out = tmp_path / "out"
    out.mkdir()
    code = main(_argv(row, world, bad, out))
    captured = capsys.readouterr()
    _check_refusal(code, captured.out, captured.err, bad, fragments, out)
    assert bad.read_bytes() == data, "the input was changed"


# The special files run in one child process, each case timed: a command that hangs on a FIFO or
# reads /dev/zero without end fails the test at the time-out instead of hanging the run (the cases
# after it are then unanswered; the first of them is the one that hung). One child, not one per
# class: each would import albic and pandas again, in the run where nothing else runs.
DRIVER = """
import io, json, sys, time, contextlib
import pandas  # imported before the clock starts: its import is not the command's work
from albic.cli.main import build_parser, main
for case in json.load(sys.stdin):
    out, err = io.StringIO(), io.StringIO()
    started = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(case["argv"])
    seconds = time.perf_counter() - started
    print(json.dumps({"id": case["id"], "code": code, "out": out.getvalue(), "err": err.getvalue(), "seconds": seconds}), flush=True)
"""
SPECIAL_CASES = _specials()
# Generous: the child imports albic and pandas, then runs every row; a hang would take forever.
SPECIAL_TIMEOUT = 120


@pytest.fixture(scope="module")
def special_results(world, tmp_path_factory) -> dict[str, Any]:
    """Every special case run in the child process; their results by id, and the child's
    ``stderr`` (a case it did not reach before its time-out is missing)."""
    cases = []
    for name, make, _ in SPECIAL_CLASSES:
        folder = tmp_path_factory.mktemp("special")
        for i, (case_id, row, _, _, _) in enumerate(c for c in SPECIAL_CASES if c[2] == name):
            bad = folder / f"bad-{i}-{row[2]}"
            make(bad)
            out = folder / f"out-{i}"
            out.mkdir()
            cases.append(
                {"id": case_id, "argv": _argv(row, world, bad, out), "bad": str(bad), "outdir": str(out)}
            )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    results: dict[str, Any] = {}
    try:
        child = subprocess.run(
            [sys.executable, "-c", DRIVER],
            input=json.dumps(cases),
            capture_output=True,
            text=True,
            timeout=SPECIAL_TIMEOUT,
            env=env,
        )
        done, results["stderr"] = child.stdout, child.stderr[-2000:]
    except subprocess.TimeoutExpired as err:
        done = err.stdout.decode() if isinstance(err.stdout, bytes) else (err.stdout or "")
        results["stderr"] = f"timed out after {SPECIAL_TIMEOUT} s"
    by_id = {c["id"]: c for c in cases}
    for line in done.splitlines():
        if line.startswith('{"id"'):
            result = json.loads(line)
            results[result["id"]] = {**by_id[result["id"]], **result}
    return results


@pytest.mark.timing
@pytest.mark.parametrize(
    "row, name, make, fragments", [c[1:] for c in SPECIAL_CASES], ids=[c[0] for c in SPECIAL_CASES]
)
def test_every_input_file_refuses_special_files_within_a_second(special_results, row, name, make, fragments):
    case_id = f"{row[0]}:{row[1]}:{name}"
    assert case_id in special_results, f"no answer: {special_results['stderr']}"
    result = special_results[case_id]
    _check_refusal(
        result["code"], result["out"], result["err"], Path(result["bad"]), fragments, Path(result["outdir"])
    )
    assert result["seconds"] < 1.0, result


def _leaf_parsers(parser: argparse.ArgumentParser, prefix: str = "") -> dict[str, argparse.ArgumentParser]:
    leaves = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found = _leaf_parsers(sub, f"{prefix} {name}".strip())
                leaves.update(found or {f"{prefix} {name}".strip(): sub})
    return leaves


def _file_like(action: argparse.Action) -> bool:
    """An option or positional that names a file or folder: of type Path, or whose metavar says so."""
    metavar = str(action.metavar or "")
    return action.type is Path or any(
        word in metavar
        for word in (".json", ".csv", ".toml", "FILE", "DIR", "SNAPSHOT", "TRACE", "PLAN_OR_MAP")
    )


def test_the_table_has_every_command_and_every_input_file():
    leaves = _leaf_parsers(build_parser())
    rows = {(command, dest) for command, dest, _, _ in INPUTS}
    assert {command for command, _ in rows} | NO_INPUT_FILES == set(leaves), (
        "a command is missing from INPUTS"
    )
    for command, sub in leaves.items():
        for action in sub._actions:
            if _file_like(action) and action.dest not in OUTPUTS:
                assert (command, action.dest) in rows, f"albic {command}: {action.dest} is not in INPUTS"
    assert {kind for _, _, kind, _ in INPUTS} <= set(KINDS)


def test_the_good_files_pass(world, tmp_path, capsys):
    """Every row with its good file: the refusals above are the bad file's doing, not the row's."""
    for command, dest, kind, argv in INPUTS:
        if command in ("precompute", "demo", "flink check", "flink rescale"):
            continue  # Spark, every planner, a running Flink (tests/engines/test_flink_live.py): inputs read first
        good = world / KINDS[kind][0]
        out = tmp_path / f"out-{command}-{dest}".replace(" ", "-")
        out.mkdir()
        code = main(_argv((command, dest, kind, argv), world, good, out))
        err = capsys.readouterr().err
        assert code in (0, 1) and "Traceback" not in err, (command, dest, err)


def test_the_size_limit_is_named_and_can_be_raised(tmp_path, capsys, monkeypatch):
    path = tmp_path / "s.json"
    path.write_text(json.dumps(GOOD))
    monkeypatch.setenv(MAX_INPUT_ENV, "100")
    assert main(["plan", str(path), "--planner", "flux"]) == 2
    err = capsys.readouterr().err
    assert "s.json" in err and "100 bytes" in err and "--max-input-size" in err and err.count("\n") == 1
    assert main(["--max-input-size", "1M", "plan", str(path), "--planner", "flux"]) == 0
    monkeypatch.setenv(MAX_INPUT_ENV, "lots")
    assert main(["plan", str(path), "--planner", "flux"]) == 2
    assert MAX_INPUT_ENV in capsys.readouterr().err


def test_a_bad_max_input_size_is_a_usage_error(capsys):
    assert main(["--max-input-size", "big", "schema", "plan"]) == 2
    assert "not a size" in capsys.readouterr().err
