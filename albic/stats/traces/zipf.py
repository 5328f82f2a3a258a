"""The zipf trace: a synthetic stream whose true rates are known, to check decisions against them.

Real traces hide what a planner should have known: their loads are a true rate seen through the
noise of counting. Here the true rates are generated, so a decision made from the counted loads
can be held against one made from the rates themselves (:func:`true_rates`).

- **Keys**: ``keys`` items; item ``i`` has a popularity that starts Zipf-skewed (``1 / rank **
  skew``, ranks shuffled) and drifts: its logarithm takes a random walk, a normal step of standard
  deviation ``drift`` per hour, so the skew persists while the hot items slowly change.
- **Volume**: ``events_per_hour`` events an hour on average, times a daily cycle
  ``1 + 0.5 sin(2 pi (h - 6) / 24)`` (a quiet night, a busy afternoon).
- **Events**: each hour, each item's count is Poisson with its true rate over the hour, the events
  spread uniformly in it. Deterministic under ``seed``.

Topology: ``item`` (count per item) -> ``category`` (``item % 16``: a coarser operator).

Example
-------
>>> events = load_events(days=1, keys=50, events_per_hour=100, seed=1)
>>> rates = true_rates(days=1, keys=50, events_per_hour=100, seed=1)
>>> rates.shape, round(float(rates.to_numpy().sum()))        # 24 hours x 50 items, ~2,400 events
((24, 50), 2400)
>>> abs(len(events) - 2400) < 150
True
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from albic.stats.spec import EdgeSpec, OperatorSpec, TopologySpec

__all__ = ["spec", "load_events", "true_rates", "DEFAULT_START"]

TIMESTAMP = "ts"
#: The first hour of the trace unless told.
DEFAULT_START = "2024-01-01"
_CATEGORIES = 16


def spec() -> TopologySpec:
    """``item`` (key: the item) -> ``category`` (key: its category)."""
    return TopologySpec(
        TIMESTAMP,
        (OperatorSpec("item", ("item",), bytes_per_key=1024.0), OperatorSpec("category", ("category",))),
        (EdgeSpec("item", "category"),),
    )


def true_rates(
    start: str | None = None,
    days: int | None = None,
    *,
    keys: int = 2000,
    skew: float = 1.0,
    drift: float = 0.05,
    events_per_hour: float = 4000.0,
    seed: int = 0,
) -> pd.DataFrame:
    """The expected events of each item in each hour: a frame indexed by the hours (UTC), one
    column per item (``"i17"``), the true rates behind :func:`load_events`' counts."""
    hours = pd.date_range(pd.Timestamp(start or DEFAULT_START, tz="UTC"), periods=24 * (days or 7), freq="h")
    rng = np.random.default_rng(seed)
    ranks = rng.permutation(keys) + 1
    log_popularity = -skew * np.log(ranks.astype(float))
    steps = rng.normal(0.0, drift, size=(len(hours), keys))
    steps[0] = 0.0
    popularity = np.exp(log_popularity + np.cumsum(steps, axis=0))
    shares = popularity / popularity.sum(axis=1, keepdims=True)
    cycle = 1.0 + 0.5 * np.sin(2 * np.pi * (hours.hour.to_numpy() - 6) / 24)
    rates = shares * (events_per_hour * cycle)[:, None]
    return pd.DataFrame(rates, index=hours, columns=[f"i{i}" for i in range(keys)])


def load_events(
    start: str | None = None,
    days: int | None = None,
    *,
    keys: int = 2000,
    skew: float = 1.0,
    drift: float = 0.05,
    events_per_hour: float = 4000.0,
    seed: int = 0,
) -> pd.DataFrame:
    """One event per item occurrence: ``ts`` (UTC, uniform within its hour), ``item``, ``category``."""
    rates = true_rates(
        start, days, keys=keys, skew=skew, drift=drift, events_per_hour=events_per_hour, seed=seed
    )
    rng = np.random.default_rng(seed + 1)
    counts = rng.poisson(rates.to_numpy())
    hour_of, item_of = np.nonzero(counts)
    repeats = counts[hour_of, item_of]
    hours = np.repeat(rates.index.asi8[hour_of], repeats)
    items = np.repeat(item_of, repeats)
    offsets = rng.integers(0, 3_600_000_000_000, size=hours.size)
    events = pd.DataFrame(
        {
            TIMESTAMP: pd.to_datetime(hours + offsets, utc=True),
            "item": [f"i{i}" for i in items],
            "category": [f"c{i % _CATEGORIES}" for i in items],
        }
    )
    return events.sort_values(TIMESTAMP, kind="stable").reset_index(drop=True)
