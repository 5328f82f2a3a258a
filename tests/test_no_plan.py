"""Periods with no plan made are told apart from plans everywhere: a user's trace (the parcel
trace of conftest) compared with a planner that cannot plan any period (elasticutor on one core
per node, 16 key groups: each key group needs a core of its own) and one that sometimes cannot
(ssm with a tight cap, tau 0.1: INFEASIBLE in 3 of the 5 planned hours). The summary, the printed
table and every figure are checked against the replay table, counted here from its statuses."""

from __future__ import annotations

import contextlib
import io
import json

import numpy as np
import pandas as pd
import pytest

from albic.base.formats import seconds
from albic.cli.main import main
from albic.evaluation import plot

PLANNERS = ["elasticutor", "ssm:tau=0.1", "flux"]
MADE = ("OPTIMAL", "FEASIBLE")


@pytest.fixture(scope="module")
def stats_dir(user_stats):
    return user_stats


@pytest.fixture(scope="module")
def compared(stats_dir, tmp_path_factory):
    """``albic compare`` of the three planners: (exit code, stdout, replay table, summary table)."""
    out = tmp_path_factory.mktemp("no-plan-compare") / "out"
    argv = ["compare", str(stats_dir), "--budgets", "max_moves=1", "--out", str(out)]
    for planner in PLANNERS:
        argv += ["--planner", planner]
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        code = main(argv)
    table = pd.read_csv(out / "replay.csv", keep_default_na=False, na_values=[""])
    summary = pd.read_csv(out / "summary.csv").set_index("planner")
    return code, stdout.getvalue(), table, summary


def test_the_two_planners_fail_as_the_trace_makes_them(compared):
    _, _, table, _ = compared
    statuses = table.groupby("planner")["status"].apply(list)
    assert statuses["elasticutor"] == ["SKIPPED"] + ["INFEASIBLE"] * 5
    assert sorted(statuses["ssm:tau=0.1"][1:]) == ["INFEASIBLE"] * 3 + ["OPTIMAL"] * 2


def test_every_period_without_a_plan_says_why(compared):
    _, _, table, _ = compared
    elasticutor = table[(table["planner"] == "elasticutor") & table["planned"]]
    for row in elasticutor.to_dict("records"):
        # One core per active node, 8 key groups in each of the two operators.
        cores = f"{row['nodes']} core{'s' * (row['nodes'] != 1)} for 16 key groups"
        assert row["error"].startswith(cores), row["error"]
    ssm = table[(table["planner"] == "ssm:tau=0.1") & (table["status"] == "INFEASIBLE")]
    assert (ssm["error"].str.contains("no plan within the cap")).all()
    made = table[table["status"].isin(MADE)]
    assert made["error"].isna().all()


def test_the_summary_adds_up_to_the_replay_table(compared):
    _, _, table, summary = compared
    for planner, rows in table.groupby("planner"):
        row = summary.loc[planner]
        asked = rows[rows["planned"]]
        assert row["planned"] == asked["status"].isin(MADE).sum()
        assert row["infeasible"] == (rows["status"] == "INFEASIBLE").sum()
        counted = ["planned", "infeasible", "no_solution", "unsupported", "errors"]
        assert row[counted].sum() == len(asked)
    assert summary.loc["elasticutor", ["planned", "infeasible"]].tolist() == [0, 5]
    assert summary.loc["ssm:tau=0.1", ["planned", "infeasible"]].tolist() == [2, 3]
    # A planner with no plan at all has no figure that could read as a result.
    for column in ("mean_load_distance_pct", "mean_migration_cost_pct", "median_p99_latency_ms"):
        assert np.isnan(summary.loc["elasticutor", column]), column
    # One that sometimes plans is averaged over every period: the kept placement is what runs.
    ssm = table[table["planner"] == "ssm:tau=0.1"]
    assert summary.loc["ssm:tau=0.1", "mean_load_distance_pct"] == pytest.approx(
        ssm["load_distance_pct"].mean()
    )


def test_the_latency_figures_are_over_the_steady_periods_and_the_overloaded_apart(compared):
    _, stdout, table, summary = compared
    lines = stdout.splitlines()
    checked = 0
    for planner in ("ssm:tau=0.1", "flux"):
        rows, row = table[table["planner"] == planner], summary.loc[planner]
        steady, overloaded = rows[rows["steady"]], rows[rows["overloaded_nodes"] > 0]
        assert row["steady_periods"] == len(steady) and row["overloaded_periods"] == len(overloaded)
        assert len(steady) + len(overloaded) == len(rows)
        assert row["median_p99_latency_ms"] == pytest.approx(steady["p99_latency_ms"].median())
        assert row["p95_p99_service_times"] == pytest.approx(steady["p99_service_times"].quantile(0.95))
        assert row["undrained_periods"] == overloaded["drain_seconds"].isna().sum()
        printed = next(line for line in lines if line.startswith(f"{planner} "))
        assert seconds(row["median_p99_latency_ms"] / 1000) in printed
        assert f"{len(overloaded)} of {len(rows)}" in printed
        checked += len(steady)
    assert checked > 0
    assert np.isnan(summary.loc["elasticutor", "median_p99_service_times"])


def test_the_printed_table_tells_plans_from_failures(compared):
    code, stdout, _, _ = compared
    assert code == 0
    lines = stdout.splitlines()
    header = next(line for line in lines if line.startswith("planner "))
    assert "no plan" in header and "floor LD %" in header and "at floor" in header
    assert any(line.startswith("floor LD: the load distance no placement goes below") for line in lines)
    elasticutor = next(line for line in lines if line.startswith("elasticutor "))
    assert elasticutor.split()[2:6] == ["6", "0", "5", "INFEASIBLE"]
    assert elasticutor.split()[6] == "-"  # no mean load distance
    ssm = next(line for line in lines if line.startswith("ssm:tau=0.1 "))
    assert ssm.split()[2:6] == ["6", "2", "3", "INFEASIBLE"]
    note = next(line for line in lines if line.startswith("elasticutor: 5 of 6 period(s) INFEASIBLE"))
    assert "cores for 16 key groups" in note


def _texts(figure) -> str:
    titles = [axes.get_title(loc).replace("\n", " ") for axes in figure.axes for loc in ("center", "left")]
    # Long titles and legend labels are wrapped at spaces: read them as one line again.
    legends = [
        t.get_text().replace("\n", " ")
        for axes in figure.axes
        if axes.get_legend()
        for t in axes.get_legend().get_texts()
    ]
    notes = [t.get_text() for t in figure.texts] + [t.get_text() for axes in figure.axes for t in axes.texts]
    ticks = [t.get_text() for axes in figure.axes for t in axes.get_yticklabels()]
    return "\n".join(titles + legends + notes + ticks)


def test_every_figure_marks_or_leaves_out_what_did_not_plan(compared):
    _, _, table, _ = compared
    for name, draw in plot.FIGURES.items():
        text = _texts(draw(table))
        assert "elasticutor: INFEASIBLE 5/6" in text and "cores for 16 key groups" in text, name
        assert "ssm:tau=0.1 (no plan: INFEASIBLE 3/6; drawn over the other 3)" in text, (name, text)


def test_periods_with_no_plan_are_gaps_in_the_lines(compared):
    _, _, table, _ = compared
    figure = plot.load_distance_over_time(table)
    ssm = table[table["planner"] == "ssm:tau=0.1"]
    (axes,) = [a for a in figure.axes if a.get_title().startswith("ssm")]
    line, ticks = axes.get_lines()
    drawn = np.asarray(line.get_ydata(), dtype=float)
    expected = ssm["load_distance_pct"].where(ssm["status"] != "INFEASIBLE").to_numpy(dtype=float)
    np.testing.assert_array_equal(np.isnan(drawn), np.isnan(expected))
    np.testing.assert_allclose(drawn[~np.isnan(drawn)], expected[~np.isnan(expected)])
    # Each gap is marked at the panel's foot: a tick at every period with no plan, none elsewhere.
    assert (
        ticks.get_label() == "no plan made"
        and len(ticks.get_xdata()) == (ssm["status"] == "INFEASIBLE").sum() == 3
    )
    assert not any(a.get_title().startswith("elasticutor") for a in figure.axes)


def test_albic_plan_exits_3_with_the_reason_and_explain_gives_it(capsys, stats_dir, tmp_path):
    code = main(
        [
            "plan",
            str(stats_dir),
            "--period",
            "1",
            "--planner",
            "elasticutor",
            "--out",
            str(tmp_path / "p.json"),
        ]
    )
    out, err = capsys.readouterr()
    assert code == 3
    assert (
        err.startswith("albic: error: elasticutor found no plan (INFEASIBLE): ")
        and len(err.splitlines()) == 1
    )
    assert "cores for 16 key groups" in err and "cores for 16 key groups" in out
    plan = json.loads((tmp_path / "p.json").read_text())
    assert plan["status"] == "INFEASIBLE" and plan["moves"] == []
    code = main(["explain", str(tmp_path / "p.json"), "--snapshot", str(stats_dir), "--period", "1"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "warning: the planner found no plan (INFEASIBLE)" in out and "cores for 16 key groups" in out


def test_a_panel_title_matches_the_summary_rows_of_its_budgets(stats_dir):
    import albic
    from albic.base.formats import percent

    table = albic.compare(albic.read_snapshots(stats_dir), ["flux"], budgets="max_moves=1,3")
    means = albic.summarize(table).loc["flux", "mean_load_distance_pct"]
    (axes,) = [
        a
        for a in plot.load_distance_over_time(table).axes
        if a.get_visible() and a.get_title().startswith("flux")
    ]
    # Each end of the range is named by its budget: a bare "a to b" reads as before and after.
    one, three = means.tolist()
    assert axes.get_title() == f"flux\nmean {percent(one)} at max_moves=1 .. {percent(three)} at 3"
    assert one != three  # two rows of summary.csv, each one named, none averaged


def test_the_time_axis_names_the_statistics_time_zone(user_trace, tmp_path, monkeypatch, capsys):
    from albic.cli.commands import compare as command

    events, spec = user_trace
    argv = ["stats", events, "--spec", spec, "--out", tmp_path / "stats", "--engine", "pandas"]
    assert main([str(a) for a in [*argv, "--timezone", "America/Chicago", "--key-groups", "4"]]) == 0
    drawn = {}

    def figures(table, out, *, timezone=None):
        drawn["figure"] = plot.load_distance_over_time(table, timezone=timezone)
        return []

    monkeypatch.setattr(command.plot, "standard_figures", figures)
    argv = ["compare", tmp_path / "stats", "--planner", "flux", "--out", tmp_path / "out"]
    assert main([str(a) for a in argv]) == 0, capsys.readouterr().err
    labels = {a.get_xlabel() for a in drawn["figure"].axes if a.get_xlabel()}
    assert labels == {"period start (America/Chicago)"}


def test_a_point_is_made_of_the_periods_with_a_plan_and_drawn_hollow(compared):
    _, _, table, _ = compared
    ssm = table[(table["planner"] == "ssm:tau=0.1") & (table["status"] != "INFEASIBLE")]
    figure = plot.tradeoff(table)
    (line,) = [ln for ln in figure.axes[0].get_lines() if ln.get_label().startswith("ssm:tau=0.1")]
    assert line.get_xdata()[0] == pytest.approx(ssm["migration_cost_pct"].mean())
    assert line.get_ydata()[0] == pytest.approx(ssm["load_distance_pct"].mean())
    assert line.get_markerfacecolor() == "none" and len(ssm) == 3
