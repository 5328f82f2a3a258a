"""Consistent grouping (CG): virtual workers moved between workers by worker delegation.

From the consistent-grouping paper (sections 2 and 5): messages are spread over many equal-sized
*virtual workers* by PORC; virtual workers are mapped to workers; each worker watches its own load
and signals *busy* or *idle* upstream; the source keeps two FCFS queues of busy and idle workers and
pairs every removal with an addition, moving one virtual worker from a busy worker to an idle one.
The number of virtual workers never changes.

Two faces of the same mechanism (both use :class:`Delegation`):

- :class:`ConsistentGroupingRouter` routes a message stream inside the queueing simulation
  (:func:`albic.solvers.supermarket.simulate`), where reports arrive piggybacked on acknowledgements, late.
- :class:`ConsistentGroupingPlanner` (registry ``consistent_grouping``) plans a :class:`Snapshot`:
  its key groups are the virtual workers and its nodes the workers.

Example
-------
>>> from albic.core.model import Node, KeyGroup, Snapshot
>>> snap = Snapshot([Node("big", capacity=3.0), Node("small")],
...                 [KeyGroup(f"v{i}", "op", 1.0) for i in range(8)],
...                 {f"v{i}": ("big" if i < 4 else "small") for i in range(8)})
>>> plan = ConsistentGroupingPlanner().plan(snap)
>>> sorted(plan.assignment.values()).count("big")
6

Readings for snapshots (the paper describes a running stream, not a period's statistics):

- A node's *offered utilisation* is ``load * u_i / mean``: its utilisation relative to the cluster
  mean, scaled to the cluster's nominal ``load`` (0.8, as in the paper's experiments), so the
  paper's thresholds apply unchanged: busy above ``busy`` (0.85), idle below ``idle`` (0.75).
- FCFS order on a snapshot, which has no arrival times: busy nodes queue most-utilised first, idle
  ones least-utilised first; a busy node gives away its first key group (snapshot order) whose move
  does not make the receiver busy (virtual workers are equal-sized in the paper; key groups of real
  snapshots are not, so a move that would just swap the roles is skipped).
- Scaling: key groups on removing nodes go to the active nodes furthest below their capacity share,
  and a new node (one holding no key group) receives key groups from the nodes furthest above their
  share until it reaches its own share; nothing moves between the existing nodes in such a period.
- Budgets (``max_moves``, ``max_migration_cost``) stop the moves when spent.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator

import numpy as np

from albic.base.errors import InvalidParameterError
from albic.core import metrics
from albic.core.model import PlanStatus, Snapshot
from albic.core.plan import Plan
from albic.core.planner import BUDGET_PARAMETERS, Interval, Planner, PlannerTags, planner_name
from albic.planners.partitioners import power_of_random_choices

__all__ = ["Delegation", "ConsistentGroupingRouter", "ConsistentGroupingPlanner"]


class Delegation:
    """Worker delegation's two FCFS queues: busy and idle workers, paired one to one.

    >>> d = Delegation()
    >>> d.report(busy=[3, 1], idle=[0])
    >>> list(d.pairs())
    [(3, 0)]
    >>> d.busy_queue, d.idle_queue
    ([1], [])
    """

    def __init__(self) -> None:
        self._busy: deque[int] = deque()
        self._idle: deque[int] = deque()

    @property
    def busy_queue(self) -> list[int]:
        return list(self._busy)

    @property
    def idle_queue(self) -> list[int]:
        return list(self._idle)

    def report(self, busy: Iterable[int], idle: Iterable[int]) -> None:
        """A complete status report: workers keep their place in a queue while they stay in its
        state, leave it when they do not, and join at the back when they newly enter it."""
        busy, idle = [int(w) for w in busy], [int(w) for w in idle]
        for queue, now in ((self._busy, busy), (self._idle, idle)):
            keep = [w for w in queue if w in set(now)]
            queue.clear()
            queue.extend(keep)
            queue.extend(w for w in now if w not in set(keep))

    def pairs(self) -> Iterator[tuple[int, int]]:
        """Pop (busy, idle) pairs while both queues have a worker: every removal has an addition."""
        while self._busy and self._idle:
            yield self._busy.popleft(), self._idle.popleft()


class ConsistentGroupingRouter:
    """CG inside the simulation: PORC onto ``virtual_per_worker * n_workers`` virtual workers, an
    equal number per worker at the start, and one virtual worker moved per busy/idle pair reported.

    Every source sees the same reports (piggybacked on acknowledgements to each of them), so one
    mapping stands for all sources.
    """

    def __init__(
        self,
        keys: np.ndarray,
        n_workers: int,
        *,
        virtual_per_worker: int = 10,
        eps: float = 0.01,
        n_sources: int = 1,
        seed: int = 0,
    ) -> None:
        if virtual_per_worker < 1:
            raise InvalidParameterError(f"virtual_per_worker must be >= 1, got {virtual_per_worker}")
        n_virtual = n_workers * virtual_per_worker
        self.virtual = power_of_random_choices(keys, n_virtual, n_sources=n_sources, eps=eps, seed=seed)
        self.owner = np.repeat(np.arange(n_workers, dtype=np.int64), virtual_per_worker)
        self.held = [
            deque(range(w * virtual_per_worker, (w + 1) * virtual_per_worker)) for w in range(n_workers)
        ]
        self.delegation = Delegation()
        self.moves: list[tuple[int, int, int]] = []  # (virtual worker, from, to)

    def route(self, start: int, stop: int) -> np.ndarray:
        return self.owner[self.virtual[start:stop]]

    def report(self, busy: np.ndarray, idle: np.ndarray) -> None:
        self.delegation.report(busy, idle)
        for b, i in self.delegation.pairs():
            if not self.held[b]:
                continue
            v = self.held[b].popleft()  # FCFS: the virtual worker b has held longest
            self.held[i].append(v)
            self.owner[v] = i
            self.moves.append((v, b, i))


class ConsistentGroupingPlanner(Planner):
    """Consistent grouping's worker delegation on a snapshot; see the module docstring."""

    name = "consistent_grouping"
    parameters = {
        **BUDGET_PARAMETERS,
        "busy": [Interval(float, 0, closed="neither")],
        "idle": [Interval(float, 0)],
        "load": [Interval(float, 0, 1, closed="right")],
    }

    def __init__(
        self,
        *,
        busy: float = 0.85,
        idle: float = 0.75,
        load: float = 0.8,
        max_moves: int | None = None,
        max_migration_cost: float | None = None,
    ) -> None:
        self.busy = busy
        self.idle = idle
        self.load = load
        self.max_moves = max_moves
        self.max_migration_cost = max_migration_cost

    def tags(self) -> PlannerTags:
        return PlannerTags(budget=True, deterministic=True)

    def validate_parameters(self) -> None:
        super().validate_parameters()
        if not self.idle < self.busy:
            raise InvalidParameterError(
                f"The 'idle' parameter of planner {planner_name(type(self))!r} must be below 'busy' "
                f"({self.busy!r}). Got {self.idle!r} instead."
            )

    def _plan(self, snapshot: Snapshot) -> Plan:
        state = _State(snapshot, self)
        new_nodes = state.new_nodes()
        scaling = bool(new_nodes) or bool(state.arrays.removing.any())
        if scaling:
            state.drain()
            state.fill(new_nodes)
        else:
            state.delegate()
        return self.result(
            snapshot,
            state.arrays.assignment(state.node_of),
            status=PlanStatus.FEASIBLE,
            details={"rounds": state.rounds, "scaling": scaling},
        )


class _State:
    """The tentative placement and what is left of the budgets."""

    def __init__(self, snapshot: Snapshot, planner: ConsistentGroupingPlanner) -> None:
        self.arrays = arrays = snapshot.arrays()
        self.planner = planner
        self.node_of = arrays.current.copy()
        self.node_load = arrays.node_loads(self.node_of)
        active_capacity = arrays.capacities[arrays.active].sum()
        self.share = np.where(arrays.active, arrays.loads.sum() * arrays.capacities / active_capacity, 0.0)
        self.moves_left = np.inf if planner.max_moves is None else planner.max_moves
        self.cost_left = np.inf if planner.max_migration_cost is None else planner.max_migration_cost
        self.rounds = 0
        self.mean = metrics.mean_utilisation_of(arrays.loads, arrays.capacities, arrays.active)

    def offered(self, extra: float = 0.0, node: int | None = None) -> np.ndarray | float:
        """Each node's utilisation relative to the mean, at the nominal cluster load (or, with
        ``node``, that node's after receiving ``extra`` load)."""
        if self.mean <= 0:
            return np.zeros(len(self.node_load)) if node is None else 0.0
        if node is not None:
            return (
                self.planner.load * (self.node_load[node] + extra) / self.arrays.capacities[node] / self.mean
            )
        return self.planner.load * self.node_load / self.arrays.capacities / self.mean

    def new_nodes(self) -> list[int]:
        held = np.bincount(self.arrays.current, minlength=len(self.arrays.node_ids))
        return [int(i) for i in np.flatnonzero(self.arrays.active & (held == 0))]

    def affordable(self, k: int) -> bool:
        return self.moves_left >= 1 and self.arrays.state_sizes[k] <= self.cost_left * (1 + metrics.ABS_NOISE)

    def move(self, k: int, target: int) -> None:
        load = self.arrays.loads[k]
        self.node_load[self.node_of[k]] -= load
        self.node_load[target] += load
        self.node_of[k] = target
        self.moves_left -= 1
        self.cost_left -= self.arrays.state_sizes[k]

    def held_by(self, node: int) -> list[int]:
        return [int(k) for k in np.flatnonzero(self.node_of == node)]

    def drain(self) -> None:
        for node in np.flatnonzero(self.arrays.removing):
            for k in self.held_by(int(node)):
                if not self.affordable(k):
                    continue
                deficit = np.where(self.arrays.active, self.share - self.node_load, -np.inf)
                self.move(k, int(np.argmax(deficit)))

    def fill(self, new_nodes: list[int]) -> None:
        for node in new_nodes:
            while True:
                excess = np.where(self.arrays.active, self.node_load - self.share, -np.inf)
                excess[new_nodes] = -np.inf
                donor = int(np.argmax(excess))
                gap = self.share[node] - self.node_load[node]
                candidates = [
                    k
                    for k in self.held_by(donor)
                    if self.affordable(k)
                    and 0 < self.arrays.loads[k] <= gap + metrics.ABS_NOISE * self.share[node]
                ]
                if excess[donor] <= 0 or not candidates:
                    break
                self.move(candidates[0], node)

    def delegate(self) -> None:
        limit = 2 * len(self.node_of) + 1  # each round moves something; a guard against ping-pong
        delegation = Delegation()
        while self.rounds < limit:
            offered = self.offered()
            busy = [int(i) for i in np.argsort(-offered, kind="stable") if offered[i] > self.planner.busy]
            idle = [
                int(i)
                for i in np.argsort(offered, kind="stable")
                if offered[i] < self.planner.idle and self.arrays.active[i]
            ]
            delegation.report(busy, idle)
            moved = False
            for b, i in delegation.pairs():
                k = self._giveaway(b, i)
                if k is not None:
                    self.move(k, i)
                    moved = True
            if not moved:
                return
            self.rounds += 1

    def _giveaway(self, busy: int, idle: int) -> int | None:
        """The first key group of ``busy`` that ``idle`` can take without turning busy itself."""
        for k in self.held_by(busy):
            load = self.arrays.loads[k]
            if load > 0 and self.affordable(k) and self.offered(load, idle) <= self.planner.busy:
                return k
        return None
