"""ALBIC (Autonomic Load Balancing with Integrated Collocation): the MILP of section 4.3.1
(:class:`MilpPlanner`, registry name ``milp``) and Algorithm 2 of section 4.3.2 on top of it
(:class:`AlbicPlanner`, registry name ``albic``), from ``shared/papers/albic.txt``.

The model, its lexicographic objective (``max_deviation``, ``load_on_removing``,
``key_groups_on_removing``, ``one_sided_deviations``, ``state_moved``: the named levels of
``plan.details["objective_levels"]``) and the solving strategy (exact two-phase solve on small instances,
a large-neighbourhood search warm-started from the current placement and Flux's plan on large
ones) are described in :mod:`albic.planners.milp_items`. Readings of the paper chosen here:

- Load is utilisation ``load / capacity`` (the paper's heterogeneity extension multiplies the key
  group loads by a capacity weight); the mean is total load over the active capacity, without the
  paper's ``ceil()`` (that is for its integer percent loads).
- Scale-in, as the paper writes it: the upper load bound (3) applies to every node, removing
  ones included, the lower bound (4) only to active ones, and nothing moves onto a removing node.
  Load left on a removing node therefore counts in ``d`` like an overload, and among plans of
  equal ``d`` the one leaving the least *load* there wins (the paper's ``sum_{n in B} load_n``),
  then the fewest key groups. So under a tight budget the heaviest key groups leave first (a
  removing node holding loads 1, 1, 1, 6 next to three empty nodes sheds the 6 at
  ``max_moves=1``), with enough budget every key group leaves, and with a small one they leave
  over successive periods. Draining can raise the active nodes' load distance
  (``metrics["load_distance"]``); where no node is removing a plan is never worse than the
  current placement. A removing node still holding key groups after the plan is listed in
  ``details["removing_nodes_holding"]`` (``{node: {"load": ..., "key_groups": ...}}``) and named
  by ``plan.summary()``: an OPTIMAL plan is then optimal within the budget, not done draining.
- ``resource_caps`` (``{resource: cap}``) bounds, on every active node, the sum of the key
  groups' ``resources[resource]`` by ``cap * capacity`` (the multi-dimensional extension).

Measured with ``python -m benchmarks milp --full`` (``benchmarks/milp_vs_flux.py``; 2 cores shared
with other engineers' jobs, load average 5-6, so wall times are noisy): on the paper's generator,
3 sizes x varies 20%/40% x budgets 10/20/40 moves, ``milp`` with 1 s was never worse than Flux
(18/18; equal on the three instances where 10 moves cannot fix every shifted node, e.g. 12.9% at
60/1200 with varies 40%, which design section 9 also found for every solver), and with 5 s at
budgets 20 and 40 it reached on average 0.30 x Flux's load distance (0.003-0.85 x). Almost all of
that comes from the warm starts plus the local-search polish (``planners/local_search.py``), which
is why 1 s and 5 s give the same plans on 17 of 18 instances; the CP-SAT neighbourhood search
rarely adds to it on these instances (0.025% -> 0.005% at 20/400, varies 40%, budget 40), because
the deviation left is spread over many nodes that a few moves cannot all reach. Exact solving
(small instances, status OPTIMAL) is where the MILP itself decides.

Algorithm 2 (:class:`AlbicPlanner`), as built
---------------------------------------------
Balance first (the paper's order). The plain MILP at the same budget is solved first, the
*witness* of the balance the budget allows: ``milp``'s own search with ``milp``'s work, or, where
Flux's plan at the budget is beyond maxLD (balance is hard), one search with all of albic's work,
its ties of balance broken by the remote traffic (:data:`albic.planners.milp_items.REMOTE_LEVELS`), and
no attempts. A witness beyond maxLD goes on searching with the work left, and there are no attempts
either. Otherwise:

- Step 2 merges the collocated pairs into sets (union-find) and splits each set by METIS into
  ``max(p1, p2)`` parts -- ``p1 = ceil(cost / max_migration_cost)`` (``ceil(size / max_moves)``
  for a budget of moves; 1 without one), ``p2 = ceil(load / maxPL)`` -- weighting vertices by
  migration cost when ``Pmc / maxMigrCost > PL / maxPL``, else by load; a part still over a limit
  is split again. Each part moves as a unit.
- Step 3 pins the not-yet-collocated pair of most traffic by the paper's three cases (to the less
  utilised of the two nodes in cases 1 and 3, whole partitions moving along in case 3; to the node
  of the member inside a partition in case 2); among equally heavy pairs (the paper: a random one)
  the pin making the most traffic node-local, then the one moving the least load, then a seeded
  random one; pins that make no traffic local, land on a removing node or cannot reach their node
  within the budget are skipped. Then, with ``swap_share`` of the budget the pins leave, key
  groups outside the pinned units move, alone or swapped with one of about the same load, onto
  nodes holding more of their partners' traffic (:func:`albic.planners.collocation.collocating_swaps`),
  no node going further from the mean than the current placement's largest deviation, and none
  while that is beyond maxLD; each is pinned where it went. Why: one scored pair per call leaves
  traffic spread over many light pairs collocated only by chance.
- Step 4 solves the units with the MILP; a plan beyond the bound (the witness's load distance plus
  the slack its collocation earns, ``collocation_slack``/``slack_gain``, none in a period that
  starts beyond maxLD), draining removing nodes
  less than the witness, or infeasible is retried -- with half the pins while more than one is
  pinned, then with ``maxPL - stepPL`` -- until ``maxPL <= 0`` or the work is spent; each attempt
  gets half the work left, the last all of it.

The plan is the one with the most collocation of the attempt that kept the bound and the witness
with its moves undone that only separate communicating key groups, within the bound
(:func:`albic.planners.collocation.undo_separations`: the MILP ignores traffic and would undo in one call
what earlier calls collocated); at equal collocation the lower load distance, then the less state
moved. So ``albic`` stays within its bound whenever the plain MILP does, and moves more state than
``milp`` only for collocation it gains or keeps.

Example: both {a} / {b, c} and {b, c} / {a} are perfectly balanced; moving a alone is one move
----------------------------------------------------------------------------------------------
>>> from albic.core.model import Node, KeyGroup, Snapshot
>>> snap = Snapshot([Node("n1"), Node("n2")],
...                 [KeyGroup("a", "op", 3.0), KeyGroup("b", "op", 2.0), KeyGroup("c", "op", 1.0)],
...                 {"a": "n1", "b": "n1", "c": "n1"})
>>> plan = MilpPlanner().plan(snap)
>>> plan.status.value, sorted(plan.assignment.items()), plan.objective
('OPTIMAL', [('a', 'n2'), ('b', 'n1'), ('c', 'n1')], 0.0)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from albic.base.errors import InvalidParameterError
from albic.core import metrics
from albic.core.model import Snapshot
from albic.core.plan import Plan
from albic.core.planner import (
    Planner,
    PlannerTags,
    plan_started,
    planner_name,
)
from albic.planners.albic_units import albic_units
from albic.planners.collocation import (
    collocating_swaps,
    collocation_pairs,
    heaviest_pairs,
    largest_deviation,
    split_sets,
    undo_separations,
)
from albic.planners.flux import flux_placement
from albic.planners.milp_items import OBJECTIVE_LEVELS, Items, Outcome, better
from albic.planners.milp_parameters import (
    Budgets,
    CollocationSettings,
    SolverSettings,
    keyword_init,
    rules_of,
    values_of,
)
from albic.planners.milp_results import (
    active_load_distance_pct,
    item_homes,
    no_plan_reason,
    node_of_outcome,
    planned_result,
)
from albic.planners.milp_search import (
    FULL_MODEL_VARIABLES,
    SolveSettings,
    import_backend,
    solve_items,
)
from albic.planners.racks import node_racks
from albic.planners.work import (
    ATTEMPT_WORK_PER_KEY_GROUP,
    FINISH_SECONDS_PER_KEY_GROUP,
    TIME_LIMIT_FACTOR,
    TIME_LIMIT_SLACK,
    Budget,
)
from albic.solvers.balance_bound import load_distance_bound
from albic.solvers.milp import check_backend, is_pulp

__all__ = ["MilpPlanner", "AlbicPlanner"]

# The most maxPL steps AlbicPlanner takes (max_partition_load / step_partition_load).
_MAX_ATTEMPTS = 100


class _MilpBase(Planner):
    """What MilpPlanner and AlbicPlanner share: the items model and the solve."""

    def validate_parameters(self) -> None:
        super().validate_parameters()
        if is_pulp(self.backend):  # a PuLP solver: known to PuLP and found here, before any solving
            try:
                check_backend(self.backend)
            except ValueError as err:
                raise InvalidParameterError(
                    f"The 'backend' parameter of planner {planner_name(type(self))!r}: {err}"
                ) from None

    def _settings(self, bound: float | None = None) -> SolveSettings:
        """The search's settings; its budget is given apart (:func:`solve_items`). The whole
        model's cap is the module's constant, read here, when a plan starts (not a parameter:
        it bounds memory, not quality)."""
        return SolveSettings(
            **values_of(self, SolverSettings), bound=bound, full_model_variables=FULL_MODEL_VARIABLES
        )

    def _items(self, snapshot: Snapshot, members: list[np.ndarray], allowed, traffic=None) -> Items:
        arrays = snapshot.arrays()
        resources = caps = None
        if self.resource_caps:
            names = sorted(self.resource_caps)
            resources = np.array(
                [[kg.resources.get(r, 0.0) for r in names] for kg in snapshot.key_groups], dtype=float
            ).reshape(len(snapshot.key_groups), len(names))
            caps = arrays.capacities[:, None] * np.array([self.resource_caps[r] for r in names])[None, :]
        return Items(
            members=members,
            loads=np.asarray(arrays.loads, dtype=float),
            state_sizes=np.asarray(arrays.state_sizes, dtype=float),
            current=np.asarray(arrays.current),
            capacities=np.asarray(arrays.capacities, dtype=float),
            removing=np.asarray(arrays.removing),
            allowed=allowed,
            max_moves=self.max_moves,
            max_cost=self.max_migration_cost,
            resources=resources,
            resource_caps=caps,
            resource_caps_names=sorted(self.resource_caps) if self.resource_caps else [],
            spread=np.asarray(arrays.spread) if (arrays.spread >= 0).any() else None,
            racks=node_racks(snapshot),
            traffic=traffic,
        )

    def singleton_items(self, snapshot: Snapshot, traffic: bool = False) -> Items:
        """The items model with one item per key group (the plain MILP's; benchmarks solve it too);
        with ``traffic``, the remote traffic breaks ties of balance (ALBIC's witness where balance
        is hard)."""
        arrays = snapshot.arrays()
        n_kg = len(arrays.key_group_ids)
        sym = arrays.traffic + arrays.traffic.T if traffic and arrays.traffic.nnz else None
        return self._items(snapshot, list(np.arange(n_kg).reshape(n_kg, 1)), None, traffic=sym)

    def _flux_start(self, snapshot: Snapshot) -> np.ndarray | None:
        return self._flux_placement(snapshot) if self.warm_start else None

    def _flux_placement(self, snapshot: Snapshot) -> np.ndarray | None:
        # Flux's placement, not its plan(): the result is only a start (or ALBIC's test of a hard
        # period), which solve_items evaluates (budgets included) before using it, so
        # Planner.plan()'s derivations and checks would only cost time (seconds at 100,000 key
        # groups).
        node_of, _ = flux_placement(snapshot, self.max_moves, self.max_migration_cost)
        return None if node_of is None else np.asarray(node_of, dtype=np.int64)

    def _bound(self, snapshot: Snapshot) -> float:
        """The counting lower bound on the load distance within the budgets (key-group level, so
        it holds for every attempt of ALBIC too)."""

        arrays = snapshot.arrays()
        return load_distance_bound(
            arrays.loads,
            arrays.current,
            arrays.capacities,
            arrays.removing,
            max_moves=self.max_moves,
            max_cost=self.max_migration_cost,
            state_sizes=arrays.state_sizes,
        )

    def _deterministic(self) -> bool:
        """Whether ``time_limit`` is work (CP-SAT's deterministic time is the only one there is)."""
        return self.deterministic and self.backend == "cpsat"

    def _deadline(self, snapshot: Snapshot, imported: float = 0.0) -> float | None:
        """The wall-clock ``time.perf_counter()`` the search must stop by, or None (deterministic
        mode without the safety net: then nothing reads a clock). In wall-clock mode the time
        limit's guard: the search aims at the limit and the guard stops it halfway into the rule's
        slack, keeping the rest for a solve or a step that stops late. The safety net
        ``wall_clock_limit`` is a guard of its own, in either mode. Both count from the plan()
        call (less ``imported``, the seconds of a first import of the solver library) and keep a
        reserve, estimated from the snapshot's size, for deriving the moves and metrics and
        checking the plan."""
        ends = []
        if self.time_limit is not None and not self._deterministic():
            slack = (TIME_LIMIT_FACTOR - 1) * self.time_limit + TIME_LIMIT_SLACK
            ends.append(self.time_limit + slack / 2)
        if self.wall_clock_limit is not None:
            ends.append(self.wall_clock_limit)
        if not ends:
            return None
        end = min(ends)
        return plan_started() + imported + end - _finish_reserve(snapshot, end)


class MilpPlanner(_MilpBase):
    """The MILP of ALBIC section 4.3.1 (see the module docstring and :mod:`albic.planners.milp_items`).

    Parameters (declared once, with their defaults and rules, in
    :mod:`albic.planners.milp_parameters`): the budgets ``max_moves`` / ``max_migration_cost``; ``time_limit``: with
    ``deterministic=True`` (the default) and the CP-SAT backend a budget of work units, counted by
    the search and calibrated so that a unit is about a second of one core of the reference
    machine (:mod:`albic.planners.work`): no decision reads a clock, and the same snapshot gives the same
    plan on any machine and under any load (a slower or busier one takes longer); otherwise
    wall-clock seconds, a promise (:data:`albic.planners.work.TIME_LIMIT_FACTOR`). The default, 0.25, is
    small on purpose: small instances are proven optimal in milliseconds, the conformance suite
    plans ~100 snapshots per planner, and on the paper's sizes the polish does most of the work in
    the first tenth of a second; ``wall_clock_limit`` (seconds, None: off): a safety net that stops
    the search by then in either mode; a deterministic plan it cut says so
    (``details["stopped_by"] == "wall clock"``, ``details["deterministic"] is False``);
    ``backend`` (``cpsat``, ``highs``, ``cbc``, ``scip``, ``pulp`` or ``pulp:NAME``: any solver
    PuLP reaches, e.g. ``pulp:GUROBI_CMD``, see :mod:`albic.solvers.milp`); ``workers`` (CP-SAT threads,
    and the threads of a PuLP solver that takes them);
    ``warm_start`` (also start from Flux's plan); ``resource_caps``; ``seed``.

    ``details``: ``stopped_by`` (the limit that ended the search, :mod:`albic.planners.work`),
    ``deterministic`` (whether a rerun gives this plan), ``work`` (deterministic mode: the work
    units charged), ``iterations``, ``solver_notes``, ``objective_levels``, ``lower_bound`` and
    ``lower_bound_pct``, and ``removing_nodes_holding`` when draining is not done.
    """

    name = "milp"
    declarations = (Budgets, SolverSettings)
    parameters = rules_of(*declarations)
    __init__ = keyword_init(*declarations)

    def tags(self) -> PlannerTags:
        det = self._deterministic()
        return PlannerTags(exact=True, deterministic=det, budget=True, spread=True, racks=True)

    def evaluate(self, snapshot: Snapshot, assignment: Mapping[str, str]) -> tuple[float, ...] | None:
        """The objective levels ``(max_deviation, load_on_removing, key_groups_on_removing,
        one_sided_deviations, state_moved)`` (:data:`albic.planners.milp_items.OBJECTIVE_LEVELS`), or None
        if a budget, a resource cap or the no-move-onto-removing rule is broken."""

        items = self.singleton_items(snapshot)
        value = items.evaluate(metrics.node_of(snapshot, assignment))
        return None if value is None else value[: len(OBJECTIVE_LEVELS)]

    def _plan(self, snapshot: Snapshot) -> Plan:
        imported = import_backend(self.backend)
        started = plan_started() + imported  # the wall-clock limit covers the warm start too
        deadline = self._deadline(snapshot, imported)
        arrays = snapshot.arrays()
        items = self.singleton_items(snapshot)
        starts = [np.asarray(arrays.current)]
        flux = self._flux_start(snapshot)
        if flux is not None:
            starts.append(flux)
        budget = Budget(self.time_limit, self._deterministic(), deadline, started)
        outcome = solve_items(items, starts, self._settings(), budget)
        return planned_result(
            self, snapshot, outcome, arrays.current, details=no_plan_reason(snapshot, items, outcome)
        )


def _finish_reserve(snapshot: Snapshot, time_limit: float) -> float:
    """Seconds to keep for what follows _plan before a wall-clock guard: by the snapshot's size, at
    most a third of the limit (a controller giving 0.1 s to 100,000 key groups gets a late plan
    rather than none)."""
    n = len(snapshot.arrays().key_group_ids)
    return min(0.01 + FINISH_SECONDS_PER_KEY_GROUP * n, time_limit / 3)


# -- ALBIC: Algorithm 2 ----------------------------------------------------------------------------


class AlbicPlanner(_MilpBase):
    """Algorithm 2 of ALBIC section 4.3.2 on top of the MILP: balance first, then collocation with
    what the balance bound leaves (the steps as built: the module docstring, "Algorithm 2").

    Parameters of the paper (Table 3), besides those of :class:`MilpPlanner` (declared in
    :mod:`albic.planners.milp_parameters`, :class:`~albic.planners.milp_parameters.CollocationSettings`):
    ``score_factor`` (sF, 1.5: a pair counts when its traffic exceeds sF x its source's average
    per downstream key group); ``max_load_distance`` (maxLD, 10, in percent of the mean
    utilisation, the unit of ``load_distance_pct``); ``max_partition_load`` (maxPL, 25) and
    ``step_partition_load`` (stepPL, 5), in percent of the mean load of a node of capacity 1.

    Extensions, 0 (or 1 for ``pairs_per_call``) giving Algorithm 2 as written where that exists:

    - ``pairs_per_call`` (1): pairs pinned per call (the paper pins one).
    - ``swap_share`` (0.5): the share of the budget the pins leave that collocating swaps may
      spend. Half, so that the MILP keeps at least as many moves to balance with as the swaps get.
    - ``collocation_slack`` (0.5) and ``slack_gain`` (0.05): a plan may be up to ``collocation_slack
      x maxLD`` less balanced than the witness (never beyond maxLD) when it makes ``slack_gain``
      more of the traffic node-local, a proportional share of that for a smaller gain.
      Collocation pays for the balance it costs. Half: collocation spends at most half of the
      tolerance maxLD grants, the other half is the margin the next period's shift of load starts
      from. 0.05: a pin on the paper's one-to-one instance (section 5.3), about 0.01 of the
      traffic, earns a fifth of the slack (1 point at maxLD 10), enough to place its pair, while a
      gain of a thousandth earns a tenth of a point. The slack is spent only in a period that
      starts within maxLD (the current placement's load distance): where the load has shifted by
      more than maxLD since the last plan the margin did not hold, and the period is planned to
      the witness's balance, collocation taking only what costs none (ties of balance,
      separations undone within the witness's load distance). Where loads drift by a few percent
      a period (the paper's section 5.3 instance) almost every period starts within maxLD and
      the slack keeps the pairs collocated from call to call (COLA's collocation within 100 calls
      at 10 moves); hourly traces shift by more than maxLD most hours (four periods in five on
      the words trace at 128 key groups), and a slack spent in those periods too leaves albic
      points above a witness that balances to a fraction of a point (words at 128 key groups, 20
      and 40 moves: a 95th percentile of 2.6-2.8 % against milp's 0.6 %).
    - ``collocation_time`` (1.5): the work Algorithm 2's attempts get besides the witness's, in
      shares of ``time_limit``. **albic does up to (1 + collocation_time) x time_limit of work,
      2.5x milp's by default**: the witness is ``milp``'s own search with ``milp``'s work, so it
      is never weaker than ``milp`` at the same ``time_limit``, and the attempts' solves place
      pinned units in models of their own. 1.5: with 1.0, repeated calls on the paper's
      section 5.3 instance stop short of COLA's collocation (0.950 against 0.953 after 100 calls
      at 10 moves), with 1.5 they reach it. Where balance is hard (Flux's plan beyond maxLD) the
      witness gets all of it. In wall-clock mode ``time_limit`` is a promise for the whole plan
      and the witness gets ``1 / (1 + collocation_time)`` of it.

    Measured across five flights weeks of 2013 and the words trace at 32 and 128 key groups:
    README, "Benchmarks" (``python -m benchmarks albic``).

    ``details``: ``partitions`` (lists of key-group ids moving as units, pinned units included),
    ``pair`` (the first pair collocated this call, or None), ``case`` (1, 2 or 3), ``pinned_to``,
    ``pairs`` (every pin: ``{"pair", "case", "pinned_to"}``), ``swapped`` (every key group step
    3's swaps moved: ``{"key_group", "to"}``), ``max_partition_load`` (the value that produced the
    plan; 0 when the witness's plan was taken), ``attempts``, ``collocation_gained`` (the
    collocation factor after the plan minus before), ``load_distance_bound_pct`` (the bound),
    ``compared_with_milp`` (the witness: its ``status``, ``load_distance_pct``,
    ``collocation_factor``, ``state_moved`` and ``moves``) and ``collocation_cost`` (the plan
    minus the witness: ``load_distance_pct``, ``state_moved`` and ``moves``).
    """

    name = "albic"
    declarations = (Budgets, CollocationSettings, SolverSettings)
    parameters = rules_of(*declarations)
    __init__ = keyword_init(*declarations)

    def tags(self) -> PlannerTags:
        det = self._deterministic()
        return PlannerTags(deterministic=det, budget=True, collocation=True, spread=True, racks=True)

    def validate_parameters(self) -> None:
        super().validate_parameters()
        # Each step of maxPL is one more solve: bound their number, not just each value.
        steps = self.max_partition_load / self.step_partition_load
        if steps > _MAX_ATTEMPTS:
            raise InvalidParameterError(
                f"The 'step_partition_load' parameter of planner {planner_name(type(self))!r} must be at least "
                f"max_partition_load / {_MAX_ATTEMPTS} = {self.max_partition_load / _MAX_ATTEMPTS:g} "
                f"(at most {_MAX_ATTEMPTS} attempts). Got {self.step_partition_load!r} instead."
            )

    def _plan(self, snapshot: Snapshot) -> Plan:
        imported = import_backend(self.backend)
        arrays = snapshot.arrays()
        deadline = self._deadline(snapshot, imported)
        bound = self._bound(snapshot)
        budget = self._budget(snapshot, imported, deadline)
        # Balance first: the plain MILP at the same budget is the witness of the balance the budget
        # allows. Where Flux's plan at the budget is beyond maxLD, balance is hard: the witness is
        # one search with all of albic's work, its ties of balance broken by the remote traffic
        # (collocation only where it costs no balance), and there are no attempts; a search cut in
        # two finds less (at 20 moves in a flights week's rush hour, 34 % from two searches, 1 %
        # from one with the work of both). Elsewhere it is milp's own search with milp's work, so
        # never weaker than milp; when it is beyond maxLD all the work left goes on with its search.
        flux = self._flux_placement(snapshot)
        hard = flux is None or _active_pct(snapshot, flux) > self.max_load_distance
        flux_start = flux if self.warm_start else None
        witness_budget = budget.part(_search_limit(budget)) if hard else self._witness_budget(budget)
        witness = self._pure(snapshot, witness_budget, bound, flux_start, traffic=hard)
        budget.settle(witness_budget)
        if not hard and _beyond(snapshot, witness, self.max_load_distance):
            hard = True
            witness = self._continued(snapshot, witness, budget, bound, flux_start)
        witness_pct = _outcome_pct(snapshot, witness)
        tried = None
        slack = self._slack(snapshot)
        limit_pct = _load_distance_limit(self.max_load_distance, slack, witness_pct)
        witness_node_of = node_of_outcome(witness, None, arrays.current)
        earned = _Earned(self, snapshot, witness_node_of, witness_pct, slack)
        tied = witness
        if not hard:
            tied = self._tied(snapshot, witness, witness_budget, budget, bound)
            tried = self._attempts(snapshot, limit_pct, witness, budget, bound, earned)
        kept = None if witness_node_of is None else self._kept(snapshot, tied, limit_pct, earned)
        chosen = _choose(snapshot, tried, kept)
        if chosen is None:  # nothing planned: the witness's outcome says why
            chosen = _Tried(witness, None, [], [], [], 0.0)
        before = metrics.collocation_factor(snapshot)
        node_of = node_of_outcome(chosen.outcome, chosen.members, arrays.current)
        after = metrics.collocation_factor(snapshot, node_of) if node_of is not None else before
        ids = arrays.key_group_ids
        pinned = [
            {"pair": [ids[k] for k in pair[:2]], "case": case, "pinned_to": arrays.node_ids[node]}
            for pair, case, node in chosen.pins
        ]
        details = {
            "partitions": [[ids[k] for k in u.tolist()] for u in chosen.units if u.size > 1],
            "pair": pinned[0]["pair"] if pinned else None,
            "case": pinned[0]["case"] if pinned else None,
            "pinned_to": pinned[0]["pinned_to"] if pinned else None,
            "pairs": pinned,
            "swapped": [{"key_group": ids[k], "to": arrays.node_ids[node]} for k, node in chosen.swaps],
            "max_partition_load": max(chosen.max_pl, 0.0),
            "attempts": tried.attempts if tried else 0,
            "collocation_gained": float(after - before) if node_of is not None else 0.0,
            "load_distance_bound_pct": limit_pct,
            **_collocation_cost(snapshot, witness_node_of, node_of, witness),
            **(getattr(chosen.outcome, "reason", None) or {}),
        }
        if chosen.outcome is not witness:
            chosen.outcome.bound = witness.bound  # the budget's bound holds for every plan
        # The plan reports every search it took (witness, attempts, swaps): their work, and the
        # wall clock if it cut any of them (what any of them found decided the plan).
        chosen.outcome.work = budget.work
        chosen.outcome.stopped_by = budget.stopped_by  # every search's part was settled into it
        return planned_result(
            self, snapshot, chosen.outcome, arrays.current, details, item_members=chosen.members
        )

    def _budget(self, snapshot: Snapshot, imported: float, deadline: float | None) -> Budget:
        """The whole plan's budget (why: the class docstring, ``collocation_time``): in
        deterministic mode ``(1 + collocation_time) x time_limit`` of work; in wall-clock mode the
        seconds from the plan() call (less ``imported``) to ``time_limit``, less what follows the
        search (:func:`_finish_reserve`)."""
        limit, deterministic = self.time_limit, self._deterministic()
        if limit is None:
            return Budget(None, deterministic, deadline)
        if deterministic:
            return Budget(limit * (1 + self.collocation_time), True, deadline)
        started = plan_started() + imported
        return Budget(limit - _finish_reserve(snapshot, limit), False, deadline, started)

    def _witness_budget(self, budget: Budget) -> Budget:
        """The witness's part of ``budget``: in deterministic mode exactly ``milp``'s
        ``time_limit`` of work (so the witness is milp's own search); in wall-clock mode
        ``1 / (1 + collocation_time)`` of the seconds left."""
        if budget.limit is None or budget.deterministic:
            return budget.part(self.time_limit)
        return budget.part(1 / (1 + self.collocation_time) * _search_limit(budget))

    def _attempts_over(self, budget: Budget, attempt_work: float) -> bool:
        """Whether no attempt may start (the limit that decided is recorded): the deadline has
        passed, or, in deterministic mode, less than twice an attempt's own work
        (``attempt_work``, units and METIS) is left, in wall-clock mode 2 % of the time limit."""
        if budget.wall_left() <= 0:
            budget.stop(budget.wall_stop)
            return True
        if budget.limit is None:
            return False
        if budget.deterministic:
            out = _search_limit(budget) < 2 * attempt_work
        else:
            out = budget.own_left() <= 0.02 * self.time_limit
        if out:
            budget.stop(budget.limit_stop)
        return out

    def _slack(self, snapshot: Snapshot) -> float:
        """``collocation_slack`` where the current placement is within maxLD, else 0: a period that
        starts beyond maxLD is planned to the witness's balance (why: :class:`AlbicPlanner`)."""
        current = _active_pct(snapshot, np.asarray(snapshot.arrays().current))
        return self.collocation_slack if metrics.within_noise(current, self.max_load_distance) else 0.0

    def _attempts(
        self,
        snapshot: Snapshot,
        limit_pct: float,
        witness: Outcome,
        budget: Budget,
        bound: float,
        earned: _Earned,
    ) -> _Tried | None:
        """Steps 2 to 4 of Algorithm 2: units, pins and swaps solved by the MILP, retried with
        half the pins, then with ``maxPL - stepPL``, until a plan keeps the active nodes' load
        distance within ``limit_pct`` and drains removing nodes as far as the witness does; None
        when none does (or there is nothing to collocate)."""
        rng = np.random.default_rng(self.seed)
        collocated, candidates = collocation_pairs(snapshot, self.score_factor)
        pairs = heaviest_pairs(candidates, rng, len(candidates))  # all, in step 3's order
        mean = metrics.mean_utilisation(snapshot)
        n_pins, max_pl, attempts = self.pairs_per_call, float(self.max_partition_load), 0
        attempt_work = ATTEMPT_WORK_PER_KEY_GROUP * len(snapshot.key_groups)
        while max_pl > 0 and not self._attempts_over(budget, attempt_work):
            attempts += 1
            parts = split_sets(
                snapshot, collocated, max_pl / 100 * mean, self.max_moves, self.max_migration_cost, self.seed
            )
            swap_budget = budget.part(_swap_limit(budget, attempt_work))
            members, allowed, units, pins, swaps = albic_units(
                snapshot,
                parts,
                pairs,
                n_pins,
                self.max_moves,
                self.max_migration_cost,
                lambda sym, where, movable, moves, cost: self._swaps(
                    snapshot, sym, where, movable, moves, cost, swap_budget
                ),
            )
            budget.settle(swap_budget)
            if not units:
                return None  # nothing to collocate
            last = max_pl - self.step_partition_load <= 0 and len(pins) <= 1
            items = self._items(snapshot, members, allowed)
            budget.charge(attempt_work)
            left = _search_limit(budget)
            search = budget.part(None if left is None else (left if last else left / 2), firm=True)
            outcome = solve_items(items, [item_homes(items)], self._settings(bound), search)
            budget.settle(search)
            if (
                outcome.value is not None
                and metrics.within_noise(active_load_distance_pct(items, outcome.where), limit_pct)
                and (
                    witness.value is None
                    or metrics.within_noise(outcome.value.load_on_removing, witness.value.load_on_removing)
                )
                and earned(node_of_outcome(outcome, members, snapshot.arrays().current))
            ):
                return _Tried(outcome, members, units, pins, swaps, max_pl, attempts)
            if len(pins) > 1:  # the extra pairs go first (halved), then the paper's retries
                n_pins = len(pins) // 2
                continue
            max_pl -= self.step_partition_load
        return _Tried(None, None, [], [], [], 0.0, attempts)

    def _pure(
        self,
        snapshot: Snapshot,
        budget: Budget,
        bound: float,
        flux: np.ndarray | None,
        also: list[np.ndarray] = (),
        traffic: bool = False,
    ) -> Outcome:
        """The plain MILP's solve within ``budget`` (singleton items; the current placement,
        ``also`` and Flux's plan as starts): ``milp``'s own search; ``traffic``: its ties of balance
        broken by the remote traffic."""
        arrays = snapshot.arrays()
        starts = [np.asarray(arrays.current), *also]
        if flux is not None:
            starts.append(flux)
        items = self.singleton_items(snapshot, traffic)
        outcome = solve_items(items, starts, self._settings(bound), budget)
        outcome.reason = no_plan_reason(snapshot, items, outcome)
        return outcome

    def _tied(
        self, snapshot: Snapshot, witness: Outcome, witness_budget: Budget, budget: Budget, bound: float
    ) -> Outcome:
        """Among the placements as balanced as the witness, one that keeps more traffic
        node-local: the plain MILP with the remote traffic breaking its ties of balance, started
        from the witness's plan (so never less balanced), with what the witness left of its part
        of ``budget`` (the attempts' work is theirs)."""
        if not snapshot.arrays().traffic.nnz or witness.value is None:
            return witness
        search = budget.part(_search_limit(witness_budget))
        tied = self._pure(snapshot, search, bound, None, also=[witness.where], traffic=True)
        budget.settle(search)
        return tied

    def _continued(
        self,
        snapshot: Snapshot,
        witness: Outcome,
        budget: Budget,
        bound: float,
        flux: np.ndarray | None,
    ) -> Outcome:
        """The witness's search gone on from its plan with all the work left, the better of the
        two (what either proved of the budget's bound holds for both)."""
        search = budget.part(_search_limit(budget))
        more = self._pure(snapshot, search, bound, flux, also=[witness.where])
        budget.settle(search)
        if more.value is None or not better(more.value, witness.value):
            return witness
        if witness.bound is not None and (more.bound is None or witness.bound > more.bound):
            more.bound = witness.bound
        return more

    def _swaps(
        self,
        snapshot: Snapshot,
        sym,
        where: np.ndarray,
        movable: np.ndarray,
        moves_left: float,
        cost_left: float | None,
        budget: Budget,
    ) -> list[tuple[int, int]]:
        """Step 3's swaps: ``(key group, node)`` moves of key groups outside the units onto nodes
        holding their partners (:func:`albic.planners.collocation.collocating_swaps`), with
        ``swap_share`` of the budget the pins left, keeping every node within the current
        placement's ``d`` (a node the pins pushed beyond it only takes swaps that bring it back),
        and none while that ``d`` is beyond maxLD. Each becomes a unit pinned there."""

        if not self.swap_share > 0 or not moves_left >= 2:
            return []
        arrays = snapshot.arrays()
        moves = moves_left if math.isinf(moves_left) else math.floor(self.swap_share * moves_left)
        cost = None if cost_left is None else self.swap_share * cost_left
        bound = largest_deviation(arrays, np.asarray(arrays.current))
        if bound > self.max_load_distance / 100 * metrics.mean_utilisation(snapshot):
            return []  # beyond maxLD: balance first, every move of the budget is the MILP's
        swapped = collocating_swaps(arrays, sym, where, movable, bound, moves, cost, budget)
        return [(k, int(swapped[k])) for k in np.flatnonzero(swapped != where).tolist()]

    def _kept(self, snapshot: Snapshot, witness: Outcome, limit_pct: float, earned: _Earned) -> Outcome:
        """The witness with its moves undone that only separate communicating key groups, within
        ``limit_pct`` if the collocation kept earns it, else within the witness's own load
        distance (:func:`albic.planners.collocation.undo_separations`); FEASIBLE, not OPTIMAL, when
        anything was undone (the MILP's objective ignores traffic, and the undo trades its balance)."""
        arrays = snapshot.arrays()
        if not arrays.traffic.nnz:
            return witness
        kept = self._undone(snapshot, witness, limit_pct)
        if kept is not witness and not earned(np.asarray(kept.where)):
            kept = self._undone(snapshot, witness, earned.witness_pct)
        return kept

    def _undone(self, snapshot: Snapshot, witness: Outcome, limit_pct: float) -> Outcome:
        arrays = snapshot.arrays()
        items = self.singleton_items(snapshot)
        sym = (arrays.traffic + arrays.traffic.T).tocsr()
        kept = undo_separations(arrays, sym, witness.where, limit_pct / 100 * items.mean())
        undone = int((kept != np.asarray(witness.where)).sum())
        value = items.evaluate(kept) if undone else None
        if value is None:  # nothing changed, or an undo broke a resource cap: the MILP's plan
            return witness
        return replace(
            witness,
            where=kept,
            value=value,
            status="FEASIBLE" if witness.status == "OPTIMAL" else witness.status,
            solver_notes=[*witness.solver_notes, f"{undone} move(s) undone to keep collocation"],
        )


class _Earned:
    """Whether a plan's load distance beyond the witness's is earned by the collocation it gains
    over the witness: ``slack_gain`` of collocation factor earns all of the period's ``slack``
    (``collocation_slack``, or 0 for a period that starts beyond maxLD; within maxLD), a smaller
    gain its share (why: :class:`AlbicPlanner`)."""

    def __init__(self, planner: AlbicPlanner, snapshot: Snapshot, witness_node_of, witness_pct, slack):
        self.planner, self.snapshot, self.slack = planner, snapshot, slack
        self.witness_pct = witness_pct
        self.base = None if witness_node_of is None else metrics.collocation_factor(snapshot, witness_node_of)

    def __call__(self, node_of: np.ndarray | None) -> bool:
        if node_of is None or self.base is None:
            return True
        p = self.planner
        gain = max(metrics.collocation_factor(self.snapshot, node_of) - self.base, 0.0)
        share = 1.0 if p.slack_gain <= 0 else min(1.0, gain / p.slack_gain)
        limit = _load_distance_limit(p.max_load_distance, self.slack * share, self.witness_pct)
        return metrics.within_noise(_active_pct(self.snapshot, node_of), limit)


@dataclass
class _Tried:
    """A plan of Algorithm 2's attempts (``outcome`` None: no attempt kept the bound)."""

    outcome: Outcome | None
    members: list[np.ndarray] | None
    units: list[np.ndarray]
    pins: list
    swaps: list[tuple[int, int]]
    max_pl: float
    attempts: int = 0


# The least a search of ALBIC's is given however little is left (the budget's unit): it still
# evaluates its starts and takes its first polish steps.
LEAST_SEARCH = 1e-3


def _search_limit(budget: Budget) -> float | None:
    """The limit of a search given what is left of ``budget``: at least ``LEAST_SEARCH`` (None: no
    limit)."""
    return None if budget.limit is None else max(budget.own_left(), LEAST_SEARCH)


def _swap_limit(budget: Budget, attempt_work: float) -> float | None:
    """The limit of an attempt's swaps: a quarter of what is left (half of a first attempt's
    solve, which the swaps only prepare), less, in deterministic mode, the attempt's own work
    charged after them (in wall-clock mode that work's time passes on the clock)."""
    left = _search_limit(budget)
    if left is None:
        return None
    ahead = attempt_work if budget.deterministic else 0.0
    return max(left - ahead, 0.0) / 4


def _load_distance_limit(max_ld: float, slack: float, witness_pct: float | None) -> float:
    """The load distance (percent) ALBIC's plan may reach: never beyond the witness's when that
    is beyond maxLD (balance wins), else at most ``slack x maxLD`` more than the witness's (the
    period's slack: :meth:`AlbicPlanner._slack`) and never beyond maxLD (why: :class:`AlbicPlanner`)."""
    if witness_pct is None:
        return max_ld
    return max(witness_pct, min(max_ld, witness_pct + slack * max_ld))


def _beyond(snapshot: Snapshot, outcome: Outcome, max_ld: float) -> bool:
    """Whether the plain MILP found no plan within maxLD."""
    pct = _outcome_pct(snapshot, outcome)
    return pct is None or pct > max_ld


def _outcome_pct(snapshot: Snapshot, outcome: Outcome) -> float | None:
    """The active load distance (percent) of the plain MILP's outcome; None when it found nothing."""
    return None if outcome.value is None else _active_pct(snapshot, np.asarray(outcome.where))


def _active_pct(snapshot: Snapshot, node_of: np.ndarray) -> float:
    """The active nodes' load distance in percent of the mean (step 4's calcLoadDistance)."""
    return float(metrics.load_distance_pct(snapshot, node_of))


def _choose(snapshot: Snapshot, tried: _Tried | None, kept: Outcome | None) -> _Tried | None:
    """The plan with the most collocation of the attempts' (when one kept the bound) and the
    witness's with its separations undone; equal collocation: the lower load distance, then the
    less state moved. So ``albic`` moves more state than ``milp`` only for collocation it gains
    or keeps."""
    arrays = snapshot.arrays()
    options = []
    if tried is not None and tried.outcome is not None:
        options.append(tried)
    if kept is not None:
        options.append(_Tried(kept, None, [], [], [], 0.0))

    def key(option: _Tried):
        node_of = node_of_outcome(option.outcome, option.members, arrays.current)
        return (
            -round(metrics.collocation_factor(snapshot, node_of), 12),
            round(_active_pct(snapshot, node_of), 9),
            metrics.migration_cost(snapshot, node_of),
        )

    return min(options, key=key) if options else None


def _collocation_cost(
    snapshot: Snapshot, witness_node_of: np.ndarray | None, node_of: np.ndarray | None, witness: Outcome
) -> dict[str, Any]:
    """What collocation cost: the witness (the plain MILP at the same budget) beside the plan."""
    if witness_node_of is None or node_of is None:
        return {}
    return {
        "compared_with_milp": {
            "status": witness.status,
            "load_distance_pct": _active_pct(snapshot, witness_node_of),
            "collocation_factor": metrics.collocation_factor(snapshot, witness_node_of),
            "state_moved": metrics.migration_cost(snapshot, witness_node_of),
            "moves": metrics.moves(snapshot, witness_node_of),
        },
        "collocation_cost": {
            "load_distance_pct": _active_pct(snapshot, node_of) - _active_pct(snapshot, witness_node_of),
            "state_moved": metrics.migration_cost(snapshot, node_of)
            - metrics.migration_cost(snapshot, witness_node_of),
            "moves": metrics.moves(snapshot, node_of) - metrics.moves(snapshot, witness_node_of),
        },
    }
