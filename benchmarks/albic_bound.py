"""``python -m benchmarks albic``: ALBIC inside its own balance bound, each figure beside
its baseline from the same run.

1. The demo's statistics (a week of flights from 2013-11-24, 32 key groups per operator, hourly;
   the pandas engine), replayed by ``albic``, ``milp`` and ``flux`` at 5, 10, 20 and 40 moves a
   period, time limit 0.25 s, the placement carried from period to period: per budget, albic's
   mean and 95th-percentile load distance against its bound, ``max(max_load_distance, 1.1 x
   milp's mean)`` and ``2 x milp's p95``, and its collocation factor against milp's and Flux's.
   Scored in hindsight (each plan on the loads it was made from): the bound is about how well
   albic's optimiser does with the loads it is given, beside milp's with the same loads; how the
   plans fare on the next period is what ``albic compare``'s forward scoring measures.
2. At scale with traffic (the paper's generator, 200 nodes x 20,000 key groups, half of them in
   one-to-one pairs; ``--full``: 100,000): albic's load distance and collocation against Flux's at
   equal budgets, with albic's wall time against its limit.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import pandas as pd

from albic import compare, get_planner
from albic.cli.main import main as albic_main
from albic.core import metrics
from albic.evaluation.synthetic import synthetic_snapshot

BUDGETS = (5, 10, 20, 40)
TIME_LIMIT = 0.25
MAX_LD = 10.0  # albic's default max_load_distance


def demo_table() -> str:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "stats"
        args = ["stats", "flights", "--start", "2013-11-24", "--days", "7", "--key-groups", "32"]
        albic_main([*args, "--engine", "pandas", "--out", str(out)])
        start = time.perf_counter()
        rows = compare(
            out,
            [f"albic:time_limit={TIME_LIMIT}", f"milp:time_limit={TIME_LIMIT}", "flux"],
            budgets={"max_moves": list(BUDGETS)},
            decide_on="hindsight",
            show_progress=False,
        )
        seconds = time.perf_counter() - start
    rows["name"] = rows["planner"].str.split(":").str[0]  # labels carry the time limit
    by = rows.groupby(["name", "budget"])
    summary = pd.DataFrame(
        {
            "mean": by["load_distance_pct"].mean(),
            "p95": by["load_distance_pct"].quantile(0.95),
            "colloc": by["collocation_factor"].mean(),
        }
    )
    lines = [
        f"Demo statistics, 168 hourly periods, time limit {TIME_LIMIT} s, scored in hindsight "
        f"({seconds:.0f} s in all)",
        f"{'moves':>5}  {'albic mean':>10} {'<= bound':>8}  {'albic p95':>9} {'<= 2x milp':>10}  "
        f"{'colloc albic':>12} {'milp':>6} {'flux':>6}  ok",
    ]
    for budget in BUDGETS:
        a, m, f = (summary.loc[(p, float(budget))] for p in ("albic", "milp", "flux"))
        bound = max(MAX_LD, 1.1 * m["mean"])
        ok = a["mean"] <= bound and a["p95"] <= 2 * m["p95"] and a["colloc"] > max(m["colloc"], f["colloc"])
        lines.append(
            f"{budget:>5}  {a['mean']:>9.2f}% {bound:>7.2f}%  {a['p95']:>8.2f}% {2 * m['p95']:>9.2f}%  "
            f"{a['colloc']:>12.3f} {m['colloc']:>6.3f} {f['colloc']:>6.3f}  {'yes' if ok else 'NO'}"
        )
    return "\n".join(lines)


def scale_table(n_key_groups: int) -> str:
    snapshot = synthetic_snapshot(200, n_key_groups, 10, one_to_one=0.5, seed=0)
    snapshot.validate()
    limit = 10.0
    lines = [
        f"200 nodes x {n_key_groups:,} key groups with traffic (one-to-one 0.5), albic time limit {limit:g} s",
        f"{'moves':>6}  {'albic LD':>9} {'flux LD':>8} {'ratio':>6}  {'colloc albic':>12} {'flux':>6}  "
        f"{'albic s':>7}",
    ]
    for budget in (100, 1000):
        flux = get_planner("flux", max_moves=budget).plan(snapshot)
        start = time.perf_counter()
        albic = get_planner("albic", max_moves=budget, time_limit=limit).plan(snapshot)
        wall = time.perf_counter() - start
        a, f = albic.metrics["load_distance_pct"], flux.metrics["load_distance_pct"]
        lines.append(
            f"{budget:>6}  {a:>8.3f}% {f:>7.3f}% {a / f if f else float('nan'):>6.2f}  "
            f"{metrics.collocation_factor(snapshot, albic.assignment):>12.3f} "
            f"{metrics.collocation_factor(snapshot, flux.assignment):>6.3f}  {wall:>7.1f}"
        )
    return "\n".join(lines)


def run(full: bool = False) -> str:
    return demo_table() + "\n\n" + scale_table(100_000 if full else 20_000)
