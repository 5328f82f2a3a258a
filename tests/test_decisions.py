"""Loads with their noise, forecasts that know it, and moves only when they pay: against series
and traces whose true rates are generated here."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import albic
from albic.base.errors import InvalidParameterError
from albic.cli.main import main
from albic.core.explain import explain, explain_text
from albic.core.model import KeyGroup, Node, Snapshot
from albic.core.payoff import estimated_rates, payoff
from albic.core.planner import get_planner
from albic.evaluation.compare import summarize
from albic.evaluation.decide import parse_trigger
from albic.evaluation.forecast import parse_forecaster, shrink
from albic.evaluation.replay import replay
from albic.io import read_snapshots, write_snapshot


def poisson_series(rates: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Counts of ``rates`` (periods x key groups) and their Poisson errors (a count of 0 known
    to about one event, as read_snapshots gives it)."""
    counts = np.random.default_rng(seed).poisson(rates).astype(float)
    return counts, np.sqrt(np.maximum(counts, 1.0))


def drifting_rates(periods: int, groups: int, seed: int, drift: float = 0.03) -> np.ndarray:
    rng = np.random.default_rng(seed)
    log_rates = np.log(30.0 / np.arange(1, groups + 1)) + np.cumsum(
        rng.normal(0, drift, (periods, groups)), axis=0
    )
    return np.exp(log_rates)


def share_error(forecast: np.ndarray, truth: np.ndarray) -> float:
    return float(np.abs(forecast / forecast.sum() - truth / truth.sum()).sum())


@pytest.mark.parametrize("seed, drift", [(0, 0.01), (1, 0.03), (2, 0.1)])
def test_shrink_forecasts_known_rates_far_better_than_the_last_period_and_no_worse_than_a_mean(seed, drift):
    rates = drifting_rates(120, 32, seed, drift)
    counts, errors = poisson_series(rates, seed)
    scores = {spec: [] for spec in ("last", "mean:24", "shrink:24")}
    for t in range(24, len(rates)):
        for spec in scores:
            forecaster = parse_forecaster(spec)
            forecast, _ = forecaster.with_errors(counts[:t], errors[:t])
            scores[spec].append(share_error(forecast, rates[t]))
    mean = {spec: np.mean(values) for spec, values in scores.items()}
    assert mean["shrink:24"] < 0.7 * mean["last"]
    assert mean["shrink:24"] <= 1.02 * mean["mean:24"]


def test_shrinks_errors_cover_the_true_rate_about_as_often_as_they_say():
    rates = drifting_rates(200, 40, 5)
    counts, errors = poisson_series(rates, 5)
    inside = []
    for t in range(30, len(rates)):
        forecast, error = shrink(counts[t - 24 : t], errors[t - 24 : t])
        # The forecast is of shares, times the latest total: compare shares with shares.
        scale = counts[t - 1].sum() / rates[t].sum()
        inside.append(np.abs(forecast - rates[t] * scale) <= 1.96 * error)
    coverage = float(np.mean(inside))
    assert 0.85 <= coverage <= 0.995, coverage


def test_a_weighted_forecasts_error_is_the_weighted_sum_of_its_periods_errors():
    history = np.array([[4.0], [8.0], [12.0]])
    errors = np.array([[1.0], [2.0], [2.0]])
    assert parse_forecaster("mean:2").with_errors(history, errors)[1].tolist() == [
        pytest.approx(np.sqrt(8) / 2)
    ]
    assert parse_forecaster("last").with_errors(history, errors)[1].tolist() == [2.0]
    # ewma:0.5 over three periods: weights 0.25, 0.25, 0.5.
    want = np.sqrt(0.25**2 * 1 + 0.25**2 * 4 + 0.5**2 * 4)
    assert parse_forecaster("ewma:0.5").with_errors(history, errors)[1].tolist() == [pytest.approx(want)]


def test_shrink_needs_two_periods_and_counts_without_errors_as_exact():
    with pytest.raises(
        InvalidParameterError, match=r"'K' parameter of forecaster 'shrink:1' must be an int >= 2 \(shrink"
    ):
        parse_forecaster("shrink:1")
    history = np.array([[1.0, 3.0], [2.0, 6.0]])
    forecast, error = shrink(history, np.full_like(history, np.nan))
    assert forecast.tolist() == [2.0, 6.0] and error.tolist() == [0.0, 0.0]


def test_statistics_carry_each_loads_poisson_error(user_stats):
    table = pd.read_parquet(user_stats / "key_groups", columns=["period", "id", "load", "events"])
    counted = {(p, i): (load, n) for p, i, load, n in table.itertuples(index=False)}
    checked = 0
    for snapshot in read_snapshots(user_stats):
        for kg in snapshot.key_groups:
            if (snapshot.period, kg.id) in counted:
                load, events = counted[(snapshot.period, kg.id)]
                assert kg.load_error == pytest.approx(load / np.sqrt(events))
                checked += 1
            else:
                assert kg.load == 0 and kg.load_error > 0  # one event's worth
    assert checked > 20


def noisy_snapshot(loads, errors, placement, nodes=("a", "b")):
    kgs = [KeyGroup(f"k{i}", "op", load, 1.0, load_error=e) for i, (load, e) in enumerate(zip(loads, errors))]
    return Snapshot([Node(n) for n in nodes], kgs, dict(zip((kg.id for kg in kgs), placement)))


def test_estimated_rates_shrink_noise_toward_the_operators_mean_and_keep_exact_loads():
    rates, errors = estimated_rates(noisy_snapshot([10.0, 30.0, 20.0, 20.0], [1.0] * 4, "abab"))
    # var = 66.7 against noise 1: nearly all real; the loads stay, errors barely shrink.
    assert rates == pytest.approx([10.0, 30.0, 20.0, 20.0], abs=0.2)
    rates, _ = estimated_rates(noisy_snapshot([19.0, 21.0, 20.0, 20.0], [3.0] * 4, "abab"))
    assert rates.tolist() == [20.0] * 4  # a spread of 1.3 under noise of 3: all noise
    exact, _ = estimated_rates(noisy_snapshot([19.0, 21.0, 20.0, 20.0], [0.0] * 4, "abab"))
    assert exact.tolist() == [19.0, 21.0, 20.0, 20.0]


def test_a_plan_that_evens_out_noise_does_not_pay_and_one_that_evens_out_real_load_does():
    # 42 against 38, evened out to 40 and 40 by two moves; errors of 4.5 explain it all.
    noise = noisy_snapshot([22.0, 18.0, 20.0, 20.0], [4.5] * 4, "abab")
    evened = payoff(noise, {"k0": "a", "k1": "a", "k2": "b", "k3": "b"})
    # Neither move alone can go back (each alone would undo the balance): the plan is held whole.
    assert not evened.pays and evened.gain_pct == pytest.approx(0.0, abs=1e-9)
    # 70 against 10, evened out to 45 and 35: real; k1's move alone makes it 40 and 40, so k2's
    # (5 to a) only costs and goes back.
    real = noisy_snapshot([40.0, 30.0, 5.0, 5.0], [1.0] * 4, "aabb")
    judged = payoff(real, {"k0": "a", "k1": "b", "k2": "a", "k3": "b"})
    assert judged.pays and judged.gain_pct > 50
    assert (judged.moves_kept, judged.moves_dropped) == (1, 1) and judged.node_of.tolist() == [0, 1, 1, 1]


def test_a_move_that_pays_stays_and_one_that_does_not_goes_back():
    # k0 (load 40) off the crowded node a pays; k3 (load 1) to b changes nothing that matters.
    snap = noisy_snapshot([40.0, 30.0, 2.0, 1.0, 2.0], [0.5] * 5, "aaabb", nodes=("a", "b", "c"))
    judged = payoff(snap, {"k0": "c", "k1": "a", "k2": "a", "k3": "c", "k4": "b"})
    kept = {snap.key_groups[i].id for i in np.flatnonzero(judged.node_of != snap.arrays().current)}
    assert kept == {"k0"} and judged.moves_dropped == 1 and judged.pays


def test_moves_off_a_removing_node_are_never_dropped():
    kgs = [KeyGroup(f"k{i}", "op", 10.0, 1.0, load_error=5.0) for i in range(3)]
    snap = Snapshot([Node("a"), Node("b"), Node("c", removing=True)], kgs, {"k0": "a", "k1": "b", "k2": "c"})
    judged = payoff(snap, {"k0": "a", "k1": "b", "k2": "a"})
    assert judged.node_of.tolist() == [0, 1, 0] and judged.moves_dropped == 0


def test_the_cost_of_moves_and_a_dead_band_hold_a_plan_and_say_when_it_breaks_even():
    real = noisy_snapshot([40.0, 30.0, 5.0, 5.0], [1.0] * 4, "aabb")
    plan = {"k0": "a", "k1": "b", "k2": "b", "k3": "b"}  # 70 against 10 -> 40 against 40
    free = payoff(real, plan)
    assert free.break_even_periods == 0
    costly = payoff(real, plan, cost=1.0)  # 25 % of the state moved: 25 points
    assert costly.cost_pct == pytest.approx(25.0) and costly.pays
    assert costly.break_even_periods == pytest.approx(25.0 / costly.gain_pct)
    assert payoff(real, plan, cost=10.0).pays is False  # 250 points: more than any gain
    assert payoff(real, plan, margin=1000.0).pays is False


def test_the_gain_trigger_parses_and_refuses_in_one_line():
    trigger = parse_trigger("gain:z=2,cost=0.5,margin=1,dwell=3")
    assert (trigger.gain.z, trigger.gain.cost, trigger.gain.margin, trigger.cooldown) == (2.0, 0.5, 1.0, 3)
    assert parse_trigger("gain").gain.z == 1.645
    for bad, words in [
        ("gain:z=-1", "z must be"),
        ("gain:dwell=0.5", "dwell must be"),
        ("gain:speed=1", "'speed=1'"),
    ]:
        with pytest.raises(InvalidParameterError, match=words):
            parse_trigger(bad)


def steady_periods(count: int, seed: int) -> list[Snapshot]:
    """``count`` hours of 16 key groups with constant, uneven true rates, counted (Poisson)."""
    rng = np.random.default_rng(seed)
    rates = np.tile(np.linspace(4.0, 40.0, 16), 4)[:16]
    snaps = []
    for t in range(count):
        counts = rng.poisson(rates).astype(float)
        kgs = [
            KeyGroup(f"op/{i}", "op", c, 10.0, index=i, load_error=float(np.sqrt(max(c, 1.0))))
            for i, c in enumerate(counts)
        ]
        snaps.append(
            Snapshot([Node(f"n{j}") for j in range(4)], kgs, {kg.id: "n0" for kg in kgs}, period=f"t{t:02d}")
        )
    return snaps


def test_on_steady_rates_the_gain_trigger_moves_far_less_for_about_the_same_balance():
    snaps = steady_periods(48, 3)
    always = replay(snaps, _flux(4))  # each period planned on the one before: on its noise
    gain = replay(snaps, _flux(4), trigger="gain")
    assert gain["moves"].sum() < 0.5 * always["moves"].sum()
    assert gain["load_distance_pct"].iloc[12:].mean() <= always["load_distance_pct"].iloc[12:].mean() + 3.0
    held = gain[gain["status"] == "HELD"]
    assert len(held) > 10 and (held["moves"] == 0).all()
    assert gain["expected_gain_pct"].notna().sum() == gain["planned"].sum()
    summary = summarize(gain.assign(budget_parameter="max_moves", budget=4.0)).iloc[0]
    assert summary["held"] == len(held) and summary["planned"] == gain["planned"].sum() - len(held)


def _flux(moves: int):
    return get_planner("flux", max_moves=moves)


def test_a_plan_with_pays_keeps_only_moves_that_pay_and_says_so(capsys, tmp_path):
    snap = noisy_snapshot([40.0, 30.0, 5.0, 5.0], [1.0] * 4, "aabb")
    plain = albic.plan(snap, "milp", max_moves=2)
    paid = albic.plan(snap, "milp", max_moves=2, pays=True)
    assert {m.key_group for m in paid.moves} <= {m.key_group for m in plain.moves}
    judged = paid.details["payoff"]
    assert judged["pays"] and judged["expected_gain_pct"] > 50 and judged["moves_kept"] == len(paid.moves)
    assert paid.metrics["load_distance_pct"] <= 25.0 + 1e-9
    noise = noisy_snapshot([22.0, 18.0, 20.0, 20.0], [4.5] * 4, "abab")
    assert albic.plan(noise, "milp", max_moves=2, pays=True).moves == ()

    path = tmp_path / "noise.json"
    write_snapshot(noise, path)
    out = tmp_path / "plan.json"
    argv = [
        "plan",
        str(path),
        "--planner",
        "milp",
        "-p",
        "max_moves=2",
        "--pays",
        "gain:cost=0.5",
        "--out",
        str(out),
    ]
    assert main(argv) == 0
    capsys.readouterr()
    assert main(["explain", str(out), "--snapshot", str(path)]) == 0
    printed = capsys.readouterr().out
    assert "payoff: expected gain 0.00 points" in printed and "none is applied" in printed
    assert main([*argv[:-2], "--pays", "always", "--out", str(out)]) == 2
    assert "--pays 'always'" in capsys.readouterr().err


def test_explain_says_when_a_snapshot_gives_no_load_errors():
    exact = Snapshot(
        [Node("a"), Node("b")],
        [KeyGroup(f"k{i}", "op", load, 1.0) for i, load in enumerate([40.0, 30.0, 5.0, 5.0])],
        {"k0": "a", "k1": "a", "k2": "b", "k3": "b"},
    )
    paid = albic.plan(exact, "milp", max_moves=2, pays=True)
    assert paid.details["payoff"]["load_errors_known"] is False
    assert "no load_error in the snapshot: loads taken as exact" in explain_text(explain(paid, exact))
