"""Solve time and load distance of every registered planner at the ALBIC paper's cluster sizes.

Instances: albic.testing.random_snapshot with skewed (log-normal) loads on 20/400, 40/800 and
60/1200 nodes/key groups, one node new and one removing. Baseline: the Storm default scheduler in the
same run (time ratio = planner median / storm_default median).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from albic import available_planners, get_planner
from albic.base.errors import UnsupportedSnapshotError
from albic.testing import Size, random_snapshot
from benchmarks.timing import median_seconds

SIZES = [(20, 400), (40, 800), (60, 1200)]
BASELINE = "storm_default"


def run(repeat: int = 5, seed: int = 0) -> str:
    rows = []
    for n_nodes, n_kg in SIZES:
        snap = random_snapshot(
            np.random.default_rng(seed), Size(n_nodes, n_kg, n_nodes // 2), new_nodes=1, removing=1
        )
        baseline = get_planner(BASELINE)
        base_seconds, _ = median_seconds(lambda: baseline.plan(snap), repeat)
        for name in available_planners():
            try:
                planner = get_planner(name)
                seconds, plan = median_seconds(lambda: planner.plan(snap), repeat)
            except UnsupportedSnapshotError:
                # e.g. one-operator interval planners (ssm, mtm) on these multi-operator
                # instances, or elasticutor: these snapshots carry no queueing rates
                rows.append(
                    {"nodes/key groups": f"{n_nodes}/{n_kg}", "planner": name, "median ms": "unsupported"}
                )
                continue
            rows.append(
                {
                    "nodes/key groups": f"{n_nodes}/{n_kg}",
                    "planner": name,
                    "median ms": round(seconds * 1000, 2),
                    f"time / {BASELINE}": round(seconds / base_seconds, 2),
                    "moves": plan.metrics["moves"],
                    "load distance % before": round(plan.metrics["load_distance_pct_before"], 2),
                    "load distance % after": round(plan.metrics["load_distance_pct"], 2),
                }
            )
    return pd.DataFrame(rows).to_string(index=False)
