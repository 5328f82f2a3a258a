"""A plan knows what it was made from: every command that takes a plan and a snapshot or
statistics folder uses the plan's own period by default and refuses, in one line naming both, a
period, a dataset or a snapshot file that is not the one the plan was made for (``--force``
overrides and says so); an old plan file without the record works, with a warning.

Truth here is the planner's own figures (the plan's ``metrics``, computed when it was made) and
the snapshots themselves, not albic's reading of them: the right snapshot must give back exactly
the plan's load distance, and every wrong one must be refused before any figure is printed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from albic.cli.main import main
from albic.core import metrics
from albic.io import read_plan, read_snapshot, read_snapshots

#: Each command that reads a plan with its snapshot: its arguments after the plan and the source.
COMMANDS = {
    "explain": lambda tmp: ["explain", "--json"],
    "schedule": lambda tmp: ["schedule", "--json"],
    "plot": lambda tmp: ["plot", "--out", tmp / "f.png"],
    "export flink": lambda tmp: ["export", "flink", "--custom-assignment", "--out", tmp / "ranges.json"],
}


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def command(name, tmp_path, plan, source, *extra):
    words = COMMANDS[name](tmp_path)
    split = 2 if words[0] == "export" else 1
    return [*words[:split], plan, "--snapshot", source, *extra, *words[split:]]


@pytest.fixture(scope="module")
def made(flink_trace_once, tmp_path_factory):
    """Two statistics folders of one trace under two node-count rules, a milp plan for the first
    period of the first (not its last: the default a command must not fall back to), and that
    period as a snapshot file, once as written and once with one load edited."""
    trace, spec, _ = flink_trace_once
    tmp = tmp_path_factory.mktemp("made-for")
    folders = {}
    for name, nodes in (("four", "4"), ("three", "3")):
        folders[name] = tmp / name
        argv = [
            "stats",
            trace,
            "--spec",
            spec,
            "--engine",
            "pandas",
            "--nodes",
            nodes,
            "--out",
            folders[name],
        ]
        assert main([str(a) for a in argv]) == 0
    plan = tmp / "plan.json"
    argv = ["plan", folders["four"], "--period", "0", "--planner", "milp", "-p", "max_moves=3", "--out", plan]
    assert main([str(a) for a in argv]) == 0
    snapshot, edited = tmp / "s.json", tmp / "edited.json"
    assert main([str(a) for a in ["snapshot", folders["four"], "--period", "0", "--out", snapshot]]) == 0
    document = json.loads(snapshot.read_text())
    loaded = next(kg for kg in document["key_groups"] if kg["load"] > 0)
    loaded["load"] *= 1.01
    edited.write_text(json.dumps(document))
    return {**folders, "plan": plan, "snapshot": snapshot, "edited": edited}


def test_the_plan_records_its_period_snapshot_and_statistics(made):
    record = read_plan(made["plan"]).made_from
    first = next(iter(read_snapshots(made["four"])))
    assert record["period"] == first.period == "2024-01-01T00:00"
    assert record["snapshot"] == first.digest() and record["statistics"].startswith("sha256:")
    assert len(list(read_snapshots(made["four"]))) == 2  # so "the last period" is another one


@pytest.mark.parametrize("name", sorted(COMMANDS))
@pytest.mark.parametrize("source", ["four", "snapshot"])
def test_the_right_snapshot_gives_the_plans_figures(capsys, made, tmp_path, name, source):
    code, out, err = run(capsys, *command(name, tmp_path, made["plan"], made[source]))
    assert code == 0 and err == "", err
    if name == "explain":
        plan = read_plan(made["plan"])
        goals = json.loads(out)["goals"]["load_distance_pct"]
        assert goals["after"] == pytest.approx(plan.metrics["load_distance_pct"], abs=1e-12)
        assert goals["before"] > goals["after"] > 0


WRONG = {
    "another period": ("four", ["--period", "-1"], "was made for period 2024-01-01T00:00, but --period -1"),
    "another node-count rule": ("three", ["--period", "0"], "was made for other statistics"),
    "another node-count rule, no --period": ("three", [], "was made for other statistics"),
    "an edited snapshot": ("edited", [], "was made for another snapshot"),
}


@pytest.mark.parametrize("name", sorted(COMMANDS))
@pytest.mark.parametrize("case", sorted(WRONG))
def test_a_snapshot_the_plan_was_not_made_for_is_refused_in_one_line(capsys, made, tmp_path, name, case):
    source, extra, words = WRONG[case]
    argv = command(name, tmp_path, made["plan"], made[source], *extra)
    code, out, err = run(capsys, *argv)
    assert (code, out) == (2, "")
    assert err.startswith("albic: error: ") and err.count("\n") == 1, err
    assert words in err and str(made["plan"]) in err and str(made[source]) in err
    assert not any((tmp_path / f).exists() for f in ("f.png", "ranges.json"))
    code, out, err = run(capsys, *argv, "--force")
    assert code == 0 and err.startswith("albic: warning: --force: ") and words in err
    assert err.count("\n") == 1  # said once


def test_forced_figures_are_the_snapshots_not_the_plans(capsys, made, tmp_path):
    code, out, _ = run(capsys, *command("explain", tmp_path, made["plan"], made["edited"], "--force"))
    assert code == 0
    plan, edited = read_plan(made["plan"]), read_snapshot(made["edited"])
    after = json.loads(out)["goals"]["load_distance_pct"]["after"]
    assert after == pytest.approx(metrics.load_distance_pct(edited.with_assignment(plan.assignment)))
    assert after != pytest.approx(plan.metrics["load_distance_pct"], abs=1e-9)


def test_an_old_plan_without_the_record_is_read_with_a_warning(capsys, made, tmp_path):
    document = json.loads(made["plan"].read_text())
    del document["made_from"]
    old = tmp_path / "old.json"
    old.write_text(json.dumps(document))
    code, out, err = run(capsys, "explain", old, "--snapshot", made["snapshot"], "--json")
    assert code == 0 and json.loads(out)["goals"]["load_distance_pct"]["after"] == pytest.approx(
        document["metrics"]["load_distance_pct"]
    )
    assert err.startswith("albic: warning: ") and "does not record the snapshot" in err
    assert err.count("\n") == 1


def test_a_plan_made_in_python_records_its_snapshot(made, tmp_path):
    import albic

    first = next(iter(read_snapshots(made["four"])))
    plan = albic.plan(first, "flux", max_moves=2)
    albic.write_plan(plan, tmp_path / "p.json")
    record = read_plan(tmp_path / "p.json").made_from
    assert record == {"period": first.period, "snapshot": first.digest()}
    # A plan read back keeps its record when written again.
    albic.write_plan(read_plan(tmp_path / "p.json"), tmp_path / "q.json")
    assert json.loads(Path(tmp_path / "q.json").read_text())["made_from"] == record


def test_the_library_refuses_a_plan_on_a_snapshot_it_was_not_made_for(made):
    import albic
    from albic.base.errors import NotMadeForError

    plan, edited = read_plan(made["plan"]), read_snapshot(made["edited"])
    for call in (lambda: plan.explain(edited), lambda: albic.schedule(plan, edited)):
        with pytest.raises(NotMadeForError, match="was made for another snapshot than the one given"):
            call()
    right = read_snapshot(made["snapshot"]).with_placement(plan.previous_assignment)
    assert plan.explain(right)["goals"]["load_distance_pct"]["after"] == pytest.approx(
        plan.metrics["load_distance_pct"]
    )
