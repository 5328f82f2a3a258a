"""Both statistics engines accept and refuse the same event files with the same one-line message:
every file below goes through `albic stats --engine pandas` and `--engine
spark` (one shared Spark session). A refused file exits 2 with one `albic: error:` line naming the
file and the row or value, and leaves no output; a valid but unusual file (pandas' nanosecond
timestamps, time zones) gives the same tables on every engine, and the tables of the same events
written plainly (truth: microseconds, UTC). The rules: albic/stats/events.py."""

from __future__ import annotations

import pandas as pd
import pytest

from albic.cli.main import main

# Operator a is timed (service-time column st); the edge a -> b gives a traffic table to compare.
SPEC = (
    'timestamp = "ts"\n'
    '[[operators]]\nname = "a"\nkeys = ["user"]\nservice_time = "st"\n'
    '[[operators]]\nname = "b"\nkeys = ["city"]\n'
    '[[edges]]\nsrc = "a"\ndst = "b"\n'
)
GOOD = (
    "ts,user,city,st\n"
    "2013-01-01T10:00:00Z,ann,oslo,0.1\n"
    "2013-01-01T10:20:00Z,bob,rome,0.2\n"
    "2013-01-01T11:05:00Z,cy,oslo,\n"
)
TIMES = ["2013-01-01T10:00:00", "2013-01-01T10:20:00.000000999", "2013-01-01T11:05:00"]


def _frame(**columns):
    frame = pd.DataFrame(
        {
            "ts": pd.to_datetime(TIMES, format="ISO8601"),
            "user": ["ann", "bob", "cy"],
            "city": ["oslo", "rome", "oslo"],
            "st": [0.1, 0.2, None],
        }
    )
    return frame.assign(**columns)


def _micros(frame):
    return frame.assign(ts=frame["ts"].dt.as_unit("us"))


def _plain_parquet(tmp):
    path = tmp / "plain.parquet"
    _micros(_frame()).to_parquet(path)
    return path.read_bytes()


def _corrupt(data: bytes) -> bytes:
    flipped = bytearray(data)
    for i in range(4, len(flipped) // 2):  # the data pages, past the magic bytes
        flipped[i] ^= 0x5A
    return bytes(flipped)


# file name -> (its content, built from the temporary folder; a fragment the message must hold)
REFUSED = {
    "ragged_long.csv": (
        lambda t: GOOD + "2013-01-01T11:10:00Z,ann,oslo,0.1,extra\n",
        "row 4 has 5 fields, the header has 4: '2013-01-01T11:10:00Z,ann,oslo,0.1,extra'",
    ),
    "ragged_short.csv": (
        lambda t: GOOD.replace("bob,rome,0.2", "bob"),
        "row 2 has 2 fields, the header has 4: '2013-01-01T10:20:00Z,bob'",
    ),
    "line_break.csv": (
        lambda t: GOOD.replace("bob,", '"bo\nb",'),
        "row 2, column 'user': 'bo\\nb' holds a line break",
    ),
    "text_service_time.csv": (
        lambda t: GOOD.replace("0.2", "fast"),
        "column 'st' (service time): 'fast' (row 2) is not a number of seconds >= 0",
    ),
    "negative_service_time.csv": (
        lambda t: GOOD.replace("0.2", "-1"),
        "column 'st' (service time): '-1' (row 2) is not a number",
    ),
    "missing_column.csv": (
        lambda t: "ts,user,st\n2013-01-01T10:00:00Z,ann,0.1\n",
        "missing column(s) 'city' (key of b)",
    ),
    "empty.csv": (lambda t: "", "the file is empty"),
    "header_only.csv": (lambda t: "ts,user,city,st\n", "the event table has no rows"),
    "bad_timestamp.csv": (
        lambda t: GOOD.replace("2013-01-01T10:20:00Z", "yesterday"),
        "column 'ts': cannot parse 'yesterday' (row 2) as a timestamp; 1 such row(s)",
    ),
    "no_timestamp.csv": (
        lambda t: GOOD.replace("2013-01-01T10:20:00Z", "NA"),
        "column 'ts': row 2 has no timestamp; 1 such row(s)",
    ),
    "text.parquet": (lambda t: GOOD, "not a readable Parquet file (Parquet magic bytes not found"),
    "truncated.parquet": (
        lambda t: _plain_parquet(t)[: len(_plain_parquet(t)) // 2],
        "not a readable Parquet file",
    ),
    "corrupt.parquet": (lambda t: _corrupt(_plain_parquet(t)), "not a readable Parquet file"),
    "empty.parquet": (lambda t: b"", "the file is empty"),
    "no_rows.parquet": (lambda t: _micros(_frame()).iloc[:0], "the event table has no rows"),
    "missing_column.parquet": (
        lambda t: _micros(_frame()).drop(columns="city"),
        "missing column(s) 'city' (key of b)",
    ),
    "bad_timestamp.parquet": (
        lambda t: _frame(ts=["2013-01-01T10:00Z", "soon", "2013-01-01T11:00Z"]),
        "column 'ts': cannot parse 'soon' (row 2) as a timestamp",
    ),
    "null_timestamp.parquet": (
        lambda t: _frame(ts=[0.0, None, 3600.0]),
        "column 'ts': row 2 has no timestamp",
    ),
    "text_service_time.parquet": (
        lambda t: _micros(_frame(st=["0.1", "fast", None])),
        "column 'st' (service time): 'fast' (row 2) is not a number",
    ),
}

# Valid files, each with the plainly written file of the same instants that it must match.
ACCEPTED = {
    "nanoseconds.parquet": (lambda: _frame(), lambda: _micros(_frame())),
    "nanoseconds_oslo.parquet": (
        lambda: _frame(ts=_frame()["ts"].dt.tz_localize("Europe/Oslo")),
        lambda: _micros(_frame(ts=_frame()["ts"] - pd.Timedelta(hours=1))),  # UTC+1 in January
    ),
    "microseconds_new_york.parquet": (
        lambda: _micros(_frame(ts=_frame()["ts"].dt.tz_localize("America/New_York"))),
        lambda: _micros(_frame(ts=_frame()["ts"] + pd.Timedelta(hours=5))),  # UTC-5 in January
    ),
    # ISO 8601 texts with and without zones: one without a zone is UTC, even after a +01:00 row
    "zones.csv": (
        lambda: (
            "ts,user,city,st\n2013-01-01T11:00:00+01:00,ann,oslo,0.1\n"
            "2013-01-01T11:20:00.000000999+01:00,bob,rome,0.2\n2013-01-01T11:05,cy,oslo,\n"
        ),
        lambda: _micros(_frame(ts=pd.to_datetime([t[:19] for t in TIMES]))),
    ),
}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("event-files")
    (tmp / "spec.toml").write_text(SPEC)
    for name, (build, _) in REFUSED.items():
        content = build(tmp)
        if isinstance(content, pd.DataFrame):
            content.to_parquet(tmp / name)
        else:
            (tmp / name).write_bytes(content if isinstance(content, bytes) else content.encode())
    for name, (build, plain) in ACCEPTED.items():
        content = build()
        if isinstance(content, str):
            (tmp / name).write_text(content)
        else:
            content.to_parquet(tmp / name)  # pandas' defaults: nanoseconds, the zone kept
        plain().to_parquet(tmp / _plain(name))
    return tmp


def _plain(name):
    return f"plain_{name.split('.')[0]}.parquet"


def _stats(folder, name, engine, out, capsys, spark):
    options = ["--master", spark.sparkContext.master] if engine == "spark" else []
    code = main(
        [
            "stats",
            str(folder / name),
            "--spec",
            str(folder / "spec.toml"),
            "--engine",
            engine,
            "--key-groups",
            "2",
            "--node-counts",
            "2",
            "--out",
            str(out),
            *options,
        ]
    )
    captured = capsys.readouterr()
    return code, captured.err


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_every_engine_refuses_a_bad_file_with_the_same_line(name, folder, tmp_path, capsys, spark):
    messages = {}
    for engine in ("pandas", "duckdb", "spark"):
        out = tmp_path / engine
        code, err = _stats(folder, name, engine, out, capsys, spark)
        assert code == 2, (engine, err)
        assert err.count("\n") == 1 and err.startswith("albic: error: "), (engine, err)
        assert not out.exists()
        messages[engine] = err
    assert messages["pandas"] == messages["duckdb"] == messages["spark"]
    assert str(folder / name) in messages["pandas"] and REFUSED[name][1] in messages["pandas"]


def _tables(out):
    return {
        table: pd.read_parquet(out / table).sort_values(["period", *key]).reset_index(drop=True)
        for table, key in (("key_groups", ["id"]), ("traffic", ["src", "dst"]), ("nodes", ["id"]))
    }


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_every_engine_reads_nanoseconds_and_time_zones_alike(name, folder, tmp_path, capsys, spark):
    results = {}
    for engine, file in (("pandas", name), ("duckdb", name), ("spark", name), ("pandas", _plain(name))):
        out = tmp_path / f"{engine}-{file}"
        code, err = _stats(folder, file, engine, out, capsys, spark)
        assert code == 0, (engine, file, err)
        results[engine, file] = _tables(out)
    truth = results["pandas", _plain(name)]
    assert truth["key_groups"]["events"].sum() == 6  # 3 events, 2 operators: nothing dropped
    for engine in ("pandas", "duckdb", "spark"):
        for table, frame in results[engine, name].items():
            pd.testing.assert_frame_equal(frame, truth[table], check_dtype=False, obj=f"{engine} {table}")
