"""`albic demo`: `albic compare` on the bundled flights, every budgeted planner at the same budgets.

The pandas twin keeps these tests free of Spark (tests/spark/test_stats_flights.py runs the Spark path)."""

from __future__ import annotations

import pandas as pd

# The test planners and their private registry: tests/test_cli.py.
from test_cli import Broken, GreedyBudget, registry  # noqa: E402,F401  (registry is a fixture)

import albic
from albic.cli.main import main
from albic.core.registry import available_planners
from albic.io import read_snapshots


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    err = "".join(line for line in err.splitlines(True) if not line.startswith("albic: warning:"))
    return code, out, err


def test_demo_compares_every_planner_at_the_same_budgets(capsys, tmp_path):
    out = tmp_path / "demo" / "nested"
    argv = [
        "demo",
        "--out",
        out,
        "--engine",
        "pandas",
        "--days",
        "1",
        "--key-groups",
        "8",
        "--budgets",
        "max_moves=2,6",
        "--time-limit",
        "0.1",
    ]
    code, stdout, err = run(capsys, *argv)
    assert (code, err) == (0, "")
    summary = pd.read_csv(out / "summary.csv")
    registered = available_planners()
    budgeted = {n for n, cls in registered.items() if "max_moves" in cls.parameter_names()}
    assert {"flux", "milp", "albic"} <= budgeted
    # mtm without a PMC table would plan exactly as ssm: the demo leaves it out, saying so and how
    # to include it, rather than print ssm's row under mtm's name.
    assert set(summary["planner"]) == set(registered) - {"mtm"}
    # Storm's default is the reference (the flights' key groups are albic's): every other row has
    # its paired difference to it, and the verdict line is the one the summary's figures make.
    assert summary.loc[summary["reference"], "planner"].tolist() == ["storm_default"]
    judged = summary[~summary["reference"] & summary["mean_load_distance_pct"].notna()]
    assert judged["vs_reference_pct"].notna().all()
    assert (judged["vs_reference_low"] <= judged["vs_reference_high"]).all()
    (verdict,) = [line for line in stdout.splitlines() if line.startswith("verdict: ")]
    assert verdict == albic.verdict(summary.set_index("planner"))
    left_out = [line for line in stdout.splitlines() if line.startswith("mtm is left out")]
    assert len(left_out) == 1 and "plans exactly as ssm" in left_out[0]
    assert "--planner mtm:operator=OP,table=PMC_DIR" in left_out[0]
    for name in set(registered) - {"mtm"}:
        rows = summary[summary["planner"] == name]
        expected = [2.0, 6.0] if name in budgeted else []
        assert sorted(rows["budget"].dropna().tolist()) == expected, name
    replayed = pd.read_csv(out / "replay.csv")
    periods = replayed["period"].nunique()
    assert periods == len(list(read_snapshots(out / "stats"))) and periods > 10
    runs = replayed.groupby(["planner", replayed["budget"].fillna(-1)]).size()
    assert (runs == periods).all() and len(runs) == len(summary)
    # Budgets are kept, period by period.
    with_budget = replayed[replayed["budget"].notna()]
    assert (with_budget["moves"] <= with_budget["budget"]).all()
    # ssm plans the 8-operator snapshots operator by operator: no period unsupported.
    assert (replayed[replayed["planner"] == "ssm"]["status"] != "UNSUPPORTED").all()
    figures = [line for line in stdout.splitlines() if line.startswith("wrote ")]
    assert figures and figures[0].index("tradeoff.png") < figures[0].index("load_distance.png")
    for figure in ("tradeoff.png", "load_distance.png", "migration_cost.png", "stream.png", "solve_time.png"):
        assert (out / figure).read_bytes()[:4] == b"\x89PNG"


def test_demo_reports_a_broken_planner_and_goes_on(capsys, tmp_path, registry):  # noqa: F811 (the fixture imported above)
    registry(Broken)
    registry(GreedyBudget)
    argv = [
        "demo",
        "--out",
        tmp_path,
        "--engine",
        "pandas",
        "--days",
        "1",
        "--key-groups",
        "4",
        "--planners",
        "test_broken,test_greedy",
        "--budgets",
        "max_moves=1",
    ]
    code, stdout, err = run(capsys, *argv)
    assert code == 1
    assert "internal error in planner test_broken: PlannerBugError" in err
    summary = pd.read_csv(tmp_path / "summary.csv").set_index("planner")
    # Every period asked failed; the first is scored, not planned (nothing is known before it).
    assert summary.loc["test_broken", "errors"] == summary.loc["test_broken", "periods"] - 1 > 0
    assert summary.loc["test_broken", "planned"] == 0
    assert pd.isna(summary.loc["test_broken", "mean_load_distance_pct"])  # no result, no number
    assert summary.loc["test_greedy", "errors"] == 0 and summary.loc["test_greedy", "budget"] == 1
    assert 0 < summary.loc["test_greedy", "total_moves"] <= summary.loc["test_greedy", "periods"]


def test_demo_rejects_an_unknown_planner_before_any_work(capsys, tmp_path):
    code, _, err = run(capsys, "demo", "--out", tmp_path / "d", "--engine", "pandas", "--planners", "nope")
    assert code == 2 and "'nope'" in err and "flux" in err and "Traceback" not in err
    assert not (tmp_path / "d").exists()
