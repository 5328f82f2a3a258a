"""MTM estimation and the `albic mtm` command."""

from __future__ import annotations

import json

import numpy as np
import pytest

from albic.base.errors import AlbicError, InvalidParameterError
from albic.cli.main import main
from albic.stats.node_counts import parse_node_counts
from albic.stats.transitions import estimate_mtm, normalise_node_counts, read_mtm, read_node_counts


def test_counts_and_rows_by_hand():
    # 2->3, 3->3, 3->2, 2->3, 3->4: row 2 = {3: 2/2}; row 3 = {3: 1/3, 2: 1/3, 4: 1/3}; 4 never left.
    mtm = estimate_mtm([2, 3, 3, 2, 3, 4])
    assert mtm.states == [2, 3, 4]
    assert mtm.counts.tolist() == [[0, 2, 0], [1, 1, 1], [0, 0, 0]]
    assert mtm.matrix[1].tolist() == pytest.approx([1 / 3] * 3)
    assert mtm.unseen_rows == [4] and mtm.matrix[2].tolist() == [0.0, 0.0, 1.0]
    uniform = estimate_mtm([2, 3, 3, 2, 3, 4], unseen="uniform")
    assert uniform.matrix[2].tolist() == pytest.approx([1 / 3] * 3)
    with pytest.raises(InvalidParameterError, match=r"node counts \[4\] are never left"):
        estimate_mtm([2, 3, 3, 2, 3, 4], unseen="error")
    assert np.allclose(mtm.matrix.sum(axis=1), 1.0)


def test_bad_series():
    with pytest.raises(InvalidParameterError, match="outside the states"):
        estimate_mtm([2, 5], states=[2, 3])
    with pytest.raises(InvalidParameterError, match=">= 1"):
        estimate_mtm([0, 1])


def test_normalise_into_range():
    assert normalise_node_counts([5, 5], 8, 16) == [8, 8]
    assert normalise_node_counts([0, 1, 3, 4], 8, 16) == [8, 10, 14, 16]


def test_cli_writes_the_matrix(tmp_path, capsys):
    series = tmp_path / "stats"
    series.mkdir()
    (series / "node_counts.csv").write_text("period,nodes\n2,3\n1,2\n3,2\n4,3\n")
    assert read_node_counts(series) == [2, 3, 2, 3]  # ordered by period
    out = tmp_path / "mtm.json"
    assert main(["mtm", str(series), "--out", str(out), "--states", "2", "4"]) == 0
    mtm = read_mtm(out)
    assert mtm.states == [2, 3, 4] and mtm.matrix[0].tolist() == [0.0, 1.0, 0.0]
    assert json.loads(out.read_text())["unseen_rows"] == [4]
    assert "rows never left (stay): [4]" in capsys.readouterr().out


def test_cli_errors_are_one_line(tmp_path, capsys):
    # A file whose counts column cannot be told: two numeric columns, neither named as counts.
    # (One numeric column is taken as the counts -- a file `ts,machines` works as it is --
    # so a load column alone is refused by its values instead, below.)
    bad = tmp_path / "bad.csv"
    bad.write_text("period,load,cpu\n1,2,3\n")
    assert main(["mtm", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("albic: error:") and "no column named one of" in err and err.count("\n") == 1
    load = tmp_path / "load.csv"
    load.write_text("period,load\n1,2.5\n")
    assert main(["mtm", str(load)]) == 2
    err = capsys.readouterr().err
    assert "row 0 holds 2.5, not a whole node count >= 1" in err and "--normalise" in err
    assert main(["mtm", str(tmp_path / "missing.csv")]) == 2


def test_a_series_with_its_own_column_names_is_read_by_content(tmp_path, capsys):
    # `ts,machines`: the time column found by its values, the counts as the one numeric column.
    series = tmp_path / "cluster.csv"
    series.write_text("ts,machines\n2024-01-01T02:00Z,3\n2024-01-01T00:00Z,2\n2024-01-01T01:00Z,4\n")
    assert read_node_counts(series) == [2, 4, 3]  # in time order
    # Two columns of times: ambiguous until named, FILE:TIME_COLUMN:COUNT_COLUMN.
    both = tmp_path / "both.csv"
    both.write_text(
        "ts,at,machines\n2024-01-01T00:00Z,2024-01-01T05:00Z,2\n2024-01-01T01:00Z,2024-01-01T04:00Z,3\n"
    )
    with pytest.raises(AlbicError, match=r"several columns of times \['ts', 'at'\]"):
        read_node_counts(both)
    rule = parse_node_counts(f"{both}:at:machines")
    assert (rule.time_column, rule.column) == ("at", "machines")
    assert rule.for_periods([0.0, 0.0], ["2024-01-01T04:00", "2024-01-01T05:00"]) == [3, 2]


def test_the_series_of_a_statistics_dataset_is_its_node_count_per_period(tmp_path):
    import pandas as pd

    from albic.stats.transitions import read_node_counts

    # a 'nodes' table as `albic stats` writes it: one row per node and period, periods unordered
    rows = (
        [("2013-01-01T11:00", f"n{i}") for i in range(4)]
        + [("2013-01-01T10:00", f"n{i}") for i in range(3)]
        + [("2013-01-01T12:00", f"n{i}") for i in range(3)]
    )
    (tmp_path / "nodes").mkdir()
    pd.DataFrame(rows, columns=["period", "id"]).assign(capacity=1.0).to_parquet(
        tmp_path / "nodes" / "part-0.parquet"
    )
    assert read_node_counts(tmp_path) == [3, 4, 3]


def test_albic_mtm_reads_what_albic_stats_writes(tmp_path, capsys):
    from albic.cli.main import main

    stats = tmp_path / "stats"
    assert (
        main(
            [
                "stats",
                "words",
                "--engine",
                "pandas",
                "--start",
                "2013-11-27",
                "--days",
                "2",
                "--key-groups",
                "8",
                "--nodes",
                "2:5",
                "--out",
                str(stats),
            ]
        )
        == 0
    )
    assert main(["mtm", str(stats), "--out", str(tmp_path / "mtm.json")]) == 0
    assert (tmp_path / "mtm.json").stat().st_size > 0
