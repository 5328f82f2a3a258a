"""Notebook 05 (ALBIC against Flux and COLA) runs end to end with small parameters, and the claims
it makes hold on the values it computed (the notebook also asserts each one where it makes it).

Over time (the real statistics, Figure 5, Figures 10-13) a plan is scored forward, on the loads of
the period it runs in; the paper's figures score it on the loads it was made from, the oracle
(``_hindsight`` in the claims), asserted here as such."""

import json


def test_notebook_claims_hold_with_small_parameters(run_notebook, tmp_path):
    # The race on the paper's instance (20 nodes, 400 key groups), but only a few calls.
    race = dict(n_nodes=20, n_key_groups=400, n_operators=10, one_to_one=0.5, calls=4, max_moves=10)
    run_notebook(
        "05_albic_against_flux_and_cola.ipynb",
        SIZES=[(6, 36, 3)],
        VARIES=[0.4],
        BUDGETS=[3, 6],
        TIME_LIMIT=0.1,
        STATS_DAYS=1,
        STATS_KEY_GROUPS=4,
        STATS_BUDGETS=[2],
        SCALE_IN=dict(n_nodes=12, n_key_groups=72, n_operators=6, removing=3, budget=6, periods=6),
        RACE=race,
    )
    claims = json.loads((tmp_path / "notebook05_claims.json").read_text())
    # Figures 2-4 (one plan of one snapshot): milp never worse than Flux at equal budgets.
    assert claims["eb_instances"] == 2 and claims["eb_milp_never_worse"]
    assert claims["eb_median_ratio"] <= 1.0

    # Real statistics, replayed forward and under the oracle.
    assert claims["real_periods"] >= 12  # hours of the first day with flights, UTC (issue 10)
    periods = claims["real_periods"]
    assert claims["real_decided_on"] == {"forward": ["previous"], "hindsight": ["hindsight"]}
    # Forward, the first hour is scored, not planned.
    assert claims["real_planned_per_replay"] == {"forward": [periods - 1], "hindsight": [periods]}
    for scoring, by_budget in claims["real_mean_ld"].items():
        better = [int(b) for b, ld in by_budget.items() if ld["milp"] <= ld["flux"] + 1e-9]
        assert claims["real_milp_better_at"][scoring] == better
        assert claims["real_milp_better_on_average_at_every_budget"][scoring] == (
            len(better) == len(by_budget)
        )
    # The oracle (hindsight): on average over the periods, milp's load distance is at most Flux's.
    for ld in claims["real_mean_ld"]["hindsight"].values():
        assert ld["milp"] <= ld["flux"] + 1e-9
    # Forward, at these parameters (4 key groups per operator, 2 moves an hour), it is not: each
    # hour's plan fitted to the hour before leaves milp above Flux, and both far above the oracle.
    assert claims["real_milp_better_on_average_at_every_budget"]["forward"] is False
    forward, oracle = claims["real_mean_ld"]["forward"]["2"], claims["real_mean_ld"]["hindsight"]["2"]
    assert forward["milp"] > forward["flux"]
    assert forward["milp"] > oracle["milp"] and forward["flux"] > oracle["flux"]

    # Figure 5: integrated is better balanced over the first half of the periods, forward and
    # under the oracle.
    for entry in claims["scale_in"].values():
        for suffix in ("", "_hindsight"):
            key = "mean_ld_first_half" + suffix
            assert entry["integrated"][key] < entry["non_integrated"][key]

    # Figures 10-13: albic within its budget, better balanced (forward and under the oracle) and
    # with far fewer migrations than COLA, gaining collocation every call, more with the swaps than
    # Algorithm 2 as written.
    r = claims["race"]
    assert r["albic_max_moves_per_call"] <= race["max_moves"]
    for suffix in ("", "_hindsight"):
        assert r["albic_load_distance_mean" + suffix] < r["cola_load_distance_mean" + suffix]
        assert r["plain_load_distance_mean" + suffix] < r["cola_load_distance_mean" + suffix]
    # The oracle: albic's maxLD bounds each plan on the loads it was made from.
    assert r["albic_load_distance_max_hindsight"] <= 10.0 + 1e-9
    assert r["albic_migrations_total"] < r["cola_migrations_total"]
    assert (
        r["start_collocation"]
        < r["plain_collocation_end"]
        < r["albic_collocation_end"]
        < r["cola_collocation"]
    )
    # Where the collocation comes from: the pairs carry most traffic, and COLA collocates most of it;
    # four calls are too few for albic to reach it (issue 12's 100-call target is
    # tests/planners/test_albic_collocation.py::test_albic_passes_colas_collocation_on_section_5_3s_instance).
    assert 0.9 < r["pair_traffic_share"] < 1.0 and r["cola_pairs_collocated"] > 0.9
    assert r["plain_pairs_collocated_end"] < r["albic_pairs_collocated_end"] < r["cola_pairs_collocated"]
    assert r["albic_reached_cola_at"] is None
