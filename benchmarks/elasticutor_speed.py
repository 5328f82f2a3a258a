"""Elasticutor's scheduling time (core allocation + Algorithm 1) at the paper's Table 3 sizes.

Instances: 8, 16 and 32 nodes of 8 cores; one operator of 32 executors (the paper: 32 per operator), executors
placed round-robin on the nodes (as in the paper's set-up), skewed (log-normal) arrival rates scaled
so that stability needs about 60% of the cores, one per-core service rate, state sizes ~ 1 MB, data
rates around ``phi``. The timed step is a re-plan: period 1 is scheduled from one core per executor,
then the rates are redrawn and period 2 is scheduled from period 1's core matrix; the time of period
2's ``allocate_cores`` + ``schedule_cores`` is reported (median over ``repeat`` runs).

Same-run baselines: the allocation alone, and the naive-EC mode (no migration-cost or locality
optimisation) for the assignment, whose migration cost and remote data rate are shown next to
Elasticutor's. Paper Table 3 (Java, 32 executors per operator): 4.1 / 5.2 / 5.7 ms.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from albic.planners.elasticutor import (
    DEFAULT_PHI,
    allocate_cores,
    migration_cost,
    remote_data_rate,
    schedule_cores,
)
from benchmarks.timing import median_seconds

SIZES = (8, 16, 32)
CORES_PER_NODE = 8
EXECUTORS = 32  # one operator of 32 executors (the paper: 32 per operator)


def _rates(rng: np.random.Generator, n_cores: int) -> np.ndarray:
    skew = rng.lognormal(0.0, 0.8, size=EXECUTORS)
    return skew / skew.sum() * 0.6 * n_cores * 100.0  # mu = 100 tuples/s per core


def _instance(n_nodes: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    n_cores = n_nodes * CORES_PER_NODE
    local = np.arange(EXECUTORS) % n_nodes
    first = np.zeros((n_nodes, EXECUTORS), dtype=np.int64)
    first[local, np.arange(EXECUTORS)] = 1
    return {
        "capacity": np.full(n_nodes, CORES_PER_NODE),
        "local": local,
        "mus": np.full(EXECUTORS, 100.0),
        "states": rng.uniform(0.5e6, 1.5e6, size=EXECUTORS),
        "period1": _rates(rng, n_cores),
        "period2": _rates(rng, n_cores),
        "first": first,
        "data": rng.uniform(0.2, 3.0, size=EXECUTORS) * DEFAULT_PHI,
    }


def _schedule(inst: dict, lams: np.ndarray, previous: np.ndarray, naive: bool):
    lam0 = float(lams.sum())
    floor = float(np.dot(lams, 1 / inst["mus"]) / lam0)
    alloc = allocate_cores(lams, inst["mus"], lam0, 1.2 * floor, int(inst["capacity"].sum()))
    x, _ = schedule_cores(
        alloc.cores, previous, inst["capacity"], inst["local"], inst["states"], inst["data"], naive=naive
    )
    return alloc, x


def _median_ms(fn, repeat: int) -> float:
    return 1000 * median_seconds(fn, repeat)[0]


def run(repeat: int = 5, seed: int = 0) -> str:
    rows = []
    for n_nodes in SIZES:
        inst = _instance(n_nodes, seed)
        lam2 = inst["period2"]
        lam0 = float(lam2.sum())
        floor = float(np.dot(lam2, 1 / inst["mus"]) / lam0)
        total = int(inst["capacity"].sum())
        alloc_ms = _median_ms(lambda: allocate_cores(lam2, inst["mus"], lam0, 1.2 * floor, total), repeat)
        result = {}
        for naive in (False, True):
            _, prev = _schedule(inst, inst["period1"], inst["first"], naive)
            ms = _median_ms(lambda: _schedule(inst, lam2, prev, naive), repeat)
            alloc, x = _schedule(inst, lam2, prev, naive)
            result[naive] = (
                ms,
                migration_cost(prev, x, inst["states"]) / 1e6,
                remote_data_rate(x, inst["local"], inst["data"]),
            )
        (ec_ms, ec_mig, ec_remote), (nv_ms, nv_mig, nv_remote) = result[False], result[True]
        rows.append(
            {
                "nodes x cores": f"{n_nodes} x {CORES_PER_NODE}",
                "executors": EXECUTORS,
                "cores allocated": int(alloc.cores.sum()),
                "elasticutor ms": round(ec_ms, 2),
                "allocation-only ms": round(alloc_ms, 2),
                "naive-EC ms": round(nv_ms, 2),
                "elasticutor / naive time": round(ec_ms / nv_ms, 2),
                "state moved MB (EC / naive)": f"{ec_mig:.1f} / {nv_mig:.1f}",
                "remote data (EC / naive)": f"{ec_remote:.0f} / {nv_remote:.0f}",
                "paper ms (Java)": {8: 4.1, 16: 5.2, 32: 5.7}[n_nodes],
            }
        )
    return "Elasticutor scheduling time (allocation + Algorithm 1), re-plan of period 2\n" + pd.DataFrame(
        rows
    ).to_string(index=False)


if __name__ == "__main__":
    print(run())
