"""PMC on Spark: the projected migration cost of every balanced partitioning (state-migration paper,
section 5.2, Figure 9; design section 7).

Steps:

1. **State space.** For every node count ``n`` in ``[n_min, n_max]`` (default: the MTM's states),
   every partitioning of the tasks into at most ``n`` non-empty intervals whose loads fit
   ``(1 + tau) * W / n`` (a single heavier task may sit alone), exactly as SSM plans them. The size
   is counted and reported *before* anything is enumerated; beyond ``max_states`` the job refuses
   with the number, unless ``blocks`` coarsens the tasks into that many consecutive blocks of (near)
   equal task counts -- an approximation (cuts only at block boundaries) recorded in the metadata.
2. **Costs.** ``c(P, P')`` for every pair the value iteration reads -- a row's state moves only to
   the node counts its MTM row reaches, so each row holds only those columns -- built on the
   executors, once, in blocks of about equal work (:func:`albic.solvers.interval_dp.cost_rows`,
   vectorised over ``P'``; :func:`albic.spark.pmc_tasks.block_costs`).
3. **Value iteration** (:func:`albic.solvers.mdp.value_iteration`) to ``max |C' - C| <= tol``, with
   Spark's own machinery only: albic opens no port and runs no server inside the job, so what
   Spark's security settings cover (``spark.authenticate``, ``spark.network.crypto.enabled``, ...)
   covers everything the job sends, and a firewalled cluster needs nothing beyond what Spark needs.
   Where it iterates depends on the size of the rows, known before anything is built: 8 bytes per
   pair ``(P, P')`` read, at most ``8 n^2`` for ``n`` states (:func:`cost_row_bytes`; 122 MiB at
   the default ``max_states`` of 4,000; 160 MiB for the 5,873 states of ``python -m benchmarks
   ssm``, whose MTM reaches one to three node counts from each, against 263 MiB for all pairs).

   - **On the driver**, when the rows fit ``memory_budget`` (default :func:`driver_memory_budget`:
     a quarter of ``spark.driver.memory``, at most half of ``spark.driver.maxResultSize``; 512 MiB
     in albic's sessions). The job that builds the rows hands them to the driver (``collect``:
     its JVM holds them while it passes them to Python, which keeps them), and the driver iterates
     with numpy (:func:`driver_threads` threads): nothing travels per iteration, ~25-40 ms each
     for 5,873 states. This is the default and the fastest way measured.
   - **On the executors**, beyond the budget: Spark persists the rows where the first job built
     them (memory first, then disk), and each iteration is one Spark job over them with the
     values as a broadcast; only the new values come back, so the driver needs memory for the
     values alone. It costs per iteration Spark's fixed cost of a job (~0.1 s here) and the JVM
     handing each task its block of rows again (0.8-1.1 s for 160 MiB on two cores), spread over
     the executors.
   - Measured and not chosen: a barrier stage whose tasks keep their rows and meet once per
     iteration with ``BarrierTaskContext.allGather``: every call took 1.0 s here, for two tasks
     and a message of a kilobyte alike (a wait inside Spark), 49 s for 49 iterations.

   Each Spark job runs in a thread of its own, so that Ctrl-C cancels it (and exits) cleanly.
   After an iteration, if ``checkpoint_seconds`` have passed since the last checkpoint (and always
   when a run is told to stop), ``C`` is checkpointed atomically to ``OUT/_checkpoint/``
   (``values.npy`` and ``state.json``, each replaced with ``os.replace``) -- not after every
   iteration: the fsyncs cost ~40 ms each here, all of it on the driver while the cores wait. A
   killed run redoes at most ``checkpoint_seconds`` of iterations (and builds the rows again). A
   run that finds a checkpoint with the same inputs resumes from it, and since every iteration is
   a deterministic function of the previous ``C`` -- each row's new value computed alone, its
   terms added in one order, wherever it runs -- the result equals an uninterrupted run's,
   whichever way either iterated.
4. **Output.** ``OUT/table.parquet`` (columns ``n``, ``cuts`` -- interior cuts in task positions --
   and ``cost``) and ``OUT/metadata.json`` (inputs, tau, gamma, tolerance, iterations, convergence,
   state-space size, blocks), both written atomically (the format: :mod:`albic.io.pmc`); the
   checkpoint is removed at the end.

Example (not run here: it starts Spark)::

    >>> from albic.stats.transitions import estimate_mtm
    >>> mtm = estimate_mtm([2, 3, 2, 3, 3])
    >>> result = precompute([1.0] * 8, [1.0] * 8, mtm, tau=0.5, gamma=0.8,
    ...                     out="pmc", master="local[2]")          # doctest: +SKIP
    >>> result.metadata["states"]                                   # doctest: +SKIP
    30
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from albic.base.errors import AlbicError, InvalidParameterError
from albic.core.planner import Interval, check_params
from albic.io import atomic_write_text
from albic.io.pmc import METADATA, TABLE, write_pmc_table
from albic.io.reader import format_size, parse_size
from albic.solvers.interval_dp import (
    balanced_partitionings,
    capacity_cap,
    cost_rows,
    count_balanced_partitionings,
    cut_mask,
)
from albic.solvers.mdp import MDPResult, group_members, reached_counts, row_blocks, value_iteration
from albic.spark.pmc_tasks import bellman_step, block_costs
from albic.spark.session import driver_threads, spark_session, task_slots
from albic.stats.transitions import TransitionMatrix

__all__ = [
    "precompute",
    "PrecomputeRequest",
    "run_precompute",
    "PrecomputeResult",
    "StateSpace",
    "state_space",
    "state_space_size",
    "coarsen",
    "write_table",
    "local_costs",
    "task_slots",
    "driver_threads",
    "driver_memory_budget",
    "cost_row_bytes",
    "row_blocks",
    "TABLE",
    "METADATA",
]

CHECKPOINT = "_checkpoint"
DEFAULT_MAX_STATES = 4000
DEFAULT_TOL = 1e-6
DEFAULT_MAX_ITERATIONS = 1000
CHECKPOINT_SECONDS = 10.0
# For the driver, the cost rows are built in this many blocks (Spark partitions) per task slot, so
# that a slot whose core is shared (the JVM, the driver) or that starts late builds fewer: on two
# cores the two halves of a fixed split ended up to 0.8 s apart (of ~3 s).
BLOCKS_PER_SLOT = 4
# The driver keeps the cost rows when they take at most this share of spark.driver.memory: its
# JVM holds them all at once while it hands the tasks' results to Python, which then keeps them.
DRIVER_MEMORY_SHARE = 0.25
JOB_END_SECONDS = 30.0  # after Ctrl-C, the wait for a cancelled job's thread to end


# What a PrecomputeRequest's settings must be (n_min and n_max are checked together once the MTM's
# node counts fill them in).
_REQUEST_RULES = {
    "gamma": Interval(float, 0, 1, closed="left", note="for value iteration to converge"),
    "tau": Interval(float, 0),
    "tol": Interval(float, 0, closed="neither"),
    "blocks": [Interval(int, 1), None],
    "memory_budget": [Interval(int, 0, note="bytes"), None],
    "partitions": [Interval(int, 1), None],
}


@dataclass(frozen=True)
class StateSpace:
    """The partitionings (node count, interior cuts in *block* units), the block bounds in task
    positions (``blocks + 1`` numbers; identity when not coarsened) and the per-block loads/states."""

    node_counts: list[int]
    partitionings: list[tuple[int, tuple[int, ...]]]
    bounds: list[int]
    loads: np.ndarray
    states: np.ndarray

    def task_cuts(self, cuts: Sequence[int]) -> list[int]:
        return [int(self.bounds[c]) for c in cuts]


@dataclass(frozen=True)
class PrecomputeResult:
    """What the job wrote: the output directory, the metadata, and the value-iteration outcome."""

    out: Path
    metadata: dict[str, Any]
    mdp: MDPResult = field(repr=False)


def coarsen(values: np.ndarray, blocks: int | None) -> tuple[np.ndarray, list[int]]:
    """Sums of ``values`` over ``blocks`` consecutive blocks of (near) equal task counts, and the
    block bounds in task positions.

    >>> coarsen(np.arange(5.0), 2)
    (array([1., 9.]), [0, 2, 5])
    """
    check_params("coarsen()", {"blocks": blocks}, _REQUEST_RULES)
    m = values.size
    if blocks is None or blocks >= m:
        return values.astype(float), list(range(m + 1))
    bounds = [(b * m) // blocks for b in range(blocks + 1)]
    prefix = np.concatenate(([0.0], np.cumsum(values, dtype=float)))
    return prefix[bounds[1:]] - prefix[bounds[:-1]], bounds


def state_space_size(loads, node_counts: Sequence[int], tau: float) -> int:
    """How many partitionings the job would enumerate (counted, not listed)."""
    loads = np.asarray(loads, dtype=float)
    total = float(loads.sum())
    return sum(count_balanced_partitionings(loads, n, capacity_cap(total, n, tau)) for n in node_counts)


def state_space(
    loads, states, node_counts: Sequence[int], tau: float, blocks: int | None = None
) -> StateSpace:
    """Every balanced partitioning for each node count (see the module docstring)."""
    block_loads, bounds = coarsen(np.asarray(loads, dtype=float), blocks)
    block_states, _ = coarsen(np.asarray(states, dtype=float), blocks)
    total = float(block_loads.sum())
    parts = [
        (n, cuts)
        for n in node_counts
        for cuts in balanced_partitionings(block_loads, n, capacity_cap(total, n, tau))
    ]
    return StateSpace(list(node_counts), parts, bounds, block_loads, block_states)


def _spark_size(text: str, unit: str) -> int:
    """A Spark size setting in bytes; a bare number is in ``unit`` (Spark reads a bare
    ``spark.driver.memory`` in MiB, a bare ``spark.driver.maxResultSize`` in bytes)."""
    text = str(text).strip()
    return 0 if text == "0" else parse_size(text + unit if text.isdigit() else text)


def driver_memory_budget(conf: Any) -> int:
    """The most the cost rows may take to be kept on the driver: :data:`DRIVER_MEMORY_SHARE` of
    ``spark.driver.memory`` (Spark's default 1g; albic's sessions at least 2g), at most half of
    ``spark.driver.maxResultSize`` (default 1g; 0: no limit), the most one job may hand the driver.

    >>> driver_memory_budget({"spark.driver.memory": "2g"}) >> 20, driver_memory_budget({}) >> 20
    (512, 256)
    >>> driver_memory_budget({"spark.driver.memory": "8192", "spark.driver.maxResultSize": "0"}) >> 20
    2048
    """
    budget = int(_spark_size(conf.get("spark.driver.memory", "1g"), "m") * DRIVER_MEMORY_SHARE)
    limit = _spark_size(conf.get("spark.driver.maxResultSize", "1g"), "")
    return min(budget, limit // 2) if limit else budget


def cost_row_bytes(group_of: np.ndarray, transition: np.ndarray) -> int:
    """The bytes of every cost row the value iteration reads (float64 each)."""
    return 8 * int(reached_counts(group_of, transition).sum())


def _fingerprint(inputs: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()


def _save_checkpoint(
    directory: Path, fingerprint: str, iteration: int, values: np.ndarray, change: float
) -> None:
    """Replace the checkpoint atomically: values first (under a name tied to the iteration), then
    the state file that points at it, so a crash between the two leaves the older pair valid."""
    directory.mkdir(parents=True, exist_ok=True)
    name = f"values-{iteration}.npy"
    tmp = directory / f".{name}.tmp"
    with open(tmp, "wb") as handle:
        np.save(handle, values)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, directory / name)
    state = {"fingerprint": fingerprint, "iteration": iteration, "values": name, "change": change}
    atomic_write_text(directory / "state.json", json.dumps(state))
    for old in directory.glob("values-*.npy"):
        if old.name != name:
            old.unlink(missing_ok=True)


def _load_checkpoint(directory: Path, fingerprint: str) -> MDPResult | None:
    """The stopped run a checkpoint of the same inputs holds, to resume from."""
    try:
        state = json.loads((directory / "state.json").read_text())
        if state.get("fingerprint") != fingerprint:
            return None
        values = np.load(directory / state["values"])
        return MDPResult(
            values, int(state["iteration"]), False, float(state.get("change", np.inf)), stopped=True
        )
    except (OSError, ValueError, KeyError):
        return None


def _transition(mtm: TransitionMatrix, node_counts: list[int]) -> np.ndarray:
    missing = [n for n in node_counts if n not in mtm.states]
    if missing:
        raise InvalidParameterError(
            f"the MTM has no rows for node counts {missing} (its states: {mtm.states})"
        )
    idx = [mtm.states.index(n) for n in node_counts]
    sub = mtm.matrix[np.ix_(idx, idx)]
    lost = 1.0 - sub.sum(axis=1)
    if np.any(lost > 1e-9):
        bad = [n for n, x in zip(node_counts, lost) if x > 1e-9]
        raise InvalidParameterError(
            f"the MTM moves from node counts {bad} to counts outside [{node_counts[0]}, "
            f"{node_counts[-1]}]; widen n_min/n_max"
        )
    return sub


@dataclass(frozen=True, eq=False)  # eq=False: numpy arrays have no single truth value to compare by
class PrecomputeRequest:
    """One PMC run, checked in one place when it is made, before Spark is touched (as
    :class:`albic.stats.StatsRequest` is for a statistics run).

    - ``loads``, ``states``: per task, in task (index) order; ``mtm``: the migration transition
      matrix; ``tau``, ``gamma``: the balance threshold and the discount; ``out``: the folder;
    - ``n_min``, ``n_max``: the node counts (default: the MTM's states); ``blocks``: coarsen the
      tasks into that many blocks; ``max_states``: refuse a larger state space;
    - ``tol``, ``max_iterations``: when value iteration stops; ``stop_after``: stop after that many
      iterations of this run, leaving the checkpoint to resume from (the result then has
      ``mdp.stopped`` and no table is written); ``checkpoint_seconds``: the least time between two
      checkpoints (0: after every iteration; a stop, an exception or Ctrl-C also writes one);
    - ``memory_budget`` (bytes; default :func:`driver_memory_budget` of the session's settings):
      the most the cost rows may take for the driver to keep them and iterate itself; beyond it the
      executors keep them and every iteration is one Spark job (see the module docstring). Both
      give the same table; the metadata's ``iterated_on`` says which ran. ``partitions``: the
      number of blocks the cost rows are built in (default :data:`BLOCKS_PER_SLOT` per task slot);
    - ``provenance`` (e.g. ``{"operator": ..., "key_groups": [...]}``, which the MTM planner
      checks) is added to the metadata.

    After construction ``task_loads`` and ``task_states`` (arrays), ``n_min`` and ``n_max`` (the
    MTM's where not given), ``node_counts`` and ``transition`` (the MTM restricted to them) hold
    the checked values.
    """

    loads: Sequence[float]
    states: Sequence[float]
    mtm: TransitionMatrix
    _: KW_ONLY
    tau: float
    gamma: float
    out: Path
    n_min: int | None = None
    n_max: int | None = None
    blocks: int | None = None
    max_states: int = DEFAULT_MAX_STATES
    tol: float = DEFAULT_TOL
    max_iterations: int = DEFAULT_MAX_ITERATIONS
    partitions: int | None = None
    stop_after: int | None = None
    checkpoint_seconds: float = CHECKPOINT_SECONDS
    provenance: dict[str, Any] | None = None
    memory_budget: int | None = None
    task_loads: np.ndarray = field(init=False, repr=False)
    task_states: np.ndarray = field(init=False, repr=False)
    node_counts: list[int] = field(init=False)
    transition: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        check_params(
            "PrecomputeRequest", {name: getattr(self, name) for name in _REQUEST_RULES}, _REQUEST_RULES
        )
        loads, states = self._checked_tasks()
        n_min = min(self.mtm.states) if self.n_min is None else self.n_min
        n_max = max(self.mtm.states) if self.n_max is None else self.n_max
        if not 1 <= n_min <= n_max:
            raise InvalidParameterError(f"need 1 <= n_min <= n_max, got {n_min}, {n_max}")
        node_counts = list(range(n_min, n_max + 1))
        settings = {
            "task_loads": loads,
            "task_states": states,
            "n_min": n_min,
            "n_max": n_max,
            "node_counts": node_counts,
            "transition": _transition(self.mtm, node_counts),
            "out": Path(self.out),
        }
        for name, value in settings.items():
            object.__setattr__(self, name, value)

    def _checked_tasks(self) -> tuple[np.ndarray, np.ndarray]:
        loads = np.asarray(self.loads, dtype=float)
        states = np.asarray(self.states, dtype=float)
        if loads.shape != states.shape or loads.ndim != 1 or loads.size == 0:
            raise InvalidParameterError("loads and states must be non-empty sequences of one length")
        if (loads < 0).any() or (states < 0).any():
            raise InvalidParameterError("loads and states must be >= 0")
        return loads, states

    def inputs(self) -> dict[str, Any]:
        """What the table depends on: a checkpoint resumes only a run of the same inputs."""
        return {
            "tasks": int(self.task_loads.size),
            "loads": self.task_loads.tolist(),
            "states": self.task_states.tolist(),
            "mtm_states": list(self.mtm.states),
            "mtm": self.mtm.matrix.tolist(),
            "n_min": self.n_min,
            "n_max": self.n_max,
            "tau": self.tau,
            "gamma": self.gamma,
            "tol": self.tol,
            "blocks": len(coarsen(self.task_loads, self.blocks)[1]) - 1,
        }


@dataclass(frozen=True)
class _Layout:
    """Where the cost rows are kept and iterated over (``"driver"`` or ``"executors"``), why (their
    bytes against the driver's budget), and the blocks of rows they are built in."""

    where: str
    rows_bytes: int
    budget: int
    parts: list[np.ndarray]


class _Checkpoints:
    """``C`` saved to ``OUT/_checkpoint`` at most every ``every`` seconds, and what is not saved yet
    kept for a run that stops or fails."""

    def __init__(self, directory: Path, fingerprint: str, every: float) -> None:
        self.directory, self.fingerprint, self.every = directory, fingerprint, every
        self.last_saved = time.perf_counter()
        self.unsaved: tuple[int, np.ndarray, float] | None = None  # the newest iteration not saved

    def save(self, iteration: int, values: np.ndarray, change: float) -> None:
        _save_checkpoint(self.directory, self.fingerprint, iteration, values, change)

    def note(self, iteration: int, values: np.ndarray, change: float) -> None:
        self.unsaved = (iteration, values, change)
        if time.perf_counter() - self.last_saved >= self.every:
            self.save(*self.unsaved)
            self.last_saved, self.unsaved = time.perf_counter(), None

    def save_unsaved(self) -> None:
        if self.unsaved is not None:
            self.save(*self.unsaved)

    def remove(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)


def precompute(
    loads: Sequence[float],
    states: Sequence[float],
    mtm: TransitionMatrix,
    *,
    master: str | None = None,
    spark: Any = None,
    log: Any = None,
    **settings: Any,
) -> PrecomputeResult:
    """Run PMC and write ``OUT/table.parquet`` and ``OUT/metadata.json`` (see the module docstring):
    :func:`run_precompute` of ``PrecomputeRequest(loads, states, mtm, **settings)``, whose fields
    (``tau``, ``gamma``, ``out``, ...) the settings are."""
    request = PrecomputeRequest(loads, states, mtm, **settings)
    return run_precompute(request, master=master, spark=spark, log=log)


def run_precompute(
    request: PrecomputeRequest, *, master: str | None = None, spark: Any = None, log: Any = None
) -> PrecomputeResult:
    """Carry out ``request``: ``spark`` is an existing session (else one is started on ``master``,
    default ``local[*]``); progress goes to ``log`` (default stderr)."""
    log = sys.stderr if log is None else log  # looked up now: stderr may have been replaced
    space = _bounded_state_space(request, log)
    group_of = np.array([request.node_counts.index(n) for n, _ in space.partitionings], dtype=np.int64)
    inputs = request.inputs()
    fingerprint = _fingerprint(inputs)
    resumed = _load_checkpoint(request.out / CHECKPOINT, fingerprint)
    if resumed is not None:
        print(
            f"albic precompute: resuming from the checkpoint after iteration {resumed.iterations}", file=log
        )
    session = spark if spark is not None else spark_session(master, "albic-precompute")
    sc = session.sparkContext
    layout = _layout(sc, request, group_of, log)
    started = time.perf_counter()
    # Made now, so that its clock counts iterations, not the time Spark took to start.
    checkpoints = _Checkpoints(request.out / CHECKPOINT, fingerprint, request.checkpoint_seconds)
    result = _iterate(sc, request, space, group_of, layout, checkpoints, resumed, log)
    metadata = {
        **_what_was_asked(request, inputs),
        **_what_came_out(request, space, group_of, result),
        **_how_it_ran(sc, layout, started, resumed),
        **dict(request.provenance or {}),
    }
    if result.stopped:
        checkpoints.save(result.iterations, result.values, result.max_change)
        return PrecomputeResult(request.out, metadata, result)
    write_table(request.out, space, result.values, metadata)
    checkpoints.remove()
    return PrecomputeResult(request.out, metadata, result)


def _bounded_state_space(request: PrecomputeRequest, log: Any) -> StateSpace:
    """The state space, its size reported first and refused beyond ``max_states`` before anything
    is enumerated."""
    loads, node_counts, tau = request.task_loads, request.node_counts, request.tau
    block_loads, bounds = coarsen(loads, request.blocks)
    size = state_space_size(block_loads, node_counts, tau)
    unit = f"{len(bounds) - 1} blocks" if len(bounds) - 1 < loads.size else f"{loads.size} tasks"
    print(
        f"albic precompute: state space of {size} partitionings ({unit}, {request.n_min}..{request.n_max} "
        f"nodes, tau={tau}); {size * size} pairwise costs",
        file=log,
    )
    if size > request.max_states:
        raise AlbicError(
            f"the state space has {size} partitionings, more than max_states={request.max_states}; "
            "coarsen the tasks into blocks (e.g. blocks=16) or raise max_states"
        )
    return state_space(loads, request.task_states, node_counts, tau, request.blocks)


def _layout(sc: Any, request: PrecomputeRequest, group_of: np.ndarray, log: Any) -> _Layout:
    """Where the cost rows go (the driver when they fit its budget), in how many blocks, said in the
    log with the reason."""
    transition = request.transition
    rows_bytes = cost_row_bytes(group_of, transition)
    budget = driver_memory_budget(sc.getConf()) if request.memory_budget is None else request.memory_budget
    where = "driver" if rows_bytes <= budget else "executors"
    # Every iteration on the executors pays Spark's cost of a task once per partition.
    slices = request.partitions or task_slots(sc) * (BLOCKS_PER_SLOT if where == "driver" else 1)
    parts = row_blocks(group_of, transition, min(slices, max(group_of.size, 1)))
    print(
        f"albic precompute: cost rows of {format_size(rows_bytes)}, "
        f"{'within' if where == 'driver' else 'beyond'} the driver's budget of {format_size(budget)}: "
        + ("the driver iterates" if where == "driver" else "one Spark job per iteration"),
        file=log,
    )
    return _Layout(where, rows_bytes, budget, parts)


def _iterate(
    sc: Any,
    request: PrecomputeRequest,
    space: StateSpace,
    group_of: np.ndarray,
    layout: _Layout,
    checkpoints: _Checkpoints,
    resumed: MDPResult | None,
    log: Any,
) -> MDPResult:
    """Value iteration where ``layout`` says, from the checkpoint ``resumed`` when there is one;
    what was done is checkpointed when it is interrupted or fails."""
    started = time.perf_counter()

    def on_iteration(iteration: int, values: np.ndarray, change: float) -> None:
        checkpoints.note(iteration, values, change)
        print(
            f"albic precompute: iteration {iteration}, max change {change:.3g} "
            f"({time.perf_counter() - started:.1f}s)",
            file=log,
        )

    iterate = functools.partial(
        value_iteration,
        group_of=group_of,
        transition=request.transition,
        gamma=request.gamma,
        tol=request.tol,
        max_iterations=request.max_iterations,
        start=resumed,
        on_iteration=on_iteration,
        stop_after=request.stop_after,
    )
    masks = np.array([cut_mask(c, space.loads.size) for _, c in space.partitionings])
    cost_inputs = dict(masks=masks, states=space.states, group_of=group_of, transition=request.transition)
    try:
        if layout.where == "driver":
            return iterate(_rows_on_driver(sc, layout.parts, cost_inputs), threads=driver_threads(sc))
        work = functools.partial(_iterate_on_executors, sc, layout.parts, cost_inputs, request.gamma, iterate)
        return _in_job_thread(sc, work)
    except BaseException:  # interrupted or failed: keep what was done
        checkpoints.save_unsaved()
        raise


def _what_was_asked(request: PrecomputeRequest, inputs: dict[str, Any]) -> dict[str, Any]:
    """The metadata's inputs and settings."""
    return {
        "inputs": {k: v for k, v in inputs.items() if k not in ("loads", "states")},
        "task_loads": inputs["loads"],
        "task_states": inputs["states"],
        "tau": request.tau,
        "gamma": request.gamma,
        "tolerance": request.tol,
    }


def _what_came_out(
    request: PrecomputeRequest, space: StateSpace, group_of: np.ndarray, result: MDPResult
) -> dict[str, Any]:
    """The metadata's outcome: the iterations and the state space."""
    blocks = len(space.bounds) - 1
    return {
        "iterations": result.iterations,
        "converged": result.converged,
        "max_change": result.max_change,
        "states": len(space.partitionings),
        "states_per_node_count": {
            str(n): int((group_of == i).sum()) for i, n in enumerate(request.node_counts)
        },
        "coarsened": blocks < request.task_loads.size,
        "blocks": blocks,
        "block_bounds": [int(b) for b in space.bounds],
    }


def _how_it_ran(sc: Any, layout: _Layout, started: float, resumed: MDPResult | None) -> dict[str, Any]:
    """The metadata's account of the run: where it iterated and why, how long, whence it resumed."""
    return {
        "master": sc.master,
        "partitions": len(layout.parts),
        "iterated_on": layout.where,
        "cost_row_bytes": layout.rows_bytes,
        "memory_budget": layout.budget,
        "seconds": time.perf_counter() - started,
        "resumed_from_iteration": resumed.iterations if resumed is not None else None,
    }


def _in_job_thread(sc: Any, work: Callable[[], Any]) -> Any:
    """``work()`` -- calls to Spark -- in a thread of its own, so that Ctrl-C lands in this thread
    while it waits, never inside one of its calls to the JVM (PySpark's handler, which cancels the
    jobs, would then call the JVM from within that call and fail with a page of Py4J errors): the
    thread's jobs are cancelled, and the ``KeyboardInterrupt`` goes on once the thread has ended."""
    from pyspark import InheritableThread  # keeps the thread and its JVM thread paired

    group = f"albic-precompute-{uuid.uuid4().hex}"
    outcome: dict[str, Any] = {}

    def run() -> None:
        sc.setJobGroup(group, "albic precompute", interruptOnCancel=True)
        try:
            outcome["value"] = work()
        except BaseException as exc:  # raised in the waiting thread below
            outcome["error"] = exc

    thread = InheritableThread(target=run, name="albic-precompute-jobs", daemon=True)
    thread.start()
    try:
        thread.join()
    except BaseException:
        sc.cancelJobGroup(group)
        thread.join(JOB_END_SECONDS)
        raise
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _rows_on_driver(sc: Any, parts: list[np.ndarray], cost_inputs: dict[str, Any]) -> list[Any]:
    """The cost rows, built on the executors in one Spark job and handed to the driver."""
    build = functools.partial(block_costs, **cost_inputs)
    # parallelize too: it ships the blocks to the JVM, a call that Ctrl-C must not land in.
    rows = _in_job_thread(sc, lambda: sc.parallelize(parts, len(parts)).map(build).collect())
    return [block for blocks in rows for block in blocks]


def _iterate_on_executors(
    sc: Any, parts: list[np.ndarray], cost_inputs: dict[str, Any], gamma: float, iterate: Any
) -> MDPResult:
    """One Spark job per iteration over the cost rows the executors keep (built by the first job,
    persisted by Spark, memory first, spilled to disk beyond it), each sent the values as a
    broadcast; the driver gathers only the new values."""
    from pyspark import StorageLevel  # Spark is running: its session made ``sc``

    group_of, transition = cost_inputs["group_of"], cost_inputs["transition"]
    step = functools.partial(
        bellman_step,
        group_of=group_of,
        groups=group_members(group_of, transition.shape[0]),
        transition=transition,
        gamma=gamma,
    )
    build = functools.partial(block_costs, **cost_inputs)
    rows = _in_job_thread(
        sc, lambda: sc.parallelize(parts, len(parts)).map(build).persist(StorageLevel.MEMORY_AND_DISK)
    )

    def sweep_once(values: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        shared = sc.broadcast(values)
        try:
            return [
                part for parts in rows.map(functools.partial(step, values=shared)).collect() for part in parts
            ]
        finally:
            shared.destroy()

    def sweep(values: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        return _in_job_thread(sc, lambda: sweep_once(values))

    try:
        return iterate(None, sweep=sweep)
    finally:
        rows.unpersist()


def write_table(out: str | os.PathLike[str], space: StateSpace, values: np.ndarray, metadata: dict) -> Path:
    """Write the PMC table of ``space``'s partitionings and their ``values`` into ``out``
    (:func:`albic.io.pmc.write_pmc_table`: ``OUT/table.parquet`` and ``OUT/metadata.json``)."""
    # The planner needs the block bounds to snap partitionings to a coarsened table.
    metadata = {**metadata, "block_bounds": [int(b) for b in space.bounds]}
    rows = [(n, space.task_cuts(cuts)) for n, cuts in space.partitionings]
    return write_pmc_table(out, rows, values, metadata)


def local_costs(space: StateSpace) -> np.ndarray:
    """The dense cost matrix in this process (for tests and small checks)."""
    m_blocks = space.loads.size
    masks = np.array([cut_mask(c, m_blocks) for _, c in space.partitionings])
    return cost_rows(np.arange(len(space.partitionings)), masks, space.states)
