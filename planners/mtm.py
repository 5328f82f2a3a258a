"""The optimal MTM-aware migration (state-migration paper, Definition 5.4): SSM's model, but the
target partitioning ``P'`` minimises ``c(P, P') + gamma * C[P']``, where ``C`` is the projected
migration cost that ``albic precompute`` (PMC on Spark) wrote to a table.

Reading chosen here:

- Candidates: for each of the table's partitionings ``Q`` for the snapshot's number of active
  nodes ``n'``, the cheapest partitioning that *snaps* to ``Q`` (every cut within the window of
  positions whose nearest block bound is ``Q``'s cut; with an uncoarsened table, ``Q`` itself) and
  keeps every node within the cap *under the snapshot's loads* (the table was computed for the
  loads given to ``albic precompute``; today's may differ), scored with ``C[Q]``; plus SSM's own
  optimum. Each candidate is one run of the SSM DP restricted to the windows. When SSM's
  partitioning is not in the table (e.g. a coarsened table, whose cuts lie on block boundaries)
  its ``C`` is that of its cuts snapped to the nearest block bounds (an estimate), and when that is
  not in the table either, the largest ``C`` of the candidates (pessimistic). Ties keep SSM's
  plan, so with ``gamma = 0`` the plan *is* SSM's.
- ``c(P, P')`` is the state actually moved from the snapshot's placement, with its fixed removing
  nodes (they keep nothing) -- the same matching SSM optimises.
- ``gamma=None`` uses the ``gamma`` the table was computed with.
- ``table=None`` (the default, so that the planner is usable without a precomputation): projected
  costs are all zero and the planner plans exactly as SSM; ``details["table"]`` is then ``None``.
- Several operators and no ``operator``: without a table, planned operator by operator
  (:mod:`albic.planners.per_operator`); with one, unsupported (a table is computed for one operator).
- Node counts outside the table's range: SSM's plan, status FEASIBLE, with ``details["fallback"]``
  saying why (the plan's summary line shows it).
- The table must fit the call: a table computed for another ``tau``, another ``gamma`` (when the
  call gives one), another operator or other key groups (ids in index order, when the table
  records them: ``albic precompute`` does) is refused with an
  :class:`~albic.base.errors.InvalidParameterError` naming both values; its projected costs would
  describe another problem.

Status: OPTIMAL only without a table (SSM's proof); with one FEASIBLE, since the candidate set is the
table's, not every partitioning.

Example (no table: SSM)
-----------------------
>>> from albic.core.model import Node, KeyGroup, Snapshot
>>> kgs = [KeyGroup(f"t{i}", "op", 1.0, 1.0, index=i) for i in range(4)]
>>> snap = Snapshot([Node("a"), Node("b")], kgs, {f"t{i}": "a" for i in range(4)})
>>> MTMPlanner(tau=0.0).plan(snap).details["intervals"]
{'a': [2, 4], 'b': [0, 2]}
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import numpy as np

from albic.base.errors import InvalidParameterError
from albic.base.formats import count
from albic.core.metrics import ABS_NOISE, REL_NOISE
from albic.core.model import PlanStatus, Snapshot
from albic.core.plan import Plan
from albic.core.planner import Interval, NoneValue, PlannerTags, predicate, unsupported
from albic.io.pmc import ProjectedCosts
from albic.io.pmc import read_pmc_table as read_table
from albic.planners.ssm import SSMPlanner, interval_problem, unsupported_reason
from albic.solvers.interval_dp import ssm_prepare, ssm_solve

__all__ = ["MTMPlanner", "ProjectedCosts", "read_table"]


def _window_mask(cuts: tuple[int, ...], near: np.ndarray, m: int) -> np.ndarray:
    """``allowed[x, y - 1]``: ``[x, y)`` goes from the window of one cut of ``cuts`` to the window
    of the next, a cut's window being the positions whose nearest block bound it is (0 and m are
    their own windows). So the solver picks the best partitioning that snaps to ``cuts``."""
    slot = np.full(m + 1, -1)
    slot[list(cuts)] = np.arange(1, len(cuts) + 1)
    window = slot[near]
    window[0], window[m] = 0, len(cuts) + 1
    window[1:m][near[1:m] == 0] = -1
    window[1:m][near[1:m] == m] = -1
    start = window[:m]
    return (start[:, None] >= 0) & (window[None, 1:] == start[:, None] + 1)


class MTMPlanner(SSMPlanner):
    """MTM-aware migration with a PMC table (Definition 5.4); see the module docstring."""

    name = "mtm"
    parameters = {
        **SSMPlanner.parameters,
        "table": [predicate(lambda v: isinstance(v, (str, os.PathLike)), "a path (str)"), NoneValue()],
        "gamma": [Interval(float, 0, 1), NoneValue()],
    }

    def __init__(
        self,
        *,
        tau: float = 0.2,
        operator: str | None = None,
        table: str | None = None,
        gamma: float | None = None,
    ) -> None:
        self.tau = tau
        self.operator = operator
        self.table = table
        self.gamma = gamma

    def tags(self) -> PlannerTags:
        return PlannerTags(exact=self.table is None, deterministic=True, interval=True, precompute=True)

    def _check_supported(self, snapshot: Snapshot) -> None:
        operators = self.planned_per_operator(snapshot)
        if operators and self.table is not None:
            raise unsupported(
                self,
                f"it has {len(operators)} operators {operators} and a PMC table "
                "is computed for one; name it with the 'operator' parameter",
            )
        if operators:
            return self.check_each_operator(snapshot, operators)
        reason = unsupported_reason(snapshot, self.operator)
        if reason:
            raise unsupported(self, reason)
        if self.table is not None:
            costs = read_table(self.table)
            m = interval_problem(snapshot, self.operator, self.tau).m
            if m != costs.tasks:
                raise unsupported(
                    self,
                    f"the table {self.table} was computed for {count(costs.tasks, 'task')}, "
                    f"the operator has {m}",
                )
            self._check_table_fits(snapshot, costs)

    def _check_table_fits(self, snapshot: Snapshot, costs: ProjectedCosts) -> None:
        """Refuse a table computed for another problem (module docstring)."""

        def refuse(what: str, table_value: object, call_value: object, fix: str) -> None:
            raise InvalidParameterError(
                f"mtm: the table {self.table} was computed for {what} {table_value!r}, this call has "
                f"{call_value!r}; {fix}"
            )

        if not np.isclose(costs.tau, self.tau, rtol=0, atol=ABS_NOISE):
            refuse(
                "tau",
                costs.tau,
                self.tau,
                f"plan with tau={costs.tau:g} or precompute with --tau {self.tau:g}",
            )
        if self.gamma is not None and not np.isclose(costs.gamma, self.gamma, rtol=0, atol=ABS_NOISE):
            refuse(
                "gamma",
                costs.gamma,
                self.gamma,
                f"leave gamma unset (the table's {costs.gamma:g}) or precompute with --gamma {self.gamma:g}",
            )
        problem = interval_problem(snapshot, self.operator, self.tau)
        if costs.operator is not None and costs.operator != problem.operator:
            refuse(
                "operator",
                costs.operator,
                problem.operator,
                f"plan with operator={costs.operator!r} or precompute for {problem.operator!r}",
            )
        if costs.key_groups:
            ids = [snapshot.key_groups[j].id for j in problem.members]
            if list(costs.key_groups) != ids:
                first = next((i for i, (a, b) in enumerate(zip(costs.key_groups, ids)) if a != b), None)
                if first is None:  # one list is a prefix of the other
                    refuse(
                        "key groups",
                        len(costs.key_groups),
                        len(ids),
                        "precompute the table for this snapshot's key groups",
                    )
                refuse(
                    f"key groups (position {first})",
                    costs.key_groups[first],
                    ids[first],
                    "precompute the table for this snapshot's key groups",
                )

    def _plan(self, snapshot: Snapshot) -> Plan:
        operators = self.planned_per_operator(snapshot)
        if operators:  # without a table (checked): each operator planned as SSM plans it
            return self.plan_each_operator(snapshot, operators)
        problem = interval_problem(snapshot, self.operator, self.tau)
        tables = ssm_prepare(problem.loads, problem.states, problem.owner, problem.cap)
        best = ssm_solve(tables, int(problem.active.size))
        if self.table is None:
            # Without a PMC table there is nothing to weigh the future with: this is SSM's plan,
            # and it says so (every table and figure reports it).
            return self._result_for(
                snapshot, problem, best, {"table": None, "fallback": "no PMC table: planned as SSM"}
            )
        costs = read_table(self.table)
        gamma = costs.gamma if self.gamma is None else self.gamma
        common = {"table": str(self.table), "gamma": float(gamma)}
        n = int(problem.active.size)
        if best is None:
            return self._result_for(snapshot, problem, None, common)
        if n not in costs.by_nodes:
            return self._result_for(
                snapshot,
                problem,
                best,
                {
                    **common,
                    "fallback": f"the table has no partitionings for {count(n, 'node')}; planned as SSM",
                },
                status=PlanStatus.FEASIBLE,
            )
        cuts_list, projected = costs.by_nodes[n]
        m = problem.m
        total = float(problem.states.sum())
        near = costs.nearest_bounds()
        best_score, best_solution, best_projected = None, None, None
        for cuts, c_value in zip(cuts_list, projected.tolist()):
            solution = ssm_solve(tables, len(cuts) + 1, _window_mask(cuts, near, m))
            if solution is None:
                continue  # no partitioning near this one fits today's loads
            score = (total - solution.gain) + gamma * c_value
            if best_score is None or score < best_score:
                best_score, best_solution, best_projected = score, solution, c_value
        ssm_cuts = tuple(lb for lb, _ in best.intervals[1:])
        ssm_cost = total - best.gain
        ssm_projected = costs.lookup(n, ssm_cuts)
        if ssm_projected is None:
            ssm_projected = costs.lookup(n, costs.snapped(ssm_cuts))
        if ssm_projected is None:
            ssm_projected = float(projected.max()) if len(projected) else 0.0
        ssm_score = ssm_cost + gamma * ssm_projected
        details = {**common, "candidates": len(cuts_list), "ssm_cost": float(ssm_cost)}
        if best_score is None or ssm_score <= best_score + REL_NOISE * max(1.0, abs(ssm_score)):
            return self._result_for(
                snapshot,
                problem,
                best,
                {**details, "chosen": "ssm", "projected_cost": float(ssm_projected)},
                status=PlanStatus.FEASIBLE,
            )
        return self._result_for(
            snapshot,
            problem,
            best_solution,
            {**details, "chosen": "table", "projected_cost": float(best_projected)},
            status=PlanStatus.FEASIBLE,
        )

    def evaluate(self, snapshot: Snapshot, assignment: Mapping[str, str]) -> tuple[float] | None:
        """Without a table, SSM's objective (the planner is exact then); with one, not defined."""
        if self.table is not None:
            raise NotImplementedError("MTMPlanner with a table is not exact; it has no evaluate()")
        return super().evaluate(snapshot, assignment)
