"""Kafka as operators run it, against the tools' real formats: the log-dirs file in every shape
`kafka-log-dirs.sh --describe` gives it (LogDirsCommand: status lines, then Jackson's one-line JSON
of HashMaps, keys in any order; the same JSON pretty-printed), racks honoured by the planners
(checked here independently over many random clusters), reassignment files that
`kafka-reassign-partitions.sh --execute` accepts (its parseExecuteAssignmentArgs rules, restated
below) cut into batches that add up to the plan with at most K partition moves per broker, and a
verification that names exactly the partitions left unmoved."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from test_kafka import BROKERS, cluster, write_inputs  # tests/engines is on sys.path

from albic import UnsupportedSnapshotError, available_planners, get_planner
from albic.cli.main import main
from albic.core.model import KeyGroup, Move, Node, Snapshot
from albic.core.plan import Plan
from albic.io import read_snapshot, write_plan, write_snapshot
from albic.rollout import kafka

HONOURING = {"milp", "albic", "flux"}


# -- what the tools print and accept --------------------------------------------------------------


def log_dirs_document(layout, sizes, brokers=BROKERS, *, future=(), error_on=None):
    """The document LogDirsCommand.formatAsJson builds: {"version": 1, "brokers": [{"broker",
    "logDirs": [{"logDir", "error", "partitions": [{"partition", "size", "offsetLag",
    "isFuture"}]}]}]}, from HashMaps (so in no particular key order: here "brokers" first)."""
    out = []
    for b in brokers:
        parts = [
            {"size": sizes[(t, p)], "partition": f"{t}-{p}", "isFuture": False, "offsetLag": 0}
            for (t, p), replicas in sorted(layout.items())
            if b in replicas
        ]
        parts += [
            {"size": 1, "partition": f"{t}-{p}", "isFuture": True, "offsetLag": 0}
            for (t, p), broker in future
            if broker == b
        ]
        error = "org.apache.kafka.common.errors.KafkaStorageException" if b == error_on else None
        out.append(
            {"logDirs": [{"partitions": parts, "error": error, "logDir": "/var/kafka/data"}], "broker": b}
        )
    return {"brokers": out, "version": 1}


def tool_output(document, *, status=True, pretty=False):
    text = json.dumps(document, indent=2 if pretty else None)
    if status:
        text = (
            "Querying brokers for log directories information\n"
            "Received log directory information from brokers "
            + ",".join(str(b["broker"]) for b in document["brokers"])
            + "\n"
            + text
        )
    return text + "\n"


def kafka_execute_refusal(document) -> str | None:
    """ReassignPartitionsCommand.parseExecuteAssignmentArgs / parsePartitionReassignmentData
    (apache/kafka tools): what `--execute` refuses a reassignment file for, or None."""
    if document.get("version", 1) != 1:
        return f"Not supported version field value {document['version']}"
    partitions = document.get("partitions", [])
    if not partitions:
        return "Partition reassignment list cannot be empty"
    for p in partitions:
        if not isinstance(p["topic"], str) or not isinstance(p["partition"], int):
            return "bad topic or partition"
        if not all(isinstance(r, int) and not isinstance(r, bool) for r in p["replicas"]):
            return "replicas must be ints"
        if "log_dirs" in p and len(p["log_dirs"]) != len(p["replicas"]):
            return "Size of replicas list is different from size of log dirs list"
    if any(not p["replicas"] for p in partitions):
        return "Partition replica list cannot be empty"
    keys = [(p["topic"], p["partition"]) for p in partitions]
    if len(set(keys)) != len(keys):
        return "Partition reassignment contains duplicate topic partitions"
    if any(len(set(p["replicas"])) != len(p["replicas"]) for p in partitions):
        return "Partition replica lists may not contain duplicate entries"
    return None


# -- import ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("status, pretty", [(True, False), (True, True), (False, True), (False, False)])
def test_the_tools_output_imports_in_every_shape(tmp_path, status, pretty):
    layout, sizes, _ = cluster()
    document = log_dirs_document(layout, sizes, future=[(("orders", 0), 6)])
    path = tmp_path / "log-dirs.json"
    path.write_text(tool_output(document, status=status, pretty=pretty))
    assert main(["kafka", "import", str(path), "--out", str(tmp_path / "s.json")]) == 0
    snap = read_snapshot(tmp_path / "s.json")
    held = {}
    for kg in snap.key_groups:
        held.setdefault((kg.operator, kg.index), set()).add(int(snap.assignment[kg.id]))
        assert kg.state_size == sizes[(kg.operator, kg.index)]
    assert held == {key: set(replicas) for key, replicas in layout.items()}  # isFuture skipped


@pytest.mark.parametrize(
    "text, message",
    [
        (
            'Querying brokers for log directories information\n{"version": 1, "brokers": [\n',
            "not valid JSON at line 3 column 1",
        ),
        ("Querying brokers for log directories information\n", "no JSON document found"),
        ('{"version": 1, "brokers": []}\ntrailing words\n', "unexpected text after the JSON document"),
        ('{"version": 1}\n', 'has no "brokers" list'),
    ],
)
def test_a_bad_log_dirs_file_is_named_as_such(tmp_path, capsys, text, message):
    path = tmp_path / "dirs.json"
    path.write_text(text)
    assert main(["kafka", "import", str(path), "--out", str(tmp_path / "s.json")]) == 2
    err = capsys.readouterr().err
    assert f"log-dirs file {path}" in err and message in err and err.count("\n") == 1
    assert "snapshot" not in err.split("log-dirs file")[0].lower() and not (tmp_path / "s.json").exists()


def test_a_log_directory_with_an_error_stops_the_import(tmp_path, capsys):
    layout, sizes, _ = cluster()
    path = tmp_path / "dirs.json"
    path.write_text(tool_output(log_dirs_document(layout, sizes, error_on=4)))
    assert main(["kafka", "import", str(path), "--out", str(tmp_path / "s.json")]) == 2
    assert "KafkaStorageException" in capsys.readouterr().err


def test_racks_go_into_the_snapshot(tmp_path, capsys):
    layout, sizes, rates = cluster()
    log_dirs, _, _ = write_inputs(tmp_path, layout, sizes, rates)
    racks = tmp_path / "racks.csv"
    racks.write_text("broker,rack\n" + "".join(f"{b},rack-{'abc'[b % 3]}\n" for b in [*BROKERS, 7]))
    assert (
        main(
            [
                "kafka",
                "import",
                str(log_dirs),
                "--racks",
                str(racks),
                "--add",
                "7",
                "--out",
                str(tmp_path / "s.json"),
            ]
        )
        == 0
    )
    snap = read_snapshot(tmp_path / "s.json")
    assert {n.id: n.rack for n in snap.nodes} == {str(b): f"rack-{'abc'[b % 3]}" for b in [*BROKERS, 7]}
    capsys.readouterr()
    racks.write_text("broker,rack\n1,a\n2,b\n")
    assert (
        main(["kafka", "import", str(log_dirs), "--racks", str(racks), "--out", str(tmp_path / "t.json")])
        == 2
    )
    err = capsys.readouterr().err
    assert "--racks: brokers 3, 4, 5, 6 have no rack in the racks file" in err
    # The message names each file it speaks of: the log-dirs file and the racks file.
    assert err.startswith(f"albic: error: log-dirs file {log_dirs}: ")
    assert f"the racks file (racks file {racks})" in err


# -- racks in the planners ------------------------------------------------------------------------


def rack_cluster(rng, *, n_brokers, n_racks, partitions, rf, removing=0, new=0):
    """Brokers on racks round-robin, partitions placed rack-blind at random (so the planners have
    something to repair), the first ``removing`` brokers leaving, ``new`` empty ones added."""
    total = n_brokers + new
    nodes = [Node(str(i + 1), removing=i < removing, rack=f"r{i % n_racks}") for i in range(total)]
    key_groups, assignment = [], {}
    for p in range(partitions):
        for r, b in enumerate(rng.choice(n_brokers, rf, replace=False).tolist()):
            kid = f"t-{p}/{r}"
            key_groups.append(
                KeyGroup(
                    kid,
                    "t",
                    float(rng.integers(1, 30)),
                    float(rng.integers(10, 1000)),
                    index=p,
                    spread=f"t-{p}",
                )
            )
            assignment[kid] = str(b + 1)
    return Snapshot(nodes, key_groups, assignment)


def most_even(rf, active_sizes):
    """The most even spread of rf replicas over racks of these sizes (one per node at most), as a
    count vector sorted in decreasing order -- by trying every way to spread them."""
    best = None
    for counts in itertools.product(*(range(min(b, rf) + 1) for b in active_sizes)):
        if sum(counts) == rf:
            key = sorted(counts, reverse=True)
            best = key if best is None or key < best else best
    return best


@pytest.mark.parametrize("name", sorted(HONOURING))
def test_a_plan_with_racks_never_puts_two_replicas_of_a_partition_on_one_rack(name):
    """As many racks as replicas or more, a broker removed: no two replicas share a rack."""
    checked = 0
    for seed in range(25):
        rng = np.random.default_rng(seed)
        rf = int(rng.integers(2, 4))
        snap = rack_cluster(
            rng,
            n_brokers=int(rng.integers(5, 9)),
            n_racks=int(rng.integers(rf, 5)),
            partitions=int(rng.integers(3, 9)),
            rf=rf,
            removing=1,
            new=int(rng.integers(0, 2)),
        )
        active_racks = {n.rack for n in snap.nodes if not n.removing}
        if len(active_racks) < rf:
            continue
        plan = get_planner(name).plan(snap)
        assert plan.status.value in ("OPTIMAL", "FEASIBLE"), (seed, plan.details)
        rack = {n.id: n.rack for n in snap.nodes}
        for p in {kg.spread for kg in snap.key_groups}:
            racks = [rack[plan.assignment[kg.id]] for kg in snap.key_groups if kg.spread == p]
            assert len(racks) == len(set(racks)), (seed, p, racks)
        checked += 1
    assert checked >= 15


@pytest.mark.parametrize("name", sorted(HONOURING))
def test_with_fewer_racks_than_replicas_they_spread_as_evenly_as_the_racks_allow(name):
    checked = 0
    for seed in range(20):
        rng = np.random.default_rng(100 + seed)
        snap = rack_cluster(
            rng,
            n_brokers=int(rng.integers(5, 9)),
            n_racks=2,
            partitions=int(rng.integers(3, 7)),
            rf=3,
            new=int(rng.integers(0, 2)),
        )
        plan = get_planner(name).plan(snap)
        assert plan.status.value in ("OPTIMAL", "FEASIBLE")
        sizes = {}
        for n in snap.nodes:
            sizes[n.rack] = sizes.get(n.rack, 0) + 1
        rack = {n.id: n.rack for n in snap.nodes}
        for p in {kg.spread for kg in snap.key_groups}:
            counts = dict.fromkeys(sizes, 0)
            for kg in snap.key_groups:
                if kg.spread == p:
                    counts[rack[plan.assignment[kg.id]]] += 1
            assert sorted(counts.values(), reverse=True) == most_even(3, list(sizes.values())), (seed, p)
        checked += 1
    assert checked == 20


@pytest.mark.parametrize("name", sorted(set(available_planners()) - HONOURING))
def test_planners_that_cannot_honour_racks_refuse_cleanly(name):
    snap = rack_cluster(np.random.default_rng(0), n_brokers=6, n_racks=3, partitions=4, rf=3)
    with pytest.raises(UnsupportedSnapshotError):
        get_planner(name).plan(snap)


def test_a_spread_planner_without_the_racks_tag_is_refused():
    from albic.core.planner import PlannerTags
    from albic.planners.flux import FluxPlanner

    class RackBlind(FluxPlanner):
        name = "rack_blind"

        def tags(self):
            return PlannerTags(budget=True, spread=True)

    snap = rack_cluster(np.random.default_rng(0), n_brokers=6, n_racks=3, partitions=4, rf=3)
    with pytest.raises(UnsupportedSnapshotError, match="racks"):
        RackBlind().plan(snap)


# -- export: leadership, nothing to do, batches ---------------------------------------------------


def test_a_reorder_is_a_leadership_change_not_a_move(tmp_path, capsys):
    snap = Snapshot(
        [Node("1"), Node("2"), Node("3")],
        [
            KeyGroup("t-0/0", "t", 1.0, 1.17e9, index=0, spread="t-0"),
            KeyGroup("t-0/1", "t", 1.0, 1.17e9, index=0, spread="t-0"),
        ],
        {"t-0/0": "1", "t-0/1": "2"},
    )
    plan = Plan(
        "by-hand",
        "FEASIBLE",
        {"t-0/0": "2", "t-0/1": "1"},
        moves=(Move("t-0/0", "1", "2", 1.17e9), Move("t-0/1", "2", "1", 1.17e9)),
    )
    changes = kafka.partition_changes(plan)
    assert changes["moves"] == [] and changes["leadership"] == [
        {"topic": "t", "partition": 0, "from": [1, 2], "to": [2, 1], "leader": 2}
    ]
    write_plan(plan, tmp_path / "plan.json")
    write_snapshot(snap, tmp_path / "snap.json")
    assert main(["kafka", "export", str(tmp_path / "plan.json"), "--out", str(tmp_path / "r.json")]) == 0
    out = capsys.readouterr().out
    assert "0 partitions to move (0 replica copies, 0 bytes); 1 leadership-only reorders" in out
    assert json.loads((tmp_path / "r.json").read_text())["partitions"] == [
        {"topic": "t", "partition": 0, "replicas": [2, 1]}
    ]
    assert (
        main(
            [
                "kafka",
                "export",
                str(tmp_path / "plan.json"),
                "--batches",
                str(tmp_path / "b"),
                "--snapshot",
                str(tmp_path / "snap.json"),
            ]
        )
        == 0
    )
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == [
        "batches.json",
        "leader-election.json",
        "leadership.json",
        "run.sh",
    ]


def test_a_plan_with_nothing_to_reassign_writes_no_file(tmp_path, capsys):
    snap = Snapshot(
        [Node("1"), Node("2")], [KeyGroup("t-0/0", "t", 1.0, 5.0, index=0, spread="t-0")], {"t-0/0": "1"}
    )
    write_plan(get_planner("flux").plan(snap), tmp_path / "plan.json")
    write_snapshot(snap, tmp_path / "snap.json")
    for extra in (
        ["--out", str(tmp_path / "r.json")],
        ["--batches", str(tmp_path / "b"), "--snapshot", str(tmp_path / "snap.json")],
    ):
        assert main(["kafka", "export", str(tmp_path / "plan.json"), *extra]) == 0
        assert "nothing to reassign" in capsys.readouterr().out
    assert not (tmp_path / "r.json").exists() and not (tmp_path / "b").exists()


def apply_reassignment(layout, document):
    """What Kafka ends with after a reassignment file: each listed partition's replicas."""
    out = dict(layout)
    for p in document["partitions"]:
        out[(p["topic"], p["partition"])] = list(p["replicas"])
    return out


@pytest.mark.parametrize("k", [1, 2, 5])
def test_batches_add_up_to_the_plan_with_at_most_k_moves_per_broker(tmp_path, k):
    for seed in range(6):
        rng = np.random.default_rng(seed)
        layout, sizes, rates = cluster(seed)
        folder = tmp_path / f"{k}-{seed}"
        folder.mkdir()
        log_dirs, rates_csv, current = write_inputs(folder, layout, sizes, rates)
        racks = folder / "racks.csv"
        racks.write_text("broker,rack\n" + "".join(f"{b},r{b % 3}\n" for b in [*BROKERS, 7]))
        remove = str(int(rng.integers(1, 7)))
        snap_path, plan_path = folder / "snap.json", folder / "plan.json"
        assert (
            main(
                [
                    "kafka",
                    "import",
                    str(log_dirs),
                    "--rates",
                    str(rates_csv),
                    "--current",
                    str(current),
                    "--racks",
                    str(racks),
                    "--remove",
                    remove,
                    "--add",
                    "7",
                    "--out",
                    str(snap_path),
                ]
            )
            == 0
        )
        assert (
            main(["plan", str(snap_path), "--planner", ["flux", "milp"][seed % 2], "--out", str(plan_path)])
            == 0
        )
        out = folder / "batches"
        assert (
            main(
                [
                    "kafka",
                    "export",
                    str(plan_path),
                    "--batches",
                    str(out),
                    "--snapshot",
                    str(snap_path),
                    "--max-per-broker",
                    str(k),
                    "--throttle",
                    "50000000",
                ]
            )
            == 0
        )
        manifest = json.loads((out / "batches.json").read_text())
        plan = json.loads(plan_path.read_text())
        final = {}
        for kid, node in plan["assignment"].items():
            name, r = kid.rsplit("/", 1)
            topic, p = name.rsplit("-", 1)
            final.setdefault((topic, int(p)), {})[int(r)] = int(node)
        final = {key: [by[r] for r in sorted(by)] for key, by in final.items()}
        state = dict(layout)
        seen = set()
        for number, b in enumerate(manifest["batches"], start=1):
            assert b["file"] == f"batch-{number:02d}.json"
            document = json.loads((out / b["file"]).read_text())
            assert kafka_execute_refusal(document) is None
            involved, sent, received = {}, {}, {}
            for entry in document["partitions"]:
                key = (entry["topic"], entry["partition"])
                assert key not in seen  # one reassignment per partition, in one batch
                seen.add(key)
                old, new = state[key], entry["replicas"]
                added = [x for x in new if x not in old]
                assert added  # a move copies data; reorders go to leadership.json
                for broker in {old[0], *added}:  # the leader sends, the added brokers receive
                    involved[broker] = involved.get(broker, 0) + 1
                sent[old[0]] = sent.get(old[0], 0) + sizes[key] * len(added)
                for x in added:
                    received[x] = received.get(x, 0) + sizes[key]
            assert max(involved.values()) <= k
            assert b["bytes"] == sum(
                sizes[(e["topic"], e["partition"])]
                * len([x for x in e["replicas"] if x not in state[(e["topic"], e["partition"])]])
                for e in document["partitions"]
            )
            assert math.isclose(b["seconds"], max([*sent.values(), *received.values()]) / 50_000_000)
            state = apply_reassignment(state, document)
        if manifest["leadership"]:
            state = apply_reassignment(state, json.loads((out / "leadership.json").read_text()))
        assert state == final  # the batches, in order, are the plan
        script = (out / "run.sh").read_text()
        assert script.count("--execute --throttle 50000000") == len(manifest["batches"])
        positions = [script.index(f'"$here/{b["file"]}" --execute') for b in manifest["batches"]]
        assert positions == sorted(positions)


def test_batches_refuse_a_folder_with_files_in_it(tmp_path, capsys):
    layout, sizes, rates = cluster()
    log_dirs, _, _ = write_inputs(tmp_path, layout, sizes, rates)
    assert main(["kafka", "import", str(log_dirs), "--remove", "3", "--out", str(tmp_path / "s.json")]) == 0
    assert (
        main(["plan", str(tmp_path / "s.json"), "--planner", "flux", "--out", str(tmp_path / "p.json")]) == 0
    )
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "batch-09.json").write_text("{}")
    capsys.readouterr()
    assert (
        main(
            [
                "kafka",
                "export",
                str(tmp_path / "p.json"),
                "--batches",
                str(tmp_path / "b"),
                "--snapshot",
                str(tmp_path / "s.json"),
            ]
        )
        == 2
    )
    assert "is not an empty folder" in capsys.readouterr().err
    assert [p.name for p in (tmp_path / "b").iterdir()] == ["batch-09.json"]


# -- verify ---------------------------------------------------------------------------------------


def test_verify_reports_exactly_the_partitions_left_unmoved(tmp_path, capsys):
    layout, sizes, rates = cluster(2)
    log_dirs, rates_csv, current = write_inputs(tmp_path, layout, sizes, rates)
    assert (
        main(
            [
                "kafka",
                "import",
                str(log_dirs),
                "--rates",
                str(rates_csv),
                "--current",
                str(current),
                "--remove",
                "2",
                "--out",
                str(tmp_path / "s.json"),
            ]
        )
        == 0
    )
    assert (
        main(["plan", str(tmp_path / "s.json"), "--planner", "milp", "--out", str(tmp_path / "p.json")]) == 0
    )
    assert main(["kafka", "export", str(tmp_path / "p.json"), "--out", str(tmp_path / "r.json")]) == 0
    target = apply_reassignment(layout, json.loads((tmp_path / "r.json").read_text()))
    moved = sorted(k for k in layout if set(layout[k]) != set(target[k]))
    assert len(moved) >= 3
    after = tmp_path / "after.json"
    # All applied, pretty-printed with the status lines: agree.
    after.write_text(tool_output(log_dirs_document(target, sizes), pretty=True))
    capsys.readouterr()
    assert main(["kafka", "verify", str(tmp_path / "p.json"), str(after)]) == 0
    assert "agrees with the plan" in capsys.readouterr().out
    # Two partitions not moved, one halfway (old and new brokers both hold it): exactly those.
    left, halfway = moved[:2], moved[2]
    partial = {k: (layout[k] if k in left else target[k]) for k in layout}
    partial[halfway] = sorted(set(layout[halfway]) | set(target[halfway]))
    after.write_text(tool_output(log_dirs_document(partial, sizes)))
    assert main(["kafka", "verify", str(tmp_path / "p.json"), str(after)]) == 1
    out = capsys.readouterr().out
    report = kafka.verify(read_plan_json(tmp_path / "p.json"), kafka.read_log_dirs(after))
    assert {(e["topic"], e["partition"]) for e in report["unmoved"]} == {*left, halfway}
    h = next(e for e in report["unmoved"] if (e["topic"], e["partition"]) == halfway)
    assert h["missing"] == [] and h["extra"] == sorted(set(layout[halfway]) - set(target[halfway]))
    for t, p in [*left, halfway]:
        assert f"{t}-{p}: expected brokers" in out
    assert "3 partitions differ from the plan" in out


def read_plan_json(path):
    from albic.io import read_plan

    return read_plan(path)
