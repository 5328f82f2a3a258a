"""``python -m benchmarks milp --scale``: milp and albic at production scale against Flux (issue 14).

For each size (nodes x key groups, the paper's generator :func:`albic.synthetic.synthetic_snapshot`,
10 operators, varies 20%) and move budget, in one fresh process per (size, planner) so that the
peak memory is that planner's (``resource.getrusage`` max RSS of the process, which includes the
snapshot itself; the Flux row is the baseline process holding the same snapshot):

- the load distance (% of the mean) before, after Flux (the same-run baseline) and after the
  planner with ``time_limit`` (wall-clock mode), and the ratio planner / Flux;
- the proven lower bound (``details["lower_bound_pct"]``) and the gap planner - bound (points);
- the wall time of the plan() call, and whether it kept the rule ``1.1 x time_limit + 0.1 s``;
- the peak memory of the process.

Snapshots are validated before the timed call (a snapshot is validated once, by whoever builds it;
validating 100,000 key groups with their traffic takes seconds of its own).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pandas as pd

SIZES = [(200, 100_000), (1000, 100_000)]
QUICK_SIZES = [(200, 20_000)]
LIMIT = 10.0


def _budgets(n_kg: int) -> list[int]:
    """40 moves (the paper's largest budget) and 1% of the key groups."""
    return [40, n_kg // 100]


def _case(planner: str, n_nodes: int, n_kg: int, limit: float, seed: int) -> list[dict]:
    """Run in a fresh process: one planner over the budgets of one size."""
    import resource
    import time

    from albic import get_planner, metrics
    from albic.synthetic import synthetic_snapshot

    snap = synthetic_snapshot(n_nodes, n_kg, 10, seed=seed)
    snap.arrays()
    if planner != "flux":
        import ortools.sat.python.cp_model  # noqa: F401  (the one-time import is not charged)
    rows = []
    for budget in _budgets(n_kg):
        params = {"max_moves": budget}
        if planner != "flux":
            params.update(time_limit=limit, deterministic=False)
        start = time.perf_counter()
        plan = get_planner(planner, **params).plan(snap)
        wall = time.perf_counter() - start
        rows.append({
            "budget": budget, "before %": metrics.load_distance_pct(snap),
            "ld %": metrics.load_distance_pct(snap, plan.assignment), "wall s": wall,
            "bound %": plan.details.get("lower_bound_pct"), "moves": plan.metrics["moves"],
            "peak MB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        })
    return rows


def _in_process(planner: str, n_nodes: int, n_kg: int, limit: float, seed: int) -> list[dict]:
    code = ("import json, sys; from benchmarks.milp_scale import _case; "
            f"print(json.dumps(_case({planner!r}, {n_nodes}, {n_kg}, {limit}, {seed})))")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(full: bool = True, seed: int = 0, limit: float = LIMIT) -> str:
    rows = []
    for n_nodes, n_kg in SIZES if full else QUICK_SIZES:
        flux = {r["budget"]: r for r in _in_process("flux", n_nodes, n_kg, limit, seed)}
        for planner in ("milp", "albic"):
            for r in _in_process(planner, n_nodes, n_kg, limit, seed):
                f = flux[r["budget"]]
                rows.append({
                    "size": f"{n_nodes}/{n_kg}", "planner": planner, "budget": r["budget"],
                    "before %": r["before %"], "flux %": f["ld %"], "planner %": r["ld %"],
                    "ratio": r["ld %"] / max(f["ld %"], 1e-12), "bound %": r["bound %"],
                    "gap pts": r["ld %"] - (r["bound %"] or 0.0),
                    "wall s": r["wall s"], "limit kept": r["wall s"] <= 1.1 * limit + 0.1,
                    "peak MB": r["peak MB"], "flux peak MB": f["peak MB"], "flux s": f["wall s"],
                })
    frame = pd.DataFrame(rows)
    lines = [f"time_limit = {limit:g} s (wall-clock mode); load average at the end: "
             f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", frame.round(3).to_string(index=False), ""]
    lines.append(f"never worse than Flux: {(frame['ratio'] <= 1 + 1e-9).mean():.0%} of rows; "
                 f"rule 1.1 x limit + 0.1 s kept: {frame['limit kept'].mean():.0%}; "
                 f"largest peak: {frame['peak MB'].max():.0f} MB")
    return "\n".join(lines)
