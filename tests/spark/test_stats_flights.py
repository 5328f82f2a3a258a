"""The Spark job and its pandas twin give identical tables on the real flights trace; the demo's
Spark path runs end to end."""

import pandas as pd
import pytest

from albic.cli.main import main
from albic.spark.stats_engine import run_spark
from albic.stats.duckdb_engine import run_duckdb
from albic.stats.node_counts import NodeCountRule
from albic.stats.pandas_engine import KG_COLUMNS, TRAFFIC_COLUMNS, canonical, run_pandas
from albic.stats.traces import flights, write_events


@pytest.fixture(scope="module")
def flights_parquet(tmp_path_factory):
    path = tmp_path_factory.mktemp("flights") / "flights.parquet"
    # The whole year, 336,776 real flights: ~25 s of Spark and pandas on an idle 2-core machine.
    events = flights.load_events()
    write_events(events, path)
    return path, events


def test_spark_and_pandas_give_identical_tables_on_the_flights_trace(spark, flights_parquet, tmp_path):
    spec = flights.spec()
    options = {"period": "1h", "key_groups": 64, "nodes": NodeCountRule(4, 8)}
    path, events = flights_parquet
    run_spark(path, spec, tmp_path / "spark", spark=spark, **options)
    run_pandas(path, spec, tmp_path / "pandas", **options)
    for table, columns in (("key_groups", KG_COLUMNS), ("traffic", TRAFFIC_COLUMNS)):
        on_spark = canonical(pd.read_parquet(tmp_path / "spark" / table), columns)
        on_pandas = canonical(pd.read_parquet(tmp_path / "pandas" / table), columns)
        pd.testing.assert_frame_equal(on_spark, on_pandas, check_exact=True)
    pd.testing.assert_frame_equal(
        pd.read_parquet(tmp_path / "spark" / "nodes"), pd.read_parquet(tmp_path / "pandas" / "nodes")
    )
    kg = pd.read_parquet(tmp_path / "pandas" / "key_groups")
    # Truth independent of both engines: every flight is one event of `parse`; flights without a
    # tail number skip `tailnum`; `planes` sees exactly the events `tailnum` sees (1-to-1).
    counts = kg.groupby("operator")["events"].sum()
    assert counts["parse"] == len(events) == 336_776
    assert counts["tailnum"] == events["tailnum"].notna().sum() < len(events)
    assert counts["planes"] == counts["tailnum"]
    traffic = pd.read_parquet(tmp_path / "pandas" / "traffic")
    one_to_one = traffic[traffic["src"].str.startswith("tailnum/")]
    assert (one_to_one["src"].str.split("/").str[1] == one_to_one["dst"].str.split("/").str[1]).all()


def test_demo_on_spark(spark, tmp_path, capsys):
    code = main(
        [
            "demo",
            "--master",
            spark.sparkContext.master,
            "--days",
            "1",
            "--key-groups",
            "8",
            "--planners",
            "flux,storm_default",
            "--out",
            str(tmp_path),
        ]
    )
    stdout = capsys.readouterr().out
    assert code == 0
    assert "engine spark" in stdout.splitlines()[0]
    summary = pd.read_csv(tmp_path / "summary.csv")
    assert summary["planner"].tolist() == ["flux"] * 4 + ["storm_default"]  # flux at the 4 budgets
    assert (tmp_path / "stats" / "manifest.json").exists()


def test_duckdb_and_spark_agree_on_january_at_scale_10(spark, tmp_path):
    # 268,650 events: per operator, period and key group, and per pair of key groups.
    path = tmp_path / "january.parquet"
    events = flights.load_events(days=31)
    write_events(events, path)
    options = {"period": "1h", "key_groups": 128, "scale": 10}
    run_spark(path, flights.spec(), tmp_path / "spark", spark=spark, **options)
    run_duckdb(path, flights.spec(), tmp_path / "duckdb", **options)
    for table, columns in (("key_groups", KG_COLUMNS), ("traffic", TRAFFIC_COLUMNS)):
        on_spark = canonical(pd.read_parquet(tmp_path / "spark" / table), columns)
        pd.testing.assert_frame_equal(
            canonical(pd.read_parquet(tmp_path / "duckdb" / table), columns), on_spark, check_exact=True
        )
    kg = pd.read_parquet(tmp_path / "duckdb" / "key_groups")
    assert kg.groupby("operator")["events"].sum()["parse"] == 10 * len(events)
    assert kg["keys"].max() > 10  # copies' keys counted apart


def test_spark_and_pandas_agree_on_a_scaled_day(spark, tmp_path):
    path = tmp_path / "day.parquet"
    write_events(flights.load_events(start="2013-11-27", days=1), path)
    options = {"period": "1h", "key_groups": 16, "scale": 3}
    run_spark(path, flights.spec(), tmp_path / "spark", spark=spark, **options)
    run_pandas(path, flights.spec(), tmp_path / "pandas", **options)
    for table, columns in (("key_groups", KG_COLUMNS), ("traffic", TRAFFIC_COLUMNS)):
        pd.testing.assert_frame_equal(
            canonical(pd.read_parquet(tmp_path / "spark" / table), columns),
            canonical(pd.read_parquet(tmp_path / "pandas" / table), columns),
            check_exact=True,
        )
