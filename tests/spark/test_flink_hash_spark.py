"""The Spark engine computes Flink's key groups too (``hash = "flink"`` in the spec): on the shared
Flink trace its statistics equal the pandas engine's, and every key group's load is the count of
events that Flink's own assignment (flink_key_group, checked against the JVM in
tests/engines/test_flink_jvm.py) puts there."""

from __future__ import annotations

import numpy as np
import pandas as pd

from albic.cli.main import main
from albic.core.flink_keys import flink_key_group
from albic.io import read_snapshots


def test_spark_statistics_use_flinks_key_groups(spark, flink_trace, tmp_path):
    trace, spec, events = flink_trace
    for engine in ("spark", "pandas"):
        extra = ["--master", spark.sparkContext.master] if engine == "spark" else ["--engine", "pandas"]
        assert (
            main(
                [
                    "stats",
                    str(trace),
                    "--spec",
                    str(spec),
                    "--period",
                    "1h",
                    *extra,
                    "--out",
                    str(tmp_path / engine),
                ]
            )
            == 0
        )
    spark_snaps, pandas_snaps = (
        list(read_snapshots(tmp_path / "spark")),
        list(read_snapshots(tmp_path / "pandas")),
    )
    assert [s.period for s in spark_snaps] == [s.period for s in pandas_snaps] and len(spark_snaps) == 2
    for hour, (a, b) in enumerate(zip(spark_snaps, pandas_snaps)):
        assert [kg.id for kg in a.key_groups] == [f"sessions/{g}" for g in range(32)]
        assert [kg.load for kg in a.key_groups] == [kg.load for kg in b.key_groups]
        start = pd.Timestamp("2024-01-01") + pd.Timedelta(hours=hour)
        window = events[(events["ts"] >= start) & (events["ts"] < start + pd.Timedelta(hours=1))]
        counts = np.bincount(flink_key_group(window["user"].tolist(), max_parallelism=32), minlength=32)
        loads = np.array([kg.load for kg in a.key_groups])
        assert np.allclose(loads / loads.max(), counts / counts.max())
