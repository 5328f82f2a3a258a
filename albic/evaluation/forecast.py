"""Forecasters: the loads of period t from the loads of the periods before it.

A forecaster is a function of ``history``, a 2-D array with one row per period before t (oldest
first) and one column per key group, that returns one forecast per key group. A replay that
decides on a forecast (``decide_on="forecast:NAME"``, :mod:`albic.evaluation.decide`) hands it at
most :attr:`Forecaster.window` rows: the periods the forecast can depend on.

========================  ==================================================================
``last``                  the value of period t-1 (what ``decide_on="previous"`` uses)
``ewma:ALPHA``            exponentially weighted moving average, ``s = ALPHA x + (1-ALPHA) s``
                          from the oldest period on (``s`` starts at the oldest value)
``seasonal:K``            the value K periods back (``24`` for a daily cycle of hourly
                          periods); ``last`` while fewer than K periods are known
``mean:K``                the mean of the last K periods (of all known, while fewer)
``shrink:K``              each key group's share of the load shrunk toward its own history by
                          how much of its change is counting noise: the Kalman filter of a
                          local-level model over the last K periods (:func:`shrink`)
========================  ==================================================================

**Errors.** Each forecast also carries its standard error (:meth:`Forecaster.with_errors`), from
the load errors of the periods it reads (:class:`~albic.core.model.KeyGroup`'s ``load_error``:
for event counts, Poisson's ``load / sqrt(events)``). The first four are weighted sums of the
history, ``sum_k w_k x_k``, so their error is ``sqrt(sum_k w_k^2 s_k^2)`` for independent
errors ``s_k`` (``mean:24`` of loads of equal error: the error over ``sqrt(24)``); ``shrink``
gives its filter's own. A period without errors (NaN) counts as exact.

Example
-------
>>> import numpy as np
>>> history = np.array([[1.0, 10.0], [3.0, 10.0], [5.0, 40.0]])   # three periods, two key groups
>>> parse_forecaster("last")(history).tolist()
[5.0, 40.0]
>>> parse_forecaster("mean:2")(history).tolist()
[4.0, 25.0]
>>> parse_forecaster("seasonal:3")(history).tolist(), parse_forecaster("seasonal:4")(history).tolist()
([1.0, 10.0], [5.0, 40.0])
>>> parse_forecaster("ewma:0.5")(history).tolist()
[3.5, 25.0]
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from albic.base.errors import InvalidParameterError
from albic.core.planner import Interval, check_params

__all__ = ["last", "ewma", "seasonal", "mean", "shrink", "Forecaster", "parse_forecaster", "FORECASTER_HELP"]

FORECASTER_HELP = "last, ewma:ALPHA (0 < ALPHA <= 1), seasonal:K, mean:K or shrink:K (K a whole number >= 1)"

# An ewma reads back until the oldest weight, (1 - alpha) ** window, is below a float's resolution:
# older periods cannot change the forecast's value.
_EWMA_NEGLIGIBLE = 1e-17


def last(history: np.ndarray) -> np.ndarray:
    """The latest known value: period t-1's.

    >>> last(np.array([[1.0], [2.0]])).tolist()
    [2.0]
    """
    return np.array(history[-1], dtype=float)


def ewma(history: np.ndarray, alpha: float) -> np.ndarray:
    """Exponentially weighted moving average: ``s_1 = x_1``, ``s_k = alpha x_k + (1 - alpha) s_(k-1)``,
    forecast ``s`` of the latest period. ``alpha = 1`` is :func:`last`.

    >>> ewma(np.array([[0.0], [8.0], [4.0]]), 0.25).tolist()   # 0 -> 2 -> 2.5
    [2.5]
    """
    smoothed = np.array(history[0], dtype=float)
    for row in history[1:]:
        smoothed = alpha * np.asarray(row, dtype=float) + (1.0 - alpha) * smoothed
    return smoothed


def seasonal(history: np.ndarray, k: int) -> np.ndarray:
    """The value ``k`` periods before the forecast period (a season back); the latest value while
    fewer than ``k`` periods are known.

    >>> seasonal(np.array([[1.0], [2.0], [3.0]]), 2).tolist(), seasonal(np.array([[1.0]]), 2).tolist()
    ([2.0], [1.0])
    """
    return np.array(history[-k] if len(history) >= k else history[-1], dtype=float)


def mean(history: np.ndarray, k: int) -> np.ndarray:
    """The mean of the latest ``k`` periods (of every known period, while fewer are known).

    >>> mean(np.array([[1.0], [2.0], [6.0]]), 2).tolist()
    [4.0]
    """
    return np.asarray(history[-k:], dtype=float).mean(axis=0)


def shrink(history: np.ndarray, errors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each key group's load shrunk toward its own history by how much of its change is noise,
    with the forecast's standard error: the Kalman filter of a **local-level model** (Harvey 1989,
    ch. 2) run over the ``history`` rows, oldest first, on each key group's *share* of its
    period's load (a balance is a matter of shares, and a daily cycle moves the total, not them).

    The model reads a key group's measured share ``x_t = mu_t + e_t`` as a true share ``mu_t``
    that drifts as a random walk, ``mu_t = mu_(t-1) + d_t``, plus counting noise ``e_t``. The
    noise's variance is Poisson's, from a model fitted over the window (:func:`_share_noise`: one
    event's load times the key group's mean share over the period's total), not each period's own
    count, which would trust low counts more and bias the level low. The drift is one relative
    figure for all key groups, ``var(d) = c mu^2`` (a share's logarithm walks), with ``c`` by the
    method of moments pooled over every key group and change of the window: the squared changes
    less the noise of their two periods, at least 0. The filter then weighs each new share by its
    gain ``P / (P + noise)``: while the shares move no more than the counts explain (``c`` near
    0) the forecast is near each key group's mean share over the window (the empirical-Bayes
    shrinkage toward its own history), when they really move it follows them. The forecast is
    the level times the latest period's total, its error ``sqrt(P + drift)`` times that total.
    Periods without load say nothing of the shares and are passed over; without errors (NaN, a
    history without counts) the noise is 0, and the forecast is the latest load (``last``).

    >>> steady = np.array([[12.0, 28.0], [7.0, 33.0], [11.0, 29.0], [10.0, 30.0]])   # counts
    >>> forecast, error = shrink(steady, np.sqrt(steady))   # a 1:3 split that counting blurs
    >>> forecast.round(2).tolist(), error.round(2).tolist()
    ([10.0, 30.0], [1.58, 2.74])
    >>> moving = np.array([[10.0, 30.0], [20.0, 20.0], [30.0, 10.0], [38.0, 2.0]])
    >>> shrink(moving, np.sqrt(np.maximum(moving, 1)))[0].round(2).tolist()   # a real shift: near the latest
    [35.68, 5.33]
    """
    history = np.asarray(history, dtype=float)
    errors = np.nan_to_num(np.asarray(errors, dtype=float), nan=0.0)
    totals = history.sum(axis=1)
    latest_total = float(totals[-1])
    loaded = totals > 0  # a period without load says nothing of the shares
    if not loaded.any():
        return np.zeros(history.shape[1]), errors[-1].copy()
    shares = history[loaded] / totals[loaded, None]
    level, spread = _local_level(shares, _share_noise(history[loaded], errors[loaded], totals[loaded]))
    return level * latest_total, np.sqrt(spread) * latest_total


def _share_noise(history: np.ndarray, errors: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """The noise variance of each key group's share of each period's load, from a Poisson model
    fitted over the window rather than each period's own count: weighting each period by its own
    count's error would trust low counts more and bias the level low. A key group's load of one
    event, ``u``, is its errors' square over its load (``s^2 = u x``, or ``s`` itself where it has
    no load); its share's variance in a period of total ``T`` is ``u x_mean / T^2``, with
    ``x_mean`` its mean share over the window times ``T`` (at least one event over the window)."""
    squared, loads = (errors**2).sum(axis=0), history.sum(axis=0)
    per_event = np.where(
        loads > 0, np.divide(squared, loads, out=np.zeros_like(loads), where=loads > 0), errors.max(axis=0)
    )
    mean_share = np.maximum(loads, per_event) / totals.sum()
    return per_event * mean_share / totals[:, None]


def _local_level(history: np.ndarray, noise: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    level, spread = history[0].copy(), noise[0].copy()
    if len(history) < 2:
        return level, spread
    # One relative drift for every key group: a share drifts in proportion to its size (its
    # logarithm walks), and one figure pooled over all of them is estimated far more steadily
    # than one per key group from a few noisy changes.
    excess = (np.diff(history, axis=0) ** 2 - noise[1:] - noise[:-1]).sum()
    squared_means = history.mean(axis=0) ** 2
    size = squared_means.sum() * (len(history) - 1)
    drift = max(0.0, float(excess) / size) * squared_means if size > 0 else np.zeros(history.shape[1])
    for row, row_noise in zip(history[1:], noise[1:]):
        predicted = spread + drift
        total = predicted + row_noise
        gain = np.divide(predicted, total, out=np.ones_like(total), where=total > 0)
        level = level + gain * (row - level)
        spread = (1.0 - gain) * predicted
    return level, spread + drift


@dataclass(frozen=True)
class Forecaster:
    """A forecaster with its argument: ``spec`` as given (``"ewma:0.3"``), the function, and the
    number of latest periods it reads (``window``); ``with_errors_function`` for a forecaster that
    is not a weighted sum of the history (``shrink``), which gives its own errors."""

    spec: str
    function: Callable[[np.ndarray], np.ndarray]
    window: int
    with_errors_function: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]] | None = None

    def __call__(self, history: np.ndarray) -> np.ndarray:
        return self.function(np.asarray(history, dtype=float)[-self.window :])

    def with_errors(self, history: np.ndarray, errors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The forecast and its standard error per key group, from the ``history`` and the load
        errors of its rows (module docstring, "Errors").

        >>> forecaster = parse_forecaster("mean:4")
        >>> forecast, error = forecaster.with_errors(np.full((4, 1), 8.0), np.full((4, 1), 2.0))
        >>> forecast.tolist(), error.tolist()
        ([8.0], [1.0])
        """
        history = np.asarray(history, dtype=float)[-self.window :]
        errors = np.nan_to_num(np.asarray(errors, dtype=float)[-self.window :], nan=0.0)
        if self.with_errors_function is not None:
            return self.with_errors_function(history, errors)
        # A weighted sum's weights: the forecast of a history whose column k is 1 in row k alone.
        weights = np.asarray(self.function(np.eye(len(history))), dtype=float)
        return self.function(history), np.sqrt((weights[:, None] ** 2 * errors**2).sum(axis=0))


# The forecasters' arguments, as FORECASTER_HELP tells them to users.
_ALPHA = Interval(float, 0, 1, closed="right")
_WINDOW = Interval(int, 1)
_SHRINK_WINDOW = Interval(int, 2, note="shrink estimates the drift from changes")


def _argument(spec: str, name: str, text: str, rule: Interval) -> Any:
    """The number ``text`` writes, checked against ``rule``; what is not a number of the rule's kind
    as written (``"1.5"`` or ``"03"`` for an int) is refused as the text itself."""
    try:
        value = rule.kind(text)
    except ValueError:
        value = text
    if rule.kind is int and str(value) != text.strip():
        value = text
    check_params(f"forecaster {spec!r}", {name: value}, {name: rule})
    return value


def parse_forecaster(spec: str) -> Forecaster:
    """``"last"``, ``"ewma:ALPHA"``, ``"seasonal:K"`` or ``"mean:K"`` -> a :class:`Forecaster`.

    >>> parse_forecaster("seasonal:24").window
    24
    >>> parse_forecaster("median:3")
    Traceback (most recent call last):
    ...
    albic.base.errors.InvalidParameterError: forecaster 'median:3': unknown; use last, ewma:ALPHA (0 < ALPHA <= 1), seasonal:K, mean:K or shrink:K (K a whole number >= 1)
    """
    name, colon, argument = str(spec).strip().partition(":")
    if name == "last" and not colon:
        return Forecaster(spec, last, 1)
    if name == "ewma" and colon:
        alpha = _argument(spec, "ALPHA", argument, _ALPHA)
        window = 1 if alpha == 1.0 else max(1, math.ceil(math.log(_EWMA_NEGLIGIBLE) / math.log1p(-alpha)))
        return Forecaster(spec, functools.partial(ewma, alpha=alpha), window)
    if name == "shrink" and colon:
        k = _argument(spec, "K", argument, _SHRINK_WINDOW)
        return Forecaster(spec, lambda history: shrink(history, np.zeros_like(history))[0], k, shrink)
    if name in ("seasonal", "mean") and colon:
        k = _argument(spec, "K", argument, _WINDOW)
        function = seasonal if name == "seasonal" else mean
        return Forecaster(spec, functools.partial(function, k=k), k)
    raise InvalidParameterError(f"forecaster {spec!r}: unknown; use {FORECASTER_HELP}")
