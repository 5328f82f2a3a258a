"""``python -m benchmarks search-constants`` (only when named: minutes): the search constants of
``milp`` and ``albic`` re-derived on the traces they were measured on, each figure beside the
constant. Nothing here changes a constant: the table says what each value buys.

Cases: hourly statistics (the pandas engine) of the flights week from 2013-02-03, hours 13 and 109
(a Sunday's and a Thursday's busy hour), 128 key groups per operator (8 operators, 8 nodes),
budgets 5 and 20 moves: 4 cases. ``--full``: also 32 key groups, the flights week from 2013-07-07
and the words trace's first week (2 operators, 7 nodes): 24 cases.

1. **Calibrations** (:mod:`albic.planners.work`: what a work unit buys). Each step kind runs alone
   on the cases with an unlimited deterministic :class:`~albic.planners.work.Budget` that counts
   its charges, and is timed: the figure is wall seconds per work unit charged (median and worst
   case). A charge is calibrated to about a second of one core per unit with a margin, so a figure
   at or below about 1 says the constant holds on this machine at this load; well above 1, that
   step is undercharged here. The move fit's figure is seconds per step, beside
   ``FIT_WORK_PER_STEP``. Whole plans close the table: milp (time limit 1) and albic (0.25),
   seconds per work unit of ``details["work"]``.
2. **milp's search** (:mod:`albic.planners.milp_search`): each constant over a few values (the
   current one marked ``*``), the others at theirs, ``milp`` with ``time_limit=1`` (deterministic:
   every figure but the wall seconds is the same on any machine): mean and worst load distance
   (% of the mean), the mean of the fourth level (one-sided deviations: what the search improves
   once the load distance is at its best), the cases where the value's plan is the best of the
   values by milp's levels, the cases proven OPTIMAL, mean work units, wall seconds.
3. **albic's defaults** (:class:`albic.planners.milp_parameters.CollocationSettings`), each over a
   few values through the planner's parameter, ``albic`` with ``time_limit=0.25`` (as ``python -m
   benchmarks albic``): the words trace at 128 key groups replayed in hindsight (the first day at
   20 moves; ``--full``: two days at 20 and 40), mean and 95th percentile load distance and mean
   collocation, milp's beside; ``--full`` adds ``collocation_time`` on section 5.3's instance
   (100 calls at 10 moves, :data:`RACE_CALLS`).

The caps ``FULL_MODEL_VARIABLES`` and ``FIT_MOST`` bound memory, not quality, and the wall-clock
figures of :mod:`albic.planners.work` (``TIME_LIMIT_FACTOR``, ``TIME_LIMIT_SLACK``,
``FINISH_SECONDS_PER_KEY_GROUP``) are the planner contract's promise, checked by
tests/planners/test_time_limits.py: they are not swept here. ``ATTEMPT_WORK_PER_KEY_GROUP`` and
the build's estimate ``BUILD_ESTIMATE_PER_VARIABLE`` are covered by the whole plans' figures only.
"""

from __future__ import annotations

import contextlib
import io
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np

from albic import get_planner, replay
from albic.core import metrics
from albic.evaluation.synthetic import perturb, synthetic_snapshot
from albic.io import read_snapshots
from albic.planners import albic_milp, milp_search, work
from albic.planners.collocation import collocating_swaps, largest_deviation
from albic.planners.local_search import level, polish
from albic.planners.milp_formulation import SubModel, scale_items
from albic.planners.milp_parameters import CollocationSettings
from albic.planners.move_fit import applies, fit_moves
from albic.planners.work import Budget, cpsat_time, solve_work
from benchmarks import albic_bound
from benchmarks.timing import median_seconds

#: (trace, first day): the quick run's week, then what ``full`` adds.
DATA = (("flights", "2013-02-03"),)
FULL_DATA = (("flights", "2013-02-03"), ("flights", "2013-07-07"), ("words", None))
HOURS = (13, 109)
KEY_GROUPS, FULL_KEY_GROUPS = (128,), (32, 128)
BUDGETS = (5, 20)
MILP_LIMIT, ALBIC_LIMIT = 1.0, 0.25
#: albic's replays of the words trace (128 key groups): days and budgets, quick and full.
WORDS_DAYS = {False: 1, True: 2}
REPLAY_BUDGETS = {False: (20,), True: (20, 40)}
#: The calls of the collocation race (``full`` only), as in the docstring of AlbicPlanner.
RACE_CALLS = 100
#: milp_search's constants and the values tried (the current one among them).
SEARCH_SWEEPS = {
    "FIT_SHARE": (0.02, 0.1, 0.3),
    "WHOLE_MODEL_WORK_PER_PAIR": (1e-4, 2.6e-4, 1e-3),
    "WHOLE_MODEL_SHARE": (0.25, 0.5, 0.75),
    "NEIGHBOURHOOD_VARIABLES": (300, 600, 1200),
    "SLICE_SHARE": (0.02, 0.04, 0.08),
    "POLISH_SHARE": (0.2, 0.4, 0.6),
    "FINAL_POLISH_SHARE": (0.04, 0.08, 0.16),
    "MIN_POLISH_STEPS": (1, 5, 20),
    "WIDEN_AFTER": (4, 8, 16),
    "ITEM_NEIGHBOURHOOD_ITEMS": (8, 16, 32),
}
#: albic's defaults and the values tried.
ALBIC_SWEEPS = {
    "collocation_slack": (0.25, 0.5, 1.0),
    "slack_gain": (0.02, 0.05, 0.1),
    "collocation_time": (1.0, 1.5, 2.5),
}


def statistics_of(tmp: Path, trace: str, first: str | None, key_groups: int, days: int) -> list:
    """The hourly snapshots of ``days`` days of ``trace`` from ``first`` (None: its first day)."""
    out = tmp / f"{trace}-{first}-{key_groups}-{days}"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return list(read_snapshots(albic_bound.statistics(trace, first, key_groups, days, out)))


def cases(tmp: Path, full: bool) -> list[tuple[str, Any, int]]:
    """(label, snapshot, budget) of every case."""
    chosen = []
    for trace, first in FULL_DATA if full else DATA:
        for key_groups in FULL_KEY_GROUPS if full else KEY_GROUPS:
            snapshots = statistics_of(tmp, trace, first, key_groups, max(HOURS) // 24 + 1)
            for hour in HOURS:
                label = f"{trace} {first or 'week'} /{key_groups} h{hour}"
                chosen += [(f"{label} m{budget}", snapshots[hour], budget) for budget in BUDGETS]
    return chosen


# -- 1. calibrations --------------------------------------------------------------------------


def _per_unit(step: Callable[[Budget], Any]) -> float | None:
    """Wall seconds per work unit ``step`` charged to an unlimited deterministic budget."""
    budget = Budget(None, deterministic=True)
    seconds, _ = median_seconds(lambda: step(budget), 1)
    return seconds / budget.work if budget.work > 0 else None


def _calibration_figures(snapshot: Any, budget: int) -> dict[str, float | None]:
    """Each step kind's figure on one case (None where the step does not apply or charged nothing)."""
    planner = albic_milp.MilpPlanner(max_moves=budget)
    items = planner.singleton_items(snapshot)
    sc = scale_items(items)
    arrays = snapshot.arrays()
    current = np.asarray(arrays.current)
    figures: dict[str, float | None] = {}
    if applies(items):
        seconds, fit = median_seconds(lambda: fit_moves(items, sc, Budget(milp_search.FIT_MOST, True)), 1)
        figures["FIT_WORK_PER_STEP"] = seconds / fit.steps if fit.steps else None
    figures["POLISH_WORK_PER_STEP, _PER_CANDIDATE"] = _per_unit(lambda b: polish(items, current, clock=b))
    figures["LEVEL_WORK_PER_STEP"] = _per_unit(lambda b: level(items, current, clock=b))
    sym = (arrays.traffic + arrays.traffic.T).tocsr()
    movable = np.ones(current.size, dtype=bool)
    bound = largest_deviation(arrays, current)
    figures["SWAP_WORK_PER_CANDIDATE, _PER_PARTNER"] = _per_unit(
        lambda b: collocating_swaps(arrays, sym, current, movable, bound, budget, None, b)
    )
    nodes = np.arange(items.capacities.size)
    seconds, sub = median_seconds(lambda: SubModel(items, sc, current, nodes), 1)
    figures["BUILD_WORK_PER_VARIABLE"] = seconds / (work.BUILD_WORK_PER_VARIABLE * sub.model.n_variables)
    sub.phase1()
    solution = sub.model.solve("cpsat", time_limit=cpsat_time(0.5), deterministic=True, workers=1, seed=0)
    figures["CPSAT_DTIME_PER_UNIT, SOLVE_WORK"] = solution.seconds / solve_work(solution.work)
    return figures


def calibrations(chosen: list) -> list[str]:
    per_constant: dict[str, list[float]] = {}
    for _, snapshot, budget in chosen:
        for name, figure in _calibration_figures(snapshot, budget).items():
            if figure is not None:
                per_constant.setdefault(name, []).append(figure)
    lines = [
        "1. Calibrations: wall seconds per work unit charged (the move fit: per step), median and worst",
        f"{'constant':<40} {'value':>10} {'median':>10} {'worst':>10} {'cases':>5}",
    ]
    values = {
        "FIT_WORK_PER_STEP": work.FIT_WORK_PER_STEP,
        "POLISH_WORK_PER_STEP, _PER_CANDIDATE": (work.POLISH_WORK_PER_STEP, work.POLISH_WORK_PER_CANDIDATE),
        "LEVEL_WORK_PER_STEP": work.LEVEL_WORK_PER_STEP,
        "SWAP_WORK_PER_CANDIDATE, _PER_PARTNER": (work.SWAP_WORK_PER_CANDIDATE, work.SWAP_WORK_PER_PARTNER),
        "BUILD_WORK_PER_VARIABLE": work.BUILD_WORK_PER_VARIABLE,
        "CPSAT_DTIME_PER_UNIT, SOLVE_WORK": (work.CPSAT_DTIME_PER_UNIT, work.SOLVE_WORK),
    }
    for name, value in values.items():
        got = per_constant.get(name, [])
        shown = "/".join(f"{v:g}" for v in value) if isinstance(value, tuple) else f"{value:g}"
        if got:
            lines.append(
                f"{name:<40} {shown:>10} {statistics.median(got):>10.3g} {max(got):>10.3g} {len(got):>5}"
            )
        else:
            lines.append(f"{name:<40} {shown:>10} {'-':>10} {'-':>10} {0:>5}")
    for name, limit in (("milp", MILP_LIMIT), ("albic", ALBIC_LIMIT)):
        ratios = []
        for _, snapshot, budget in chosen:
            plan = get_planner(name, max_moves=budget, time_limit=limit).plan(snapshot)
            ratios.append(plan.seconds / plan.details["work"])
        label = f"whole plans: {name} (time_limit {limit:g})"
        lines.append(
            f"{label:<40} {'':>10} {statistics.median(ratios):>10.3g} {max(ratios):>10.3g} {len(ratios):>5}"
        )
    return lines


# -- 2. milp's search --------------------------------------------------------------------------


def _levels(plan: Any) -> tuple[float, ...]:
    return tuple(plan.details["objective_levels"].values())


def _best(results: dict[Any, list[tuple[float, ...]]]) -> dict[Any, int]:
    """Per value, the cases where its plan's objective (milp's levels, lexicographically) is the
    best of the values tried (ties count for each)."""
    values = list(results)
    wins = dict.fromkeys(values, 0)
    for i in range(len(results[values[0]])):
        for v in values:
            wins[v] += not any(metrics.lexicographically_less(results[w][i], results[v][i]) for w in values)
    return wins


def search_sweeps(chosen: list) -> list[str]:
    lines = [
        f"2. milp's search (time_limit {MILP_LIMIT:g}, deterministic), {len(chosen)} cases: load distance "
        "(% of the mean), mean of the fourth level (one-sided deviations), cases where the value's plan is "
        "best by milp's levels",
        f"{'constant':<26} {'value':>9} {'mean %':>8} {'worst %':>8} {'dev sum':>8} {'best':>5} "
        f"{'OPTIMAL':>7} {'work':>6} {'wall s':>7}",
    ]
    for name, values in SEARCH_SWEEPS.items():
        current = getattr(milp_search, name)
        rows, levels = {}, {}
        for value in values:
            start = time.perf_counter()
            plans = []
            with mock.patch.object(milp_search, name, value):
                for _, snapshot, budget in chosen:
                    plans.append(get_planner("milp", max_moves=budget, time_limit=MILP_LIMIT).plan(snapshot))
            levels[value] = [_levels(p) for p in plans]
            rows[value] = (
                [metrics.load_distance_pct(s, p.assignment) for (_, s, _), p in zip(chosen, plans)],
                statistics.mean(level[3] for level in levels[value]),
                sum(p.status.value == "OPTIMAL" for p in plans),
                statistics.mean(p.details["work"] for p in plans),
                time.perf_counter() - start,
            )
        wins = _best(levels)
        for value in values:
            pcts, deviations, optimal, spent, wall = rows[value]
            mark = "*" if value == current else " "
            lines.append(
                f"{name:<26} {mark}{value!s:>8} {statistics.mean(pcts):>8.3f} {max(pcts):>8.3f} "
                f"{deviations:>8.4f} {wins[value]:>5} {optimal:>7} {spent:>6.3f} {wall:>7.1f}"
            )
    return lines


# -- 3. albic's defaults ----------------------------------------------------------------------


def _replayed(snapshots: list, planner: Any) -> tuple[float, float, float]:
    """Mean and 95th percentile load distance (%) and mean collocation factor of a replay scored in
    hindsight (each plan on the loads it was made from), the placement carried."""
    rows = replay(snapshots, planner, decide_on="hindsight", show_progress=False)
    rows = rows[rows["planned"]]
    pct = rows["load_distance_pct"]
    return float(pct.mean()), float(pct.quantile(0.95)), float(rows["collocation_factor"].mean())


def albic_replays(words: list, budgets: tuple[int, ...]) -> list[str]:
    lines = [
        f"3. albic's defaults: words replayed in hindsight ({len(words)} hourly periods, 128 key groups, "
        f"time_limit {ALBIC_LIMIT:g}); load distance %, mean and p95, and mean collocation",
        f"{'parameter':<26} {'value':>9} {'moves':>5} {'mean %':>8} {'p95 %':>8} {'colloc':>7}",
    ]
    for budget in budgets:
        mean, p95, colloc = _replayed(words, get_planner("milp", max_moves=budget, time_limit=ALBIC_LIMIT))
        lines.append(f"{'(milp)':<26} {'':>9} {budget:>5} {mean:>8.3f} {p95:>8.3f} {colloc:>7.3f}")
    defaults = CollocationSettings()
    for name, values in ALBIC_SWEEPS.items():
        for value in values:
            for budget in budgets:
                planner = get_planner("albic", max_moves=budget, time_limit=ALBIC_LIMIT, **{name: value})
                mean, p95, colloc = _replayed(words, planner)
                mark = "*" if value == getattr(defaults, name) else " "
                lines.append(
                    f"{name:<26} {mark}{value!s:>8} {budget:>5} {mean:>8.3f} {p95:>8.3f} {colloc:>7.3f}"
                )
    return lines


def collocation_race(values: tuple[float, ...], calls: int = RACE_CALLS) -> list[str]:
    """``collocation_time`` on section 5.3's instance (the paper's generator, 20 nodes x 400 key
    groups, half in one-to-one pairs): ``albic`` called ``calls`` times at 10 moves, the loads
    changing between calls, the placement carried; the collocation factor after the last call."""
    base = synthetic_snapshot(20, 400, 10, one_to_one=0.5, seed=0)
    lines = [
        f"   collocation_time on section 5.3's instance (20 x 400, half paired), {calls} calls at "
        f"10 moves: collocation factor after the last call, mean load distance %"
    ]
    for value in values:
        planner = get_planner("albic", max_moves=10, time_limit=ALBIC_LIMIT, collocation_time=value)
        placement, current, pcts = dict(base.assignment), base, []
        for call in range(1, calls + 1):
            current = perturb(current, seed=call)
            plan = planner.plan(current.with_assignment(placement))
            placement = dict(plan.assignment)
            pcts.append(metrics.load_distance_pct(current, placement))
        colloc = metrics.collocation_factor(current, metrics.node_of(current, placement))
        mark = "*" if value == CollocationSettings().collocation_time else " "
        lines.append(
            f"{'collocation_time':<26} {mark}{value!s:>8} {colloc:>7.3f} {statistics.mean(pcts):>8.3f}"
        )
    return lines


def run(full: bool = False) -> str:
    start, load = time.perf_counter(), os.getloadavg()
    milp_search.import_backend("cpsat")  # once per process: no figure pays for it
    with tempfile.TemporaryDirectory() as tmp:
        chosen = cases(Path(tmp), full)
        words = statistics_of(Path(tmp), "words", None, 128, WORDS_DAYS[full])
        data = ", ".join(f"{t} {d or 'first week'}" for t, d in (FULL_DATA if full else DATA))
        header = (
            f"Search constants on {len(chosen)} cases ({data}; hours {HOURS}, "
            f"{FULL_KEY_GROUPS if full else KEY_GROUPS} key groups per operator, budgets {BUDGETS}); "
            "* marks the current value"
        )
        blocks = [[header], calibrations(chosen), search_sweeps(chosen)]
        blocks.append(albic_replays(words, REPLAY_BUDGETS[full]))
    if full:
        blocks.append(collocation_race(ALBIC_SWEEPS["collocation_time"]))
    footer = (
        f"{time.perf_counter() - start:.0f} s; machine load average (1, 5, 15 min) at the start: "
        + ", ".join(f"{x:.1f}" for x in load)
    )
    return "\n\n".join("\n".join(block) for block in blocks) + "\n\n" + footer
