"""Periods of a trace: period lengths, each event's period on a wall clock, the grid and labels,
and each period's true length in seconds (daylight saving: :func:`period_lengths`).

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
    "period_lengths",
    "wall_seconds",
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


def period_lengths(
    starts_seconds: np.ndarray | pd.Series, period_seconds: int, timezone: str = "UTC"
) -> np.ndarray:
    """The true length in seconds of each period (its wall-clock start, as :func:`period_starts`
    gives it): the UTC instant its successor starts at minus the one it starts at. The instant a
    wall-clock time starts at is the earliest whose wall clock has reached it: the first of a
    repeated time, the first after a skipped one. So under daylight saving an hour's period lasts
    3,600 s except the hour repeated when clocks go back (7,200 s), and a day's 82,800 s or
    90,000 s on the days clocks change; rates are events over these lengths.

    >>> import pandas as pd
    >>> starts = pd.to_datetime(["2017-11-05T00:00", "2017-11-05T01:00", "2017-11-05T02:00"]).astype("int64") // 10**9
    >>> period_lengths(starts, 3600, "America/Chicago").tolist()
    [3600, 7200, 3600]
    >>> days = pd.to_datetime(["2017-03-12", "2017-11-05"]).astype("int64") // 10**9
    >>> period_lengths(days, 86400, "America/Chicago").tolist(), period_lengths(days, 86400).tolist()
    ([82800, 90000], [86400, 86400])
    """
    starts = np.asarray(starts_seconds, dtype=np.int64)
    if timezone == "UTC":
        return np.full(starts.shape, period_seconds, dtype=np.int64)
    unique, inverse = np.unique(starts, return_inverse=True)  # one row per key group and period
    lengths = _instant(unique + period_seconds, timezone) - _instant(unique, timezone)
    return lengths[inverse.reshape(starts.shape)]


def _instant(wall_seconds: np.ndarray, timezone: str) -> np.ndarray:
    """The UTC epoch seconds at which each wall-clock time of ``timezone`` is first reached."""
    wall = pd.DatetimeIndex(pd.to_datetime(wall_seconds, unit="s"))
    # Both readings of a repeated time, the earlier kept: which one is "daylight saving" differs
    # between zones (Europe/Dublin's winter time is its DST in the tz database).
    first, second = (
        wall.tz_localize(timezone, ambiguous=np.full(wall.size, dst), nonexistent="shift_forward")
        .tz_convert("UTC")
        .tz_localize(None)
        .to_numpy()
        .astype("datetime64[s]")
        .astype(np.int64)
        for dst in (True, False)
    )
    return np.minimum(first, second)


def wall_seconds(labels: np.ndarray | pd.Series | list[str]) -> np.ndarray:
    """The wall-clock start seconds of period labels (``YYYY-MM-DDTHH:MM``): the inverse of
    :func:`period_labels`."""
    times = pd.to_datetime(pd.Series(labels, dtype=object), format=PERIOD_LABEL)
    return times.to_numpy().astype("datetime64[s]").astype(np.int64)


def period_labels(starts_seconds: np.ndarray | pd.Series) -> np.ndarray:
    """``YYYY-MM-DDTHH:MM`` of each period start (wall-clock seconds, :func:`period_starts`)."""
    unique, inverse = np.unique(np.asarray(starts_seconds, dtype=np.int64), return_inverse=True)
    labels = pd.to_datetime(unique, unit="s").strftime(PERIOD_LABEL).to_numpy(dtype=object)
    return labels[inverse]
