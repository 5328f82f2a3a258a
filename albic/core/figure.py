"""One plan as a picture: node utilisation before and after, and the moves (``albic plot``,
:meth:`albic.core.plan.Plan.plot`).

The left panel has two bars per node, before the plan (grey) and after it (blue; orange above the
target band, red on a node being removed), the mean utilisation as a dashed line and the target
band around it shaded: mean +- ``band`` percent of the mean, the planner's own ``max_load_distance``
when the plan records one (ALBIC, COLA), else ALBIC's default of 10%. Nodes being removed are
named ``(removing)`` and shaded; the legend names each colour the bars use. Arrows above the bars
carry the moves from node to node (one arrow per pair of nodes and reason, coloured by the reason,
its width growing with the number of moves: two moves between the same nodes for different
reasons are two arrows); the panel on the right lists the moves with their state and reason (the words of
:mod:`albic.core.reasons`). The title says what the plan did: moves, state moved and budget used,
and the load distance before and after.

Why here, in the core and not in :mod:`albic.evaluation.plot`: the figure is a view of one plan
and its snapshot, as :mod:`albic.core.explain` is, and ``Plan.plot()`` lives on the plan, which the
core may not build from a room that imports it. It needs only numpy and, when drawing, matplotlib
(albic's extra ``plot``, imported on the call; without it a
:class:`~albic.base.errors.MissingExtraError` names the extra). The figure is a plain
``matplotlib.figure.Figure``, not pyplot's: no display, no backend choice, no global state.

A plan file does not carry its snapshot: without one the bars count key groups per node (from the
plan's assignment and moves), since loads and capacities are the snapshot's.

Example
-------
>>> from albic.core.model import Node, KeyGroup, Snapshot
>>> from albic.core.planner import get_planner
>>> snap = Snapshot([Node("a"), Node("b")], [KeyGroup("x", "op", 2.0, 10), KeyGroup("y", "op", 2.0, 10)],
...                 {"x": "a", "y": "a"})
>>> figure = get_planner("flux", max_moves=1).plan(snap).plot()
>>> figure.axes[0].get_ylabel()
'utilisation (load / capacity)'
"""

from __future__ import annotations

import math
import textwrap
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from albic.base.extras import require
from albic.base.formats import count, number, percent, share, size
from albic.core import metrics
from albic.core.explain import budget_share, check_fits, explain
from albic.core.model import Snapshot
from albic.core.reasons import BALANCE, COLLOCATE, DRAIN

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

    from albic.core.plan import Plan

__all__ = ["plan_figure", "DEFAULT_BAND", "REASON_COLOURS"]

#: Half the target band, in percent of the mean, when the plan records no max_load_distance.
DEFAULT_BAND = 10.0
#: The colour of each move reason (arrows and the list of moves).
REASON_COLOURS = {DRAIN: "tab:red", COLLOCATE: "tab:purple", BALANCE: "tab:blue", "-": "0.4"}

_BEFORE, _AFTER, _HOT, _REMOVING = "0.72", "tab:blue", "tab:orange", "tab:red"
_PURPOSE = "the plan figure (albic plot, Plan.plot())"


def _before_assignment(plan: Plan) -> dict[str, str]:
    before = dict(plan.assignment)
    before.update({m.key_group: m.source for m in plan.moves})
    return before


def _budget_text(budget: Mapping[str, Any]) -> str:
    used = budget_share(budget)
    if used is None:
        return "no budget"
    caps = []
    if budget.get("max_moves") is not None:
        caps.append(f"{budget['moves']} of max_moves={budget['max_moves']}")
    if budget.get("max_migration_cost") is not None:
        caps.append(
            f"{size(budget['migration_cost'])} of max_migration_cost={size(budget['max_migration_cost'])}"
        )
    return f"budget used {share(used)} ({'; '.join(caps)})"


@dataclass(frozen=True)
class _View:
    """What the figure shows of a plan: per node, the bars before and after (utilisation, or key
    groups held without a snapshot), the mean, each move's reason, and the words around them."""

    nodes: list[str]
    removing: set[str]
    before: np.ndarray
    after: np.ndarray
    mean: float | None
    reasons: list[str]
    notes: list[str]
    budget: Mapping[str, Any]
    ylabel: str
    state: str
    distance: str


def _view_with_snapshot(plan: Plan, snapshot: Snapshot, moved: float) -> _View:
    """Utilisation per node before and after, with the reasons and goals of :func:`explain`."""
    check_fits(plan, snapshot)
    report = explain(plan, snapshot)
    nodes = [n.id for n in snapshot.nodes]
    capacity = {n.id: n.capacity for n in snapshot.nodes}
    load_before = metrics.load_by_node(snapshot, snapshot.assignment)
    load_after = metrics.load_by_node(snapshot, plan.assignment)
    budget, goals = report["budget"], report["goals"]
    return _View(
        nodes=nodes,
        removing={n.id for n in snapshot.nodes if n.removing},
        before=np.array([load_before[i] / capacity[i] for i in nodes]),
        after=np.array([load_after[i] / capacity[i] for i in nodes]),
        mean=metrics.mean_utilisation(snapshot),
        reasons=[m["reason"] for m in report["moves"]],
        notes=[f"warning: {w}" for w in report["warnings"]],
        budget=budget,
        ylabel="utilisation (load / capacity)",
        state=f"{size(moved)} ({percent(budget['migration_cost_pct'])} of the state)",
        distance=(
            f"load distance {percent(goals['load_distance_pct']['before'])} -> "
            f"{percent(goals['load_distance_pct']['after'])} of the mean"
        ),
    )


def _view_without_snapshot(plan: Plan, moved: float) -> _View:
    """Key groups held per node before and after: loads and capacities are the snapshot's."""
    start = _before_assignment(plan)
    nodes = list(dict.fromkeys([*start.values(), *plan.assignment.values()]))
    held_before, held_after = Counter(start.values()), Counter(plan.assignment.values())
    limits = plan.metrics
    ld = (limits.get("load_distance_pct_before"), limits.get("load_distance_pct"))
    return _View(
        nodes=nodes,
        removing=set(),
        before=np.array([held_before[i] for i in nodes], dtype=float),
        after=np.array([held_after[i] for i in nodes], dtype=float),
        mean=None,
        reasons=["-"] * len(plan.moves),
        notes=[
            "note: without the snapshot the bars count key groups; give it for utilisation, "
            "the mean, the target band and the moves' reasons"
        ],
        budget={
            "moves": len(plan.moves),
            "max_moves": limits.get("max_moves"),
            "migration_cost": moved,
            "max_migration_cost": limits.get("max_migration_cost"),
        },
        ylabel="key groups (no snapshot: no loads)",
        state=size(moved),
        distance="" if None in ld else f"load distance {percent(ld[0])} -> {percent(ld[1])} of the mean",
    )


def _band(plan: Plan, band: float | None) -> float:
    """The band given, else the plan's own ``max_load_distance``, else :data:`DEFAULT_BAND`."""
    if band is not None:
        return band
    recorded = plan.metrics.get("max_load_distance")
    return float(recorded) if isinstance(recorded, (int, float)) else DEFAULT_BAND


def plan_figure(
    plan: Plan, snapshot: Snapshot | None = None, *, band: float | None = None, max_listed: int = 24
) -> Figure:
    """The figure of ``plan`` (see the module docstring).

    ``snapshot``: the one the plan was made for (a plan made in this process remembers it);
    without one, the bars count key groups. ``band``: half the target band in percent of the mean
    (default: the plan's ``max_load_distance``, else :data:`DEFAULT_BAND`). ``max_listed``: moves
    listed beside the bars (the rest are counted).
    """
    Figure = require("matplotlib.figure", _PURPOSE).Figure
    snapshot = snapshot if snapshot is not None else plan.snapshot
    band = _band(plan, band)
    moved = math.fsum(m.cost for m in plan.moves)
    view = (
        _view_with_snapshot(plan, snapshot, moved)
        if snapshot is not None
        else _view_without_snapshot(plan, moved)
    )

    figure = Figure(figsize=(13.0, 6.0), layout="constrained")
    bars, listing = figure.subplots(1, 2, width_ratios=[2.3, 1.0])
    title = (
        f"{plan.planner} ({plan.status}): {count(len(plan.moves), 'move')}, {view.state} moved, "
        f"{_budget_text(view.budget)}"
    )
    figure.suptitle(title + (f"\n{view.distance}" if view.distance else ""), fontsize="large")
    colours = _draw_bars(bars, view, band)
    top = float(max(view.before.max(initial=0.0), view.after.max(initial=0.0))) or 1.0
    _arrows(bars, plan, view.reasons, view.nodes, top)
    bars.set_ylim(0, top * 1.6)
    bars.grid(axis="y", alpha=0.3)
    _legend(bars, colours, view.reasons)
    _list_moves(listing, plan, view.reasons, view.notes, max_listed)
    return figure


def _draw_bars(bars, view: _View, band: float) -> list[str]:
    """The bars before and after per node, removing nodes shaded, the mean and the target band;
    returns the colours of the bars after."""
    nodes, removing, mean = view.nodes, view.removing, view.mean
    x = np.arange(len(nodes))
    width = 0.38
    low, high = (mean * (1 - band / 100), mean * (1 + band / 100)) if mean is not None else (None, None)
    hot = math.inf if high is None else high * (1 + metrics.REL_NOISE)
    colours = [_REMOVING if i in removing else _HOT if a > hot else _AFTER for i, a in zip(nodes, view.after)]
    for k, node in enumerate(nodes):
        if node in removing:
            bars.axvspan(k - 0.5, k + 0.5, color=_REMOVING, alpha=0.08, linewidth=0)
    bars.bar(x - width / 2, view.before, width, color=_BEFORE, label="before the plan")
    bars.bar(
        x + width / 2,
        view.after,
        width,
        color=colours,
        label="_after",  # in the legend by colour below: the bars have several
        hatch=["//" if i in removing else "" for i in nodes],
        edgecolor="white",
    )
    if mean is not None:
        bars.axhspan(
            low,
            high,
            color="tab:green",
            alpha=0.2,
            linewidth=0,
            zorder=2.5,
            label=f"target band: mean \u00b1 {band:g}% of the mean",
        )
        bars.axhline(
            mean, color="k", linestyle="--", linewidth=1.2, zorder=3, label=f"mean utilisation {number(mean)}"
        )
    bars.set_xticks(
        x, [f"{i}\n(removing)" if i in removing else i for i in nodes], rotation=90 if len(nodes) > 16 else 0
    )
    for label, node in zip(bars.get_xticklabels(), nodes):
        if node in removing:
            label.set_color(_REMOVING)
    bars.set_ylabel(view.ylabel)
    bars.set_xlim(-0.6, len(nodes) - 0.4)
    return colours


def _legend(bars, colours: list[str], reasons: list[str]) -> None:
    """The legend: what is drawn, plus one entry per colour the bars after use and per reason of
    the moves (the bars and arrows carry several colours each)."""
    handles, labels = bars.get_legend_handles_labels()
    Patch = require("matplotlib.patches", _PURPOSE).Patch
    handles.append(Patch(facecolor=_AFTER))
    labels.append("after the plan")
    for colour, hatch, what in ((_HOT, "", "above the target band"), (_REMOVING, "//", "on a removing node")):
        if colour in colours:
            handles.append(Patch(facecolor=colour, hatch=hatch, edgecolor="white"))
            labels.append(f"after the plan, {what}")
    Line2D = require("matplotlib.lines", _PURPOSE).Line2D
    for reason in (r for r in REASON_COLOURS if r in reasons):
        handles.append(Line2D([], [], color=REASON_COLOURS[reason], linewidth=2, marker=">"))
        labels.append(f"moves: {reason}" if reason != "-" else "moves")
    bars.legend(handles, labels, loc="upper left", fontsize="small", ncols=2)


def _arrows(axes, plan: Plan, reasons: list[str], nodes: list[str], top: float) -> None:
    """One arrow per (source, target, reason): an arc above the bars from the source node to the
    target node in the reason's colour, its width growing with the number of moves, the number at
    its top; the reasons of one pair of nodes arc one above the other."""
    patches = require("matplotlib.patches", _PURPOSE)
    Path = require("matplotlib.path", _PURPOSE).Path
    position = {node: k for k, node in enumerate(nodes)}
    arrows = Counter((move.source, move.target, reason) for move, reason in zip(plan.moves, reasons))
    lanes: Counter[tuple[str, str]] = Counter()
    base = top * 1.04
    for (source, target, reason), moves in arrows.items():
        s, t = position[source], position[target]
        lane = lanes[(source, target)]
        lanes[(source, target)] += 1
        # Higher arcs for farther nodes; a pair's way back arcs lower, so the two do not overlap;
        # each further reason of the same pair one lane higher.
        rise = top * (0.12 + 0.05 * abs(t - s) + 0.08 * lane) * (1.0 if t > s else 0.6)
        control = base + 2 * rise  # a quadratic Bezier peaks halfway to its control point
        colour = REASON_COLOURS[reason]
        shift = 0.1 if t > s else -0.1  # out on one side of the node, in on the other
        path = Path(
            [(s + shift, base), ((s + t) / 2, control), (t - shift, base)],
            [Path.MOVETO, Path.CURVE3, Path.CURVE3],
        )
        axes.add_patch(
            patches.FancyArrowPatch(
                path=path,
                arrowstyle="-|>",
                mutation_scale=14,
                color=colour,
                alpha=0.85,
                linewidth=1.0 + 0.5 * min(moves, 8),
            )
        )
        axes.text(
            (s + t) / 2,
            base + rise,
            str(moves),
            ha="center",
            va="bottom",
            fontsize="small",
            color=colour,
            fontweight="bold",
        )


def _list_moves(axes, plan: Plan, reasons: list[str], notes: list[str], max_listed: int) -> None:
    """The moves as a list beside the bars (key group, from -> to, state, reason), then the
    notes (the warnings of :func:`albic.core.explain.explain`)."""
    axes.axis("off")
    axes.set_title(count(len(plan.moves), "move"), loc="left", fontsize="medium")
    shown = list(zip(plan.moves, reasons))[:max_listed]
    lines: list[tuple[str, str, str]] = []  # text, colour, font family
    if not shown:
        lines.append(("the plan moves nothing", "0.2", "sans-serif"))
    width = max((len(m.key_group) for m, _ in shown), default=0)
    for move, reason in shown:
        lines.append(
            (
                f"{move.key_group:<{width}}  {move.source} -> {move.target}  {size(move.cost):>9}  {reason}",
                REASON_COLOURS.get(reason, "0.2"),
                "monospace",
            )
        )
    if len(plan.moves) > len(shown):
        lines.append((f"... and {count(len(plan.moves) - len(shown), 'move')} more", "0.3", "sans-serif"))
    for note in notes:
        wrapped = textwrap.wrap(note, 52)
        lines += [("", "k", "sans-serif")] + [(w, "tab:red", "sans-serif") for w in wrapped]
    step = min(0.042, 1.0 / (len(lines) + 1))
    for row, (text, colour, family) in enumerate(lines):
        axes.text(
            0.0,
            1.0 - row * step,
            text,
            va="top",
            family=family,
            fontsize="small",
            color=colour,
            transform=axes.transAxes,
        )
