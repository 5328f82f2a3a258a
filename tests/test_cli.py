"""The command line, run in-process through albic.cli.main (plus one real subprocess)."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from importlib.resources import as_file, files
from pathlib import Path

import pytest

import albic
import albic.core.planner
from albic.cli.main import main
from albic.core.planner import BUDGET_PARAMETERS, Planner, PlannerTags, parse_value
from albic.core.registry import available_planners
from albic.io import read_plan, read_snapshots
from albic.io.datasets import read_manifest

# -- test planners --------------------------------------------------------------------------------


class GreedyBudget(Planner):
    """Moves the heaviest key group of the fullest node to the emptiest one, ``max_moves`` times."""

    name = "test_greedy"
    parameters = BUDGET_PARAMETERS

    def __init__(self, *, max_moves=None, max_migration_cost=None):
        self.max_moves = max_moves
        self.max_migration_cost = max_migration_cost

    def tags(self):
        return PlannerTags(budget=True)

    def _plan(self, snapshot):
        assignment = dict(snapshot.assignment)
        loads = {kg.id: kg.load for kg in snapshot.key_groups}
        active = [n.id for n in snapshot.active_nodes]
        budget = len(loads) if self.max_moves is None else self.max_moves
        for _ in range(budget):
            on = {n: sum(loads[k] for k, m in assignment.items() if m == n) for n in active}
            full, empty = max(active, key=on.get), min(active, key=on.get)
            gap = on[full] - on[empty]
            movable = [k for k, m in assignment.items() if m == full and loads[k] < gap]
            if not movable:
                break
            assignment[max(movable, key=loads.get)] = empty
        return self.result(snapshot, assignment)


class Broken(Planner):
    """Places a key group on a node that does not exist: a contract violation."""

    name = "test_broken"

    def _plan(self, snapshot):
        first = snapshot.key_groups[0].id
        return self.result(snapshot, {**snapshot.assignment, first: "nowhere"})


class Crashing(Planner):
    name = "test_crashing"

    def _plan(self, snapshot):
        return 1 / 0


class Interrupted(Planner):
    name = "test_interrupted"

    def _plan(self, snapshot):
        raise KeyboardInterrupt


@pytest.fixture
def registry(monkeypatch):
    """A private copy of the run-time registry; returns a function that registers a planner."""
    monkeypatch.setattr(albic.core.registry, "REGISTERED", dict(albic.core.registry.REGISTERED))

    def register(cls):
        with warnings.catch_warnings():  # about installed planners that fail to import
            warnings.simplefilter("ignore", RuntimeWarning)
            return albic.core.planner.register_planner(cls)

    return register


@pytest.fixture
def greedy(registry):
    registry(GreedyBudget)
    return GreedyBudget.name


@pytest.fixture
def snapshot_path():
    with as_file(files("albic.data") / "example_snapshot.json") as path:
        yield path


def run(capsys, *argv):
    """``(exit code, stdout, stderr)`` of ``albic *argv``; stderr without registry warnings."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    err = "".join(line for line in err.splitlines(True) if not line.startswith("albic: warning:"))
    return code, out, err


def assert_input_error(code, err, *names):
    assert code == 2
    assert err.startswith("albic: error: "), err
    assert "Traceback" not in err
    for name in names:
        assert name in err, (name, err)


# -- plan -----------------------------------------------------------------------------------------


def test_plan_to_file_writes_a_readable_plan_within_the_budget(capsys, tmp_path, greedy, snapshot_path):
    out = tmp_path / "plan.json"
    argv = ["plan", snapshot_path, "--planner", greedy, "--param", "max_moves=2", "--out", out]
    code, stdout, err = run(capsys, *argv)
    assert (code, err) == (0, "")
    plan = read_plan(out)
    assert plan.planner == greedy
    assert len(plan.moves) == 2
    snapshot = albic.read_snapshot(snapshot_path)
    for move in plan.moves:
        assert move.source == snapshot.assignment[move.key_group]
        assert move.target == plan.assignment[move.key_group] != move.source
    assert stdout == plan.summary() + "\n"


def test_plan_to_stdout_is_plan_json(capsys, greedy, snapshot_path):
    code, stdout, _ = run(capsys, "plan", snapshot_path, "--planner", greedy, "-p", "max_moves=0")
    assert code == 0
    data = json.loads(stdout)
    assert data["schema"] == "albic.plan/1"
    assert data["planner"] == greedy
    assert data["moves"] == []


def test_plan_with_a_real_planner_if_any(capsys, snapshot_path):
    planners = available_planners()
    budgeted = [n for n, cls in planners.items() if "max_moves" in cls.parameter_names()]
    if not budgeted:
        pytest.skip("no installed planner takes max_moves")
    argv = ["plan", snapshot_path, "--planner", budgeted[0], "-p", "max_moves=3"]
    code, stdout, _ = run(capsys, *argv)
    assert code == 0
    assert len(json.loads(stdout)["moves"]) <= 3


@pytest.mark.parametrize(
    "text, value",
    [
        ("3", 3),
        ("0.5", 0.5),
        ("true", True),
        ("false", False),
        ("null", None),
        ("none", None),
        ("None", None),
        ("cp-sat", "cp-sat"),
        ('"3"', "3"),
        ("", ""),
    ],
)
def test_param_values_are_json_literals_else_text(text, value):
    parsed = parse_value(text)
    assert parsed == value and type(parsed) is type(value)


# -- planners and demo ----------------------------------------------------------------------------


def test_planners_lists_every_registered_planner(capsys, greedy):
    code, stdout, _ = run(capsys, "planners")
    assert code == 0
    lines = stdout.splitlines()
    assert [line.split()[0] for line in lines] == list(available_planners())
    ours = next(line for line in lines if line.startswith(greedy))
    assert "test_cli:GreedyBudget" in ours
    assert "tags: deterministic, budget" in ours
    assert "max_moves=None, max_migration_cost=None" in ours


# The demo's tests are in tests/test_demo.py.


def test_stats_of_a_builtin_trace_with_the_pandas_twin(capsys, tmp_path):
    out = tmp_path / "stats"
    argv = [
        "stats",
        "words",
        "--engine",
        "pandas",
        "--start",
        "2013-11-27",
        "--days",
        "1",
        "--key-groups",
        "16",
        "--nodes",
        "2:5",
        "--out",
        out,
    ]
    code, printed, err = run(capsys, *argv)
    assert (code, err) == (0, "")
    written, nodes, empty = printed.splitlines()
    assert written == f"statistics of words written to {out}"
    assert nodes == "node counts: load mapping, each period's total load onto 2..5 nodes (--node-counts 2:5)"
    # The day's events fall at any instant, the first and last within a mean gap of the day's
    # ends: no period is partial, and none is said to be.
    assert "partial_periods" not in read_manifest(out)
    # 26 letters hashed into 16 key groups leave one empty; every word's key group holds one.
    assert empty.startswith("key groups that never hold an event: letter 1 of 16 (1 of 32 in all)")
    snaps = list(read_snapshots(out))
    assert {len(s.nodes) for s in snaps} <= {2, 3, 4, 5} and len(snaps) >= 18
    assert [op.name for op in snaps[0].operators] == ["word", "letter"]


def test_stats_of_an_events_file_needs_a_spec_and_its_columns(capsys, tmp_path):
    events = tmp_path / "events.csv"
    events.write_text("ts,word\n2013-01-01T10:00:00Z,the\n")
    code, _, err = run(capsys, "stats", events, "--engine", "pandas", "--out", tmp_path / "o")
    assert_input_error(code, err, "--spec")
    spec = tmp_path / "spec.toml"
    spec.write_text('timestamp = "ts"\n[[operators]]\nname = "c"\nkeys = ["city"]\n')
    code, _, err = run(capsys, "stats", events, "--spec", spec, "--engine", "pandas", "--out", tmp_path / "o")
    assert_input_error(code, err, "'city'", "key of c")
    assert not (tmp_path / "o").exists()


# -- failures -------------------------------------------------------------------------------------


def test_planner_bug_is_an_internal_error(capsys, registry, snapshot_path):
    registry(Broken)
    code, _, err = run(capsys, "plan", snapshot_path, "--planner", "test_broken")
    assert code == 1
    assert err.startswith("albic: internal error in planner test_broken: ")
    assert "'nowhere'" in err and "please report it" in err and "Traceback" not in err


def test_planner_crash_is_an_internal_error_with_its_traceback(capsys, registry, snapshot_path):
    registry(Crashing)
    code, _, err = run(capsys, "plan", snapshot_path, "--planner", "test_crashing")
    assert code == 1
    assert err.startswith("albic: internal error in planner test_crashing: ZeroDivisionError")
    assert "Traceback" in err and "please report it" in err


def test_interrupt_exits_130_quietly(capsys, registry, snapshot_path):
    registry(Interrupted)
    assert run(capsys, "plan", snapshot_path, "--planner", "test_interrupted") == (130, "", "")


def write_json(path: Path, data) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_missing_snapshot(capsys, tmp_path, greedy):
    code, _, err = run(capsys, "plan", tmp_path / "missing.json", "--planner", greedy)
    assert_input_error(code, err, "missing.json", "No such file")
    assert len(err.splitlines()) == 1


@pytest.mark.parametrize("content", [b"hello", b'{"schema": ', b"\xff\xfe\x00binary"])
def test_snapshot_that_is_not_json(capsys, tmp_path, greedy, content):
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    code, _, err = run(capsys, "plan", path, "--planner", greedy)
    assert_input_error(code, err, "bad.json")
    assert len(err.splitlines()) == 1


def test_json_of_the_wrong_schema(capsys, tmp_path, greedy, snapshot_path):
    plan_file = tmp_path / "plan.json"
    assert run(capsys, "plan", snapshot_path, "--planner", greedy, "--out", plan_file)[0] == 0
    code, _, err = run(capsys, "plan", plan_file, "--planner", greedy)
    # The wrong file, not a broken snapshot: said as such, not as a list of missing fields.
    assert_input_error(code, err, "plan.json", "is a plan file (schema albic.plan/1), not a snapshot file")
    assert len(err.splitlines()) == 1 and "lacks the required field" not in err
    code, _, err = run(capsys, "explain", snapshot_path, "--snapshot", snapshot_path)
    assert_input_error(code, err, "is a snapshot file (schema albic.snapshot/1), not a plan file")


def test_snapshot_with_a_negative_load(capsys, tmp_path, greedy, snapshot_path):
    data = json.loads(snapshot_path.read_text())
    data["key_groups"][35]["load"] = -1
    path = write_json(tmp_path / "negative.json", data)
    code, _, err = run(capsys, "plan", path, "--planner", greedy)
    assert_input_error(code, err, "'dest/3'", "load = -1.0", ">= 0")
    assert len(err.splitlines()) == 1


@pytest.mark.parametrize("section, field", [("key_groups", "id"), ("traffic", "src"), ("key_groups", "node")])
def test_snapshot_with_ill_typed_values(capsys, tmp_path, greedy, snapshot_path, section, field):
    data = json.loads(snapshot_path.read_text())
    data[section][0][field] = ["not", "a", "string"]
    path = write_json(tmp_path / "typed.json", data)
    code, _, err = run(capsys, "plan", path, "--planner", greedy)
    assert_input_error(code, err, "typed.json")


def test_unknown_planner_lists_the_known_ones(capsys, greedy, snapshot_path):
    code, _, err = run(capsys, "plan", snapshot_path, "--planner", "nope")
    assert_input_error(code, err, "'nope'", greedy, *available_planners())


def test_unknown_parameter(capsys, greedy, snapshot_path):
    code, _, err = run(capsys, "plan", snapshot_path, "--planner", greedy, "-p", "max_move=3")
    assert_input_error(code, err, "'max_move'", "max_moves")


def test_bad_parameter_value(capsys, greedy, snapshot_path):
    code, _, err = run(capsys, "plan", snapshot_path, "--planner", greedy, "-p", "max_moves=-1")
    assert err == (
        "albic: error: The 'max_moves' parameter of planner 'test_greedy' must be an int in [0, 1000000000] "
        "or None. "
        "Got -1 instead.\n"
    )
    assert code == 2


@pytest.mark.parametrize(
    "argv, names",
    [
        (["-p", "max_moves"], ["-p/--param", "NAME=VALUE", "'max_moves'"]),
        (["-p", "=3"], ["NAME=VALUE", "'=3'"]),
        (["-p", "max_moves=1", "-p", "max_moves=2"], ["max_moves", "more than once"]),
    ],
)
def test_usage_errors(capsys, greedy, snapshot_path, argv, names):
    code, _, err = run(capsys, "plan", snapshot_path, "--planner", greedy, *argv)
    assert_input_error(code, err, *names)
    assert len(err.splitlines()) == 1


def test_plan_without_planner_uses_the_readmes_default(capsys, tmp_path):
    # README: "`albic.plan(snapshot)` uses `albic` by default"; the command line agrees.
    example = Path(__file__).resolve().parents[1] / "data" / "example_snapshot.json"
    code, _, err = run(capsys, "plan", example, "-p", "max_moves=5", "--out", tmp_path / "p.json")
    assert (code, err) == (0, "")
    planned = albic.read_plan(tmp_path / "p.json")
    assert planned.planner == "albic" and len(planned.moves) == 5
    direct = albic.plan(albic.read_snapshot(example), max_moves=5)
    assert dict(planned.assignment) == dict(direct.assignment)


def test_output_folder_missing_fails_before_planning(capsys, tmp_path, greedy, snapshot_path):
    out = tmp_path / "no" / "plan.json"
    code, _, err = run(capsys, "plan", snapshot_path, "--planner", greedy, "--out", out)
    assert_input_error(code, err, str(out.parent), "does not exist")


def test_no_command_and_unknown_command(capsys):
    assert_input_error(*run(capsys)[::2], "COMMAND")
    assert_input_error(*run(capsys, "bogus")[::2], "'bogus'")


def test_version(capsys):
    assert run(capsys, "--version") == (0, f"albic {albic.__version__}\n", "")


# -- the real entry points ------------------------------------------------------------------------


def test_console_script_and_python_m_albic():
    script = Path(sys.executable).parent / "albic"
    commands = [[sys.executable, "-m", "albic", "planners"]]
    if script.exists():
        commands.append([str(script), "planners"])
    installed = set(available_planners()) - set(albic.core.registry.REGISTERED)  # not this process's
    for command in commands:
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
        assert "Traceback" not in done.stderr
        assert done.returncode == (0 if installed else 1), done.stderr
        assert {line.split()[0] for line in done.stdout.splitlines()} == installed


def test_command_modules_plug_into_the_parser(monkeypatch, capsys):
    import sys
    import types

    import albic.cli.main

    module = types.ModuleType("albic_test_echo_command")
    module.add_arguments = lambda parser: parser.add_argument("word")
    module.run = lambda args: print(args.word.upper()) or 0
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setattr(albic.cli.main, "COMMANDS", {"echo": (module.__name__, "print the word")})
    assert albic.cli.main.main(["echo", "hello"]) == 0
    assert capsys.readouterr().out == "HELLO\n"


def test_every_command_prints_its_help(capsys):
    """Every subcommand's --help is formatted (argparse reads a bare % in a help text as a format)."""
    import argparse

    from albic.cli.main import build_parser

    parser = build_parser()
    (subparsers,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    names = list(subparsers.choices)
    assert len(names) > 10
    for name in names:
        assert main([name, "--help"]) == 0, name
        assert "usage: albic" in capsys.readouterr().out, name
