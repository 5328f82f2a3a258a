"""The statistics datasets stay what they were: each run of tests/data/stats_golden/cases.py writes,
byte for byte, the dataset albic wrote before the statistics path was rebuilt around one
StatsRequest and one job skeleton (the goldens in tests/data/stats_golden/expected). The Spark
engine's twin of this test is tests/spark/test_stats_golden_spark.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

from albic.cli.main import main

GOLDEN = Path(__file__).parent / "data" / "stats_golden"
sys.path.insert(0, str(GOLDEN))
from cases import CASES  # noqa: E402  (the goldens' own list of runs)

FILES = ("manifest.json", "key_groups/part-0.parquet", "traffic/part-0.parquet", "nodes/part-0.parquet")


def write(name: str, out: Path, *engine: str) -> Path:
    """Run case ``name`` from the golden folder (its relative paths are what the manifest records)."""
    assert main(["stats", *CASES[name], *engine, "--out", str(out)]) == 0
    return out


@pytest.fixture(autouse=True)
def in_the_golden_folder(monkeypatch):
    monkeypatch.chdir(GOLDEN)


def test_every_golden_has_its_case():
    assert sorted(p.name for p in (GOLDEN / "expected").iterdir()) == sorted(CASES) and len(CASES) >= 5


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_pandas_engine_writes_the_golden_byte_for_byte(name, tmp_path):
    out = write(name, tmp_path / name, "--engine", "pandas")
    expected = GOLDEN / "expected" / name
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()) == sorted(FILES)
    for file in FILES:
        assert (out / file).read_bytes() == (expected / file).read_bytes(), file
    # and the tables are not empty: a golden of nothing would prove nothing
    assert len(pd.read_parquet(expected / "key_groups")) > 10
