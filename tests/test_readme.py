"""The README's Python examples run as written (a newcomer copies them first)."""

import json
import re
import sys
import types
from pathlib import Path

from albic.stats.node_counts import DEFAULT_NODES

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks():
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_every_python_example_of_the_readme_runs(capsys, monkeypatch):
    blocks = python_blocks()
    assert len(blocks) >= 3
    # One importable module, as a reader's own file would be (planners must pickle for Spark).
    module = types.ModuleType("albic_readme_examples")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    for block in blocks:  # in order, in one namespace, as a reader would paste them
        exec(compile(block, str(README), "exec"), module.__dict__)
    out = capsys.readouterr().out
    assert "flux: FEASIBLE, 1 move, migration cost 9.00 KiB (30.00% of state)" in out
    assert "count/0: n1 -> n3 (9216 bytes)" in out


def command_blocks():
    """The README's shell blocks that start from a user's own events.csv + topology.toml."""
    blocks = re.findall(r"```bash\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)
    return [b for b in blocks if "events.csv" in b]


def test_the_readme_commands_from_a_user_trace_run_as_written(tmp_path, monkeypatch, capsys):
    import shlex

    import numpy as np
    import pandas as pd

    from albic.cli.main import main

    text = README.read_text(encoding="utf-8")
    (tmp_path / "topology.toml").write_text(re.findall(r"```toml\n(.*?)```", text, flags=re.S)[0])
    # The events.csv the TOML block describes (columns ts,user,city,amount): six busy hours.
    rng = np.random.default_rng(1)
    n = 600
    pd.DataFrame(
        {
            "ts": pd.Timestamp("2026-01-05T08:00Z")
            + pd.to_timedelta(np.sort(rng.integers(0, 6 * 3600, n)), "s"),
            "user": [f"u{u}" for u in rng.zipf(1.5, n) % 50],
            "city": [f"c{c}" for c in rng.zipf(1.3, n) % 12],
            "amount": rng.random(n).round(2),
        }
    ).to_csv(tmp_path / "events.csv", index=False)
    monkeypatch.chdir(tmp_path)
    lines = [line for block in command_blocks() for line in block.splitlines() if line.startswith("albic ")]
    assert len(lines) >= 3
    for line in lines:
        code = main(shlex.split(line)[1:])
        assert code == 0, (line, capsys.readouterr())
    summary = pd.read_csv(tmp_path / "comparison" / "summary.csv")
    assert {"flux", "milp:time_limit=0.2", "cola", "storm_default"} == set(summary["planner"])
    assert summary.loc[summary["reference"], "planner"].tolist() == ["storm_default"]
    # An events file plans on a fixed cluster by default, so the engine's own split moves nothing.
    manifest = json.loads((tmp_path / "stats" / "manifest.json").read_text())
    assert manifest["node_count_rule"]["kind"] == "fixed"
    assert manifest["node_count_rule"]["n_min"] == DEFAULT_NODES
    replay = pd.read_csv(tmp_path / "comparison" / "replay.csv")
    reference = replay[replay["planner"] == "storm_default"]
    assert len(reference) == 6 and (reference["moves"] == 0).all()
    assert (tmp_path / "plan.json").exists() and (tmp_path / "comparison" / "tradeoff.png").exists()
