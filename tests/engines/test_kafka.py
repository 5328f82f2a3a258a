"""Kafka round trip: a realistic kafka-log-dirs file (6 brokers, 3 topics, replication factor 3)
-> `albic kafka import --remove` -> `albic plan` -> `albic kafka export`, and an independent check
of the reassignment against the original cluster read straight from the test's own files."""

from __future__ import annotations

import json

import numpy as np
import pytest

from albic.cli.main import main
from albic.io import read_snapshot

TOPICS = {"orders": 8, "clicks": 6, "payments": 4}
BROKERS = [1, 2, 3, 4, 5, 6]


def cluster(seed=0):
    """Kafka's own rack-unaware placement: replica r of partition p on broker (start + p + r) % n,
    the leader first; sizes and rates skewed like real topics."""
    rng = np.random.default_rng(seed)
    layout, sizes, rates = {}, {}, {}
    for t, (topic, count) in enumerate(TOPICS.items()):
        for p in range(count):
            start = (t * 2 + p) % len(BROKERS)
            layout[(topic, p)] = [BROKERS[(start + r) % len(BROKERS)] for r in range(3)]
            sizes[(topic, p)] = int(rng.lognormal(20, 1))
            rates[(topic, p)] = round(float(rng.lognormal(12, 1)), 1)
    return layout, sizes, rates


def write_inputs(tmp_path, layout, sizes, rates):
    brokers = []
    for b in BROKERS:
        partitions = [
            {"partition": f"{t}-{p}", "size": sizes[(t, p)], "offsetLag": 0, "isFuture": False}
            for (t, p), replicas in layout.items()
            if b in replicas
        ]
        half = len(partitions) // 2  # two log directories per broker, as on real brokers
        brokers.append(
            {
                "broker": b,
                "logDirs": [
                    {"logDir": "/var/kafka/data-0", "error": None, "partitions": partitions[:half]},
                    {"logDir": "/var/kafka/data-1", "error": None, "partitions": partitions[half:]},
                ],
            }
        )
    log_dirs = tmp_path / "log-dirs.json"
    log_dirs.write_text(
        "Querying brokers for log directories information\n"
        f"Received log directory information from brokers {','.join(map(str, BROKERS))}\n"
        + json.dumps({"version": 1, "brokers": brokers})
        + "\n"
    )
    rates_csv = tmp_path / "rates.csv"
    rates_csv.write_text("topic,partition,rate\n" + "".join(f"{t},{p},{r}\n" for (t, p), r in rates.items()))
    current = tmp_path / "current.json"
    current.write_text(
        json.dumps(
            {
                "version": 1,
                "partitions": [{"topic": t, "partition": p, "replicas": r} for (t, p), r in layout.items()],
            }
        )
    )
    return log_dirs, rates_csv, current


@pytest.mark.parametrize("planner", ["milp", "flux"])
def test_remove_a_broker_round_trip(tmp_path, capsys, planner):
    layout, sizes, rates = cluster()
    log_dirs, rates_csv, current = write_inputs(tmp_path, layout, sizes, rates)
    snap_path, plan_path, out = tmp_path / "snap.json", tmp_path / "plan.json", tmp_path / "reassign.json"
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
                "3",
                "--out",
                str(snap_path),
            ]
        )
        == 0
    )
    assert "6 brokers (3 removing), 18 partitions, 54 replicas" in capsys.readouterr().out
    snap = read_snapshot(snap_path)
    assert (
        snap.key_groups[0].load == rates[("clicks", 0)]
        and snap.key_groups[0].state_size == sizes[("clicks", 0)]
    )
    assert main(["plan", str(snap_path), "--planner", planner, "--out", str(plan_path)]) == 0
    assert main(["kafka", "export", str(plan_path), "--out", str(out)]) == 0

    document = json.loads(out.read_text())
    assert document["version"] == 1
    final = dict(layout)
    for entry in document["partitions"]:
        key = (entry["topic"], entry["partition"])
        assert key in layout and entry["replicas"] != layout[key]  # only partitions that change
        final[key] = entry["replicas"]
        # Order kept: a position keeps its broker unless that broker left the partition.
        for old, new in zip(layout[key], entry["replicas"]):
            assert old == new or old not in entry["replicas"]
    for key, replicas in final.items():
        assert len(replicas) == 3 and len(set(replicas)) == 3, key
        assert 3 not in replicas and set(replicas) <= set(BROKERS), key
    moved = sum(a != b for key in final for a, b in zip(layout[key], final[key]))
    assert moved >= sum(3 in r for r in layout.values())  # every replica on broker 3 moved
    assert {(e["topic"], e["partition"]) for e in document["partitions"]} >= {
        k for k, r in layout.items() if 3 in r
    }


def test_import_adds_brokers_and_defaults_to_size_as_load(tmp_path):
    layout, sizes, rates = cluster(1)
    log_dirs, _, _ = write_inputs(tmp_path, layout, sizes, rates)
    out = tmp_path / "snap.json"
    assert main(["kafka", "import", str(log_dirs), "--add", "7,8", "--out", str(out)]) == 0
    snap = read_snapshot(out)
    assert [n.id for n in snap.nodes] == [*map(str, BROKERS), "7", "8"]
    assert all(kg.load == kg.state_size == sizes[(kg.operator, kg.index)] for kg in snap.key_groups)
    # Without --current the replica order is ascending broker id.
    first = [snap.assignment[f"orders-0/{r}"] for r in range(3)]
    assert first == sorted(first, key=int) and sorted(map(int, first)) == sorted(layout[("orders", 0)])


@pytest.mark.parametrize(
    "args, message",
    [
        (["--remove", "9"], "--remove 9: no broker 9 in the log dirs (brokers: 1, 2, 3, 4, 5, 6)"),
        (["--add", "2"], "--add 2: broker 2 already exists"),
        (["--remove", "x"], "expected broker ids like 1,2,3, got 'x'"),
    ],
)
def test_import_refuses_bad_broker_lists(tmp_path, capsys, args, message):
    log_dirs, _, _ = write_inputs(tmp_path, *cluster())
    assert main(["kafka", "import", str(log_dirs), *args, "--out", str(tmp_path / "s.json")]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and not (tmp_path / "s.json").exists()


def test_a_planner_without_spread_is_refused_on_kafka_snapshots(tmp_path, capsys):
    log_dirs, _, _ = write_inputs(tmp_path, *cluster())
    snap = tmp_path / "s.json"
    assert main(["kafka", "import", str(log_dirs), "--out", str(snap)]) == 0
    assert main(["plan", str(snap), "--planner", "ssm"]) == 2
    assert "'spread' values" in capsys.readouterr().err


def test_export_refuses_a_snapshot_the_plan_was_not_made_for(tmp_path, capsys):
    layout, sizes, rates = cluster()
    log_dirs, rates_csv, _ = write_inputs(tmp_path, layout, sizes, rates)
    snap, plan, batches = tmp_path / "snap.json", tmp_path / "plan.json", tmp_path / "batches"
    argv = ["kafka", "import", log_dirs, "--rates", rates_csv, "--remove", "3", "--out", snap]
    assert main([str(a) for a in argv]) == 0
    assert main(["plan", str(snap), "--planner", "flux", "--out", str(plan)]) == 0
    other = tmp_path / "other.json"  # the cluster a moment later: one partition grew
    document = json.loads(snap.read_text())
    document["key_groups"][0]["state_size"] += 1
    other.write_text(json.dumps(document))
    capsys.readouterr()
    export = ["kafka", "export", str(plan), "--batches", str(batches), "--snapshot"]
    assert main([*export, str(other)]) == 2
    err = capsys.readouterr().err
    assert "was made for another snapshot" in err and str(other) in err and err.count("\n") == 1
    assert not batches.exists()
    assert main([*export, str(snap)]) == 0 and any(batches.iterdir())
