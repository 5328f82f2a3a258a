"""ALBIC's MILP (``milp``) against Flux on the paper's generator (albic.txt section 5.1), after
milp against the proven optimum of real flights periods (:mod:`benchmarks.milp_optimal`).

Instances: :func:`albic.evaluation.synthetic.synthetic_snapshot` at the paper's three sizes (20 nodes / 400 key
groups / 10 operators, 40/800/20, 60/1200/30) and 120/2400/60, ``varies`` of 20% and 40%; budgets of 10, 20 and
40 moves; ``milp`` with wall-clock time limits of 1 s and 5 s (``deterministic=False``, two CP-SAT
workers). For each instance: the load distance (percent of the mean) before, after Flux (the
baseline, same run), after ``milp`` at each limit, the ratio to Flux, and the best load distance
found by any of them, and the proven lower bound of ``details["lower_bound_pct"]``
(solvers/balance_bound.py): no plan within the budget can do better.

``run(full=False)`` is the quick grid (varies 20% only: 12 instances x 2 limits, about 2 minutes);
``run(full=True)`` the whole grid (48 milp runs); ``run(scale=True)`` the production sizes of
:mod:`benchmarks.milp_scale`. :func:`backends` compares the MILP
backends on the whole (not decomposed) model of one instance (``run(backends=True)``, or
``python -m benchmarks milp --backends``: that table alone, at 1 s and 5 s).
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from albic import get_planner
from albic.core import metrics
from albic.evaluation.synthetic import synthetic_snapshot

SIZES = [(20, 400, 10), (40, 800, 20), (60, 1200, 30), (120, 2400, 60)]
# Mean load distance at budgets 20 and 40 with 1 s, at most this times Flux's.
TARGETS = {20: 0.2, 40: 0.2, 60: 0.2, 120: 0.35}
BUDGETS = [10, 20, 40]
LIMITS = [1.0, 5.0]


def _pct(snapshot, plan) -> float:
    return metrics.load_distance_pct(snapshot, plan.assignment)


# The backends of the table: each one solver.milp knows, and two PuLP solvers (PuLP's default, the
# CBC it ships, and HiGHS through PuLP), on the same model in the same run.
BACKENDS = ("cpsat", "cbc", "highs", "scip", "pulp", "pulp:HiGHS")


def run(full: bool = False, seed: int = 0, scale: bool = False, backends_only: bool = False) -> str:
    if scale:  # production sizes: benchmarks/milp_scale.py (fresh processes, peak memory)
        from benchmarks import milp_scale

        return milp_scale.run()
    if backends_only:
        return "\n\n".join(backends(time_limit=limit, seed=seed) for limit in LIMITS)
    from benchmarks import milp_optimal  # real periods against the proven optimum, first

    optimal = milp_optimal.run(full=full)
    variations = [0.2, 0.4] if full else [0.2]
    rows = []
    for n_nodes, n_kg, n_ops in SIZES:
        for varies in variations:
            snap = synthetic_snapshot(n_nodes, n_kg, n_ops, varies=varies, seed=seed)
            for budget in BUDGETS:
                flux = get_planner("flux", max_moves=budget).plan(snap)
                row = {
                    "nodes/kg": f"{n_nodes}/{n_kg}",
                    "varies": f"{varies:.0%}",
                    "budget": budget,
                    "before %": metrics.load_distance_pct(snap),
                    "flux %": _pct(snap, flux),
                }
                found = [row["flux %"]]
                for limit in LIMITS:
                    planner = get_planner(
                        "milp", max_moves=budget, time_limit=limit, deterministic=False, workers=2, seed=seed
                    )
                    start = time.perf_counter()
                    plan = planner.plan(snap)
                    row[f"milp {limit:g}s %"] = _pct(snap, plan)
                    row[f"{limit:g}s / flux"] = row[f"milp {limit:g}s %"] / max(row["flux %"], 1e-12)
                    row[f"{limit:g}s wall"] = time.perf_counter() - start
                    row["bound %"] = plan.details["lower_bound_pct"]  # the same for every limit
                    found.append(row[f"milp {limit:g}s %"])
                row["best found %"] = min(found)
                rows.append(row)
    frame = pd.DataFrame(rows)
    lines = [frame.round(3).to_string(index=False), ""]
    never_worse = (frame["milp 1s %"] <= frame["flux %"] * (1 + 1e-9)).mean()
    big = frame[frame["budget"].isin([20, 40])]
    lines.append(f"milp at 1 s no worse than Flux on {never_worse:.0%} of instances")
    lines.append(
        f"budgets 20/40 at 5 s: mean(milp / flux) = {big['5s / flux'].mean():.3f}, "
        f"mean milp % / mean flux % = {big['milp 5s %'].mean() / big['flux %'].mean():.3f}"
    )
    # Point 3 per size: mean milp % / mean flux % at budgets 20 and 40 with 1 s, against its
    # target and against what the proven bound allows at best.
    for size, part in big.groupby("nodes/kg", sort=False):
        nodes = int(size.split("/")[0])
        ratio = part["milp 1s %"].mean() / part["flux %"].mean()
        floor = part["bound %"].mean() / part["flux %"].mean()
        lines.append(
            f"{size}: 1 s mean milp / mean flux = {ratio:.3f} (target {TARGETS.get(nodes, 0.2)}; "
            f"the bound allows no less than {floor:.3f})"
        )
    unproven = frame["milp 1s %"] > frame["bound %"] + 1e-6
    lines.append(
        f"5 s better than 1 s on {(frame['milp 5s %'] < frame['milp 1s %'] - 1e-9)[unproven].mean():.0%} "
        f"of the {int(unproven.sum())} instances whose 1 s plan is not proven optimal by the bound"
    )
    if full:  # the whole grid also compares the backends alone
        lines += ["", backends()]
    return optimal + "\n\n" + "\n".join(lines)


def backends(time_limit: float = 5.0, budget: int = 20, seed: int = 0) -> str:
    """Each backend alone (no local-search polish) on the whole model of 20/400 (varies 20%),
    warm-started from the current placement only, against the planner's default (neighbourhood
    search with CP-SAT, Flux start and polish) and the same with PuLP's CBC, in the same run.
    ``status`` is what solve_items reports (FEASIBLE unless the solve was proven optimal)."""
    from albic.planners.albic_milp import MilpPlanner
    from albic.planners.milp_search import SolveSettings, solve_items

    snap = synthetic_snapshot(20, 400, 10, varies=0.2, seed=seed)
    planner = MilpPlanner(max_moves=budget)
    items = planner.singleton_items(snap)
    current = np.asarray(snap.arrays().current)
    rows = []
    flux = get_planner("flux", max_moves=budget).plan(snap)
    for backend in BACKENDS:
        settings = SolveSettings(
            backend=backend,
            time_limit=time_limit,
            deterministic=False,
            workers=2 if backend == "cpsat" else 1,
            seed=seed,
            full_model_variables=10**9,
            polish=False,
        )
        start = time.perf_counter()
        out = solve_items(items, [current], settings)
        rows.append(
            {
                "solver": f"{backend} whole model",
                "load distance %": metrics.load_distance_pct(snap, out.where),
                "status": out.status,
                "wall s": time.perf_counter() - start,
            }
        )
    for backend in ("cpsat", "pulp"):
        settings = SolveSettings(
            backend=backend,
            time_limit=time_limit,
            deterministic=False,
            workers=2 if backend == "cpsat" else 1,
            seed=seed,
        )
        start = time.perf_counter()
        out = solve_items(items, [current, metrics.node_of(snap, flux.assignment)], settings)
        rows.append(
            {
                "solver": f"{backend} neighbourhoods + flux start",
                "load distance %": metrics.load_distance_pct(snap, out.where),
                "status": out.status,
                "wall s": time.perf_counter() - start,
            }
        )
    rows.append(
        {
            "solver": "flux (baseline)",
            "load distance %": _pct(snap, flux),
            "status": "-",
            "wall s": flux.seconds,
        }
    )
    return f"backends alone, {time_limit:g} s:\n" + pd.DataFrame(rows).round(3).to_string(index=False)
