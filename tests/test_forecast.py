"""Each forecaster against a series computed by hand, and through a replay's decision snapshots."""

import numpy as np
import pytest

from albic.core.model import KeyGroup, Node, Snapshot
from albic.evaluation.decide import KnownPeriods, parse_decide_on
from albic.evaluation.forecast import ewma, parse_forecaster

# Two key groups over five periods, oldest first.
SERIES = np.array([[10.0, 0.0], [20.0, 4.0], [30.0, 8.0], [40.0, 0.0], [50.0, 4.0]])


def forecasts(spec):
    """The forecast of every period from the second on, from the periods before it."""
    forecaster = parse_forecaster(spec)
    return [forecaster(SERIES[:t]).tolist() for t in range(1, len(SERIES) + 1)]


def test_last_is_the_period_before():
    assert forecasts("last") == [[10, 0], [20, 4], [30, 8], [40, 0], [50, 4]]


def test_mean_of_the_last_k():
    # mean:2 -> (10), (10+20)/2, (20+30)/2, (30+40)/2, (40+50)/2; and 0, 2, 6, 4, 2.
    assert forecasts("mean:2") == [[10, 0], [15, 2], [25, 6], [35, 4], [45, 2]]


def test_seasonal_k_back_and_last_before_a_season_is_known():
    # seasonal:3 forecasts the period after t-th by the value 3 periods before it.
    assert forecasts("seasonal:3") == [[10, 0], [20, 4], [10, 0], [20, 4], [30, 8]]


def test_ewma_by_hand():
    # alpha 0.5: s = 10; 15; 22.5; 31.25; 40.625 and 0; 2; 5; 2.5; 3.25.
    assert forecasts("ewma:0.5") == [[10, 0], [15, 2], [22.5, 5], [31.25, 2.5], [40.625, 3.25]]
    assert forecasts("ewma:1") == forecasts("last")


def test_ewma_reads_back_as_far_as_a_period_can_matter():
    rng = np.random.default_rng(3)
    long = rng.uniform(0, 100, size=(2000, 3))
    for alpha in (0.05, 0.3, 0.9):
        windowed = parse_forecaster(f"ewma:{alpha}")
        assert windowed.window < len(long)
        assert windowed(long) == pytest.approx(ewma(long, alpha), rel=1e-12)


def test_a_replay_decides_on_the_forecast_of_its_loads_and_rates():
    def period(t, loads):
        kgs = [KeyGroup(f"k{i}", "op", load, arrival_rate=2 * load) for i, load in enumerate(loads)]
        return Snapshot([Node("n1")], kgs, {k.id: "n1" for k in kgs}, period=f"t{t}")

    known = KnownPeriods(parse_decide_on("forecast:mean:2"))
    for t, loads in enumerate(SERIES[:4]):
        known.add(period(t, loads))
    decision = known.snapshot(period(4, SERIES[4]))
    assert [kg.load for kg in decision.key_groups] == [35.0, 4.0]
    assert [kg.arrival_rate for kg in decision.key_groups] == [70.0, 8.0]
