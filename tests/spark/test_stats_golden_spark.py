"""The Spark engine writes the goldens' tables too (tests/test_stats_golden.py for the pandas engine,
byte for byte): Spark's Parquet files differ in name and bytes from run to run even for the same
rows, so the rows are compared, and the manifest field by field (only ``engine`` names Spark)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd
import pytest

from albic.cli.main import main
from albic.stats.pandas_engine import KG_COLUMNS, TRAFFIC_COLUMNS, canonical

GOLDEN = Path(__file__).parents[1] / "data" / "stats_golden"
sys.path.insert(0, str(GOLDEN))
from cases import CASES  # noqa: E402  (the goldens' own list of runs)


@pytest.mark.parametrize("name", ["user", "user_oslo", "flink_hash"])
def test_the_spark_engine_writes_the_goldens_tables(name, spark, tmp_path, monkeypatch):
    monkeypatch.chdir(GOLDEN)
    out = tmp_path / name
    assert main(["stats", *CASES[name], "--master", spark.sparkContext.master, "--out", str(out)]) == 0
    expected = GOLDEN / "expected" / name
    for table, columns in (("key_groups", KG_COLUMNS), ("traffic", TRAFFIC_COLUMNS), ("nodes", None)):
        got, want = pd.read_parquet(out / table), pd.read_parquet(expected / table)
        if columns:  # Spark writes rows in no particular order
            got, want = canonical(got, columns), canonical(want, columns)
        assert len(want) > 0 or table == "traffic"  # flink_hash's spec has no edges
        pd.testing.assert_frame_equal(got, want, check_exact=True)
    manifest = json.loads((out / "manifest.json").read_text())
    golden = json.loads((expected / "manifest.json").read_text())
    assert manifest.pop("engine").startswith("spark ") and golden.pop("engine") == "pandas"
    assert manifest == golden
