"""The standard figures of a comparison (:func:`albic.compare`'s table), drawn with matplotlib.

- :func:`load_distance_over_time`: load distance (% of mean) after each period's plan, per planner;
- :func:`cumulative_migration_cost`: migration cost (% of state) summed over the periods so far;
- :func:`solve_time`: solve seconds per period, per planner (log scale);
- :func:`standard_figures`: all three, as PNG files in a folder.

matplotlib is imported when a figure is drawn (not with albic). The figures are plain
``matplotlib.figure.Figure`` objects, not pyplot's: they need no display and no backend choice
(saving a PNG renders with Agg) and leave pyplot's state, e.g. a notebook's, alone.

Example
-------
>>> from albic.model import Node, KeyGroup, Snapshot
>>> from albic.comparison import compare
>>> kgs = [KeyGroup(f"k{i}", "op", float(i + 1), 10.0, index=i) for i in range(4)]
>>> snap = Snapshot([Node("n1"), Node("n2")], kgs, {k.id: "n1" for k in kgs}, period="t0")
>>> figure = load_distance_over_time(compare([snap, snap], ["flux"]))
>>> figure.axes[0].get_ylabel()
'load distance (% of mean)'
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["load_distance_over_time", "cumulative_migration_cost", "solve_time", "standard_figures"]


def _figure(title: str) -> tuple[Figure, object]:
    from matplotlib.figure import Figure  # not pyplot: no backend, no display, no global state

    figure = Figure(figsize=(9, 4), layout="constrained")
    axes = figure.add_subplot()
    axes.set_title(title)
    return figure, axes


def _per_planner(table: pd.DataFrame, column: str, axes, *, cumulative: bool = False) -> None:
    for planner, rows in table.groupby("planner", sort=False):
        values = rows[column].cumsum() if cumulative else rows[column]
        axes.plot(rows["step"], values, label=planner, linewidth=1.2)
    axes.set_xlabel("period")
    axes.grid(alpha=0.3)
    axes.legend(fontsize="small", ncols=2)
    periods = table.drop_duplicates("step")
    if len(periods) > 0:
        ticks = periods.iloc[:: max(1, len(periods) // 8)]
        axes.set_xticks(ticks["step"].tolist(), [str(p) for p in ticks["period"]], rotation=30,
                        fontsize="small")


def load_distance_over_time(table: pd.DataFrame) -> Figure:
    figure, axes = _figure("Load distance after each period's plan")
    _per_planner(table, "load_distance_pct", axes)
    axes.set_ylabel("load distance (% of mean)")
    return figure


def cumulative_migration_cost(table: pd.DataFrame) -> Figure:
    figure, axes = _figure("Cumulative migration cost")
    _per_planner(table, "migration_cost_pct", axes, cumulative=True)
    axes.set_ylabel("state moved (sum of % per period)")
    return figure


def solve_time(table: pd.DataFrame) -> Figure:
    figure, axes = _figure("Solve time per period")
    _per_planner(table, "seconds", axes)
    axes.set_yscale("log")
    axes.set_ylabel("seconds")
    return figure


def standard_figures(table: pd.DataFrame, folder: str | os.PathLike[str]) -> list[Path]:
    """Write the three figures as PNG files into ``folder``; returns their paths."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, draw in (
        ("load_distance.png", load_distance_over_time),
        ("migration_cost.png", cumulative_migration_cost),
        ("solve_time.png", solve_time),
    ):
        path = folder / name
        tmp = folder / f".{name}.tmp.png"
        draw(table).savefig(tmp, dpi=110)
        os.replace(tmp, path)
        paths.append(path)
    return paths
