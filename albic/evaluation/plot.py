"""The standard figures of a comparison (:func:`albic.compare`'s table), drawn with matplotlib.

- :func:`tradeoff`: the figure that answers "which planner should I use": mean load distance
  against the mean share of state moved per period, one curve per budgeted planner (a point per
  budget), the unbudgeted planners as single reference points;

A period a planner was asked for and made no plan in is never part of a point or mean drawn as its
result: the legend names those periods, the points are over the others and hollow (not comparable
with points over every period), and the over-time panels mark them with red ticks.
- :func:`load_distance_over_time`: load distance (% of mean) after each period's plan, one small
  panel per planner (one line per budget), on the periods' real time axis;
- :func:`migration_over_time`: the share of the period's state each plan moved, per panel, with
  the mean per period (at each end of its budgets) in the panel's title;
- :func:`stream_cost`: what the plans cost the stream (albic.evaluation.stream): state moved
  against periods overloaded and against the steady periods' p99 latency (in service times),
  coloured by the load distance;
- :func:`solve_time`: the distribution of solve seconds of every run (log scale);
- :func:`standard_figures`: all four, as PNG files in a folder (trade-off first);
- :func:`recommendation_figure`: what ``albic recommend`` chose, on its held-out periods.

Periods with no plan made (the planner did not support the period, failed, proved it infeasible or
ran out of time: :data:`~albic.evaluation.compare.NO_PLAN`) are gaps, never values, and each
panel's title and legend entry counts them (``ssm (no plan: INFEASIBLE 201/365)``); a planner that
made no plan at all is not drawn: it is listed under the figure with the reason.

matplotlib (albic's extra ``plot``) is imported when a figure is drawn (not with albic); without
it a figure raises :class:`~albic.base.errors.MissingExtraError` naming the extra. The figures are plain
``matplotlib.figure.Figure`` objects, not pyplot's: they need no display and no backend choice
(saving a PNG renders with Agg) and leave pyplot's state, e.g. a notebook's, alone.

Example
-------
>>> from albic.core.model import Node, KeyGroup, Snapshot
>>> from albic.evaluation.compare import compare
>>> kgs = [KeyGroup(f"k{i}", "op", float(i + 1), 10.0, index=i) for i in range(4)]
>>> snap = Snapshot([Node("n1"), Node("n2")], kgs, {k.id: "n1" for k in kgs}, period="t0")
>>> figure = load_distance_over_time(compare([snap, snap], ["flux"]))
>>> figure.axes[0].get_ylabel()
'load distance (% of mean)'
"""

from __future__ import annotations

import math
import os
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from albic.base.extras import require
from albic.base.formats import percent
from albic.evaluation.compare import failed, made_no_plan, no_plan_counts, planner_label, summarize
from albic.evaluation.decide import describe_scoring
from albic.evaluation.verdict import CONFIDENCE

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = [
    "tradeoff",
    "load_distance_over_time",
    "migration_over_time",
    "solve_time",
    "stream_cost",
    "standard_figures",
    "recommendation_figure",
    "not_drawn",
    "legend_label",
    "scoring",
    "FIGURES",
]

_COLUMNS = 3


def _with_budget(table: pd.DataFrame) -> pd.DataFrame:
    if "budget" not in table:
        table = table.assign(budget_parameter="", budget=math.nan)
    return table


def not_drawn(table: pd.DataFrame) -> dict[str, str]:
    """Planner -> why it is not drawn: those asked for plans that made none (every period asked
    UNSUPPORTED, ERROR, INFEASIBLE or NO_SOLUTION), with the first such period's reason."""
    out = {}
    for planner, rows in table.groupby("planner", sort=False):
        if made_no_plan(rows):
            kinds = ", ".join(f"{k} {n}/{len(rows)}" for k, n in rows["status"].value_counts().items())
            why = rows["error"][failed(rows["status"])].fillna("").iloc[0]
            out[str(planner)] = f"{kinds}: {why or 'no reason recorded'}"
    return out


def legend_label(planner: str, rows: pd.DataFrame) -> str:
    """How a figure names a planner's rows: with the periods another planner planned for it
    (:func:`~albic.evaluation.compare.planner_label`) and those with no plan made, so that
    neither reads as the planner's own result."""
    fell_back = int((rows["fallback"].fillna("") != "").sum()) if "fallback" in rows else 0
    label = planner_label(planner, fell_back, len(rows))
    missing = no_plan_counts(rows)
    if not missing:
        return label
    return f"{label} (no plan: {missing}; drawn over the other {int((~failed(rows['status'])).sum())})"


def _run_label(table: pd.DataFrame, planner: str, budget: float, budgeted: str) -> str:
    """:func:`legend_label` of one run's rows (a planner at one budget, NaN: none), named
    ``planner``, or ``budgeted`` when it has a budget."""
    keys = table["budget"].fillna(-1.0)
    rows = table[(table["planner"] == planner) & (keys == (-1.0 if math.isnan(budget) else budget))]
    return legend_label(planner if math.isnan(budget) else budgeted, rows)


def scoring(table: pd.DataFrame) -> str:
    """What the table's load distances measure, for the figures' titles: its ``decided_on``
    (:func:`~albic.evaluation.decide.describe_scoring`), or the rules of each when it mixes them."""
    rules = list(dict.fromkeys(table["decided_on"].dropna())) if "decided_on" in table else []
    if not rules:
        return "scoring not recorded (a table from before decided_on)"
    return "; ".join(describe_scoring(rule) for rule in rules)


def _drawn(table: pd.DataFrame) -> pd.DataFrame:
    return table[~table["planner"].isin(not_drawn(table))]


def _wrapped(label: str, width: int = 50) -> str:
    """A legend label on lines of at most ``width`` characters: a long one (a planner with
    periods of no plan, planners that plan alike) would squeeze the axes beside the legend."""
    return "\n".join(textwrap.wrap(label, width)) or label


def _hollow_note(axes, table: pd.DataFrame, summary: pd.DataFrame) -> None:
    """Under the axes: which hollow points are planners with periods of no plan, and over how
    many periods they are drawn (the points themselves carry only short names)."""
    planners = [p for p in dict.fromkeys(summary["planner"]) if _hollow(table, p)]
    if not planners:
        return
    named = "; ".join(legend_label(p, table[table["planner"] == p]) for p in planners)
    axes.set_title(_wrapped(f"hollow: {named}", 90), fontsize="x-small", loc="left")


def _hollow(table: pd.DataFrame, planner: str) -> dict[str, Any]:
    """Hollow markers for a planner with periods of no plan: its points are means over fewer
    periods than the others' (the easier ones, where it could plan), so not comparable with them."""
    return (
        {"markerfacecolor": "none"} if failed(table.loc[table["planner"] == planner, "status"]).any() else {}
    )


def _results(table: pd.DataFrame) -> pd.DataFrame:
    """The rows a point or mean drawn as a planner's result is made of: a period the planner was
    asked for and made no plan in is the placement it kept, not its result (legend_label names
    those periods; the over-time panels mark them)."""
    return table[~failed(table["status"])]


def _footnote(figure, table: pd.DataFrame) -> None:
    """List, under the figure, the planners that are not drawn and why (shortened)."""
    skipped = not_drawn(table)
    if not skipped:
        return
    lines = ["Not drawn (planned no period):"]
    for planner, why in skipped.items():
        lines.append(f"  {planner}: {why if len(why) <= 150 else why[:147] + '...'}")
    figure.text(
        0.01,
        0.0,
        "\n".join(lines),
        ha="left",
        va="top",
        fontsize="small",
        color="0.3",
        transform=figure.transFigure,
    )


def _time_axis(table: pd.DataFrame, timezone: str | None) -> tuple[pd.Series, str]:
    """The x value of every row: the period's start as a time when the labels are times, else the
    step number. Labels are wall-clock starts in the statistics' time zone (``timezone``; its
    name on the axis, or "wall clock" when not known)."""
    times = pd.to_datetime(table["period"], errors="coerce", utc=True, format="ISO8601")
    if times.notna().all() and len(times):
        return times.dt.tz_localize(None), f"period start ({timezone or 'wall clock of the statistics'})"
    return table["step"], "period"


def _with_breaks(x: pd.Series, values: pd.Series) -> tuple[pd.Series, pd.Series]:
    """Insert a missing value where the time axis jumps by more than 1.5 usual steps (periods
    without statistics), so that no line is drawn across them."""
    if len(x) < 3 or not pd.api.types.is_datetime64_any_dtype(x):
        return x, values
    steps = x.diff().iloc[1:]
    step = steps[steps > pd.Timedelta(0)].min()
    jumps = steps[steps > 1.5 * step]
    if jumps.empty:
        return x, values
    times, numbers = x.to_numpy(), values.to_numpy(dtype=float)
    at = [x.index.get_loc(i) for i in jumps.index]  # positions right after a jump
    times = np.insert(times, at, times[np.array(at) - 1] + step.to_timedelta64())
    numbers = np.insert(numbers, at, np.nan)
    return pd.Series(times), pd.Series(numbers)


def _by_budget(summary: pd.DataFrame, column: str) -> str:
    """One planner's ``column`` of the summary, said per budget when there are several (a bare
    range "61% to 77%" reads as a before and after): ``"76.82% at max_moves=2 .. 61.42% at 20"``.

    >>> _by_budget(pd.DataFrame({"budget_parameter": ["max_moves"] * 2, "budget": [2.0, 20.0], "x": [76.82, 61.42]}), "x")
    '76.82% at max_moves=2 .. 61.42% at 20'
    """
    rows = summary.sort_values("budget")
    values = rows[column].tolist()
    if len(values) == 1:
        return percent(values[0])
    low, high = rows.iloc[0], rows.iloc[-1]
    at = _budget_label(str(low["budget_parameter"]), float(low["budget"]))
    return f"{percent(values[0])} at {at} .. {percent(values[-1])} at {float(high['budget']):g}"


def _budget_label(parameter: str, budget: float) -> str:
    if math.isnan(budget):
        return "no budget"
    return f"{parameter}={budget:g}"


def _figure(
    title: str,
    table: pd.DataFrame,
    panels: int = 1,
    *,
    height: float = 2.4,
    width: float = 12.0,
    share: bool = True,
):
    # Not pyplot: no backend, no display, no global state.
    Figure = require("matplotlib.figure", "the comparison figures").Figure
    columns = min(_COLUMNS, max(panels, 1))
    rows = max(1, math.ceil(panels / columns))
    figure = Figure(figsize=(width, 1.2 + height * rows), layout="constrained")
    axes = figure.subplots(rows, columns, sharex=share, sharey=share, squeeze=False).ravel()
    for extra in axes[panels:]:
        extra.set_visible(False)
    figure.suptitle(f"{title}\n{scoring(table)}")
    return figure, axes[: max(panels, 1)]


def _mark_no_plan(axes, x: pd.Series, rows: pd.DataFrame) -> None:
    """A red tick at the foot of the panel for every period some run of the planner made no plan
    in: its line has a gap there, and the gap must not read as a quiet period."""
    missing = failed(rows["status"])
    if not missing.any():
        return
    at = pd.Series(x[missing].unique())
    axes.plot(
        at,
        [0.02] * len(at),
        transform=axes.get_xaxis_transform(),
        linestyle="none",
        marker="|",
        markersize=8,
        color="tab:red",
        label="no plan made",
    )


def _over_time(
    table: pd.DataFrame, column: str, title: str, ylabel: str, caption, timezone: str | None
) -> Figure:
    """One panel per planner, one line per budget (darker = larger), failed periods as gaps."""
    colormaps = require("matplotlib", "the comparison figures").colormaps
    table = _with_budget(table)
    drawn = _drawn(table)
    planners = list(dict.fromkeys(drawn["planner"]))
    figure, axes = _figure(title, table, len(planners))
    x_all, xlabel = _time_axis(drawn, timezone)
    for axes_, planner in zip(axes, planners):
        rows = drawn[drawn["planner"] == planner]
        keys = rows["budget"].fillna(-1.0)  # NaN (no budget) is one run, not one per row
        budgets = list(dict.fromkeys(keys.tolist()))
        shades = (
            colormaps["viridis"](np.linspace(0.85, 0.1, len(budgets))) if len(budgets) > 1 else ["tab:blue"]
        )
        for budget, colour in zip(budgets, shades):
            run = rows[keys == budget]
            values = run[column].where(~failed(run["status"]))  # a gap where no plan was made
            x, values = _with_breaks(x_all.loc[run.index], values)
            axes_.plot(
                x,
                values,
                color=colour,
                linewidth=1.0,
                label=_budget_label(run["budget_parameter"].iloc[0], run["budget"].iloc[0]),
            )
        _mark_no_plan(axes_, x_all.loc[rows.index], rows)
        axes_.set_title(caption(_wrapped(legend_label(planner, rows), 45), rows), fontsize="medium")
        axes_.grid(alpha=0.3)
        if len(budgets) > 1 or failed(rows["status"]).any():
            axes_.legend(fontsize="x-small", loc="upper right")
    for axes_ in axes:
        if axes_.get_subplotspec().is_first_col():
            axes_.set_ylabel(ylabel)
        if axes_.get_subplotspec().is_last_row() or axes_ is axes[-1]:
            axes_.set_xlabel(xlabel)
            axes_.tick_params(axis="x", labelrotation=30, labelsize="small")
    _footnote(figure, table)
    return figure


def load_distance_over_time(table: pd.DataFrame, timezone: str | None = None) -> Figure:
    """Load distance after each period's plan: a panel per planner, a line per budget; the time
    axis in ``timezone``, the statistics' (``albic stats --timezone``), when given."""

    def caption(planner, rows):
        # The summary's own figures (mean_load_distance_pct), one per budget: a caption that
        # averaged the budgets would match no row of summary.csv.
        return f"{planner}\nmean {_by_budget(summarize(_results(rows)), 'mean_load_distance_pct')}"

    return _over_time(
        table,
        "load_distance_pct",
        "Load distance after each period's plan",
        "load distance (% of mean)",
        caption,
        timezone,
    )


def migration_over_time(table: pd.DataFrame, timezone: str | None = None) -> Figure:
    """Share of the period's state moved by each period's plan: a panel per planner (the time
    axis as :func:`load_distance_over_time`'s)."""

    def caption(planner, rows):
        return f"{planner}\nmean {_by_budget(summarize(_results(rows)), 'mean_migration_cost_pct')}"

    return _over_time(
        table,
        "migration_cost_pct",
        "State moved by each period's plan",
        "% of the period's state",
        caption,
        timezone,
    )


#: The figures on the periods' time axis.
_TIME_AXIS = (load_distance_over_time, migration_over_time)


def cumulative_migration_cost(table: pd.DataFrame) -> Figure:
    """Kept for callers of the old name: :func:`migration_over_time`."""
    return migration_over_time(table)


def tradeoff(table: pd.DataFrame) -> Figure:
    """Mean load distance against mean % of state moved per period: a curve per budgeted planner
    (its budgets annotated), a marker per unbudgeted planner. Lower left is better."""

    table = _with_budget(table)
    summary = summarize(_results(_drawn(table))).reset_index()
    figure, (axes,) = _figure(
        "Balance against state moved: lower left is better", table, 1, height=5.5, width=13.0
    )
    markers = iter("os^Dv<>pP*Xh" * 3)
    points: dict[tuple[float, float], list[str]] = {}  # unbudgeted planners that plan alike share a marker
    for planner, rows in summary.groupby("planner", sort=False):
        rows = rows.sort_values("budget")
        x, y = rows["mean_migration_cost_pct"], rows["mean_load_distance_pct"]
        if rows["budget"].notna().any():
            label = legend_label(planner, table[table["planner"] == planner])
            style = _hollow(table, planner)
            (line,) = axes.plot(x, y, marker=next(markers), linewidth=1.5, label=_wrapped(label), **style)
            for xi, yi, budget in zip(x, y, rows["budget"]):
                axes.annotate(
                    f"{budget:g}",
                    (xi, yi),
                    textcoords="offset points",
                    xytext=(4, 4),
                    fontsize="x-small",
                    color=line.get_color(),
                )
        else:
            points.setdefault((round(float(x.iloc[0]), 6), round(float(y.iloc[0]), 6)), []).append(
                legend_label(planner, table[table["planner"] == planner])
            )
    for (x, y), names in points.items():
        axes.plot(
            [x],
            [y],
            marker=next(markers),
            linestyle="none",
            markersize=9,
            markeredgecolor="k",
            label=_wrapped(f"{' = '.join(names)} (no budget)"),
            **({"markerfacecolor": "none"} if any("no plan:" in n for n in names) else {}),
        )
    parameter = next((p for p in summary["budget_parameter"] if p), "")
    axes.set_xlabel("state moved: mean % of the period's state, per period")
    axes.set_ylabel("load distance: mean % of mean utilisation")
    if parameter:
        axes.set_title(f"numbers at the points: {parameter}", fontsize="small")
    positive = summary["mean_migration_cost_pct"][summary["mean_migration_cost_pct"] > 0]
    if len(positive) and positive.max() / positive.min() > 50:
        axes.set_xscale("symlog", linthresh=max(positive.min() / 2, 1e-3))
    axes.grid(alpha=0.3, which="both")
    # Beside the axes, not on them: inside, it covered points wherever it went.
    axes.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    _footnote(figure, table)
    return figure


def stream_cost(table: pd.DataFrame) -> Figure:
    """What the plans cost the stream, one point per planner and budget: state moved per period
    against the share of periods with an overloaded node (left) and the p95 over the steady
    periods (no node overloaded) of the p99 latency in service times (right: the model's own unit,
    which a derived node rate does not scale); colour: the mean load distance. Lower left is
    better."""
    colormaps = require("matplotlib", "the comparison figures").colormaps
    table = _with_budget(table)
    summary = summarize(_results(_drawn(table))).reset_index()
    figure, axes = _figure(
        "What the plans cost the stream: lower left is better", table, 2, height=4.5, share=False
    )
    distance = summary["mean_load_distance_pct"]
    norm = require("matplotlib.colors", "the comparison figures").Normalize(
        vmin=float(distance.min()), vmax=float(max(distance.max(), distance.min() + 1e-9))
    )
    x = summary["mean_migration_cost_pct"]
    panels = (
        (100.0 * summary["overloaded_periods"] / summary["periods"], "periods with an overloaded node (%)"),
        (summary["p95_p99_service_times"], "p99 latency in service times,\np95 over the steady periods"),
    )
    for axes_, (y, ylabel) in zip(axes, panels):
        points = axes_.scatter(x, y, c=distance, cmap=colormaps["viridis"], norm=norm, s=40, edgecolors="k")
        partial = summary["planner"].map(lambda p: bool(_hollow(table, p))).to_numpy()
        axes_.scatter(x[partial], y[partial], s=40, facecolors="white", edgecolors="k")  # not comparable
        for xi, yi, planner, budget in zip(x, y, summary["planner"], summary["budget"]):
            # The short name at the point; what did not plan is said once, under the figure.
            label = planner if math.isnan(budget) else f"{planner} {budget:g}"
            axes_.annotate(label, (xi, yi), textcoords="offset points", xytext=(4, 3), fontsize="x-small")
        axes_.set_xlabel("state moved: mean % of the period's state, per period")
        axes_.set_ylabel(ylabel)
        axes_.grid(alpha=0.3)
    latency = summary["p95_p99_service_times"].dropna()
    if len(latency) and latency.min() > 0 and latency.max() / latency.min() > 10:
        axes[1].set_yscale("log")
    figure.colorbar(points, ax=list(axes), label="mean load distance (% of mean)")
    _hollow_note(axes[0], table, summary)
    _footnote(figure, table)
    return figure


def solve_time(table: pd.DataFrame) -> Figure:
    """Solve seconds per period of every run (planner and budget), as box plots on a log scale."""
    table = _with_budget(table)
    planned = _drawn(table)
    asked = planned["planned"].astype(bool) if "planned" in planned else True
    # A rejected or failed period ran no search; an infeasible one (or one out of time) did.
    planned = planned[asked & ~planned["status"].isin(("UNSUPPORTED", "ERROR"))]
    groups = list(planned.groupby(["planner", planned["budget"].fillna(-1.0)], sort=False))
    figure, (axes,) = _figure(
        "Solve time per period", table, 1, height=max(2.0, 0.3 * len(groups)), width=9.0
    )
    labels = [
        _run_label(table, p, math.nan if b < 0 else b, f"{p} {rows['budget_parameter'].iloc[0]}={b:g}")
        for (p, b), rows in groups
    ]
    data = [np.maximum(rows["seconds"].to_numpy(), 1e-6) for _, rows in groups]
    if data:
        axes.boxplot(data, orientation="horizontal", showfliers=True, flierprops={"markersize": 2})
        axes.set_yticks(range(1, len(labels) + 1), labels)
        axes.invert_yaxis()
    axes.set_xscale("log")
    axes.set_xlabel("seconds per period")
    axes.grid(alpha=0.3, axis="x")
    _footnote(figure, table)
    return figure


#: File name -> figure function, in the order :func:`standard_figures` writes them.
FIGURES = {
    "tradeoff.png": tradeoff,
    "load_distance.png": load_distance_over_time,
    "migration_cost.png": migration_over_time,
    "stream.png": stream_cost,
    "solve_time.png": solve_time,
}


def standard_figures(
    table: pd.DataFrame, folder: str | os.PathLike[str], *, timezone: str | None = None
) -> list[Path]:
    """Write the figures of :data:`FIGURES` as PNG files into ``folder``; returns their paths
    (the trade-off figure first). ``timezone``: the statistics' time zone, which the periods'
    labels follow (the manifest's ``timezone``), named on the time axes."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, draw in FIGURES.items():
        path = folder / name
        tmp = folder / f".{name}.tmp.png"
        figure = draw(table, timezone=timezone) if draw in _TIME_AXIS else draw(table)
        figure.savefig(tmp, dpi=110, bbox_inches="tight")
        os.replace(tmp, path)
        paths.append(path)
    return paths


def recommendation_figure(recommendation) -> Figure:
    """A recommendation (:class:`albic.evaluation.recommend.Recommendation`) at a glance: on the
    held-out periods, the choice's difference in mean load distance to the engine's own split
    with its 95 % interval, beside the runner-up's and the plain comparison's (each planner and
    budget planned every period on the period before), and the state each moved per period."""
    Figure = require("matplotlib.figure", "the recommendation figure").Figure  # noqa: N806
    rows = [("recommended: " + _candidate(recommendation.__dict__), recommendation.held_out, "C0")]
    runner = recommendation.runner_up
    rows.append(("runner-up: " + _candidate(runner), runner["held_out"], "C1"))
    rows += [(_candidate(b), b, "0.5") for b in recommendation.baselines]
    rows = [r for r in rows if r[1].get("vs_reference_pct") is not None]
    figure = Figure(figsize=(11.0, 1.2 + 0.45 * max(len(rows), 1)), layout="constrained")
    left, right = figure.subplots(1, 2, sharey=True, width_ratios=[3, 1])
    for y, (_, held, colour) in enumerate(reversed(rows)):
        mean, low, high = held["vs_reference_pct"], held["vs_reference_low"], held["vs_reference_high"]
        left.errorbar([mean], [y], xerr=[[mean - low], [high - mean]], fmt="o", color=colour, capsize=4)
        right.barh([y], [held["mean_migration_cost_pct"]], color=colour)
    left.axvline(0.0, color="k", linewidth=1)
    left.set_yticks(range(len(rows)), [r[0] for r in reversed(rows)], fontsize="small")
    reference = recommendation.reference or "the reference"
    left.set_xlabel(
        f"mean load distance minus {reference}'s, points\n(left is better; bars: {CONFIDENCE * 100:.0f} % CI)"
    )
    right.set_xlabel("state moved,\n% per period")
    held = recommendation.held_out
    figure.suptitle(
        textwrap.fill(
            f"Held out {held['periods']} periods ({held['first']} .. {held['last']}), chosen on the "
            f"{recommendation.train['periods']} before them; {recommendation.verdict}",
            150,
        ),
        fontsize="small",
    )
    left.grid(alpha=0.3, axis="x")
    return figure


def _candidate(row) -> str:
    return f"{row['spec']}, {row['decide_on']}, {row['trigger']}"
