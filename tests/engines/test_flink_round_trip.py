"""Round trip: an event trace -> `albic stats` with Flink's hash -> a plan -> `albic export flink`;
the key groups in the statistics are Flink's own, a flink_default plan exports as Flink's own ranges
and SSM's intervals as a labelled custom assignment."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from albic.cli.main import main
from albic.core.flink_keys import flink_key_group, flink_key_group_ranges
from albic.core.planner import get_planner
from albic.io import read_snapshots, write_plan


def test_trace_to_flink_ranges(flink_trace, tmp_path, capsys):
    trace, spec, events = flink_trace
    stats = tmp_path / "stats"
    assert (
        main(
            [
                "stats",
                str(trace),
                "--spec",
                str(spec),
                "--engine",
                "pandas",
                "--period",
                "1h",
                "--out",
                str(stats),
            ]
        )
        == 0
    )
    snapshots = list(read_snapshots(stats))
    first = snapshots[0]
    assert len(first.key_groups) == 32  # max_parallelism key groups per operator

    # The statistics' key groups are Flink's: events per key group as flink_key_group says.
    hour = events[events["ts"] < pd.Timestamp("2024-01-01 01:00")]
    expected = np.bincount(flink_key_group(hour["user"].tolist(), max_parallelism=32), minlength=32)
    counts = np.array([kg.load for kg in first.key_groups]) / max(kg.load for kg in first.key_groups)
    assert np.allclose(counts, expected / expected.max())

    # Stock Flink: flink_default's plan is Flink's split, and the export writes Flink's own ranges
    # over the statistics' key groups, each on the node the plan put them on.
    plan = get_planner("flink_default").plan(first)
    write_plan(plan, tmp_path / "plan.json")
    assert (
        main(
            [
                "export",
                "flink",
                str(tmp_path / "plan.json"),
                "--snapshot",
                str(stats),
                "--period",
                "0",
                "--out",
                str(tmp_path / "ranges.json"),
            ]
        )
        == 0
    )
    document = json.loads((tmp_path / "ranges.json").read_text())
    body = document["operators"]["sessions"]
    assert body["max_parallelism"] == 32 and body["parallelism"] == len(first.nodes)
    assert [(r["start"], r["end"]) for r in body["ranges"]] == flink_key_group_ranges(32, len(first.nodes))
    for r in body["ranges"]:  # and each range is where the plan put those key groups
        assert {plan.assignment[f"sessions/{g}"] for g in range(r["start"], r["end"] + 1)} == {r["node"]}
    assert "sessions: stock Flink at parallelism" in capsys.readouterr().out

    # SSM's intervals are a custom assignment: refused as stock Flink, written with the label.
    ssm = get_planner("ssm", tau=0.5).plan(first)
    write_plan(ssm, tmp_path / "ssm.json")
    assert (
        main(
            [
                "export",
                "flink",
                str(tmp_path / "ssm.json"),
                "--snapshot",
                str(stats),
                "--period",
                "0",
                "--custom-assignment",
                "--out",
                str(tmp_path / "table.json"),
            ]
        )
        == 0
    )
    table = json.loads((tmp_path / "table.json").read_text())["operators"]["sessions"]
    assert table["assignment"] == [ssm.assignment[f"sessions/{g}"] for g in range(32)]
    assert table["key_hash"] == "flink"
