"""solvers.milp: every backend against brute force, statuses, and the guards."""

import itertools

import numpy as np
import pytest

from solvers.milp import BACKENDS, Model, Solution, _guarded


def _knapsack(weights, values, capacity):
    m = Model()
    x = m.add_variables(len(weights))
    m.add_row(x, weights, hi=capacity)
    m.minimise(x, [-v for v in values])
    return m, x


def _brute_force(weights, values, capacity):
    best = 0
    for pick in itertools.product([0, 1], repeat=len(weights)):
        if np.dot(pick, weights) <= capacity:
            best = max(best, np.dot(pick, values))
    return -best


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_backend_reaches_the_brute_force_optimum(backend):
    rng = np.random.default_rng(3)
    for _ in range(3):
        weights = rng.integers(1, 20, 8).tolist()
        values = rng.integers(1, 30, 8).tolist()
        m, _ = _knapsack(weights, values, 40)
        sol = m.solve(backend, time_limit=10)
        assert sol.status == "OPTIMAL"
        assert sol.objective == pytest.approx(_brute_force(weights, values, 40))
        assert sol.bound == pytest.approx(sol.objective, abs=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_infeasible_model_is_reported_infeasible(backend):
    m = Model()
    x = m.add_variables(2)
    m.add_row(x, [1, 1], lo=3)  # two binaries cannot sum to 3
    m.minimise(x, [1, 1])
    sol = m.solve(backend, time_limit=5)
    assert sol.status == "INFEASIBLE" and sol.values is None


def test_continuous_variables_and_equality_rows_on_the_mip_backends():
    for backend in ("highs", "cbc", "scip"):
        m = Model()
        x = m.add_variables(1, lb=0, ub=10, integer=False)
        y = m.add_variables(1, lb=0, ub=10, integer=True)
        m.add_row([x[0], y[0]], [1, 1], lo=2.5, hi=2.5)
        m.minimise([x[0], y[0]], [1, 0.1])  # x = 0.5, y = 2: 0.5 + 0.2
        sol = m.solve(backend, time_limit=5)
        assert sol.status == "OPTIMAL" and sol.objective == pytest.approx(0.7)


def test_cpsat_refuses_fractional_data_clearly():
    m = Model()
    x = m.add_variables(2)
    m.add_row(x, [0.5, 1], hi=1)
    m.minimise(x, [1, 1])
    with pytest.raises(ValueError, match="integer"):
        m.solve("cpsat")


def test_bad_solve_arguments():
    m, _ = _knapsack([1], [1], 1)
    with pytest.raises(ValueError, match="unknown MILP backend 'gurobi'"):
        m.solve("gurobi")
    with pytest.raises(ValueError, match="time_limit must be > 0"):
        m.solve("cpsat", time_limit=0)


def test_a_false_optimal_claim_is_downgraded_to_the_hint():
    # A backend claiming OPTIMAL for 0 while the hint (a feasible point) has -5: the claim is wrong.
    m, _ = _knapsack([3, 4], [5, 1], 3)
    m.set_hint([1, 0])
    lying = Solution("OPTIMAL", np.array([0.0, 0.0]), None, None, "fake", 0.0)
    sol = _guarded(m, lying)
    assert sol.status == "FEASIBLE" and sol.values.tolist() == [1, 0] and sol.objective == -5
    assert "claimed optimal" in sol.note


def test_a_point_that_breaks_the_model_is_discarded():
    m, _ = _knapsack([3, 4], [5, 1], 3)
    broken = Solution("OPTIMAL", np.array([1.0, 1.0]), None, None, "fake", 0.0)  # weight 7 > 3
    sol = _guarded(m, broken)
    assert sol.status == "NO_SOLUTION" and sol.values is None and "violating" in sol.note


def test_a_false_infeasible_claim_is_overruled_by_a_feasible_hint():
    m, _ = _knapsack([3, 4], [5, 1], 3)
    m.set_hint([0, 0])
    sol = _guarded(m, Solution("INFEASIBLE", None, None, None, "fake", 0.0))
    assert sol.status == "FEASIBLE" and sol.objective == 0


def test_the_objective_is_recomputed_not_trusted():
    m, _ = _knapsack([3, 4], [5, 1], 7)
    sol = _guarded(m, Solution("FEASIBLE", np.array([1.0, 1.0]), 123.0, None, "fake", 0.0))
    assert sol.objective == -6
