"""Baselines of the state-migration paper (Ding et al., section 6): Storm's default scheduler and
consistent hashing.

Both ignore load and state size; they are the yardsticks the migration-aware planners are measured
against ("CH aims to have the same number of tasks on each node, and migrate the minimum number of
tasks. The Storm scheduler is rather ad hoc, which simply allocates the same number of consecutive
tasks to each node").

Example: four key groups of one operator over two nodes
-------------------------------------------------------
>>> from albic.core.model import Node, KeyGroup, Snapshot
>>> snap = Snapshot([Node("n1"), Node("n2")],
...                 [KeyGroup(f"k{i}", "op", 1.0, index=i) for i in range(4)],
...                 {f"k{i}": "n1" for i in range(4)})
>>> plan = StormDefaultPlanner().plan(snap)
>>> [plan.assignment[f"k{i}"] for i in range(4)], plan.details
(['n1', 'n1', 'n2', 'n2'], {'blocks': {'op': [['n1', 0, 2], ['n2', 2, 4]]}})

Node n2 holds nothing, so consistent hashing treats it as new and moves to it exactly the key groups
whose ring owner it is:

>>> ch = ConsistentHashingPlanner().plan(snap)
>>> [(m.key_group, m.target) for m in ch.moves], ch.details
([('k1', 'n2'), ('k2', 'n2')], {'ring_points': 200})
"""

from __future__ import annotations

import numpy as np

from albic.core import metrics
from albic.core.hashing import stable_hash
from albic.core.model import PlanStatus, Snapshot
from albic.core.plan import Plan
from albic.core.planner import SEED_PARAMETER, Boolean, Interval, Planner, PlannerTags
from albic.solvers.partition import balanced_partition

__all__ = ["StormDefaultPlanner", "ConsistentHashingPlanner"]


# -- Storm's default scheduler --------------------------------------------------------------------


class StormDefaultPlanner(Planner):
    """Storm's default scheduler: each operator's key groups in equal consecutive blocks.

    For each operator separately, its key groups ordered by ``index`` (those without an index after
    the indexed ones, in snapshot order; equal indices also in snapshot order) are cut into ``n``
    consecutive blocks over the ``n`` active nodes in snapshot order: node ``j`` gets positions
    ``[floor(j*m/n), floor((j+1)*m/n))`` of the ``m`` key groups, so the larger blocks come last
    (10 over 3 nodes: 3, 3, 4). Faithful to the ad-hoc scheduler, block ``j`` goes to node ``j``
    whatever the current placement is: no matching of blocks to the nodes that already hold them,
    so a scaling step can move far more state than necessary. Load, state size and budgets are
    ignored. ``details["blocks"]`` lists ``[node id, start, stop]`` per operator (empty blocks
    included when an operator has fewer key groups than there are nodes).
    """

    name = "storm_default"

    def tags(self) -> PlannerTags:
        return PlannerTags(deterministic=True)

    def _plan(self, snapshot: Snapshot) -> Plan:
        arrays = snapshot.arrays()
        active = np.flatnonzero(arrays.active)
        n = active.size
        node_of = np.empty_like(arrays.current)
        blocks: dict[str, list[list]] = {}
        for code, operator in enumerate(arrays.operator_names):
            members = key_order(snapshot, np.flatnonzero(arrays.operator_of == code))
            m = members.size
            bounds = (np.arange(n + 1) * m) // n  # floor(j*m/n); exact in integers
            # Position p lies in block j where bounds[j] <= p < bounds[j+1].
            block_of = np.searchsorted(bounds, np.arange(m), side="right") - 1
            node_of[members] = active[block_of]
            starts, stops = bounds[:-1].tolist(), bounds[1:].tolist()
            blocks[operator] = [
                [arrays.node_ids[j], start, stop] for j, start, stop in zip(active.tolist(), starts, stops)
            ]
        return self.result(
            snapshot,
            snapshot.arrays().assignment(node_of),
            status=PlanStatus.FEASIBLE,
            details={"blocks": blocks},
        )


def key_order(snapshot: Snapshot, members: np.ndarray) -> np.ndarray:
    """``members`` (key-group positions, ascending) ordered by ``index``, unindexed ones last."""
    index = snapshot.arrays().indices[members]
    unindexed = index < 0
    # lexsort is stable and sorts by its last key first: indexed before unindexed, then by index;
    # ties (and all unindexed key groups) keep snapshot order.
    return members[np.lexsort((index, unindexed))]


# -- consistent hashing ---------------------------------------------------------------------------


def _hashes(texts) -> np.ndarray:
    return np.fromiter((stable_hash(t) for t in texts), dtype=np.uint64)


class ConsistentHashingPlanner(Planner):
    """Consistent hashing (Karger et al.) with capacity-weighted virtual nodes.

    The ring holds ``max(1, round(virtual_nodes * capacity))`` points per active node at
    ``blake2b(f"{seed}/{node_id}/{v}")`` (64 bits); when that would make the ring more than 4
    times larger or smaller than ``virtual_nodes`` per node, ``capacity`` is read relative to the
    mean active capacity instead (capacities are relative; this keeps the ring's memory and time
    bounded by ``4 * virtual_nodes`` per node whatever unit they are given in). A key group sits at
    ``blake2b(f"{seed}/{key_group_id}")`` and its ring owner is the node of the first point at or
    clockwise after it (wrapping around). So the ring balances key-group *counts* in proportion to
    capacity, never load or state size.

    Reading of "migrate the minimum number of tasks" on scaling: with ``rebuild=False`` the current
    placement is kept except that (i) key groups on removing nodes go to their ring owner among the
    active nodes and (ii) key groups whose ring owner is a *new* node (an active node holding no key
    group now) go to it. Nothing else moves: without scaling nothing moves, no key group moves
    between two old nodes, and when the current placement is the ring's own placement the result is
    exactly the ring placement over the new node set (adding or removing ring points only changes
    the owners of the arcs next to those points). With ``rebuild=True`` every key group goes to its
    ring owner: the static placement, e.g. to build an initial placement. Budgets are ignored.
    """

    name = "consistent_hashing"
    parameters = {
        "virtual_nodes": [Interval(int, 1, 10_000)],
        **SEED_PARAMETER,
        "rebuild": [Boolean()],
    }

    def __init__(self, *, virtual_nodes: int = 100, seed: int = 0, rebuild: bool = False) -> None:
        self.virtual_nodes = virtual_nodes
        self.seed = seed
        self.rebuild = rebuild

    def tags(self) -> PlannerTags:
        return PlannerTags(deterministic=True)

    def _plan(self, snapshot: Snapshot) -> Plan:
        arrays = snapshot.arrays()
        points, point_node = self._ring(snapshot)
        keys = _hashes(f"{self.seed}/{k}" for k in arrays.key_group_ids)
        owner = _ring_owner(points, point_node, keys)
        if self.rebuild:
            node_of = owner
        else:
            holds = np.bincount(arrays.current, minlength=len(arrays.node_ids)) > 0
            new = arrays.active & ~holds
            leave = arrays.removing[arrays.current] | new[owner]
            node_of = np.where(leave, owner, arrays.current)
        return self.result(
            snapshot,
            snapshot.arrays().assignment(node_of),
            status=PlanStatus.FEASIBLE,
            details={"ring_points": int(points.size)},
        )

    def _ring(self, snapshot: Snapshot) -> tuple[np.ndarray, np.ndarray]:
        """The sorted ring positions of the active nodes' points and the node index of each."""
        arrays = snapshot.arrays()
        active = np.flatnonzero(arrays.active)
        wanted = self.virtual_nodes * arrays.capacities[active]
        usual = self.virtual_nodes * active.size
        if not usual / 4 <= wanted.sum() <= 4 * usual:
            # Capacities are relative: in a unit far from 1 (all 1000, all 0.001) they would give
            # rings of millions of points or of one point per node; scale them by their mean.
            wanted = wanted * (usual / wanted.sum())
        counts = [max(1, round(w)) for w in wanted.tolist()]
        labels = (
            f"{self.seed}/{arrays.node_ids[i]}/{v}"
            for i, count in zip(active.tolist(), counts)
            for v in range(count)
        )
        positions = _hashes(labels)
        point_node = np.repeat(active, counts)
        # Stable, so two points at one position (a 2**-64 event) resolve by node order.
        order = np.argsort(positions, kind="stable")
        return positions[order], point_node[order]


def _ring_owner(points: np.ndarray, point_node: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """The node of the first ring point at or clockwise after each key position (wrapping)."""
    first = np.searchsorted(points, keys, side="left")
    return point_node[first % points.size]


# -- COLA (the static re-optimiser ALBIC compares against) ----------------------------------------


class ColaPlanner(Planner):
    """COLA (Khandekar et al., Middleware 2009) as the ALBIC paper describes and uses it
    (albic.txt sections 2.1 and 5): a static optimiser re-run from scratch every period.

    "It first puts all operators into one partition, and then gradually splits the partitions until
    a solution with a sufficient load balance is obtained. Splitting is done by a balanced graph
    partitioning algorithm": start from one partition holding every key group; repeatedly place the
    partitions on the active nodes (largest load first, each onto the node where it leaves the
    lowest utilisation -- longest-processing-time packing) and, while that placement's load
    distance exceeds ``max_load_distance`` (percent of the mean, as ALBIC's maxLD), bisect the
    heaviest partition with METIS (``solvers/partition.py``: vertices weighted by load, edges by
    traffic, so the bisection is balanced and cuts as little traffic as it can). Stops when the
    target is met or no partition can be split.

    Static means the current placement plays no part: partitions are placed wherever the packing
    puts them, so every period pays for the migrations of a fresh plan (the ALBIC paper: "COLA
    migrates close to 200 key groups per SPL"; ``plan.moves`` counts them). Reading chosen so that
    a plan is never worse than where it starts (and no moves on a balanced snapshot): when no
    node is removing, the fresh plan is applied only when it is better than the current placement
    on COLA's own goals, compared in this order: the excess of the load distance over
    ``max_load_distance``, the collocation factor (higher is better), the load distance; otherwise
    the current placement is kept (no moves). With a node removing, the fresh plan is always
    applied (it drains the node).

    ``details``: ``partitions`` (how many), ``splits`` (bisections made), ``kept_current``, and
    ``fresh_moves`` (the key groups the fresh plan moves, applied or not: what re-running COLA
    blindly every period would pay).

    Example: two communicating pairs on two nodes end up collocated
    ----------------------------------------------------------------
    >>> from albic.core.model import KeyGroup, Node, Snapshot, Traffic
    >>> kgs = [KeyGroup(k, k[0], 1.0, 10.0) for k in ("a1", "a2", "b1", "b2")]
    >>> snap = Snapshot([Node("n1"), Node("n2")], kgs, {"a1": "n1", "b1": "n2", "a2": "n1", "b2": "n2"},
    ...                 [Traffic("a1", "b1", 5.0), Traffic("a2", "b2", 5.0)])
    >>> plan = ColaPlanner().plan(snap)
    >>> plan.metrics["collocation_factor"], plan.metrics["load_distance"], plan.details["splits"]
    (1.0, 0.0, 1)
    """

    name = "cola"
    parameters = {"max_load_distance": [Interval(float, 0)], **SEED_PARAMETER}

    def __init__(self, *, max_load_distance: float = 10.0, seed: int = 0) -> None:
        self.max_load_distance = max_load_distance
        self.seed = seed

    def tags(self) -> PlannerTags:
        return PlannerTags(deterministic=True, collocation=True)

    def _plan(self, snapshot: Snapshot) -> Plan:

        arrays = snapshot.arrays()
        node_of, n_parts, splits = _cola(snapshot, self.max_load_distance, self.seed)
        current = np.asarray(arrays.current)
        fresh_moves = int((node_of != current).sum())
        kept = False
        if not arrays.removing.any():

            def goals(where):
                distance = metrics.load_distance_pct(snapshot, where)
                return (
                    max(distance - self.max_load_distance, 0.0),
                    -metrics.collocation_factor(snapshot, where),
                    distance,
                )

            kept = not metrics.lexicographically_less(goals(node_of), goals(current))
            if kept:
                node_of = current
        return self.result(
            snapshot,
            arrays.assignment(node_of),
            status=PlanStatus.FEASIBLE,
            details={
                "partitions": n_parts,
                "splits": splits,
                "kept_current": kept,
                "fresh_moves": fresh_moves,
            },
        )


def _cola(snapshot: Snapshot, max_pct: float, seed: int) -> tuple[np.ndarray, int, int]:
    """COLA's split-until-balanced loop: (node of each key group, partitions, bisections)."""

    arrays = snapshot.arrays()
    loads = np.asarray(arrays.loads, dtype=float)
    n_kg = loads.size
    parts = [np.arange(n_kg)] if n_kg else []
    sym = (arrays.traffic + arrays.traffic.T).tocsr()
    splits = 0
    while True:
        node_of = _pack(parts, loads, arrays)
        if not parts or metrics.load_distance_pct(snapshot, node_of) <= max_pct:
            break
        splittable = [p for p in parts if p.size > 1]
        if not splittable:
            break
        heaviest = max(splittable, key=lambda p: (float(loads[p].sum()), p.size, -int(p[0])))
        labels = balanced_partition(sym[heaviest][:, heaviest], loads[heaviest], 2, seed=seed)
        halves = [heaviest[labels == 0], heaviest[labels == 1]]
        if not halves[0].size or not halves[1].size:  # METIS kept it whole: halve by load order
            order = heaviest[np.argsort(-loads[heaviest], kind="stable")]
            halves = [order[0::2], order[1::2]]
        parts = [p for p in parts if p is not heaviest] + halves
        splits += 1
    return node_of, len(parts), splits


def _pack(parts: list[np.ndarray], loads: np.ndarray, arrays) -> np.ndarray:
    """Largest partition first, each onto the active node where the utilisation it leaves is
    lowest (ties: the node listed first)."""
    active = np.flatnonzero(arrays.active)
    caps = arrays.capacities[active]
    fill = np.zeros(active.size)
    node_of = np.asarray(arrays.current).copy()
    weight = [float(loads[p].sum()) for p in parts]
    for i in sorted(range(len(parts)), key=lambda i: (-weight[i], int(parts[i][0]))):
        j = int(np.argmin((fill + weight[i]) / caps))
        fill[j] += weight[i]
        node_of[parts[i]] = active[j]
    return node_of


__all__ += ["ColaPlanner"]
