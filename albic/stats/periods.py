"""Periods of a trace: period lengths, each event's period on a wall clock, the grid and labels,
each period's true length in seconds (daylight saving: :func:`period_lengths`) and the partial
first and last periods that the events cover only in part (:func:`partial_periods`).

Alignment: periods up to a day divide the local day (``1d`` starts at local midnight); longer
ones (``Nd``, ``Nw``) count from an origin taken from the first event (:func:`period_origin`):
its local midnight for days, the Monday 00:00 on or before it for weeks (ISO weeks).

One home for the time arithmetic of the statistics: the engines (pandas; Spark through a pandas
UDF; DuckDB for labels, lengths and partial periods) and the node-count series call these, so they
cannot disagree. Spark in UTC and DuckDB in every zone compute :func:`period_starts`' arithmetic
themselves instead (integers only, tested equal to it in ``tests/spark/test_stats_periods.py``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import numpy as np
import pandas as pd

from albic.base.errors import AlbicError
from albic.stats.events import check_timestamps

__all__ = [
    "PERIOD_LABEL",
    "parse_period",
    "period_in_weeks",
    "period_origin",
    "time_tick",
    "TICKS",
    "partial_periods",
    "TYPICAL_QUANTILE",
    "rate_seconds",
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
_UNITS = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "d": 86400, "w": 604800}
_PERIOD = re.compile(r"\s*(\d+)\s*(s|sec|m|min|h|d|w)\s*")
DAY = 86400
#: The time resolutions a trace's timestamps may have, coarsest first, in microseconds:
#: a day, an hour, a minute, a second, a millisecond, a microsecond (:func:`time_tick`).
TICKS = (86_400_000_000, 3_600_000_000, 60_000_000, 1_000_000, 1_000, 1)


def parse_period(text: str | int) -> int:
    """``"1h"`` -> 3600: a period length in whole seconds (units s, m/min, h, d, w).

    >>> parse_period("1h"), parse_period("15min"), parse_period("120s"), parse_period("1d"), parse_period("2w")
    (3600, 900, 120, 86400, 1209600)
    """
    if isinstance(text, int) and not isinstance(text, bool) and text > 0:
        seconds = text
    else:
        match = _PERIOD.fullmatch(str(text))
        if not match or int(match.group(1)) == 0:
            raise AlbicError(
                f"period {text!r}: expected a positive whole number and a unit (s, min, h, d, w), "
                "e.g. 1h, 15min, 120s, 1d, 1w"
            )
        seconds = int(match.group(1)) * _UNITS[match.group(2)]
    # Labels are YYYY-MM-DDTHH:MM, and a day must split into whole periods on the wall clock.
    if seconds % 60 or (seconds < 86400 and 86400 % seconds) or (seconds >= 86400 and seconds % 86400):
        raise AlbicError(
            f"period {text!r}: must be whole minutes that divide a day (e.g. 1min, 15min, 1h, 6h), "
            "whole days (1d, 7d) or whole weeks (1w)"
        )
    return seconds


def period_in_weeks(text: str | int) -> bool:
    """Whether the period is given in weeks (``"1w"``, ``"2w"``): such periods are ISO weeks,
    starting on a Monday, where ``"7d"`` starts at the first event's local midnight.

    >>> period_in_weeks("1w"), period_in_weeks("7d"), period_in_weeks(604800)
    (True, False, False)
    """
    match = _PERIOD.fullmatch(str(text)) if isinstance(text, str) else None
    return bool(match) and match.group(2) == "w"


def period_origin(first_micros: int, period_seconds: int, timezone: str = "UTC", weeks: bool = False) -> int:
    """The wall-clock second (as :func:`period_starts`) the periods count from: 0 (1970) for
    periods of a day or less, which divide the local day; for longer ones the first event's local
    midnight, or with ``weeks`` the Monday 00:00 on or before it, so the first period starts with
    the data's first day or week, not at a multiple of the period since 1970.

    >>> wednesday = 1_704_284_200_000_000          # 2024-01-03T12:16:40 UTC, a Wednesday
    >>> pd.to_datetime([period_origin(wednesday, 604800, weeks=True),
    ...                 period_origin(wednesday, 604800)], unit="s").strftime("%a %Y-%m-%d %H:%M").tolist()
    ['Mon 2024-01-01 00:00', 'Wed 2024-01-03 00:00']
    >>> period_origin(wednesday, 3600)
    0
    """
    if not weeks and period_seconds <= DAY:
        return 0
    midnight = int(period_starts(np.array([first_micros]), DAY, timezone)[0])
    if weeks:  # 1970-01-01 was a Thursday: day d is a Monday when (d + 3) % 7 == 0
        midnight -= ((midnight // DAY + 3) % 7) * DAY
    return midnight


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
            f"parameter timezone {name!r}: not a known IANA time zone (e.g. UTC, Europe/Oslo, America/New_York)"
        ) from None
    return str(name)


def period_starts(
    micros: np.ndarray, period_seconds: int, timezone: str = "UTC", origin: int = 0
) -> np.ndarray:
    """The start of each event's period as *wall-clock* seconds of ``timezone`` since 1970-01-01
    (for UTC: plain epoch seconds): the wall-clock time of the event floored to a multiple of the
    period counted from ``origin`` (wall-clock seconds, :func:`period_origin`). The pandas engine
    calls this, and Spark outside UTC through a pandas UDF with the same origin; Spark in UTC and
    DuckDB repeat its integer steps themselves, tested equal to it (module docstring).

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
    return seconds - np.mod(seconds - origin, period_seconds)


def period_grid(
    first_micros: int, last_micros: int, period_seconds: int, timezone: str = "UTC", origin: int = 0
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
        first, last = period_starts(np.array([first_micros, last_micros]), period_seconds, origin=origin)
        return np.arange(first, last + period_seconds, period_seconds, dtype=np.int64)
    # Walk the instants between the two events in steps that cannot jump over a period (time-zone
    # offsets are whole quarter hours) and keep the distinct wall-clock periods they fall in.
    step = np.gcd(period_seconds, 900) * 1_000_000
    instants = np.arange(first_micros, last_micros + step, step, dtype=np.int64)
    instants[-1] = min(instants[-1], last_micros)
    return np.unique(period_starts(instants, period_seconds, timezone, origin))


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


def time_tick(micros: np.ndarray) -> int:
    """The trace's time resolution in microseconds: the coarsest of :data:`TICKS` that every event
    time is a multiple of (a trace stamped by the hour: 3,600,000,000). An event stamped ``t``
    stands for the tick ``[t, t + tick)``, which is how far the events cover their last period.

    >>> time_tick(np.array([0, 7_200_000_000])), time_tick(np.array([0, 90_000_000])), time_tick(np.array([5]))
    (3600000000, 1000000, 1)
    """
    micros = np.asarray(micros, dtype=np.int64)
    return tick_of([int(np.count_nonzero(np.mod(micros, tick))) for tick in TICKS])


def tick_of(undivided: list[int]) -> int:
    """The coarsest tick of :data:`TICKS` with no event time off it, from the number of event
    times that are not a multiple of each tick (in :data:`TICKS`' order; the Spark job counts
    them in its one pass over the events).

    >>> tick_of([3, 3, 0, 0, 0, 0])
    60000000
    """
    return next((tick for tick, off in zip(TICKS, undivided) if off == 0), 1)


#: Which of the whole periods' uncovered ends a first or last period's must exceed to be partial:
#: the 90th percentile, so that an end the trace's own rhythm often leaves empty (a day of flights
#: before its first departure, a week's Monday in a quiet repository now and then) is not taken
#: for missing data, while one that nine whole periods in ten fill is.
TYPICAL_QUANTILE = 0.9


def partial_periods(
    bounds: Mapping[str, tuple[int, int]],
    period_seconds: int,
    timezone: str = "UTC",
    tick_micros: int = 1,
) -> dict[str, float]:
    """The first and last periods that the events cover only in part: label -> covered seconds.

    ``bounds`` holds each period's (label ->) first and last event time in microseconds (the
    periods with events). An event stamped ``t`` stands for its tick ``[t, t + tick)``
    (:func:`time_tick`). The first period is covered from its first event to its end, the last
    one from its start to the end of its last event's tick, one that is both from its first event
    to the end of its last one's tick (at least 1 s).

    Events leave the start of any period empty for a while (before a day's first departure, a
    week's first commit): the first period is partial when the stretch before its first event is
    longer than :data:`TYPICAL_QUANTILE` of the whole periods' (every period with events but the
    first and last), and the last one when the stretch after its last event's tick is longer than
    theirs at the end. Without whole periods to compare with, any uncovered stretch makes it
    partial. Rates of a partial period are events over its covered seconds.

    >>> hour = 3_600_000_000
    >>> def span(a, b): return (a * hour // 60, b * hour // 60)      # first and last, in minutes
    >>> days = {"1970-01-01T00:00": span(15, 58), "1970-01-01T01:00": span(61, 119), "1970-01-01T02:00": span(120, 150)}
    >>> partial_periods(days, 3600, tick_micros=60_000_000)        # 00:15 .. 02:30, by the minute
    {'1970-01-01T00:00': 2700.0, '1970-01-01T02:00': 1860.0}
    >>> days["1970-01-01T01:00"] = span(80, 119)                   # hour 1 starts 20 min late too
    >>> partial_periods(days, 3600, tick_micros=60_000_000)
    {'1970-01-01T02:00': 1860.0}
    """
    labels = sorted(bounds)
    starts = wall_seconds(labels)
    begin = _instant(starts, timezone) * 1_000_000
    end = _instant(starts + period_seconds, timezone) * 1_000_000
    first = np.array([bounds[label][0] for label in labels], dtype=np.int64)
    last = np.minimum(np.array([bounds[label][1] for label in labels], dtype=np.int64) + tick_micros, end)
    lead, trail = first - begin, end - last
    whole_lead, whole_trail = (
        np.quantile(x[1:-1], TYPICAL_QUANTILE) if len(x) > 2 else 0 for x in (lead, trail)
    )
    if len(labels) == 1:
        covered = max(int(last[0] - first[0]), 1_000_000)
        return {labels[0]: covered / 1e6} if covered < end[0] - begin[0] else {}
    partial = {}
    if lead[0] > whole_lead:
        partial[labels[0]] = float(end[0] - first[0]) / 1e6
    if trail[-1] > whole_trail:
        partial[labels[-1]] = float(last[-1] - begin[-1]) / 1e6
    return partial


def rate_seconds(
    starts_seconds: np.ndarray | pd.Series,
    period_seconds: int,
    timezone: str = "UTC",
    partial: dict[str, float] | None = None,
) -> np.ndarray:
    """The seconds each period's rates are over (as floats): its true length
    (:func:`period_lengths`), or for a partial period (``partial``, :func:`partial_periods`) the
    seconds the events cover.

    >>> rate_seconds(np.array([0, 3600]), 3600, partial={"1970-01-01T00:00": 900.0}).tolist()
    [900.0, 3600.0]
    """
    seconds = period_lengths(starts_seconds, period_seconds, timezone).astype(float)
    if partial:
        labels = period_labels(np.asarray(starts_seconds, dtype=np.int64))
        for label, covered in partial.items():
            seconds[labels == label] = covered
    return seconds
