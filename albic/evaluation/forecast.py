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
========================  ==================================================================

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

import numpy as np

from albic.base.errors import InvalidParameterError

__all__ = ["last", "ewma", "seasonal", "mean", "Forecaster", "parse_forecaster", "FORECASTER_HELP"]

FORECASTER_HELP = "last, ewma:ALPHA (0 < ALPHA <= 1), seasonal:K or mean:K (K a whole number >= 1)"

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


@dataclass(frozen=True)
class Forecaster:
    """A forecaster with its argument: ``spec`` as given (``"ewma:0.3"``), the function, and the
    number of latest periods it reads (``window``)."""

    spec: str
    function: Callable[[np.ndarray], np.ndarray]
    window: int

    def __call__(self, history: np.ndarray) -> np.ndarray:
        return self.function(np.asarray(history, dtype=float)[-self.window :])


def _whole(spec: str, text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1 or str(value) != text.strip():
        raise InvalidParameterError(f"forecaster {spec!r}: K must be a whole number >= 1, got {text!r}")
    return value


def _alpha(spec: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.0 < value <= 1.0:
        raise InvalidParameterError(f"forecaster {spec!r}: ALPHA must be in (0, 1], got {text!r}")
    return value


def parse_forecaster(spec: str) -> Forecaster:
    """``"last"``, ``"ewma:ALPHA"``, ``"seasonal:K"`` or ``"mean:K"`` -> a :class:`Forecaster`.

    >>> parse_forecaster("seasonal:24").window
    24
    >>> parse_forecaster("median:3")
    Traceback (most recent call last):
    ...
    albic.base.errors.InvalidParameterError: forecaster 'median:3': unknown; use last, ewma:ALPHA (0 < ALPHA <= 1), seasonal:K or mean:K (K a whole number >= 1)
    """
    name, colon, argument = str(spec).strip().partition(":")
    if name == "last" and not colon:
        return Forecaster(spec, last, 1)
    if name == "ewma" and colon:
        alpha = _alpha(spec, argument)
        window = 1 if alpha == 1.0 else max(1, math.ceil(math.log(_EWMA_NEGLIGIBLE) / math.log1p(-alpha)))
        return Forecaster(spec, functools.partial(ewma, alpha=alpha), window)
    if name in ("seasonal", "mean") and colon:
        k = _whole(spec, argument)
        function = seasonal if name == "seasonal" else mean
        return Forecaster(spec, functools.partial(function, k=k), k)
    raise InvalidParameterError(f"forecaster {spec!r}: unknown; use {FORECASTER_HELP}")
