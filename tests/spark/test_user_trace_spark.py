"""A user's own trace through the command line on Spark: events CSV + TOML spec -> `albic stats`
-> `albic plan STATS_DIR --period P` and `albic compare --budgets` (the pandas path:
tests/test_user_trace.py). The two engines' statistics give the same plan."""

from __future__ import annotations

import json

import pandas as pd

from albic.cli.main import main
from albic.core import checks
from albic.io import plan_from_dict
from albic.io.periods import read_input_snapshot


def test_a_user_trace_from_spark_statistics_to_a_comparison(
    spark, user_trace, user_trace_periods, tmp_path, capsys
):
    events, spec = user_trace
    common = ["--spec", str(spec), "--key-groups", "8", "--nodes", "2:4"]
    assert (
        main(
            [
                "stats",
                str(events),
                *common,
                "--master",
                spark.sparkContext.master,
                "--out",
                str(tmp_path / "spark"),
            ]
        )
        == 0
    )
    assert main(["stats", str(events), *common, "--engine", "pandas", "--out", str(tmp_path / "pandas")]) == 0
    capsys.readouterr()

    plans = {}
    for engine in ("spark", "pandas"):
        assert (
            main(
                [
                    "plan",
                    str(tmp_path / engine),
                    "--period",
                    user_trace_periods[3],
                    "--planner",
                    "flux",
                    "-p",
                    "max_moves=2",
                ]
            )
            == 0
        )
        plans[engine] = json.loads(capsys.readouterr().out)
    assert plans["spark"]["assignment"] == plans["pandas"]["assignment"]
    snapshot = read_input_snapshot(tmp_path / "spark", 3)
    assert snapshot.period == user_trace_periods[3]
    checks.check_plan(snapshot, plan_from_dict(plans["spark"]), max_moves=2)

    out = tmp_path / "compare"
    assert (
        main(
            [
                "compare",
                str(tmp_path / "spark"),
                "--planner",
                "flux",
                "--planner",
                "cola",
                "--budgets",
                "max_moves=1,3",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    replayed = pd.read_csv(out / "replay.csv")
    assert sorted(replayed["period"].unique()) == user_trace_periods
    budgeted = replayed[replayed["planner"] == "flux"]
    assert sorted(budgeted["budget"].unique()) == [1, 3] and (budgeted["moves"] <= budgeted["budget"]).all()
    assert (out / "tradeoff.png").read_bytes()[:4] == b"\x89PNG"
