"""Numbers for people: one format per kind, for every command's text and every figure.

Text only: JSON output keeps the exact values (a move's ``cost`` in bytes, seconds as floats), and
the text shows them in these forms.

=============  ==============================  ================================================
kind           function                        example
=============  ==============================  ================================================
percentage     :func:`percent` (value in %)    ``percent(30)`` -> ``30.00%``
share (0..1)   :func:`share`                   ``share(0.2636)`` -> ``26.36%``
share change   :func:`points`                  ``points(0.0824)`` -> ``8.24 percentage points``
bytes          :func:`size` (binary units)     ``size(9216)`` -> ``9.00 KiB``
seconds        :func:`seconds`                 ``seconds(0.0004)`` -> ``0.4 ms``
multiple       :func:`times`                   ``times(1.4)`` -> ``1.40x``
quantity       :func:`number` (load, rate)     ``number(13.0)`` -> ``13``
count          :func:`count` (plurals right)   ``count(1, "move")`` -> ``1 move``
a misspelt     :func:`did_you_mean`            ``did_you_mean("flxu", ["flux"])`` ->
name                                           `` (did you mean 'flux'?)``
=============  ==============================  ================================================

A missing value (None or NaN) is ``-`` in every kind.

Example
-------
>>> percent(120), share(0.5), size(54016), size(512), seconds(7.25), seconds(125)
('120.00%', '50.00%', '52.8 KiB', '512 B', '7.25 s', '2 min 05 s')
>>> count(2, "batch", "batches"), count(1, "key group"), number(1234567.0), number(0.25)
('2 batches', '1 key group', '1,234,567', '0.25')
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable

__all__ = ["percent", "share", "points", "size", "seconds", "times", "number", "count", "did_you_mean"]

_MISSING = "-"
_SIZE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")


def _missing(value: float | None) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _significant(value: float, digits: int) -> str:
    """``value`` with ``digits`` significant digits, trailing zeros dropped, and no exponent for
    large values (whole numbers with thousands separated); tiny ones keep theirs (``1e-07``)."""
    text = f"{value:.{digits}g}"
    return f"{value:,.0f}" if "e" in text and abs(value) >= 1 else text


def percent(value: float | None) -> str:
    """A value already in percent (load distance in % of the mean, state moved in % of all)."""
    return _MISSING if _missing(value) else f"{value:.2f}%"


def share(value: float | None) -> str:
    """A share 0..1 (collocation factor, budget used) as a percentage."""
    return _MISSING if _missing(value) else percent(100 * value)


def points(value: float | None) -> str:
    """A change of a share (0..1), in percentage points (the difference of two :func:`share`)."""
    return _MISSING if _missing(value) else f"{100 * value:.2f} percentage points"


def size(value: float | None) -> str:
    """Bytes in binary units, three significant digits (whole bytes below 1 KiB)."""
    if _missing(value):
        return _MISSING
    scaled, unit = float(value), 0
    while abs(scaled) >= 1024 and unit < len(_SIZE_UNITS) - 1:
        scaled /= 1024
        unit += 1
    if unit == 0:
        return f"{scaled:.0f} B"
    decimals = 2 if abs(scaled) < 10 else 1 if abs(scaled) < 100 else 0
    return f"{scaled:.{decimals}f} {_SIZE_UNITS[unit]}"


def seconds(value: float | None) -> str:
    """A duration: milliseconds below one second, seconds below a minute (three significant
    digits), then minutes and seconds, hours and minutes."""
    if _missing(value):
        return _MISSING
    if value < 1:
        text = _significant(value * 1000, 3)
        if float(text.replace(",", "")) < 1000:
            return f"{text} ms"
    if value < 59.5:
        return f"{_significant(value, 3)} s"
    whole = round(value)
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    return f"{whole // 3600} h {whole % 3600 // 60:02d} min"


def times(value: float | None) -> str:
    """A multiple of a reference (a node's utilisation as a multiple of the mean)."""
    return _MISSING if _missing(value) else f"{value:.2f}x"


def number(value: float | None) -> str:
    """A quantity without a unit of its own (a load, a rate, a utilisation): four significant
    digits, large ones whole with thousands separated."""
    return _MISSING if _missing(value) else _significant(float(value), 4)


def count(n: int, word: str, plural: str | None = None) -> str:
    """``n`` things with the word in the right number: ``1 move``, ``2 moves``."""
    return f"{n:,} {word if n == 1 else plural or word + 's'}"


def did_you_mean(word: str, options: Iterable[str], lead: str = " (", end: str = ")") -> str:
    """``" (did you mean 'flux'?)"`` when one of ``options`` is close to a misspelt ``word``, else
    ``""``: the hint every "unknown name" message gives (``lead`` and ``end`` wrap it).

    >>> did_you_mean("flxu", ["flux", "milp"]), did_you_mean("zzz", ["flux"]), did_you_mean("cots", ["cost"], "; ", "")
    (" (did you mean 'flux'?)", '', "; did you mean 'cost'?")
    """
    close = difflib.get_close_matches(str(word), list(options), n=1, cutoff=0.6)
    return f"{lead}did you mean {close[0]!r}?{end}" if close else ""
