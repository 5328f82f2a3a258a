"""Elasticutor's dynamic scheduler (Wang et al., "Elasticutor", sections 3.1, 4.1 and 4.2).

Three steps, each a function usable on its own, and :class:`ElasticutorPlanner` chaining them on a
:class:`~albic.core.model.Snapshot`:

1. :func:`allocate_cores` (section 4.1): each executor ``j`` is an M/M/k_j queue of a Jackson network;
   start every executor at ``floor(lambda_j / mu_j) + 1`` cores and add one core at a time where it
   lowers ``E[T]`` (equation 1) most, until ``E[T] <= T_max`` or the cluster's cores run out.
2. :func:`assign_cores` (Algorithm 1, section 4.2): turn the allocation ``k`` into a core matrix
   ``X`` (nodes x executors) close to the previous one ``X~``, with the migration cost
   :func:`migration_cost` ``C(X | X~)`` and the overheads :func:`allocation_overhead` ``C+`` and
   :func:`deallocation_overhead` ``C-``; data-intensive executors (per-core data rate above ``phi``)
   only take cores on their local node. :func:`schedule_cores` doubles ``phi`` until Algorithm 1
   succeeds.
3. :func:`balance_shards` (section 3.1): inside an executor, move shards from the most loaded task
   to the least loaded one until ``max / avg <= theta``.

Readings of the paper (where it is ambiguous):

- ``C(X | X~) = sum_j sum_i max(0, s_j x~_ij / X~_j - s_j x_ij / X_j)``: the paper prints ``X_j``
  in both terms; the state per core before the transition is ``s_j / X~_j``, and this reading is the
  one from which its ``C+`` and ``C-`` formulas follow (adding a core on node i lowers the state on
  the other nodes by ``s_j (X_j - x_ij) / (X_j (X_j + 1))``).
- Idle cores are a donor that is always over-provisioned and deallocates at cost 0.
- ``C-`` of an executor's only core is ``s_j`` (all its state leaves), and ``C+`` of an executor
  without cores is 0 on its local node (its state lives in its main process) and ``s_j`` elsewhere.
- Equation 2 constraint (c) must hold for ``X`` itself, so before Algorithm 1 runs, the remote cores
  of data-intensive executors and the cores over a node's capacity (a removing node has capacity 0)
  are released, cheapest ``C-`` first.
- Line 4 says "non-descending", the text "descending" data intensity: descending is used, so the
  data-intensive executors go first. Algorithm 1 as printed can FAIL on a feasible instance: a
  data-intensive executor whose local node is full of cores of executors that are not
  over-provisioned finds no donor (line 7). Here it then takes the core of a non-data-intensive
  executor on that node (cheapest ``C-``), which becomes under-provisioned and is served later from
  any node. With this completion Algorithm 1 returns FAIL exactly when equation 2 is infeasible
  (tested against brute force). Over-provisioned executors keep their surplus cores (giving them
  up would cost migration and equation 2 only bounds ``X_j`` from below).
- The ``naive`` mode is the paper's naive-EC: no locality (``phi`` is ignored) and no migration-cost
  optimisation (a core is taken from the first donor in node, then executor, order).

Example
-------
>>> alloc = allocate_cores([3.0, 1.0], [2.0, 2.0], input_rate=4.0, latency_target=0.6, total_cores=8)
>>> alloc.cores.tolist(), alloc.target_met
([3, 2], True)
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from albic.base.errors import InvalidParameterError
from albic.base.formats import count
from albic.core.metrics import ABS_NOISE
from albic.core.model import MAX_AMOUNT, MIN_SERVICE_RATE, PlanStatus, Snapshot
from albic.core.plan import Plan
from albic.core.planner import Boolean, Interval, NoneValue, Planner, PlannerTags, predicate, unsupported
from albic.solvers.queueing import erlang_b, jackson_latency

__all__ = [
    "CoreAllocation",
    "allocate_cores",
    "migration_cost",
    "allocation_overhead",
    "deallocation_overhead",
    "assign_cores",
    "schedule_cores",
    "remote_data_rate",
    "imbalance_factor",
    "balance_shards",
    "ElasticutorPlanner",
    "DEFAULT_PHI",
]

#: The paper's default data-intensity threshold (512 KB/s), in the unit of the executors' data rate.
DEFAULT_PHI = 512.0
# allocate_cores counts the cores needed beyond the cluster's by adding at most this many more.
_MAX_EXTRA_CORES = 100_000


# -- 1. core allocation (section 4.1) -------------------------------------------------------------


@dataclass(frozen=True)
class CoreAllocation:
    """Result of :func:`allocate_cores`.

    ``cores`` the allocation ``k``; ``latency`` its ``E[T]`` (``inf`` if unstable); ``stable``
    whether the cluster has the ``sum(floor(lambda/mu) + 1)`` cores stability needs; ``cores_needed``
    the total cores the greedy needs to reach the target (``None`` if no number of cores reaches it:
    ``T_max`` at or below the pure service time).
    """

    cores: np.ndarray
    latency: float
    target_met: bool
    stable: bool
    cores_needed: int | None


class _Sojourn:
    """``E[T_j](k)`` of one M/M/k executor, stepping ``k`` up by one with the Erlang B recursion."""

    __slots__ = ("lam", "mu", "a", "k", "b", "value")

    def __init__(self, lam: float, mu: float, k: int) -> None:
        self.lam, self.mu, self.a, self.k = lam, mu, lam / mu, k
        self.b = erlang_b(k, self.a)
        self.value = self._sojourn(k, self.b)

    def _sojourn(self, k: int, b: float) -> float:
        if self.lam == 0:
            return 1.0 / self.mu
        if k <= self.a:  # k * mu <= lambda: the queue grows without bound
            return math.inf
        c = min(1.0, k * b / (k - self.a + self.a * b))
        return c / (k * self.mu - self.lam) + 1.0 / self.mu

    def peek(self) -> tuple[float, float]:
        """``(E[T](k + 1), B(k + 1))`` without stepping."""
        b = self.a * self.b / (self.k + 1 + self.a * self.b)
        return self._sojourn(self.k + 1, b), b

    def step(self, value: float, b: float) -> None:
        self.k, self.b, self.value = self.k + 1, b, value


def allocate_cores(
    arrival_rates: Sequence[float],
    service_rates: Sequence[float],
    input_rate: float,
    latency_target: float,
    total_cores: int,
) -> CoreAllocation:
    """Elasticutor's greedy allocation: the fewest cores with ``E[T] <= latency_target``.

    Starts at ``floor(lambda_j / mu_j) + 1`` (the least that keeps every executor stable), then adds
    one core at a time to the executor whose extra core lowers equation 1 most, until the target is
    met or ``total_cores`` are used. Each ``E[T_j](k)`` is convex and decreasing in ``k``, so this
    marginal-gain greedy is optimal for the separable sum (checked against brute force in the
    tests). When the cores run out, the greedy goes on without the limit to report
    ``cores_needed``.

    >>> a = allocate_cores([1.0], [1.0], input_rate=1.0, latency_target=10.0, total_cores=4)
    >>> a.cores.tolist(), round(a.latency, 3)   # M/M/2 at a = 1: 1/3 + 1
    ([2], 1.333)
    """
    lams = np.asarray(arrival_rates, dtype=float)
    mus = np.asarray(service_rates, dtype=float)
    if lams.shape != mus.shape or lams.ndim != 1:
        raise ValueError("arrival_rates and service_rates must be 1-d with one entry per executor")
    if not (np.all(np.isfinite(lams)) and np.all(lams >= 0)):
        raise ValueError(f"arrival rates must be finite and >= 0, got {lams.tolist()}")
    if not (np.all(np.isfinite(mus)) and np.all(mus > 0)):
        raise ValueError(f"service rates must be finite and > 0, got {mus.tolist()}")
    if not (math.isfinite(input_rate) and input_rate > 0):
        raise ValueError(f"input_rate = {input_rate!r} must be a finite number > 0")
    if not latency_target > 0:
        raise ValueError(f"latency_target = {latency_target!r} must be > 0")
    # An offered load beyond 2**40 Erlangs is unstable on any cluster (a node has at most
    # albic.core.model.MAX_CORES cores); capping it keeps the core counts in int64.
    with np.errstate(over="ignore"):
        start = np.floor(np.minimum(lams / mus, 2.0**40)).astype(np.int64) + 1
    # floor(lambda / mu) + 1 cores may still give k * mu <= lambda in floating point (lambda = 10 mu
    # with lambda / mu rounding to 9.999999999999998): one core more there, or the queue is unstable
    # and its sojourn time divides by k * mu - lambda = 0.
    start += start * mus <= lams
    queues = [_Sojourn(float(lam), float(m), int(k)) for lam, m, k in zip(lams, mus, start)]
    weights = lams / input_rate
    # Below this latency no allocation gets: every executor's pure service time.
    with np.errstate(over="ignore"):  # a service rate near 0: the floor is infinite
        floor_latency = float(np.dot(weights, 1.0 / mus))
    reachable = latency_target > floor_latency * (1 + ABS_NOISE)
    latency = float(np.dot(weights, [q.value for q in queues]))
    stable = int(start.sum()) <= total_cores
    heap = []
    for j, q in enumerate(queues):
        if weights[j] > 0:
            value, b = q.peek()
            heapq.heappush(heap, (-(weights[j] * (q.value - value)), j, value, b))
    used = int(start.sum())
    within: np.ndarray | None = None  # the allocation when the cluster's cores ran out
    while latency > latency_target and heap:
        if used >= total_cores and within is None:
            within = np.array([q.k for q in queues], dtype=np.int64)
            if not reachable:
                break
        if used - max(total_cores, int(start.sum())) >= _MAX_EXTRA_CORES:
            break  # only counting the cores needed; give up on a target this close to the floor
        neg_gain, j, value, b = heapq.heappop(heap)
        if neg_gain >= 0:
            break  # no extra core lowers E[T] any more (in floating point)
        q = queues[j]
        latency -= weights[j] * (q.value - value)
        q.step(value, b)
        used += 1
        value, b = q.peek()
        heapq.heappush(heap, (-(weights[j] * (q.value - value)), j, value, b))
    needed = used if latency <= latency_target else None
    if not stable:
        return CoreAllocation(start, math.inf, False, False, needed)
    cores = np.array([q.k for q in queues], dtype=np.int64) if within is None else within
    exact = jackson_latency(lams.tolist(), mus.tolist(), cores.tolist(), input_rate)
    return CoreAllocation(cores, exact, exact <= latency_target, True, needed)


# -- 2. CPU-to-executor assignment (section 4.2, Algorithm 1) -------------------------------------


def migration_cost(previous: np.ndarray, new: np.ndarray, state_sizes: Sequence[float]) -> float:
    """``C(X | X~)``: state that leaves each node, ``s_j x~_ij / X~_j - s_j x_ij / X_j`` when > 0.

    ``previous`` and ``new`` are (nodes x executors) core matrices. An executor with no cores in
    one of them holds no state anywhere in it (its state is counted where it arrives or leaves).

    >>> migration_cost(np.array([[2], [0]]), np.array([[1], [1]]), [100.0])   # half moves
    50.0
    """
    previous, new = np.asarray(previous, dtype=float), np.asarray(new, dtype=float)
    s = np.asarray(state_sizes, dtype=float)
    before = np.divide(
        previous * s, previous.sum(axis=0), out=np.zeros_like(previous), where=previous.sum(axis=0) > 0
    )
    after = np.divide(new * s, new.sum(axis=0), out=np.zeros_like(new), where=new.sum(axis=0) > 0)
    return float(np.maximum(0.0, before - after).sum())


def allocation_overhead(s: float, total: int, here: int, *, local: bool = True) -> float:
    """``C+_ij = s_j (X_j - x_ij) / (X_j (X_j + 1))``: state moved onto a new core on node i.

    For an executor without cores (``total == 0``): 0 on its local node, ``s`` elsewhere.
    """
    if total == 0:
        return 0.0 if local else s
    return s * (total - here) / (total * (total + 1))


def deallocation_overhead(s: float, total: int, here: int) -> float:
    """``C-_ij = s_j (X_j - x_ij) / (X_j (X_j - 1))``: state moved off a core leaving node i.

    An executor's only core takes all its state (``s``) with it.
    """
    if total <= 1:
        return s
    return s * (total - here) / (total * (total - 1))


def _deallocation_matrix(x: np.ndarray, s: np.ndarray) -> np.ndarray:
    """``C-_ij`` for every (node, executor) pair (inf where executor j has no core on node i)."""
    total = x.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        cost = np.where(total > 1, s * (total - x) / (total * (total - 1.0)), s)
    return np.where(x > 0, cost, np.inf)


def _release(
    x: np.ndarray,
    k: np.ndarray,
    s: np.ndarray,
    capacity: np.ndarray,
    local: np.ndarray,
    intensive: np.ndarray,
) -> None:
    """Free cores that equation 2 forbids before Algorithm 1 starts (in place)."""
    n = x.shape[0]
    for j in np.flatnonzero(intensive).tolist():
        remote = np.arange(n) != local[j]
        x[remote, j] = 0
    for i in np.flatnonzero(x.sum(axis=1) > capacity).tolist():
        while x[i].sum() > capacity[i]:
            cost = _deallocation_matrix(x, s)[i]
            over = x.sum(axis=0) > k
            # Over-provisioned executors give up cores first, cheapest C- first, then by index.
            candidates = np.flatnonzero(x[i] > 0)
            j = min(candidates.tolist(), key=lambda c: (not over[c], cost[c], c))
            x[i, j] -= 1


def assign_cores(
    allocation: Sequence[int],
    previous: np.ndarray,
    capacity: Sequence[int],
    local: Sequence[int],
    state_sizes: Sequence[float],
    intensive: Sequence[bool],
    *,
    intensity: Sequence[float] | None = None,
    naive: bool = False,
) -> np.ndarray | None:
    """Algorithm 1: a core matrix ``X`` (nodes x executors) meeting equation 2, or ``None`` (FAIL).

    ``allocation`` is ``k``; ``previous`` is ``X~``; ``capacity`` the cores ``c_i`` of each node;
    ``local[j]`` the node index ``I(j)`` of executor ``j``'s main process; ``intensive[j]`` whether
    ``j`` is in ``E(phi)``; ``intensity`` orders the under-provisioned executors (descending; data
    rate per core). See the module docstring for the readings taken.

    >>> x = assign_cores([2, 1], np.array([[1, 1], [0, 0]]), [2, 2], [0, 0], [10.0, 10.0],
    ...                  [False, False])
    >>> x.tolist()   # executor 0 gets the idle core on node 1, nothing moves on node 0
    [[1, 1], [1, 0]]
    """
    k = np.asarray(allocation, dtype=np.int64)
    x = np.array(previous, dtype=np.int64, copy=True)
    c = np.asarray(capacity, dtype=np.int64)
    loc = np.asarray(local, dtype=np.int64)
    s = np.asarray(state_sizes, dtype=float)
    di = np.zeros(k.size, dtype=bool) if naive else np.asarray(intensive, dtype=bool)
    order_key = np.zeros(k.size) if intensity is None else np.asarray(intensity, dtype=float)
    n, m = x.shape
    _release(x, k, s, c, loc, di)

    return _Cores(x, k, s, c, loc, di, order_key, naive).run()


class _Cores:
    """Algorithm 1's working state in plain Python (the per-core steps touch a few entries each;
    numpy's per-call overhead would dominate at the paper's sizes).

    ``rows[i]`` and ``cols[j]`` hold the non-zero entries of ``X`` by node and by executor.
    """

    def __init__(self, x, k, s, c, loc, di, order_key, naive) -> None:
        self.shape = x.shape
        self.k, self.s, self.c = k.tolist(), s.tolist(), c.tolist()
        self.loc, self.di, self.order_key, self.naive = loc.tolist(), di.tolist(), order_key.tolist(), naive
        n, m = x.shape
        self.rows: list[dict[int, int]] = [{} for _ in range(n)]
        self.cols: list[dict[int, int]] = [{} for _ in range(m)]
        for i, j in zip(*np.nonzero(x)):
            self.rows[int(i)][int(j)] = self.cols[int(j)][int(i)] = int(x[i, j])
        self.total = [sum(col.values()) for col in self.cols]
        self.used = [sum(row.values()) for row in self.rows]
        self.over = {j for j in range(m) if self.total[j] > self.k[j]}

    def give(self, i: int, donor: int, j: int) -> None:
        """Move one core on node ``i`` from ``donor`` (-1: an idle core) to executor ``j``."""
        if donor >= 0:
            left = self.rows[i][donor] - 1
            if left:
                self.rows[i][donor] = self.cols[donor][i] = left
            else:
                del self.rows[i][donor], self.cols[donor][i]
            self.total[donor] -= 1
            if self.total[donor] <= self.k[donor]:
                self.over.discard(donor)
        else:
            self.used[i] += 1
        self.rows[i][j] = self.cols[j][i] = self.rows[i].get(j, 0) + 1
        self.total[j] += 1
        if self.total[j] > self.k[j]:
            self.over.add(j)

    def minus(self, i: int, d: int) -> float:
        """``C-_{i d}``; an executor's only core takes all its state."""
        t = self.total[d]
        return self.s[d] * (t - self.cols[d][i]) / (t * (t - 1)) if t > 1 else self.s[d]

    def plus(self, i: int, j: int) -> float:
        """``C+_{i j}``; 0 on its local node for an executor without cores, ``s_j`` elsewhere."""
        t = self.total[j]
        if t == 0:
            return 0.0 if i == self.loc[j] else self.s[j]
        return self.s[j] * (t - self.cols[j].get(i, 0)) / (t * (t + 1))

    def under(self) -> list[int]:
        pending = [j for j in range(len(self.k)) if self.total[j] < self.k[j]]
        # Data-intensive first, then by data intensity descending, then by index (stable sort).
        return sorted(pending, key=lambda j: (not self.di[j], -self.order_key[j]))

    def run(self) -> np.ndarray | None:
        for j in self.under():
            if not self.di[j]:
                continue
            i = self.loc[j]
            while self.total[j] < self.k[j]:
                donor = self.local_donor(i, j)
                if donor is None:
                    return None
                self.give(i, donor, j)
        for j in self.under():  # everyone left is not data-intensive (possibly displaced above)
            while self.total[j] < self.k[j]:
                found = self.any_donor(j)
                if found is None:
                    return None
                i, donor = found
                self.give(i, donor, j)
                if donor < 0 and self.cols[j][i] == max(self.cols[j].values()):
                    # An idle core where j has the most cores stays the cheapest choice (see
                    # any_donor) while the node has idle cores: take them without searching.
                    while self.total[j] < self.k[j] and self.used[i] < self.c[i]:
                        self.give(i, -1, j)
        x = np.zeros(self.shape, dtype=np.int64)
        for j, col in enumerate(self.cols):
            for i, cores in col.items():
                x[i, j] = cores
        return x

    def local_donor(self, i: int, j: int) -> int | None:
        """Line 7: the donor of a core on node ``i`` for data-intensive ``j``: -1 for an idle core,
        else the over-provisioned executor with the least ``C-``; failing that (the completion in
        the module docstring) a non-data-intensive executor on node ``i``; ``None`` if none."""
        if self.used[i] < self.c[i]:
            return -1
        holders = sorted(d for d in self.rows[i] if d != j)
        for pool in ([d for d in holders if d in self.over], [d for d in holders if not self.di[d]]):
            if pool:
                return pool[0] if self.naive else min(pool, key=lambda d: (self.minus(i, d), d))
        return None

    def any_donor(self, j: int) -> tuple[int, int] | None:
        """Line 9: ``(node, donor)`` minimising ``C-_{i,donor} + C+_{ij}`` over idle cores (donor
        -1, ``C- = 0``) and over-provisioned executors, ``None`` if there is none. Among equal
        costs an idle core wins, then the lowest node, then the lowest donor."""
        idle = [i for i, (u, c) in enumerate(zip(self.used, self.c)) if u < c]
        if self.naive:
            if idle:
                return idle[0], -1
            pairs = sorted((i, d) for d in self.over for i in self.cols[d])
            return pairs[0] if pairs else None
        best = None
        if idle:
            here = self.cols[j]
            if self.total[j] == 0:  # C+ is 0 on its local node, s_j elsewhere
                i = self.loc[j] if self.loc[j] in idle else idle[0]
            else:  # C+ falls with the cores j already has on the node: the most is cheapest
                i = max(idle, key=lambda i: (here.get(i, 0), -i))
                if here.get(i, 0) == max(here.values()):
                    # C+ is at its minimum over all nodes and an idle core costs no C-: no donor
                    # can do better (equal costs go to the idle core).
                    return i, -1
            best = (self.plus(i, j), 0, i, -1)
        for d in self.over:
            for i in self.cols[d]:
                option = (self.minus(i, d) + self.plus(i, j), 1, i, d)
                if best is None or option < best:
                    best = option
        return None if best is None else (best[2], best[3])


def schedule_cores(
    allocation: Sequence[int],
    previous: np.ndarray,
    capacity: Sequence[int],
    local: Sequence[int],
    state_sizes: Sequence[float],
    data_rates: Sequence[float],
    *,
    phi: float = DEFAULT_PHI,
    naive: bool = False,
) -> tuple[np.ndarray | None, float]:
    """Algorithm 1 with ``phi`` doubled from its default until it succeeds: ``(X, phi used)``.

    The data intensity of executor ``j`` is ``data_rates[j] / k_j``. Once ``phi`` is at least every
    intensity no executor is data-intensive, and Algorithm 1 then only fails when the allocation
    needs more cores than the cluster has: ``(None, phi)``.
    """
    k = np.asarray(allocation, dtype=np.int64)
    intensity = np.asarray(data_rates, dtype=float) / np.maximum(k, 1)
    while True:
        intensive = intensity > phi
        x = assign_cores(
            k, previous, capacity, local, state_sizes, intensive, intensity=intensity, naive=naive
        )
        if x is not None or naive or not intensive.any():
            return x, float(phi)
        phi *= 2.0


def remote_data_rate(x: np.ndarray, local: Sequence[int], data_rates: Sequence[float]) -> float:
    """Data exchanged between executors' main processes and their remote tasks (Table 2): the
    share ``(X_j - x_{I(j) j}) / X_j`` of each executor's data rate.

    >>> remote_data_rate(np.array([[3], [1]]), [0], [100.0])
    25.0
    """
    x = np.asarray(x, dtype=float)
    total = x.sum(axis=0)
    here = x[np.asarray(local, dtype=np.int64), np.arange(x.shape[1])]
    share = np.divide(total - here, total, out=np.zeros_like(total), where=total > 0)
    return float(np.dot(share, np.asarray(data_rates, dtype=float)))


# -- 3. intra-executor shard balancing (section 3.1) ----------------------------------------------


def imbalance_factor(loads: Sequence[float], task_of: Sequence[int], n_tasks: int) -> float:
    """``delta = max task load / average task load`` (1.0 when there is no load).

    >>> imbalance_factor([3.0, 1.0], [0, 1], 2)
    1.5
    """
    per_task = np.bincount(
        np.asarray(task_of, dtype=np.int64), weights=np.asarray(loads, dtype=float), minlength=n_tasks
    )
    mean = per_task.mean() if n_tasks else 0.0
    return float(per_task.max() / mean) if mean > 0 else 1.0


def balance_shards(
    loads: Sequence[float], task_of: Sequence[int], n_tasks: int, theta: float = 1.2
) -> np.ndarray:
    """Shard-to-task assignment after Elasticutor's intra-executor balancing.

    In each round, among the moves of one shard from the most loaded task to the least loaded
    task, take the one that lowers ``delta`` most; stop when ``delta <= theta`` or no move lowers
    it. ``delta``'s average is fixed, so lowering it means lowering the maximum task load, which
    therefore never increases.

    >>> balance_shards([4.0, 2.0, 1.0, 1.0], [0, 0, 0, 0], 2).tolist()
    [1, 0, 0, 0]
    """
    w = np.asarray(loads, dtype=float)
    tasks = np.array(task_of, dtype=np.int64, copy=True)
    if n_tasks < 1:
        raise ValueError(f"n_tasks = {n_tasks!r} must be >= 1")
    if tasks.size and (tasks.min() < 0 or tasks.max() >= n_tasks):
        raise ValueError(f"task_of must hold task numbers in [0, {n_tasks}), got {tasks.tolist()}")
    per_task = np.bincount(tasks, weights=w, minlength=n_tasks)
    mean = per_task.mean()
    if mean <= 0:
        return tasks
    while per_task.max() / mean > theta:
        hi, lo = int(np.argmax(per_task)), int(np.argmin(per_task))
        shards = np.flatnonzero((tasks == hi) & (w > 0))
        others = np.delete(per_task, [hi, lo]) if hi != lo else per_task[:0]
        rest = others.max() if others.size else 0.0
        # New maximum after moving shard s: max(hi - w_s, lo + w_s, every other task).
        new_max = np.maximum(np.maximum(per_task[hi] - w[shards], per_task[lo] + w[shards]), rest)
        if shards.size == 0 or new_max.min() >= per_task[hi] - ABS_NOISE * per_task[hi]:
            break  # no single move lowers delta
        best = int(shards[np.argmin(new_max)])  # first of equals: lowest shard number
        tasks[best] = lo
        per_task[hi] -= w[best]
        per_task[lo] += w[best]
    return tasks


# -- the planner ----------------------------------------------------------------------------------


def _is_core_matrix(value: Any) -> bool:
    if not isinstance(value, Mapping):
        return False
    for executor, row in value.items():
        if not isinstance(executor, str) or not isinstance(row, Mapping):
            return False
        for node, cores in row.items():
            if not isinstance(node, str) or isinstance(cores, bool) or not isinstance(cores, int):
                return False
            if cores < 0:
                return False
    return True


def _is_shard_loads(value: Any) -> bool:
    return isinstance(value, Mapping) and all(
        isinstance(e, str)
        and isinstance(v, Sequence)
        and not isinstance(v, str)
        and all(isinstance(w, (int, float)) and not isinstance(w, bool) and w >= 0 for w in v)
        for e, v in value.items()
    )


def _no_cores_reason(available: int, alloc: CoreAllocation) -> str:
    """Why the cluster's ``available`` cores give no plan for the allocation ``alloc``."""
    executors, needed = alloc.cores.size, int(alloc.cores.sum())
    what = f"{count(available, 'core')} for {count(executors, 'key group')}"
    if not alloc.stable:
        return (
            f"{what}: keeping every key group's queue stable takes at least {needed} "
            "(floor(arrival_rate / service_rate) + 1 each); give the nodes more cores "
            "(Node.cores, albic stats --cores N)"
        )
    return f"{what}: Algorithm 1 cannot place the {needed} cores allocated on the nodes' cores"


class ElasticutorPlanner(Planner):
    """Elasticutor's scheduler on a snapshot: cores per executor and where they run.

    Executors are the snapshot's key groups, each with ``arrival_rate`` (tuples/s) and
    ``service_rate`` (tuples/s of one core) and ``state_size``; nodes carry ``cores`` (a removing
    node offers none: its cores are released). The data rate of an executor is
    ``resources["data_rate"]`` when set (e.g. KB/s, matching the paper's ``phi`` = 512 KB/s),
    otherwise its input plus output tuples/s (``arrival_rate`` + outgoing ``traffic``).

    Parameters: ``latency_target`` (``T_max``, seconds); ``input_rate`` (``lambda_0``; by default
    the arrival rates of the key groups whose operator has no upstream operator in the snapshot,
    upstream meaning an ``Operator.downstream`` entry or a traffic edge from another operator);
    ``phi`` (data-intensity threshold, doubled until Algorithm 1 succeeds); ``theta`` (imbalance
    threshold of :func:`balance_shards`, applied to the executors listed in ``shard_loads``);
    ``naive`` (naive-EC); ``previous_cores``: the core matrix of the previous plan, i.e. pass
    ``previous_plan.details["cores"]``; executors it does not list start from one core on their node
    (a first plan), and it may only name key groups and nodes of the snapshot.

    The plan: ``details["cores"]`` is ``{executor: {node: cores}}`` (non-zero entries),
    ``details["latency"]`` the predicted mean latency ``E[T]`` of the assigned cores (``None``
    when infinite), with the allocation, whether the target was met, the cores needed, the ``phi``
    used, the core migration cost ``C(X | X~)`` and the remote data rate. The key-group
    ``assignment`` is each executor's local node, where its main process and receiver live:
    Elasticutor moves cores, not executors, so it stays where it is, unless that node is removing;
    then the executor moves to the node holding most of its new cores (the lowest in snapshot order
    among equals). Status FEASIBLE (Algorithm 1 is a heuristic), INFEASIBLE (current assignment)
    when the cluster lacks the cores to keep every executor stable.

    >>> from albic.core.model import Node, KeyGroup, Snapshot
    >>> snap = Snapshot([Node("n1", cores=4), Node("n2", cores=4)],
    ...     [KeyGroup("a", "op", 1.0, 100.0, arrival_rate=30.0, service_rate=10.0),
    ...      KeyGroup("b", "op", 1.0, 100.0, arrival_rate=5.0, service_rate=10.0)],
    ...     {"a": "n1", "b": "n2"})
    >>> plan = ElasticutorPlanner(latency_target=0.2).plan(snap)
    >>> plan.details["cores"], round(plan.details["latency"], 4)
    ({'a': {'n1': 4}, 'b': {'n2': 1}}, 0.158)
    """

    name = "elasticutor"
    parameters = {
        "latency_target": [Interval(float, 0, closed="neither")],
        # phi is doubled until it exceeds every data intensity (at most MAX_AMOUNT): from 1e-6
        # that is at most 70 rounds of Algorithm 1.
        "input_rate": [Interval(float, MIN_SERVICE_RATE, MAX_AMOUNT), NoneValue()],
        "phi": [Interval(float, 1e-6, MAX_AMOUNT)],
        "theta": [Interval(float, 1.0)],
        "naive": [Boolean()],
        "previous_cores": [
            NoneValue(),
            predicate(_is_core_matrix, "a mapping {executor id: {node id: int >= 0}}"),
        ],
        "shard_loads": [
            NoneValue(),
            predicate(_is_shard_loads, "a mapping {executor id: [shard load >= 0, ...]}"),
        ],
    }

    def __init__(
        self,
        *,
        latency_target: float = 0.5,
        input_rate: float | None = None,
        phi: float = DEFAULT_PHI,
        theta: float = 1.2,
        naive: bool = False,
        previous_cores: Mapping[str, Mapping[str, int]] | None = None,
        shard_loads: Mapping[str, Sequence[float]] | None = None,
    ) -> None:
        self.latency_target = latency_target
        self.input_rate = input_rate
        self.phi = phi
        self.theta = theta
        self.naive = naive
        self.previous_cores = previous_cores
        self.shard_loads = shard_loads

    def tags(self) -> PlannerTags:
        return PlannerTags(deterministic=True, queueing=True)

    def _check_supported(self, snapshot: Snapshot) -> None:
        missing = [kg.id for kg in snapshot.key_groups if kg.arrival_rate is None or kg.service_rate is None]
        if missing:
            shown = ", ".join(repr(m) for m in missing[:3]) + (" ..." if len(missing) > 3 else "")
            raise unsupported(
                self, f"needs arrival_rate and service_rate on every key group (missing on {shown})"
            )
        kg_ids = {kg.id for kg in snapshot.key_groups}
        node_ids = {n.id for n in snapshot.nodes}
        for name, table in (("previous_cores", self.previous_cores), ("shard_loads", self.shard_loads)):
            for executor in table or {}:
                if executor not in kg_ids:
                    raise InvalidParameterError(
                        f"{name} names executor {executor!r}, which is not a key group of the snapshot"
                    )
        for executor, row in (self.previous_cores or {}).items():
            for node in row:
                if node not in node_ids:
                    raise InvalidParameterError(
                        f"previous_cores[{executor!r}] names node {node!r}, which is not in the snapshot"
                    )

    # -- inputs -----------------------------------------------------------------------------------

    def _input_rate(self, snapshot: Snapshot) -> float:
        if self.input_rate is not None:
            return float(self.input_rate)
        operator_of = {kg.id: kg.operator for kg in snapshot.key_groups}
        has_upstream = {d for op in snapshot.operators for d in op.downstream if d != op.name}
        has_upstream |= {
            operator_of[t.dst] for t in snapshot.traffic if operator_of[t.src] != operator_of[t.dst]
        }
        return math.fsum(kg.arrival_rate for kg in snapshot.key_groups if kg.operator not in has_upstream)

    def _data_rates(self, snapshot: Snapshot) -> np.ndarray:
        arrays = snapshot.arrays()
        outgoing = np.asarray(arrays.traffic.sum(axis=1)).ravel()
        return np.array(
            [
                kg.resources.get("data_rate", kg.arrival_rate + outgoing[j])
                for j, kg in enumerate(snapshot.key_groups)
            ],
            dtype=float,
        )

    def _previous_matrix(self, snapshot: Snapshot) -> np.ndarray:
        arrays = snapshot.arrays()
        x = np.zeros((len(arrays.node_ids), len(arrays.key_group_ids)), dtype=np.int64)
        given = self.previous_cores or {}
        for j, kid in enumerate(arrays.key_group_ids):
            if kid in given:
                for node, cores in given[kid].items():
                    x[arrays.node_index[node], j] = cores
            else:
                x[arrays.current[j], j] = 1
        return x

    # -- planning ---------------------------------------------------------------------------------

    def _plan(self, snapshot: Snapshot) -> Plan:
        arrays = snapshot.arrays()
        lams = [kg.arrival_rate for kg in snapshot.key_groups]
        mus = [kg.service_rate for kg in snapshot.key_groups]
        capacity = np.array([0 if n.removing else n.cores for n in snapshot.nodes], dtype=np.int64)
        lam0 = self._input_rate(snapshot)
        previous = self._previous_matrix(snapshot)
        data_rates = self._data_rates(snapshot)
        common = {
            "latency_target": float(self.latency_target),
            "input_rate": lam0,
            "cores_available": int(capacity.sum()),
        }
        if lam0 > 0:
            alloc = allocate_cores(lams, mus, lam0, float(self.latency_target), int(capacity.sum()))
        else:  # nothing enters the topology: E[T] is undefined; keep every executor stable
            start = np.floor(np.array(lams) / np.array(mus)).astype(np.int64) + 1
            alloc = CoreAllocation(start, math.nan, False, int(start.sum()) <= capacity.sum(), None)
        details = {
            **common,
            "allocation": dict(zip(arrays.key_group_ids, alloc.cores.tolist())),
            "cores_needed": alloc.cores_needed,
        }
        x = None
        phi = float(self.phi)
        if alloc.stable:
            x, phi = schedule_cores(
                alloc.cores,
                previous,
                capacity,
                arrays.current,
                arrays.state_sizes,
                data_rates,
                phi=phi,
                naive=self.naive,
            )
        if x is None:
            return self.result(
                snapshot,
                snapshot.assignment,
                status=PlanStatus.INFEASIBLE,
                details={
                    **details,
                    "latency": None,
                    "latency_target_met": False,
                    "cores": {},
                    "reason": _no_cores_reason(int(capacity.sum()), alloc),
                },
            )
        latency = jackson_latency(lams, mus, x.sum(axis=0).tolist(), lam0) if lam0 > 0 else math.nan
        node_of = np.array(arrays.current, copy=True)
        for j in np.flatnonzero(arrays.removing[node_of]).tolist():
            node_of[j] = int(np.argmax(x[:, j]))  # first of equals: snapshot order
        intensity = data_rates / np.maximum(alloc.cores, 1)
        details.update(
            {
                "cores": {
                    kid: {arrays.node_ids[i]: int(x[i, j]) for i in np.flatnonzero(x[:, j]).tolist()}
                    for j, kid in enumerate(arrays.key_group_ids)
                },
                "latency": latency if math.isfinite(latency) else None,
                "latency_target_met": bool(math.isfinite(latency) and latency <= self.latency_target),
                "phi": phi,
                "data_intensive": [
                    kid
                    for kid, v in zip(arrays.key_group_ids, intensity.tolist())
                    if v > phi and not self.naive
                ],
                "core_migration_cost": migration_cost(previous, x, arrays.state_sizes),
                "remote_data_rate": remote_data_rate(x, node_of, data_rates),
            }
        )
        if self.shard_loads:
            details["shards"] = self._balance(arrays, x)
        return self.result(snapshot, arrays.assignment(node_of), status=PlanStatus.FEASIBLE, details=details)

    def _balance(self, arrays: Any, x: np.ndarray) -> dict[str, dict[str, Any]]:
        """Shards of the executors in ``shard_loads`` over their tasks (one per assigned core),
        starting from a round-robin (hash-like) placement."""
        out = {}
        for kid, loads in self.shard_loads.items():
            tasks = int(x[:, arrays.key_group_index[kid]].sum())
            start = np.arange(len(loads)) % tasks
            task_of = balance_shards(loads, start, tasks, float(self.theta))
            out[kid] = {"task_of": task_of.tolist(), "imbalance": imbalance_factor(loads, task_of, tasks)}
        return out
