"""The conformance suite every planner passes, and generators of valid snapshots for tests.

:func:`check_planner` is to albic what scikit-learn's ``check_estimator`` is to estimators: it runs
the general checks of the planner contract (design section 4) and the ones its tags ask for, and
raises one ``AssertionError`` listing every check that failed.

Example
-------
>>> from albic.testing import check_planner
>>> from albic import get_planner
>>> check_planner(get_planner("storm_default"))  # doctest: +SKIP
['valid_plans', 'no_mutation', 'deterministic', 'no_moves_when_balanced', 'pickles', ...]

The generators are reusable by any planner's own tests:

- :func:`random_snapshot` draws one snapshot from a ``numpy.random.Generator`` (scale-out, scale-in,
  heterogeneous capacities, several operators, traffic, all optional);
- :func:`suite_snapshots` is the fixed, seeded set of scenarios the suite plans;
- :func:`snapshots` is a hypothesis strategy (``hypothesis`` is imported only when it is called).
"""
from __future__ import annotations

import copy
import dataclasses
import itertools
import json
import math
import pickle
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from albic.checks import within_budget
from albic.errors import PlannerBugError, UnsupportedSnapshotError
from albic.io import plan_from_dict, snapshot_to_dict
from albic.model import KeyGroup, Node, Plan, PlanStatus, Snapshot, Traffic
from albic.planner import Planner

__all__ = [
    "check_planner",
    "brute_force_best",
    "albic_milp_objective",
    "random_snapshot",
    "balanced_snapshot",
    "queueing_snapshot",
    "suite_snapshots",
    "snapshots",
    "BRUTE_FORCE_MAX_KEY_GROUPS",
    "BRUTE_FORCE_MAX_NODES",
]

BRUTE_FORCE_MAX_KEY_GROUPS = 8
BRUTE_FORCE_MAX_NODES = 3
# Objectives of exact planners are compared with this relative slack (solvers' own tolerances).
_OBJECTIVE_RTOL = 1e-6
_OBJECTIVE_ATOL = 1e-6


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


def balanced_snapshot(
    n_nodes: int = 4, per_node: int = 3, n_operators: int = 2, period: str = "balanced"
) -> Snapshot:
    """A perfectly balanced snapshot that any sensible planner leaves alone.

    Homogeneous nodes, equal loads and state sizes, and for each operator an even consecutive split
    in node order (key groups ``0..per_node-1`` of every operator on ``n0``, and so on), so that
    index-order (interval) planners and count-based planners agree it is balanced too.
    """
    nodes = [Node(f"n{i}") for i in range(n_nodes)]
    key_groups, assignment = [], {}
    for op in range(n_operators):
        for index in range(n_nodes * per_node):
            kg = KeyGroup(f"op{op}/{index}", f"op{op}", 1.0, 100.0, index=index)
            key_groups.append(kg)
            assignment[kg.id] = f"n{index // per_node}"
    return Snapshot(nodes, key_groups, assignment, period=period)


def queueing_snapshot(
    rng: np.random.Generator, *, n_nodes: int = 4, cores: int = 8, n_key_groups: int = 12,
    n_operators: int = 2, period: str | int | None = None,
) -> Snapshot:
    """A :func:`random_snapshot` (with traffic) for queueing-model planners (Elasticutor): nodes
    have ``cores`` cores, each key group an ``arrival_rate`` of 10 x its load and a per-core
    ``service_rate`` that makes it need 1 to 3 cores."""
    base = random_snapshot(rng, n_nodes=n_nodes, n_key_groups=n_key_groups,
                           n_operators=n_operators, traffic=True, period=period)
    needs = rng.uniform(0.3, 2.5, size=n_key_groups)
    key_groups = [
        dataclasses.replace(kg, arrival_rate=10 * kg.load, service_rate=10 * kg.load / need)
        for kg, need in zip(base.key_groups, needs.tolist())
    ]
    nodes = [dataclasses.replace(n, cores=cores) for n in base.nodes]
    return Snapshot(nodes, key_groups, base.assignment, base.traffic, period=period)


def suite_snapshots(seed: int = 0) -> dict[str, Snapshot]:
    """The fixed scenarios the conformance suite plans, by name (deterministic under ``seed``)."""
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
        "zero_load": Snapshot(
            [Node("a"), Node("b")],
            [KeyGroup("op0/0", "op0", 0.0, 10.0, index=0), KeyGroup("op0/1", "op0", 0.0, 0.0, index=1)],
            {"op0/0": "a", "op0/1": "a"},
            period="zero_load",
        ),
        "larger": random_snapshot(rng, n_nodes=8, n_key_groups=120, new_nodes=1, removing=1, period="larger"),
        # Arrival and service rates and cores, for queueing-model planners (a generator of its
        # own, so that adding it left the other scenarios unchanged).
        "queueing": queueing_snapshot(np.random.default_rng(seed + 104729), period="queueing"),
    }


def small_snapshots(seed: int = 0, count: int = 12) -> list[Snapshot]:
    """Instances small enough for brute force (at most 8 key groups and 3 nodes)."""
    rng = np.random.default_rng(seed + 7919)
    out = []
    for i in range(count):
        n_nodes = int(rng.integers(2, BRUTE_FORCE_MAX_NODES + 1))
        kinds = dict(new_nodes=0, removing=0)
        if i % 4 == 1:
            kinds["new_nodes"] = 1
        elif i % 4 == 2 and n_nodes > 1:
            kinds["removing"] = 1
        out.append(
            random_snapshot(
                rng,
                n_nodes=n_nodes,
                n_key_groups=int(rng.integers(1, BRUTE_FORCE_MAX_KEY_GROUPS + 1)),
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


#: Planners whose exact check brute-forces the paper's objective rather than their own evaluate().
PAPER_OBJECTIVES: dict[str, Callable[..., tuple[float, ...] | None]] = {"milp": albic_milp_objective}


def _exact_objective(planner: Planner) -> Callable[[Snapshot, Mapping[str, str]], tuple[float, ...] | None]:
    """The objective the exact check brute-forces for ``planner``: the paper's when there is one
    (and the planner uses no option it does not model), else the planner's own ``evaluate``."""
    paper = PAPER_OBJECTIVES.get(planner.name)
    if paper is None or getattr(planner, "resource_caps", None):
        return planner.evaluate

    def evaluate(snapshot: Snapshot, assignment: Mapping[str, str]) -> tuple[float, ...] | None:
        return paper(snapshot, assignment, max_moves=getattr(planner, "max_moves", None),
                     max_migration_cost=getattr(planner, "max_migration_cost", None))

    return evaluate


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=_OBJECTIVE_RTOL, abs_tol=_OBJECTIVE_ATOL)


def _lexicographically_less(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    for x, y in zip(a, b):
        if not _close(x, y):
            return x < y
    return False


# -- the suite ------------------------------------------------------------------------------------


@dataclass
class _Run:
    """Plans of one planner on the suite's snapshots, shared by the checks."""

    planner: Planner
    seed: int
    snapshots: dict[str, Snapshot]
    plans: dict[str, Plan]
    unsupported: dict[str, str]


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


def _check_valid_plans(run: _Run) -> None:
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


def _fingerprint(snapshot: Snapshot) -> tuple[str, bytes]:
    return json.dumps(snapshot_to_dict(snapshot), sort_keys=True), pickle.dumps(snapshot)


def _check_no_mutation(run: _Run) -> None:
    """Planning leaves the snapshot exactly as it was."""
    # Fresh copies: the earlier checks may already have changed run.snapshots, and a planner that
    # changes a snapshot the same way twice would look innocent on a second look.
    for label, snapshot in suite_snapshots(run.seed).items():
        if label not in run.plans:
            continue
        pristine = copy.deepcopy(snapshot)
        before = _fingerprint(snapshot)
        _plan_or_fail(run.planner, snapshot, label)
        if _fingerprint(snapshot) != before or snapshot != pristine:
            _fail(f"planning snapshot {label!r} changed it")


def _check_deterministic(run: _Run) -> None:
    """A fresh planner with the same parameters (and seed) gives the same plan again."""
    if not run.planner.tags().deterministic:
        return
    for label, plan in run.plans.items():
        again = _plan_or_fail(run.planner.clone(), run.snapshots[label], label)
        if again is None or dict(again.assignment) != dict(plan.assignment) or again.status != plan.status:
            _fail(
                f"snapshot {label!r}: a second run of an identical planner gave another plan "
                "(tag the planner deterministic=False or give it a seed)"
            )


def _check_no_moves_when_balanced(run: _Run) -> None:
    """A perfectly balanced placement with no scaling is left alone."""
    snapshot = balanced_snapshot()
    plan = _plan_or_fail(run.planner, snapshot, "balanced")
    if plan is not None and plan.moves:
        _fail(f"moved {len(plan.moves)} key groups of an already balanced snapshot: {plan.moves[:3]}")


def _check_pickles(run: _Run) -> None:
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


def _check_json_round_trip(run: _Run) -> None:
    """Plans survive a JSON round trip exactly (plain Python types, no NaN)."""
    for label, plan in run.plans.items():
        try:
            back = plan_from_dict(json.loads(plan.to_json()))
        except Exception as err:
            _fail(f"the plan of snapshot {label!r} does not survive JSON: {type(err).__name__}: {err}")
        if back != plan:
            _fail(f"the plan of snapshot {label!r} changes in a JSON round trip")


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


def _check_budgets(run: _Run) -> None:
    """Planners tagged ``budget`` never move more key groups or more state than allowed."""
    if not run.planner.tags().budget:
        return
    for label, snapshot in run.snapshots.items():
        if label not in run.plans:
            continue
        for budget in _budgeted_variants(snapshot):
            plan = _plan_or_fail(run.planner.clone(**budget), snapshot, f"{label} with {budget}")
            if plan is None:
                continue
            cost = math.fsum(m.cost for m in plan.moves)
            over_cost = not within_budget(cost, budget.get("max_migration_cost"))
            if len(plan.moves) > budget.get("max_moves", math.inf) or over_cost:
                _fail(f"snapshot {label!r} with {budget}: {len(plan.moves)} moves costing {cost:g}")


def _check_exact(run: _Run) -> None:
    """Planners tagged ``exact`` reach the brute-force optimum of their own objective (the paper's,
    for those in :data:`PAPER_OBJECTIVES`; on scale-in instances also under a one-move budget,
    where draining has to choose)."""
    if not run.planner.tags().exact:
        return
    cases = []
    for snapshot in small_snapshots():
        cases.append((run.planner, snapshot, str(snapshot.period)))
        arrays = snapshot.arrays()
        draining = bool(arrays.removing[arrays.current].any())
        if draining and run.planner.name in PAPER_OBJECTIVES and run.planner.tags().budget:
            cases.append((run.planner.clone(max_moves=1), snapshot, f"{snapshot.period} with max_moves=1"))
    for planner, snapshot, label in cases:
        evaluate = _exact_objective(planner)
        plan = _plan_or_fail(planner, snapshot, label)
        if plan is None:
            continue
        best, witness = brute_force_best(snapshot, evaluate)
        if best is None:
            if plan.status is not PlanStatus.INFEASIBLE:
                _fail(f"snapshot {label!r}: brute force finds no feasible plan, status {plan.status}")
            continue
        value = evaluate(snapshot, plan.assignment)
        if value is None:
            _fail(f"snapshot {label!r}: the plan breaks the planner's own constraints (evaluate None)")
        if plan.status is not PlanStatus.OPTIMAL or _lexicographically_less(best, tuple(value)):
            _fail(
                f"snapshot {label!r}: plan has status {plan.status} and objective {value}, "
                f"brute force finds {best} with {witness}"
            )


def _check_interval(run: _Run) -> None:
    """Planners tagged ``interval`` give each node a contiguous index range per operator."""
    if not run.planner.tags().interval:
        return
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


_CHECKS: dict[str, Callable[[_Run], None]] = {
    "valid_plans": _check_valid_plans,
    "no_mutation": _check_no_mutation,
    "deterministic": _check_deterministic,
    "no_moves_when_balanced": _check_no_moves_when_balanced,
    "pickles": _check_pickles,
    "json_round_trip": _check_json_round_trip,
    "budgets": _check_budgets,
    "exact": _check_exact,
    "interval": _check_interval,
}


def check_planner(planner: Planner, *, seed: int = 0) -> list[str]:
    """Run the conformance suite on ``planner``; return the names of the checks run.

    Raises one ``AssertionError`` naming every failed check and why. The checks: valid plans on
    every scenario of :func:`suite_snapshots` (or a clear ``UnsupportedSnapshotError``), no mutation
    of the snapshot, determinism, no moves on a balanced snapshot, pickling, exact JSON round trip,
    and by tag: budgets (``budget``), brute-force optimality (``exact``), contiguous intervals
    (``interval``).
    """
    if not isinstance(planner, Planner):
        raise TypeError(f"check_planner takes a Planner instance, got {type(planner).__name__}")
    run = _Run(planner, seed, suite_snapshots(seed), {}, {})
    failures = []
    for name, check in _CHECKS.items():
        if name != "valid_plans" and not run.plans:
            break  # nothing to check further; valid_plans already failed
        try:
            check(run)
        except _CheckFailed as err:
            failures.append(f"{name}: {err}")
    if failures:
        listed = "\n".join(f"  - {f}" for f in failures)
        raise AssertionError(f"{planner!r} fails {len(failures)} conformance check(s):\n{listed}")
    return list(_CHECKS)
