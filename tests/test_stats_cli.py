"""`albic stats` and `albic mtm` through the CLI (pandas engine): external node counts, and one test
per strictness rule of issue 10 (exit 2, one line naming the bad thing, nothing written)."""

from __future__ import annotations

import json

import pytest

from albic.cli.main import main
from albic.io import read_snapshots
from albic.stats.transitions import read_mtm

SPEC = 'timestamp = "ts"\n[[operators]]\nname = "a"\nkeys = ["user"]\n'
# Hours 00, 01 and 04 have events; 02 and 03 do not.
EVENTS = """ts,user
2013-01-01T00:10:00Z,ann
2013-01-01T01:10:00Z,bob
2013-01-01T01:20:00Z,ann
2013-01-01T04:59:00Z,cy
"""


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_refused(code, err, *names):
    assert code == 2, err
    assert err.startswith("albic: error: ") and err.count("\n") == 1, err
    for name in names:
        assert name in err, (name, err)


@pytest.fixture
def trace(tmp_path):
    (tmp_path / "events.csv").write_text(EVENTS)
    (tmp_path / "spec.toml").write_text(SPEC)
    return tmp_path


def stats_argv(trace, out, *extra):
    return [
        "stats",
        trace / "events.csv",
        "--spec",
        trace / "spec.toml",
        "--engine",
        "pandas",
        "--key-groups",
        "2",
        "--out",
        out,
        *extra,
    ]


# -- the three node-count rules ----------------------------------------------------------------


def test_an_external_series_drives_the_node_counts(capsys, trace):
    # Counts change at 00:30 (-> 3 nodes, so hour 01 gets 3: forward fill from the last value at or
    # before the period start) and at 03:00 (-> 7).
    (trace / "cluster.csv").write_text(
        "time,machines\n2013-01-01T00:00:00Z,2\n2013-01-01T00:30:00Z,3\n2013-01-01T03:00:00Z,7\n"
    )
    out = trace / "out"
    code, _, err = run(capsys, *stats_argv(trace, out, "--node-counts", f"{trace / 'cluster.csv'}:machines"))
    assert code == 0, err
    assert [len(s.nodes) for s in read_snapshots(out)] == [2, 3, 3, 7, 7]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["node_count_rule"]["kind"] == "external"
    # The same file through `albic mtm --column`: transitions 2->3, 3->7 of the raw rows.
    code, _, err = run(
        capsys, "mtm", trace / "cluster.csv", "--column", "machines", "--out", trace / "mtm.json"
    )
    assert code == 0, err
    mtm = read_mtm(trace / "mtm.json")
    assert mtm.states == [2, 3, 4, 5, 6, 7]
    assert mtm.probability(2, 3) == mtm.probability(3, 7) == 1.0


def test_replay_takes_the_same_external_series(capsys, trace):
    from albic.evaluation.replay import replay
    from albic.stats.node_counts import ExternalNodeCounts, with_node_counts

    (trace / "cluster.csv").write_text("time,machines\n2013-01-01T00:00:00Z,2\n2013-01-01T03:00:00Z,4\n")
    assert run(capsys, *stats_argv(trace, trace / "out"))[0] == 0  # node counts by load mapping
    periods = [s.period for s in read_snapshots(trace / "out")]
    counts = ExternalNodeCounts(trace / "cluster.csv", "machines").for_periods([0.0] * 5, periods)
    table = replay(with_node_counts(read_snapshots(trace / "out"), dict(zip(periods, counts))), "flux")
    assert counts == [2, 2, 2, 4, 4]
    # Replay's node column counts the wanted nodes (removing ones are counted apart).
    assert table["nodes"].tolist() == counts


def test_a_utilisation_series_is_normalised_onto_whole_counts(capsys, trace):
    (trace / "cpu.parquet").parent.mkdir(exist_ok=True)
    import pandas as pd

    pd.DataFrame(
        {
            "timestamp": pd.to_datetime(["2013-01-01T00:00Z", "2013-01-01T02:00Z", "2013-01-01T04:00Z"]),
            "cpu": [0.25, 0.75, 0.5],
        }
    ).to_parquet(trace / "cpu.parquet")
    source = f"{trace / 'cpu.parquet'}:cpu"
    code, _, err = run(capsys, *stats_argv(trace, trace / "raw", "--node-counts", source))
    assert_refused(code, err, "cpu", "0.25", "--normalise LO:HI")
    assert not (trace / "raw").exists()
    code, _, err = run(
        capsys, *stats_argv(trace, trace / "out", "--node-counts", source, "--normalise", "4:8")
    )
    assert code == 0, err
    # Periods 00..04 take 0.25, 0.25, 0.75, 0.75, 0.5 -> min 4 nodes, max 8, middle 6.
    assert [len(s.nodes) for s in read_snapshots(trace / "out")] == [4, 4, 8, 8, 6]


def test_fixed_and_load_mapped_counts_are_the_same_option(capsys, trace):
    assert run(capsys, *stats_argv(trace, trace / "fixed", "--node-counts", "5"))[0] == 0
    assert {len(s.nodes) for s in read_snapshots(trace / "fixed")} == {5}
    assert run(capsys, *stats_argv(trace, trace / "load", "--nodes", "1:3", "--quantiles", "0:1"))[0] == 0
    # Total loads 1, 2, 0, 0, 1 events per hour -> 2, 3, 1, 1, 2 nodes.
    assert [len(s.nodes) for s in read_snapshots(trace / "load")] == [2, 3, 1, 1, 2]


# -- strictness: one test per rule -------------------------------------------------------------


def test_an_unknown_key_in_the_spec_is_refused(capsys, trace):
    (trace / "spec.toml").write_text(SPEC + "cots = 3\n")
    code, _, err = run(capsys, *stats_argv(trace, trace / "out"))
    assert_refused(code, err, "spec.toml", "operator 1 ('a')", "'cots'", "did you mean 'cost'")
    assert not (trace / "out").exists()


def test_an_unknown_key_on_an_edge_is_refused(capsys, trace):
    (trace / "spec.toml").write_text(
        SPEC + '[[operators]]\nname = "b"\nkeys = ["user"]\n[[edges]]\nsrc = "a"\ndst = "b"\nweight = 3\n'
    )
    code, _, err = run(capsys, *stats_argv(trace, trace / "out"))
    assert_refused(code, err, "edge 1", "'weight'", "allowed: src, dst")


def test_an_unknown_time_zone_is_refused(capsys, trace):
    code, _, err = run(capsys, *stats_argv(trace, trace / "out", "--timezone", "Europe/Olso"))
    assert_refused(code, err, "--timezone", "'Europe/Olso'")


def test_a_node_count_file_that_does_not_exist_is_refused(capsys, trace):
    code, _, err = run(capsys, *stats_argv(trace, trace / "out", "--node-counts", "nodes.csv:n"))
    assert_refused(code, err, "--node-counts", "'nodes.csv'", "MIN:MAX")


def test_a_series_that_starts_after_the_first_period_is_refused(capsys, trace):
    (trace / "late.csv").write_text("time,nodes\n2013-01-01T02:00:00Z,3\n")
    code, _, err = run(capsys, *stats_argv(trace, trace / "out", "--node-counts", trace / "late.csv"))
    assert_refused(code, err, "late.csv", "2013-01-01T00:00", "forward-filled")


def test_mtm_refuses_first_past_the_series(capsys, trace):
    (trace / "counts.csv").write_text("nodes\n" + "\n".join(["2", "3"] * 5) + "\n")
    code, _, err = run(capsys, "mtm", trace / "counts.csv", "--first", "744")
    assert_refused(code, err, "--first 744", "10 periods")
    code, _, err = run(capsys, "mtm", trace / "counts.csv", "--first", "1")
    assert_refused(code, err, "--first 1")


def test_mtm_refuses_a_huge_state_space_before_any_work(capsys, trace):
    # A load column read as node counts: 6,295 states would be a 6,295 x 6,295 matrix.
    (trace / "load.csv").write_text("time,load\n1,12\n2,6295\n3,40\n")
    code, out, err = run(capsys, "mtm", trace / "load.csv", "--column", "load", "--out", trace / "m.json")
    assert_refused(code, err, "6295", "1000", "--normalise LO:HI")
    assert out == "" and not (trace / "m.json").exists()
    code, _, err = run(
        capsys,
        "mtm",
        trace / "load.csv",
        "--column",
        "load",
        "--normalise",
        "8:16",
        "--out",
        trace / "m.json",
    )
    assert code == 0, err
    assert read_mtm(trace / "m.json").states == list(range(8, 17))
    code, _, err = run(capsys, "mtm", trace / "load.csv", "--column", "load", "--states", "1", "5000")
    assert_refused(code, err, "--states 1 5000", "5000 states", "1000")


def test_mtm_refuses_an_unknown_column(capsys, trace):
    (trace / "counts.csv").write_text("time,nodes\n1,2\n2,3\n")
    code, _, err = run(capsys, "mtm", trace / "counts.csv", "--column", "machines")
    assert_refused(code, err, "'machines'", "['time', 'nodes']")


def test_a_folder_of_parquet_files_is_one_event_table(capsys, trace):
    # A dataset folder (as Spark or pandas write one) is read whole by the file check that both
    # engines share: the events of its two files together, and a corrupt member is named.
    import pandas as pd

    events = pd.read_csv(trace / "events.csv")
    (trace / "events").mkdir()
    events.iloc[:2].to_parquet(trace / "events" / "part-0.parquet")
    events.iloc[2:].to_parquet(trace / "events" / "part-1.parquet")
    argv = [
        "stats",
        trace / "events",
        "--spec",
        trace / "spec.toml",
        "--engine",
        "pandas",
        "--key-groups",
        "2",
    ]
    code, _, err = run(capsys, *argv, "--out", trace / "out")
    assert code == 0, err
    assert pd.read_parquet(trace / "out" / "key_groups")["events"].sum() == 4
    (trace / "events" / "part-2.parquet").write_bytes(b"PAR1 not really")
    code, _, err = run(capsys, *argv, "--out", trace / "out2")
    assert_refused(code, err, "not a readable Parquet file", "part-2.parquet")
    assert not (trace / "out2").exists()


def test_key_groups_that_never_hold_an_event_are_named(capsys, user_trace, tmp_path):
    import pandas as pd

    from albic.core.hashing import key_group

    events, spec = user_trace
    argv = [
        "stats",
        events,
        "--spec",
        spec,
        "--out",
        tmp_path / "s",
        "--engine",
        "pandas",
        "--key-groups",
        "64",
    ]
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    # By hand: the key groups the trace's distinct keys hash to (a zone key is "zone|depot").
    table = pd.read_csv(events, keep_default_na=False, dtype=str)
    couriers = {key_group(k, 64) for k in table["courier_id"]}
    zoned = table[table["zone"] != ""]
    zones = {key_group(f"{z}|{d}", 64) for z, d in zip(zoned["zone"], zoned["depot"])}
    empty = {"courier": 64 - len(couriers), "zone": 64 - len(zones)}
    (line,) = [x for x in out.splitlines() if x.startswith("key groups that never hold an event")]
    assert line.startswith(
        f"key groups that never hold an event: courier {empty['courier']} of 64, zone {empty['zone']} of 64 "
        f"({sum(empty.values())} of 128 in all)"
    )
    assert "--key-groups" in line
