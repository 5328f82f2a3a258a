"""Routing speed of every stream partitioner on 10 million keys (consistent-grouping issue).

Keys: Zipf(1.2) integers; 100 workers; 4 sources. Baseline in the same run: ``keys % n_workers``
in numpy, the cheapest routing there is. The requirement is at least one million messages per
second per core for every partitioner (they run on one core).
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from albic.planners.partitioners import PARTITIONERS

N_KEYS = 10_000_000
N_WORKERS = 100


def _rate(route, keys) -> float:
    route(keys[:1000])  # compile (numba) and warm up outside the timing
    start = time.perf_counter()
    route(keys)
    return len(keys) / (time.perf_counter() - start)


def run(n_keys: int = N_KEYS) -> str:
    keys = np.random.default_rng(0).zipf(1.2, size=n_keys).astype(np.int64)
    baseline = _rate(lambda k: k % N_WORKERS, keys)
    rows = [{"partitioner": "numpy keys % n (baseline)", "M messages/s": baseline / 1e6, "/ baseline": 1.0}]
    for name, partition in PARTITIONERS.items():
        rate = _rate(lambda k: partition(k, N_WORKERS, n_sources=4, eps=0.01), keys)
        rows.append({"partitioner": name, "M messages/s": rate / 1e6, "/ baseline": rate / baseline})
    table = pd.DataFrame(rows).round(3)
    return f"Stream partitioners, {n_keys:,} Zipf keys, {N_WORKERS} workers, 4 sources\n{table.to_string(index=False)}"
