"""Generators of valid snapshots for tests: any planner's own tests can use them.

- :func:`random_snapshot` draws one snapshot from a ``numpy.random.Generator`` (scale-out, scale-in,
  heterogeneous capacities, several operators, traffic, all optional);
- :func:`interval_snapshot` and :func:`queueing_snapshot` draw snapshots for interval and
  queueing-model planners; :func:`replica_snapshot` Kafka-like partitions with replicas;
- :func:`suite_snapshots` is the fixed, seeded set of scenarios the conformance suite plans for
  given tags, :func:`small_snapshots` the ones small enough for brute force;
- :func:`snapshots` is a hypothesis strategy (``hypothesis`` is imported only when it is called).

Example
-------
>>> import numpy as np
>>> snap = random_snapshot(np.random.default_rng(0))
>>> snap.validate() is snap      # valid: validate() returns it
True
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from albic.core.model import KeyGroup, Node, Snapshot, Traffic
from albic.core.planner import PlannerTags

BRUTE_FORCE_MAX_KEY_GROUPS = 8
BRUTE_FORCE_MAX_NODES = 3


# -- generators -----------------------------------------------------------------------------------


class Size(NamedTuple):
    """How large a generated snapshot is: ``nodes`` in all, ``key_groups``, ``operators``."""

    nodes: int = 4
    key_groups: int = 16
    operators: int = 1


DEFAULT_SIZE = Size()
QUEUEING_SIZE = Size(4, 12, 2)


def random_snapshot(
    rng: np.random.Generator,
    size: Size = DEFAULT_SIZE,
    *,
    new_nodes: int = 0,
    removing: int = 0,
    heterogeneous: bool = False,
    traffic: bool = False,
    integer_loads: bool = False,
    period: str | int | None = None,
) -> Snapshot:
    """A random valid snapshot of ``size`` (:class:`Size`; a plain tuple will do).

    ``size.nodes`` nodes in all, of which the last ``new_nodes`` hold nothing (scale-out) and the first
    ``removing`` are marked for removal (scale-in). Key groups are split round-robin over
    ``size.operators`` operators (ids ``op{j}/{i}``, ``index`` = position within the operator), with
    skewed (log-normal) loads and state sizes, placed at random on the nodes that are not new.
    ``traffic`` adds edges from each key group of operator ``j`` to one or two of operator ``j+1``.
    """
    n_nodes, n_key_groups, n_operators = size
    if not 0 <= new_nodes < n_nodes or not 0 <= removing <= n_nodes - new_nodes:
        raise ValueError(
            f"need 0 <= new_nodes < n_nodes and removing <= n_nodes - new_nodes, got "
            f"n_nodes={n_nodes}, new_nodes={new_nodes}, removing={removing}"
        )
    if removing == n_nodes:
        raise ValueError("at least one node must stay active")
    capacities = rng.choice([1.0, 2.0, 3.0], size=n_nodes) if heterogeneous else np.ones(n_nodes)
    nodes = [Node(f"n{i}", capacity=float(capacities[i]), removing=i < removing) for i in range(n_nodes)]
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
    n_nodes: int = 4,
    per_node: int = 3,
    n_operators: int = 2,
    period: str = "balanced",
    *,
    cores: int | None = None,
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
    rng: np.random.Generator,
    size: Size = QUEUEING_SIZE,
    *,
    cores: int | Sequence[int] = 8,
    new_nodes: int = 0,
    removing: int = 0,
    need: tuple[float, float] = (0.3, 2.5),
    period: str | int | None = None,
) -> Snapshot:
    """A :func:`random_snapshot` (with traffic) for queueing-model planners (Elasticutor): nodes
    have ``cores`` cores (one number, or one per node), each key group an ``arrival_rate`` of
    10 x its load and a per-core ``service_rate`` that makes it need ``need`` (uniform) cores."""
    n_nodes, n_key_groups, _ = size
    base = random_snapshot(rng, size, traffic=True, new_nodes=new_nodes, removing=removing, period=period)
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
        "skewed": random_snapshot(rng, Size(4, 24), period="skewed"),
        "scale_out": random_snapshot(rng, Size(5, 30), new_nodes=1, period="scale_out"),
        "scale_in": random_snapshot(rng, Size(5, 30), removing=1, period="scale_in"),
        "heterogeneous": random_snapshot(rng, Size(4, 24), heterogeneous=True, period="heterogeneous"),
        "operators_with_traffic": random_snapshot(rng, Size(4, 32, 2), traffic=True, period="traffic"),
        "single_node": random_snapshot(rng, Size(1, 5), period="single_node"),
        "no_key_groups": random_snapshot(rng, Size(3, 0), period="no_key_groups"),
        "zero_load": _zero_load("zero_load"),
        "larger": random_snapshot(rng, Size(8, 120), new_nodes=1, removing=1, period="larger"),
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
            rng, n_nodes=5, n_tasks=30, new_nodes=1, period="interval_scale_out"
        ),
        "interval_scale_in": interval_snapshot(
            rng, n_nodes=5, n_tasks=30, removing=1, period="interval_scale_in"
        ),
        "interval_scale_out_and_in": interval_snapshot(
            rng, n_nodes=6, n_tasks=36, new_nodes=1, removing=2, period="interval_scale_out_and_in"
        ),
        # The state-migration paper's Table 3: 20 equal tasks on 13 + 7, a third node joins.
        "interval_table3": Snapshot(
            [Node("N1"), Node("N2"), Node("N3")],
            table3,
            {kg.id: ("N1" if kg.index < 13 else "N2") for kg in table3},
            period="interval_table3",
        ),
        # One task heavier than any node's cap: it must be allowed to sit alone.
        "interval_heavy_task": interval_snapshot(
            rng, n_nodes=3, n_tasks=12, loads=heavy, period="interval_heavy_task"
        ),
        "interval_larger": interval_snapshot(
            rng, n_nodes=8, n_tasks=120, new_nodes=1, removing=1, period="interval_larger"
        ),
        "single_node": interval_snapshot(rng, n_nodes=1, n_tasks=5, period="single_node"),
        "no_key_groups": interval_snapshot(rng, n_nodes=3, n_tasks=0, period="no_key_groups"),
        "zero_load": _zero_load("zero_load"),
    }


def _queueing_snapshots(seed: int) -> dict[str, Snapshot]:
    rng = np.random.default_rng(seed + 104729)
    idle = queueing_snapshot(rng, Size(3, 6, 1), period="queueing_idle")
    return {
        "queueing": queueing_snapshot(rng, period="queueing"),
        "queueing_one_operator": queueing_snapshot(rng, Size(4, 10, 1), period="queueing_one_operator"),
        "queueing_scale_out": queueing_snapshot(
            rng, Size(5, 15, 2), new_nodes=1, period="queueing_scale_out"
        ),
        "queueing_scale_in": queueing_snapshot(rng, Size(5, 15, 2), removing=1, period="queueing_scale_in"),
        "queueing_heterogeneous_cores": queueing_snapshot(
            rng, Size(4, 14, 2), cores=[2, 4, 8, 16], period="queueing_heterogeneous_cores"
        ),
        # Fewer cores than the executors need to be stable: no plan (INFEASIBLE) is the answer.
        "queueing_overloaded": queueing_snapshot(
            rng, Size(2, 8, 2), cores=2, need=(1.5, 3.0), period="queueing_overloaded"
        ),
        "queueing_single_node": queueing_snapshot(
            rng, Size(1, 5, 2), cores=32, period="queueing_single_node"
        ),
        "queueing_larger": queueing_snapshot(
            rng, Size(8, 60, 3), new_nodes=1, removing=1, period="queueing_larger"
        ),
        # Nothing arrives: every executor still needs a core to exist.
        "queueing_idle": Snapshot(
            idle.nodes,
            [dataclasses.replace(kg, arrival_rate=0.0) for kg in idle.key_groups],
            idle.assignment,
            period="queueing_idle",
        ),
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


def balanced_for(tags: PlannerTags) -> Snapshot:
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
            out.append(
                interval_snapshot(
                    rng, n_nodes=n_nodes, n_tasks=size, integer_loads=True, period=f"small{i}", **kinds
                )
            )
            continue
        out.append(
            random_snapshot(
                rng,
                Size(n_nodes, size),
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
        nodes = [Node(f"n{i}", capacity=draw(caps), removing=i < n_removing) for i in range(n_nodes)]
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
