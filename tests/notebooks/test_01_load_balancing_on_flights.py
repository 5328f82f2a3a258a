"""Notebook 01 runs end to end with small parameters (one day, the pandas twin), and the claims it
computes (`findings`) are recomputed here from the replay table it wrote, and asserted."""
import json

import pandas as pd

BUDGETS = [2, 6]


def test_notebook_01_runs_and_its_claims_hold(run_notebook, tmp_path):
    out = tmp_path / "nb"
    nb = run_notebook(
        "01_load_balancing_on_flights.ipynb",
        START="2013-11-27", DAYS=1, KEY_GROUPS=8, ENGINE="pandas", BUDGETS=BUDGETS, TIME_LIMIT=0.1,
        OUT=str(out),
    )
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    assert sum("image/png" in o.get("data", {}) for o in outputs) == 4
    assert (out / "figures" / "tradeoff.png").exists()

    table = pd.read_csv(out / "replay.csv")
    table["name"] = table["planner"].str.split(":").str[0]
    # Every registered planner ran; the budgeted ones (albic and milp among them) at both budgets.
    import albic

    assert set(table["name"]) == set(albic.available_planners())
    for name in ("flux", "milp", "albic", "consistent_grouping"):
        assert sorted(table[table["name"] == name]["budget"].unique()) == BUDGETS, name
    mean = table.groupby(["name", table["budget"].fillna(-1)])["load_distance_pct"].mean()
    truth = {
        "milp_below_flux_at_every_budget": all(mean["milp", b] < mean["flux", b] for b in BUDGETS),
        "albic_below_flux_at_every_budget": all(mean["albic", b] < mean["flux", b] for b in BUDGETS),
        "budgets_kept_every_period": bool((table["budget"].isna() | (table["moves"] <= table["budget"])).all()),
        "milp_improves_with_budget": bool(mean["milp", BUDGETS[1]] <= mean["milp", BUDGETS[0]]),
        "ssm_plans_every_period": bool((table[table["name"] == "ssm"]["status"] != "UNSUPPORTED").all()),
        "hash_baselines_worse_than_milp_smallest_budget": all(
            mean[b, -1] > mean["milp", BUDGETS[0]] for b in ("storm_default", "consistent_hashing")),
    }
    findings = json.loads((out / "findings.json").read_text())
    assert findings == truth
    # Every claim the notebook makes holds; ALBIC against Flux is computed and reported, not claimed
    # (at these small budgets its collocated units spend moves that Flux spends on balance).
    claims = {name: holds for name, holds in truth.items() if name != "albic_below_flux_at_every_budget"}
    assert all(claims.values()), truth
