"""albic.base.formats: one format per kind of number, at the edges."""

from __future__ import annotations

import math

import pytest

from albic.base.formats import count, number, percent, points, seconds, share, size, times


@pytest.mark.parametrize(
    "value, text",
    [
        (0, "0 B"),
        (1023, "1023 B"),
        (1024, "1.00 KiB"),
        (9216, "9.00 KiB"),
        (54016, "52.8 KiB"),
        (150 * 1024, "150 KiB"),
        (3 * 1024**3, "3.00 GiB"),
        (1024**7, "1024 EiB"),
    ],
)
def test_sizes_in_binary_units(value, text):
    assert size(value) == text


@pytest.mark.parametrize(
    "value, text",
    [
        (0.0, "0 ms"),
        (0.0004, "0.4 ms"),
        (0.3777, "378 ms"),
        (0.25, "250 ms"),
        (0.9999, "1 s"),
        (7.25, "7.25 s"),
        (59.4, "59.4 s"),
        (59.6, "1 min 00 s"),
        (125, "2 min 05 s"),
        (7300, "2 h 01 min"),
    ],
)
def test_seconds_in_one_form(value, text):
    assert seconds(value) == text


def test_the_other_kinds_and_missing_values():
    assert (percent(9.954), share(0.2607), points(0.0587), times(1.4)) == (
        "9.95%",
        "26.07%",
        "5.87 percentage points",
        "1.40x",
    )
    assert (number(13.0), number(0.25), number(1234567.8), number(1e-7)) == (
        "13",
        "0.25",
        "1,234,568",
        "1e-07",
    )
    for kind in (percent, share, points, size, seconds, times, number):
        assert kind(None) == kind(math.nan) == "-"


def test_plurals():
    assert [count(n, "move") for n in (0, 1, 2)] == ["0 moves", "1 move", "2 moves"]
    assert count(1, "batch", "batches") == "1 batch" and count(3, "batch", "batches") == "3 batches"
    assert count(1200, "key group") == "1,200 key groups"
