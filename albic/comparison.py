"""Run several planners over the same periods: one tidy table, and its per-planner summary.

Example
-------
>>> from albic.model import Node, KeyGroup, Snapshot
>>> kgs = [KeyGroup(f"k{i}", "op", float(i + 1), 10.0, index=i) for i in range(4)]
>>> snap = Snapshot([Node("n1"), Node("n2")], kgs, {k.id: "n1" for k in kgs}, period="t0")
>>> table = compare([snap], ["flux", "storm_default"])
>>> sorted(table["planner"])
['flux', 'storm_default']
>>> int(summarize(table).loc["flux", "total_moves"])
2
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Union

import pandas as pd

from albic.model import Snapshot
from albic.planner import Planner, get_planner
from albic.simulate import Initial, replay

__all__ = ["compare", "summarize", "SUMMARY_COLUMNS"]

PlannerSpec = Union[str, Planner]

#: The summary table's columns (the demo prints and writes these).
SUMMARY_COLUMNS = (
    "periods", "mean_load_distance_pct", "p95_load_distance_pct", "total_moves",
    "total_migration_cost_pct", "mean_solve_seconds", "unsupported", "errors",
)


def _planners(planners: Iterable[PlannerSpec] | Mapping[str, Any]) -> dict[str, Planner]:
    """Label -> planner: names, instances, or a mapping label -> name / instance / parameter dict."""
    if isinstance(planners, Mapping):
        out = {}
        for label, value in planners.items():
            if isinstance(value, Planner):
                out[label] = value
            elif isinstance(value, Mapping):
                out[label] = get_planner(label, **value)
            else:
                out[label] = get_planner(value)
        return out
    out = {}
    for item in planners:
        planner = get_planner(item) if isinstance(item, str) else item
        label = planner.name
        suffix = 2
        while label in out:  # the same planner twice (e.g. two budgets): keep both rows apart
            label = f"{planner.name}#{suffix}"
            suffix += 1
        out[label] = planner
    return out


def compare(
    snapshots: Iterable[Snapshot],
    planners: Iterable[PlannerSpec] | Mapping[str, Any],
    *,
    initial: Initial = "storm_default",
    remote_cost: float = 0.1,
    show_progress: bool | None = None,
) -> pd.DataFrame:
    """:func:`albic.simulate.replay` of every planner over the same ``snapshots``; the rows of all
    replays in one DataFrame (one row per planner and period; columns
    :data:`albic.simulate.REPLAY_COLUMNS`)."""
    snapshots = list(snapshots)
    tables = [
        replay(snapshots, planner, initial=initial, remote_cost=remote_cost, label=label,
               show_progress=show_progress)
        for label, planner in _planners(planners).items()
    ]
    return pd.concat(tables, ignore_index=True)


def summarize(table: pd.DataFrame) -> pd.DataFrame:
    """Per planner: mean and 95th-percentile load distance (% of mean utilisation, after the
    plan), total moves, total migration cost in % of state (the sum over periods of the share of
    that period's state moved), mean solve seconds, and the periods it did not support or failed."""
    grouped = table.groupby("planner", sort=False)
    summary = pd.DataFrame({
        "periods": grouped.size(),
        "mean_load_distance_pct": grouped["load_distance_pct"].mean(),
        "p95_load_distance_pct": grouped["load_distance_pct"].quantile(0.95),
        "total_moves": grouped["moves"].sum(),
        "total_migration_cost_pct": grouped["migration_cost_pct"].sum(),
        "mean_solve_seconds": grouped["seconds"].mean(),
        "unsupported": grouped["status"].apply(lambda s: int((s == "UNSUPPORTED").sum())),
        "errors": grouped["status"].apply(lambda s: int((s == "ERROR").sum())),
    })
    return summary[list(SUMMARY_COLUMNS)]
