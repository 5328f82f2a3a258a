"""The conformance suite every planner passes, and generators of valid snapshots for tests.

:func:`check_planner` is to albic what scikit-learn's ``check_estimator`` is to estimators: it runs
the general checks of the planner contract (design section 4) and the ones its tags promise, on
scenarios generated for what the tags say the planner supports, and raises one ``AssertionError``
listing every check that failed.

- Scenarios: ``interval`` planners get single-operator interval snapshots (homogeneous nodes,
  indices ``0..m-1``, each node holding one contiguous run), ``queueing`` planners snapshots with
  arrival and service rates and node cores, every other planner the general set (skewed loads,
  new and removing nodes, heterogeneous capacities, several operators with traffic, rates, edge
  cases). Every family has new and removing nodes; budgeted planners are planned under several
  budgets on each scenario.
- A check that a planner's tags promise and that ran on zero cases fails: a planner cannot pass a
  check by declining every snapshot it would apply to.
- The ``exact`` check compares the plan with brute force under a *reference objective* written
  here from the paper's definition (:func:`reference_objective`), not under the planner's own
  ``evaluate()``: a wrong objective in the planner would sit on both sides of that comparison.
  Other engineers' planners plug theirs in with :func:`register_reference_objective`; a planner
  without one falls back to its ``evaluate()`` and the report says so.

Example
-------
>>> from albic.testing import check_planner
>>> from albic import get_planner
>>> report = check_planner(get_planner("storm_default"))
>>> report.scenarios_run >= 8, report.cases["valid_plans"] == report.scenarios_run
(True, True)
>>> "valid_plans" in report  # the report is also the list of the checks that applied
True

The generators are reusable by any planner's own tests:

- :func:`random_snapshot` draws one snapshot from a ``numpy.random.Generator`` (scale-out, scale-in,
  heterogeneous capacities, several operators, traffic, all optional);
- :func:`interval_snapshot` and :func:`queueing_snapshot` draw snapshots for interval and
  queueing-model planners;
- :func:`suite_snapshots` is the fixed, seeded set of scenarios the suite plans for given tags;
- :func:`snapshots` is a hypothesis strategy (``hypothesis`` is imported only when it is called).
"""
from __future__ import annotations

import copy
import dataclasses
import itertools
import json
import math
import pickle
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from albic.checks import within_budget
from albic.errors import PlannerBugError, UnsupportedSnapshotError
from albic.io import plan_from_dict, snapshot_to_dict
from albic.model import KeyGroup, Node, Plan, PlanStatus, Snapshot, Traffic
from albic.planner import Planner, PlannerTags

__all__ = [
    "check_planner",
    "ConformanceReport",
    "brute_force_best",
    "albic_milp_objective",
    "random_snapshot",
    "interval_snapshot",
    "replica_snapshot",
    "balanced_snapshot",
    "queueing_snapshot",
    "suite_snapshots",
    "small_snapshots",
    "snapshots",
    "reference_objective",
    "register_reference_objective",
    "interval_objective",
    "milp_objective",
    "BRUTE_FORCE_MAX_KEY_GROUPS",
    "BRUTE_FORCE_MAX_NODES",
    "MIN_SCENARIOS",
]

BRUTE_FORCE_MAX_KEY_GROUPS = 8
BRUTE_FORCE_MAX_NODES = 3
#: Every registered planner must plan at least this many of its scenarios (tests/test_conformance).
MIN_SCENARIOS = 8
# Objectives of exact planners are compared with this relative slack (solvers' own tolerances).
_OBJECTIVE_RTOL = 1e-6
_OBJECTIVE_ATOL = 1e-6
# Load caps of the interval model hold up to float noise (the same slack as solvers.interval_dp).
_CAP_RTOL = 1e-9
_CAP_ATOL = 1e-9

Objective = Callable[[Snapshot, Mapping[str, str]], "tuple[float, ...] | None"]


# -- generators -----------------------------------------------------------------------------------


def random_snapshot(
    rng: np.random.Generator,
    *,
    n_nodes: int = 4,
    n_key_groups: int = 16,
    n_operators: int = 1,
    new_nodes: int = 0,
    removing: int = 0,
    heterogeneous: bool = False,
    traffic: bool = False,
    integer_loads: bool = False,
    period: str | int | None = None,
) -> Snapshot:
    """A random valid snapshot.

    ``n_nodes`` nodes in all, of which the last ``new_nodes`` hold nothing (scale-out) and the first
    ``removing`` are marked for removal (scale-in). Key groups are split round-robin over
    ``n_operators`` operators (ids ``op{j}/{i}``, ``index`` = position within the operator), with
    skewed (log-normal) loads and state sizes, placed at random on the nodes that are not new.
    ``traffic`` adds edges from each key group of operator ``j`` to one or two of operator ``j+1``.
    """
    if not 0 <= new_nodes < n_nodes or not 0 <= removing <= n_nodes - new_nodes:
        raise ValueError(
            f"need 0 <= new_nodes < n_nodes and removing <= n_nodes - new_nodes, got "
            f"n_nodes={n_nodes}, new_nodes={new_nodes}, removing={removing}"
        )
    if removing == n_nodes:
        raise ValueError("at least one node must stay active")
    capacities = rng.choice([1.0, 2.0, 3.0], size=n_nodes) if heterogeneous else np.ones(n_nodes)
    nodes = [
        Node(f"n{i}", capacity=float(capacities[i]), removing=i < removing) for i in range(n_nodes)
    ]
    loads = rng.lognormal(mean=1.0, sigma=1.0, size=n_key_groups)
    if integer_loads:
        loads = np.maximum(np.round(loads * 3), 1.0)
    states = np.round(rng.lognormal(mean=6.0, sigma=1.0, size=n_key_groups))
    key_groups = []
    for k in range(n_key_groups):
        op, index = k % n_operators, k // n_operators
        key_groups.append(
            KeyGroup(f"op{op}/{index}", f"op{op}", float(loads[k]), float(states[k]), index=index)
        )
    holders = [n.id for n in nodes[: n_nodes - new_nodes]]
    placed = rng.integers(0, len(holders), size=n_key_groups)
    assignment = {kg.id: holders[p] for kg, p in zip(key_groups, placed)}
    edges = []
    if traffic and n_operators > 1:
        by_op = [[kg for kg in key_groups if kg.operator == f"op{j}"] for j in range(n_operators)]
        for upstream, downstream in zip(by_op, by_op[1:]):
            for kg in upstream:
                for target in rng.choice(len(downstream), size=min(2, len(downstream)), replace=False):
                    edges.append(Traffic(kg.id, downstream[target].id, float(rng.integers(1, 50))))
    return Snapshot(nodes, key_groups, assignment, edges, period=period)


def replica_snapshot(
    rng: np.random.Generator,
    *,
    n_nodes: int = 5,
    n_partitions: int = 6,
    replication: int = 3,
    removing: int = 0,
    new_nodes: int = 0,
    period: str | int | None = None,
) -> Snapshot:
    """Kafka-like partitions: ``replication`` key groups per partition sharing one ``spread`` value,
    on distinct random nodes among those that are not new; the first ``removing`` nodes are
    leaving, the last ``new_nodes`` empty. Loads and state sizes are random integers.

    >>> snap = replica_snapshot(np.random.default_rng(0), removing=1, new_nodes=1)
    >>> len(snap.key_groups), snap.key_groups[0].spread, sum(n.removing for n in snap.nodes)
    (18, 'p0', 1)
    """
    holders = n_nodes - new_nodes
    if replication > holders:
        raise ValueError(f"replication {replication} needs at least as many non-new nodes, got {holders}")
    nodes = [Node(f"n{i}", removing=i < removing) for i in range(n_nodes)]
    key_groups, assignment = [], {}
    for p in range(n_partitions):
        load = float(rng.integers(1, 20))
        for r, node in enumerate(rng.choice(holders, size=replication, replace=False).tolist()):
            kg = KeyGroup(f"p{p}/{r}", "topic", load, float(rng.integers(10, 100)), spread=f"p{p}")
            key_groups.append(kg)
            assignment[kg.id] = f"n{node}"
    return Snapshot(nodes, key_groups, assignment, period=period)


def interval_snapshot(
    rng: np.random.Generator,
    *,
    n_nodes: int = 4,
    n_tasks: int = 16,
    new_nodes: int = 0,
    removing: int = 0,
    integer_loads: bool = False,
    loads: Sequence[float] | None = None,
    period: str | int | None = None,
) -> Snapshot:
    """A snapshot of the interval model (state-migration paper, Definition 4.1): one operator
    ``op0`` whose ``n_tasks`` key groups have indices ``0..n_tasks-1``, homogeneous nodes, and every
    node that is not new holding one contiguous run of tasks (cut at random; a run may be empty).

    The last ``new_nodes`` nodes hold nothing, the first ``removing`` are marked for removal
    (their runs move anyway). ``loads`` fixes the tasks' loads (default: skewed, log-normal).

    >>> import numpy as np
    >>> snap = interval_snapshot(np.random.default_rng(0), n_nodes=3, n_tasks=6, new_nodes=1)
    >>> [snap.assignment[f"op0/{j}"] for j in range(6)].count("n2")
    0
    """
    if not 0 <= new_nodes < n_nodes or not 0 <= removing <= n_nodes - new_nodes or removing == n_nodes:
        raise ValueError(
            f"need 0 <= new_nodes < n_nodes, removing <= n_nodes - new_nodes and one active node, "
            f"got n_nodes={n_nodes}, new_nodes={new_nodes}, removing={removing}"
        )
    nodes = [Node(f"n{i}", removing=i < removing) for i in range(n_nodes)]
    if loads is None:
        drawn = rng.lognormal(mean=1.0, sigma=1.0, size=n_tasks)
        loads = np.maximum(np.round(drawn * 3), 1.0) if integer_loads else drawn
    states = np.round(rng.lognormal(mean=6.0, sigma=1.0, size=n_tasks))
    key_groups = [
        KeyGroup(f"op0/{j}", "op0", float(loads[j]), float(states[j]), index=j) for j in range(n_tasks)
    ]
    holders = [n.id for n in nodes[: n_nodes - new_nodes]]
    cuts = np.sort(rng.integers(0, n_tasks + 1, size=len(holders) - 1))
    bounds = [0, *cuts.tolist(), n_tasks]
    order = rng.permutation(len(holders))  # which node holds which run
    assignment = {}
    for run, holder in enumerate(order.tolist()):
        for j in range(bounds[run], bounds[run + 1]):
            assignment[f"op0/{j}"] = holders[holder]
    return Snapshot(nodes, key_groups, assignment, period=period)


def balanced_snapshot(
    n_nodes: int = 4, per_node: int = 3, n_operators: int = 2, period: str = "balanced",
    *, cores: int | None = None,
) -> Snapshot:
    """A perfectly balanced snapshot that any sensible planner leaves alone.

    Homogeneous nodes, equal loads and state sizes, and for each operator an even consecutive split
    in node order (key groups ``0..per_node-1`` of every operator on ``n0``, and so on), so that
    index-order (interval) planners and count-based planners agree it is balanced too. With
    ``cores``, nodes have that many cores and every key group equal arrival and service rates that
    need one core (for queueing-model planners).
    """
    nodes = [Node(f"n{i}", cores=cores or 1) for i in range(n_nodes)]
    rates = {} if cores is None else {"arrival_rate": 5.0, "service_rate": 10.0}
    key_groups, assignment = [], {}
    for op in range(n_operators):
        for index in range(n_nodes * per_node):
            kg = KeyGroup(f"op{op}/{index}", f"op{op}", 1.0, 100.0, index=index, **rates)
            key_groups.append(kg)
            assignment[kg.id] = f"n{index // per_node}"
    return Snapshot(nodes, key_groups, assignment, period=period)


def queueing_snapshot(
    rng: np.random.Generator, *, n_nodes: int = 4, cores: int | Sequence[int] = 8,
    n_key_groups: int = 12, n_operators: int = 2, new_nodes: int = 0, removing: int = 0,
    need: tuple[float, float] = (0.3, 2.5), period: str | int | None = None,
) -> Snapshot:
    """A :func:`random_snapshot` (with traffic) for queueing-model planners (Elasticutor): nodes
    have ``cores`` cores (one number, or one per node), each key group an ``arrival_rate`` of
    10 x its load and a per-core ``service_rate`` that makes it need ``need`` (uniform) cores."""
    base = random_snapshot(rng, n_nodes=n_nodes, n_key_groups=n_key_groups, n_operators=n_operators,
                           traffic=True, new_nodes=new_nodes, removing=removing, period=period)
    needs = rng.uniform(*need, size=n_key_groups)
    key_groups = [
        dataclasses.replace(kg, arrival_rate=10 * kg.load, service_rate=10 * kg.load / need)
        for kg, need in zip(base.key_groups, needs.tolist())
    ]
    per_node = [cores] * n_nodes if isinstance(cores, int) else [int(c) for c in cores]
    nodes = [dataclasses.replace(n, cores=c) for n, c in zip(base.nodes, per_node)]
    return Snapshot(nodes, key_groups, base.assignment, base.traffic, period=period)


def _zero_load(period: str) -> Snapshot:
    return Snapshot(
        [Node("a"), Node("b")],
        [KeyGroup("op0/0", "op0", 0.0, 10.0, index=0), KeyGroup("op0/1", "op0", 0.0, 0.0, index=1)],
        {"op0/0": "a", "op0/1": "a"},
        period=period,
    )


def _general_snapshots(seed: int) -> dict[str, Snapshot]:
    rng = np.random.default_rng(seed)
    return {
        "skewed": random_snapshot(rng, n_nodes=4, n_key_groups=24, period="skewed"),
        "scale_out": random_snapshot(rng, n_nodes=5, n_key_groups=30, new_nodes=1, period="scale_out"),
        "scale_in": random_snapshot(rng, n_nodes=5, n_key_groups=30, removing=1, period="scale_in"),
        "heterogeneous": random_snapshot(
            rng, n_nodes=4, n_key_groups=24, heterogeneous=True, period="heterogeneous"
        ),
        "operators_with_traffic": random_snapshot(
            rng, n_nodes=4, n_key_groups=32, n_operators=2, traffic=True, period="traffic"
        ),
        "single_node": random_snapshot(rng, n_nodes=1, n_key_groups=5, period="single_node"),
        "no_key_groups": random_snapshot(rng, n_nodes=3, n_key_groups=0, period="no_key_groups"),
        "zero_load": _zero_load("zero_load"),
        "larger": random_snapshot(rng, n_nodes=8, n_key_groups=120, new_nodes=1, removing=1, period="larger"),
        # Arrival and service rates and cores, for queueing-model planners (a generator of its
        # own, so that adding it left the other scenarios unchanged).
        "queueing": queueing_snapshot(np.random.default_rng(seed + 104729), period="queueing"),
    }


def _interval_snapshots(seed: int) -> dict[str, Snapshot]:
    rng = np.random.default_rng(seed + 15485863)
    table3 = [KeyGroup(f"op0/{j}", "op0", 1.0, 1.0, index=j) for j in range(20)]
    heavy = [40.0, *np.round(rng.lognormal(1.0, 0.5, size=11), 2).tolist()]
    return {
        "interval_skewed": interval_snapshot(rng, n_nodes=4, n_tasks=24, period="interval_skewed"),
        "interval_scale_out": interval_snapshot(
            rng, n_nodes=5, n_tasks=30, new_nodes=1, period="interval_scale_out"),
        "interval_scale_in": interval_snapshot(
            rng, n_nodes=5, n_tasks=30, removing=1, period="interval_scale_in"),
        "interval_scale_out_and_in": interval_snapshot(
            rng, n_nodes=6, n_tasks=36, new_nodes=1, removing=2, period="interval_scale_out_and_in"),
        # The state-migration paper's Table 3: 20 equal tasks on 13 + 7, a third node joins.
        "interval_table3": Snapshot(
            [Node("N1"), Node("N2"), Node("N3")], table3,
            {kg.id: ("N1" if kg.index < 13 else "N2") for kg in table3}, period="interval_table3"),
        # One task heavier than any node's cap: it must be allowed to sit alone.
        "interval_heavy_task": interval_snapshot(
            rng, n_nodes=3, n_tasks=12, loads=heavy, period="interval_heavy_task"),
        "interval_larger": interval_snapshot(
            rng, n_nodes=8, n_tasks=120, new_nodes=1, removing=1, period="interval_larger"),
        "single_node": interval_snapshot(rng, n_nodes=1, n_tasks=5, period="single_node"),
        "no_key_groups": interval_snapshot(rng, n_nodes=3, n_tasks=0, period="no_key_groups"),
        "zero_load": _zero_load("zero_load"),
    }


def _queueing_snapshots(seed: int) -> dict[str, Snapshot]:
    rng = np.random.default_rng(seed + 104729)
    idle = queueing_snapshot(rng, n_nodes=3, n_key_groups=6, n_operators=1, period="queueing_idle")
    return {
        "queueing": queueing_snapshot(rng, period="queueing"),
        "queueing_one_operator": queueing_snapshot(
            rng, n_operators=1, n_key_groups=10, period="queueing_one_operator"),
        "queueing_scale_out": queueing_snapshot(
            rng, n_nodes=5, new_nodes=1, n_key_groups=15, period="queueing_scale_out"),
        "queueing_scale_in": queueing_snapshot(
            rng, n_nodes=5, removing=1, n_key_groups=15, period="queueing_scale_in"),
        "queueing_heterogeneous_cores": queueing_snapshot(
            rng, n_nodes=4, cores=[2, 4, 8, 16], n_key_groups=14, period="queueing_heterogeneous_cores"),
        # Fewer cores than the executors need to be stable: no plan (INFEASIBLE) is the answer.
        "queueing_overloaded": queueing_snapshot(
            rng, n_nodes=2, cores=2, n_key_groups=8, need=(1.5, 3.0), period="queueing_overloaded"),
        "queueing_single_node": queueing_snapshot(
            rng, n_nodes=1, cores=32, n_key_groups=5, period="queueing_single_node"),
        "queueing_larger": queueing_snapshot(
            rng, n_nodes=8, new_nodes=1, removing=1, n_key_groups=60, n_operators=3,
            period="queueing_larger"),
        # Nothing arrives: every executor still needs a core to exist.
        "queueing_idle": Snapshot(
            idle.nodes, [dataclasses.replace(kg, arrival_rate=0.0) for kg in idle.key_groups],
            idle.assignment, period="queueing_idle"),
    }


def suite_snapshots(seed: int = 0, tags: PlannerTags | None = None) -> dict[str, Snapshot]:
    """The fixed scenarios the conformance suite plans for a planner with ``tags``, by name
    (deterministic under ``seed``): interval snapshots for ``interval`` planners, snapshots with
    rates and cores for ``queueing`` planners, the general set otherwise (and for ``tags=None``)."""
    if tags is not None and tags.interval:
        return _interval_snapshots(seed)
    if tags is not None and tags.queueing:
        return _queueing_snapshots(seed)
    return _general_snapshots(seed)


def _balanced_for(tags: PlannerTags) -> Snapshot:
    if tags.interval:
        return balanced_snapshot(n_operators=1)
    if tags.queueing:
        return balanced_snapshot(cores=4)
    return balanced_snapshot()


def small_snapshots(seed: int = 0, count: int = 12, tags: PlannerTags | None = None) -> list[Snapshot]:
    """Instances small enough for brute force (at most 8 key groups and 3 nodes); interval
    snapshots for ``interval`` tags. Every fourth has a new node, every fourth a removing one."""
    rng = np.random.default_rng(seed + 7919)
    out = []
    for i in range(count):
        n_nodes = int(rng.integers(2, BRUTE_FORCE_MAX_NODES + 1))
        kinds = dict(new_nodes=0, removing=0)
        if i % 4 == 1:
            kinds["new_nodes"] = 1
        elif i % 4 == 2 and n_nodes > 1:
            kinds["removing"] = 1
        size = int(rng.integers(1, BRUTE_FORCE_MAX_KEY_GROUPS + 1))
        if tags is not None and tags.interval:
            out.append(interval_snapshot(rng, n_nodes=n_nodes, n_tasks=size, integer_loads=True,
                                         period=f"small{i}", **kinds))
            continue
        out.append(
            random_snapshot(
                rng,
                n_nodes=n_nodes,
                n_key_groups=size,
                heterogeneous=i % 3 == 0,
                integer_loads=True,
                period=f"small{i}",
                **kinds,
            )
        )
    return out


def snapshots(
    *,
    max_nodes: int = 5,
    max_key_groups: int = 12,
    max_operators: int = 2,
    removing: bool = True,
    new_nodes: bool = True,
    heterogeneous: bool = True,
    traffic: bool = True,
    integer_loads: bool = True,
) -> Any:
    """A hypothesis strategy of valid snapshots (ids ``n{i}`` and ``op{j}/{index}``).

    Integer loads (the default) keep brute-force comparisons free of floating-point ties.

    >>> from hypothesis import given
    >>> @given(snapshots(max_nodes=3))
    ... def test_my_planner(snapshot):
    ...     my_planner.plan(snapshot)
    """
    from hypothesis import strategies as st

    @st.composite
    def build(draw: Callable[[Any], Any]) -> Snapshot:
        n_nodes = draw(st.integers(1, max_nodes))
        n_new = draw(st.integers(0, n_nodes - 1)) if new_nodes else 0
        n_removing = draw(st.integers(0, n_nodes - 1)) if removing else 0
        caps = st.sampled_from([1.0, 2.0, 3.0]) if heterogeneous else st.just(1.0)
        # New nodes come last and removing ones first; a node may be both only if it is not the
        # last active one, which the ranges above already ensure.
        nodes = [
            Node(f"n{i}", capacity=draw(caps), removing=i < n_removing) for i in range(n_nodes)
        ]
        n_ops = draw(st.integers(1, max_operators))
        n_kg = draw(st.integers(0, max_key_groups))
        load = st.integers(0, 20).map(float) if integer_loads else st.floats(0, 1e6)
        key_groups = [
            KeyGroup(
                f"op{k % n_ops}/{k // n_ops}",
                f"op{k % n_ops}",
                draw(load),
                float(draw(st.integers(0, 1000))),
                index=k // n_ops,
            )
            for k in range(n_kg)
        ]
        holders = [n.id for n in nodes[: n_nodes - n_new]]
        assignment = {kg.id: draw(st.sampled_from(holders)) for kg in key_groups}
        edges = []
        if traffic and n_kg >= 2:
            ids = [kg.id for kg in key_groups]
            pairs = draw(st.lists(st.tuples(st.sampled_from(ids), st.sampled_from(ids)), max_size=6))
            edges = [Traffic(a, b, float(draw(st.integers(1, 9)))) for a, b in pairs if a != b]
        return Snapshot(nodes, key_groups, assignment, edges)

    return build()


# -- brute force ----------------------------------------------------------------------------------


def _allowed_targets(snapshot: Snapshot) -> list[list[str]]:
    """Per key group, the nodes it may end on: any active node, or where it is now."""
    active = [n.id for n in snapshot.nodes if not n.removing]
    out = []
    for kg in snapshot.key_groups:
        here = snapshot.assignment[kg.id]
        out.append(active if here in active else active + [here])
    return out


def brute_force_best(
    snapshot: Snapshot, evaluate: Callable[[Snapshot, Mapping[str, str]], tuple[float, ...] | None]
) -> tuple[tuple[float, ...] | None, dict[str, str] | None]:
    """The best value of ``evaluate`` over every assignment a plan may make, and one assignment
    reaching it; ``(None, None)`` when no assignment is feasible.

    Meant for instances of at most 8 key groups and 3 nodes (3^8 = 6561 assignments).
    """
    ids = [kg.id for kg in snapshot.key_groups]
    best: tuple[float, ...] | None = None
    best_assignment: dict[str, str] | None = None
    for targets in itertools.product(*_allowed_targets(snapshot)):
        assignment = dict(zip(ids, targets))
        value = evaluate(snapshot, assignment)
        if value is not None and (best is None or _lexicographically_less(value, best)):
            best, best_assignment = tuple(value), assignment
    return best, best_assignment


def albic_milp_objective(
    snapshot: Snapshot,
    assignment: Mapping[str, str],
    *,
    max_moves: int | None = None,
    max_migration_cost: float | None = None,
) -> tuple[float, ...] | None:
    """The ALBIC paper's MILP (albic.txt section 4.3.1) scored directly from its text, for brute
    force; independent of the ``milp`` planner's code on purpose.

    With ``u_i = load_i / capacity_i`` and ``mean = total load / active capacity``: constraint (3)
    bounds ``u_i - mean`` on every node (removing ones too), (4) bounds ``mean - u_i`` on active
    ones, and (2) is the budget; nothing may move onto a removing node (Lemma 4.1). Returns, to be
    compared lexicographically: ``d`` (the larger of the two bounds), the load left on removing
    nodes (the paper's ``sum_{n in B} load_n``), the key groups left there, ``(d - d_u) + (d -
    d_l)`` with ``d_u, d_l`` maximised, and the state moved; None when the assignment is infeasible.

    >>> from albic.model import KeyGroup, Node, Snapshot
    >>> snap = Snapshot([Node("r", removing=True), Node("a"), Node("b"), Node("c")],
    ...                 [KeyGroup(f"k{i}", "op", w, 1.0) for i, w in enumerate([1, 1, 1, 6])],
    ...                 {f"k{i}": "r" for i in range(4)})
    >>> albic_milp_objective(snap, {"k0": "r", "k1": "r", "k2": "r", "k3": "a"}, max_moves=1)
    (3.0, 3.0, 3.0, 6.0, 1.0)
    """
    nodes = {n.id: n for n in snapshot.nodes}
    load = {n.id: 0.0 for n in snapshot.nodes}
    moved_state: list[float] = []
    left_load: list[float] = []
    left = 0
    for kg in snapshot.key_groups:
        target = assignment[kg.id]
        if target != snapshot.assignment[kg.id]:
            if nodes[target].removing:
                return None
            moved_state.append(kg.state_size)
        if nodes[target].removing:
            left_load.append(kg.load)
            left += 1
        load[target] += kg.load
    if max_moves is not None and len(moved_state) > max_moves:
        return None
    state = math.fsum(moved_state)
    if not within_budget(state, max_migration_cost):
        return None
    active = [n for n in snapshot.nodes if not n.removing]
    mean = math.fsum(kg.load for kg in snapshot.key_groups) / math.fsum(n.capacity for n in active)
    upper = max(load[n.id] / n.capacity - mean for n in snapshot.nodes)   # (3)
    lower = max(mean - load[n.id] / n.capacity for n in active)           # (4)
    return (max(upper, lower), math.fsum(left_load), float(left), upper + lower, state)


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=_OBJECTIVE_RTOL, abs_tol=_OBJECTIVE_ATOL)


def _lexicographically_less(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    for x, y in zip(a, b):
        if not _close(x, y):
            return x < y
    return False


# -- reference objectives (from the papers, independent of the planners' code) --------------------


def interval_objective(planner: Planner) -> Objective:
    """SSM's problem (state-migration paper, Definition 4.1) for ``planner``'s ``tau``,
    ``operator`` and ``allow_empty``, written from the definition in plain Python.

    Feasible: key groups of other operators stay; nothing stays on or moves onto a removing node;
    each active node's share of the operator is one contiguous index run whose load is at most
    ``(1 + tau) * W / n'`` (``W`` the operator's load, ``n'`` the active nodes) unless it is a
    single task (a task heavier than the cap may sit alone, the reading of planners/ssm.py); with
    ``allow_empty=False`` (the paper's reading) every active node holds at least one task.
    Objective: ``(state moved,)``.
    """
    tau = float(getattr(planner, "tau"))
    operator = getattr(planner, "operator", None)
    allow_empty = getattr(planner, "allow_empty", True)

    def objective(snapshot: Snapshot, assignment: Mapping[str, str]) -> tuple[float] | None:
        name = operator
        if name is None:
            names = sorted({kg.operator for kg in snapshot.key_groups})
            name = names[0] if names else None
        removing = {n.id for n in snapshot.nodes if n.removing}
        active = [n.id for n in snapshot.nodes if not n.removing]
        runs: dict[str, list[tuple[int, float]]] = {}
        moved = []
        for kg in snapshot.key_groups:
            here, there = snapshot.assignment[kg.id], assignment[kg.id]
            if kg.operator != name:
                if there != here:
                    return None
                continue
            if there in removing:
                return None
            runs.setdefault(there, []).append((kg.index, kg.load))
            if there != here:
                moved.append(kg.state_size)
        total = math.fsum(load for run in runs.values() for _, load in run)
        cap = (1.0 + tau) * total / len(active)
        for run in runs.values():
            indices = sorted(i for i, _ in run)
            if indices[-1] - indices[0] + 1 != len(indices):
                return None
            load = math.fsum(v for _, v in run)
            if len(run) > 1 and load > cap * (1 + _CAP_RTOL) + _CAP_ATOL:
                return None
        if not allow_empty and len(runs) < len(active):
            return None
        return (math.fsum(moved),)

    return objective


def milp_objective(planner: Planner) -> Objective:
    """ALBIC's MILP for ``planner``'s budgets and ``resource_caps``: :func:`albic_milp_objective`
    (the paper's text), plus the resource caps ``planners/milp_model.py`` adds (on every active
    node, each capped resource at most ``cap * capacity``)."""
    max_moves = getattr(planner, "max_moves", None)
    max_cost = getattr(planner, "max_migration_cost", None)
    resource_caps = getattr(planner, "resource_caps", None) or {}

    def objective(snapshot: Snapshot, assignment: Mapping[str, str]) -> tuple[float, ...] | None:
        if resource_caps:
            used = {n.id: {r: 0.0 for r in resource_caps} for n in snapshot.nodes}
            for kg in snapshot.key_groups:
                for r in resource_caps:
                    used[assignment[kg.id]][r] += kg.resources.get(r, 0.0)
            for n in snapshot.nodes:
                if n.removing:
                    continue
                for r, cap in resource_caps.items():
                    if used[n.id][r] > cap * n.capacity * (1 + 1e-9) + 1e-9:
                        return None
        return albic_milp_objective(snapshot, assignment, max_moves=max_moves,
                                    max_migration_cost=max_cost)

    return objective


# Registry name -> factory of the reference objective for a planner instance (its parameters).
_REFERENCES: dict[str, Callable[[Planner], Objective]] = {
    "ssm": interval_objective,
    "mtm": interval_objective,  # exact only without a table, where it is SSM
    "milp": milp_objective,
}


def register_reference_objective(name: str, factory: Callable[[Planner], Objective]) -> None:
    """Use ``factory(planner)`` as the exact check's objective for planners named ``name``.

    The factory reads the planner's parameters and returns ``objective(snapshot, assignment)``:
    a tuple compared lexicographically (lower is better), or ``None`` when the assignment breaks
    a constraint. Write it from the paper's definition, not from the planner's code.
    """
    _REFERENCES[name] = factory


def reference_objective(planner: Planner) -> tuple[Objective, str]:
    """The objective the exact check compares ``planner``'s plans under, and where it comes from:
    the suite's reference for its registry name, else the planner's own ``evaluate()``."""
    factory = _REFERENCES.get(getattr(planner, "name", ""))
    if factory is not None:
        return factory(planner), f"albic.testing reference for {planner.name!r}"
    return planner.evaluate, "the planner's own evaluate() (no reference registered)"


# -- the suite ------------------------------------------------------------------------------------


class ConformanceReport(list):
    """What :func:`check_planner` ran: a list of the names of the checks that applied (so
    ``"exact" in report`` works), plus

    - ``scenarios``: every scenario's name mapped to ``"planned"`` or ``"declined: <reason>"``;
    - ``cases``: per check, on how many snapshots (or snapshot-and-budget pairs) it ran;
    - ``not_applicable``: the checks the planner's tags do not promise;
    - ``exact_reference``: what the exact check compared with (``None`` if it did not apply).
    """

    def __init__(self, planner: str, checks: list[str]) -> None:
        super().__init__(checks)
        self.planner = planner
        self.scenarios: dict[str, str] = {}
        self.cases: dict[str, int] = {}
        self.not_applicable: list[str] = []
        self.exact_reference: str | None = None

    @property
    def scenarios_run(self) -> int:
        """How many scenarios the planner planned (declined ones excluded)."""
        return sum(1 for v in self.scenarios.values() if v == "planned")

    def skipped(self) -> list[str]:
        """Checks that applied but ran on zero cases (check_planner fails on any)."""
        return [name for name in self if self.cases.get(name, 0) == 0]

    def summary(self) -> str:
        ran = ", ".join(f"{name} {self.cases.get(name, 0)}" for name in self)
        return (f"{self.planner}: {self.scenarios_run}/{len(self.scenarios)} scenarios planned; "
                f"cases per check: {ran}")


@dataclass
class _Run:
    """Plans of one planner on the suite's snapshots, shared by the checks."""

    planner: Planner
    seed: int
    snapshots: dict[str, Snapshot]
    plans: dict[str, Plan] = field(default_factory=dict)
    unsupported: dict[str, str] = field(default_factory=dict)
    exact_reference: str | None = None


class _CheckFailed(AssertionError):
    pass


def _fail(message: str) -> None:
    raise _CheckFailed(message)


def _plan_or_fail(planner: Planner, snapshot: Snapshot, label: str) -> Plan | None:
    """The plan, ``None`` when the planner declines the snapshot, a check failure on a bug."""
    try:
        return planner.plan(snapshot)
    except UnsupportedSnapshotError:
        return None
    except PlannerBugError as err:
        _fail(f"on snapshot {label!r}: {err}")
    except Exception as err:  # any other exception on a valid snapshot is a bug too
        _fail(f"on snapshot {label!r}: raised {type(err).__name__}: {err}")
    return None  # unreachable


def _check_valid_plans(run: _Run) -> int:
    """Every supported snapshot gets a plan that keeps the contract (checked by check_plan)."""
    for label, snapshot in run.snapshots.items():
        try:
            plan = run.planner.plan(snapshot)
        except UnsupportedSnapshotError as err:
            if not str(err):
                _fail(f"on snapshot {label!r}: UnsupportedSnapshotError without a message")
            run.unsupported[label] = str(err)
            continue
        except PlannerBugError as err:
            _fail(f"on snapshot {label!r}: {err}")
        except Exception as err:
            _fail(f"on snapshot {label!r}: raised {type(err).__name__}: {err}")
        run.plans[label] = plan
    if not run.plans:
        _fail("the planner declined every snapshot of the suite: " + "; ".join(run.unsupported.values()))
    return len(run.plans)


def _fingerprint(snapshot: Snapshot) -> tuple[str, bytes]:
    return json.dumps(snapshot_to_dict(snapshot), sort_keys=True), pickle.dumps(snapshot)


def _check_no_mutation(run: _Run) -> int:
    """Planning leaves the snapshot exactly as it was."""
    # Fresh copies: the earlier checks may already have changed run.snapshots, and a planner that
    # changes a snapshot the same way twice would look innocent on a second look.
    count = 0
    for label, snapshot in suite_snapshots(run.seed, run.planner.tags()).items():
        if label not in run.plans:
            continue
        pristine = copy.deepcopy(snapshot)
        before = _fingerprint(snapshot)
        _plan_or_fail(run.planner, snapshot, label)
        if _fingerprint(snapshot) != before or snapshot != pristine:
            _fail(f"planning snapshot {label!r} changed it")
        count += 1
    return count


def _check_deterministic(run: _Run) -> int:
    """A fresh planner with the same parameters (and seed) gives the same plan again.

    The planner contract keeps a ``time_limit`` as a wall-clock promise in every mode: a
    deterministic planner's work budget decides what is done, and a wall-clock guard may stop it
    first on a slow or loaded machine, saying so with ``details["stopped_by"] == "wall clock"``.
    Such a plan is not promised to be reproducible, so a pair with one is not compared (and not
    counted: if every pair was cut by the clock, the check ran on zero cases and fails)."""
    compared = 0
    for label, plan in run.plans.items():
        again = _plan_or_fail(run.planner.clone(), run.snapshots[label], label)
        if again is not None and "wall clock" in (plan.details.get("stopped_by"), again.details.get("stopped_by")):
            continue
        if again is None or dict(again.assignment) != dict(plan.assignment) or again.status != plan.status:
            _fail(
                f"snapshot {label!r}: a second run of an identical planner gave another plan "
                "(tag the planner deterministic=False or give it a seed)"
            )
        compared += 1
    return compared


def _check_no_moves_when_balanced(run: _Run) -> int:
    """A perfectly balanced placement with no scaling is left alone."""
    plan = _plan_or_fail(run.planner, _balanced_for(run.planner.tags()), "balanced")
    if plan is None:
        return 0
    if plan.moves:
        _fail(f"moved {len(plan.moves)} key groups of an already balanced snapshot: {plan.moves[:3]}")
    return 1


def _check_pickles(run: _Run) -> int:
    """Planner and plans survive pickling (Spark ships them to executors)."""
    try:
        clone = pickle.loads(pickle.dumps(run.planner))
    except Exception as err:
        _fail(f"the planner does not pickle: {type(err).__name__}: {err}")
    if clone.get_params() != run.planner.get_params():
        _fail("the unpickled planner has other parameters")
    for label, plan in run.plans.items():
        try:
            if pickle.loads(pickle.dumps(plan)) != plan:
                _fail(f"the plan of snapshot {label!r} changes when pickled")
        except _CheckFailed:
            raise
        except Exception as err:
            _fail(f"the plan of snapshot {label!r} does not pickle: {type(err).__name__}: {err}")
    return len(run.plans)


def _check_json_round_trip(run: _Run) -> int:
    """Plans survive a JSON round trip exactly (plain Python types, no NaN)."""
    for label, plan in run.plans.items():
        try:
            back = plan_from_dict(json.loads(plan.to_json()))
        except Exception as err:
            _fail(f"the plan of snapshot {label!r} does not survive JSON: {type(err).__name__}: {err}")
        if back != plan:
            _fail(f"the plan of snapshot {label!r} changes in a JSON round trip")
    return len(run.plans)


def _budgeted_variants(snapshot: Snapshot) -> Iterator[dict[str, Any]]:
    sizes = sorted(kg.state_size for kg in snapshot.key_groups if kg.state_size > 0)
    yield {"max_moves": 0}
    yield {"max_moves": 1}
    yield {"max_moves": 3}
    yield {"max_migration_cost": 0.0}
    if sizes:
        yield {"max_migration_cost": sizes[0]}
        yield {"max_migration_cost": 0.25 * sum(sizes)}
    yield {"max_moves": 2, "max_migration_cost": sizes[len(sizes) // 2] if sizes else 0.0}


def _check_budgets(run: _Run) -> int:
    """Planners tagged ``budget`` never move more key groups or more state than allowed."""
    count = 0
    for label, snapshot in run.snapshots.items():
        if label not in run.plans:
            continue
        for budget in _budgeted_variants(snapshot):
            plan = _plan_or_fail(run.planner.clone(**budget), snapshot, f"{label} with {budget}")
            if plan is None:
                continue
            count += 1
            cost = math.fsum(m.cost for m in plan.moves)
            over_cost = not within_budget(cost, budget.get("max_migration_cost"))
            if len(plan.moves) > budget.get("max_moves", math.inf) or over_cost:
                _fail(f"snapshot {label!r} with {budget}: {len(plan.moves)} moves costing {cost:g}")
    return count


def _exact_cases(run: _Run) -> Iterator[tuple[Planner, Snapshot, str]]:
    """The planner on every small snapshot; a budgeted planner also with tight budgets on some."""
    planner = run.planner
    small = small_snapshots(tags=planner.tags())
    for snapshot in small:
        yield planner, snapshot, str(snapshot.period)
    if planner.tags().budget:
        for snapshot in small[:6]:
            sizes = sorted(kg.state_size for kg in snapshot.key_groups)
            for budget in ({"max_moves": 1}, {"max_migration_cost": sizes[len(sizes) // 2] if sizes else 0.0}):
                yield planner.clone(**budget), snapshot, f"{snapshot.period} with {budget}"
        # Scale-in under one move: draining has to choose which load leaves first.
        for snapshot in small[6:]:
            arrays = snapshot.arrays()
            if bool(arrays.removing[arrays.current].any()):
                yield planner.clone(max_moves=1), snapshot, f"{snapshot.period} with {{'max_moves': 1}}"


def _check_exact(run: _Run) -> int:
    """Planners tagged ``exact`` reach the brute-force optimum of the suite's reference objective."""
    count = 0
    for planner, snapshot, label in _exact_cases(run):
        plan = _plan_or_fail(planner, snapshot, label)
        if plan is None:
            continue
        count += 1
        objective, run.exact_reference = reference_objective(planner)
        best, witness = brute_force_best(snapshot, objective)
        if best is None:
            if plan.status is not PlanStatus.INFEASIBLE:
                _fail(f"snapshot {label!r}: brute force finds no feasible plan, status {plan.status}")
            continue
        value = objective(snapshot, plan.assignment)
        if value is None:
            _fail(f"snapshot {label!r}: the plan breaks the model's constraints ({run.exact_reference} "
                  f"says infeasible); brute force finds {best} with {witness}")
        if plan.status is not PlanStatus.OPTIMAL or _lexicographically_less(best, tuple(value)):
            _fail(
                f"snapshot {label!r}: plan has status {plan.status} and objective {value}, "
                f"brute force finds {best} with {witness}"
            )
    return count


def _check_interval(run: _Run) -> int:
    """Planners tagged ``interval`` give each node a contiguous index range per operator."""
    for label, plan in run.plans.items():
        snapshot = run.snapshots[label]
        by_operator: dict[str, list[tuple[int, str]]] = {}
        for kg in snapshot.key_groups:
            if kg.index is not None:
                by_operator.setdefault(kg.operator, []).append((kg.index, plan.assignment[kg.id]))
        for operator, entries in by_operator.items():
            runs = [node for node, _ in itertools.groupby(n for _, n in sorted(entries))]
            if len(runs) != len(set(runs)):
                _fail(f"snapshot {label!r}, operator {operator!r}: node runs {runs} are not contiguous")
    return len(run.plans)


def _check_queueing(run: _Run) -> int:
    """Planners tagged ``queueing`` report ``details["cores"]`` (``{executor: {node: cores}}``)
    that fit: no node gives more cores than it has, a removing node none, and every executor gets
    more service than its arrivals (``cores * service_rate > arrival_rate``: a stable queue); a
    plan is INFEASIBLE only when the active cores cannot keep every executor stable, i.e. when
    ``sum(floor(arrival / service) + 1)`` exceeds them."""
    count = 0
    for label, plan in run.plans.items():
        snapshot = run.snapshots[label]
        nodes = {n.id: n for n in snapshot.nodes}
        available = sum(n.cores for n in snapshot.nodes if not n.removing)
        needed = sum(math.floor(kg.arrival_rate / kg.service_rate) + 1 for kg in snapshot.key_groups)
        count += 1
        if plan.status is PlanStatus.INFEASIBLE:
            if needed <= available:
                _fail(f"snapshot {label!r}: INFEASIBLE, but the executors need {needed} cores to be "
                      f"stable and the active nodes have {available}")
            continue
        cores = plan.details.get("cores")
        if not isinstance(cores, Mapping):
            _fail(f"snapshot {label!r}: details['cores'] is {cores!r}, expected {{executor: {{node: cores}}}}")
        given = {n: 0 for n in nodes}
        for kg in snapshot.key_groups:
            row = cores.get(kg.id, {})
            for node, k in row.items():
                if node not in nodes:
                    _fail(f"snapshot {label!r}: executor {kg.id!r} has cores on unknown node {node!r}")
                given[node] += k
            if sum(row.values()) * kg.service_rate <= kg.arrival_rate:
                _fail(f"snapshot {label!r}: executor {kg.id!r} gets {sum(row.values())} cores of "
                      f"{kg.service_rate:g}/s for {kg.arrival_rate:g}/s arriving: an unstable queue")
        for node, k in given.items():
            limit = 0 if nodes[node].removing else nodes[node].cores
            if k > limit:
                _fail(f"snapshot {label!r}: node {node!r} gives {k} cores, it has {limit}"
                      + (" (removing)" if nodes[node].removing else ""))
    return count


# name -> (check, which tag promises it; None: every planner)
def _check_spread(run: _Run) -> int:
    """Planners tagged ``spread`` plan replica snapshots (:func:`replica_snapshot`: scale-in,
    scale-out, under budgets when tagged ``budget``) and never put two key groups of one spread
    value on one node, counted here without the model's own checks."""
    rng = np.random.default_rng(run.seed + 104729)
    count = 0
    for i in range(4):
        snapshot = replica_snapshot(rng, n_nodes=5 + i % 2, removing=i % 2, new_nodes=(i + 1) % 2,
                                    period=f"replicas{i}")
        budgets = [{}, {"max_moves": 2}] if run.planner.tags().budget else [{}]
        for budget in budgets:
            label = f"replicas{i}" + (f" with {budget}" if budget else "")
            plan = _plan_or_fail(run.planner.clone(**budget), snapshot, label)
            if plan is None:
                _fail(f"snapshot {label!r}: declined, but the planner is tagged spread")
            held: dict[tuple[Any, str], str] = {}
            for kg in snapshot.key_groups:
                key = (kg.spread, plan.assignment[kg.id])
                if key in held:
                    _fail(f"snapshot {label!r}: {held[key]!r} and {kg.id!r} of spread {kg.spread!r} "
                          f"both on node {key[1]!r}")
                held[key] = kg.id
            count += 1
    return count


_CHECKS: dict[str, tuple[Callable[[_Run], int], str | None]] = {
    "valid_plans": (_check_valid_plans, None),
    "no_mutation": (_check_no_mutation, None),
    "deterministic": (_check_deterministic, "deterministic"),
    "no_moves_when_balanced": (_check_no_moves_when_balanced, None),
    "pickles": (_check_pickles, None),
    "json_round_trip": (_check_json_round_trip, None),
    "budgets": (_check_budgets, "budget"),
    "exact": (_check_exact, "exact"),
    "interval": (_check_interval, "interval"),
    "queueing": (_check_queueing, "queueing"),
    "spread": (_check_spread, "spread"),
}


def check_planner(
    planner: Planner, *, seed: int = 0, checks: Sequence[str] | None = None
) -> ConformanceReport:
    """Run the conformance suite on ``planner``; return a :class:`ConformanceReport`.

    Raises one ``AssertionError`` naming every failed check and why. The checks: valid plans on
    every scenario of :func:`suite_snapshots` for the planner's tags (or a clear
    ``UnsupportedSnapshotError``), no mutation of the snapshot, no moves on a balanced snapshot,
    pickling, exact JSON round trip, and by tag: determinism (``deterministic``), budgets
    (``budget``), brute-force optimality under the reference objective (``exact``), contiguous
    intervals (``interval``), cores that fit (``queueing``), replicas on distinct nodes
    (``spread``). A check that applies and ran on zero cases fails. ``checks`` runs only the named checks (``valid_plans`` always runs: the others
    need its plans), e.g. to test one check quickly.
    """
    if not isinstance(planner, Planner):
        raise TypeError(f"check_planner takes a Planner instance, got {type(planner).__name__}")
    unknown = sorted(set(checks or ()) - set(_CHECKS))
    if unknown:
        raise ValueError(f"unknown conformance checks {unknown}; the checks: {list(_CHECKS)}")
    tags = planner.tags()
    run = _Run(planner, seed, suite_snapshots(seed, tags))
    applies = [name for name, (_, tag) in _CHECKS.items() if (tag is None or getattr(tags, tag))
               and (checks is None or name == "valid_plans" or name in checks)]
    report = ConformanceReport(getattr(planner, "name", type(planner).__name__), applies)
    report.not_applicable = [name for name in _CHECKS if name not in applies]
    failures = []
    for name in applies:
        if name != "valid_plans" and not run.plans:
            break  # nothing to check further; valid_plans already failed
        try:
            report.cases[name] = _CHECKS[name][0](run)
            if report.cases[name] == 0:
                _fail("ran on zero cases: the planner declined every snapshot this check needs "
                      f"({'; '.join(sorted(set(run.unsupported.values()))) or 'none declined'})")
        except _CheckFailed as err:
            failures.append(f"{name}: {err}")
    report.scenarios = {
        label: "planned" if label in run.plans else f"declined: {run.unsupported.get(label, '?')}"
        for label in run.snapshots
    }
    report.exact_reference = run.exact_reference
    if failures:
        listed = "\n".join(f"  - {f}" for f in failures)
        raise AssertionError(f"{planner!r} fails {len(failures)} conformance check(s):\n{listed}")
    return report
