"""Notebook 05 (ALBIC against Flux and COLA) runs end to end with small parameters, and the claims
it makes hold on the values it computed (the notebook also asserts each one where it makes it)."""
import json


def test_notebook_claims_hold_with_small_parameters(run_notebook, tmp_path):
    # The race on the paper's instance (20 nodes, 400 key groups), but only a few calls.
    race = dict(n_nodes=20, n_key_groups=400, n_operators=10, one_to_one=0.5, calls=4, max_moves=10)
    run_notebook("05_albic_against_flux_and_cola.ipynb", SIZES=[(6, 36, 3)], VARIES=[0.4], BUDGETS=[3, 6],
                 TIME_LIMIT=0.1, STATS_DAYS=1, STATS_KEY_GROUPS=4, STATS_BUDGETS=[2],
                 SCALE_IN=dict(n_nodes=12, n_key_groups=72, n_operators=6, removing=3, budget=6, periods=6),
                 RACE=race)
    claims = json.loads((tmp_path / "notebook05_claims.json").read_text())
    # Figures 2-4: milp never worse than Flux at equal budgets, on every instance.
    assert claims["eb_instances"] == 2 and claims["eb_milp_never_worse"]
    assert claims["eb_median_ratio"] <= 1.0
    # Real statistics: on average over the periods, milp's load distance is at most Flux's.
    assert claims["real_periods"] >= 12  # hours of the first day with flights, UTC (issue 10)
    for budget in claims["real_mean_ld"].values():
        assert budget["milp"] <= budget["flux"] + 1e-9
    # Figure 5: integrated is better balanced over the first half of the periods.
    for entry in claims["scale_in"].values():
        assert entry["integrated"]["mean_ld_first_half"] < entry["non_integrated"]["mean_ld_first_half"]
    # Figures 10-13: albic within its budget, better balanced and with far fewer migrations than
    # COLA, gaining collocation every call, more with the swaps than Algorithm 2 as written.
    r = claims["race"]
    assert r["albic_max_moves_per_call"] <= race["max_moves"]
    assert r["albic_load_distance_mean"] < r["cola_load_distance_mean"]
    assert r["plain_load_distance_mean"] < r["cola_load_distance_mean"]
    assert r["albic_load_distance_max"] <= 10.0 + 1e-9
    assert r["albic_migrations_total"] < r["cola_migrations_total"]
    assert r["start_collocation"] < r["plain_collocation_end"] < r["albic_collocation_end"] < r["cola_collocation"]
    # Where the collocation comes from: the pairs carry most traffic, and COLA collocates most of it;
    # four calls are too few for albic to reach it (issue 12's 100-call target is
    # tests/planners/test_albic_collocation.py::test_albic_passes_colas_collocation_on_section_5_3s_instance).
    assert 0.9 < r["pair_traffic_share"] < 1.0 and r["cola_pairs_collocated"] > 0.9
    assert r["plain_pairs_collocated_end"] < r["albic_pairs_collocated_end"] < r["cola_pairs_collocated"]
    assert r["albic_reached_cola_at"] is None
