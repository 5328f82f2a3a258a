"""The ALBIC paper's experiments (Madsen, Zhou, Cao 2016, section 5) as functions returning tidy
tables: what notebook 05 ("ALBIC against Flux and COLA") plots and its test asserts.

- :func:`equal_budgets` -- Figures 2-4: ``milp`` against Flux at equal migration budgets on the
  paper's generator (albic.evaluation.synthetic, section 5.1).
- :func:`equal_budgets_on_statistics` -- the same comparison replayed over the periods of real
  statistics (the output of ``albic stats``, read with albic.io.read_snapshots).
- :func:`scale_in` -- Figure 5: scale-in integrated with load balancing (``milp`` with nodes marked
  removing) against a non-integrated approach that first drains the removing nodes evenly and
  balances only with what budget is left.
- :func:`collocation_race` -- Figures 10-13: repeated ``albic`` calls at a small budget against
  COLA re-optimising every period, on the generator's one-to-one communication instance: collocation
  factor, load distance, load index and migrations per period.

Readings of the paper chosen here (its experiments ran on Storm; these are planner-level
simulations):

- A period is one planner call; between periods the loads change as section 5.3 says (20% of the
  nodes' key groups scaled by a factor in [-2%, 2%], albic.evaluation.synthetic.perturb). In the race both
  planners see the same loads: the perturbation picks nodes of the *initial* placement.
- What a period's figures measure (albic.evaluation.decide). Over statistics,
  :func:`equal_budgets_on_statistics` replays with ``decide_on`` (by default ``"previous"``: each
  period's plan is made from the period before it and scored on its own statistics; ``"hindsight"``
  is the oracle). In :func:`scale_in` and :func:`collocation_race` the nodes never change, so the
  plan of call t, made from period t's loads, is at once the oracle's plan of period t and the
  forward plan of period t+1: one run gives both scorings. ``load_distance_pct`` (and the race's
  ``load_index``, the scale-in's ``removing_load``) score it on the loads of the next period, the
  one it runs in (the loads change after the call: the next perturbation); the ``hindsight_``
  columns on the loads it was made from, as the paper's figures do.
- :func:`equal_budgets` plans one snapshot once: there is no next period, and its figure is the
  plan's fit to the loads it was made from.
- Load index = effective load (load plus ``remote_cost`` per remote tuple, albic.core.metrics.load_index)
  over that of the first period; the planners balance the measured loads only.
- "Overloaded (100% loaded)" in Figure 5 is a node at twice the generator's 50% node load.

Example
-------
>>> table = equal_budgets(sizes=[(4, 16, 2)], varies=[0.4], budgets=[2], time_limit=0.1)
>>> sorted(table["planner"]), bool((table["load_distance_pct"] >= 0).all())
(['flux', 'milp'], True)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

from albic.base.progress import progress
from albic.core import metrics
from albic.core.model import KeyGroup, Node, Snapshot
from albic.core.planner import get_planner
from albic.evaluation.replay import ReplayRules, replay
from albic.evaluation.synthetic import perturb, synthetic_snapshot

# The race's load index counts each remote tuple as this much load: the replay's default cost.
RACE_REMOTE_COST = ReplayRules.remote_cost
# Both planners of the race, neither with extra parameters.
RACE_PLANNERS: Mapping[str, Mapping[str, Any]] = MappingProxyType({"albic": {}, "cola": {}})

__all__ = ["equal_budgets", "equal_budgets_on_statistics", "scale_in", "collocation_race"]


def equal_budgets(
    sizes: Sequence[tuple[int, int, int]] = ((20, 400, 10), (40, 800, 20), (60, 1200, 30)),
    varies: Sequence[float] = (0.2, 0.4),
    budgets: Sequence[int] = (10, 20, 30, 40),
    *,
    time_limit: float = 0.5,
    seed: int = 0,
    show_progress: bool | None = None,
) -> pd.DataFrame:
    """Figures 2-4: one row per (size, varies, budget, planner) with the load distance reached."""
    rows = []
    cases = [(s, v, b) for s in sizes for v in varies for b in budgets]
    for (n, k, ops), v, b in progress(cases, "equal budgets", enabled=show_progress):
        snap = synthetic_snapshot(n, k, ops, varies=v, seed=seed)
        for planner in (
            get_planner("flux", max_moves=b),
            get_planner("milp", max_moves=b, time_limit=time_limit, seed=seed),
        ):
            plan = planner.plan(snap)
            rows.append(
                {
                    "nodes": n,
                    "key_groups": k,
                    "varies": v,
                    "budget": b,
                    "planner": planner.name,
                    "load_distance_pct_before": plan.metrics["load_distance_pct_before"],
                    "load_distance_pct": plan.metrics["load_distance_pct"],
                    "moves": plan.metrics["moves"],
                    "seconds": plan.seconds,
                }
            )
    return pd.DataFrame(rows)


def equal_budgets_on_statistics(
    snapshots: Iterable[Snapshot],
    budgets: Sequence[int] = (2, 4, 8),
    *,
    time_limit: float = 0.5,
    decide_on: str = "previous",
    show_progress: bool | None = None,
) -> pd.DataFrame:
    """Flux and ``milp`` replayed over real statistics at each budget (albic.evaluation.replay.replay, each
    from the first period's own placement): one row per (budget, planner, period).

    ``decide_on`` is the replay's (albic.evaluation.decide): ``"previous"`` (the default) plans each
    period from the one before it and scores the plan on the period's own statistics (the first
    period is scored, not planned); ``"hindsight"``, the oracle, plans each period from its own.

    >>> from albic.core.model import KeyGroup, Node, Snapshot
    >>> def period(name, loads):
    ...     kgs = [KeyGroup(f"k{i}", "op", load, 1.0) for i, load in enumerate(loads)]
    ...     return Snapshot([Node("n1"), Node("n2")], kgs, {"k0": "n1", "k1": "n1"}, period=name)
    >>> periods = [period("t0", [2.0, 1.0]), period("t1", [2.0, 1.0])]
    >>> table = equal_budgets_on_statistics(periods, [1], time_limit=0.1)
    >>> table[["planner", "period", "decided_on", "planned", "moves"]].to_dict("records")[:2]
    [{'planner': 'flux', 'period': 't0', 'decided_on': 'previous', 'planned': False, 'moves': 0}, {'planner': 'flux', 'period': 't1', 'decided_on': 'previous', 'planned': True, 'moves': 1}]
    >>> oracle = equal_budgets_on_statistics(periods, [1], time_limit=0.1, decide_on="hindsight")
    >>> oracle.groupby("planner")["planned"].sum().to_dict()
    {'flux': 2, 'milp': 2}
    """

    snapshots = list(snapshots)
    frames = []
    for b in budgets:
        for planner in (
            get_planner("flux", max_moves=b),
            get_planner("milp", max_moves=b, time_limit=time_limit),
        ):
            table = replay(snapshots, planner, initial=None, decide_on=decide_on, show_progress=show_progress)
            frames.append(table.assign(budget=b, planner=planner.name))
    return pd.concat(frames, ignore_index=True)


# -- Figure 5 -------------------------------------------------------------------------------------


def _scale_in_instance(size: tuple[int, int, int], removing: int, overloaded: int, seed: int) -> Snapshot:
    """The generator's instance with the first ``removing`` nodes marked for removal and the
    ``overloaded`` next ones at twice their load (100% of a node when the mean is 50%)."""
    snap = synthetic_snapshot(*size, varies=0.0, seed=seed)
    ids = [n.id for n in snap.nodes]
    hot = set(ids[removing : removing + overloaded])
    key_groups = [
        KeyGroup(
            kg.id,
            kg.operator,
            kg.load * (2.0 if snap.assignment[kg.id] in hot else 1.0),
            kg.state_size,
            kg.index,
        )
        for kg in snap.key_groups
    ]
    nodes = [Node(n.id, removing=i < removing) for i, n in enumerate(snap.nodes)]
    return Snapshot(nodes, key_groups, dict(snap.assignment), snap.traffic, period=0)


def _drain_evenly(snapshot: Snapshot, budget: int) -> tuple[dict[str, str], int]:
    """The non-integrated scale-in step: up to ``budget`` key groups leave the removing nodes, each
    onto the active node of lowest utilisation at that moment (heaviest key group first)."""
    arrays = snapshot.arrays()
    where = np.asarray(arrays.current).copy()
    on_removing = np.flatnonzero(arrays.removing[where])
    order = on_removing[np.argsort(-arrays.loads[on_removing], kind="stable")][:budget]
    active = np.flatnonzero(arrays.active)
    fill = np.bincount(where, weights=arrays.loads, minlength=len(arrays.node_ids))
    for k in order.tolist():
        j = int(active[np.argmin(fill[active] / arrays.capacities[active])])
        fill[where[k]] -= arrays.loads[k]
        fill[j] += arrays.loads[k]
        where[k] = j
    return arrays.assignment(where), int(order.size)


def scale_in(
    *,
    size: tuple[int, int, int] = (60, 1200, 30),
    removing: int = 10,
    overloaded: Sequence[int] = (1, 5),
    budget: int = 20,
    periods: int = 20,
    time_limit: float = 0.25,
    seed: int = 0,
    show_progress: bool | None = None,
) -> pd.DataFrame:
    """Figure 5 on an instance of ``size`` (nodes, key groups, operators), the first ``removing``
    nodes marked for removal: one row per (overloaded, approach, period) -- ``integrated`` (``milp`` with the
    nodes marked removing) and ``non_integrated`` (:func:`_drain_evenly` first, ``milp`` on what is
    left of the budget once the removing nodes are empty) -- with the active nodes' load distance
    and the load and key groups still on removing nodes after the period's plan. ``status`` is the
    MILP's plan status (no plan made: INFEASIBLE or NO_SOLUTION, the placement kept), or ``DRAIN``
    for a non-integrated period of draining alone (the MILP not asked).

    Period t's plan is made from period t's loads; ``load_distance_pct`` and ``removing_load``
    score it on period t+1's, the loads it runs under, and ``hindsight_load_distance_pct`` on
    period t's (module docstring)."""
    rows = []
    milp = get_planner("milp", time_limit=time_limit, seed=seed)
    cases = [(o, a) for o in overloaded for a in ("integrated", "non_integrated")]
    for hot, approach in progress(cases, "scale-in", enabled=show_progress):
        snap = _scale_in_instance(size, removing, hot, seed)
        snap = perturb(snap, seed=seed * 7919 + 1)
        for period in range(1, periods + 1):
            if approach == "integrated":
                plan = milp.clone(max_moves=budget).plan(snap)
                assignment, status = plan.assignment, str(plan.status)
            else:
                assignment, used = _drain_evenly(snap, budget)
                status = "DRAIN"  # the drain rule's moves only: the MILP was not asked
                drained = snap.with_assignment(assignment)
                if used < budget and not drained.arrays().removing[drained.arrays().current].any():
                    plan = milp.clone(max_moves=budget - used).plan(drained)
                    assignment, status = plan.assignment, str(plan.status)
            moves = metrics.moves(snap, assignment)
            made_from = snap.with_assignment(assignment)
            # The next period's loads depend on the placement (perturb picks nodes of it).
            snap = perturb(made_from, seed=seed * 7919 + period + 1)
            where = snap.arrays().current
            rows.append(
                {
                    "overloaded": hot,
                    "approach": approach,
                    "period": period,
                    "status": status,
                    "moves": moves,
                    "load_distance_pct": metrics.load_distance_pct(snap),
                    "hindsight_load_distance_pct": metrics.load_distance_pct(made_from),
                    "removing_load": metrics.removing_load(snap),
                    "key_groups_on_removing": int(snap.arrays().removing[where].sum()),
                }
            )
    return pd.DataFrame(rows)


# -- Figures 10-13 --------------------------------------------------------------------------------


class _RaceScore:
    """The race's figures of one placement: collocation (all traffic, the one-to-one pairs' and the
    rest's), load distance and load index (relative to the starting placement's)."""

    def __init__(self, base: Snapshot, remote_cost: float) -> None:
        self.remote_cost = remote_cost
        self.reference = metrics.effective_load(base, remote_cost=remote_cost)
        # The one-to-one pairs' edges (the generator's pair_rate, the heaviest) and the rest.
        self.traffic = base.arrays().traffic.tocoo()
        traffic = self.traffic
        self.heavy = traffic.data >= traffic.data.max() if traffic.nnz else np.zeros(0, dtype=bool)

    def local_share(self, snap: Snapshot, edges: np.ndarray) -> float:
        traffic = self.traffic
        where = snap.arrays().current
        rates = traffic.data[edges]
        local = where[traffic.row[edges]] == where[traffic.col[edges]]
        return float(rates[local].sum() / rates.sum()) if rates.sum() > 0 else 0.0

    def row(
        self, name: str, call: int, made_from: Snapshot, runs_in: Snapshot, moves: int, fresh: int | None
    ) -> dict[str, Any]:
        traffic, heavy, remote_cost = self.traffic, self.heavy, self.remote_cost
        return {
            "planner": name,
            "call": call,
            "moves": moves,
            "fresh_moves": fresh,
            "collocation_factor": metrics.collocation_factor(made_from),
            "pairs_collocated": self.local_share(made_from, heavy),
            "rest_collocated": self.local_share(made_from, ~heavy),
            "pair_traffic_share": float(traffic.data[heavy].sum() / traffic.data.sum())
            if traffic.nnz
            else 0.0,
            "load_distance_pct": metrics.load_distance_pct(runs_in),
            "hindsight_load_distance_pct": metrics.load_distance_pct(made_from),
            "load_index": metrics.effective_load(runs_in, remote_cost=remote_cost) / self.reference,
            "hindsight_load_index": metrics.effective_load(made_from, remote_cost=remote_cost)
            / self.reference,
        }


def _race_planners(
    planners: Mapping[str, Mapping[str, Any]], max_moves: int, time_limit: float, seed: int
) -> dict[str, Any]:
    """``albic`` at the budget and ``cola`` with its defaults, each with its extra parameters in
    ``planners``, those of the two that ``planners`` names."""
    unknown = sorted(set(planners) - {"albic", "cola"})
    if unknown or not planners:
        raise ValueError(f"the race's planners are 'albic' and 'cola', got {sorted(planners)}")
    made = {}
    if "albic" in planners:
        made["albic"] = get_planner(
            "albic", max_moves=max_moves, time_limit=time_limit, seed=seed, **planners["albic"]
        )
    if "cola" in planners:
        made["cola"] = get_planner("cola", seed=seed, **planners["cola"])
    return made


def collocation_race(
    *,
    size: tuple[int, int, int] = (20, 400, 10),
    one_to_one: float = 0.5,
    calls: int = 100,
    max_moves: int = 10,
    time_limit: float = 0.25,
    seed: int = 0,
    planners: Mapping[str, Mapping[str, Any]] = RACE_PLANNERS,
    show_progress: bool | None = None,
) -> pd.DataFrame:
    """Figures 10-13 on an instance of ``size`` (nodes, key groups, operators) with ``one_to_one``
    of its key groups paired: ``albic`` at ``max_moves`` per call against ``cola`` (default
    parameters, re-run every period) from the same random placement, over ``calls`` periods of
    section 5.3's load changes; ``planners`` maps each of the two that runs to its extra
    parameters (``{"albic": {"swap_share": 0.0}}``: albic alone, Algorithm 2 as written). One row per (planner, call) with the collocation factor, the load distance, the
    load index and the moves of that period, and the share of the one-to-one pairs' traffic
    (``pairs_collocated``) and of the rest (``rest_collocated``) that is node-local, with
    ``pair_traffic_share`` the pairs' share of all traffic; call 0 is the starting placement. COLA's rows also give
    ``fresh_moves``, the moves of the fresh plan it computed (applied or not); they do not depend on
    albic's parameters. ``status`` is the plan's
    (INFEASIBLE or NO_SOLUTION: no plan made, the placement kept; ``SKIPPED`` at call 0).

    Call t's plan is made from period t's loads: ``load_distance_pct`` and ``load_index`` score it
    on period t+1's, the loads it runs under, ``hindsight_load_distance_pct`` and
    ``hindsight_load_index`` on period t's (module docstring); the traffic, and so the collocation
    figures, never change."""
    base = synthetic_snapshot(*size, one_to_one=one_to_one, seed=seed)
    score = _RaceScore(base, RACE_REMOTE_COST)
    planners = _race_planners(planners, max_moves, time_limit, seed)
    placement = {name: dict(base.assignment) for name in planners}
    # Perturbed on the nodes of the initial placement (base's), every planner gets the same loads.
    current, upcoming = base, perturb(base, seed=seed * 7919 + 1)
    rows = [{**score.row(name, 0, current, upcoming, 0, None), "status": "SKIPPED"} for name in planners]
    for call in progress(range(1, calls + 1), "collocation race", enabled=show_progress):
        current, upcoming = upcoming, perturb(upcoming, seed=seed * 7919 + call + 1)
        for name, planner in planners.items():
            snap = current.with_assignment(placement[name])
            plan = planner.plan(snap)
            placement[name] = dict(plan.assignment)
            made_from, runs_in = (
                snap.with_assignment(plan.assignment),
                upcoming.with_assignment(plan.assignment),
            )
            row = score.row(name, call, made_from, runs_in, len(plan.moves), plan.details.get("fresh_moves"))
            rows.append({**row, "status": str(plan.status)})
    return pd.DataFrame(rows)
