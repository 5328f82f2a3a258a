"""Erlang C, M/M/k sojourn time and the Jackson-network latency of Elasticutor (equation 1).

Numbers in, numbers out (no Snapshot). Every function is numerically stable for large ``k`` and
for utilisation close to 1:

- the Erlang B probability is computed by its recursion ``B(0) = 1``,
  ``B(n) = a B(n-1) / (n + a B(n-1))``, whose terms stay in ``[0, 1]`` (no ``a**k / k!``
  overflow); for ``k`` above :data:`RECURSION_LIMIT` it is computed in log space from the Poisson
  distribution instead, ``B = pmf(k; a) / cdf(k; a)``, which costs O(1) rather than O(k);
- Erlang C follows from B as ``C = k B / (k - a (1 - B))``, where the denominator is
  ``k - a + a B > 0`` for every stable queue (``a < k``), so nothing cancels to 0/0;
- an unstable queue (``a >= k``) is not an error: ``erlang_c`` returns 1 (every arrival waits)
  and the sojourn time and latency are ``inf``. Bad input (negative or NaN rates, ``k < 1``)
  raises ``ValueError`` naming the value; no function returns NaN.

Example
-------
>>> round(erlang_c(2, 1.0), 6)       # two servers, offered load 1 Erlang: C = 1/3
0.333333
>>> round(mmk_sojourn(1.0, 1.0, 2), 6)   # W = C / (k mu - lam) + 1/mu = 1/3 + 1
1.333333
>>> mmk_sojourn(2.0, 1.0, 2)         # k <= lam/mu: the queue grows without bound
inf
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy.special import gammaincc, gammaln

__all__ = ["erlang_b", "erlang_c", "mmk_sojourn", "jackson_latency", "RECURSION_LIMIT"]

#: Above this many servers Erlang B is computed in log space (O(1)) rather than by recursion (O(k)).
RECURSION_LIMIT = 2000


def _check_servers(k: object) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"the number of servers k = {k!r} must be an int >= 1")
    return int(k)


def _check_rate(name: str, value: object, *, positive: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} = {value!r} must be a real number")
    value = float(value)
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        rule = "a finite number > 0" if positive else "a finite number >= 0"
        raise ValueError(f"{name} = {value!r} must be {rule}")
    return value


def erlang_b(k: int, a: float) -> float:
    """Blocking probability of an M/M/k/k loss system with offered load ``a`` Erlangs.

    >>> round(erlang_b(1, 1.0), 6)   # B(1) = a / (1 + a)
    0.5
    """
    k = _check_servers(k)
    a = _check_rate("offered load a", a)
    if a == 0:
        return 0.0
    if k <= RECURSION_LIMIT:
        b = 1.0
        for n in range(1, k + 1):
            b = a * b / (n + a * b)
        return b
    # log pmf(k; a) - log cdf(k; a); cdf(k; a) = Q(k + 1, a), the regularised upper incomplete
    # gamma function. When a >> k the cdf underflows; B is then 1 - k/a + ..., within rounding of
    # the recursion's fixed point, and only unstable queues (a >= k) get there.
    cdf = float(gammaincc(k + 1, a))
    if cdf <= 0.0:
        return max(0.0, 1.0 - k / a)
    log_pmf = k * math.log(a) - a - float(gammaln(k + 1))
    return min(1.0, math.exp(log_pmf - math.log(cdf)))


def erlang_c(k: int, a: float) -> float:
    """Probability that an arrival waits in an M/M/k queue with offered load ``a = lam / mu``.

    Returns 1.0 when ``a >= k`` (the queue is unstable: every arrival eventually waits).

    >>> erlang_c(1, 0.5)   # M/M/1: C = rho
    0.5
    """
    k = _check_servers(k)
    a = _check_rate("offered load a", a)
    if a >= k:
        return 1.0
    b = erlang_b(k, a)
    return min(1.0, k * b / (k - a + a * b))


def mmk_sojourn(lam: float, mu: float, k: int) -> float:
    """Mean time in system (waiting + service) of an M/M/k queue, ``inf`` when ``k <= lam/mu``.

    ``lam`` is the arrival rate, ``mu`` the service rate of one server (core).

    >>> mmk_sojourn(0.0, 4.0, 3)   # nobody waits: the service time 1/mu
    0.25
    """
    lam = _check_rate("arrival rate lam", lam)
    mu = _check_rate("service rate mu", mu, positive=True)
    k = _check_servers(k)
    if lam >= k * mu:
        return math.inf
    return erlang_c(k, lam / mu) / (k * mu - lam) + 1.0 / mu


def jackson_latency(
    lams: Sequence[float], mus: Sequence[float], ks: Sequence[int], input_rate: float
) -> float:
    """Elasticutor's equation 1: ``(1 / lambda_0) * sum_j lambda_j * E[T_j](k_j)``.

    Each executor ``j`` is an M/M/k_j queue with arrival rate ``lams[j]`` and per-core service rate
    ``mus[j]``; ``input_rate`` is ``lambda_0``, the arrival rate of the input stream. ``inf`` when
    any executor is unstable; an executor with no arrivals contributes nothing.

    >>> round(jackson_latency([1.0, 1.0], [1.0, 2.0], [2, 1], input_rate=1.0), 6)  # 4/3 + 1
    2.333333
    """
    if not (len(lams) == len(mus) == len(ks)):
        raise ValueError(
            f"lams, mus and ks must have one entry per executor, got lengths "
            f"{len(lams)}, {len(mus)} and {len(ks)}"
        )
    lam0 = _check_rate("input_rate", input_rate, positive=True)
    total = 0.0
    for j, (lam, mu, k) in enumerate(zip(lams, mus, ks)):
        try:
            sojourn = mmk_sojourn(lam, mu, k)
        except ValueError as err:
            raise ValueError(f"executor {j}: {err}") from None
        if lam > 0:
            total += lam * sojourn
    return total / lam0
