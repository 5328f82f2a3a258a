"""``python -m benchmarks milp`` (first table) or ``milp-optimal`` alone: ``milp`` against the proven
optimum of an independent exact model (tests/planners/independent_milp.py: OR-Tools' own modelling
API, nothing shared with ``planners/``) on real flights periods.

Cases: four flights weeks other than the demo's (from 2013-02-03, 2013-04-14, 2013-07-07 and
2013-09-15; the pandas engine), at 32 and 128 key groups per operator (8 operators, 7-8 nodes), two
busy hours of each week (``full``: six), each with the placement its statistics give (Storm's
default, as a replay's first period has it), budgets of 5, 10, 20 and 40 moves. ``milp`` runs with
its defaults and ``time_limit=1`` (deterministic mode: one work unit). The independent model gets
``INDEPENDENT_DTIME`` deterministic seconds of one CP-SAT worker; a case counts when it proves the
optimum within them.

Per size and budget: the cases counted, milp's median and worst ratio of load distance to the
optimum (both zero: 1), the worst gap in points of load distance (% of the mean), the cases where
the ratio exceeds 1.1 and the gap 0.1 points (``off``: the bar milp is held to), the cases milp itself proved
OPTIMAL, its median work units and its median and worst wall seconds, with the machine's load.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import statistics
import tempfile
import time
from pathlib import Path

from albic import get_planner
from albic.cli.main import main as albic_main
from albic.io import read_snapshots

WEEKS = ("2013-02-03", "2013-04-14", "2013-07-07", "2013-09-15")
HOURS, FULL_HOURS = (13, 109), (13, 37, 61, 85, 109, 133)
KEY_GROUPS = (32, 128)
BUDGETS = (5, 10, 20, 40)
TIME_LIMIT = 1.0
INDEPENDENT_DTIME = 20.0
# The bar: a case is off when both its ratio and its gap exceed these.
MAX_RATIO, MAX_GAP_POINTS = 1.1, 0.1
INDEPENDENT = Path(__file__).resolve().parents[1] / "tests" / "planners" / "independent_milp.py"


def _independent():
    """The independent model's module, loaded from its file (it lives with the tests)."""
    spec = importlib.util.spec_from_file_location("independent_milp", INDEPENDENT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _periods(tmp: Path, key_groups: int, hours) -> list:
    """The chosen hours of every week at ``key_groups`` per operator."""
    chosen = []
    for week in WEEKS:
        out = tmp / f"{week}-{key_groups}"
        args = ["stats", "flights", "--start", week, "--days", "7", "--key-groups", str(key_groups)]
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            albic_main([*args, "--engine", "pandas", "--out", str(out)])
        snapshots = list(read_snapshots(out))
        chosen += [snapshots[h] for h in hours]
    return chosen


def _case(optimum, snapshot, budget: int) -> dict | None:
    """One case's figures, None when the independent model proves nothing in its time."""
    levels, _ = optimum(snapshot, budget, INDEPENDENT_DTIME)
    if levels is None:
        return None
    start = time.perf_counter()
    plan = get_planner("milp", max_moves=budget, time_limit=TIME_LIMIT).plan(snapshot)
    wall = time.perf_counter() - start
    mean = sum(kg.load for kg in snapshot.key_groups) / sum(not n.removing for n in snapshot.nodes)
    got, best = plan.details["objective_levels"]["max_deviation"], levels[0]
    ratio = 1.0 if got <= best * (1 + 1e-9) + 1e-15 else (got / best if best > 0 else float("inf"))
    gap = 100 * (got - best) / mean
    return {
        "ratio": ratio,
        "gap": gap,
        "off": ratio > MAX_RATIO and gap > MAX_GAP_POINTS,
        "optimal": plan.status.value == "OPTIMAL",
        "work": plan.details["work"],
        "wall": wall,
    }


def run(full: bool = False) -> str:
    optimum = _independent().optimum
    hours = FULL_HOURS if full else HOURS
    lines = [
        f"milp (time_limit={TIME_LIMIT:g}, defaults) vs an independent exact model (CP-SAT, "
        f"{INDEPENDENT_DTIME:g} deterministic s), flights weeks {', '.join(WEEKS)}, hours {hours}",
        f"{'kg/op':>5} {'moves':>5} {'cases':>5} {'median':>7} {'worst':>7} {'gap pts':>7} {'off':>4} "
        f"{'OPTIMAL':>7} {'work':>5} {'wall s':>6} {'max s':>6}",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        for key_groups in KEY_GROUPS:
            snapshots = _periods(Path(tmp), key_groups, hours)
            for budget in BUDGETS:
                rows = [r for r in (_case(optimum, s, budget) for s in snapshots) if r is not None]
                if not rows:
                    lines.append(f"{key_groups:>5} {budget:>5} {0:>5}  (no optimum proven)")
                    continue
                ratios = [r["ratio"] for r in rows]
                lines.append(
                    f"{key_groups:>5} {budget:>5} {len(rows):>5} {statistics.median(ratios):>6.3f}x "
                    f"{max(ratios):>6.3f}x {max(r['gap'] for r in rows):>7.2f} "
                    f"{sum(r['off'] for r in rows):>4} {sum(r['optimal'] for r in rows):>7} "
                    f"{statistics.median(r['work'] for r in rows):>5.2f} "
                    f"{statistics.median(r['wall'] for r in rows):>6.2f} {max(r['wall'] for r in rows):>6.2f}"
                )
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    lines.append(f"machine load average (1, 5, 15 min) at the end: {load}")
    return "\n".join(lines)
