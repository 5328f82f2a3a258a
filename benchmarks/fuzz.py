"""The standing fuzz test at scale: 5,000 random snapshots per planner (``python -m benchmarks fuzz``).

The same strategies and check as ``tests/test_fuzz.py`` (:mod:`albic.testing.fuzz`): snapshots with loads,
state sizes and rates across 10^-6..10^12, removing and new nodes, heterogeneous capacities,
budgets and traffic, replica groups (``spread``) for the planners tagged ``spread``; every plan
checked by the independent validator. The table counts, per planner, the plans the validator
accepted, the clean refusals (UnsupportedSnapshotError) and the failures: crashes, invalid plans,
budget violations (all three must be 0); the first failure of each kind is printed under the table.
Seeded (hypothesis ``derandomize``): the same snapshots on every run. Baseline: the seconds per
snapshot of ``storm_default`` in the same run.
"""

from __future__ import annotations

import sys
import time
from collections import Counter

from albic import available_planners
from albic.testing.fuzz import FAILURES, fuzz_one, fuzz_parameters, shape_for, spread_for, wild_snapshots

BASELINE = "storm_default"


def fuzz_counts(planner: str, examples: int) -> tuple[Counter, dict[str, str], float]:
    """Outcome counts of ``examples`` fuzzed snapshots, the first detail of each failure kind, and
    the seconds taken."""
    from hypothesis import HealthCheck, given, settings

    counts: Counter = Counter()
    first: dict[str, str] = {}

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(wild_snapshots(shape=shape_for(planner), spread=spread_for(planner)), fuzz_parameters(planner))
    def run(snapshot, params):
        outcome = fuzz_one(planner, snapshot, params)
        counts[outcome.kind] += 1
        if outcome.kind in FAILURES:
            first.setdefault(outcome.kind, outcome.detail)

    start = time.perf_counter()
    run()
    return counts, first, time.perf_counter() - start


def run(examples: int = 5000, planners: list[str] | None = None) -> str:
    import pandas as pd

    names = planners or list(available_planners())
    rows, notes, per = [], [], {}
    # The baseline is one of the planners: its own row gives its time (run once, not twice).
    for name in ([BASELINE] if BASELINE not in names else []) + names:
        counts, first, seconds = fuzz_counts(name, examples)
        total = sum(counts.values())
        per[name] = seconds / max(total, 1)
        if name not in names:
            continue
        rows.append(
            {
                "planner": name,
                "snapshots": total,
                "ok": counts["ok"],
                "unsupported": counts["unsupported"],
                **{kind: counts[kind] for kind in FAILURES},
                "ms/snapshot": round(1000 * per[name], 2),
            }
        )
        notes += [f"  {name} first {kind}: {detail}" for kind, detail in first.items()]
        # a line per planner as it finishes: a run of an hour shows how far it is, and what a
        # stopped run found
        print(f"fuzz: {name}: {dict(counts)} in {seconds:.0f} s", file=sys.stderr, flush=True)
    for row in rows:
        row["x storm_default"] = round(per[row["planner"]] / per[BASELINE], 1)
    table = pd.DataFrame(rows).to_string(index=False)
    return table + ("\n" + "\n".join(notes) if notes else "\nno failures")
