"""SSM solve time and growth in m, and PMC wall time on Spark with one and two cores.

1. SSM at m = 64 tasks, n' = 16 nodes (15 old nodes holding contiguous runs, one new), log-normal
   loads and state sizes, tau = 1.2 (the paper's default; it reports under 2 ms in Java): the
   O(m^2 n') solver and the planner end to end, against the simple exact DP
   (:func:`solvers.interval_dp.ssm_simple`) on the same instance in the same run.
2. Growth: the O(m^2 n') solver at m = 128, 256, 512, 1024 (n' = 16); the exponent is the slope of
   log(time) against log(m) by least squares (the algorithm says 2).
3. PMC (``albic.spark.precompute``) for m = 16 tasks and node counts 2..8, each master in its own
   process (Spark allows one master per process): wall time of the job (session start excluded) on
   ``local[1]`` and ``local[2]``, and the state-space size.
"""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd

from albic.model import KeyGroup, Node, Snapshot
from planners.ssm import SSMPlanner
from benchmarks.timing import median_seconds
from solvers.interval_dp import capacity_cap, ssm, ssm_simple

TAU = 1.2
GROWTH = [128, 256, 512, 1024]


def instance(m: int, n_old: int = 15, seed: int = 0):
    rng = np.random.default_rng(seed)
    loads = rng.lognormal(1.0, 0.7, m)
    states = np.round(rng.lognormal(5.0, 1.0, m))
    cuts = np.sort(rng.choice(np.arange(1, m), size=n_old - 1, replace=False))
    owner = np.repeat(np.arange(n_old), np.diff(np.concatenate(([0], cuts, [m]))))
    return loads, states, owner


def _snapshot(loads, states, owner, n_new: int) -> Snapshot:
    n_old = int(owner.max()) + 1
    kgs = [KeyGroup(f"t{j}", "op", float(w), float(s), index=j) for j, (w, s) in enumerate(zip(loads, states))]
    nodes = [Node(f"n{i}") for i in range(n_old + n_new)]
    return Snapshot(nodes, kgs, {f"t{j}": f"n{o}" for j, o in enumerate(owner.tolist())})


def ssm_table(repeat: int) -> str:
    loads, states, owner = instance(64)
    cap = capacity_cap(loads.sum(), 16, TAU)
    fast = median_seconds(lambda: ssm(loads, states, owner, 16, cap), repeat)[0]
    simple = median_seconds(lambda: ssm_simple(loads, states, owner, 16, cap), max(1, repeat // 2))[0]
    snap = _snapshot(loads, states, owner, 1)
    planner = SSMPlanner(tau=TAU)
    whole = median_seconds(lambda: planner.plan(snap), repeat)[0]
    same = ssm(loads, states, owner, 16, cap).gain == ssm_simple(loads, states, owner, 16, cap).gain
    rows = [
        {"solver (m=64, n'=16)": "ssm O(m^2 n')", "median ms": fast * 1e3, "vs simple DP": fast / simple},
        {"solver (m=64, n'=16)": "SSMPlanner.plan (validation, metrics)", "median ms": whole * 1e3,
         "vs simple DP": whole / simple},
        {"solver (m=64, n'=16)": "baseline: ssm_simple (pure Python)", "median ms": simple * 1e3,
         "vs simple DP": 1.0},
    ]
    table = pd.DataFrame(rows).round(3).to_string(index=False)
    return f"{table}\n(same optimum from both solvers: {same})"


def growth_table(repeat: int) -> str:
    rows, times = [], []
    for m in GROWTH:
        loads, states, owner = instance(m)
        cap = capacity_cap(loads.sum(), 16, TAU)
        seconds = median_seconds(lambda: ssm(loads, states, owner, 16, cap), repeat)[0]
        times.append(seconds)
        rows.append({"m": m, "median ms": round(seconds * 1e3, 2), "vs m=128": round(seconds / times[0], 2)})
    slope = float(np.polyfit(np.log(GROWTH), np.log(times), 1)[0])
    return f"{pd.DataFrame(rows).to_string(index=False)}\nfitted growth exponent in m: {slope:.2f} (theory: 2)"


_PMC_CHILD = """
import io, json, sys, time
import numpy as np
from albic.mtm import estimate_mtm
from albic.spark.session import spark_session
from albic.spark.precompute import precompute
import tempfile
master, tau = sys.argv[1], float(sys.argv[2])
rng = np.random.default_rng(0)
loads = rng.lognormal(1.0, 0.5, 16); states = np.round(rng.lognormal(5.0, 1.0, 16))
walk = np.clip(5 + np.cumsum(rng.integers(-1, 2, size=400)), 2, 8)
mtm = estimate_mtm(walk.tolist(), states=range(2, 9))
spark = spark_session(master, "albic-bench", config={"spark.ui.showConsoleProgress": "false"})
start = time.perf_counter()
r = precompute(loads, states, mtm, tau=tau, gamma=0.8, out=tempfile.mkdtemp(), spark=spark, tol=1e-4,
               max_states=10000, log=io.StringIO())
print(json.dumps({"seconds": time.perf_counter() - start, "states": r.metadata["states"],
                  "iterations": r.metadata["iterations"]}))
spark.stop()
"""


def pmc_table(tau: float = 0.65) -> str:
    rows = []
    for master in ("local[1]", "local[2]"):
        done = subprocess.run([sys.executable, "-c", _PMC_CHILD, master, str(tau)],
                              capture_output=True, text=True, timeout=1800)
        if done.returncode != 0:
            rows.append({"master": master, "error": done.stderr.strip().splitlines()[-1:]})
            continue
        result = json.loads(done.stdout.strip().splitlines()[-1])
        rows.append({"master": master, "states": result["states"], "iterations": result["iterations"],
                     "wall s": round(result["seconds"], 1)})
    if len(rows) == 2 and "wall s" in rows[0] and "wall s" in rows[1]:
        rows[1]["speed-up vs local[1]"] = round(rows[0]["wall s"] / rows[1]["wall s"], 2)
        rows[0]["speed-up vs local[1]"] = 1.0
    return f"PMC m=16, n in [2, 8], tau={tau}, gamma=0.8, tol=1e-4\n" + pd.DataFrame(rows).to_string(index=False)


def run(repeat: int = 5, pmc: bool = True) -> str:
    parts = [
        "== SSM (note: the machine's 2 cores are shared; timings are noisy) ==",
        ssm_table(repeat),
        growth_table(repeat),
    ]
    if pmc:
        parts.append(pmc_table())
    return "\n\n".join(parts)


if __name__ == "__main__":
    print(run())
