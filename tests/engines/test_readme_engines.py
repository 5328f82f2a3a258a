"""The README's Kafka and Flink command lines run as written, on inputs the tests write."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from test_kafka import cluster, write_inputs  # tests/engines is on sys.path (rootdir-less tests)

from albic.cli.main import main

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_block(marker: str) -> list[str]:
    """The command lines of the README's bash block containing ``marker`` (comments dropped)."""
    blocks = re.findall(r"```bash\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)
    block = next(b for b in blocks if marker in b)
    lines = [line.split("#")[0].strip() for line in block.splitlines()]
    return [line for line in lines if line]


def run_as_written(lines: list[str]) -> None:
    for line in lines:
        argv = shlex.split(line)
        assert argv[0] == "albic"
        assert main(argv[1:]) == 0, line


def test_the_kafka_commands_of_the_readme_run(tmp_path, monkeypatch, capsys):
    log_dirs, rates, _ = write_inputs(tmp_path, *cluster())
    log_dirs.rename(tmp_path / "log-dirs.json")
    rates.rename(tmp_path / "rates.csv")
    monkeypatch.chdir(tmp_path)
    lines = readme_block("albic kafka import log-dirs.json")
    assert len(lines) == 5
    run_as_written(lines)
    out = capsys.readouterr().out
    assert "batches" in out and "warning: removing node" not in out
    document = json.loads((tmp_path / "reassignment.json").read_text())
    assert document["partitions"] and all(3 not in p["replicas"] for p in document["partitions"])


def test_the_flink_commands_of_the_readme_run(spark, flink_trace, tmp_path, monkeypatch):
    """trace.csv + flink_topology.toml -> stats (on Spark, the default engine: the test session's,
    since the command names no master) -> ssm plan of the last period -> Flink ranges that cover
    each of the job's key groups once."""
    monkeypatch.chdir(tmp_path)  # the fixture wrote trace.csv and flink_topology.toml here
    lines = readme_block("albic stats trace.csv --spec flink_topology.toml")
    assert len(lines) == 3
    run_as_written(lines)
    document = json.loads((tmp_path / "ranges.json").read_text())
    body = document["operators"]["sessions"]
    covered = sorted(g for r in body["ranges"] for g in range(r["start"], r["end"] + 1))
    assert body["max_parallelism"] == 32 and covered == list(range(32))
