"""The timestamp rule both statistics engines share (albic/stats/events.py; the Spark job parses
text with it through a pandas UDF): each text is read on its own, whatever rows come before it."""

import pandas as pd

from albic.stats.periods import epoch_micros

TEXTS = [
    "2013-01-01T10:00:00Z",
    "2013-01-01T10:00:00+01:00",
    "2013-01-01 11:05",
    "20130101T1110",
    "2013-01-01",
    "2013-01-01T10:00:00.5-0530",
    "2013-01-01T10:00+01",
    "2013-01-01 10:00:00 +01:00",
    "2013-01-01T12:00:00",
]


def _alone(text):
    """Truth: the text parsed by itself (no neighbour to take a zone from), as UTC microseconds."""
    stamp = pd.Timestamp(text)
    stamp = stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")
    return stamp.value // 1000


def test_a_text_without_a_zone_is_utc_whatever_comes_before_it():
    # pandas 2.3 parsing these in one call read "2013-01-01 11:05" (after a +01:00 text) as
    # 10:05 UTC; in a CSV the answer then hung on the row order and on the engine's batches.
    truth = [_alone(t) for t in TEXTS]
    assert epoch_micros(pd.Series(TEXTS), "ts", "events").tolist() == truth
    assert epoch_micros(pd.Series(TEXTS[::-1]), "ts", "events").tolist() == truth[::-1]
    assert truth[2] == _alone("2013-01-01T11:05:00Z") and truth[1] == _alone("2013-01-01T09:00Z")
