"""Periods of a trace: period lengths, each event's period on a wall clock, the grid and labels.

One home for the time arithmetic of the statistics: both engines (pandas and Spark, the latter
through a pandas UDF) and the node-count series call these, so they cannot disagree.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from albic.base.errors import AlbicError
from albic.stats.events import check_timestamps

__all__ = [
    "PERIOD_LABEL",
    "parse_period",
    "parse_timezone",
    "epoch_micros",
    "period_starts",
    "period_grid",
    "period_labels",
]

#: A period's label: its start on the wall clock of the statistics' time zone.
PERIOD_LABEL = "%Y-%m-%dT%H:%M"
_UNITS = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "d": 86400}


def parse_period(text: str | int) -> int:
    """``"1h"`` -> 3600: a period length in whole seconds (units s, m/min, h, d).

    >>> parse_period("1h"), parse_period("15min"), parse_period("120s"), parse_period("1d")
    (3600, 900, 120, 86400)
    """
    if isinstance(text, int) and not isinstance(text, bool) and text > 0:
        seconds = text
    else:
        match = re.fullmatch(r"\s*(\d+)\s*(s|sec|m|min|h|d)\s*", str(text))
        if not match or int(match.group(1)) == 0:
            raise AlbicError(
                f"period {text!r}: expected a positive whole number and a unit, e.g. 1h, 15min, 120s, 1d"
            )
        seconds = int(match.group(1)) * _UNITS[match.group(2)]
    # Labels are YYYY-MM-DDTHH:MM, and a day must split into whole periods on the wall clock.
    if seconds % 60 or (seconds < 86400 and 86400 % seconds) or (seconds >= 86400 and seconds % 86400):
        raise AlbicError(
            f"period {text!r}: must be whole minutes that divide a day (e.g. 1min, 15min, 1h, 6h) "
            "or whole days"
        )
    return seconds


def epoch_micros(values: pd.Series, column: str, source: str) -> np.ndarray:
    """Event times as microseconds since the epoch (UTC); errors name the column, row and value
    (:func:`albic.stats.events.check_timestamps`)."""
    return check_timestamps(values, column, source)


def parse_timezone(name: str | None) -> str:
    """The IANA time-zone name ``name`` (default ``"UTC"``), checked: periods are floored on its
    wall clock.

    >>> parse_timezone(None), parse_timezone("Europe/Oslo")
    ('UTC', 'Europe/Oslo')
    """
    import zoneinfo

    if name is None or name == "UTC":
        return "UTC"
    try:
        zoneinfo.ZoneInfo(str(name))
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise AlbicError(
            f"--timezone {name!r}: not a known IANA time zone (e.g. UTC, Europe/Oslo, America/New_York)"
        ) from None
    return str(name)


def period_starts(micros: np.ndarray, period_seconds: int, timezone: str = "UTC") -> np.ndarray:
    """The start of each event's period as *wall-clock* seconds of ``timezone`` since 1970-01-01
    (for UTC: plain epoch seconds): the wall-clock time of the event floored to a multiple of the
    period. Both engines call this (the Spark job through a pandas UDF), so they cannot disagree.

    Reading chosen for daylight-saving changes (only outside UTC): a period is a stretch of wall
    clock, so the hour repeated when clocks go back is one period holding two hours of events, and
    the hour skipped when they go forward does not exist (it is not an empty period).

    >>> t = np.array([0, 3_599_999_999, 3_600_000_000])         # µs: 00:00, 00:59:59.99, 01:00 UTC
    >>> period_starts(t, 3600).tolist(), period_starts(t, 3600, "Asia/Kolkata").tolist()
    ([0, 0, 3600], [18000, 21600, 21600])
    """
    micros = np.asarray(micros, dtype=np.int64)
    seconds = np.floor_divide(micros, 1_000_000)
    if timezone != "UTC":
        utc = pd.DatetimeIndex(pd.to_datetime(micros, unit="us", utc=True))
        wall = utc.tz_convert(timezone).tz_localize(None)
        offset = (wall - utc.tz_localize(None)).to_numpy().astype("timedelta64[s]").astype(np.int64)
        seconds = seconds + offset
    return seconds - np.mod(seconds, period_seconds)


def period_grid(
    first_micros: int, last_micros: int, period_seconds: int, timezone: str = "UTC"
) -> np.ndarray:
    """Every period start (as :func:`period_starts`) from the first event's period to the last
    one's, empty periods included: the periods of the statistics.

    >>> hour = 3_600_000_000
    >>> period_grid(0, 3 * hour + 5, 3600).tolist()              # 00:00, 01:00, 02:00, 03:00
    [0, 3600, 7200, 10800]
    >>> len(period_grid(0, 365 * 24 * hour - 1, 3600))           # a year of hours
    8760
    """
    if timezone == "UTC":
        first, last = period_starts(np.array([first_micros, last_micros]), period_seconds)
        return np.arange(first, last + period_seconds, period_seconds, dtype=np.int64)
    # Walk the instants between the two events in steps that cannot jump over a period (time-zone
    # offsets are whole quarter hours) and keep the distinct wall-clock periods they fall in.
    step = np.gcd(period_seconds, 900) * 1_000_000
    instants = np.arange(first_micros, last_micros + step, step, dtype=np.int64)
    instants[-1] = min(instants[-1], last_micros)
    return np.unique(period_starts(instants, period_seconds, timezone))


def period_labels(starts_seconds: np.ndarray | pd.Series) -> np.ndarray:
    """``YYYY-MM-DDTHH:MM`` of each period start (wall-clock seconds, :func:`period_starts`)."""
    unique, inverse = np.unique(np.asarray(starts_seconds, dtype=np.int64), return_inverse=True)
    labels = pd.to_datetime(unique, unit="s").strftime(PERIOD_LABEL).to_numpy(dtype=object)
    return labels[inverse]
