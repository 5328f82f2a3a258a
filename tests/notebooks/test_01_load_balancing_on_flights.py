"""Notebook 01 runs at its own parameters (four weeks of daily periods, the pandas twin); its claims
(the JSON of its cell tagged ``values``) equal the committed ones, and are checked here against the
replay tables it wrote, forward (``replay.csv``: each period planned from the one before, scored on
its own) and under the oracle (``replay_hindsight.csv``: each period planned from its own
statistics), and from its recommendation file."""

import json
import math

import pandas as pd
import pytest

import albic
from albic.evaluation.compare import NO_PLAN
from albic.evaluation.plot import FIGURES

NOTEBOOK = "01_load_balancing_on_flights.ipynb"
BUDGETS = [2, 8, 16]
ORACLE = {"flux", "milp", "storm_default", "consistent_hashing"}


def _run(planner: str, budget: float) -> str:
    name = planner.split(":")[0]
    return name if math.isnan(budget) else f"{name}@{budget:g}"


def _series(table: pd.DataFrame) -> dict:
    keyed = table.assign(run=[_run(p, b) for p, b in zip(table["planner"], table["budget"])])
    return {run: rows.set_index("period")["load_distance_pct"] for run, rows in keyed.groupby("run")}


def _check_interval(claimed: dict, a: pd.Series, b: pd.Series, label: str) -> None:
    """``claimed`` (a's difference to b, period by period) against the periods themselves: its
    mean, counts and verdict from the differences, its interval around the mean and inside their
    range (the bootstrap's own figures are the verdict module's tests' business)."""
    diffs = (a - b.reindex(a.index)).dropna().to_numpy(dtype=float)
    assert claimed.get("n", diffs.size) == diffs.size > 0, label
    assert claimed["mean"] == pytest.approx(diffs.mean(), abs=1e-4), label
    if "better" in claimed:
        assert (claimed["better"], claimed["worse"]) == ((diffs < -1e-9).sum(), (diffs > 1e-9).sum()), label
    low, high = claimed["low"], claimed["high"]
    assert diffs.min() - 1e-4 <= low <= claimed["mean"] <= high <= diffs.max() + 1e-4, (label, claimed)
    if "verdict" in claimed:
        assert claimed["verdict"] == ("better" if high < 0 else "worse" if low > 0 else "within noise"), label


@pytest.fixture(scope="module")
def executed(run_notebook_in, tmp_path_factory):
    out = tmp_path_factory.mktemp("nb01-out")
    return run_notebook_in(NOTEBOOK, OUT=str(out)), out


def test_notebook_01_claims_equal_the_committed_ones(executed, notebook_values, committed_values):
    nb, _ = executed
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    # The standard figures of the forward replay, every one drawn, and the recommendation's.
    assert sum("image/png" in o.get("data", {}) for o in outputs) == len(FIGURES) + 1
    assert notebook_values(nb) == committed_values(NOTEBOOK)


def test_notebook_01_claims_hold_in_its_tables(executed, notebook_values):
    nb, out = executed
    values = notebook_values(nb)
    findings = values["findings"]
    assert json.loads((out / "findings.json").read_text()) == findings

    # The trace: daily periods with enough events per key group for balance to mean something.
    trace = values["trace"]
    assert trace["periods"] == 28 and trace["key_groups"] == 64 and trace["empty_periods"] == 0
    assert trace["median_events_per_key_group"] >= 100
    assert trace["busiest_week_flights"] == max(trace["window_weeks_flights"])

    forward = pd.read_csv(out / "replay.csv")
    oracle = pd.read_csv(out / "replay_hindsight.csv")
    assert set(forward["decided_on"]) == {"previous"} and set(oracle["decided_on"]) == {"hindsight"}
    names = forward["planner"].str.split(":").str[0]
    assert set(names) == set(albic.available_planners())
    assert set(oracle["planner"].str.split(":").str[0]) == ORACLE
    ld, oracle_ld = _series(forward), _series(oracle)

    # Every run's paired difference to the engine's split, recomputed from the periods.
    reference = ld["storm_default"]
    assert findings["vs_reference"]  # a claim over no run would hold for nothing
    for run, claimed in findings["vs_reference"].items():
        _check_interval(claimed, ld[run], reference, run)
    for key, a, b in [
        ("milp_vs_flux", "milp", "flux"),
        ("albic_vs_flux", "albic", "flux"),
        ("albic_vs_milp", "albic", "milp"),
    ]:
        assert set(findings[key]) == {str(x) for x in BUDGETS}, key
        for x in BUDGETS:
            _check_interval(findings[key][str(x)], ld[f"{a}@{x}"], ld[f"{b}@{x}"], f"{key} {x}")
    _check_interval(findings["milp_largest_vs_smallest_budget"], ld["milp@16"], ld["milp@2"], "milp 16/2")
    for h in ("storm_default", "consistent_hashing"):
        _check_interval(findings["hash_vs_milp_smallest_budget"][h], ld[h], ld["milp@2"], h)
    forward_vs_oracle = [f"{p}@{b}" for p in ("flux", "milp") for b in BUDGETS]
    assert set(findings["forward_vs_oracle"]) == set(forward_vs_oracle)
    for run in forward_vs_oracle:
        _check_interval(findings["forward_vs_oracle"][run], ld[run], oracle_ld[run], f"{run} forward/oracle")
    assert findings["oblivious_baselines_equal_the_oracle"] == all(
        ld[p].equals(oracle_ld[p]) for p in ("storm_default", "consistent_hashing")
    )

    # Feasibility: budgets kept, plans reproducible, plans made per run; a run that did not plan
    # every period it was asked for gets no verdict.
    both = pd.concat([forward, oracle])
    budgeted = both[both["budget"].notna()]
    assert findings["budgeted_periods_checked"] == len(budgeted) > 0
    assert findings["budgets_kept_every_period"] == bool((budgeted["moves"] <= budgeted["budget"]).all())
    assert findings["plans_deterministic"] == bool(both["deterministic"].all())
    keyed = forward.assign(run=[_run(p, b) for p, b in zip(forward["planner"], forward["budget"])])
    for run, rows in keyed.groupby("run"):
        f = findings["feasibility"][run]
        assert f["asked"] == int((rows["status"] != "SKIPPED").sum()), run
        assert f["no_plan"] == int(rows["status"].isin(list(NO_PLAN)).sum()), run
        assert f["moves_dropped"] == int(rows["moves_dropped"].sum()), run
        if f["no_plan"] or f["fell_back"]:
            assert run not in findings["vs_reference"], run
    assert findings["feasibility"]["ssm"]["no_plan"] > 0  # what the notebook says of SSM is checked

    # Section 5: the recommendation, chosen on the first 60 % of the periods; replayed here,
    # independently of the notebook, its held-out figures are the file's.
    saved = json.loads((out / "recommendation" / "recommendation.json").read_text())
    claimed = values["recommendation"]
    assert (claimed["train_periods"], claimed["held_out_periods"]) == (16, 12)  # 60 % of 28 periods
    assert (
        claimed["spec"] == saved["spec"]
        and claimed["held_out_total_moves"] == saved["held_out"]["total_moves"]
    )
    recommendation = albic.read_recommendation(out / "recommendation" / "recommendation.json")
    table = albic.compare(out / "stats", recommendation)
    held = table[table["period"] >= saved["held_out"]["first"]]
    rows = (
        held[held["planner"] == saved["spec"]] if not saved["keeps_engine_split"] else held[held["reference"]]
    )
    assert round(rows["load_distance_pct"].mean(), 4) == pytest.approx(
        claimed["held_out_mean_load_distance_pct"], abs=1e-4
    )
    assert rows["moves"].sum() == claimed["held_out_total_moves"]
    claimed_vs = claimed["vs_reference"]
    _check_interval(
        {"mean": claimed_vs["pct"], "low": claimed_vs["low"], "high": claimed_vs["high"]},
        rows.set_index("period")["load_distance_pct"],
        held[held["reference"]].set_index("period")["load_distance_pct"],
        "recommendation",
    )
