"""`albic stats` through the CLI on a generated trace with gaps, on Spark and on the pandas twin:
every period present (empty ones with zero load), rates, time zones, and elasticutor planning every
period of the result."""

import json

import pandas as pd
import pytest

from albic.cli.main import main
from albic.evaluation.replay import replay
from albic.io import read_snapshots
from albic.stats.pandas_engine import KG_COLUMNS, canonical

SPEC = """
timestamp = "ts"
[[operators]]
name = "a"
keys = ["user"]
cost = 0.5
service_time = "secs"
[[operators]]
name = "b"
keys = ["city"]
cost = 2.0
[[edges]]
src = "a"
dst = "b"
"""

# Hours 10, 11 and 14 of 2013-01-01 have events; 12 and 13 have none (the gap). K = 2:
# ann -> 1, bob -> 0; oslo -> 0, rome -> 1 (tests/spark/test_stats_trace20.py checks the hash).
# `secs` is the measured service time of operator a (one row has none: not timed).
EVENTS = """ts,user,city,secs
2013-01-01T10:00:00Z,ann,oslo,0.2
2013-01-01T10:30:00Z,ann,rome,0.4
2013-01-01T10:45:00Z,bob,oslo,0.1
2013-01-01T11:15:00Z,bob,rome,NA
2013-01-01T11:20:00Z,bob,oslo,0.3
2013-01-01T14:59:59Z,ann,rome,0.5
"""
PERIODS = [f"2013-01-01T{h}:00" for h in (10, 11, 12, 13, 14)]


@pytest.fixture
def trace(tmp_path):
    (tmp_path / "events.csv").write_text(EVENTS)
    (tmp_path / "spec.toml").write_text(SPEC)
    return tmp_path


def run_stats(capsys, request, engine, trace, out, *extra):
    argv = [
        "stats",
        trace / "events.csv",
        "--spec",
        trace / "spec.toml",
        "--key-groups",
        "2",
        "--out",
        out,
        "--engine",
        engine,
        *extra,
    ]
    if engine == "spark":
        argv += ["--master", request.getfixturevalue("spark").sparkContext.master]
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return out


@pytest.mark.parametrize("engine", ["pandas", "duckdb", "spark"])
def test_every_period_is_present_with_rates(capsys, request, engine, trace):
    out = run_stats(capsys, request, engine, trace, trace / "out", "--node-counts", "3")
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["periods"] == 5 and manifest["timezone"] == "UTC"
    snaps = list(read_snapshots(out))
    assert [s.period for s in snaps] == PERIODS
    assert all(len(s.nodes) == 3 for s in snaps)
    by_period = {s.period: {kg.id: kg for kg in s.key_groups} for s in snaps}
    # The gap: same key groups, zero load, zero arrivals, the operator's service rate.
    for empty in PERIODS[2:4]:
        groups = by_period[empty]
        assert sorted(groups) == ["a/0", "a/1", "b/0", "b/1"]
        assert all(kg.load == 0 and kg.arrival_rate == 0 for kg in groups.values())
        assert groups["b/0"].service_rate == 1 / 2.0  # 1 / cost
        # a measures: 5 timed events over 0.2 + 0.4 + 0.1 + 0.3 + 0.5 = 1.5 busy seconds
        assert groups["a/0"].service_rate == pytest.approx(5 / 1.5)
    hour10, hour11 = by_period[PERIODS[0]], by_period[PERIODS[1]]
    assert hour10["a/1"].arrival_rate == pytest.approx(2 / 3600)  # ann twice
    assert hour10["a/1"].service_rate == pytest.approx(2 / 0.6)  # ann: 0.2 + 0.4 s
    assert hour10["a/0"].service_rate == pytest.approx(1 / 0.1)  # bob: 0.1 s
    assert hour11["a/0"].arrival_rate == pytest.approx(2 / 3600)  # bob twice, one timed
    assert hour11["a/0"].service_rate == pytest.approx(1 / 0.3)
    assert hour10["b/0"].arrival_rate == pytest.approx(2 / 3600)  # oslo twice
    assert hour10["b/0"].load == pytest.approx(2 * 2.0 / 3600)
    assert manifest["service_rate"] == pytest.approx({"a": 5 / 1.5, "b": 0.5})


@pytest.mark.usefixtures("spark")  # named, so the test runs beside the session's other users
def test_every_engine_writes_the_periods_and_rates_of_pandas(capsys, request, trace):
    tables = {}
    for engine in ("pandas", "duckdb", "spark"):
        out = run_stats(capsys, request, engine, trace, trace / engine)
        tables[engine] = (
            canonical(pd.read_parquet(out / "key_groups"), KG_COLUMNS),
            pd.read_parquet(out / "nodes"),
        )
    kg_pandas, nodes_pandas = tables["pandas"]
    exact = [c for c in KG_COLUMNS if c != "service_rate"]
    for engine in ("duckdb", "spark"):
        kg, nodes = tables[engine]
        pd.testing.assert_frame_equal(kg[exact], kg_pandas[exact], check_exact=True, obj=engine)
        # Measured rates are sums of floats in another order: equal to rounding.
        pd.testing.assert_series_equal(kg["service_rate"], kg_pandas["service_rate"], rtol=1e-12, obj=engine)
        pd.testing.assert_frame_equal(nodes, nodes_pandas, obj=engine)
    assert nodes_pandas["period"].unique().tolist() == PERIODS


def test_elasticutor_plans_every_period(capsys, request, trace):
    out = run_stats(capsys, request, "pandas", trace, trace / "out", "--node-counts", "4")
    table = replay(read_snapshots(out), "elasticutor")
    assert len(table) == 5 and table["planned"].sum() == 4  # every period but the first, unknown before it
    planned = table[table["planned"]]
    assert set(planned["status"]) <= {"FEASIBLE", "OPTIMAL"}, planned[["period", "status", "error"]]


@pytest.mark.parametrize("engine", ["pandas", "duckdb", "spark"])
def test_periods_follow_the_wall_clock_of_the_time_zone(capsys, request, engine, tmp_path):
    # New York: 2013-03-10 02:00 local does not exist (clocks go forward), 2013-11-03 01:00-02:00
    # local happens twice (clocks go back): one period holding both hours.
    (tmp_path / "spec.toml").write_text('timestamp = "ts"\n[[operators]]\nname = "a"\nkeys = ["u"]\n')
    (tmp_path / "events.csv").write_text(
        "ts,u\n2013-03-10T06:30:00Z,x\n2013-03-10T07:30:00Z,x\n"  # 01:30 EST, 03:30 EDT
    )
    out = run_stats(capsys, request, engine, tmp_path, tmp_path / "spring", "--timezone", "America/New_York")
    assert [s.period for s in read_snapshots(out)] == ["2013-03-10T01:00", "2013-03-10T03:00"]
    (tmp_path / "events.csv").write_text(
        "ts,u\n2013-11-03T05:30:00Z,x\n2013-11-03T06:30:00Z,x\n2013-11-03T07:30:00Z,x\n"
    )  # 01:30 EDT, 01:30 EST, 02:30 EST
    out = run_stats(capsys, request, engine, tmp_path, tmp_path / "fall", "--timezone", "America/New_York")
    kg = pd.read_parquet(out / "key_groups").groupby("period")["events"].sum()
    assert kg.to_dict() == {"2013-11-03T01:00": 2, "2013-11-03T02:00": 1}
    # Kolkata is UTC+05:30: the 10:00 UTC event is in the local 15:00 period.
    (tmp_path / "events.csv").write_text("ts,u\n2013-01-01T10:00:00Z,x\n")
    out = run_stats(capsys, request, engine, tmp_path, tmp_path / "kolkata", "--timezone", "Asia/Kolkata")
    assert [s.period for s in read_snapshots(out)] == ["2013-01-01T15:00"]


def _one_event_a_minute(path, *days):
    """Events one a minute, key x then y, over each local day of ``days`` in Chicago (both
    daylight-saving changes of 2017 fall on them: 2017-03-12, 23 hours; 2017-11-05, 25)."""
    minutes = [pd.date_range(pd.Timestamp(day, tz="America/Chicago"), periods=2, freq="D") for day in days]
    stamps = pd.DatetimeIndex(
        [t for first, after in minutes for t in pd.date_range(first, after, freq="min", inclusive="left")]
    )
    pd.DataFrame({"ts": stamps.tz_convert("UTC").strftime("%Y-%m-%dT%H:%M:%SZ"), "u": "x", "v": "y"}).to_csv(
        path, index=False
    )
    return len(stamps)


@pytest.mark.parametrize("engine", ["pandas", "duckdb", "spark"])
@pytest.mark.parametrize("period", ["1h", "1d"])
def test_a_constant_rate_is_constant_across_both_daylight_saving_changes(
    capsys, request, engine, period, tmp_path
):
    (tmp_path / "spec.toml").write_text(
        'timestamp = "ts"\n[[operators]]\nname = "a"\nkeys = ["u"]\n'
        '[[operators]]\nname = "b"\nkeys = ["v"]\n[[edges]]\nsrc = "a"\ndst = "b"\n'
    )
    days = ["2017-03-11", "2017-03-12", "2017-03-13", "2017-11-04", "2017-11-05", "2017-11-06"]
    events = _one_event_a_minute(tmp_path / "events.csv", *days)
    assert events == 1440 * 6  # a 23-hour day and a 25-hour day among them
    out = run_stats(
        capsys,
        request,
        engine,
        tmp_path,
        tmp_path / "out",
        "--timezone",
        "America/Chicago",
        "--period",
        period,
    )
    kg = pd.read_parquet(out / "key_groups")
    traffic = pd.read_parquet(out / "traffic")
    assert kg["events"].sum() == 2 * events and traffic["events"].sum() == events
    # Every period with events holds one a minute of its true length: the rate is 1/60 in each,
    # the fall-back hour's 120 events over 7,200 s and the short and long days alike.
    for column, table in (("arrival_rate", kg), ("load", kg), ("rate", traffic)):
        assert (table[column] == 1 / 60).all(), table.loc[table[column] != 1 / 60, ["period", column]]
    per_period = kg[kg["operator"] == "a"].set_index("period")["events"]  # one key: one key group
    if period == "1h":
        assert per_period["2017-11-05T01:00"] == 120 and "2017-03-12T02:00" not in per_period
        assert (per_period.drop("2017-11-05T01:00") == 60).all()
    else:
        assert per_period[["2017-03-12T00:00", "2017-11-05T00:00"]].tolist() == [23 * 60, 25 * 60]
    # The node counts read the same loads: every full period has the same total load.
    nodes = pd.read_parquet(out / "nodes").groupby("period").size()
    assert nodes[per_period.index].nunique() == 1


@pytest.mark.usefixtures("spark")
def test_every_engine_agrees_on_weeks_and_partial_periods(capsys, request, tmp_path):
    # Wednesday 2024-01-03 09:00 to Tuesday 2024-01-16 14:50 UTC, one event every 10 minutes: the
    # weeks of Monday 01-01 (covered 4 days 15 hours) and 01-15 (to 14:51, the last minute's end)
    # are partial; every engine rates them over the same covered seconds, bit for bit.
    stamps = pd.date_range("2024-01-03T09:00:00Z", "2024-01-16T14:50:00Z", freq="600s")
    pd.DataFrame({"ts": stamps.strftime("%Y-%m-%dT%H:%M:%SZ"), "user": "x", "city": "y", "secs": 0.5}).to_csv(
        tmp_path / "events.csv", index=False
    )
    (tmp_path / "spec.toml").write_text(SPEC)
    tables, manifests = {}, {}
    for engine in ("pandas", "duckdb", "spark"):
        out = run_stats(capsys, request, engine, tmp_path, tmp_path / engine, "--period", "1w")
        tables[engine] = canonical(pd.read_parquet(out / "key_groups"), KG_COLUMNS)
        manifests[engine] = json.loads((out / "manifest.json").read_text())["partial_periods"]
    first, last = 4 * 86400 + 15 * 3600, 86400 + 14 * 3600 + 51 * 60
    want = {"2024-01-01T00:00": first, "2024-01-15T00:00": last}
    assert manifests["spark"] == manifests["duckdb"] == manifests["pandas"] == want
    exact = [c for c in KG_COLUMNS if c != "service_rate"]
    for engine in ("duckdb", "spark"):
        pd.testing.assert_frame_equal(
            tables[engine][exact], tables["pandas"][exact], check_exact=True, obj=engine
        )
    a = tables["pandas"][tables["pandas"]["operator"] == "a"].set_index("period")
    assert a["arrival_rate"].tolist() == [666 / first, 1008 / 604800, 234 / last]


@pytest.mark.parametrize(
    "period, origin", [(3600, 0), (900, 0), (86400, 0), (7 * 86400, 345600), (172800, 86400)]
)
def test_spark_computes_utc_periods_as_period_starts_does(spark, period, origin):
    """In UTC the Spark job computes each event's period in the JVM, not through the pandas UDF:
    the same numbers as albic.stats.periods.period_starts, before 1970 and on the boundaries too."""
    import numpy as np

    from albic.spark.stats_engine import _with_period
    from albic.stats.periods import period_starts

    second, hour, day = 1_000_000, 3_600_000_000, 86_400_000_000
    edges = [0, 1, -1, second - 1, -second, -second - 1, hour - 1, hour, day - 1, day, -day, -day - 1]
    rng = np.random.default_rng(5)
    micros = np.array(edges + rng.integers(-(10**16), 10**16, 500).tolist(), dtype=np.int64)
    frame = spark.createDataFrame([(int(m),) for m in micros], "_micros long")
    got = [row["_period"] for row in _with_period(frame, period, "UTC", origin).collect()]
    assert got == period_starts(micros, period, "UTC", origin).tolist()
