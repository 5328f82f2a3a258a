"""The DuckDB statistics engine beyond what every engine shares (tests/spark/test_stats_*.py run it
beside pandas and Spark): its own paths -- a DataFrame, a Parquet file read directly or staged,
memory it must spill out of, a time zone it cannot floor -- each against the pandas twin."""

import numpy as np
import pandas as pd
import pytest

from albic.base.errors import AlbicError
from albic.io import read_snapshots
from albic.stats.duckdb_engine import DuckDBEngine, run_duckdb
from albic.stats.job import run
from albic.stats.pandas_engine import KG_COLUMNS, TRAFFIC_COLUMNS, canonical, run_pandas
from albic.stats.request import StatsRequest
from albic.stats.spec import parse_spec

pytest.importorskip("duckdb")

SPEC = parse_spec(
    """
timestamp = "t"
[[operators]]
name = "user"
keys = ["user", "shard"]
cost = 0.5
[[operators]]
name = "city"
keys = ["city"]
service_time = "busy"
[[edges]]
src = "user"
dst = "city"
"""
)


def _events(n=5_000, seed=0):
    """Zipf-like users and cities over three days; some keys missing, some a null value."""
    rng = np.random.default_rng(seed)
    users = rng.zipf(1.6, n) % 400
    cities = rng.zipf(1.3, n) % 50
    frame = pd.DataFrame(
        {
            "t": pd.Timestamp("2024-03-29T22:00Z") + pd.to_timedelta(rng.uniform(0, 3 * 86400, n), unit="s"),
            "user": np.where(users == 7, None, users.astype(str)),
            "shard": rng.integers(0, 3, n),
            "city": np.where(cities == 3, "NA", "c" + cities.astype(str)),
            "busy": np.where(rng.random(n) < 0.2, np.nan, rng.exponential(0.01, n)),
        }
    )
    return frame


def _assert_same(got, want):
    for table, columns in (("key_groups", KG_COLUMNS), ("traffic", TRAFFIC_COLUMNS)):
        a = canonical(pd.read_parquet(got / table), columns)
        b = canonical(pd.read_parquet(want / table), columns)
        exact = [c for c in columns if c != "service_rate"]
        pd.testing.assert_frame_equal(a[exact], b[exact], check_exact=True, obj=table)
        if "service_rate" in columns:  # sums of measured seconds, added in another order
            pd.testing.assert_series_equal(a["service_rate"], b["service_rate"], rtol=1e-12)
    pd.testing.assert_frame_equal(pd.read_parquet(got / "nodes"), pd.read_parquet(want / "nodes"))
    assert len(pd.read_parquet(want / "traffic")) > 100  # the comparison compared something


@pytest.mark.parametrize("timezone", ["UTC", "Europe/Oslo"])  # Oslo: clocks go forward on 2024-03-31
def test_a_dataframe_gives_the_tables_of_pandas(tmp_path, timezone):
    events = _events()
    options = {"key_groups": 16, "scale": 3, "period": "1h", "timezone": timezone, "node_counts": "2:5"}
    _assert_same(
        run_duckdb(events, SPEC, tmp_path / "d", **options),
        run_pandas(events, SPEC, tmp_path / "p", **options),
    )


@pytest.mark.parametrize("form", ["direct", "ns", "text", "csv"])
def test_files_read_directly_or_staged_give_the_tables_of_pandas(tmp_path, form):
    # direct: microsecond timestamps and integer keys DuckDB reads as pandas does; ns: nanoseconds;
    # text: ISO texts for times; csv: every cell text. The last three are staged.
    events = _events()
    path = tmp_path / ("events.csv" if form == "csv" else "events.parquet")
    if form == "csv":
        events.to_csv(path, index=False)
    else:
        if form == "direct":
            events["t"] = events["t"].astype("datetime64[us, UTC]")
        if form == "text":
            events["t"] = events["t"].dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        events.to_parquet(path)
    options = {"key_groups": 8, "period": "15min"}
    _assert_same(
        run_duckdb(path, SPEC, tmp_path / "d", **options), run_pandas(path, SPEC, tmp_path / "p", **options)
    )


def test_out_of_core_under_a_memory_limit_gives_the_same_tables(tmp_path):
    events = _events(n=60_000, seed=1)
    path = tmp_path / "events.parquet"
    events.to_parquet(path)
    options = {"key_groups": 64, "scale": 4, "period": "15min"}
    engine = DuckDBEngine(memory_limit="40MB", threads=1)
    got = run(StatsRequest(path, SPEC, tmp_path / "d", **options), engine)
    _assert_same(got, run_pandas(path, SPEC, tmp_path / "p", **options))
    assert not [p for p in tmp_path.iterdir() if "duckdb" in p.name]  # the scratch folder is gone


def test_a_zone_that_changes_offset_off_a_quarter_hour_is_refused_in_one_line(tmp_path):
    # Liberia kept its own time, -00:44:30, until 1972-01-07, then went to UTC: at 00:44:30 UTC.
    events = pd.DataFrame(
        {
            "t": pd.to_datetime(["1972-01-06T20:00Z", "1972-01-07T04:00Z"]),
            "user": "a",
            "shard": 1,
            "city": "x",
            "busy": 0.1,
        }
    )
    with pytest.raises(
        AlbicError, match=r"time zone 'Africa/Monrovia' changes its offset inside the quarter hour"
    ):
        run_duckdb(events, SPEC, tmp_path / "d", key_groups=2, timezone="Africa/Monrovia")
    assert not (tmp_path / "d").exists()


def test_bad_settings_are_named():
    with pytest.raises(AlbicError, match="threads must be >= 1, got 0"):
        DuckDBEngine(threads=0)


def test_snapshots_do_not_hang_on_the_order_of_the_rows(tmp_path):
    out = run_pandas(_events(), SPEC, tmp_path / "p", key_groups=8)
    before = [s.digest() for s in read_snapshots(out)]
    for table in ("traffic", "key_groups"):
        frame = pd.read_parquet(out / table)
        frame.sample(frac=1.0, random_state=3).to_parquet(out / table / "part-0.parquet", index=False)
    assert [s.digest() for s in read_snapshots(out)] == before
    assert len(before) > 10
