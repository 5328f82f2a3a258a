"""Deterministic mode reads no clock: with the process's clocks running 5x fast (what every
wall-clock check sees on a machine 5x slower, or sharing its cores with four busy processes),
``milp`` and ``albic`` make the same plans as with the clocks as they are, at several sizes (a
demo period of 256 key groups with traffic, the paper's generator at 20 x 400 and 50 x 2,000, a
flights period at 128 key groups per operator). Only the wall-clock safety net, a separate
parameter, reads the clock, and a plan it cut says so, in its details and in its replay row.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from unittest import mock

import pytest

from albic import get_planner
from albic.cli.main import main as albic_main
from albic.evaluation.replay import carried_snapshot, replay
from albic.evaluation.synthetic import synthetic_snapshot
from albic.io import read_snapshots

FAST = 5.0


@contextmanager
def clocks_running_fast(factor: float = FAST):
    """``time.perf_counter`` and ``time.monotonic`` running ``factor`` times as fast as they do."""
    perf_counter, monotonic = time.perf_counter, time.monotonic
    p0, m0 = perf_counter(), monotonic()
    with (
        mock.patch("time.perf_counter", lambda: p0 + factor * (perf_counter() - p0)),
        mock.patch("time.monotonic", lambda: m0 + factor * (monotonic() - m0)),
    ):
        yield


@pytest.fixture(scope="module")
def wide_flights_period(tmp_path_factory):
    """A busy flights hour at 128 key groups per operator (1,024 key groups: the search works on
    neighbourhoods there, not on the whole model)."""
    out = tmp_path_factory.mktemp("flights-128") / "stats"
    args = ["stats", "flights", "--start", "2013-03-10", "--days", "1", "--key-groups", "128"]
    assert albic_main([*args, "--engine", "pandas", "--out", str(out)]) == 0
    snapshots = list(read_snapshots(out))
    return carried_snapshot(snapshots[14], snapshots[13].assignment)


def _cases(demo_snapshots, wide_flights_period):
    return [
        ("demo period 40, carried", carried_snapshot(demo_snapshots[40], demo_snapshots[39].assignment), 10),
        ("demo period 85", demo_snapshots[85], 20),
        ("20 x 400", synthetic_snapshot(20, 400, 4, seed=3), 20),
        ("50 x 2000", synthetic_snapshot(50, 2000, 4, seed=5), 40),
        ("flights, 1,024 key groups", wide_flights_period, 10),
    ]


@pytest.mark.parametrize("name", ["milp", "albic"])
def test_the_same_plans_with_the_clocks_running_five_times_fast(name, demo_snapshots, wide_flights_period):
    import ortools.sat.python.cp_model  # noqa: F401  (the one-time import, outside both runs)

    for label, snapshot, budget in _cases(demo_snapshots, wide_flights_period):
        planner = get_planner(name, max_moves=budget, time_limit=0.25)
        plan = planner.plan(snapshot)
        started = time.perf_counter()
        with clocks_running_fast():
            fast = planner.clone().plan(snapshot)
        took = time.perf_counter() - started
        assert fast.assignment == plan.assignment, label
        assert fast.details["objective_levels"] == plan.details["objective_levels"], label
        assert fast.details["work"] == plan.details["work"], label
        assert fast.details["stopped_by"] == plan.details["stopped_by"] != "wall clock", label
        assert fast.details["deterministic"] and plan.details["deterministic"], label
        # The fast clocks were read (the plan's seconds are FAST times its real ones), only not for
        # deciding. Against this run's own real time: another run's may be twice as long on a
        # machine shared with other work.
        assert fast.seconds > FAST / 2 * took


@pytest.mark.parametrize("name", ["milp", "albic"])
def test_the_safety_net_is_the_only_clock_and_says_when_it_cut(name, demo_snapshots):
    snapshot = carried_snapshot(demo_snapshots[40], demo_snapshots[39].assignment)
    netted = get_planner(name, max_moves=10, time_limit=0.25, wall_clock_limit=60.0)
    plan = netted.plan(snapshot)  # a net far away: never reached, the same plan as without one
    assert plan.assignment == get_planner(name, max_moves=10, time_limit=0.25).plan(snapshot).assignment
    assert plan.details["deterministic"]
    tight = netted.clone(wall_clock_limit=0.01)
    with clocks_running_fast(50.0):
        cut = tight.plan(snapshot)
    assert cut.details["stopped_by"] == "wall clock"
    assert cut.details["deterministic"] is False
    assert cut.status.value == "FEASIBLE"
    with clocks_running_fast(50.0):
        rows = replay(demo_snapshots[39:42], tight, decide_on="hindsight")
    assert rows["deterministic"].tolist() == [False, False, False]
    assert replay(demo_snapshots[39:42], "flux")["deterministic"].all()


def test_wall_clock_mode_still_reads_the_clock(demo_snapshots):
    """``deterministic=False`` keeps ``time_limit`` a wall-clock promise: with the clocks running
    50x fast the limit is reached at once, and the plan says so."""
    snapshot = carried_snapshot(demo_snapshots[40], demo_snapshots[39].assignment)
    planner = get_planner("milp", max_moves=10, time_limit=0.25, deterministic=False)
    with clocks_running_fast(50.0):
        plan = planner.plan(snapshot)
    assert plan.details["stopped_by"] == "time limit"
    assert plan.details["deterministic"] is False and "work" not in plan.details
