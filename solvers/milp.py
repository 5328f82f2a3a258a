"""One small mixed-integer model API over several solver backends.

Build a :class:`Model` (variables with bounds and integrality, sparse linear rows ``lo <= a.x <= hi``,
a linear objective to minimise, an optional hint), then :meth:`Model.solve` it with a backend by
name:

- ``"cpsat"``: OR-Tools CP-SAT. Needs integer variables with finite bounds and integer coefficients
  (scale the data first); supports a deterministic work limit, so results can be reproducible.
- ``"highs"``: HiGHS through ``highspy`` (pinned below 1.15: 1.15 and OR-Tools both ship
  ``libhighs.so.1`` and cannot share a process, design section 9).
- ``"cbc"`` and ``"scip"``: CBC and SCIP through OR-Tools' ``pywraplp``.
- ``"pulp"`` and ``"pulp:NAME"``: any solver PuLP reaches, by its PuLP name (``GUROBI_CMD``,
  ``CPLEX_CMD``, ``XPRESS_PY``, ``COPT``, ``MOSEK``, ``HiGHS``, ``SCIP_CMD``, ...); plain ``"pulp"``
  is PuLP's default solver (``pulp.LpSolverDefault``: a CBC on the path, else the CBC PuLP ships).
  The status is read from ``sol_status``, never ``LpStatus`` (which says "Optimal" after a CBC
  time-limit stop, design section 9): a stop with a solution is FEASIBLE. The time limit covers
  building PuLP's model too (the solver gets what is left), PuLP's solvers report no bound, and a
  name PuLP does not know, or a solver it cannot find here, is refused before anything is built
  (:func:`check_backend`, naming the solvers PuLP finds on this machine). ``import pulp`` loads
  ``highspy`` (PuLP's HiGHS interface), so it is imported only when a PuLP backend is used.

Every backend answers with a :class:`Solution` whose ``status`` is one of ``OPTIMAL`` (proven),
``FEASIBLE`` (found, not proven), ``INFEASIBLE`` (proven) or ``NO_SOLUTION`` (limit reached first),
and ``bound`` (the best proven bound on the objective, when the backend has one).

Guards against a backend that is wrong about itself (independent of the backend's own report):

- the returned values are checked against every bound, row and integrality (tolerance
  ``1e-6``, relative to the row's scale); a solution that breaks the model is discarded;
- the objective is recomputed from the values, never taken from the backend;
- a claimed ``OPTIMAL`` whose recomputed objective is worse than the hint's (a feasible point the
  solver was given) is downgraded to ``FEASIBLE`` and the hint is returned instead; so is a claim
  whose objective lies below the claimed bound.

Default backend, by measurement (``benchmarks.milp_vs_flux.backends()``; 2 cores shared with other
jobs, load average 5-6): CP-SAT. Each backend alone (no polish, warm start = current placement) on
the whole ALBIC model of the paper's 20 nodes / 400 key groups, varies 20%, budget 20 moves, where
the placement starts at a load distance of 10.6% and Flux reaches 2.15%:

=========  ==========  ==========
backend    1 s         5 s
=========  ==========  ==========
cpsat      10.6%       0.73-0.99%
cbc        1.39%       1.39%
highs      5.28%       3.72%
scip       10.3%       10.3%
=========  ==========  ==========

CBC finds a first solution fastest but stops improving; HiGHS's solutions are worse than Flux's;
SCIP barely moves; CP-SAT needs its presolve (nothing within 1 s) and then finds the best solutions.
CP-SAT also offers a deterministic work limit (reproducible plans) and proves the small models the
planner solves (whole instances up to a few thousand item-node pairs, neighbourhoods of ~600) in
milliseconds. The planner's default -- CP-SAT on neighbourhoods plus warm starts and a local
search -- reached 0.277% at both 1 s and 5 s in the same runs (two runs; the 5 s CP-SAT figure
varied between them, the others did not).

Measured again with the PuLP backends (``python -m benchmarks milp --backends``, two
runs, load average 9 and 6; load distance and wall seconds at 5 s):

==========  ==============  ===========
backend     load distance   wall s
==========  ==============  ===========
cpsat       10.3% / 0.99%   4.9 / 4.9
cbc         1.39% / 1.39%   9.2 / 6.6
highs       5.28% / 4.81%   4.7 / 4.6
scip        10.3% / 10.3%   4.9 / 4.8
pulp        5.63% / 1.88%   5.0 / 5.0
pulp:HiGHS  4.97% / 4.97%   5.4 / 5.2
==========  ==============  ===========

CBC through PuLP (the CBC PuLP ships; an MPS file and a subprocess) keeps to its limit better than
CBC through OR-Tools, whose 5 s took 6.6-9.2 s, and its plan depends more on the load (the solver
gets what building PuLP's model leaves). At 1 s no backend alone moved anything in these runs:
the planner's build guard skips a model whose estimated build (0.8 s for its 8,000 item-node pairs)
exceeds half the time left. The planner itself, on neighbourhoods with the Flux start and the
polish, reached 0.277% at 1 s and 5 s with CP-SAT and with PuLP's CBC alike, within its limit.

A solver that fails while solving (a PuLP solver without its licence, a crashed binary) raises
``RuntimeError`` naming the backend; every refusal of the arguments is a ``ValueError``.

Example: a knapsack
-------------------
>>> import numpy as np
>>> m = Model()
>>> x = m.add_variables(3, lb=0, ub=1, integer=True)
>>> m.add_row(x, [3, 4, 5], hi=8)            # weights
>>> m.minimise(x, [-4, -5, -6])             # maximise value 4, 5, 6
>>> sol = m.solve("cpsat", time_limit=5)
>>> sol.status, sol.values.tolist(), sol.objective
('OPTIMAL', [1.0, 0.0, 1.0], -10.0)
"""

from __future__ import annotations

import contextlib
import inspect
import math
import tempfile
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse

__all__ = [
    "Model",
    "Solution",
    "BACKENDS",
    "DEFAULT_BACKEND",
    "PULP_PREFIX",
    "is_backend",
    "is_pulp",
    "check_backend",
    "pulp_solvers",
]

#: The backends by name; besides these, ``"pulp:NAME"`` names any solver PuLP reaches.
BACKENDS = ("cpsat", "highs", "cbc", "scip", "pulp")
DEFAULT_BACKEND = "cpsat"
PULP_PREFIX = "pulp:"
_TOL = 1e-6
_INF = math.inf


@dataclass
class Solution:
    """What a backend found. ``values`` is ``None`` unless status is OPTIMAL or FEASIBLE."""

    status: str
    values: np.ndarray | None
    objective: float | None
    bound: float | None
    backend: str
    seconds: float
    work: float = 0.0  # CP-SAT's deterministic time; 0 for the other backends
    note: str = ""


class Model:
    """A minimisation model: variables, rows ``lo <= a.x <= hi``, objective ``c.x + constant``."""

    def __init__(self) -> None:
        self.lb: list[float] = []
        self.ub: list[float] = []
        self.integer: list[bool] = []
        self._rows: list[tuple[np.ndarray, np.ndarray, float, float]] = []
        self.objective = np.zeros(0)
        self.constant = 0.0
        self.hint: np.ndarray | None = None

    @property
    def n_variables(self) -> int:
        return len(self.lb)

    def add_variables(self, n: int, *, lb: float = 0.0, ub: float = 1.0, integer: bool = True) -> np.ndarray:
        """``n`` new variables with the same bounds; returns their indices."""
        start = len(self.lb)
        self.lb += [float(lb)] * n
        self.ub += [float(ub)] * n
        self.integer += [bool(integer)] * n
        return np.arange(start, start + n)

    def add_row(
        self, cols: Sequence[int], coefs: Sequence[float], *, lo: float = -_INF, hi: float = _INF
    ) -> None:
        """The row ``lo <= sum(coefs[j] * x[cols[j]]) <= hi`` (repeated columns are summed)."""
        cols = np.asarray(cols, dtype=np.int64)
        coefs = np.asarray(coefs, dtype=float)
        if cols.shape != coefs.shape:
            raise ValueError(f"a row needs one coefficient per column, got {cols.size} and {coefs.size}")
        self._rows.append((cols, coefs, float(lo), float(hi)))

    def minimise(self, cols: Sequence[int], coefs: Sequence[float], constant: float = 0.0) -> None:
        """Set the objective (replacing any previous one)."""
        self.objective = np.zeros(self.n_variables)
        np.add.at(self.objective, np.asarray(cols, dtype=np.int64), np.asarray(coefs, dtype=float))
        self.constant = float(constant)

    def set_hint(self, values: Sequence[float]) -> None:
        """A (preferably feasible) starting point: a warm start for the backends that take one."""
        self.hint = np.asarray(values, dtype=float)

    # -- matrix form ------------------------------------------------------------------------------

    def matrix(self) -> tuple[scipy.sparse.csr_array, np.ndarray, np.ndarray]:
        """The rows as a CSR matrix with their lower and upper bounds."""
        n = self.n_variables
        if not self._rows:
            return scipy.sparse.csr_array((0, n)), np.zeros(0), np.zeros(0)
        indptr = np.cumsum([0] + [r[0].size for r in self._rows])
        cols = np.concatenate([r[0] for r in self._rows])
        data = np.concatenate([r[1] for r in self._rows])
        a = scipy.sparse.csr_array((data, cols, indptr), shape=(len(self._rows), n))
        a.sum_duplicates()
        lo = np.array([r[2] for r in self._rows])
        hi = np.array([r[3] for r in self._rows])
        return a, lo, hi

    def _objective_vector(self) -> np.ndarray:
        c = np.zeros(self.n_variables)
        c[: self.objective.size] = self.objective
        return c

    def evaluate(self, values: np.ndarray) -> float:
        """The objective at ``values``, recomputed here."""
        return float(self._objective_vector() @ values + self.constant)

    def violation(self, values: np.ndarray) -> float:
        """The largest violation of a bound, row or integrality at ``values`` (relative to scale)."""
        values = np.asarray(values, dtype=float)
        if values.shape != (self.n_variables,) or not np.all(np.isfinite(values)):
            return _INF
        lb, ub = np.array(self.lb), np.array(self.ub)
        worst = float(max(np.max(lb - values, initial=0.0), np.max(values - ub, initial=0.0)))
        ints = np.array(self.integer, dtype=bool)
        if ints.any():
            worst = max(worst, float(np.max(np.abs(values[ints] - np.round(values[ints])), initial=0.0)))
        a, lo, hi = self.matrix()
        if a.shape[0]:
            activity = a @ values
            scale = 1.0 + np.abs(a) @ np.abs(values)
            over = np.maximum(activity - hi, lo - activity) / scale
            worst = max(worst, float(np.max(over, initial=0.0)))
        return worst

    # -- solving ----------------------------------------------------------------------------------

    def solve(
        self,
        backend: str = DEFAULT_BACKEND,
        *,
        time_limit: float | None = None,
        deterministic: bool = False,
        workers: int = 1,
        seed: int = 0,
        wall_limit: float | None = None,
    ) -> Solution:
        """Solve with ``backend``; ``time_limit`` in seconds (CP-SAT's deterministic seconds when
        ``deterministic``); ``wall_limit``, wall-clock seconds the solve may take in any case (a
        guard on top of a deterministic limit: when it stops the solve first, the result may
        differ from run to run). See the module docstring for the guards applied to the answer."""
        check_backend(backend)
        if time_limit is not None and not time_limit > 0:
            raise ValueError(f"time_limit must be > 0 seconds or None, got {time_limit!r}")
        if wall_limit is not None and not wall_limit > 0:
            raise ValueError(f"wall_limit must be > 0 seconds or None, got {wall_limit!r}")
        if wall_limit is not None and not (deterministic and backend == "cpsat"):
            time_limit = wall_limit if time_limit is None else min(time_limit, wall_limit)
            wall_limit = None
        start = time.perf_counter()
        runner = {
            "cpsat": _solve_cpsat,
            "highs": _solve_highs,
            "cbc": _solve_pywraplp,
            "scip": _solve_pywraplp,
        }.get(backend, _solve_pulp)
        solution = runner(self, backend, time_limit, deterministic, workers, seed, wall_limit)
        solution.seconds = time.perf_counter() - start
        return _guarded(self, solution)


def is_pulp(backend: object) -> bool:
    """Whether ``backend`` names a PuLP backend (``"pulp"`` or ``"pulp:NAME"``), by its form."""
    return isinstance(backend, str) and (
        backend == "pulp" or (backend.startswith(PULP_PREFIX) and len(backend) > len(PULP_PREFIX))
    )


def is_backend(backend: object) -> bool:
    """Whether ``backend`` has the form of a backend name (a PuLP solver's presence is
    :func:`check_backend`'s question)."""
    return (isinstance(backend, str) and backend in BACKENDS) or is_pulp(backend)


def pulp_solvers(available: bool = True) -> list[str]:
    """The names of PuLP's solvers: those it finds on this machine (``available``), or all it
    knows. Imports PuLP."""
    import pulp

    return list(dict.fromkeys(pulp.listSolvers(onlyAvailable=available)))


def check_backend(backend: object) -> None:
    """Raise ``ValueError`` (one line, naming the backend) unless ``backend`` can solve here: one of
    :data:`BACKENDS`, or a PuLP solver PuLP knows and finds on this machine. Imports PuLP for the
    PuLP forms only."""
    if not is_backend(backend):
        raise ValueError(
            f"unknown MILP backend {backend!r}; known: {', '.join(BACKENDS)} "
            f"or '{PULP_PREFIX}NAME' (NAME: a PuLP solver)"
        )
    if is_pulp(backend):
        _pulp_solver_class(backend)


def _pulp_solver_class(backend: str) -> type:
    """PuLP's solver class for a PuLP backend, refused with a ``ValueError`` when PuLP does not
    know it or cannot find it here."""
    import pulp

    if backend == "pulp":
        default = pulp.LpSolverDefault
        if default is None:
            raise ValueError(
                "backend 'pulp': PuLP found no default solver (CBC or GLPK) on this "
                f"machine; name one with '{PULP_PREFIX}NAME', available here: "
                f"{', '.join(pulp_solvers()) or 'none'}"
            )
        return type(default)
    name = backend[len(PULP_PREFIX) :]
    try:
        solver = _pulp_instance(lambda **options: pulp.getSolver(name, **options))
    except pulp.PulpSolverError:
        raise ValueError(
            f"backend {backend!r}: PuLP has no solver {name!r}; available here: "
            f"{', '.join(pulp_solvers()) or 'none'} (PuLP knows: "
            f"{', '.join(pulp_solvers(available=False))})"
        ) from None
    if not solver.available():
        raise ValueError(
            f"backend {backend!r}: PuLP cannot find solver {name!r} on this machine "
            "(not installed, not on the PATH, or its Python package missing); "
            f"available here: {', '.join(pulp_solvers()) or 'none'}"
        )
    return type(solver)


def _pulp_instance(make, **options):
    """A quiet PuLP solver from ``make`` (its class, or a function taking its options). PuLP warns
    that its bundled CBC (PULP_CBC_CMD) goes in PuLP 4 whenever one is built, except when PuLP
    builds its own default; albic uses it as that default, so it drops the warning too."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="PULP_CBC_CMD is deprecated", category=DeprecationWarning)
        return make(msg=False, **options)


def _guarded(model: Model, sol: Solution) -> Solution:
    """Apply the module's guards to a backend's answer."""
    hint_ok = model.hint is not None and model.violation(model.hint) <= _TOL
    hint_value = model.evaluate(model.hint) if hint_ok else None
    if sol.values is not None:
        if model.violation(sol.values) > _TOL:
            sol.note = (
                f"{sol.backend} returned a point violating the model by {model.violation(sol.values):.3g}"
            )
            sol.values, sol.objective = None, None
            sol.status = "NO_SOLUTION" if sol.status != "INFEASIBLE" else sol.status
        else:
            sol.values = np.where(np.array(model.integer), np.round(sol.values), sol.values)
            sol.objective = model.evaluate(sol.values)
    if sol.status in ("OPTIMAL", "FEASIBLE") and sol.values is None:
        sol.status = "NO_SOLUTION"
    slack = _TOL * (1 + abs(hint_value or 0.0))
    if sol.status == "OPTIMAL" and hint_value is not None and sol.objective > hint_value + slack:
        sol.note = f"{sol.backend} claimed optimal {sol.objective:g} but the hint has {hint_value:g}"
        sol.status, sol.values, sol.objective = "FEASIBLE", model.hint.copy(), hint_value
    if (
        sol.status == "OPTIMAL"
        and sol.bound is not None
        and sol.objective < sol.bound - _TOL * (1 + abs(sol.bound))
    ):
        sol.note = f"{sol.backend} claimed optimal {sol.objective:g} below its bound {sol.bound:g}"
        sol.status = "FEASIBLE"
    if sol.status == "INFEASIBLE" and hint_ok:
        sol.note = f"{sol.backend} claimed infeasible but the hint is feasible"
        sol.status, sol.values, sol.objective = "FEASIBLE", model.hint.copy(), hint_value
    if sol.status in ("NO_SOLUTION",) and hint_ok:
        sol.status, sol.values, sol.objective = "FEASIBLE", model.hint.copy(), hint_value
    if sol.status == "OPTIMAL" and sol.bound is None:
        sol.bound = sol.objective
    return sol


# -- backends -------------------------------------------------------------------------------------


def _integral(values: np.ndarray, what: str) -> np.ndarray:
    finite = np.isfinite(values)
    if not np.all(np.abs(values[finite] - np.round(values[finite])) <= 1e-9):
        raise ValueError(f"the cpsat backend needs integer {what}; scale the model's data first")
    return values


def _solve_cpsat(
    model: Model, backend, time_limit, deterministic, workers, seed, wall_limit=None
) -> Solution:
    from ortools.sat.python import cp_model

    if not all(model.integer):
        raise ValueError("the cpsat backend needs integer variables only")
    lb, ub = np.array(model.lb), np.array(model.ub)
    if not (np.all(np.isfinite(lb)) and np.all(np.isfinite(ub))):
        raise ValueError("the cpsat backend needs finite variable bounds")
    cp = cp_model.CpModel()
    _cpsat_proto(
        cp.proto, model, lb.astype(np.int64), ub.astype(np.int64), -cp_model.INT_MAX, cp_model.INT_MAX
    )
    solver = cp_model.CpSolver()
    params = solver.parameters
    params.num_workers = max(1, int(workers))
    params.random_seed = int(seed)
    if time_limit is not None:
        if deterministic:
            params.max_deterministic_time = float(time_limit)
        else:
            params.max_time_in_seconds = float(time_limit)
    if wall_limit is not None:
        params.max_time_in_seconds = float(wall_limit)
    if deterministic and workers > 1:
        params.interleave_search = True
    code = solver.solve(cp)
    status = {
        cp_model.OPTIMAL: "OPTIMAL",
        cp_model.FEASIBLE: "FEASIBLE",
        cp_model.INFEASIBLE: "INFEASIBLE",
    }.get(code, "NO_SOLUTION")
    values = None
    if status in ("OPTIMAL", "FEASIBLE"):
        values = np.array(solver.response_proto.solution, dtype=float)
    bound = float(solver.best_objective_bound) + model.constant if values is not None else None
    return Solution(
        status, values, None, bound, backend, 0.0, work=float(solver.response_proto.deterministic_time)
    )


def _cpsat_proto(proto, model: Model, lb: np.ndarray, ub: np.ndarray, int_min: int, int_max: int) -> None:
    """Fill CP-SAT's model ``proto`` from ``model`` with calls per run of equal bounds and per row,
    never per variable: building through ``new_int_var``/``add_hint`` took a third of a demo's
    comparison (4.4 million Python calls); variables by runs of equal domains in text format and
    rows, objective and hint as whole arrays build the same proto about 9x faster."""
    if lb.size:
        change = np.flatnonzero((lb[1:] != lb[:-1]) | (ub[1:] != ub[:-1])) + 1
        starts, ends = np.r_[0, change], np.r_[change, lb.size]
        proto.merge_text_format(
            "".join(
                f"variables {{ domain: [{lo}, {hi}] }}\n" * (e - s)
                for lo, hi, s, e in zip(
                    lb[starts].tolist(), ub[starts].tolist(), starts.tolist(), ends.tolist()
                )
            )
        )
    a, lo, hi = model.matrix()
    _integral(a.data, "row coefficients")
    indptr, indices, data = a.indptr.tolist(), a.indices.tolist(), a.data.astype(np.int64).tolist()
    lows = [int_min if not math.isfinite(v) else int(math.ceil(v - 1e-9)) for v in lo.tolist()]
    highs = [int_max if not math.isfinite(v) else int(math.floor(v + 1e-9)) for v in hi.tolist()]
    for r in range(a.shape[0]):
        s, e = indptr[r], indptr[r + 1]
        linear = proto.constraints.add().linear
        linear.vars.extend(indices[s:e])
        linear.coeffs.extend(data[s:e])
        linear.domain.extend([lows[r], highs[r]])
    c = _integral(model._objective_vector(), "objective coefficients")
    nz = np.flatnonzero(c)
    proto.objective.vars.extend(nz.tolist())
    proto.objective.coeffs.extend(c[nz].astype(np.int64).tolist())
    if model.hint is not None:
        proto.solution_hint.vars.extend(range(lb.size))
        proto.solution_hint.values.extend(np.round(model.hint).astype(np.int64).tolist())


def _solve_highs(
    model: Model, backend, time_limit, deterministic, workers, seed, wall_limit=None
) -> Solution:
    import highspy

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("random_seed", int(seed))
    if time_limit is not None:
        h.setOptionValue("time_limit", float(time_limit))
    n = model.n_variables
    inf = highspy.kHighsInf
    lb = np.clip(np.array(model.lb), -inf, inf)
    ub = np.clip(np.array(model.ub), -inf, inf)
    h.addVars(n, lb, ub)
    ints = np.flatnonzero(model.integer)
    if ints.size:
        h.changeColsIntegrality(
            ints.size, ints.astype(np.int32), np.full(ints.size, highspy.HighsVarType.kInteger)
        )
    c = model._objective_vector()
    h.changeColsCost(n, np.arange(n, dtype=np.int32), c)
    a, lo, hi = model.matrix()
    if a.shape[0]:
        h.addRows(
            a.shape[0],
            np.clip(lo, -inf, inf),
            np.clip(hi, -inf, inf),
            a.nnz,
            a.indptr.astype(np.int32),
            a.indices.astype(np.int32),
            a.data,
        )
    if model.hint is not None:
        start = highspy.HighsSolution()
        start.col_value = list(map(float, model.hint))
        start.value_valid = True
        h.setSolution(start)
    h.run()
    code = h.getModelStatus()
    info = h.getInfo()
    has_point = info.primal_solution_status == 2  # kSolutionStatusFeasible
    if code == highspy.HighsModelStatus.kOptimal and has_point:
        status = "OPTIMAL"
    elif code == highspy.HighsModelStatus.kInfeasible:
        status = "INFEASIBLE"
    else:
        status = "FEASIBLE" if has_point else "NO_SOLUTION"
    values = np.array(h.getSolution().col_value, dtype=float) if has_point else None
    bound = float(info.mip_dual_bound) + model.constant if ints.size and has_point else None
    if bound is not None and not math.isfinite(bound):
        bound = None
    return Solution(status, values, None, bound, backend, 0.0)


def _solve_pywraplp(
    model: Model, backend, time_limit, deterministic, workers, seed, wall_limit=None
) -> Solution:
    from ortools.linear_solver import pywraplp

    solver = pywraplp.Solver.CreateSolver(backend.upper())
    if solver is None:
        raise ValueError(f"this OR-Tools build has no {backend.upper()} solver")
    inf = solver.infinity()
    xs = [
        (solver.IntVar if integer else solver.NumVar)(max(low, -inf), min(high, inf), f"x{j}")
        for j, (low, high, integer) in enumerate(zip(model.lb, model.ub, model.integer))
    ]
    a, lo, hi = model.matrix()
    for r in range(a.shape[0]):
        row = solver.Constraint(max(lo[r], -inf), min(hi[r], inf))
        for j, v in zip(a.indices[a.indptr[r] : a.indptr[r + 1]], a.data[a.indptr[r] : a.indptr[r + 1]]):
            row.SetCoefficient(xs[j], float(v))
    objective = solver.Objective()
    for j in np.flatnonzero(model._objective_vector()):
        objective.SetCoefficient(xs[j], float(model.objective[j]))
    objective.SetMinimization()
    if model.hint is not None:
        solver.SetHint(xs, list(map(float, model.hint)))
    if time_limit is not None:
        solver.SetTimeLimit(max(1, int(time_limit * 1000)))
    code = solver.Solve()
    status = {
        pywraplp.Solver.OPTIMAL: "OPTIMAL",
        pywraplp.Solver.FEASIBLE: "FEASIBLE",
        pywraplp.Solver.INFEASIBLE: "INFEASIBLE",
    }.get(code, "NO_SOLUTION")
    values = np.array([x.solution_value() for x in xs]) if status in ("OPTIMAL", "FEASIBLE") else None
    bound = None
    if values is not None:
        b = objective.BestBound()
        bound = float(b) + model.constant if math.isfinite(b) else None
    return Solution(status, values, None, bound, backend, 0.0)


def _solve_pulp(model: Model, backend, time_limit, deterministic, workers, seed, wall_limit=None) -> Solution:
    """Any PuLP solver. The time limit covers building PuLP's model (its Python objects; a CMD
    solver also writes them to a file): the solver gets what is left, and nothing is solved when
    nothing is. A solver may still run past its limit: CBC through PuLP took 1.4 s on ALBIC's
    whole 20 x 400 model given 0.2 s (its start and root work come before its first clock check;
    2 cores under load 6), as CBC through OR-Tools does. The status comes from ``sol_status``;
    PuLP has no bound to report."""
    import pulp

    start = time.perf_counter()
    solver_class = _pulp_solver_class(backend)
    prob = pulp.LpProblem("albic", pulp.LpMinimize)
    xs = _pulp_variables(prob, model)
    empty_row = _pulp_rows(prob, xs, model)
    if empty_row is not None:
        return Solution("INFEASIBLE", None, None, None, backend, 0.0, note=f"{backend}: {empty_row}")
    c = model._objective_vector()
    prob.setObjective(pulp.LpAffineExpression([(xs[j], float(c[j])) for j in np.flatnonzero(c).tolist()]))
    options = _pulp_options(model, xs, solver_class, workers)
    if time_limit is not None:
        # PuLP hands the model over after the limit starts: a CMD solver's file takes about as
        # long to write as the model took to build (0.37 vs 0.30 s for ALBIC's 8,000 binaries)
        left = time_limit - 2 * (time.perf_counter() - start)
        if left <= 0:
            note = f"{backend}: building PuLP's model took the time limit"
            return Solution("NO_SOLUTION", None, None, None, backend, 0.0, note=note)
        options["timeLimit"] = left
    return _pulp_run(prob, xs, _pulp_instance(solver_class, **options), options, backend)


def _pulp_variables(prob: Any, model: Model) -> list:
    """PuLP variables for the model's columns, infinite bounds as none."""
    import pulp

    return [
        prob.add_variable(
            f"x{j}",
            None if low == -_INF else low,
            None if high == _INF else high,
            pulp.LpInteger if integer else pulp.LpContinuous,
        )
        for j, (low, high, integer) in enumerate(zip(model.lb, model.ub, model.integer))
    ]


def _pulp_rows(prob: Any, xs: list, model: Model) -> str | None:
    """Add the model's rows to ``prob`` (an equality where both sides meet, else one constraint a
    finite side); what is wrong with the first row without variables whose bounds exclude 0, if
    one does (the model is then infeasible as written)."""
    import pulp

    a, lo, hi = model.matrix()
    for r in range(a.shape[0]):
        cols, coefs = a.indices[a.indptr[r] : a.indptr[r + 1]], a.data[a.indptr[r] : a.indptr[r + 1]]
        keep = coefs != 0
        if not keep.any():
            if not lo[r] <= 0 <= hi[r]:
                return f"row {r} is 0 outside [{lo[r]:g}, {hi[r]:g}]"
            continue
        expr = pulp.LpAffineExpression(
            [(xs[j], float(v)) for j, v in zip(cols[keep].tolist(), coefs[keep].tolist())]
        )
        if lo[r] == hi[r]:
            prob.add(pulp.LpConstraint(expr, pulp.LpConstraintEQ, rhs=float(lo[r])))
            continue
        if np.isfinite(lo[r]):
            prob.add(pulp.LpConstraint(expr, pulp.LpConstraintGE, rhs=float(lo[r])))
        if np.isfinite(hi[r]):
            prob.add(pulp.LpConstraint(expr, pulp.LpConstraintLE, rhs=float(hi[r])))
    return None


def _pulp_options(model: Model, xs: list, solver_class: Any, workers: int) -> dict[str, Any]:
    """The warm start and threads, for a solver class that takes them (the time limit comes last)."""
    accepted = inspect.signature(solver_class.__init__).parameters
    options: dict[str, Any] = {}
    if model.hint is not None and "warmStart" in accepted:
        # PuLP refuses a start outside a variable's bounds; the solver checks the start itself
        for x, v in zip(xs, np.clip(model.hint, model.lb, model.ub).tolist()):
            x.setInitialValue(v)
        options["warmStart"] = True
    if workers > 1 and "threads" in accepted:
        options["threads"] = int(workers)
    return options


@contextlib.contextmanager
def _own_folder(solver: Any):
    """A CMD solver writes its model, warm start and solution to files, which PuLP removes only
    after reading a solution. A CBC stopped before its first writes none, and its files (400 KB
    for ALBIC's 20 x 400 model) would stay behind: they go in a folder of albic's own, removed
    whatever the end."""
    if not hasattr(solver, "tmpDir"):
        yield
        return
    with tempfile.TemporaryDirectory(prefix="albic-pulp-") as folder:
        solver.tmpDir = folder
        yield


def _pulp_run(prob: Any, xs: list, solver: Any, options: dict[str, Any], backend: str) -> Solution:
    """Solve ``prob`` with ``solver`` and read its status and values."""
    import pulp

    solving = time.perf_counter()
    try:
        with _own_folder(solver):
            prob.solve(solver)
    except pulp.PulpSolverError as err:
        if "timeLimit" in options and time.perf_counter() - solving >= options["timeLimit"]:
            # A CBC stopped by its limit before a first solution writes no solution file, and
            # PuLP reports that as a failure to execute: it is a limit reached.
            note = f"{backend}: no solution within the limit"
            return Solution("NO_SOLUTION", None, None, None, backend, 0.0, note=note)
        detail = " ".join(str(err).split())
        raise RuntimeError(f"backend {backend!r}: PuLP's {type(solver).name} failed: {detail}") from None
    status = {
        pulp.LpSolutionOptimal: "OPTIMAL",
        pulp.LpSolutionIntegerFeasible: "FEASIBLE",
        pulp.LpSolutionInfeasible: "INFEASIBLE",
    }.get(prob.sol_status, "NO_SOLUTION")
    values = None
    if status in ("OPTIMAL", "FEASIBLE"):
        raw = [x.varValue for x in xs]
        values = np.array([math.nan if v is None else v for v in raw], dtype=float)
    return Solution(status, values, None, None, backend, 0.0)
