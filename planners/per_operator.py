"""Planning a multi-operator snapshot operator by operator, with a planner that plans one operator.

SSM and MTM (the state-migration paper) plan one operator's task intervals. A snapshot of a
topology has several operators; when no ``operator`` is named, each operator's key groups are an
independent interval problem on the same nodes, so the snapshot is planned one operator at a time
(each with the planner's own rules, caps and tie-breaking) and the plans are merged: every key group
goes where its operator's plan puts it.

Readings chosen here:

- Each operator is balanced within its own cap ``(1 + tau) W_op / n'``; a node's total load is then
  within ``(1 + tau) W / n'`` as well (the caps add up), but the total can be balanced better than
  the per-operator caps require -- the paper's model has no cross-operator constraint, neither has
  this one.
- Status: OPTIMAL when every operator's plan is (the operators' costs are independent and add up,
  so the sum of optimal costs is optimal), FEASIBLE when one is only feasible, and INFEASIBLE
  (every key group kept where it is, as the contract requires) when one operator has no plan.
- ``details["per_operator"]`` says so and holds every operator's own details and status;
  ``details["operators"]`` lists them in snapshot order.

Naming an ``operator`` keeps the single-operator behaviour (other operators' key groups stay).

Example
-------
>>> from albic.core.model import Node, KeyGroup, Snapshot
>>> kgs = [KeyGroup(f"{op}{i}", op, 1.0, 1.0, index=i) for op in "ab" for i in range(4)]
>>> snap = Snapshot([Node("n1"), Node("n2")], kgs, {k.id: "n1" for k in kgs})
>>> from albic.planners.ssm import SSMPlanner
>>> plan = SSMPlanner(tau=0.0).plan(snap)
>>> plan.details["operators"], len(plan.moves)
(['a', 'b'], 4)
"""

from __future__ import annotations

from collections.abc import Mapping

from albic.base.errors import UnsupportedSnapshotError
from albic.core.model import PlanStatus, Snapshot
from albic.core.plan import Plan
from albic.core.planner import unsupported

__all__ = ["PerOperator"]


class PerOperator:
    """Mixin of the single-operator interval planners (SSM, MTM): plans a snapshot of several
    operators one operator at a time (module docstring). The planner needs an ``operator``
    parameter and ``clone``, ``_check_supported``, ``_plan``, ``evaluate`` and ``result`` of the
    planner contract; each operator is planned by a clone of the planner naming it.
    """

    operator: str | None

    def planned_per_operator(self, snapshot: Snapshot) -> list[str] | None:
        """The operators to plan one by one, or ``None`` when the self plans the snapshot as is
        (an ``operator`` is named, or the snapshot has at most one)."""
        names = list(snapshot.arrays().operator_names)
        if self.operator is not None or len(names) < 2:
            return None
        return names

    def check_each_operator(self, snapshot: Snapshot, operators: list[str]) -> None:
        """Raise :class:`~albic.base.errors.UnsupportedSnapshotError` if one operator is outside the model
        (the message names the operator and the rule)."""
        for name in operators:
            try:
                self.clone(operator=name)._check_supported(snapshot)
            except UnsupportedSnapshotError as err:  # re-raised naming the operator
                reason = str(err).split(": ", 1)[-1]
                raise unsupported(
                    self, f"planned operator by operator, operator {name!r}: {reason}"
                ) from None

    def plan_each_operator(self, snapshot: Snapshot, operators: list[str]) -> Plan:
        """One plan per operator (checked with :func:`check_each_operator` first), merged."""
        arrays = snapshot.arrays()
        operator_of = dict(zip(arrays.key_group_ids, (arrays.operator_names[c] for c in arrays.operator_of)))
        assignment = dict(snapshot.assignment)
        statuses, objectives, per_operator = [], [], {}
        for name in operators:
            sub = self.clone(operator=name)._plan(snapshot)
            status = PlanStatus(sub.status)
            statuses.append(status)
            objectives.append(sub.objective)
            per_operator[name] = {"status": status.value, "objective": sub.objective, **dict(sub.details)}
            if status not in (PlanStatus.INFEASIBLE, PlanStatus.NO_SOLUTION):
                assignment.update((k, node) for k, node in sub.assignment.items() if operator_of[k] == name)
        details = {
            "per_operator": True,
            "note": f"planned operator by operator ({len(operators)} operators, each an independent "
            "interval problem on the same nodes); name one with the 'operator' parameter to "
            "plan only it",
            "operators": list(operators),
            "by_operator": per_operator,
        }
        # One operator's plan made by another planner makes the merged plan a fallback too.
        fallbacks = [d["fallback"] for d in per_operator.values() if d.get("fallback")]
        if fallbacks:
            details["fallback"] = fallbacks[0]
        failed = [
            n for n, s in zip(operators, statuses) if s in (PlanStatus.INFEASIBLE, PlanStatus.NO_SOLUTION)
        ]
        if failed:
            details["reason"] = f"operator(s) {failed} have no plan within the cap; nothing is moved"
            return self.result(snapshot, snapshot.assignment, status=PlanStatus.INFEASIBLE, details=details)
        status = PlanStatus.OPTIMAL if all(s == PlanStatus.OPTIMAL for s in statuses) else PlanStatus.FEASIBLE
        objective = None if any(o is None for o in objectives) else float(sum(objectives))
        return self.result(snapshot, assignment, status=status, objective=objective, details=details)

    def evaluate_each_operator(
        self, snapshot: Snapshot, assignment: Mapping[str, str], operators: list[str]
    ) -> tuple[float] | None:
        """The sum of the operators' objectives (each judged on its own key groups' moves), or
        ``None`` if one operator's part breaks the model."""
        arrays = snapshot.arrays()
        operator_of = dict(zip(arrays.key_group_ids, (arrays.operator_names[c] for c in arrays.operator_of)))
        total = 0.0
        for name in operators:
            part = {
                k: (assignment[k] if operator_of[k] == name else node)
                for k, node in snapshot.assignment.items()
            }
            value = self.clone(operator=name).evaluate(snapshot, part)
            if value is None:
                return None
            total += value[0]
        return (total,)
