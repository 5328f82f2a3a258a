"""The README's Kafka and Flink walks run as written, on inputs the tests write: Kafka log-dirs ->
import (racks, a broker removed) -> plan -> batches -> verify on a log-dirs file that shows the plan
applied (made here by applying the batch files in order, as kafka-reassign-partitions.sh would);
a trace -> `albic stats` with Flink's hash -> `albic flink advise` -> export."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from test_kafka import BROKERS, cluster, write_inputs  # tests/engines is on sys.path (rootdir-less tests)
from test_kafka_ops import apply_reassignment, log_dirs_document, tool_output

from albic.cli.main import main
from albic.core.flink_keys import flink_key_group_ranges

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_block(marker: str) -> list[str]:
    """The command lines of the README's bash block containing ``marker`` (comments dropped)."""
    blocks = re.findall(r"```bash\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)
    block = next(b for b in blocks if marker in b)
    lines = [line.split("#")[0].strip() for line in block.splitlines()]
    return [line for line in lines if line]


def run_line(line: str) -> None:
    argv = shlex.split(line)
    assert argv[0] == "albic"
    assert main(argv[1:]) == 0, line


def test_the_kafka_walk_of_the_readme_runs(tmp_path, monkeypatch, capsys):
    layout, sizes, rates = cluster()
    log_dirs, rates_csv, _ = write_inputs(tmp_path, layout, sizes, rates)
    log_dirs.rename(tmp_path / "log-dirs.json")
    rates_csv.rename(tmp_path / "rates.csv")
    (tmp_path / "racks.csv").write_text("broker,rack\n" + "".join(f"{b},rack-{b % 2}\n" for b in BROKERS))
    monkeypatch.chdir(tmp_path)
    lines = readme_block("albic kafka import log-dirs.json")
    assert [shlex.split(line)[1:3] for line in lines] == [
        ["kafka", "import"],
        ["plan", "cluster.json"],
        ["kafka", "export"],
        ["kafka", "verify"],
        ["explain", "plan.json"],
    ]
    for line in lines:
        if "kafka verify" in line:
            # What the cluster shows once run.sh is done: the batch files applied in order.
            manifest = json.loads((tmp_path / "batches" / "batches.json").read_text())
            state = dict(layout)
            for b in manifest["batches"]:
                state = apply_reassignment(state, json.loads((tmp_path / "batches" / b["file"]).read_text()))
            (tmp_path / "log-dirs-after.json").write_text(
                tool_output(log_dirs_document(state, sizes), pretty=True)
            )
            assert all(3 not in replicas for replicas in state.values())  # broker 3 emptied
            # Two racks for three replicas: two on one rack, one on the other, never all on one.
            assert all(
                sorted([b % 2 for b in replicas].count(r) for r in (0, 1)) == [1, 2]
                for replicas in state.values()
            )
        run_line(line)
    out = capsys.readouterr().out
    assert "agrees with the plan" in out and "warning: removing node" not in out
    assert (tmp_path / "batches" / "run.sh").exists() and (tmp_path / "batches" / "batch-01.json").exists()


def test_the_flink_walk_of_the_readme_runs(spark, flink_trace, tmp_path, monkeypatch):
    """trace.csv + flink_topology.toml -> stats (on Spark, the default engine: the test session's,
    since the command names no master) -> advice -> Flink's ranges at the recommended parallelism."""
    monkeypatch.chdir(tmp_path)  # the fixture wrote trace.csv and flink_topology.toml here
    lines = readme_block("albic stats trace.csv --spec flink_topology.toml")
    assert [shlex.split(line)[1:3] for line in lines] == [
        ["stats", "trace.csv"],
        ["flink", "advise"],
        ["export", "flink"],
    ]
    for line in lines:
        run_line(line)
    advice = json.loads((tmp_path / "advice.json").read_text())
    assert advice["recommended"] is not None and (tmp_path / "advice.png").stat().st_size > 1000
    document = json.loads((tmp_path / "ranges.json").read_text())
    body = document["operators"]["sessions"]
    assert body["max_parallelism"] == 32 and body["parallelism"] == advice["recommended"]
    assert [(r["start"], r["end"]) for r in body["ranges"]] == flink_key_group_ranges(
        32, advice["recommended"]
    )
