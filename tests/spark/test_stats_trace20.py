"""The statistics job on every engine (Spark, DuckDB and the pandas twin) on a hand-computed 20-event trace, and on
malformed traces (which must fail with a message naming the column or row and leave nothing)."""

import hashlib
import json

import pandas as pd
import pytest

from albic.base.errors import AlbicError, TraceError
from albic.io import read_snapshots
from albic.stats.duckdb_engine import run_duckdb
from albic.stats.node_counts import NodeCountRule
from albic.stats.pandas_engine import KG_COLUMNS, TRAFFIC_COLUMNS, canonical, run_pandas
from albic.stats.spec import parse_spec

SPEC = """
timestamp = "ts"
[[operators]]
name = "a"
keys = ["user"]
cost = 2.0
bytes_per_key = 100
[[operators]]
name = "b"
keys = ["city"]
bytes_per_key = 10
[[edges]]
src = "a"
dst = "b"
"""

# Key groups with K = 2 (blake2b-64 big-endian mod 2, checked in test_the_hash_of_the_keys):
# ann -> 1, bob -> 0, cy -> 0; oslo -> 0, rome -> 1, nice -> 1.
EVENTS = """ts,user,city
2013-01-01T10:00:00Z,ann,oslo
2013-01-01T10:05:00Z,ann,rome
2013-01-01T10:10:00Z,bob,oslo
2013-01-01T10:15:00Z,bob,oslo
2013-01-01T10:20:00Z,cy,rome
2013-01-01T10:25:00Z,cy,nice
2013-01-01T10:30:00Z,ann,NA
2013-01-01T10:35:00Z,bob,nice
2013-01-01T10:40:00Z,ann,oslo
2013-01-01T10:45:00Z,cy,oslo
2013-01-01T10:50:00Z,bob,rome
2013-01-01T10:59:59Z,ann,nice
2013-01-01T11:00:00Z,bob,oslo
2013-01-01T11:10:00Z,bob,oslo
2013-01-01T11:20:00Z,ann,rome
2013-01-01T11:30:00Z,cy,NA
2013-01-01T11:40:00Z,cy,rome
2013-01-01T11:50:00Z,ann,rome
2013-01-01T11:55:00Z,bob,nice
2013-01-01T11:59:59Z,ann,oslo
"""
H10, H11 = "2013-01-01T10:00", "2013-01-01T11:00"

# Hour 10 (events 1-12). Operator a (cost 2, 100 B/key): ann (1,2,7,9,12) -> a/1: 5 events, 1 key;
# bob (3,4,8,11) + cy (5,6,10) -> a/0: 7 events, 2 keys. Operator b (cost 1, 10 B/key), event 7 has
# no city: oslo (1,3,4,9,10) -> b/0: 5 events, 1 key; rome (2,5,11) + nice (6,8,12) -> b/1: 6, 2.
# Hour 11 (events 13-20): a/0: bob (13,14,19) + cy (16,17) = 5, 2 keys; a/1: ann (15,18,20) = 3, 1;
# b (event 16 has no city): b/0: oslo (13,14,20) = 3, 1 key; b/1: rome (15,17,18) + nice (19) = 4, 2.
# Load = events x cost / 3600 s; state = keys x bytes per key. Both hours are whole: the events,
# stamped by the second, run from 10:00:00 to 11:59:59 (albic.stats.periods.partial_periods).
EXPECTED_KG = [
    # period, id, events, keys, load, state
    (H10, "a/0", 7, 2, 14 / 3600, 200.0),
    (H10, "a/1", 5, 1, 10 / 3600, 100.0),
    (H10, "b/0", 5, 1, 5 / 3600, 10.0),
    (H10, "b/1", 6, 2, 6 / 3600, 20.0),
    (H11, "a/0", 5, 2, 10 / 3600, 200.0),
    (H11, "a/1", 3, 1, 6 / 3600, 100.0),
    (H11, "b/0", 3, 1, 3 / 3600, 10.0),
    (H11, "b/1", 4, 2, 4 / 3600, 20.0),
]
# Traffic a -> b (events with both keys), by (user group, city group):
# hour 10: (0,0) events 3,4,10; (0,1) 5,6,8,11; (1,0) 1,9; (1,1) 2,12.
# hour 11: (0,0) 13,14; (0,1) 17,19; (1,0) 20; (1,1) 15,18.
EXPECTED_TRAFFIC = [
    (H10, "a/0", "b/0", 3),
    (H10, "a/0", "b/1", 4),
    (H10, "a/1", "b/0", 2),
    (H10, "a/1", "b/1", 2),
    (H11, "a/0", "b/0", 2),
    (H11, "a/0", "b/1", 2),
    (H11, "a/1", "b/0", 1),
    (H11, "a/1", "b/1", 2),
]
# Total load per period: hour 10 = (12 x 2 + 11 x 1) / 3600, hour 11 = (8 x 2 + 7) / 3600; with
# nodes 2..4 and quantiles 0..1 the larger maps to 4 nodes, the smaller to 2.
RULE = NodeCountRule(2, 4, 0.0, 1.0)


def _run(engine, request, events, out, **options):
    spec = parse_spec(SPEC)
    options = {"period": "1h", "key_groups": 2, "nodes": RULE, **options}
    if engine == "pandas":
        return run_pandas(events, spec, out, **options)
    if engine == "duckdb":
        return run_duckdb(events, spec, out, **options)
    from albic.spark.stats_engine import run_spark

    return run_spark(events, spec, out, spark=request.getfixturevalue("spark"), **options)


@pytest.fixture
def trace20(tmp_path):
    path = tmp_path / "events.csv"
    path.write_text(EVENTS)
    return path


def test_the_hash_of_the_keys():
    def group(key):
        return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "big") % 2

    assert [group(k) for k in ("ann", "bob", "cy", "oslo", "rome", "nice")] == [1, 0, 0, 0, 1, 1]


@pytest.mark.parametrize("engine", ["pandas", "duckdb", "spark"])
def test_hand_computed_trace(engine, request, trace20, tmp_path):
    out = _run(engine, request, trace20, tmp_path / "out")
    kg = canonical(pd.read_parquet(out / "key_groups"), KG_COLUMNS)
    got = [(r.period, r.id, r.events, r.keys, r.load, r.state_size) for r in kg.itertuples()]
    assert [g[:4] + (g[5],) for g in got] == [e[:4] + (e[5],) for e in EXPECTED_KG]
    assert [g[4] for g in got] == pytest.approx([e[4] for e in EXPECTED_KG], rel=1e-12)
    traffic = canonical(pd.read_parquet(out / "traffic"), TRAFFIC_COLUMNS)
    assert [(r.period, r.src, r.dst, r.events) for r in traffic.itertuples()] == EXPECTED_TRAFFIC
    assert traffic["rate"].tolist() == pytest.approx([e[3] / 3600 for e in EXPECTED_TRAFFIC])
    nodes = pd.read_parquet(out / "nodes")
    assert nodes.groupby("period").size().to_dict() == {H10: 4, H11: 2}
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["events"] == 20 and manifest["key_groups"] == {"a": 2, "b": 2}


@pytest.mark.parametrize("engine", ["pandas", "duckdb", "spark"])
def test_scale_replays_the_trace_with_distinct_keys(engine, request, trace20, tmp_path):
    out = _run(engine, request, trace20, tmp_path / "out", scale=3)
    kg = pd.read_parquet(out / "key_groups")
    # Three copies: every operator's events triple, and so do its distinct keys (suffixes #1, #2).
    assert kg.groupby("operator")["events"].sum().to_dict() == {"a": 60, "b": 54}
    assert kg.groupby("operator")["keys"].sum().to_dict() == {"a": 3 * (3 + 3), "b": 3 * (3 + 3)}
    assert pd.read_parquet(out / "traffic")["events"].sum() == 3 * 18


def test_the_spark_job_leaves_the_callers_session_settings_as_they_were(spark, request, trace20, tmp_path):
    """The job writes its tables without partial aggregations (a session setting, for that
    while only): a session of the caller's keeps its own setting, or none, afterwards."""
    setting = "spark.sql.execution.bypassPartialAggregation"
    before = spark.conf.get(setting, None)
    _run("spark", request, trace20, tmp_path / "out")
    assert spark.conf.get(setting, None) == before
    spark.conf.set(setting, "false")
    try:
        _run("spark", request, trace20, tmp_path / "again")
        assert spark.conf.get(setting) == "false"
    finally:
        if before is None:
            spark.conf.unset(setting)
        else:
            spark.conf.set(setting, before)


def test_read_snapshots_of_the_hand_computed_trace(trace20, tmp_path):
    out = _run("pandas", None, trace20, tmp_path / "out")
    first, second = list(read_snapshots(out))
    assert (first.period, second.period) == (H10, H11)
    assert [n.id for n in first.nodes] == ["n1", "n2", "n3", "n4"]
    assert [kg.id for kg in first.key_groups] == ["a/0", "a/1", "b/0", "b/1"]
    assert [kg.state_size for kg in second.key_groups] == [200.0, 100.0, 10.0, 20.0]
    assert sum(t.rate for t in first.traffic) == pytest.approx(11 / 3600)
    assert [op.downstream for op in first.operators] == [("b",), ()]
    # The placeholder placement: each operator split consecutively over the period's nodes.
    assert dict(second.assignment) == {"a/0": "n1", "a/1": "n2", "b/0": "n1", "b/1": "n2"}


MALFORMED = [
    ("ts,user\n2013-01-01T10:00:00Z,ann\n", "missing column(s) 'city' (key of b)"),
    ("ts,user,city\n2013-01-01T10:00:00Z,ann,oslo\nyesterday,bob,rome\n", "'yesterday'"),
    ("", "empty"),
    ("ts,user,city\n", "no rows"),
]


@pytest.mark.parametrize("engine", ["pandas", "duckdb", "spark"])
@pytest.mark.parametrize("text, message", MALFORMED, ids=["column", "timestamp", "empty", "header"])
def test_malformed_traces_fail_clearly_and_leave_nothing(engine, request, tmp_path, text, message):
    events = tmp_path / "bad.csv"
    events.write_text(text)
    out = tmp_path / "out"
    with pytest.raises(TraceError, match="bad.csv") as caught:
        _run(engine, request, events, out)
    assert message in str(caught.value)
    if message == "'yesterday'":
        assert "column 'ts'" in str(caught.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.csv"]


def test_a_failed_run_keeps_the_previous_dataset(trace20, tmp_path):
    out = _run("pandas", None, trace20, tmp_path / "out")
    before = pd.read_parquet(out / "key_groups")
    bad = tmp_path / "bad.csv"
    bad.write_text("ts,user\n2013-01-01T10:00:00Z,ann\n")
    with pytest.raises(TraceError):
        _run("pandas", None, bad, out)
    pd.testing.assert_frame_equal(pd.read_parquet(out / "key_groups"), before)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.csv", "events.csv", "out"]


def test_refuses_to_overwrite_a_folder_that_is_not_a_dataset(trace20, tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    with pytest.raises(AlbicError, match="not empty"):
        _run("pandas", None, trace20, tmp_path / "mine")
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"


@pytest.mark.parametrize("engine", ["pandas", "duckdb", "spark"])
def test_null_values_in_parquet_key_columns_are_missing_keys(engine, request, tmp_path):
    # Three events; the second has "NA" as city, so operator b and the edge see only two.
    events = pd.DataFrame(
        {
            "ts": pd.to_datetime(["2013-01-01T10:00Z", "2013-01-01T10:01Z", "2013-01-01T10:02Z"]),
            "user": ["ann", "bob", "cy"],
            "city": ["oslo", "NA", "rome"],
        }
    )
    path = tmp_path / "events.parquet"
    from albic.stats.traces import write_events

    write_events(events, path)
    out = _run(engine, request, path, tmp_path / "out")
    kg = pd.read_parquet(out / "key_groups")
    assert kg.groupby("operator")["events"].sum().to_dict() == {"a": 3, "b": 2}
    assert pd.read_parquet(out / "traffic")["events"].sum() == 2
