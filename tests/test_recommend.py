"""albic recommend: the choice on the training periods, its held-out figures, the file that
albic compare takes back, and the same recommendation from the CLI, the API and Spark."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import albic
from albic.cli.main import main
from albic.core.model import KeyGroup, Node, Snapshot
from albic.evaluation.compare import summarize
from albic.evaluation.recommend import read_recommendation, recommend, season
from albic.evaluation.verdict import paired_interval


def drifting_periods(count: int = 30, seed: int = 0, nodes: int = 3) -> list[Snapshot]:
    """``count`` periods of 12 key groups with skewed true rates that drift, counted (Poisson)."""
    rng = np.random.default_rng(seed)
    log_rates = np.log(60.0 / np.arange(1, 13)) + np.cumsum(rng.normal(0, 0.05, (count, 12)), axis=0)
    snaps = []
    for t in range(count):
        counts = rng.poisson(np.exp(log_rates[t])).astype(float)
        kgs = [
            KeyGroup(f"op/{i}", "op", c, 100.0, index=i, load_error=float(np.sqrt(max(c, 1.0))))
            for i, c in enumerate(counts)
        ]
        snaps.append(
            Snapshot(
                [Node(f"n{j}") for j in range(nodes)], kgs, {kg.id: "n0" for kg in kgs}, period=f"t{t:02d}"
            )
        )
    return snaps


GRID = dict(
    planners=["flux"],
    budgets="max_moves=1,3",
    decide_on=["previous", "forecast:mean:6"],
    triggers=["always", "gain"],
)


def test_the_choice_is_the_least_moving_of_those_that_balance_alike_on_training_periods():
    snaps = drifting_periods()
    chosen = recommend(snaps, tolerance=1.0, **GRID)
    board = chosen.candidates
    trained = board["mean_load_distance_pct_train"]
    alike = board[trained <= trained.min() + 1.0]
    least = alike.sort_values("mean_migration_cost_pct_train", kind="stable").iloc[0]
    assert (chosen.spec, chosen.decide_on, chosen.trigger) == (
        least["spec"],
        least["decide_on"],
        least["trigger"],
    )
    # 2 budgets x 2 rules x 2 triggers and the reference.
    assert len(board) == 9 and (board["trigger"] == "rescale").sum() == 1
    assert chosen.train["periods"] == 18 and chosen.held_out["periods"] == 12
    assert chosen.held_out["first"] == "t18" and chosen.train["last"] == "t17"


def test_by_default_alike_means_not_worse_than_the_best_beyond_noise():
    snaps = drifting_periods()
    chosen = recommend(snaps, **GRID)
    replays, board = chosen.replays, chosen.candidates
    train = replays[replays["period"] < "t18"]

    def series(row):
        if row["trigger"] == "rescale":
            rows = train[train["reference"]]
        else:
            rows = train[
                (train["planner"] == row["spec"])
                & (train["decided_on"] == row["decide_on"])
                & (train["trigger"] == row["trigger"])
                & ~train["reference"]
            ]
        return rows.sort_values("period")["load_distance_pct"].to_numpy()

    best = board.loc[board["mean_load_distance_pct_train"].idxmin()]
    alike = board[[paired_interval(series(r) - series(best)).low <= 0 for _, r in board.iterrows()]]
    assert 1 < len(alike) < len(board)  # the rule sorts candidates both ways here
    # The least state moved; of two that move alike, the better balanced.
    least = alike.sort_values(["mean_migration_cost_pct_train", "mean_load_distance_pct_train"]).iloc[0]
    assert (chosen.spec, chosen.decide_on, chosen.trigger) == (
        least["spec"],
        least["decide_on"],
        least["trigger"],
    )


def test_held_out_figures_are_the_choices_replay_over_the_last_periods_alone():
    snaps = drifting_periods()
    chosen = recommend(snaps, **GRID)
    table = albic.compare(snaps, chosen)  # the recommendation taken back as it is
    held = table[table["period"] >= "t18"]
    rows = held[held["planner"] == chosen.spec]
    assert chosen.held_out["mean_load_distance_pct"] == pytest.approx(rows["load_distance_pct"].mean())
    assert chosen.held_out["total_moves"] == rows["moves"].sum()
    reference = held[held["reference"]]
    diffs = rows["load_distance_pct"].to_numpy() - reference["load_distance_pct"].to_numpy()
    assert chosen.held_out["vs_reference_pct"] == pytest.approx(diffs.mean())
    assert chosen.held_out_of(table) == chosen.held_out


def test_it_may_say_keep_the_engines_split():
    # Every key group alike and one node: nothing any planner does is better than leaving it.
    kgs = [KeyGroup(f"op/{i}", "op", 5.0, 10.0, index=i, load_error=1.0) for i in range(4)]
    snaps = [Snapshot([Node("n0")], kgs, {kg.id: "n0" for kg in kgs}, period=f"t{t}") for t in range(10)]
    chosen = recommend(snaps, **GRID)
    assert chosen.keeps_engine_split and chosen.spec == "storm_default" and chosen.trigger == "rescale"
    assert "keep the engine's split" in chosen.verdict


def test_bad_shares_are_refused_in_one_line():
    snaps = drifting_periods(6)
    with pytest.raises(albic.AlbicError, match="train 1.5"):
        recommend(snaps, train=1.5, **GRID)
    with pytest.raises(albic.AlbicError, match="leaves 1 to choose on"):
        recommend(snaps, train=0.2, **GRID)
    with pytest.raises(albic.AlbicError, match="'hindsight' is the oracle"):
        recommend(snaps, **{**GRID, "decide_on": ["previous", "hindsight"]})


def test_the_season_is_a_day_of_periods():
    assert [season(s) for s in (3600, 1800, 86400, 604800)] == [24, 48, 28, 4]


def test_the_cli_writes_a_recommendation_that_compare_takes_back(user_stats, tmp_path, capsys):
    out = tmp_path / "rec"
    argv = [
        "recommend",
        str(user_stats),
        "--out",
        str(out),
        "--planner",
        "flux",
        "--budgets",
        "max_moves=1,2",
    ]
    assert main([*argv, "--decide-on", "previous", "--decide-on", "forecast:shrink:4"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("recommended: ") and "held out" in printed
    data = json.loads((out / "recommendation.json").read_text())
    assert data["schema"] == "albic.recommendation/1" and {
        "train",
        "held_out",
        "runner_up",
        "verdict",
    } <= set(data)
    assert (out / "recommendation.png").stat().st_size > 10_000
    candidates = pd.read_csv(out / "candidates.csv")
    assert len(candidates) == 2 * 2 * 2 + 1
    again = tmp_path / "again"
    assert (
        main(
            [
                "compare",
                str(user_stats),
                "--recommendation",
                str(out / "recommendation.json"),
                "--out",
                str(again),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    held = data["held_out"]
    assert (
        f"mean load distance {held['mean_load_distance_pct']:.2f} % and {held['total_moves']} moves now"
        in printed
    )
    summary = pd.read_csv(again / "summary.csv")
    assert summary["reference"].sum() == 1
    assert read_recommendation(out / "recommendation.json").held_out == held


def test_compare_refuses_a_recommendation_beside_a_planner(user_stats, tmp_path, capsys):
    code = main(
        [
            "compare",
            str(user_stats),
            "--recommendation",
            str(tmp_path / "r.json"),
            "--planner",
            "flux",
            "--out",
            str(tmp_path / "o"),
        ]
    )
    assert code == 2 and "without --planner" in capsys.readouterr().err
    code = main(["compare", str(user_stats), "--out", str(tmp_path / "o")])
    assert code == 2 and "--recommendation FILE" in capsys.readouterr().err


def test_a_summary_of_the_candidates_is_what_the_board_says():
    snaps = drifting_periods()
    chosen = recommend(snaps, **GRID)
    table = albic.compare(snaps, ["flux:max_moves=3"], decide_on="previous", trigger="always")
    train = table[table["period"] < "t18"]
    summary = summarize(train).loc["flux:max_moves=3"]
    board = chosen.candidates.set_index(["spec", "decide_on", "trigger"])
    row = board.loc[("flux:max_moves=3", "previous", "always")]
    assert row["mean_load_distance_pct_train"] == pytest.approx(summary["mean_load_distance_pct"])
