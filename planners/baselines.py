"""Baselines of the state-migration paper (Ding et al., section 6): Storm's default scheduler and
consistent hashing.

Both ignore load and state size; they are the yardsticks the migration-aware planners are measured
against ("CH aims to have the same number of tasks on each node, and migrate the minimum number of
tasks. The Storm scheduler is rather ad hoc, which simply allocates the same number of consecutive
tasks to each node").

Example: four key groups of one operator over two nodes
-------------------------------------------------------
>>> from albic.model import Node, KeyGroup, Snapshot
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

from albic.hashing import stable_hash
from albic.model import Plan, PlanStatus, Snapshot
from albic.planner import SEED_PARAMETER, Boolean, Interval, Planner, PlannerTags

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
            members = _key_order(snapshot, np.flatnonzero(arrays.operator_of == code))
            m = members.size
            bounds = (np.arange(n + 1) * m) // n  # floor(j*m/n); exact in integers
            # Position p lies in block j where bounds[j] <= p < bounds[j+1].
            block_of = np.searchsorted(bounds, np.arange(m), side="right") - 1
            node_of[members] = active[block_of]
            starts, stops = bounds[:-1].tolist(), bounds[1:].tolist()
            blocks[operator] = [
                [arrays.node_ids[j], start, stop]
                for j, start, stop in zip(active.tolist(), starts, stops)
            ]
        return self.result(
            snapshot, snapshot.arrays().assignment(node_of), status=PlanStatus.FEASIBLE,
            details={"blocks": blocks},
        )


def _key_order(snapshot: Snapshot, members: np.ndarray) -> np.ndarray:
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
            snapshot, snapshot.arrays().assignment(node_of), status=PlanStatus.FEASIBLE,
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
    """COLA as the ALBIC paper uses it (albic.txt section 5.3): a static re-optimisation.

    Balanced graph partitioning (METIS, ``solvers/partition.py``) of the whole key-group traffic
    graph into one part per active node, part weights proportional to the node capacities and
    vertices weighted by load; parts matched to nodes by the Hungarian method
    (``scipy.optimize.linear_sum_assignment``) to keep as much state in place as possible (a part
    is only matched to a node of the capacity it was sized for); then refined until the load
    distance is at most ``max_load_distance`` (percent of the mean, as ALBIC's maxLD): repeatedly
    the key group whose move from the most to the least utilised node (or onto the least from the
    most) lowers the load distance and loses the least local traffic moves, until the target is met
    or no move helps. No budget: that is its weakness, it moves whatever the re-optimisation says.

    A static optimiser is invoked when the current configuration misses its targets: when the
    current placement already meets ``max_load_distance`` and collocates at least as much traffic
    as the new one would, COLA keeps it (no moves). ``details``: ``parts`` (number of parts) and
    ``refinement_moves``.
    """

    name = "cola"
    parameters = {"max_load_distance": [Interval(float, 0)], **SEED_PARAMETER}

    def __init__(self, *, max_load_distance: float = 10.0, seed: int = 0) -> None:
        self.max_load_distance = max_load_distance
        self.seed = seed

    def tags(self) -> PlannerTags:
        return PlannerTags(deterministic=True, collocation=True)

    def _plan(self, snapshot: Snapshot) -> Plan:
        from scipy.optimize import linear_sum_assignment

        from albic import metrics
        from solvers.partition import balanced_partition

        arrays = snapshot.arrays()
        active = np.flatnonzero(arrays.active)
        caps = arrays.capacities[active]
        labels = balanced_partition(arrays.traffic, arrays.loads, active.size,
                                    target_shares=caps, seed=self.seed)
        kept = np.zeros((active.size, active.size))
        position = {int(n): j for j, n in enumerate(active.tolist())}
        for k, (p, here) in enumerate(zip(labels.tolist(), arrays.current.tolist())):
            if here in position:
                kept[p, position[here]] += arrays.state_sizes[k] + 1e-9
        mismatch = caps[:, None] != caps[None, :]
        _, target = linear_sum_assignment(np.where(mismatch, -1e300, kept), maximize=True)
        node_of = active[target][labels]
        refinement = _refine(snapshot, node_of, self.max_load_distance)
        current = arrays.current
        keep_current = (
            metrics.load_distance_pct(snapshot, current) <= self.max_load_distance
            and not arrays.removing[current].any()
            and metrics.collocation_factor(snapshot, current) >= metrics.collocation_factor(snapshot, node_of)
        )
        if keep_current:
            node_of, refinement = np.asarray(current), 0
        return self.result(snapshot, arrays.assignment(node_of), status=PlanStatus.FEASIBLE,
                           details={"parts": int(active.size), "refinement_moves": refinement})


def _refine(snapshot: Snapshot, node_of: np.ndarray, max_pct: float) -> int:
    """Greedy moves until the load distance is within ``max_pct`` or none helps (in place)."""
    from albic import metrics

    arrays = snapshot.arrays()
    sym = (arrays.traffic + arrays.traffic.T).tocsr()
    active = np.flatnonzero(arrays.active)
    moves = 0
    for _ in range(4 * len(arrays.key_group_ids) + 1):
        distance = metrics.load_distance(snapshot, node_of)
        if metrics.load_distance_pct(snapshot, node_of) <= max_pct:
            break
        u = metrics.utilisation(snapshot, node_of)
        hi = int(active[np.argmax(u[active])])
        lo = int(active[np.argmin(u[active])])
        best, best_key = None, None
        for k in np.flatnonzero(node_of == hi).tolist():
            trial = node_of.copy()
            trial[k] = lo
            after = metrics.load_distance(snapshot, trial)
            if after >= distance - 1e-12:
                continue
            row = slice(sym.indptr[k], sym.indptr[k + 1])
            nbr, rate = sym.indices[row], sym.data[row]
            loss = float(rate[node_of[nbr] == hi].sum() - rate[node_of[nbr] == lo].sum())
            key = (loss, after, k)
            if best_key is None or key < best_key:
                best, best_key = k, key
        if best is None:
            break
        node_of[best] = lo
        moves += 1
    return moves
__all__ += ["ColaPlanner"]
