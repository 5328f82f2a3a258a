"""The README's Kafka command lines run as written, on a cluster file the test writes."""
from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from albic.cli import main
from test_kafka import cluster, write_inputs  # tests/engines is on sys.path (rootdir-less tests)

README = Path(__file__).resolve().parents[2] / "README.md"


def kafka_block() -> list[str]:
    blocks = re.findall(r"```bash\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)
    block = next(b for b in blocks if "albic kafka import log-dirs.json" in b)
    return [line.split("#")[0].strip() for line in block.splitlines() if line.strip()]


def test_the_kafka_commands_of_the_readme_run(tmp_path, monkeypatch, capsys):
    log_dirs, rates, _ = write_inputs(tmp_path, *cluster())
    log_dirs.rename(tmp_path / "log-dirs.json")
    rates.rename(tmp_path / "rates.csv")
    monkeypatch.chdir(tmp_path)
    lines = kafka_block()
    assert len(lines) == 5
    for line in lines:
        argv = shlex.split(line)
        assert argv[0] == "albic"
        assert main(argv[1:]) == 0, line
    out = capsys.readouterr().out
    assert "batches" in out and "warning: removing node" not in out
    document = json.loads((tmp_path / "reassignment.json").read_text())
    assert document["partitions"] and all(3 not in p["replicas"] for p in document["partitions"])
