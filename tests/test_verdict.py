"""The reference, the paired interval and the verdict (albic/evaluation/verdict.py), against
hand-computed bootstraps and three judged cases."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from albic.core.model import KeyGroup, Node, Snapshot
from albic.evaluation.compare import compare, summarize
from albic.evaluation.verdict import Interval, block_length, paired_interval, verdict


def exact_block_means(diffs: list[float], block: int) -> list[float]:
    """Every moving-block resample of ``diffs``, each equally likely, by enumeration."""
    n = len(diffs)
    blocks = [diffs[s : s + block] for s in range(n - block + 1)]
    draws = math.ceil(n / block)
    return [
        float(np.mean([v for b in chosen for v in b][:n]))
        for chosen in itertools.product(blocks, repeat=draws)
    ]


def test_the_interval_is_the_bootstraps_percentiles_computed_by_hand():
    # Blocks of 2 of (1, 2, 6, 3): (1, 2), (2, 6), (6, 3); two drawn: nine resamples, by hand
    # 1.5, 2.75, 3, 2.75, 4, 4.25, 3, 4.25, 4.5.
    diffs = [1.0, 2.0, 6.0, 3.0]
    exact = sorted(exact_block_means(diffs, 2))
    assert exact == [1.5, 2.75, 2.75, 3.0, 3.0, 4.0, 4.25, 4.25, 4.5]
    interval = paired_interval(diffs, block=2, resamples=20000)
    # Each end has probability 1/9 > 2.5 %: the percentiles are the smallest and largest resample.
    assert (interval.low, interval.high) == (1.5, 4.5)
    assert interval.mean == 3.0 and interval.block == 2 and interval.n == 4


def test_the_interval_matches_the_exact_bootstrap_distribution_on_a_longer_series():
    diffs = [-1.0, 0.5, -2.0, -0.5, 1.5, -3.0, 0.0, -1.5]
    exact = np.array(exact_block_means(diffs, 3))  # 6 blocks, 3 drawn: 216 resamples
    interval = paired_interval(diffs, block=3, resamples=40000, seed=7)
    want_low, want_high = np.quantile(exact, [0.025, 0.975])
    spread = exact.max() - exact.min()
    assert abs(interval.low - want_low) < 0.05 * spread
    assert abs(interval.high - want_high) < 0.05 * spread
    assert interval.better == 5 and interval.worse == 2  # the 0 is a tie


def test_blocks_widen_the_interval_of_a_series_whose_periods_run_together():
    rng = np.random.default_rng(3)
    steps = rng.normal(size=200)
    walk = np.convolve(steps, np.ones(10) / 10, mode="same")  # neighbours share most of their value
    one_by_one = paired_interval(walk, block=1)
    blocked = paired_interval(walk, block=10)
    assert blocked.high - blocked.low > 1.5 * (one_by_one.high - one_by_one.low)


def test_the_interval_is_the_same_for_the_same_differences_and_refuses_a_bad_block():
    diffs = np.linspace(-2, 1, 30)
    assert paired_interval(diffs) == paired_interval(diffs)
    assert paired_interval(diffs).block == block_length(30) == 3
    with pytest.raises(Exception, match="block 31"):
        paired_interval(diffs, block=31)


def summary_with(runs: dict[str, tuple[float, float, float]]) -> pd.DataFrame:
    rows = [
        {
            "planner": "storm_default",
            "budget_parameter": "",
            "budget": math.nan,
            "reference": True,
            "vs_reference_pct": math.nan,
            "vs_reference_low": math.nan,
            "vs_reference_high": math.nan,
            "compared_periods": math.nan,
            "better_periods": math.nan,
            "worse_periods": math.nan,
            "mean_migration_cost_pct": 0.0,
            "total_moves": 0,
        }
    ]
    for name, (mean, low, high) in runs.items():
        rows.append(
            {
                "planner": name,
                "budget_parameter": "max_moves",
                "budget": 5.0,
                "reference": False,
                "vs_reference_pct": mean,
                "vs_reference_low": low,
                "vs_reference_high": high,
                "compared_periods": 100,
                "better_periods": 60 if mean < 0 else 30,
                "worse_periods": 30 if mean < 0 else 60,
                "mean_migration_cost_pct": 1.5,
                "total_moves": 500,
            }
        )
    return pd.DataFrame(rows).set_index("planner")


def test_the_verdict_names_a_clear_win_with_its_gain_and_state_moved():
    line = verdict(summary_with({"flux": (-15.6, -20.8, -10.1), "milp": (-3.0, -5.0, -1.0)}))
    assert line.startswith(
        "verdict: flux at max_moves=5 beats the reference (storm_default): 15.60 points better"
    )
    assert "95 % CI 10.10 to 20.80 better" in line and "1.50 % of the state" in line
    assert "1 other run also beat it" in line


def test_the_verdict_says_a_clear_loss_and_to_keep_the_engines_split():
    line = verdict(summary_with({"flux": (4.0, 2.0, 6.0), "milp": (1.5, 0.5, 2.5)}))
    assert "every run is worse beyond noise" in line and "milp at max_moves=5" in line
    assert line.endswith("keep the engine's split")


def test_the_verdict_says_within_noise_when_the_best_interval_holds_zero():
    line = verdict(summary_with({"flux": (-0.5, -1.3, 0.3), "milp": (2.0, 1.0, 3.0)}))
    assert "no planner beats the reference (storm_default) beyond noise" in line
    assert "flux at max_moves=5" in line and "within noise" in line


def scaling_periods() -> list[Snapshot]:
    """Six periods, one operator of 12 key groups, on 2, 2, 3, 3, 3, 2 nodes."""
    rng = np.random.default_rng(0)
    snaps = []
    for t, count in enumerate([2, 2, 3, 3, 3, 2]):
        nodes = [Node(f"n{i}") for i in range(count)]
        kgs = [KeyGroup(f"op/{i}", "op", float(rng.integers(1, 9)), 10.0, index=i) for i in range(12)]
        snaps.append(Snapshot(nodes, kgs, {kg.id: "n0" for kg in kgs}, period=f"t{t}"))
    return snaps


def test_the_reference_keeps_the_placement_and_re_splits_only_when_the_count_changes():
    table = compare(scaling_periods(), ["flux"], budgets="max_moves=2")
    reference = table[table["reference"]]
    assert reference["planner"].unique().tolist() == ["storm_default"]
    assert reference["planned"].tolist() == [False, False, True, False, False, True]
    assert reference["moves"].tolist()[:2] == [0, 0] and reference["moves"].iloc[3:5].tolist() == [0, 0]
    assert reference["moves"].iloc[2] > 0 and reference["moves"].iloc[5] > 0
    summary = summarize(table)
    flux = summary.loc["flux"]
    diffs = (
        table[table["planner"] == "flux"]["load_distance_pct"].to_numpy()
        - reference["load_distance_pct"].to_numpy()
    )
    assert flux["vs_reference_pct"] == pytest.approx(diffs.mean())
    assert flux["better_periods"] == (diffs < -1e-9).sum() and flux["worse_periods"] == (diffs > 1e-9).sum()
    assert flux["vs_reference_low"] <= flux["vs_reference_pct"] <= flux["vs_reference_high"]
    assert np.isnan(summary.loc["storm_default", "vs_reference_pct"])


def test_a_named_reference_or_none():
    snaps = scaling_periods()
    named = compare(snaps, ["flux"], reference="flink_default")
    assert named[named["reference"]]["planner"].unique().tolist() == ["flink_default"]
    assert not compare(snaps, ["flux"], reference=None)["reference"].any()
    # The reference given as a planner of the comparison is replayed once, as the reference.
    both = compare(snaps, ["flux", "storm_default"])
    assert both.groupby("planner").size().to_dict() == {"flux": 6, "storm_default": 6}
    assert both[both["planner"] == "storm_default"]["reference"].all()


def test_an_interval_beats_or_loses_only_when_it_excludes_zero():
    assert Interval(-1, -2, -0.1, 2, 10, 8, 2).beats
    assert not Interval(-1, -2, 0.1, 2, 10, 8, 2).beats
    assert Interval(1, 0.1, 2, 2, 10, 2, 8).loses
