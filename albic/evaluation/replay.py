"""Replay statistics periods through a planner, carrying the placement from period to period.

Statistics are placement-free (:func:`albic.io.read_snapshots`); :func:`replay` supplies the
placement. Period t runs on the placement the plan of period t-1 left (the first period on
``initial``: by default the engine's own split, Flink's for statistics made with Flink's hash,
else Storm's default split), with the nodes of period t.

**What a row measures** (design section 7b). The plan applied during period t is made from what
was known before t -- by default period t-1's statistics (``decide_on="previous"``), or a forecast
of period t from the periods before it (``"forecast:NAME"``) -- and scored on period t's own
statistics: the balance the cluster would have had. The first period has nothing known before it:
it keeps the initial placement and is scored, not planned (status ``SKIPPED``). ``"hindsight"``
plans each period from its own statistics, the oracle: it measures how well a planner fits the
past, and is labelled as such. A ``trigger`` decides whether a period is planned at all
(:mod:`albic.evaluation.decide`); a period not planned keeps the placement (``SKIPPED``). No
planner is ever handed a scored period's statistics unless ``hindsight`` is chosen.

**Node-count convention.** The nodes a period *wants* are its snapshot's nodes (``n1 .. n_count``
of the node-count series). The replayed snapshot holds those nodes, plus every node that is not
wanted but still holds key groups under the carried placement, marked ``removing=True`` (the
planner moves key groups off as its budget allows; a node that still holds some next period stays,
still removing). A wanted node that holds nothing is a new node. A node that is neither wanted nor
holding anything is gone. The decision snapshot has the same nodes (the node count is a decision
already taken, as an autoscaler takes it).

Each period gives one row: what it was decided on (``decided_on``) and whether the planner was
asked (``planned``); the balance before and after the plan on the period's statistics; the plan's
load distance on the loads it was decided on (``hindsight_load_distance_pct``: what a hindsight
table shows for it, so the gap to ``load_distance_pct`` is what the planner lost by not knowing
the future); the key-group floor of the period (``floor_load_distance_pct``: the load distance
no placement goes below, whatever the budget, set by its heaviest key group ``floor_key_group``;
0 and empty when no key group sets one: :func:`albic.core.explain.key_group_floor`); its moves and migration cost (on the state that moves: the decision snapshot's);
solve seconds, collocation factor and ALBIC's load index (``remote_cost`` per remote tuple,
relative to the period's load with every tuple local; :mod:`albic.core.metrics`). A planner that
rejects a snapshot (:class:`~albic.base.errors.UnsupportedSnapshotError`) gets status
``UNSUPPORTED``, one that fails otherwise ``ERROR``, and one that makes no plan the status it
returned (``INFEASIBLE`` or ``NO_SOLUTION``); ``error`` says why (the exception's message, or the
plan's :attr:`~albic.core.plan.Plan.no_plan_reason`, e.g. elasticutor's "4 cores for 384 key
groups: ..."). In each case the placement is kept and the replay goes on. ``deterministic`` says
whether a rerun gives the row again (solve seconds aside): false for a planner not tagged
deterministic, and for a plan a wall-clock limit cut (``plan.details["deterministic"]``, e.g.
``milp``'s ``wall_clock_limit``).

Example
-------
>>> from albic.core.model import Node, KeyGroup, Snapshot
>>> def period(name, nodes):
...     kgs = [KeyGroup(f"k{i}", "op", float(i + 1), 10.0, index=i) for i in range(4)]
...     return Snapshot([Node(n) for n in nodes], kgs, {f"k{i}": nodes[0] for i in range(4)},
...                     period=name)
>>> rows = replay([period("t0", ["n1", "n2"]), period("t1", ["n1"])], "flux")
>>> rows[["period", "status", "planned", "nodes", "removing", "moves"]].to_dict("records")
[{'period': 't0', 'status': 'SKIPPED', 'planned': False, 'nodes': 2, 'removing': 0, 'moves': 0}, {'period': 't1', 'status': 'FEASIBLE', 'planned': True, 'nodes': 1, 'removing': 1, 'moves': 2}]
>>> oracle = replay([period("t0", ["n1", "n2"]), period("t1", ["n1"])], "flux", decide_on="hindsight")
>>> oracle["moves"].tolist(), oracle["decided_on"].tolist()
([2, 2], ['hindsight', 'hindsight'])
"""

from __future__ import annotations

import math
import time
import traceback
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from dataclasses import fields as fields_of
from typing import Any

import numpy as np
import pandas as pd

from albic.base.errors import UnsupportedSnapshotError
from albic.base.progress import progress
from albic.core import metrics
from albic.core.explain import key_group_floor
from albic.core.model import NO_PLAN_STATUSES, Snapshot
from albic.core.payoff import Payoff, payoff
from albic.core.planner import Planner, get_planner
from albic.evaluation.decide import DecideOn, GainRule, KnownPeriods, Trigger, parse_decide_on, parse_trigger
from albic.evaluation.stream import STREAM_COLUMNS, StreamModel, StreamReplay
from albic.io.datasets import default_placement

__all__ = ["replay", "ReplayRules", "REPLAY_COLUMNS", "Initial", "DEFAULT_INITIAL", "carried_snapshot"]

Initial = str | Mapping[str, str] | Callable[[Snapshot], Mapping[str, str]] | None
#: The placement a replay starts from unless told: the statistics' own default placement.
DEFAULT_INITIAL = "default"


@dataclass(frozen=True)
class ReplayRules:
    """The rules a replay follows, the same for every planner of a comparison (see :func:`replay`
    for each): the placement before the first period (``initial``), what each plan is made from
    (``decide_on``), which periods are planned (``trigger``), the price of a remote tuple in the
    load index (``remote_cost``) and the model of what plans cost the stream (``stream``).

    :func:`replay` and :func:`albic.evaluation.compare.compare` take them as ``rules=`` or as
    keywords of these names (``decide_on="hindsight"``); keywords override ``rules``.

    >>> ReplayRules(decide_on="hindsight").trigger
    'always'
    """

    initial: Initial = DEFAULT_INITIAL
    decide_on: str | DecideOn = "previous"
    trigger: str | Trigger = "always"
    # The one default of the load index's remote cost: the command line and the paper's figures
    # read it here, so that a replay, a comparison and a figure price a remote tuple alike.
    remote_cost: float = 0.1
    stream: StreamModel | None = None

    @classmethod
    def of(cls, rules: ReplayRules | None, fields: Mapping[str, Any]) -> ReplayRules:
        """``rules`` (default the defaults) with ``fields`` (keywords of the rules' names) over
        them; a name that is not one of them is refused as a misspelt keyword is."""
        return replace(rules or cls(), **fields)

    def checked(self) -> ReplayRules:
        """These rules checked, in the form every replay of a comparison takes them: ``decide_on``
        and ``trigger`` in their canonical text (the same on every engine and in every replay's
        digest, and text pickles to any executor), the default stream model given.

        >>> ReplayRules(trigger=" threshold:5 ").checked().trigger
        'threshold:5'
        """
        return replace(
            self,
            decide_on=parse_decide_on(self.decide_on).spec,
            trigger=parse_trigger(self.trigger).spec,
            stream=self.stream or StreamModel(),
        )


def over_rules(rules: Any, fields: Mapping[str, Any]) -> Any:
    """``rules`` (a frozen record of rules with a ``replay``: :class:`ReplayRules` field) with
    ``fields`` over them: a name of the record's sets it, any other the replay rules'
    (:meth:`ReplayRules.of`, which refuses a name of neither)."""
    names = {f.name for f in fields_of(rules)}
    rules = replace(rules, **{name: value for name, value in fields.items() if name in names})
    replayed = {name: value for name, value in fields.items() if name not in names}
    return replace(rules, replay=ReplayRules.of(rules.replay, replayed))


#: The columns of a replay table, in order.
REPLAY_COLUMNS = (
    "planner",
    "step",
    "period",
    "partial",
    "status",
    "decided_on",
    "planned",
    "nodes",
    "removing",
    "load_distance_before",
    "load_distance_pct_before",
    "imbalance_before",
    "load_distance",
    "load_distance_pct",
    "hindsight_load_distance_pct",
    "floor_load_distance_pct",
    "floor_key_group",
    "imbalance",
    "skew",
    "moves",
    "migration_cost",
    "migration_cost_pct",
    "total_state",
    "seconds",
    "collocation_factor",
    "remote_traffic",
    "load_index",
    *STREAM_COLUMNS,
    "expected_gain_pct",
    "gain_noise_pct",
    "moves_dropped",
    "error",
    "fallback",
    "deterministic",
)


def _initial_placement(snapshot: Snapshot, initial: Initial) -> dict[str, str]:
    if initial is None:
        return dict(snapshot.assignment)
    if initial == DEFAULT_INITIAL:
        return default_placement(snapshot)
    if isinstance(initial, str):
        return dict(get_planner(initial).plan(snapshot).assignment)
    if callable(initial):
        return dict(initial(snapshot))
    return dict(initial)


def carried_snapshot(snapshot: Snapshot, placement: Mapping[str, str]) -> Snapshot:
    """``snapshot`` with ``placement`` and the nodes of the node-count convention (module doc).

    A key group that ``placement`` does not know (new this period) stays where ``snapshot`` puts it
    (:meth:`~albic.core.model.Snapshot.with_placement`).
    """
    return snapshot.with_placement(placement)


@dataclass
class _Outcome:
    """What became of one period: its status, whether the planner was asked, the placement that
    runs during the period (node indices), the plan's seconds, error and fallback, and whether a
    rerun gives the same (module docstring)."""

    status: str
    planned: bool
    after: np.ndarray
    seconds: float = 0.0
    error: str = ""
    fallback: str = ""
    deterministic: bool = True
    judged: Payoff | None = None

    @property
    def applied(self) -> bool:
        """Whether a plan of the planner's own runs during the period."""
        return self.planned and self.status not in NOT_APPLIED


#: The statuses of a period whose plan was asked for and not applied: the planner made none
#: (:data:`albic.core.model.NO_PLAN_STATUSES`, UNSUPPORTED, ERROR), or the ``gain`` trigger
#: held it (HELD: it did not pay).
NOT_APPLIED = ("HELD", "UNSUPPORTED", "ERROR", *NO_PLAN_STATUSES)


def _judged(outcome: _Outcome, decision: Snapshot, rule: GainRule, step: int) -> _Outcome:
    """``outcome`` under the ``gain`` trigger: its moves that pay, applied when they pay in all
    (:func:`albic.core.payoff.payoff`), else held (the placement kept, status ``HELD``)."""
    if not outcome.applied:
        return outcome
    judged = payoff(decision, outcome.after, z=rule.z, cost=rule.cost, margin=rule.margin, seed=step)
    if judged.pays:
        return replace(outcome, after=judged.node_of, judged=judged)
    return replace(outcome, status="HELD", after=decision.arrays().current, judged=judged)


def _skipped(snapshot: Snapshot) -> _Outcome:
    return _Outcome("SKIPPED", False, snapshot.arrays().current)


def _plan(planner: Planner, decision: Snapshot) -> _Outcome:
    """``planner``'s plan of the decision snapshot; a planner that rejects it or fails keeps the
    placement (recorded, not raised: one failing planner must not stop a comparison)."""
    kept = decision.arrays().current
    deterministic = bool(planner.tags().deterministic)
    started = time.perf_counter()
    try:
        plan = planner.plan(decision)
    except UnsupportedSnapshotError as err:
        return _Outcome("UNSUPPORTED", True, kept, time.perf_counter() - started, str(err), "", deterministic)
    except KeyboardInterrupt:
        raise
    except Exception as err:
        error = f"{type(err).__name__}: {err}"
        if not str(err):
            error += " " + traceback.format_exc(limit=1)
        return _Outcome("ERROR", True, kept, time.perf_counter() - started, error, "", deterministic)
    status = plan.status.value  # always a PlanStatus: Planner.plan() checks it
    # A plan another planner made (e.g. mtm without a table: SSM's) is reported as such.
    fallback = str(plan.details.get("fallback") or "")
    # A deterministic planner's plan that a wall-clock safety net cut says so in its details.
    deterministic = deterministic and bool(plan.details.get("deterministic", True))
    node_of = metrics.node_of(decision, plan.assignment)
    error = plan.no_plan_reason or ""
    return _Outcome(status, True, node_of, plan.seconds, error, fallback, deterministic)


def _row(
    scored: Snapshot, decision: Snapshot | None, state: Snapshot, after: np.ndarray, remote_cost: float
) -> dict[str, Any]:
    """The period's figures: balance on the scored period's statistics, the moves on ``state``
    (the decision snapshot's: the state that moves), and the plan's load distance on the loads it
    was decided on (``hindsight_load_distance_pct``)."""
    arrays = scored.arrays()
    before = arrays.current
    floor = key_group_floor(scored)
    return {
        "nodes": int(arrays.active.sum()),
        "removing": int(arrays.removing.sum()),
        "load_distance_before": metrics.load_distance(scored, before),
        "load_distance_pct_before": metrics.load_distance_pct(scored, before),
        "imbalance_before": metrics.imbalance(scored, before),
        "load_distance": metrics.load_distance(scored, after),
        "load_distance_pct": metrics.load_distance_pct(scored, after),
        "hindsight_load_distance_pct": math.nan
        if decision is None
        else metrics.load_distance_pct(decision, after),
        "floor_load_distance_pct": 0.0 if floor is None else floor["load_distance_pct"],
        "floor_key_group": "" if floor is None else floor["key_group"],
        "imbalance": metrics.imbalance(scored, after),
        "skew": metrics.skew(scored, after),
        "moves": metrics.moves(state, after),
        "migration_cost": metrics.migration_cost(state, after),
        "migration_cost_pct": metrics.migration_cost_pct(state, after),
        "total_state": float(state.arrays().state_sizes.sum()),
        "collocation_factor": metrics.collocation_factor(scored, after),
        "remote_traffic": metrics.remote_traffic(scored, after),
        "load_index": metrics.load_index(scored, after, remote_cost=remote_cost),
    }


def replay(
    snapshots: Iterable[Snapshot],
    planner: str | Planner,
    *,
    rules: ReplayRules | None = None,
    label: str | None = None,
    show_progress: bool | None = None,
    progress_label: str | None = None,
    **rule_fields: Any,
) -> pd.DataFrame:
    """Replay ``snapshots`` through ``planner``, the placement carried from period to period; one
    row per period (:data:`REPLAY_COLUMNS`).

    ``planner`` is a registered name (default parameters) or a :class:`~albic.core.planner.Planner`.
    The rules (:class:`ReplayRules`: ``rules=``, or keywords of their names, which override it):
    ``decide_on`` says what each period's plan is made from (``"previous"``, the default: period
    t-1's statistics; ``"forecast:NAME"``; ``"hindsight"``, the oracle) and ``trigger`` which
    periods are planned and which plans applied (``"always"``, ``"threshold:X[,cooldown:K]"``,
    ``"rescale"`` or ``"gain[:...]"``):
    :mod:`albic.evaluation.decide`. Every row is scored on its own period's statistics.
    ``initial`` is the placement before the first period: ``"default"`` (the default: the
    engine's own split the statistics were hashed for, Flink's for key groups made with Flink's
    hash, else Storm's default split; :func:`albic.io.datasets.default_placement`), a planner name
    (e.g. ``"storm_default"``, which reads no loads), a mapping ``{key group: node}``, a function
    of the first snapshot, or ``None`` for the first snapshot's own assignment. ``remote_cost`` is
    the price of a remote tuple in ALBIC's load index. ``stream`` is the model
    of what each period's placement and migration cost the stream (:mod:`albic.evaluation.stream`;
    default :class:`~albic.evaluation.stream.StreamModel` with its node rate derived from these
    periods). ``label`` names the planner in the table (default its ``name``), ``progress_label``
    its progress bar (default ``label``).
    """
    rules = ReplayRules.of(rules, rule_fields)
    if isinstance(planner, str):
        planner = get_planner(planner)
    rule, when = parse_decide_on(rules.decide_on), parse_trigger(rules.trigger)
    label = label or planner.name
    snapshots = list(snapshots) if not hasattr(snapshots, "__len__") else snapshots
    stream = StreamReplay((rules.stream or StreamModel()).calibrated(snapshots))
    known = KnownPeriods(rule)
    rows: list[dict[str, Any]] = []
    placement: dict[str, str] | None = None
    last_planned: int | None = None
    nodes_before: tuple[str, ...] | None = None
    for step, stats in enumerate(
        progress(snapshots, f"replay {progress_label or label}", enabled=show_progress)
    ):
        if placement is None:
            placement = _initial_placement(stats, rules.initial)
        scored = carried_snapshot(stats, placement).validate()
        decision = _decision(rule, known.snapshot(stats), scored, placement)
        known.add(stats)
        wanted = _wanted_nodes(stats)
        if decision is None:
            outcome = _skipped(scored)
        else:
            known_distance = metrics.load_distance_pct(decision, decision.arrays().current)
            since = None if last_planned is None else step - last_planned
            rescaled = nodes_before is not None and wanted != nodes_before
            fires = when.fires(known_distance, since, rescaled)
            outcome = _plan(planner, decision) if fires else _skipped(scored)
            if when.gain is not None:
                outcome = _judged(outcome, decision, when.gain, step)
        nodes_before = wanted
        if outcome.planned and (when.gain is None or outcome.applied):
            last_planned = step
        placement = scored.arrays().assignment(outcome.after)
        row = {
            "planner": label,
            "step": step,
            "period": scored.period,
            "partial": scored.partial,
            "status": outcome.status,
            "decided_on": rule.spec,
            "planned": outcome.planned,
        }
        state = decision if decision is not None else scored
        row.update(_row(scored, decision, state, outcome.after, rules.remote_cost))
        row.update(stream.period(scored, state, outcome.after))
        judged = outcome.judged
        row.update(
            seconds=outcome.seconds,
            expected_gain_pct=math.nan if judged is None else judged.gain_pct,
            gain_noise_pct=math.nan if judged is None else judged.noise_pct,
            moves_dropped=0 if judged is None else judged.moves_dropped,
            error=outcome.error,
            fallback=outcome.fallback,
            deterministic=outcome.deterministic,
        )
        rows.append(row)
    for row, drain in zip(rows, stream.drain_seconds()):
        row["drain_seconds"] = drain
    return pd.DataFrame(rows, columns=list(REPLAY_COLUMNS))


def _wanted_nodes(stats: Snapshot) -> tuple[str, ...]:
    """The nodes a period wants: its statistics' active nodes."""
    return tuple(node.id for node in stats.active_nodes)


def _decision(
    rule: DecideOn, known: Snapshot | None, scored: Snapshot, placement: Mapping[str, str]
) -> Snapshot | None:
    """The snapshot the plan is made from: what is ``known`` of the period with the carried
    placement (under ``hindsight`` the period's own statistics: the scored snapshot itself)."""
    if known is None:
        return None
    if rule.hindsight:
        return scored
    return carried_snapshot(known, placement).validate()
