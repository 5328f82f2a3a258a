"""Erlang C, M/M/k sojourn time and Jackson latency against published values and a brute-force CTMC."""

import math

import numpy as np
import pytest

from albic.solvers import queueing
from albic.solvers.queueing import erlang_b, erlang_c, jackson_latency, mmk_sojourn


def ctmc_mmk(lam: float, mu: float, k: int) -> tuple[float, float]:
    """P(wait) and mean sojourn time of M/M/k from the stationary distribution of its
    birth-death Markov chain, truncated where the tail is negligible (rho <= 0.9: 0.9**400 ~ 5e-19),
    solved as the linear system pi Q = 0 with one balance equation replaced by sum(pi) = 1."""
    states = k + 400
    q = np.zeros((states, states))
    for n in range(states - 1):
        q[n, n + 1] = lam
        q[n + 1, n] = min(n + 1, k) * mu
    np.fill_diagonal(q, -q.sum(axis=1))
    a = q.T.copy()
    a[-1, :] = 1.0
    b = np.zeros(states)
    b[-1] = 1.0
    pi = np.linalg.solve(a, b)
    p_wait = pi[k:].sum()
    mean_in_system = (np.arange(states) * pi).sum()
    return p_wait, mean_in_system / lam  # Little's law


# Published values: the Erlang C curve of a queueing textbook gives "about 0.10" for 6 Erlangs on
# 10 servers; the classic call-centre table (10 Erlangs offered) gives P(wait) = 0.6821 with 11
# agents and 0.4494 with 12. M/M/1: C = rho; M/M/2: C = a^2 / (2 + a) (closed form by hand:
# p0 = (1 + a + a^2/(2 - a))^-1, C = a^2/(2 - a) * p0 = a^2 / (2 + a)).
@pytest.mark.parametrize(
    "k, a, expected, tol",
    [
        (10, 6.0, 0.10, 0.005),
        (11, 10.0, 0.6821, 5e-5),
        (12, 10.0, 0.4494, 5e-5),
        (1, 0.7, 0.7, 1e-12),
        (2, 1.0, 1.0 / 3.0, 1e-12),
        (2, 1.5, 1.5**2 / 3.5, 1e-12),
    ],
)
def test_erlang_c_matches_published_values(k, a, expected, tol):
    assert erlang_c(k, a) == pytest.approx(expected, abs=tol)


@pytest.mark.parametrize("k", [1, 2, 3, 5, 8])
@pytest.mark.parametrize("rho", [0.1, 0.5, 0.9])
def test_erlang_c_and_sojourn_match_the_markov_chain(k, rho):
    mu = 2.0
    lam = rho * k * mu
    p_wait, sojourn = ctmc_mmk(lam, mu, k)
    assert erlang_c(k, lam / mu) == pytest.approx(p_wait, rel=1e-6)
    assert mmk_sojourn(lam, mu, k) == pytest.approx(sojourn, rel=1e-6)


def test_large_k_and_utilisation_near_one_stay_finite_and_consistent(monkeypatch):
    # No overflow where a**k / k! would overflow a float (k = 5000), and probabilities in [0, 1].
    for k, a in [(5000, 4999.0), (5000, 4000.0), (10**6, 10**6 - 1.0), (10**7, 10**7 * 0.999999)]:
        c = erlang_c(k, a)
        assert 0.0 < c <= 1.0 and math.isfinite(c)
    # Near saturation the sojourn time grows like 1 / (k mu - lam) but stays finite.
    t = mmk_sojourn(99.9999, 1.0, 100)
    assert math.isfinite(t) and t > 1e4
    # The log-space branch agrees with the recursion where both apply.
    for k, a in [(50, 45.0), (300, 290.0), (1500, 1400.0), (1500, 1499.5)]:
        by_recursion = erlang_b(k, a)
        monkeypatch.setattr(queueing, "RECURSION_LIMIT", 0)
        assert erlang_b(k, a) == pytest.approx(by_recursion, rel=1e-9)
        monkeypatch.setattr(queueing, "RECURSION_LIMIT", 2000)


def test_unstable_queues_are_inf_not_nan():
    assert erlang_c(3, 3.0) == 1.0 and erlang_c(3, 7.5) == 1.0
    assert mmk_sojourn(3.0, 1.0, 3) == math.inf
    assert mmk_sojourn(5.0, 1.0, 3) == math.inf
    assert jackson_latency([1.0, 5.0], [1.0, 1.0], [2, 3], input_rate=1.0) == math.inf


def test_jackson_latency_is_equation_1():
    # Two executors in series, both see the whole input (lambda_j = lambda_0 = 1):
    # E[T] = E[T_1](2) + E[T_2](1) = (1/3 + 1) + 1/(2 - 1) = 7/3 with mu = (1, 2).
    assert jackson_latency([1.0, 1.0], [1.0, 2.0], [2, 1], 1.0) == pytest.approx(7 / 3)
    # Half of the input to each of two parallel M/M/1 executors: E[T] = 0.5*1 + 0.5*1 = 1.
    assert jackson_latency([1.0, 1.0], [2.0, 2.0], [1, 1], 2.0) == pytest.approx(1.0)


@pytest.mark.parametrize(
    "call",
    [
        lambda: erlang_c(0, 1.0),
        lambda: erlang_c(2.5, 1.0),
        lambda: erlang_c(True, 1.0),
        lambda: erlang_c(2, -1.0),
        lambda: erlang_c(2, float("nan")),
        lambda: mmk_sojourn(1.0, 0.0, 2),
        lambda: mmk_sojourn(float("inf"), 1.0, 2),
        lambda: jackson_latency([1.0], [1.0], [1, 2], 1.0),
        lambda: jackson_latency([1.0], [1.0], [2], 0.0),
    ],
)
def test_bad_input_raises_value_error(call):
    with pytest.raises(ValueError):
        call()
