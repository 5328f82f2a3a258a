"""Calendar periods (``--period 1w``: ISO weeks from Monday 00:00 on the --timezone wall clock;
``Nd`` from the first event's local midnight) and the partial first and last periods, whose rates
are over the seconds the events cover: in the dataset, the manifest, the snapshots and compare.
Every expected figure below is worked out by hand from the trace, not by albic."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from albic.base.errors import AlbicError
from albic.cli.main import main
from albic.core.codec import snapshot_from_dict, snapshot_to_dict
from albic.core.model import KeyGroup, Node, Snapshot
from albic.evaluation.compare import compare
from albic.io import read_snapshots
from albic.stats.periods import parse_period, period_lengths, wall_seconds

SPEC = 'timestamp = "ts"\n[[operators]]\nname = "a"\nkeys = ["u"]\ncost = 2.0\n'
STEP = 600  # one event every 10 minutes: a rate of 1/600 per second
FIRST, LAST = "2024-01-03T09:00:00Z", "2024-01-16T14:50:00Z"  # a Wednesday to a Tuesday


def write_trace(folder, first=FIRST, last=LAST, step=STEP):
    stamps = pd.date_range(first, last, freq=f"{step}s")
    pd.DataFrame({"ts": stamps.strftime("%Y-%m-%dT%H:%M:%SZ"), "u": "x"}).to_csv(
        folder / "events.csv", index=False
    )
    (folder / "spec.toml").write_text(SPEC)
    return len(stamps)


def stats(folder, capsys, *extra):
    out = folder / "out"
    argv = ["stats", folder / "events.csv", "--spec", folder / "spec.toml", "--key-groups", "1"]
    argv += ["--engine", "pandas", "--node-counts", "2", "--out", out, *extra]
    assert main([str(a) for a in argv]) == 0
    return out, capsys.readouterr().out


def per_period(out):
    kg = pd.read_parquet(out / "key_groups").set_index("period")
    return kg, json.loads((out / "manifest.json").read_text())


def test_weeks_start_on_the_monday_before_and_the_partial_ends_are_rated_over_their_covered_time(
    tmp_path, capsys
):
    assert write_trace(tmp_path) == (13 * 24 + 5) * 6 + 6  # 2024-01-03 09:00 .. 01-16 14:50
    out, printed = stats(tmp_path, capsys, "--period", "1w")
    kg, manifest = per_period(out)
    assert kg.index.tolist() == ["2024-01-01T00:00", "2024-01-08T00:00", "2024-01-15T00:00"]  # Mondays
    # First week: Wednesday 09:00 to Monday 00:00 = 4 days 15 hours = 399,600 s, 666 events.
    # Last: Monday 00:00 to the end of the last event's minute (Tuesday 14:51) = 139,860 s,
    # 234 events (00:00 .. 14:50 on two days).
    first, last = 4 * 86400 + 15 * 3600, 86400 + 14 * 3600 + 51 * 60
    assert manifest["partial_periods"] == {"2024-01-01T00:00": first, "2024-01-15T00:00": last}
    assert kg["events"].tolist() == [666, 1008, 234]
    assert kg["arrival_rate"].tolist() == [666 / first, 1008 / 604800, 234 / last]
    assert kg["load"].tolist() == [666 * 2.0 / first, 1008 * 2.0 / 604800, 234 * 2.0 / last]
    # A constant rate is the same in partial and whole weeks, within one event's worth.
    for rate, covered in zip(kg["arrival_rate"], (first, 604800, last)):
        assert abs(rate - 1 / STEP) <= 1 / covered
    snaps = list(read_snapshots(out))
    assert [s.covered_seconds for s in snaps] == [first, None, last]
    assert [s.partial for s in snaps] == [True, False, True]
    assert (
        "first period 2024-01-01T00:00 (Monday) is partial: the events cover 111 h of its 168 h (66.07%)"
        in printed
    )
    assert "last period 2024-01-15T00:00 (Monday) is partial: the events cover 39 h of its 168 h" in printed


def test_seven_days_start_at_the_first_events_local_midnight(tmp_path, capsys):
    write_trace(tmp_path)
    out, _ = stats(tmp_path, capsys, "--period", "7d")
    kg, manifest = per_period(out)
    assert kg.index.tolist() == ["2024-01-03T00:00", "2024-01-10T00:00"]  # Wednesdays, not Thursdays
    # First: Wednesday 09:00 to the next Wednesday 00:00 = 6 days 15 hours; last from 01-10 00:00.
    assert manifest["partial_periods"]["2024-01-03T00:00"] == 6 * 86400 + 15 * 3600
    assert kg["events"].tolist() == [(6 * 24 + 15) * 6, 6 * 144 + 14 * 6 + 6]


def test_weeks_follow_the_wall_clock_of_the_time_zone(tmp_path, capsys):
    write_trace(tmp_path)
    out, _ = stats(tmp_path, capsys, "--period", "1w", "--timezone", "Europe/Oslo")
    kg, manifest = per_period(out)
    # Monday 00:00 in Oslo (UTC+1 in January) is Sunday 23:00 UTC: the first week is covered
    # from Wednesday 09:00 UTC to Sunday 23:00 UTC = 4 days 14 hours, 660 events.
    assert kg.index.tolist() == ["2024-01-01T00:00", "2024-01-08T00:00", "2024-01-15T00:00"]
    assert manifest["partial_periods"]["2024-01-01T00:00"] == 4 * 86400 + 14 * 3600
    assert kg["events"].tolist()[:2] == [660, 1008]
    assert kg["arrival_rate"].iloc[0] == 660 / (4 * 86400 + 14 * 3600)
    # The week clocks go forward (2024-03-31) lasts an hour less; the one they go back, one more.
    weeks = wall_seconds(["2024-03-25T00:00", "2024-10-21T00:00", "2024-10-28T00:00"])
    assert period_lengths(weeks, 604800, "Europe/Oslo").tolist() == [604800 - 3600, 604800 + 3600, 604800]


def test_whole_periods_are_not_partial_and_days_keep_their_labels(tmp_path, capsys):
    # Hourly events, Monday 00:00 to Sunday 23:00: stamped by the hour, the last one stands for
    # the hour to Monday 00:00, so the week is covered to its end.
    assert write_trace(tmp_path, "2024-01-08T00:00:00Z", "2024-01-14T23:00:00Z", 3600) == 168
    out, printed = stats(tmp_path, capsys, "--period", "1w")
    kg, manifest = per_period(out)
    assert "partial_periods" not in manifest and kg["arrival_rate"].tolist() == [168 / 604800]
    assert "partial" not in printed and [s.partial for s in read_snapshots(out)] == [False]
    out, _ = stats(tmp_path, capsys, "--period", "1d")
    kg, manifest = per_period(out)
    assert kg.index.tolist() == [f"2024-01-{d:02d}T00:00" for d in range(8, 15)]


def test_the_period_units_and_their_message():
    assert parse_period("1w") == parse_period("7d") == 604800 and parse_period("2w") == 1209600
    with pytest.raises(AlbicError, match=r"unit \(s, min, h, d, w\).*1w"):
        parse_period("1y")
    with pytest.raises(AlbicError, match=r"whole weeks \(1w\)"):
        parse_period("7min")


def test_the_snapshot_json_keeps_the_mark_and_old_json_reads():
    snap = Snapshot([Node("n")], [KeyGroup("k", "op", 1.0)], {"k": "n"}, period="p", covered_seconds=900.5)
    data = json.loads(json.dumps(snapshot_to_dict(snap)))
    assert data["covered_seconds"] == 900.5 and snapshot_from_dict(data) == snap
    whole = snapshot_to_dict(Snapshot([Node("n")], [KeyGroup("k", "op", 1.0)], {"k": "n"}, period="p"))
    assert "covered_seconds" not in whole  # an old file: no such field
    assert snapshot_from_dict(whole).covered_seconds is None and not snapshot_from_dict(whole).partial
    assert snap.with_placement({"k": "m"}).covered_seconds == 900.5
    with pytest.raises(Exception, match="covered_seconds"):
        Snapshot([Node("n")], [KeyGroup("k", "op", 1.0)], {"k": "n"}, covered_seconds=-1.0).validate()


def test_compare_shows_the_partial_periods_and_drop_partial_leaves_exactly_them_out(tmp_path, capsys):
    write_trace(tmp_path, FIRST, "2024-01-30T14:50:00Z")
    out, _ = stats(tmp_path, capsys, "--period", "1w")
    weeks = [f"2024-01-{d:02d}T00:00" for d in (1, 8, 15, 22, 29)]
    table = compare(out, ["storm_default"], reference=None)
    assert table["period"].tolist() == weeks
    assert table["partial"].tolist() == [True, False, False, False, True]
    dropped = compare(out, ["storm_default"], reference=None, drop_partial=True)
    assert dropped["period"].tolist() == weeks[1:4] and not dropped["partial"].any()
    assert np.array_equal(
        dropped["load_distance"].to_numpy(),
        table.set_index("period").loc[weeks[1:4], "load_distance"].to_numpy(),
    )
