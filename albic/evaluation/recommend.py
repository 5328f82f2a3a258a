"""A recommendation from the user's own history: which planner, budget, decision rule and trigger
to run, chosen on the first part of the periods and judged on the rest (design section 7c).

:func:`recommend` replays every *candidate* -- each planner at each budget, under each decision
rule (``decide_on``) and each trigger -- over all the periods of the statistics, beside the
reference (the engine's own split, :mod:`albic.evaluation.verdict`), which is a candidate too:
"keep the engine's split" is an answer. Then:

1. **Training periods**: the first ``train`` share of the periods (default 0.6). Each candidate's
   mean load distance over them is its score. The choice is the candidate that moved the least
   state per period among those that **balance alike** with the best: by default (``tolerance=
   "noise"``) those not worse than it beyond noise, the paired 95 % interval of their load
   distance less the best's holding 0 (:func:`albic.evaluation.verdict.paired_interval`); with a
   number, those within that many points of its mean. Of decisions that balance alike, the one
   that moves least (the engine's own split first on a tie: it needs nothing installed). The
   interval derives the margin from the trace itself: on four traces (README, "Decisions that
   pay") a fixed 0.5 points chose a plan one point worse than the engine's split on the held-out
   days of a code repository, where the interval chose one better than it.
2. **Held-out periods**: the rest. The choice's figures over them (mean and p95 load distance,
   moves, state moved, and the paired difference to the reference with its 95 % interval) are
   what it is expected to do, since nothing of them went into the choice; so are the runner-up's
   (the next candidate by the same rule) and the baselines' (each planner and budget with
   ``previous`` and ``always``, the plain comparison).

Every replay carries its placement from the first period on, so a candidate's held-out rows are
what it would have done had it run all along; ``albic compare STATS --recommendation FILE`` replays
the choice again and gives the same held-out figures (:meth:`Recommendation.held_out_of`).

The decision rules by default: ``previous``, ``forecast:mean:K`` and ``forecast:shrink:K`` with
``K`` a day of periods for periods shorter than a day (24 for hours), else four weeks of them
(:func:`season`); the triggers ``always`` and ``gain``; the planners ``milp`` and ``flux`` at 5 and
20 moves.

Example
-------
>>> from albic.core.model import Node, KeyGroup, Snapshot
>>> kgs = [KeyGroup(f"k{i}", "op", float(i + 1), 10.0, index=i) for i in range(6)]
>>> snaps = [Snapshot([Node("n1"), Node("n2")], kgs, {k.id: "n1" for k in kgs}, period=f"t{t}")
...          for t in range(10)]
>>> chosen = recommend(snaps, planners=["flux"], budgets="max_moves=2", decide_on=["previous"],
...                    triggers=["always"])
>>> chosen.spec, chosen.held_out["periods"], round(chosen.held_out["mean_load_distance_pct"], 2)
('flux:max_moves=2', 4, 4.76)
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from albic.base.errors import InvalidParameterError
from albic.base.files import atomic_write_text, dumps
from albic.core.planner import get_planner
from albic.evaluation.compare import (
    Budgets,
    CompareRules,
    Runner,
    compare,
    made_no_plan,
    parse_budgets,
    parse_planner_spec,
    reference_name,
    source_periods,
    summarize,
)
from albic.evaluation.decide import parse_decide_on, parse_trigger
from albic.evaluation.replay import ReplayRules, over_rules
from albic.evaluation.verdict import DEFAULT_REFERENCE, Interval, describe_interval, paired_interval
from albic.io.datasets import read_manifest
from albic.io.reader import read_input_json

__all__ = [
    "recommend",
    "RecommendRules",
    "Recommendation",
    "read_recommendation",
    "season",
    "RECOMMENDATION_SCHEMA",
    "DEFAULT_PLANNERS",
    "DEFAULT_BUDGETS",
    "DEFAULT_TRIGGERS",
    "DEFAULT_TRAIN",
    "DEFAULT_TOLERANCE",
]

RECOMMENDATION_SCHEMA = "albic.recommendation/1"
DEFAULT_PLANNERS = ("milp", "flux")
DEFAULT_BUDGETS = "max_moves=5,20"
DEFAULT_TRIGGERS = ("always", "gain")
DEFAULT_TRAIN = 0.6
#: When two candidates balance alike on the training periods (the choice then goes to the one
#: that moves less state): "noise", the one not worse than the other beyond noise.
DEFAULT_TOLERANCE = "noise"
DEFAULT_TIME_LIMIT = 0.25

# The figures of a candidate over a part of the periods.
_FIGURES = (
    "mean_load_distance_pct",
    "p95_load_distance_pct",
    "total_moves",
    "mean_migration_cost_pct",
    "vs_reference_pct",
    "vs_reference_low",
    "vs_reference_high",
    "better_periods",
    "worse_periods",
)


def season(period_seconds: float | None) -> int:
    """The window of the default forecasts: a day of periods for periods shorter than a day, four
    weeks of periods for longer ones (at least 2); 24 when the period length is not known.

    >>> season(3600), season(900), season(86400), season(7 * 86400), season(None)
    (24, 96, 28, 4, 24)
    """
    if not period_seconds or period_seconds <= 0:
        return 24
    if period_seconds < 86400:
        return max(2, round(86400 / period_seconds))
    return max(2, round(28 * 86400 / period_seconds))


@dataclass(frozen=True)
class Recommendation:
    """What :func:`recommend` chose, with its figures: ``spec`` (the planner and its parameters as
    ``albic compare --planner`` takes them; the reference's name when the choice is to keep the
    engine's split), ``decide_on``, ``trigger``, the ``reference``, the figures of the ``train``
    and ``held_out`` periods (each with ``first``, ``last`` and ``periods``), the reference's
    held-out figures, the ``runner_up``, the ``baselines`` and every candidate's figures
    (``candidates``, one row per candidate), and the ``verdict`` in words."""

    spec: str
    decide_on: str
    trigger: str
    reference: str | None
    train: dict[str, Any]
    held_out: dict[str, Any]
    reference_held_out: dict[str, Any]
    runner_up: dict[str, Any]
    baselines: list[dict[str, Any]]
    verdict: str
    keeps_engine_split: bool = False
    candidates: pd.DataFrame = field(default_factory=pd.DataFrame, repr=False, compare=False)
    #: Every replay's rows (a ``trigger`` column beside ``decided_on``), for a closer look.
    replays: pd.DataFrame = field(default_factory=pd.DataFrame, repr=False, compare=False)

    @property
    def planner(self) -> str:
        return self.spec.partition(":")[0]

    @property
    def parameters(self) -> dict[str, Any]:
        return parse_planner_spec(self.spec)[1]

    def compare_arguments(self) -> dict[str, Any]:
        """The keywords of :func:`albic.compare` that replay the choice beside its reference."""
        return {
            "planners": [self.spec],
            "decide_on": self.decide_on,
            "trigger": self.trigger,
            "reference": self.reference,
        }

    def held_out_of(self, table: pd.DataFrame) -> dict[str, Any]:
        """The held-out figures of the choice in a comparison's ``table`` (one made with
        :meth:`compare_arguments`): the figures this recommendation reports, computed again."""
        first, last = self.held_out["first"], self.held_out["last"]
        part = table[(table["period"].astype(str) >= first) & (table["period"].astype(str) <= last)]
        summary = summarize(part)
        label = self.spec if not self.keeps_engine_split else self.reference
        return _figures(summary.loc[[label]].iloc[0], len(part["period"].unique()), first, last)

    def text(self) -> str:
        """The recommendation in a few lines: the choice, its figures on both parts, the runner-up,
        the plain comparison and the verdict."""
        train, held = self.train, self.held_out
        what = (
            f"keep the engine's split ({self.reference})"
            if self.keeps_engine_split
            else f"{self.spec}, decide_on {self.decide_on}, trigger {self.trigger}"
        )
        runner = self.runner_up
        reference = self.reference_held_out
        lines = [
            f"recommended: {what}",
            f"  chosen on {train['periods']} periods ({train['first']} .. {train['last']}): mean load distance "
            f"{train['mean_load_distance_pct']:.2f} %, {train['mean_migration_cost_pct']:.2f} % of the state moved per period",
            f"  held out {held['periods']} periods ({held['first']} .. {held['last']}): mean load distance "
            f"{held['mean_load_distance_pct']:.2f} % (the reference {self.reference}: "
            f"{_pct(reference.get('mean_load_distance_pct'))}), {held['total_moves']} moves, "
            f"{held['mean_migration_cost_pct']:.2f} % of the state per period",
            f"  runner-up: {runner['spec']}, {runner['decide_on']}, {runner['trigger']}: held out "
            f"{_pct(runner['held_out']['mean_load_distance_pct'])}, {runner['held_out']['total_moves']} moves",
        ]
        for base in self.baselines:
            lines.append(
                f"  plain {base['spec']} (previous, always): held out {_pct(base['mean_load_distance_pct'])}, "
                f"{base['total_moves']} moves"
            )
        lines.append(self.verdict)
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": RECOMMENDATION_SCHEMA,
            "planner": self.planner,
            "parameters": self.parameters,
            "spec": self.spec,
            "decide_on": self.decide_on,
            "trigger": self.trigger,
            "reference": self.reference,
            "keeps_engine_split": self.keeps_engine_split,
            "train": self.train,
            "held_out": self.held_out,
            "reference_held_out": self.reference_held_out,
            "runner_up": self.runner_up,
            "baselines": self.baselines,
            "verdict": self.verdict,
        }

    def write(self, out: str | os.PathLike[str]) -> list[Path]:
        """``recommendation.json`` and ``candidates.csv`` in folder ``out`` (each written whole)."""
        folder = Path(out)
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write_text(folder / "recommendation.json", dumps(self.to_dict()) + "\n")
        atomic_write_text(folder / "candidates.csv", self.candidates.to_csv(index=False))
        return [folder / "recommendation.json", folder / "candidates.csv"]


def read_recommendation(path: str | os.PathLike[str]) -> Recommendation:
    """The recommendation a ``recommendation.json`` holds (what :meth:`Recommendation.write` wrote)."""
    data = read_input_json(Path(path), "recommendation")
    if not isinstance(data, dict) or data.get("schema") != RECOMMENDATION_SCHEMA:
        schema = data.get("schema") if isinstance(data, dict) else None
        raise InvalidParameterError(f"{path}: schema {schema!r} is not {RECOMMENDATION_SCHEMA!r}")
    try:
        return Recommendation(
            data["spec"],
            data["decide_on"],
            data["trigger"],
            data["reference"],
            data["train"],
            data["held_out"],
            data["reference_held_out"],
            data["runner_up"],
            data["baselines"],
            data["verdict"],
            bool(data.get("keeps_engine_split", False)),
        )
    except KeyError as missing:
        raise InvalidParameterError(f"{path}: the recommendation has no {missing}") from None


def _spec(name: str, params: Mapping[str, Any]) -> str:
    """``albic compare --planner``'s form of a planner and its parameters, in a stable order."""
    if not params:
        return name
    return name + ":" + ",".join(f"{k}={_text(v)}" for k, v in sorted(params.items()))


def _text(value: Any) -> str:
    """A parameter's value as ``parse_value`` reads it back."""
    if value is None:
        return "none"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return value if isinstance(value, str) else json.dumps(value)


def _candidates(planners: Sequence[str], budgets: Budgets, time_limit: float | None) -> list[str]:
    """Every planner at every budget, as specs with the budget and the time limit in them."""
    sweep = parse_budgets(budgets)
    specs = []
    for text in planners:
        name, params = parse_planner_spec(str(text))
        accepted = get_planner(name, **params).get_params()  # checks the name and parameters now
        if time_limit is not None and "time_limit" in accepted and "time_limit" not in params:
            params["time_limit"] = time_limit
        if sweep is None or sweep[0] not in accepted or params.get(sweep[0]) is not None:
            specs.append(_spec(name, params))
            continue
        specs.extend(_spec(name, {**params, sweep[0]: value}) for value in sweep[1])
    return list(dict.fromkeys(specs))


def _figures(row: Any, periods: int, first: str, last: str) -> dict[str, Any]:
    out: dict[str, Any] = {"first": first, "last": last, "periods": periods}
    for name in _FIGURES:
        value = row.get(name, math.nan)
        if value is None or value != value:
            out[name] = None
        elif name in ("total_moves", "better_periods", "worse_periods"):
            out[name] = int(value)
        else:
            out[name] = float(value)
    return out


def _part(table: pd.DataFrame, labels: Sequence[str]) -> pd.DataFrame:
    return table[table["period"].astype(str).isin(set(labels))]


@dataclass(frozen=True)
class RecommendRules:
    """The rules of a recommendation (module docstring), built once: the candidates (each of
    ``planners`` at each of ``budgets``, with ``time_limit`` where it takes one and its spec does
    not set it, under each ``decide_on`` rule -- ``None``: ``previous``, ``forecast:mean:K`` and
    ``forecast:shrink:K`` with ``K = window`` or, unset, :func:`season` of the period length --
    and each of ``triggers``), how the choice is made (on the first ``train`` share of the
    periods, among those within ``tolerance`` of the best), the ``reference``, and the replays'
    other rules (``replay``: its ``initial``, ``remote_cost`` and ``stream``; the decision rule and
    trigger are each candidate's).

    >>> RecommendRules.of(None, {"train": 0.5, "remote_cost": 0.2}).replay.remote_cost
    0.2
    """

    planners: Sequence[str] = DEFAULT_PLANNERS
    budgets: Budgets = DEFAULT_BUDGETS
    decide_on: Sequence[str] | None = None
    triggers: Sequence[str] = DEFAULT_TRIGGERS
    train: float = DEFAULT_TRAIN
    tolerance: float | str = DEFAULT_TOLERANCE
    time_limit: float | None = DEFAULT_TIME_LIMIT
    reference: str | None = DEFAULT_REFERENCE
    window: int | None = None
    replay: ReplayRules = ReplayRules()

    @classmethod
    def of(cls, rules: RecommendRules | None, fields: Mapping[str, Any]) -> RecommendRules:
        """``rules`` (default the defaults) with ``fields`` over them: keywords of these rules'
        names or of the replays' ``initial``, ``remote_cost`` and ``stream``."""
        if "trigger" in fields:  # a replay rule's name, but here the candidates' choice
            raise InvalidParameterError(
                "recommend: the trigger is each candidate's own; give the candidates' as triggers=[...]"
            )
        return over_rules(rules or cls(), fields)

    def checked(self) -> RecommendRules:
        """These rules, the candidates' decision rules and triggers, the share chosen on and the
        tolerance checked."""
        for rule in self.decide_on or []:
            parse_decide_on(rule)
        for rule in self.triggers:
            parse_trigger(rule)
        if not 0 < self.train < 1:
            raise InvalidParameterError(
                f"train {self.train!r}: the share of the periods chosen on, between 0 and 1"
            )
        tolerance = self.tolerance
        if tolerance != "noise" and not (
            isinstance(tolerance, (int, float)) and math.isfinite(tolerance) and tolerance >= 0
        ):
            raise InvalidParameterError(
                f"tolerance {tolerance!r}: 'noise' or points of load distance, a finite number >= 0"
            )
        return self


def recommend(
    source: Any,
    *,
    rules: RecommendRules | None = None,
    jobs: int = 1,
    runner: Runner | None = None,
    show_progress: bool | None = None,
    **rule_fields: Any,
) -> Recommendation:
    """Backtest every candidate on ``source`` (snapshots or a statistics folder) and choose on
    the first ``train`` share of the periods (module docstring). The rules
    (:class:`RecommendRules`: ``rules=``, or keywords of their names, which override it):
    ``planners``, ``budgets``, ``decide_on`` (default ``previous``, ``forecast:mean:K`` and
    ``forecast:shrink:K`` with ``K = window`` or, unset, :func:`season` of the statistics' period
    length), ``triggers``, ``train``, ``tolerance``, ``time_limit``, ``reference``, and the
    replays' ``initial``, ``remote_cost`` and ``stream``, the same for every candidate. ``jobs``
    and ``runner`` run the replays as :func:`albic.evaluation.compare.compare` does."""
    rules = RecommendRules.of(rules, rule_fields).checked()
    folder = isinstance(source, (str, os.PathLike))
    snapshots = Path(source) if folder else list(source)
    decide_on = rules.decide_on
    if decide_on is None:
        k = rules.window or season(read_manifest(snapshots).get("period_seconds") if folder else None)
        decide_on = ["previous", f"forecast:mean:{k}", f"forecast:shrink:{k}"]
    parsed = [parse_decide_on(d) for d in decide_on]
    grid = [(d.spec, parse_trigger(t).spec) for d in parsed for t in rules.triggers]
    if any(d.hindsight for d in parsed):
        raise InvalidParameterError(
            "decide_on 'hindsight' is the oracle (each plan made from the loads it is scored on): "
            "no running cluster can decide so, so it cannot be recommended"
        )
    specs = _candidates(rules.planners, rules.budgets, rules.time_limit)
    labels = sorted(set(source_periods(snapshots)))
    cut = math.floor(rules.train * len(labels))
    if cut < 2 or len(labels) - cut < 2:
        raise InvalidParameterError(
            f"train {rules.train:g} of {len(labels)} periods leaves {cut} to choose on and "
            f"{len(labels) - cut} to judge on: each needs at least 2"
        )
    reference_label = reference_name(snapshots, rules.reference)
    tables = []
    for i, (rule, trigger) in enumerate(grid):
        replayed = replace(rules.replay, decide_on=rule, trigger=trigger)
        table = compare(
            snapshots,
            specs,
            rules=CompareRules(
                budgets=rules.budgets, reference=rules.reference if i == 0 else None, replay=replayed
            ),
            jobs=jobs,
            runner=runner,
            show_progress=show_progress,
        )
        tables.append(table.assign(trigger=trigger))
    return choose(tables, labels[:cut], labels[cut:], rules.tolerance, reference_label, rules.train)


def _scores(tables, referenced, labels) -> pd.DataFrame:
    """One row per candidate (and the reference) with its figures over the periods ``labels``."""
    rows = []
    for table in tables:
        decided, trigger = table["decided_on"].iloc[0], table["trigger"].iloc[0]
        runs = table[~table["reference"]]
        part = _part(pd.concat([runs, referenced]), labels)
        summary = summarize(part)
        for label, row in summary[~summary["reference"]].iterrows():
            made_none = made_no_plan(part[part["planner"] == label])
            rows.append(
                {"spec": label, "decide_on": decided, "trigger": trigger, "made_no_plan": made_none, **row}
            )
    if len(referenced):
        summary = summarize(_part(referenced, labels))
        for label, row in summary.iterrows():
            rows.append(
                {"spec": label, "decide_on": "previous", "trigger": "rescale", "made_no_plan": False, **row}
            )
    return pd.DataFrame(rows)


def _held_out_words(chosen: Any, reference: str | None) -> str:
    """What the choice did on the held-out periods against the reference, in one sentence."""
    name = f"{chosen['spec']} ({chosen['decide_on']}, {chosen['trigger']})"
    if reference is None or chosen["vs_reference_pct_held_out"] != chosen["vs_reference_pct_held_out"]:
        return f"held out: {name}, no reference to judge against"
    interval = Interval.of_row(chosen, "_held_out")
    if interval.beats:
        meaning = "better than the engine's split beyond noise"
    elif interval.loses:
        meaning = "worse than the engine's split beyond noise: keep the engine's split"
    else:
        meaning = "not distinguishable from the engine's split on these periods"
    return (
        f"held out, against the reference ({reference}): {name} is {describe_interval(interval)}: {meaning}"
    )


def _series(tables, labels) -> dict[tuple[str, str, str], np.ndarray]:
    """(spec, decide_on, trigger) -> the candidate's load distance in each of the periods ``labels``."""
    out = {}
    for table in tables:
        part = _part(table, labels)
        for label, rows in part.groupby("planner", sort=False):
            if bool(rows["reference"].iloc[0]):
                key = (label, "previous", "rescale")
            else:
                key = (label, rows["decided_on"].iloc[0], rows["trigger"].iloc[0])
            out[key] = rows.sort_values("period")["load_distance_pct"].to_numpy(dtype=float)
    return out


def _alike(usable: pd.DataFrame, series, tolerance: float | str) -> pd.Series:
    """Whether each candidate balances alike with the best on the training periods: within
    ``tolerance`` points of its mean, or (``"noise"``) not worse than it beyond noise (the paired
    interval of the difference holds 0)."""
    best = usable["mean_load_distance_pct_train"].min()
    if tolerance != "noise":
        return usable["mean_load_distance_pct_train"] <= best + float(tolerance)
    top = usable.loc[usable["mean_load_distance_pct_train"].idxmin()]
    lead = series[(top["spec"], top["decide_on"], top["trigger"])]
    keys = zip(usable["spec"], usable["decide_on"], usable["trigger"])
    return pd.Series([paired_interval(series[k] - lead).low <= 0 for k in keys], index=usable.index)


def choose(tables, train_labels, held_labels, tolerance, reference_label, share) -> Recommendation:
    """The recommendation from the replays ``tables`` (one per decision rule and trigger, the
    first with the reference's rows), chosen on the periods ``train_labels`` and judged on
    ``held_labels`` (module docstring)."""
    referenced = tables[0][tables[0]["reference"]] if reference_label else tables[0].iloc[:0]
    trained = _scores(tables, referenced, train_labels)
    held = _scores(tables, referenced, held_labels)
    board = trained.merge(held, on=["spec", "decide_on", "trigger"], suffixes=("_train", "_held_out"))
    ranked = _ranked(board, _series(tables, train_labels), tolerance)
    chosen, runner_up = ranked.iloc[0], ranked.iloc[min(1, len(ranked) - 1)]
    keeps = reference_label is not None and (chosen["spec"], chosen["trigger"]) == (
        reference_label,
        "rescale",
    )
    reference_rows = board[(board["spec"] == reference_label) & (board["trigger"] == "rescale")]
    plain = board[(board["decide_on"] == "previous") & (board["trigger"] == "always")]
    if keeps:
        margin = "beyond noise" if tolerance == "noise" else f"by more than {tolerance:g} points"
        words = (
            f"keep the engine's split ({reference_label}): no candidate balanced better {margin} "
            "on the training periods"
        )
    else:
        words = _held_out_words(chosen, reference_label)
    return Recommendation(
        spec=str(chosen["spec"]),
        decide_on=str(chosen["decide_on"]),
        trigger=str(chosen["trigger"]),
        reference=reference_label,
        train={"share": share, **_part_figures(chosen, "train", train_labels)},
        held_out=_part_figures(chosen, "held_out", held_labels),
        reference_held_out=_part_figures(reference_rows.iloc[0], "held_out", held_labels)
        if len(reference_rows)
        else {},
        runner_up={
            **_named(runner_up),
            **_part_figures(runner_up, "train", train_labels),
            "held_out": _part_figures(runner_up, "held_out", held_labels),
        },
        baselines=[{**_named(r), **_part_figures(r, "held_out", held_labels)} for _, r in plain.iterrows()],
        verdict=words,
        keeps_engine_split=keeps,
        candidates=board,
        replays=pd.concat(tables, ignore_index=True),
    )


def _ranked(board: pd.DataFrame, series, tolerance: float | str) -> pd.DataFrame:
    """The candidates that made plans, best first: those that balance alike with the best (on the
    training periods) by the state they moved, then the others by their balance; on a tie the
    engine's own split first (nothing to install), then the better balanced."""
    usable = board[~board["made_no_plan_train"] & board["mean_load_distance_pct_train"].notna()].copy()
    usable["balances_alike"] = _alike(usable, series, tolerance)
    usable["order"] = usable["mean_migration_cost_pct_train"].where(
        usable["balances_alike"], usable["mean_load_distance_pct_train"]
    )
    usable["planner_of_ours"] = usable["trigger"] != "rescale"
    return usable.sort_values(
        ["balances_alike", "order", "planner_of_ours", "mean_load_distance_pct_train"],
        ascending=[False, True, True, True],
        kind="stable",
    )


def _part_figures(row: Any, part: str, labels: Sequence[str]) -> dict[str, Any]:
    """A board row's figures of one part (``"train"`` or ``"held_out"``) of the periods ``labels``."""
    return _figures({name: row[f"{name}_{part}"] for name in _FIGURES}, len(labels), labels[0], labels[-1])


def _named(row: Any) -> dict[str, str]:
    return {"spec": row["spec"], "decide_on": row["decide_on"], "trigger": row["trigger"]}


def _pct(value) -> str:
    return "-" if value is None else f"{value:.2f} %"
