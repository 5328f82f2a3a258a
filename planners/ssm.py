"""SSM, the optimal single-step state migration, and OMS, the optimal migration sequence (Ding et al.,
"Optimal operator state migration for elastic data stream processing", sections 4 and 5.1).

The model (Definition 4.1): one operator's ``m`` key groups with ``index`` ``0..m-1`` are the tasks;
each active node holds one contiguous run of them (nodes being removed may hold any tasks: their
state moves anyway). The plan cuts the tasks into contiguous intervals, one per active node
(``n'`` = the number of active nodes), such that every node's load is at most
``(1 + tau) * W / n'`` (``W`` = the operator's total load), minimising the state moved (sum of
``state_size`` of key groups whose node changes). Readings the paper leaves open:

- a single key group heavier than the cap may occupy a node alone (otherwise such snapshots would
  have no plan at all);
- ``allow_empty=True`` (the default): an active node may be left with an empty interval when that is
  cheapest and every cap holds (Definition 4.1 read literally bounds only the maximum load), e.g. a
  new node that nothing needs to move to;
- ``allow_empty=False``: the paper's reading -- every active node gets a non-empty interval, as
  Definition 4.1's ``I'_1 .. I'_n'`` and the SSM of its Figures 5-7 have it (a snapshot with fewer
  key groups than active nodes is then INFEASIBLE), and equally cheap plans are chosen as the
  paper's Figure 6 does (a node keeping state takes the longest interval the cap allows);
- ties: among the plans that move the least state, the one that moves the fewest key groups (so
  the current placement is kept whenever it fits and nothing cheaper exists), then the best balanced
  one (default) or the paper's choice (``allow_empty=False``); see :mod:`albic.solvers.interval_dp`.

The exact solver is :func:`albic.solvers.interval_dp.ssm` (O(m^2 n')). Key groups of other operators stay
where they are. ``details["intervals"]`` maps every active node to its ``[lb, ub)`` of indices (an
empty interval is written ``[m, m]``).

Supported snapshots: homogeneous active nodes (equal capacity), key-group indices exactly ``0..m-1``, and each active node's key groups a
contiguous index run. Without an ``operator``, a snapshot of several operators is planned operator
by operator (:mod:`albic.planners.per_operator`; ``details["per_operator"]``). Anything else raises :class:`~albic.base.errors.UnsupportedSnapshotError` naming
the rule.

Example: the paper's Table 3, first step (20 equal tasks on 13 + 7, a third node joins)
------------------------------------------------------------------------------------------
>>> from albic.core.model import Node, KeyGroup, Snapshot
>>> kgs = [KeyGroup(f"t{i}", "op", 1.0, 1.0, index=i) for i in range(20)]
>>> snap = Snapshot([Node("N1"), Node("N2"), Node("N3")], kgs,
...                 {f"t{i}": "N1" if i < 13 else "N2" for i in range(20)})
>>> plan = SSMPlanner(tau=0.4).plan(snap)
>>> plan.metrics["migration_cost"], plan.details["intervals"]
(4.0, {'N1': [4, 13], 'N2': [13, 20], 'N3': [0, 4]})

The paper's reading picks, among the plans that also move 4, the one of its Table 3 (9, 9, 2 tasks):

>>> SSMPlanner(tau=0.4, allow_empty=False).plan(snap).details["intervals"]
{'N1': [2, 11], 'N2': [11, 20], 'N3': [0, 2]}
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from albic.base.formats import count
from albic.core.model import PlanStatus, Snapshot
from albic.core.plan import Plan
from albic.core.planner import Interval, NoneValue, Planner, PlannerTags, predicate, unsupported
from albic.planners.per_operator import PerOperator
from albic.solvers.interval_dp import (
    IntervalSolution,
    balanced_partitionings,
    capacity_cap,
    count_balanced_partitionings,
    cut_mask,
    fits,
    match_gains,
    runs_of,
    ssm,
)

__all__ = ["SSMPlanner", "IntervalProblem", "interval_problem", "oms", "OMSResult"]


@dataclass(frozen=True)
class IntervalProblem:
    """One operator of a snapshot as arrays in index order (shared by SSM and MTM).

    ``members[j]`` is the key-group position (in snapshot order) of index ``j``; ``owner[j]`` is the
    node index holding it when that node is active, else ``-1``; ``active`` lists the active node
    indices in snapshot order; ``cap`` is the load cap of Definition 4.1.
    """

    operator: str | None
    members: np.ndarray
    loads: np.ndarray
    states: np.ndarray
    owner: np.ndarray
    active: np.ndarray
    cap: float

    @property
    def m(self) -> int:
        return int(self.members.size)


def unsupported_reason(snapshot: Snapshot, operator: str | None) -> str | None:
    """Why ``snapshot`` is outside the interval model, or ``None`` if it is inside."""
    arrays = snapshot.arrays()
    caps = arrays.capacities[arrays.active]
    if caps.size and not np.all(caps == caps[0]):
        return (
            "the interval model needs homogeneous nodes, but the active nodes have capacities "
            f"{sorted(set(caps.tolist()))}"
        )
    names = list(arrays.operator_names)
    if operator is None:
        if len(names) > 1:
            return f"it has {len(names)} operators {names}; name one with the 'operator' parameter"
        if not names:
            return None
        operator = names[0]
    elif operator not in names:
        return f"it has no operator {operator!r} (operators: {names})"
    code = names.index(operator)
    members = np.flatnonzero(arrays.operator_of == code)
    indices = arrays.indices[members]
    if not np.array_equal(np.sort(indices), np.arange(members.size)):
        return (
            f"the key groups of operator {operator!r} need indices exactly 0..{members.size - 1} "
            "(one each) to form task intervals"
        )
    ordered = members[np.argsort(indices)]
    holder = arrays.current[ordered]
    # An active node with two runs or more of the operator's indices (runs_of: maximal runs).
    run_node = runs_of(holder)[2]
    nodes, runs = np.unique(run_node[arrays.active[run_node]], return_counts=True)
    split = nodes[runs > 1]
    if split.size:
        node = int(split[0])
        at = np.flatnonzero(holder == node)
        return (
            f"node {arrays.node_ids[node]!r} holds the non-contiguous indices "
            f"{at.tolist()[:8]} of operator {operator!r}; the interval model needs each "
            "active node to hold one contiguous run"
        )
    return None


def interval_problem(snapshot: Snapshot, operator: str | None, tau: float) -> IntervalProblem:
    """The arrays of a supported snapshot (call :func:`unsupported_reason` first)."""
    arrays = snapshot.arrays()
    active = np.flatnonzero(arrays.active)
    names = list(arrays.operator_names)
    if operator is None and names:
        operator = names[0]
    if operator is None:
        members = np.zeros(0, dtype=np.int64)
    else:
        members = np.flatnonzero(arrays.operator_of == names.index(operator))
        members = members[np.argsort(arrays.indices[members])]
    holder = arrays.current[members]
    owner = np.where(arrays.active[holder], holder, -1).astype(np.int64)
    loads = np.asarray(arrays.loads[members], dtype=float)
    return IntervalProblem(
        operator=operator,
        members=members,
        loads=loads,
        states=np.asarray(arrays.state_sizes[members], dtype=float),
        owner=owner,
        active=active,
        cap=capacity_cap(float(loads.sum()), max(active.size, 1), tau),
    )


def place_intervals(
    snapshot: Snapshot, problem: IntervalProblem, solution: IntervalSolution
) -> tuple[np.ndarray, dict[str, list[int]]]:
    """Node of every key group and each active node's interval: intervals keeping state go to the
    node they keep it on; the others to the unused active nodes in snapshot order."""
    arrays = snapshot.arrays()
    node_of = np.array(arrays.current, copy=True)
    used = {o for o in solution.owners if o >= 0}
    free = iter([int(i) for i in problem.active if int(i) not in used])
    intervals: dict[str, list[int]] = {}
    for (lb, ub), kept_on in zip(solution.intervals, solution.owners):
        node = kept_on if kept_on >= 0 else next(free)
        node_of[problem.members[lb:ub]] = node
        intervals[arrays.node_ids[node]] = [int(lb), int(ub)]
    for node in free:
        intervals[arrays.node_ids[node]] = [problem.m, problem.m]
    ordered = {arrays.node_ids[i]: intervals[arrays.node_ids[i]] for i in problem.active}
    return node_of, ordered


def interval_cost(
    snapshot: Snapshot, problem: IntervalProblem, assignment: Mapping[str, str]
) -> float | None:
    """State moved by ``assignment`` if it keeps the interval model, else ``None``.

    Checked independently of the DP: other operators' key groups unmoved, nothing left on a removing
    node, each node's share of the operator contiguous, and within the cap or a single key group.
    """
    arrays = snapshot.arrays()
    ids = arrays.key_group_ids
    nodes = {n.id: n for n in snapshot.nodes}
    in_operator = set(problem.members.tolist())
    for k, kid in enumerate(ids):
        if k not in in_operator and assignment[kid] != snapshot.assignment[kid]:
            return None
    runs: dict[str, list[int]] = {}
    for j, k in enumerate(problem.members.tolist()):
        node = assignment[ids[k]]
        if nodes[node].removing:
            return None
        runs.setdefault(node, []).append(j)
    for positions in runs.values():
        if positions[-1] - positions[0] + 1 != len(positions):
            return None
        load = math.fsum(problem.loads[positions])
        if len(positions) > 1 and not fits(load, problem.cap):
            return None
    return math.fsum(
        kg.state_size for kg in snapshot.key_groups if assignment[kg.id] != snapshot.assignment[kg.id]
    )


class SSMPlanner(PerOperator, Planner):
    """Optimal single-step migration (SSM) of one operator's task intervals; see the module."""

    name = "ssm"
    parameters = {
        "tau": [Interval(float, 0)],
        "operator": [predicate(lambda v: isinstance(v, str) and v != "", "a non-empty str"), NoneValue()],
        "allow_empty": [predicate(lambda v: isinstance(v, bool), "True or False")],
    }
    #: Whether an active node may keep an empty interval; a parameter here, always True for a
    #: subclass that does not take it (the MTM-aware planner).
    allow_empty: bool = True

    def __init__(self, *, tau: float = 0.2, operator: str | None = None, allow_empty: bool = True) -> None:
        self.tau = tau
        self.operator = operator
        self.allow_empty = allow_empty

    def tags(self) -> PlannerTags:
        return PlannerTags(exact=True, deterministic=True, interval=True)

    def _check_supported(self, snapshot: Snapshot) -> None:
        operators = self.planned_per_operator(snapshot)
        if operators:
            return self.check_each_operator(snapshot, operators)
        reason = unsupported_reason(snapshot, self.operator)
        if reason:
            raise unsupported(self, reason)

    def _plan(self, snapshot: Snapshot) -> Plan:
        operators = self.planned_per_operator(snapshot)
        if operators:
            return self.plan_each_operator(snapshot, operators)
        problem = interval_problem(snapshot, self.operator, self.tau)
        solution = ssm(
            problem.loads,
            problem.states,
            problem.owner,
            problem.active.size,
            problem.cap,
            allow_empty=self.allow_empty,
        )
        return self._result_for(snapshot, problem, solution)

    def _result_for(
        self,
        snapshot: Snapshot,
        problem: IntervalProblem,
        solution: IntervalSolution | None,
        details: Mapping | None = None,
        status: PlanStatus = PlanStatus.OPTIMAL,
    ) -> Plan:
        common = {"operator": problem.operator, "cap": float(problem.cap), **(details or {})}
        if solution is None:
            if not self.allow_empty and problem.m < problem.active.size:
                reason = (
                    f"allow_empty=False gives every active node a non-empty interval, but there "
                    f"are only {count(problem.m, 'key group')} for "
                    f"{count(problem.active.size, 'active node')}"
                )
            else:
                reason = "no partitioning into the active nodes keeps every node within the cap"
            return self.result(
                snapshot,
                snapshot.assignment,
                status=PlanStatus.INFEASIBLE,
                details={**common, "reason": reason},
            )
        node_of, intervals = place_intervals(snapshot, problem, solution)
        cost = float(problem.states.sum() - solution.gain)
        return self.result(
            snapshot,
            snapshot.arrays().assignment(node_of),
            status=status,
            objective=max(cost, 0.0),
            details={**common, "intervals": intervals},
        )

    def evaluate(self, snapshot: Snapshot, assignment: Mapping[str, str]) -> tuple[float] | None:
        """``(migration cost,)`` if ``assignment`` keeps the interval model and caps (and, with
        ``allow_empty=False``, gives every active node a key group), else None."""
        operators = self.planned_per_operator(snapshot)
        if operators:
            return self.evaluate_each_operator(snapshot, assignment, operators)
        problem = interval_problem(snapshot, self.operator, self.tau)
        if not self.allow_empty and problem.m:  # no key groups: nothing to place
            held = {assignment[snapshot.key_groups[k].id] for k in problem.members.tolist()}
            if any(snapshot.nodes[i].id not in held for i in problem.active.tolist()):
                return None
        cost = interval_cost(snapshot, problem, assignment)
        return None if cost is None else (cost,)


# -- OMS: the optimal migration sequence ----------------------------------------------------------


@dataclass(frozen=True)
class OMSResult:
    """The cheapest sequence: the partitioning (interior cuts) after each step and each step's cost."""

    total_cost: float
    partitionings: list[tuple[int, ...]]
    costs: list[float]


def oms(
    loads: Sequence[float],
    states: Sequence[float],
    initial_cuts: Sequence[int],
    node_counts: Sequence[int],
    tau: float,
    *,
    max_states: int = 200_000,
    allow_empty: bool = True,
) -> OMSResult | None:
    """The optimal migration sequence for known node counts (section 5.1), or ``None`` if some step
    has no balanced partitioning.

    By Lemma 5.1 only partitionings matter, not which node holds which interval, so this is a
    shortest path over layers: layer ``i`` holds every balanced partitioning into at most (with
    ``allow_empty=False``: exactly) ``node_counts[i]`` intervals, and an edge costs ``c(P, P')`` (the optimal matching of the two
    partitionings). Exact, but the layers grow exponentially in ``m``: meant for small ``m``
    (``max_states`` bounds the layers' total size). Ties keep the first partitioning found.

    ``allow_empty`` as in :class:`SSMPlanner`: with False (the paper's reading) a step to ``n``
    nodes uses exactly ``n`` non-empty intervals.

    The paper's Table 3: 20 equal tasks, 13 + 7, then 3 and 4 nodes (tau = 0.4). The optimum is 6,
    e.g. 4/9/7 then 4/7/2/7, or as found here 8/5/7 (N1 keeps [0, 8) and sends 5 away) then
    1/7/5/7 (one more task moves); it needs no empty interval, so both readings find it:

    >>> r = oms([1.0] * 20, [1.0] * 20, (13,), [3, 4], 0.4)
    >>> r.total_cost, r.costs, r.partitionings
    (6.0, [5.0, 1.0], [(8, 13), (1, 8, 13)])
    >>> oms([1.0] * 20, [1.0] * 20, (13,), [3, 4], 0.4, allow_empty=False).total_cost
    6.0

    Step-by-step SSM pays 4 + 2 = 6 under the default reading (its tie-break toward balance picks
    4/9/7 first), but 4 + 4 = 8 under the paper's (it picks 9, 9, 2 as Table 3 does, and from there
    no 4-node plan moves fewer than 4): the gap that motivates MTM. The paper's own figures, 4 + 6
    and 5 + 4, are not optimal steps in this model (from 9, 9, 2 its 6, 6, 2, 6 moves 6 where 4 do).
    """
    loads = np.asarray(loads, dtype=float)
    states = np.asarray(states, dtype=float)
    layers = _balanced_layers(loads, node_counts, tau, max_states, allow_empty)
    if layers is None:
        return None
    m = loads.size
    total_cost, chosen = _cheapest_sequence(states, m, tuple(initial_cuts), layers)
    steps = [tuple(initial_cuts), *chosen]
    total_state = float(states.sum())
    costs = [
        float(_moved_state(states, total_state, m, a, cut_mask(b, m))[0]) for a, b in zip(steps, steps[1:])
    ]
    return OMSResult(total_cost, chosen, costs)


def _balanced_layers(
    loads: np.ndarray, node_counts: Sequence[int], tau: float, max_states: int, allow_empty: bool
) -> list[list[tuple[int, ...]]] | None:
    """Every balanced partitioning for each node count (see :func:`oms`), or ``None`` if a node
    count has none."""
    total_load = float(loads.sum())
    layers = []
    for n in node_counts:
        cap = capacity_cap(total_load, n, tau)
        k_min = 1 if allow_empty else n
        size = count_balanced_partitionings(loads, n, cap, k_min)
        if sum(len(layer) for layer in layers) + size > max_states:
            raise ValueError(
                f"OMS would enumerate more than max_states={max_states} partitionings "
                f"({size} for {count(n, 'node')} alone); use fewer tasks"
            )
        layer = list(balanced_partitionings(loads, n, cap, k_min))
        if not layer:
            return None
        layers.append(layer)
    return layers


def _moved_state(
    states: np.ndarray, total_state: float, m: int, cuts: tuple[int, ...], masks: np.ndarray
) -> np.ndarray:
    """``c(P, P')`` from the partitioning ``cuts`` to each partitioning of ``masks`` (``total_state``:
    the sum of ``states``)."""
    return total_state - match_gains(states, cut_mask(cuts, m), masks)


def _cheapest_sequence(
    states: np.ndarray, m: int, initial_cuts: tuple[int, ...], layers: list[list[tuple[int, ...]]]
) -> tuple[float, list[tuple[int, ...]]]:
    """The shortest path from ``initial_cuts`` through one partitioning of each layer: its cost and
    its partitionings."""
    previous, best, parents = [initial_cuts], np.zeros(1), []
    for layer in layers:
        best, parent = _cheapest_into(states, m, previous, best, layer)
        parents.append(parent)
        previous = layer
    end = int(np.argmin(best))
    path = [end]
    for parent in reversed(parents[1:]):
        path.append(int(parent[path[-1]]))
    path.reverse()
    return float(best[end]), [layers[i][p] for i, p in enumerate(path)]


def _cheapest_into(
    states: np.ndarray,
    m: int,
    previous: list[tuple[int, ...]],
    best: np.ndarray,
    layer: list[tuple[int, ...]],
) -> tuple[np.ndarray, np.ndarray]:
    """One step of the forward pass: the cheapest total cost of reaching each partitioning of
    ``layer`` from ``previous`` (reached at costs ``best``), and the previous partitioning it comes
    from (ties: the first)."""
    masks = np.array([cut_mask(c, m) for c in layer])
    total_state = float(states.sum())
    reach = np.full(len(layer), np.inf)
    parent = np.zeros(len(layer), dtype=np.int64)
    for i, cuts in enumerate(previous):
        total = best[i] + _moved_state(states, total_state, m, cuts, masks)
        better = total < reach
        reach = np.where(better, total, reach)
        parent = np.where(better, i, parent)
    return reach, parent
