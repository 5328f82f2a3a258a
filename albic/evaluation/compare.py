"""Run several planners over the same periods: one tidy table, and its per-planner summary.

Planners are compared **at equal migration budgets**: ``budgets={"max_moves": [5, 10, 20]}`` (or
the text ``"max_moves=5,10,20"``, as ``albic compare --budgets`` takes it) runs every planner that
has that budget parameter once per budget; planners without it (COLA, Storm's default, consistent
hashing, ...) run once, as reference points. Every row of the table carries its ``budget``.

A planner is given as a registry name, a *spec* ``name:key=value,...`` (e.g.
``"albic:time_limit=1"``; values are JSON literals, ``none``, or text, as ``albic plan --param``
reads them), a :class:`~albic.core.planner.Planner`, or a mapping ``label -> name / instance /
parameter dict``. A spec that sets the budget parameter itself (``"flux:max_moves=3"``) is run at
that budget only.

Example
-------
>>> from albic.core.model import Node, KeyGroup, Snapshot
>>> kgs = [KeyGroup(f"k{i}", "op", float(i + 1), 10.0, index=i) for i in range(4)]
>>> snaps = [Snapshot([Node("n1"), Node("n2")], kgs, {k.id: "n1" for k in kgs}, period=p) for p in ("t0", "t1")]
>>> table = compare(snaps, ["flux", "storm_default"])
>>> sorted(set(table["planner"]))
['flux', 'storm_default']
>>> int(summarize(table).loc["flux", "total_moves"])    # t1 planned on t0's loads: t0 is not planned
2
>>> table = compare(snaps, ["flux", "storm_default"], budgets="max_moves=0,1")
>>> table[table["period"] == "t1"][["planner", "budget", "moves"]].to_dict("records")
[{'planner': 'flux', 'budget': 0.0, 'moves': 0}, {'planner': 'flux', 'budget': 1.0, 'moves': 1}, {'planner': 'storm_default', 'budget': nan, 'moves': 0}]
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd

from albic.base.errors import InvalidParameterError
from albic.base.progress import progress
from albic.core.explain import reaches_floor
from albic.core.model import NO_PLAN_STATUSES, Snapshot
from albic.core.planner import Planner, get_planner, parse_value
from albic.evaluation.replay import REPLAY_COLUMNS, ReplayRules, over_rules, replay
from albic.evaluation.verdict import DEFAULT_REFERENCE, paired_interval, reference_planner
from albic.io import read_snapshots
from albic.io.datasets import partial_periods, read_manifest, read_operators
from albic.io.periods import period_labels

__all__ = [
    "planner_label",
    "compare",
    "CompareRules",
    "labelled",
    "summarize",
    "SUMMARY_COLUMNS",
    "COMPARE_COLUMNS",
    "whole_periods",
    "BUDGET_PARAMETERS",
    "parse_planner_spec",
    "parse_budgets",
    "Run",
    "runs",
    "Runner",
    "local_runner",
    "replay_run",
    "error_rows",
    "replay_digest",
    "Source",
    "source_periods",
    "plans_made",
    "made_no_plan",
    "no_plan_counts",
    "failed",
    "NO_PLAN",
    "at_floor",
    "steady_rows",
    "with_reference",
    "reference_name",
]

PlannerSpec = str | Planner
Budgets = str | Mapping[str, Sequence[float]] | None
#: What a comparison replays: snapshots, or the folder of a statistics dataset (``albic stats``).
Source = Iterable[Snapshot] | str | os.PathLike
#: Runs the replays ``todo`` (pairs of a position and a :class:`Run`) over ``source`` (a list of
#: snapshots or a statistics folder) under the replay rules (checked:
#: :meth:`~albic.evaluation.replay.ReplayRules.checked`), and yields ``(position, table)`` as each
#: replay finishes, in any order. :func:`local_runner` runs them in this process or in worker
#: processes; :class:`albic.spark.compare_engine.SparkRunner` as Spark tasks;
#: :func:`albic.spark.compare_engine.runner_for` picks one for ``albic.compare`` and the CLI.
Runner = Callable[
    [list[Snapshot] | Path, Sequence[tuple[int, "Run"]], ReplayRules, bool | None],
    Iterable[tuple[int, pd.DataFrame]],
]

#: The parameters a budget sweep can vary.
BUDGET_PARAMETERS = ("max_moves", "max_migration_cost")

#: The columns of :func:`compare`'s table: a replay's, plus the run's budget and whether it is the
#: comparison's reference (:mod:`albic.evaluation.verdict`).
COMPARE_COLUMNS = ("planner", "budget_parameter", "budget", "reference", *REPLAY_COLUMNS[1:])

# The summary's columns of what the plans cost the stream: latency over the steady periods only
# (a mean over periods would be ruled by the near-saturated ones), the overloaded ones apart.
_STREAM_SUMMARY = (
    "total_buffered_tuples",
    "max_catch_up_seconds",
    "steady_periods",
    "overloaded_periods",
    "median_p99_latency_ms",
    "p95_p99_latency_ms",
    "median_p99_service_times",
    "p95_p99_service_times",
    "max_drain_seconds",
    "undrained_periods",
)

# The summary's columns of the paired difference to the reference (albic.evaluation.verdict).
_REFERENCE_SUMMARY = (
    "vs_reference_pct",
    "vs_reference_low",
    "vs_reference_high",
    "compared_periods",
    "better_periods",
    "worse_periods",
)

#: The summary table's columns (``albic compare`` prints and writes these).
SUMMARY_COLUMNS = (
    "decided_on",
    "budget_parameter",
    "budget",
    "reference",
    "periods",
    "planned",
    "mean_load_distance_pct",
    "p95_load_distance_pct",
    *_REFERENCE_SUMMARY,
    "hindsight_mean_load_distance_pct",
    "hindsight_p95_load_distance_pct",
    "mean_floor_load_distance_pct",
    "at_floor_periods",
    "total_moves",
    "mean_migration_cost_pct",
    "total_migration_cost_pct",
    "state_moved_times",
    "mean_solve_seconds",
    *_STREAM_SUMMARY,
    "unsupported",
    "errors",
    "infeasible",
    "no_solution",
    "held",
    "fell_back",
)


def parse_planner_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``"albic:max_moves=20,time_limit=1"`` -> ``("albic", {"max_moves": 20, "time_limit": 1})``.

    >>> parse_planner_spec("flux")
    ('flux', {})
    >>> parse_planner_spec("milp:time_limit=0.5,seed=3")
    ('milp', {'time_limit': 0.5, 'seed': 3})
    """

    name, _, rest = spec.partition(":")
    name = name.strip()
    if not name:
        raise InvalidParameterError(f"planner spec {spec!r}: expected NAME or NAME:key=value,...")
    params: dict[str, Any] = {}
    for item in filter(None, (p.strip() for p in rest.split(","))):
        key, equals, value = item.partition("=")
        if not equals or not key.strip():
            raise InvalidParameterError(
                f"planner spec {spec!r}: {item!r} is not key=value (e.g. albic:max_moves=20,time_limit=1)"
            )
        if key.strip() in params:
            raise InvalidParameterError(f"planner spec {spec!r}: {key.strip()!r} is given twice")
        params[key.strip()] = parse_value(value.strip())
    return name, params


def parse_budgets(budgets: Budgets) -> tuple[str, list[float]] | None:
    """``"max_moves=5,10"`` or ``{"max_moves": [5, 10]}`` -> ``("max_moves", [5, 10])``.

    >>> parse_budgets("max_migration_cost=1e3,5e3")
    ('max_migration_cost', [1000.0, 5000.0])
    """
    if budgets is None:
        return None
    if isinstance(budgets, str):
        name, equals, values = budgets.partition("=")
        name = name.strip()
        try:
            parsed = [float(v) for v in values.split(",") if v.strip()]
        except ValueError:
            parsed = []
        if not equals or not parsed:
            raise InvalidParameterError(
                f"budgets {budgets!r}: expected PARAMETER=V1,V2,... e.g. max_moves=5,10,20,40"
            )
        items = {name: parsed}
    else:
        items = {str(k): [float(v) for v in vs] for k, vs in dict(budgets).items()}
    if len(items) != 1:
        raise InvalidParameterError(f"budgets {budgets!r}: give exactly one budget parameter")
    ((name, values),) = items.items()
    if name not in BUDGET_PARAMETERS:
        raise InvalidParameterError(
            f"budgets: {name!r} is not a budget parameter; use one of {', '.join(BUDGET_PARAMETERS)}"
        )
    if not values or any(not math.isfinite(v) or v < 0 for v in values):
        raise InvalidParameterError(f"budgets {name}: every value must be finite and >= 0, got {values}")
    if name == "max_moves":
        if any(v != int(v) for v in values):
            raise InvalidParameterError(f"budgets max_moves: whole numbers of moves, got {values}")
        values = [int(v) for v in values]
    return name, sorted(dict.fromkeys(values))


@dataclass(frozen=True)
class Run:
    """One replay of a comparison: a planner (at one budget, if it is budgeted); ``reference``:
    the comparison's reference, replayed with the trigger ``rescale`` whatever the comparison's
    (:mod:`albic.evaluation.verdict`)."""

    label: str
    planner: Planner
    budget_parameter: str = ""
    budget: float = math.nan
    reference: bool = False


def _planners(planners: Iterable[PlannerSpec] | Mapping[str, Any]) -> dict[str, Planner]:
    """Label -> planner: names, specs, instances, or a mapping label -> name / instance / parameters."""
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
    pairs = []
    for item in planners:
        if isinstance(item, str):
            name, params = parse_planner_spec(item)
            pairs.append((item.strip(), get_planner(name, **params)))
        else:
            pairs.append((item.name, item))
    return labelled(pairs)


def labelled(pairs: Iterable[tuple[str, Planner]]) -> dict[str, Planner]:
    """Label -> planner from ``(label, planner)`` pairs, the rule ``albic.compare`` and ``albic
    compare`` share: a label taken by a different planner is numbered (two Flux instances at
    different budgets, both named ``flux``, become ``flux`` and ``flux#2``), and a planner given
    again under its label with the same parameters is refused: its replay would repeat the
    first's, doubling the work for rows that tell nothing new (to replay one twice on purpose,
    e.g. a wall-clock-limited planner's spread, give a mapping label -> planner).

    >>> list(labelled([("flux", get_planner("flux", max_moves=1)), ("flux", get_planner("flux"))]))
    ['flux', 'flux#2']
    >>> labelled([("flux", get_planner("flux")), ("flux", get_planner("flux"))])
    Traceback (most recent call last):
    ...
    albic.base.errors.InvalidParameterError: planner 'flux' is given twice with the same parameters: its replay would repeat the first's; give it once (or, in Python, a mapping label -> planner to replay it twice on purpose)
    """
    out: dict[str, Planner] = {}
    for base, planner in pairs:
        taken = [label for label in out if label == base or label.startswith(f"{base}#")]
        if any(_same(planner, out[label]) for label in taken):
            raise InvalidParameterError(
                f"planner {base!r} is given twice with the same parameters: its replay would repeat "
                "the first's; give it once (or, in Python, a mapping label -> planner to replay it "
                "twice on purpose)"
            )
        label, suffix = base, 2
        while label in out:
            label = f"{base}#{suffix}"
            suffix += 1
        out[label] = planner
    return out


def _same(one: Planner, other: Planner) -> bool:
    """Whether two planners are the same class with the same parameters; parameters that compare
    element by element (arrays) are not known to be the same."""
    try:
        return bool(one == other)
    except ValueError:
        return False


def runs(planners: Iterable[PlannerSpec] | Mapping[str, Any], budgets: Budgets = None) -> list[Run]:
    """The replays :func:`compare` makes: every budgeted planner once per budget, the others once."""
    sweep = parse_budgets(budgets)
    out = []
    for label, planner in _planners(planners).items():
        params = planner.get_params()
        if sweep is None:
            fixed = next((p for p in BUDGET_PARAMETERS if params.get(p) is not None), None)
            out.append(Run(label, planner, fixed or "", _number(params[fixed] if fixed else None)))
            continue
        parameter, values = sweep
        if parameter not in params:
            out.append(Run(label, planner))  # unbudgeted: a reference point
        elif params[parameter] is not None:  # the spec fixed it
            out.append(Run(label, planner, parameter, _number(params[parameter])))
        else:
            out.extend(Run(label, planner.clone(**{parameter: v}), parameter, float(v)) for v in values)
    return out


def _number(value: Any) -> float:
    return math.nan if value is None else float(value)


def with_reference(todo: list[Run], name: str | None) -> list[Run]:
    """``todo`` with the reference ``name`` (:func:`albic.evaluation.verdict.reference_planner`)
    as its last run; a run of that planner with its default parameters already in ``todo``
    (given by its bare name) is marked as the reference instead of being replayed twice."""
    if name is None:
        return todo
    for i, run in enumerate(todo):
        if run.label == name and run.planner.name == name and not run.budget_parameter:
            return [*todo[:i], replace(run, reference=True), *todo[i + 1 :]]
    return [*todo, Run(name, get_planner(name), reference=True)]


def check_whole_snapshots(todo: list[Run], source: list[Snapshot] | Path) -> None:
    """Refuse a planner told to plan one operator (its ``operator`` parameter, e.g. ``ssm`` or
    ``mtm``) in a comparison of several: a replay scores every operator's key groups, and the
    others would stay where they are, on nodes being removed too, so its figures would be those
    of a plan that never ran for most of the job. Without ``operator`` such a planner plans every
    operator, one at a time."""
    if isinstance(source, Path):
        names = [op.name for op in read_operators(source)]
    else:
        names = sorted({kg.operator for kg in source[0].key_groups}) if source else []
    if len(names) < 2:
        return
    for run in todo:
        operator = run.planner.get_params().get("operator")
        if operator is not None:
            others = ", ".join(n for n in names if n != operator)
            raise InvalidParameterError(
                f"{run.label} plans operator {operator!r} alone, but the snapshots have "
                f"{len(names)} operators: a comparison scores them all, and the key groups of "
                f"{others} would stay where they are, on removed nodes too; leave out operator= "
                f"({run.planner.name} then plans every operator, one at a time)"
            )


def reference_name(source: list[Snapshot] | Path, reference: str | None) -> str | None:
    """The reference planner of a comparison over ``source`` (by its operators' key hash)."""
    if isinstance(source, Path):
        operators = read_operators(source)
    else:
        operators = source[0].operators if source else ()
    return reference_planner(operators, reference)


@dataclass(frozen=True)
class CompareRules:
    """The rules of a comparison, built once and the same for every run on every engine: the
    budgets every budgeted planner runs at (``budgets``, :func:`parse_budgets`), the replay every
    run is judged against (``reference``, :mod:`albic.evaluation.verdict`), whether the partial
    periods are left out (``drop_partial``), and the replays' own rules (``replay``:
    :class:`~albic.evaluation.replay.ReplayRules`).

    :func:`compare` takes them as ``rules=`` (these, or replay rules alone) or as keywords of
    their names and of the replay rules' (``decide_on="hindsight"``); keywords override ``rules``.

    >>> rules = CompareRules.of(None, {"budgets": "max_moves=1,2", "decide_on": "hindsight"})
    >>> rules.budgets, rules.replay.decide_on
    ('max_moves=1,2', 'hindsight')
    """

    budgets: Budgets = None
    reference: str | None = DEFAULT_REFERENCE
    drop_partial: bool = False
    replay: ReplayRules = ReplayRules()

    @classmethod
    def of(cls, rules: CompareRules | ReplayRules | None, fields: Mapping[str, Any]) -> CompareRules:
        """``rules`` with ``fields`` over them: keywords of these rules' names or of the replay
        rules' (any other name is refused as a misspelt keyword is)."""
        base = rules if isinstance(rules, CompareRules) else cls(replay=rules or ReplayRules())
        return over_rules(base, fields)

    def checked(self) -> CompareRules:
        """These rules, every one checked before any replay (the replay rules in the form every
        replay takes them: :meth:`~albic.evaluation.replay.ReplayRules.checked`)."""
        parse_budgets(self.budgets)
        return replace(self, replay=self.replay.checked())


def compare(
    snapshots: Source,
    planners: Iterable[PlannerSpec] | Mapping[str, Any],
    *,
    rules: CompareRules | ReplayRules | None = None,
    show_progress: bool | None = None,
    jobs: int = 1,
    runner: Runner | None = None,
    store: Any = None,
    **rule_fields: Any,
) -> pd.DataFrame:
    """:func:`albic.evaluation.replay.replay` of every planner (at every budget) over the same ``snapshots``:
    the rows of all replays in one tidy DataFrame, one row per planner, budget and period (columns
    :data:`COMPARE_COLUMNS`; ``budget`` is NaN for an unbudgeted planner).

    ``snapshots`` may also be the folder of a statistics dataset (what ``albic stats`` writes).
    The comparison's rules (:class:`CompareRules`: ``rules=``, or keywords of their names, which
    override it): ``budgets`` (every planner with that budget parameter runs once per budget:
    module docstring), ``reference``, ``drop_partial`` and the replays' rules
    (:class:`~albic.evaluation.replay.ReplayRules`; ``initial`` and ``remote_cost`` as in
    :func:`~albic.evaluation.replay.replay`): ``decide_on`` (``"previous"``, ``"forecast:NAME"``
    or the oracle ``"hindsight"``) and ``trigger`` (``"always"``,
    ``"threshold:X[,cooldown:K]"``, ``"rescale"`` or ``"gain[:...]"``) say what a plan is made
    from, when a period is planned and when a plan is applied
    (:mod:`albic.evaluation.decide`): every planner gets the same. ``stream`` models what the plans cost the stream
    (:mod:`albic.evaluation.stream`; default settings, the node rate derived from the periods).
    ``jobs > 1`` runs that many replays at a time in worker processes (the replays are independent;
    the table is the same, in the same order, except for solve times and what time-limited planners
    find within their limit). Planners given as instances must then be picklable. A planner given
    twice is labelled by :func:`labelled`.

    ``runner`` runs the replays somewhere else (:data:`Runner`; ``albic.compare(...,
    engine="spark")`` passes Spark's); the table is the same. ``store`` (an
    :class:`albic.evaluation.store.ReplayStore`) keeps each replay as it finishes and hands back
    those it already holds, which are not run again (``albic compare --resume``).

    ``planners`` may also be a recommendation (:func:`albic.evaluation.recommend.recommend`): its
    choice is replayed with its ``decide_on``, ``trigger`` and reference.

    ``reference`` adds the replay every other run is judged against (its rows say ``reference``
    True; :func:`summarize` gives every run's paired difference to it with a confidence
    interval): by default the engine's own split (``flink_default`` or ``storm_default`` by the
    statistics' hash), replayed with the trigger ``rescale`` (re-split only when the node count
    changes); a planner name for another; ``None`` for none (:mod:`albic.evaluation.verdict`).

    ``drop_partial`` leaves out the partial periods (the first and last of a trace when its events
    cover only part of them; ``Snapshot.partial``, :func:`whole_periods`); by default they are
    replayed and their rows say ``partial`` True.
    """
    if hasattr(planners, "compare_arguments"):  # a recommendation (albic.evaluation.recommend)
        chosen = planners.compare_arguments()
        planners = chosen["planners"]
        # Its reference is part of what it chose; its rules are defaults the caller may override.
        rule_fields = {"decide_on": chosen["decide_on"], "trigger": chosen["trigger"], **rule_fields}
        rule_fields["reference"] = chosen["reference"]
    given = CompareRules.of(rules, rule_fields)
    source: list[Snapshot] | Path = (
        Path(snapshots) if isinstance(snapshots, (str, os.PathLike)) else list(snapshots)
    )
    if given.drop_partial:
        source = whole_periods(source)
    todo = with_reference(runs(planners, given.budgets), reference_name(source, given.reference))
    check_whole_snapshots(todo, source)
    tables = _replays(
        source, todo, given.checked().replay, runner or local_runner(jobs), store, show_progress
    )
    if not tables:
        return pd.DataFrame(columns=list(COMPARE_COLUMNS))
    return pd.concat(tables, ignore_index=True)


def _replays(
    source: list[Snapshot] | Path,
    todo: list[Run],
    rules: ReplayRules,
    runner: Runner,
    store: Any,
    show_progress: bool | None,
) -> list[pd.DataFrame]:
    """The table of every run of ``todo``, in order: those ``store`` holds read back, the others
    run by ``runner`` (and kept in ``store`` as each finishes)."""
    periods = source_periods(source)
    digests = [replay_digest(run, rules, periods) for run in todo]
    tables: list[pd.DataFrame | None] = [None] * len(todo)
    if store is not None:
        for i, digest in enumerate(digests):
            tables[i] = store.load(digest, todo[i], periods)
    missing = [(i, run) for i, run in enumerate(todo) if tables[i] is None]
    if missing:
        for i, table in runner(source, missing, rules, show_progress):
            tables[i] = table
            # A replay that never ran (its Spark task failed every attempt: error_rows) is not
            # kept, so that --resume runs it again.
            if store is not None and table["nodes"].notna().any():
                store.save(digests[i], todo[i], table)
    return tables


def whole_periods(source: list[Snapshot] | Path) -> list[Snapshot] | Path:
    """The comparison's snapshots without the partial periods (``Snapshot.partial``); a
    statistics folder without any (its manifest lists none) stays the folder.

    >>> from albic.core.model import KeyGroup, Node
    >>> snap = Snapshot([Node("n")], [KeyGroup("k", "op", 1.0)], {"k": "n"}, period="p0")
    >>> part = Snapshot([Node("n")], [KeyGroup("k", "op", 1.0)], {"k": "n"}, period="p1", covered_seconds=60.0)
    >>> [s.period for s in whole_periods([snap, part])]
    ['p0']
    """
    if isinstance(source, Path):
        if not partial_periods(read_manifest(source)):
            return source
        source = read_snapshots(source)
    return [s for s in source if not s.partial]


def source_periods(source: list[Snapshot] | Path) -> list[str]:
    """The period labels of a comparison's snapshots (of a statistics folder: read from its
    nodes table, without building the snapshots)."""
    if isinstance(source, Path):
        return period_labels(source)
    return [str(s.period) for s in source]


def replay_digest(run: Run, rules: ReplayRules, periods: Sequence[str]) -> str:
    """A name for one replay and everything its rows depend on: the planner, its parameters, the
    budget, the replay rules (checked: :meth:`~albic.evaluation.replay.ReplayRules.checked`) and
    the periods. Two replays with the same digest give the same rows (solve seconds aside, for a
    deterministic planner)."""
    what = {
        "label": run.label,
        "budget_parameter": run.budget_parameter,
        "budget": None if math.isnan(run.budget) else run.budget,
        "reference": run.reference,
        "planner": f"{type(run.planner).__module__}.{type(run.planner).__qualname__}",
        "params": run.planner.get_params(),
        # The key "options" keeps the digests of stores already written valid, so --resume finds them.
        "options": {
            name: value if isinstance(value, (str, int, float, type(None))) else repr(value)
            for name, value in sorted((f.name, getattr(rules, f.name)) for f in dataclasses.fields(rules))
        },
        "periods": list(periods),
    }
    text = json.dumps(what, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:20]


def replay_run(
    snapshots: list[Snapshot], run: Run, rules: ReplayRules, show_progress: bool | None = None
) -> pd.DataFrame:
    """The rows of one replay of a comparison (:data:`COMPARE_COLUMNS`) under ``rules``."""
    name = run.label if math.isnan(run.budget) else f"{run.label} {run.budget_parameter}={run.budget:g}"
    if run.reference:
        rules = replace(rules, trigger="rescale")
    table = replay(
        snapshots, run.planner, rules=rules, label=run.label, show_progress=show_progress, progress_label=name
    )
    table.insert(1, "budget_parameter", run.budget_parameter)
    table.insert(2, "budget", run.budget)
    table.insert(3, "reference", run.reference)
    return table


def error_rows(run: Run, periods: Sequence[str], error: str, decided_on: str = "previous") -> pd.DataFrame:
    """The rows of a replay that could not run at all (e.g. its Spark task failed every attempt):
    status ``ERROR`` in every period, with ``error``, and no metrics (nor a steady period: ``steady``
    False, a column of booleans beside the other replays')."""
    rows = [
        {
            "planner": run.label,
            "budget_parameter": run.budget_parameter,
            "budget": run.budget,
            "reference": run.reference,
            "step": step,
            "period": period,
            "status": "ERROR",
            "decided_on": decided_on,
            "planned": False,
            "steady": False,
            "error": error,
            "fallback": "",
            "deterministic": False,
        }
        for step, period in enumerate(periods)
    ]
    table = pd.DataFrame(rows, columns=list(COMPARE_COLUMNS))
    # Counts stay whole numbers next to other replays' rows (missing, not NaN floats).
    return table.astype({column: "Int64" for column in _COUNT_COLUMNS})


_COUNT_COLUMNS = ("step", "nodes", "removing", "moves", "overloaded_nodes", "moves_dropped")


def local_runner(jobs: int = 1) -> Runner:
    """The replays in this process, one after the other (``jobs == 1``), or in ``jobs`` worker
    processes (:data:`Runner`)."""

    def run_all(source, todo, rules, show_progress) -> Iterator[tuple[int, pd.DataFrame]]:
        snapshots = list(read_snapshots(source)) if isinstance(source, Path) else source
        if jobs > 1 and len(todo) > 1:
            yield from _replay_in_processes(snapshots, todo, rules, jobs, show_progress)
        else:
            for i, run in todo:
                yield i, replay_run(snapshots, run, rules, show_progress)

    return run_all


def _replay_in_processes(
    snapshots,
    todo: Sequence[tuple[int, Run]],
    rules: ReplayRules,
    jobs: int,
    show_progress: bool | None,
) -> Iterator[tuple[int, pd.DataFrame]]:
    """The replays of ``todo`` in ``jobs`` worker processes (spawned, not forked: the caller may
    hold threads, e.g. Spark's gateway); one progress bar counts finished replays."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {pool.submit(replay_run, snapshots, run, rules, False): i for i, run in todo}
        for future in progress(
            as_completed(futures), f"replays ({jobs} at a time)", total=len(todo), enabled=show_progress
        ):
            yield futures[future], future.result()


#: The statuses of a period the planner was asked for and made no plan in, each counted in a
#: column of its own in the summary: it rejected the snapshot, failed, proved that no plan meets
#: its constraints, or ran out of time before any plan. The placement is kept.
NO_PLAN = {
    "UNSUPPORTED": "unsupported",
    "ERROR": "errors",
    **{status: status.lower() for status in NO_PLAN_STATUSES},
}


def failed(status: pd.Series) -> pd.Series:
    """Whether each row's status is one of a period with no plan made (:data:`NO_PLAN`)."""
    return status.isin(tuple(NO_PLAN))


def plans_made(rows: pd.DataFrame) -> int:
    """The periods of ``rows`` whose plan was made and applied: asked, none of :data:`NO_PLAN`
    (UNSUPPORTED, ERROR, INFEASIBLE, NO_SOLUTION), and not held by the ``gain`` trigger (HELD)."""
    asked = rows["planned"].fillna(False).astype(bool) if "planned" in rows else ~rows["status"].eq("SKIPPED")
    return int((asked & ~failed(rows["status"]) & rows["status"].ne("HELD")).sum())


def made_no_plan(rows: pd.DataFrame) -> bool:
    """Whether a replay's planner was asked for plans and made none (every asked period
    UNSUPPORTED, ERROR, INFEASIBLE or NO_SOLUTION): its rows are the placement it kept, not a
    result of its own. A replay whose trigger never asked is a result: keeping the placement was
    the rule's decision."""
    return bool(failed(rows["status"]).any()) and plans_made(rows) == 0


def no_plan_counts(rows: pd.DataFrame) -> str:
    """The periods of ``rows`` with no plan made, by status, for tables and legends ('' for none).

    >>> no_plan_counts(pd.DataFrame({"status": ["SKIPPED", "INFEASIBLE", "OPTIMAL", "INFEASIBLE"]}))
    'INFEASIBLE 2/4'
    """
    counts = rows["status"][failed(rows["status"])].value_counts()
    return ", ".join(f"{status} {n}/{len(rows)}" for status, n in counts.items())


def planner_label(planner: str, fell_back: int, periods: int) -> str:
    """How tables and figures name a planner: with the periods another planner planned for it, so
    that a fallback (mtm without a table: SSM's plans) never reads as its own result.

    >>> planner_label("mtm", 168, 168), planner_label("ssm", 0, 168)
    ('mtm (fell back 168/168)', 'ssm')
    """
    return f"{planner} (fell back {fell_back}/{periods})" if fell_back else str(planner)


def summarize(table: pd.DataFrame, *, block: int | None = None) -> pd.DataFrame:
    """Per planner (and budget): what the plans were decided on (``decided_on``), the mean and
    95th-percentile load distance (% of mean utilisation, after the plan, on each period's own
    statistics), beside them the hindsight figures (the same plans scored on the loads they were
    made from: the gap is what the planner lost by not knowing the future; equal to the first two
    under ``hindsight``), total moves, the share of state moved per period (mean over the periods,
    and the cumulative sum over them; ``state_moved_times``: the bytes moved in all over the mean
    state, how many times over the whole state moved), mean solve seconds, the periods with a plan made
    (``planned``, :func:`plans_made`), those asked for a plan that made none, each status in its
    own column (``unsupported``, ``errors``, ``infeasible``, ``no_solution``: :data:`NO_PLAN`), the
    mean key-group floor of the periods (``mean_floor_load_distance_pct``: what no placement goes
    below whatever the budget, so a mean load distance near it is not the budget's doing) and the
    periods whose load distance is at it (``at_floor_periods``: :func:`at_floor`), and what the
    plans cost the stream (:func:`_stream_summary`).

    The means are over every period, planned or not: a period not planned, or one with no plan
    made, keeps the placement it had, as it would in a running system (0 moves, the kept
    placement's balance); the columns above say how many periods carry a plan. A planner that was
    asked for plans and made none (:func:`made_no_plan`) has no load distance, state moved or
    stream figures (NaN), so that it cannot look like a result (its total moves are 0). ``held``
    counts the plans the ``gain`` trigger did not apply (they did not pay: status HELD).
    ``fell_back`` counts the periods whose plan another planner made
    (the replay's ``fallback``, e.g. mtm without a PMC table planned as SSM): those rows are not
    the planner's own result.

    Where the table has a reference (rows with ``reference`` True: :func:`compare`'s default),
    every other run gets its paired difference to it (:func:`_reference_summary`):
    ``vs_reference_pct``, the mean over the periods both scored of the run's load distance minus
    the reference's (points of % of the mean; negative is better), its 95 % confidence interval
    ``vs_reference_low`` .. ``vs_reference_high`` (moving-block bootstrap over periods, blocks of
    ``block`` periods, default ``round(n ** (1/3))``: :func:`albic.evaluation.verdict.paired_interval`),
    the periods compared, and those it did better and worse in.
    """
    if "budget" not in table:
        table = table.assign(budget_parameter="", budget=math.nan)
    if "decided_on" not in table:
        table = table.assign(decided_on="")
    if "reference" not in table:
        table = table.assign(reference=False)
    table = table.assign(_budget_key=table["budget"].fillna(-1.0))
    grouped = table.groupby(["planner", "_budget_key"], sort=False)
    kinds = grouped[[c for c in ("status", "planned") if c in table]]
    planned, result = kinds.apply(plans_made), ~kinds.apply(made_no_plan)
    hindsight = (
        grouped["hindsight_load_distance_pct"]
        if "hindsight_load_distance_pct" in table
        else grouped["load_distance_pct"]
    )
    summary = pd.DataFrame(
        {
            "decided_on": grouped["decided_on"].first(),
            "budget_parameter": grouped["budget_parameter"].first(),
            "budget": grouped["budget"].first(),
            "reference": grouped["reference"].first().astype(bool),
            "periods": grouped.size(),
            "planned": planned,
            "mean_load_distance_pct": grouped["load_distance_pct"].mean().where(result),
            "p95_load_distance_pct": grouped["load_distance_pct"].quantile(0.95).where(result),
            **_reference_summary(table, grouped, result, block),
            "hindsight_mean_load_distance_pct": hindsight.mean().where(result),
            "hindsight_p95_load_distance_pct": hindsight.quantile(0.95).where(result),
            **_floor_summary(table, grouped, result),
            "total_moves": grouped["moves"].sum(),
            "mean_migration_cost_pct": grouped["migration_cost_pct"].mean().where(result),
            "total_migration_cost_pct": grouped["migration_cost_pct"].sum().where(result),
            # Bytes moved over the state there is: a sum of percentages of different periods'
            # states is not a share of anything.
            "state_moved_times": (grouped["migration_cost"].sum() / grouped["total_state"].mean()).where(
                result
            ),
            "mean_solve_seconds": grouped["seconds"].mean(),
            **_stream_summary(table, grouped, result),
            **{
                column: grouped["status"].apply(lambda s, status=status: int((s == status).sum()))
                for status, column in NO_PLAN.items()
            },
            # Plans made that the gain trigger did not apply: they did not pay.
            "held": grouped["status"].apply(lambda s: int((s == "HELD").sum())),
            # Periods whose plan another planner made (replay's "fallback"): not this planner's result.
            "fell_back": grouped["fallback"].apply(lambda s: int((s.fillna("") != "").sum()))
            if "fallback" in table
            else 0,
        }
    )
    summary.index = summary.index.get_level_values("planner")
    summary.index.name = "planner"
    return summary[list(SUMMARY_COLUMNS)]


def _reference_summary(
    table: pd.DataFrame, grouped, result: pd.Series, block: int | None
) -> dict[str, pd.Series | float]:
    """Each run's paired difference to the reference's load distance, period by period, with its
    confidence interval (:func:`albic.evaluation.verdict.paired_interval`); NaN for the reference
    itself, for a run that made no plan, and for every run of a table without a reference."""
    marked = table["reference"].fillna(False).astype(bool)
    if not marked.any():
        return dict.fromkeys(_REFERENCE_SUMMARY, math.nan)
    reference = table[marked].drop_duplicates("period").set_index("period")["load_distance_pct"]

    def paired(rows: pd.DataFrame) -> pd.Series:
        if bool(rows["reference"].iloc[0]):
            return pd.Series(dict.fromkeys(_REFERENCE_SUMMARY, math.nan))
        diffs = rows["load_distance_pct"].to_numpy(dtype=float) - reference.reindex(rows["period"]).to_numpy(
            dtype=float
        )
        interval = paired_interval(diffs, block=None if block is None else min(block, max(1, len(diffs))))
        return pd.Series(
            {
                "vs_reference_pct": interval.mean,
                "vs_reference_low": interval.low,
                "vs_reference_high": interval.high,
                "compared_periods": interval.n,
                "better_periods": interval.better,
                "worse_periods": interval.worse,
            }
        )

    figures = grouped[["reference", "period", "load_distance_pct"]].apply(paired)
    return {name: figures[name].where(result) for name in _REFERENCE_SUMMARY}


def at_floor(rows: pd.DataFrame) -> pd.Series:
    """Whether each row's load distance is at its period's key-group floor (a floor there is):
    no plan, with any budget, does better there (:func:`albic.core.explain.key_group_floor`)."""
    floor = rows["floor_load_distance_pct"]
    return (floor > 0) & reaches_floor(rows["load_distance_pct"], floor)


def _floor_summary(table: pd.DataFrame, grouped, result: pd.Series) -> dict[str, pd.Series | float]:
    """The mean key-group floor over the periods (the least load distance any placement reaches,
    whatever the budget) and the periods whose plan reached it; NaN for a table without floors."""
    if "floor_load_distance_pct" not in table:
        return {"mean_floor_load_distance_pct": math.nan, "at_floor_periods": math.nan}
    reached = table.assign(_at_floor=at_floor(table)).groupby(["planner", "_budget_key"], sort=False)
    return {
        "mean_floor_load_distance_pct": grouped["floor_load_distance_pct"].mean(),
        "at_floor_periods": reached["_at_floor"].sum().where(result),
    }


def _stream_summary(table: pd.DataFrame, grouped, result: pd.Series) -> dict[str, pd.Series | float]:
    """What the plans cost the stream (albic.evaluation.stream), per planner and budget: tuples
    buffered in all, the longest catch-up, the steady periods (no node overloaded) and the
    overloaded ones, the median and p95 of the steady periods' p99 latency (in ms and in service
    times), and over the overloaded periods the longest drain of a backlog that drained and the
    periods whose backlog had not drained by the end; NaN where ``result`` is False (no plan made
    at all)."""
    if "buffered_tuples" not in table:
        return dict.fromkeys(_STREAM_SUMMARY, math.nan)
    steady = steady_rows(table)
    overloaded = pd.to_numeric(table["overloaded_nodes"], errors="coerce").fillna(0).to_numpy() > 0
    drain = _column(table, "drain_seconds")
    parts = table.assign(
        _steady=steady,
        _overloaded=overloaded,
        _p99_ms=_column(table, "p99_latency_ms").where(steady),
        _p99_times=_column(table, "p99_service_times").where(steady),
        _drain=drain.where(overloaded),
        _undrained=overloaded & drain.isna().to_numpy(),
    ).groupby(grouped.keys, sort=False)
    figures = {
        "total_buffered_tuples": grouped["buffered_tuples"].sum(),
        "max_catch_up_seconds": grouped["catch_up_seconds"].max(),
        "steady_periods": parts["_steady"].sum(),
        "overloaded_periods": parts["_overloaded"].sum(),
        "median_p99_latency_ms": parts["_p99_ms"].median(),
        "p95_p99_latency_ms": parts["_p99_ms"].quantile(0.95),
        "median_p99_service_times": parts["_p99_times"].median(),
        "p95_p99_service_times": parts["_p99_times"].quantile(0.95),
        "max_drain_seconds": parts["_drain"].max(),
        "undrained_periods": parts["_undrained"].sum(),
    }
    return {name: values.where(result) for name, values in figures.items()}


def steady_rows(table: pd.DataFrame) -> pd.Series:
    """Whether each row of a replay table is a steady period (no loaded node overloaded:
    :mod:`albic.evaluation.stream`); a row without the ``steady`` figure (a table kept before it
    existed) is steady when it has no overloaded node; a row without stream figures (an error) is
    not.

    >>> steady_rows(pd.DataFrame({"overloaded_nodes": [0, 2, None]})).tolist()
    [True, False, False]
    """
    overloaded = pd.to_numeric(table["overloaded_nodes"], errors="coerce")
    said = table["steady"] if "steady" in table else pd.Series(None, index=table.index, dtype=object)
    derived = (overloaded == 0).where(overloaded.notna(), False)
    return said.where(said.notna(), derived).astype(bool)


def _column(table: pd.DataFrame, name: str) -> pd.Series:
    """A float column of ``table``, NaN where the table lacks it."""
    if name not in table:
        return pd.Series(math.nan, index=table.index)
    return pd.to_numeric(table[name], errors="coerce").astype(float)
