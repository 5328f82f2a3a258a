"""A planner that fell back to another is reported as such in every table and figure:
mtm without a PMC table plans as SSM, and its rows are SSM's plans, not a result of its own."""

from __future__ import annotations

import pandas as pd
from test_user_trace import stats_dir  # noqa: F401  (a fixture: the user trace's statistics)

import albic
from albic.cli.main import main
from albic.evaluation.plot import tradeoff
from albic.io import read_snapshots


def test_mtm_without_a_table_is_reported_as_a_fallback(stats_dir, tmp_path, capsys):  # noqa: F811
    snapshots = list(read_snapshots(stats_dir))[:4]
    plan = albic.get_planner("mtm").plan(snapshots[0])
    assert plan.details["fallback"] == "no PMC table: planned as SSM" and "fallback" in plan.summary()
    table = albic.compare(snapshots, ["mtm", "ssm"])
    mtm = table[(table["planner"] == "mtm") & table["planned"]]
    assert len(mtm) == 3 and (mtm["fallback"] != "").all()
    assert (table[table["planner"] == "ssm"]["fallback"] == "").all()
    summary = albic.summarize(table)
    assert summary.loc["mtm", "fell_back"] == 3 and summary.loc["ssm", "fell_back"] == 0
    labels = [t.get_text() for t in tradeoff(table).axes[0].get_legend().get_texts()]
    assert any("mtm (fell back 3/4)" in t for t in labels), labels
    out = tmp_path / "cmp"
    assert main(["compare", str(stats_dir), "--planner", "mtm", "--planner", "ssm", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert (
        "mtm (fell back" in printed and "planned by another planner (no PMC table: planned as SSM)" in printed
    )
    written = pd.read_csv(out / "summary.csv", index_col="planner")
    # Every period planned, all but the first (nothing is known before it).
    assert written.loc["mtm", "fell_back"] == written.loc["mtm", "periods"] - 1 > 0
