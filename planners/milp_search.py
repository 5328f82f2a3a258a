"""The search that solves ALBIC's MILP (section 4.3.1): phases on a solver, whole models where the
solver can take them within the limit, a large-neighbourhood search with a local-search polish
beyond.

Each solve
runs in phases on CP-SAT (or another backend): minimise ``d``; then, with ``d`` fixed, the later
levels, one solve each on a whole model (in a neighbourhood packed into as few weighted solves as
keep every integer weight below 2**53; :meth:`albic.planners.milp_formulation.SubModel.later_levels`),
each solved level fixed before the next, so the priorities are never blurred by floating point.

First of all, where nothing but a move budget binds a placement (no state budget, removing node,
resources or spread), the move fit (:mod:`albic.planners.move_fit`) searches the
moves exactly, within ``FIT_SHARE`` of the limit: under a tight budget the best plan is an exact
fit of the node loads, which it finds in milliseconds and CP-SAT's relaxation does not see. Its
plan joins the starts, and a load distance it proves is where the whole model's ``d`` starts.

A model leaves out the items of no load at home on an active node (:func:`_decided`: they stay put
in some optimal plan). The whole model is solved first when a measured cost model of the solver
(``WHOLE_MODEL_WORK_PER_PAIR`` per item-node pair, ``WHOLE_MODEL_SHARE`` of the limit) expects its
first level within the limit, and a plan is OPTIMAL only when every phase was proven optimal on
exactly scaled data. Otherwise, and after a whole model that proved nothing in its share, a
large-neighbourhood search: starting from the best of the current placement and the warm starts
(Flux's plan), repeatedly re-solve exactly a part of the instance with every other item fixed
(their moves and cost still count against the budget), keeping a result only when it improves
the walk's objective. The parts take turns: a few nodes (the most over- and under-loaded, plus
random ones, seeded), and every node with a few items free (those already moved, the heaviest,
random ones). When ``WIDEN_AFTER`` parts in a row bring nothing, they double in size, up to the
whole model, solved with what is left; so the search ends only when the limit does, or when it
has proven its plan (``stopped_by`` says which). A plan is therefore never worse than the current
placement or any warm start (where a node is removing, "worse" includes the load it still holds:
draining can raise the active nodes' load distance).

From ``LEVEL_ITEMS`` (10,000) items on, each start is first levelled greedily
(:func:`albic.planners.local_search.level`: one move at a time between the node of largest deviation
and its partners across the mean, with all the time but the final reserve) and then polished:
a polish step or a neighbourhood solve costs milliseconds to seconds there, and a budget of
1,000 moves spent one polish step at a time would take longer than the time limit. Below that
size each start is polished as it is and then, while the polish's share of the limit lasts,
levelled and polished too (another local optimum, sometimes better).

"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from albic.base.errors import SolverError
from albic.core.metrics import same_figure
from albic.planners.local_search import LEVEL_ITEMS, level, polish
from albic.planners.milp_formulation import Scaled, SubModel, scale_items
from albic.planners.milp_items import Items, Outcome, better
from albic.planners.milp_parameters import SolverSettings
from albic.planners.move_fit import Fit, fit_moves
from albic.planners.move_fit import applies as fit_applies
from albic.planners.work import (
    BUILD_ESTIMATE_PER_VARIABLE,
    BUILD_WORK_PER_VARIABLE,
    CPSAT_DTIME_PER_UNIT,
    WALL_CLOCK,
    Budget,
    cpsat_time,
    solve_work,
)
from albic.solvers.balance_bound import load_distance_bound
from albic.solvers.milp import is_pulp

__all__ = [
    "SolveSettings",
    "solve_items",
    "import_backend",
    "FULL_MODEL_VARIABLES",
    "NEIGHBOURHOOD_VARIABLES",
    "CPSAT_DTIME_PER_UNIT",
]

# The search's constants, each with the data it was measured on. "The sweep" below is `python -m
# benchmarks search-constants --full` (benchmarks/search_constants.py), which re-derives them: 24
# cases, the flights weeks from 2013-02-03 and 2013-07-07 and the words trace's first week, hours
# 13 and 109, 32 and 128 key groups per operator, 5 and 20 moves, milp at time_limit=1; each value
# tried with the others at theirs, its mean load distance (% of the mean) and the cases where its
# plan was the best of the values tried by milp's levels ("best").

# The most item-node pairs a whole model may have, whatever the limit (its memory; and with no
# limit at all, the point beyond which the neighbourhood search decides instead). A cap, not
# swept.
FULL_MODEL_VARIABLES = 200_000
# The cost model of the whole model, measured with one CP-SAT worker on flights periods (2 weeks,
# 2 hours each, 32 / 64 / 128 key groups per operator, 7-8 nodes, budgets 5 and 20 moves: 24 models
# of 959-2,344 decided item-node pairs, :func:`_decided`): proving its first level (the load
# distance) took 1.1e-4 to 17e-4 work units per pair, median 2.6e-4 (no trend with the size in
# that range); proving every level took 2.2-36 times as long, median 4.7. A whole model is
# built when its first level is expected within WHOLE_MODEL_SHARE of the limit, and that level
# gets WHOLE_MODEL_SHARE of the limit; proven, the later levels have the rest, else the
# neighbourhood search goes on with it (the heavy tail: 17e-4 per pair). On the paper's
# generator (random loads) even 5 nodes x 100 key groups were not proven in 30 units: the
# neighbourhood search is what improves those plans, the whole model's share does no harm there.
# The sweep: WHOLE_MODEL_WORK_PER_PAIR 1e-4 / 2.6e-4 / 1e-3 gives 2.338 % at each, best 23 / 23 /
# 20 of 24; WHOLE_MODEL_SHARE 0.25 / 0.5 / 0.75 gives 2.308 / 2.338 / 2.338 %, best 21 / 22 / 21.
WHOLE_MODEL_WORK_PER_PAIR = 2.6e-4
WHOLE_MODEL_SHARE = 0.5
# The item-node pairs of the first node neighbourhoods (they double as the walk widens): on the
# flights periods of WIDEN_AFTER (8 nodes of ~128 key groups each) two nodes, the fewest a
# neighbourhood takes. The sweep: 300 / 600 / 1,200 give 2.338 % and the best plan on all 24
# cases each.
NEIGHBOURHOOD_VARIABLES = 600
# Share of the time limit the move fit (planners/move_fit.py) may take, first of all. On the 190
# flights cases of `benchmarks milp --full` (32 and 128 key groups per operator, budgets 5-40) it
# found the optimal load distance of 188 within 20,000 steps (about 0.06 work units), and proved
# it for 63; the whole model's first level needed 0.7-2.3 units on the cases it found first. The
# sweep: 0.02 / 0.1 / 0.3 give 2.308 / 2.338 / 2.338 %, best 21 / 19 / 19 of 24, OPTIMAL 5 / 4 / 3
# (the words cases, where what the fit leaves goes to the whole model).
FIT_SHARE = 0.1
# The most the move fit may take (work units; also without a time limit): about 330,000 steps,
# whose memory of the move sets searched stays within tens of megabytes.
FIT_MOST = 1.0
# Share of the time limit one neighbourhood solve may take (at time_limit=1, 0.04 units: the
# 0.02-0.1 units a flights neighbourhood costs, WIDEN_AFTER). The sweep: 0.02 / 0.04 / 0.08 give
# 2.338 % and the best plan on all 24 cases each.
SLICE_SHARE = 0.04
# Share of the time limit the first polish may take (it does most of the work), and the share
# kept for the last one. The sweep: POLISH_SHARE 0.2 / 0.4 / 0.6 give 2.338 % and the best plan
# on all 24 cases each; FINAL_POLISH_SHARE 0.04 / 0.08 / 0.16 give 2.338 %, best 23 / 23 / 22.
POLISH_SHARE = 0.4
FINAL_POLISH_SHARE = 0.08
# Polish steps made on whole (small) models even when the clock has run out (well under a
# millisecond each there): a plan cut short by a loaded machine still gets the first, largest
# improvements. In deterministic mode the clock never runs out before the polish, so the sweep
# (1 / 5 / 20) gives the same plans; it guards the wall-clock and safety-net cuts.
MIN_POLISH_STEPS = 5


@dataclass(frozen=True)
class SolveSettings(SolverSettings):
    """What one search reads: the planner's solver settings (``backend``, ``deterministic``,
    ``workers``, ``seed``; ``time_limit`` for a search given no budget of its own, solve_items'
    ``budget``) and the search's own."""

    full_model_variables: int = FULL_MODEL_VARIABLES  # the most pairs of a whole model (its cap)
    polish: bool = True  # the local search of planners/local_search.py (off: the solver alone)
    bound: float | None = None  # the counting bound when already known (solvers/balance_bound.py)

    def budget(self) -> Budget:
        """A budget of ``time_limit`` from now, in the mode these settings give: work units with
        CP-SAT and ``deterministic``, else wall-clock seconds."""
        return Budget(self.time_limit, self.deterministic and self.backend == "cpsat")


def _run(sub: SubModel, budget: Budget, settings: SolveSettings, limit: float, notes: list[str]):
    """One solve of the submodel's current objective within ``limit`` (None when no time is left);
    a deadline (the wall-clock guard or safety net) caps the solver's own wall time too."""
    limit = min(limit, budget.own_left())
    wall = budget.wall_left()
    if limit <= 0 or wall <= 0:
        budget.out_of_time()
        return None
    if budget.deterministic and wall < limit:
        budget.stop(WALL_CLOCK)  # the safety net may cut this solve short: not reproducible
    scaled = cpsat_time(limit) if budget.deterministic else limit
    try:
        sol = sub.model.solve(
            settings.backend,
            time_limit=scaled if math.isfinite(scaled) else None,
            deterministic=settings.deterministic,
            workers=settings.workers,
            seed=settings.seed,
            wall_limit=wall if math.isfinite(wall) else None,
        )
    except RuntimeError as err:  # a PuLP solver failing as it runs (no licence, a crash): not a bug here
        if not is_pulp(settings.backend):
            raise
        raise SolverError(str(err)) from None
    if budget.deterministic:
        sol.work = solve_work(sol.work)
    budget.charge(sol.work)
    if sol.status in ("FEASIBLE", "NO_SOLUTION"):  # the solve's own limit stopped it
        budget.stop(budget.limit_stop)
    if sol.note:
        notes.append(sol.note)
    return sol


def _solve_sub(
    sub: SubModel,
    budget: Budget,
    settings: SolveSettings,
    slice_: float,
    notes: list[str],
    first: float | None = None,
):
    """Every phase on one submodel: ``d`` gets ``first`` (None: two thirds of the slice), the later
    levels share the rest and whatever ``d`` left; with ``first`` given, they are left out unless
    ``d`` was proven (the caller has better uses for the time). Returns (values or None, status of
    the ``d`` phase, the worst status of the later phases, bound on ``d``)."""
    slice_ = min(slice_, budget.left())
    sub.phase1()
    d_limit = first if first is not None else (2 * slice_ / 3 if math.isfinite(slice_) else slice_)
    s1 = _run(sub, budget, settings, min(d_limit, slice_), notes)
    if s1 is None or s1.values is None:
        return None, s1.status if s1 else "NO_SOLUTION", "NO_SOLUTION", None
    if first is not None and s1.status != "OPTIMAL":
        return s1.values, s1.status, "NO_SOLUTION", s1.bound
    values, status = s1.values, "OPTIMAL"
    spent = s1.work if budget.deterministic else s1.seconds
    groups = sub.later_levels(round(s1.values[sub.d]))
    for n, (cols, coefs) in enumerate(groups):
        sub.model.minimise(cols, coefs)
        sub.model.set_hint(values)
        share = (slice_ - spent) / (len(groups) - n) if math.isfinite(slice_) else slice_
        s2 = _run(sub, budget, settings, max(share, 0.02), notes)
        if s2 is None or s2.values is None:
            status = s2.status if s2 else "NO_SOLUTION"
            break
        spent += s2.work if budget.deterministic else s2.seconds
        values = s2.values
        if s2.status != "OPTIMAL":
            status = s2.status
        # Fix this group at the value found before the next one breaks its ties.
        sub.model.add_row(cols, coefs, hi=float(np.dot(coefs, values[cols])))
    return values, s1.status, status, s1.bound


def _neighbourhood(items: Items, where: np.ndarray, rng: np.random.Generator, budget: int) -> np.ndarray:
    """Nodes to re-solve: most over- and under-loaded first, then random ones, within ``budget``
    item-node pairs; removing nodes that still hold items join when they fit."""
    n_nodes = items.capacities.size
    u = items.node_loads(where) / items.capacities
    dev = u - items.mean()
    active = np.flatnonzero(items.active)
    by_dev = active[np.argsort(-dev[active], kind="stable")]
    count = np.bincount(where, minlength=n_nodes)
    holding_removing = [i for i in np.flatnonzero(items.removing).tolist() if count[i]]
    rest = rng.permutation(active).tolist()
    order = []
    lo, hi = 0, by_dev.size - 1
    # Alternate extremes (most over, most under) with random nodes, mostly extremes.
    while lo <= hi or rest:
        if lo <= hi:
            order.append(int(by_dev[lo]))
            lo += 1
        if lo <= hi:
            order.append(int(by_dev[hi]))
            hi -= 1
        if rest and rng.random() < 0.5:
            order.append(int(rest.pop()))
        if lo > hi and not rest:
            break
        if lo > hi:
            order.extend(int(r) for r in rest)
            break
    chosen: list[int] = []
    seen = set()
    held = 0  # items on the chosen nodes (from the per-node counts: no pass over the items)
    for i in holding_removing + order:
        if i in seen:
            continue
        n_vars = (held + int(count[i])) * (len(chosen) + 1)
        if n_vars > budget and len(chosen) >= 2:
            continue
        chosen.append(i)
        seen.add(i)
        held += int(count[i])
    return np.array(sorted(chosen), dtype=np.int64)


def solve_items(
    items: Items, starts: list[np.ndarray], settings: SolveSettings, budget: Budget | None = None
) -> Outcome:
    """Best placement found; see the module docstring. ``budget``: what the search may spend (its
    ``limit`` is the search's time limit; None: :meth:`SolveSettings.budget`); it is charged as
    the search goes, and ``Outcome.work`` is the work it charged."""
    if budget is None:
        budget = settings.budget()
    outcome = _search(items, starts, settings, budget)
    outcome.work = budget.work
    return outcome


def _search(items: Items, starts: list[np.ndarray], settings: SolveSettings, budget: Budget) -> Outcome:
    notes: list[str] = []
    n_items, n_nodes = len(items.members), items.capacities.size
    best, best_value = None, None
    for start in starts:
        value = items.evaluate(start)
        if best is None or better(value, best_value):
            best, best_value = start.copy(), value
    if n_items == 0:
        return Outcome(best, best_value, "OPTIMAL", 0.0, 0, notes)
    counted = _counting_bound(items) if settings.bound is None else settings.bound
    sc = scale_items(items)
    n_pairs = _pairs_to_decide(items, best, settings.full_model_variables)
    d_floor = 0
    if fit_applies(items) and n_pairs <= settings.full_model_variables:
        fit = _fit(items, sc, budget)
        value = None if fit.where is None else items.evaluate(fit.where)
        if better(value, best_value):
            best, best_value = fit.where, value
        if fit.proven:
            d_floor = fit.d
            if sc.exact:
                counted = max(counted, fit.d / sc.scale)
    full = best_value is None or n_nodes <= 2 or _whole_model_fits(n_pairs, settings, budget.limit)
    reserve = 0.0 if budget.limit is None else FINAL_POLISH_SHARE * budget.limit
    ctx = _SearchContext(
        items,
        starts,
        settings,
        budget,
        sc,
        n_pairs,
        counted,
        np.random.default_rng(settings.seed),
        reserve,
        notes,
        d_floor,
    )
    if full:
        return _whole_model_first(ctx, best, best_value)
    return _neighbourhoods_first(ctx, best, best_value)


class _SearchContext(NamedTuple):
    """What both ways of searching read: the instance, its starts and settings, the budget, the
    scaled items, the pairs a whole model decides, the counting bound, the seeded generator, the
    final polish's reserve and the solver notes."""

    items: Items
    starts: list[np.ndarray]
    settings: SolveSettings
    budget: Budget
    sc: Scaled
    n_pairs: int
    counted: float
    rng: np.random.Generator
    reserve: float
    notes: list[str]
    d_floor: int


def _whole_model_first(ctx: _SearchContext, best: np.ndarray, best_value) -> Outcome:
    """The whole model first (it fits the limit, or the instance is small), then, unproven, the
    neighbourhoods from its plan and the polish of every start."""
    items, starts, settings, budget, sc = ctx.items, ctx.starts, ctx.settings, ctx.budget, ctx.sc
    n_pairs, counted, reserve, notes = ctx.n_pairs, ctx.counted, ctx.reserve, ctx.notes
    n_nodes = items.capacities.size
    proven, st1, bound, iterations = False, "NO_SOLUTION", None, 1
    walkable = best_value is not None and n_nodes > 2
    if settings.polish and best_value is not None:
        # A polished start first: a better hint, and a plan even when the clock is gone.
        cand = polish(items, best, clock=budget, min_steps=MIN_POLISH_STEPS)
        value = items.evaluate(cand)
        if better(value, best_value):
            best, best_value = cand, value
    if not budget.out_of_time() and _affordable(budget, n_pairs):
        # Keep a share for the polish, which only runs when the solve proves nothing; and
        # where it can follow, the load distance gets WHOLE_MODEL_SHARE of the limit: unproven
        # by then, the neighbourhood search has the rest.
        slice_ = max(budget.left() - reserve, 1e-3)
        first = None
        if walkable and budget.limit is not None:
            first = min(2 * slice_ / 3, WHOLE_MODEL_SHARE * budget.limit)
        cand, st1, st2, bound = _solve_whole(ctx, best, slice_, first)
        value = None if cand is None else items.evaluate(cand)
        if better(value, best_value):
            best, best_value = cand, value
        proven = st1 == "OPTIMAL" and st2 == "OPTIMAL" and sc.exact
    if not proven and walkable and not budget.out_of_time(reserve):
        # The whole model proved nothing in its share: the neighbourhoods go on from its plan.
        walk = _walk(ctx, best)
        iterations += walk.iterations
        proven = walk.proven
        if proven or better(walk.value, best_value):
            best, best_value = walk.best, walk.value
    if not proven and best_value is not None and settings.polish:
        # Every start too, not only the best: a warm start that spent the whole budget (Flux
        # draining a removing node) can be a dead end for the polish that the current
        # placement, with its budget intact, is not. Each gets at least MIN_POLISH_STEPS.
        for start in {w.tobytes(): w for w in [best, *starts]}.values():
            if items.evaluate(start) is None:
                continue
            cand = polish(items, start, clock=budget, min_steps=MIN_POLISH_STEPS)
            value = items.evaluate(cand)
            if better(value, best_value):
                best, best_value = cand, value
    if st1 == "INFEASIBLE" and best_value is None:
        return Outcome(best, None, "INFEASIBLE", None, 1, notes, stopped_by=budget.stopped_by)
    status = (
        "OPTIMAL"
        if proven and best_value is not None
        else ("FEASIBLE" if best_value is not None else "NO_SOLUTION")
    )
    if status == "OPTIMAL":
        budget.proven()
    if status == "OPTIMAL":
        true_bound = float(best_value.max_deviation)  # proven: the optimum is its own bound
    else:  # the d phase's bound, when the integer model is the true one
        true_bound = float(bound) / sc.scale if bound is not None and sc.exact else None
    return Outcome(
        best,
        best_value,
        status,
        _max_bound(true_bound, counted),
        iterations,
        notes,
        stopped_by=budget.stopped_by,
    )


def _neighbourhoods_first(ctx: _SearchContext, best: np.ndarray, best_value) -> Outcome:
    """Too big for a whole model within the limit: every start polished (levelled first at
    scale), then the neighbourhood search, then a last polish."""
    items, starts, budget = ctx.items, ctx.starts, ctx.budget
    counted, reserve, notes = ctx.counted, ctx.reserve, ctx.notes
    n_items = len(items.members)
    # Large-neighbourhood search. The search walks by _walk_key (leximax of the node deviations
    # after the first three levels), which improves when any of several nodes tied at the maximum
    # improves; the plan returned is the best by the true objective.
    limit = budget.limit
    # The first polish gets a share of the limit (it does most of the work), the last one a
    # reserve; in deterministic mode both are counted in work units.
    first_share = math.inf if limit is None else POLISH_SHARE * limit
    large = n_items >= LEVEL_ITEMS
    # Polish every start, the best first (the current placement has a fresh budget, so its
    # polish may beat the polished warm start); one shared share of the limit.
    # Large instances level each start first (with all the time but the reserve: cheap greedy
    # steps spend the move budget); smaller ones polish each start as it is, then, while the share
    # lasts, each start levelled (a different local optimum, sometimes better).
    share = budget.share(first_share)
    distinct = list({start.tobytes(): start for start in [*starts[:1], best, *starts[1:]]}.values())
    runs = (
        [(start, True) for start in distinct]
        if large
        else ([(start, False) for start in distinct] + [(start, True) for start in distinct])
    )
    for start, levelled in runs:
        if share.out_of_time():
            break
        if levelled:
            # At scale the levelling may use all the time but the final reserve, else the share.
            level_budget = (
                share
                if not large
                else (budget if limit is None else budget.share(budget.own_left() - reserve))
            )
            start = level(items, start, clock=level_budget)
        cand = polish(items, start, clock=share)
        value = items.evaluate(cand)
        if better(value, best_value):
            best, best_value = cand, value
    walk = _walk(ctx, best)
    if walk.proven:
        budget.proven()  # the whole model proved the plan
        return Outcome(
            walk.best, walk.value, "OPTIMAL", float(walk.value.max_deviation), walk.iterations, notes
        )
    if better(walk.value, best_value):
        best, best_value = walk.best, walk.value
    cand = polish(items, best, clock=budget)
    value = items.evaluate(cand)
    if better(value, best_value):
        best, best_value = cand, value
    return Outcome(
        best, best_value, "FEASIBLE", counted, walk.iterations, notes, stopped_by=budget.stopped_by
    )


@dataclass
class _Walked:
    best: np.ndarray
    value: tuple | None
    iterations: int
    proven: bool = False


def _walk(ctx: _SearchContext, start: np.ndarray) -> _Walked:
    """The large-neighbourhood search from ``start``, until the limit (less ``reserve``) runs out
    or the neighbourhoods have grown into the whole model and it is proven. Neighbourhoods take
    turns: a few whole nodes (:func:`_neighbourhood`), and every node with a few items
    (:func:`_item_neighbourhood`: items already moved, the heaviest, random ones; left out once
    such a model is too big to build, as at production scale, where a move budget of 1,000 makes
    the moved items alone too many). After ``WIDEN_AFTER`` neighbourhoods in a row without
    improvement they double in size: a local optimum of small neighbourhoods is rarely one of
    larger ones, and once they would hold every item-node pair the whole model is solved with what
    is left."""
    items, settings, budget, sc = ctx.items, ctx.settings, ctx.budget, ctx.sc
    n_pairs, rng, reserve, notes = ctx.n_pairs, ctx.rng, ctx.reserve, ctx.notes
    best, best_value = start.copy(), items.evaluate(start)
    here, here_key = start.copy(), _walk_key(items, start, best_value)
    base = NEIGHBOURHOOD_VARIABLES
    widening, stall, iterations, items_too_big = 1, 0, 0, False
    slice_ = max(0.05, (budget.limit or 10.0) * SLICE_SHARE)
    while not budget.out_of_time(reserve):
        width = base * widening
        if width >= n_pairs and n_pairs <= settings.full_model_variables:
            return _whole_model_walk(ctx, best, iterations)
        by_items = iterations % 2 == 0 and not items_too_big
        nodes, free = (
            _item_neighbourhood(items, here, rng, ITEM_NEIGHBOURHOOD_ITEMS * widening)
            if by_items
            else (_neighbourhood(items, here, rng, width), None)
        )
        if not _affordable(budget, _pairs_of(items, here, nodes, free)):
            if by_items:
                items_too_big = widening == 1  # the node neighbourhoods go on alone
            elif widening == 1:
                break  # the smallest neighbourhood is already too big a model: the polish goes on
            widening, stall = 1, 0  # building the wider one would take half of what is left
            continue
        # An item neighbourhood holds every node: its d is the true maximum, minimised alone
        # (a tie-break by the sum of deviations made these models ~10x slower to prove).
        sub = SubModel(items, sc, here, nodes, local=free is None, free=free)
        # Building a model takes real time that CP-SAT's work count does not see: charge it by
        # size (deterministically), so that a time limit in work units stays close to seconds.
        budget.spend(BUILD_WORK_PER_VARIABLE * sub.model.n_variables)
        values, _, _, _ = _solve_sub(sub, budget, settings, slice_ * width / base, notes)
        iterations += 1
        improved = False
        if values is not None:
            cand = sub.placement(values, here)
            value = items.evaluate(cand)
            key = _walk_key(items, cand, value)
            if value is not None and _key_less(key, here_key):
                here, here_key, improved = cand, key, True
                if better(value, best_value):
                    best, best_value = cand.copy(), value
        stall = 0 if improved else stall + 1
        if stall >= WIDEN_AFTER:
            if width >= settings.full_model_variables:
                break  # as wide as a model may be and nothing better: without a limit, the end
            widening, stall = widening * 2, 0
    return _Walked(best, best_value, iterations)


def _whole_model_walk(ctx: _SearchContext, best: np.ndarray, iterations: int) -> _Walked:
    """The walk's last step: the whole model from its best placement with all that is left but
    the reserve; proven when every phase was proven on exactly scaled data."""
    items, settings, budget, sc, reserve = ctx.items, ctx.settings, ctx.budget, ctx.sc, ctx.reserve
    best_value = items.evaluate(best)
    if not _affordable(budget, _pairs_to_decide(items, best, settings.full_model_variables)):
        return _Walked(best, best_value, iterations)
    slice_ = max(budget.left() - reserve, 1e-3)
    cand, st1, st2, _ = _solve_whole(ctx, best, slice_)
    value = None if cand is None else items.evaluate(cand)
    if better(value, best_value):
        best, best_value = cand, value
    proven = st1 == "OPTIMAL" and st2 == "OPTIMAL" and sc.exact and best_value is not None
    return _Walked(best, best_value, iterations + 1, proven)


def _solve_whole(ctx: _SearchContext, where: np.ndarray, slice_: float, first: float | None = None):
    """The whole model from ``where`` (its hint) within ``slice_`` (``first``: :func:`_solve_sub`):
    (its placement or None, status of the ``d`` phase, worst status of the later ones, bound on
    ``d`` in the model's units). Its ``d`` starts from what the move fit proved."""
    items, sc, budget = ctx.items, ctx.sc, ctx.budget
    sub = SubModel(items, sc, where, np.arange(items.capacities.size), free=_decided(items, where))
    sub.model.lb[sub.d] = max(sub.model.lb[sub.d], float(ctx.d_floor))
    # Building a model takes real time that CP-SAT's work count does not see: charge it by size.
    budget.spend(BUILD_WORK_PER_VARIABLE * sub.model.n_variables)
    values, st1, st2, bound = _solve_sub(sub, budget, ctx.settings, slice_, ctx.notes, first)
    return (None if values is None else sub.placement(values, where)), st1, st2, bound


def _fit(items: Items, sc: Scaled, budget: Budget) -> Fit:
    """The move fit from the items' homes, within ``FIT_SHARE`` of the limit (its unit) and
    ``FIT_MOST`` work units counted by its steps (what its memory needs, in either mode)."""
    amount = math.inf if budget.limit is None else FIT_SHARE * budget.limit
    return fit_moves(items, sc, budget.share(amount, most_work=FIT_MOST))


def _decided(items: Items, where: np.ndarray) -> np.ndarray:
    """The items a model must decide (a bool per item): every one but those of no load at home on
    an active node, which stay where they are in some optimal plan of every level (moving one
    changes no node's load and only adds a move and its state), unless rules tie items together
    (traffic, resources, spread) or it belongs to a split unit. Flights periods at 128 key groups
    per operator leave ~90 % of the key groups without load in an hour: their whole model is a
    tenth of the item-node pairs."""
    if items.traffic is not None or items.resources is not None or items.spread is not None:
        return np.ones(len(items.members), dtype=bool)
    at_home_active = (items.home >= 0) & (where == items.home) & items.active[where]
    return ~at_home_active | (items.item_load > 0)


def _pairs_to_decide(items: Items, where: np.ndarray, cap: int) -> int:
    """Item-node pairs of the whole model from ``where`` (the allowed pairs of the decided items,
    counted exactly only up to a few times ``cap``: beyond it the upper bound is enough)."""
    decided = np.flatnonzero(_decided(items, where))
    n_pairs = decided.size * items.capacities.size
    if n_pairs <= 4 * cap:
        n_pairs = int(items.allowed[decided].sum())
    return n_pairs


def _whole_model_fits(n_pairs: int, settings: SolveSettings, limit: float | None) -> bool:
    """Whether the whole model of ``n_pairs`` item-node pairs is expected to be solved within the
    ``limit``: its measured cost (``WHOLE_MODEL_WORK_PER_PAIR``) within ``WHOLE_MODEL_SHARE`` of it,
    and at most ``full_model_variables`` pairs in any case (memory, and no limit at all)."""
    if n_pairs > settings.full_model_variables:
        return False
    return limit is None or WHOLE_MODEL_WORK_PER_PAIR * n_pairs <= WHOLE_MODEL_SHARE * limit


def _pairs_of(items: Items, where: np.ndarray, nodes: np.ndarray, free: np.ndarray | None) -> int:
    """Item-node pairs of a neighbourhood's model (at most: some pairs may not be allowed)."""
    decided = np.isin(where, nodes) if free is None else np.isin(where, nodes) & free
    return int(decided.sum()) * nodes.size


def _item_neighbourhood(
    items: Items, where: np.ndarray, rng: np.random.Generator, n_free: int
) -> tuple[np.ndarray, np.ndarray]:
    """Every node that counts (active, or removing and holding items) with items free: those
    already moved (so that the move budget can be spent anew; ``n_free`` of them at random when
    there are more), and ``n_free`` more: the heaviest half (what the counting bound of
    :mod:`albic.solvers.balance_bound` needs to depart first) and random ones for the fine tuning. A node neighbourhood cannot trade a move between two nodes for one
    between two others; this one can."""
    n_nodes = items.capacities.size
    count = np.bincount(where, minlength=n_nodes)
    nodes = np.flatnonzero(items.active | (count > 0))
    free = np.zeros(len(items.members), dtype=bool)
    rows = np.arange(len(items.members))
    moved = np.flatnonzero(items.moves_at[rows, where] > 0)  # their moves may go elsewhere
    _take(free, rng.permutation(moved) if moved.size > n_free else moved, n_free)
    decided = np.flatnonzero(_decided(items, where))
    largest = decided[np.argsort(-items.item_load[decided], kind="stable")]
    _take(free, largest, (n_free + 1) // 2)
    _take(free, rng.permutation(decided), n_free - (n_free + 1) // 2)
    return nodes, free


def _take(free: np.ndarray, candidates: np.ndarray, count: int) -> None:
    """Mark the first ``count`` of ``candidates`` not free yet as free."""
    if count > 0:
        fresh = candidates[~free[candidates]]
        free[fresh[:count]] = True


def _counting_bound(items: Items) -> float:
    """The combinatorial lower bound of :mod:`albic.solvers.balance_bound` on ``D`` (key-group level:
    items moving as units and other restrictions only raise the optimum)."""

    return load_distance_bound(
        items.loads,
        items.current,
        items.capacities,
        items.removing,
        max_moves=items.max_moves,
        max_cost=items.max_cost,
        state_sizes=items.state_sizes,
    )


def _max_bound(a: float | None, b: float | None) -> float | None:
    known = [v for v in (a, b) if v is not None]
    return max(known) if known else None


# Neighbourhoods in a row without improvement before they double in size. On flights periods of
# 8 operators x 128 key groups (7-8 nodes, ~2,000 decided item-node pairs) a neighbourhood costs
# 0.02-0.1 work units, so at time_limit=1 the walk solves 10-20 of them: it widens once or twice,
# and where it is stuck from the start it reaches the whole model with what is left. The sweep:
# 4 / 8 / 16 give 2.338 % and the best plan on all 24 cases each (work 0.90 / 0.88 / 0.87 units).
WIDEN_AFTER = 8
# Items an item neighbourhood frees at first (besides those already moved); doubled as the walk
# widens. On the whole node set such a model's cost grows steeply with the items free (a flights
# hour, 8 operators x 128 key groups, 8 nodes, 5 moves: CP-SAT proved the heaviest 10 items'
# model in 0.001 deterministic seconds, 40 in 0.05, 80 in 0.24). The sweep: 8 / 16 / 32 give
# 2.338 %, best 23 / 24 / 23 of 24.
ITEM_NEIGHBOURHOOD_ITEMS = 16


def _affordable(budget: Budget, n_variables: int) -> bool:
    """Whether a model of ``n_variables`` item-node pairs may be built (building cannot be
    interrupted; :meth:`albic.planners.work.Budget.affordable`); when not, the polish goes on without it."""
    return budget.affordable(BUILD_ESTIMATE_PER_VARIABLE * n_variables)


def _walk_key(items: Items, where: np.ndarray, value: tuple | None):
    """The walk's order: the first three levels, then the leximax of the node deviations (every
    deviation sorted in decreasing order; it improves when any of several nodes tied at the
    maximum improves, where ``one_sided_deviations``, the fourth level, would not), then the
    levels after it (the remote traffic of ALBIC's witness, state moved) and moves."""
    if value is None:
        return None
    return (value[:3], np.sort(items.deviations(where))[::-1], value[4:])


def _key_less(a, b) -> bool:
    """Lexicographic over :func:`_walk_key`, with a float tolerance."""
    if a is None:
        return False
    if b is None:
        return True
    for x, y in zip(a[0], b[0]):
        if not same_figure(x, y):
            return x < y
    diff = a[1] - b[1]
    tol = 1e-9 * (1 + np.abs(b[1]))
    idx = np.flatnonzero(np.abs(diff) > tol)
    if idx.size:
        return bool(diff[idx[0]] < 0)
    for x, y in zip(a[2], b[2]):
        if not same_figure(x, y):
            return x < y
    return False


# -- the solver library ------------------------------------------------------------------------


def import_backend(backend: str) -> float:
    """Import the backend's library (and make a first, trivial solve), and return the seconds it
    took, which the time limit does not count: importing OR-Tools' CP-SAT takes ~0.7 s here (2-3 s
    under load; it imports pandas) and its first solve ~0.1 s more, once per process, which no
    time limit should be charged for."""
    start = time.perf_counter()
    _import_library(backend)
    return time.perf_counter() - start


_WARM: set[str] = set()


def _import_library(backend: str) -> None:
    if backend == "cpsat":
        import ortools.sat.python.cp_model as cp_model

        if backend not in _WARM:  # the first solve in a process also pays a one-time set-up
            model = cp_model.CpModel()
            model.add(model.new_int_var(0, 1, "x") >= 1)
            cp_model.CpSolver().solve(model)
            _WARM.add(backend)
    elif backend == "highs":
        import highspy  # noqa: F401
    elif is_pulp(backend):
        import pulp  # noqa: F401  (it imports highspy too, ~0.3 s)
    else:
        import ortools.linear_solver.pywraplp  # noqa: F401
