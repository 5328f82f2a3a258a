"""The standing fuzz test: random snapshots of every magnitude through every planner.

Snapshots from :func:`albic.testing.fuzz.wild_snapshots` (loads, state sizes and rates over 10^-6..10^12,
removing and new nodes, heterogeneous capacities, traffic), budgets and small time limits from
:func:`albic.testing.fuzz.fuzz_parameters`; replica groups (``spread`` values) for the planners tagged
``spread``, and a check that every other planner refuses them; each plan is checked again by the
independent validator with its budgets. The only exception allowed is the documented clean refusal
of a snapshot outside a planner's model (UnsupportedSnapshotError). Seeded (derandomize) and
bounded: 200 snapshots per planner, small snapshots. The same test at 5,000 per planner: ``python
-m benchmarks fuzz``.
"""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from albic import available_planners, get_planner
from albic.cli.main import main
from albic.testing.fuzz import fuzz_one, fuzz_parameters, shape_for, spread_for, wild_snapshots

EXAMPLES = 200
# Refusing a snapshot with spread values happens before any planning: a few suffice.
SPREAD_REFUSALS = 40


@pytest.mark.parametrize("name", sorted(available_planners()))
def test_every_planner_on_snapshots_of_every_magnitude(name):
    seen: Counter = Counter()

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(wild_snapshots(shape=shape_for(name), spread=spread_for(name)), fuzz_parameters(name))
    def run(snapshot, params):
        outcome = fuzz_one(name, snapshot, params)
        assert outcome.kind in ("ok", "unsupported"), outcome.detail
        seen[outcome.kind] += 1
        seen["spread planned"] += outcome.kind == "ok" and any(
            kg.spread is not None for kg in snapshot.key_groups
        )
        # Queueing snapshots carry their magnitude in the rates as much as in the loads.
        seen["magnitude 1e9+"] += any(
            max(kg.load, kg.arrival_rate or 0.0, kg.service_rate or 0.0) >= 1e9 for kg in snapshot.key_groups
        )

    run()
    assert seen["ok"] + seen["unsupported"] >= EXAMPLES
    assert seen["ok"] >= EXAMPLES * 3 // 4  # the shapes fit the planner: most snapshots are planned
    assert seen["magnitude 1e9+"] >= EXAMPLES // 20  # the large magnitudes were reached (14-40 seen)
    if spread_for(name) != "never":  # replica groups were drawn and planned (47-73 seen)
        assert seen["spread planned"] >= EXAMPLES // 8


NO_SPREAD = sorted(n for n in available_planners() if not get_planner(n).tags().spread)


@pytest.mark.parametrize("name", NO_SPREAD)
def test_planners_without_spread_refuse_replica_groups(name):
    """A planner not tagged 'spread' refuses every snapshot with spread values, cleanly and
    saying why; it never plans one (it might put two replicas on one node)."""
    seen = Counter()

    @settings(
        max_examples=SPREAD_REFUSALS,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(wild_snapshots(shape=shape_for(name), spread="always"), fuzz_parameters(name))
    def run(snapshot, params):
        if all(kg.spread is None for kg in snapshot.key_groups):
            return  # fewer than two key groups, or all on one node: no replica group possible
        outcome = fuzz_one(name, snapshot, params)
        assert outcome.kind == "unsupported", outcome.detail
        assert "'spread' values" in outcome.detail
        seen["refused"] += 1

    run()
    assert seen["refused"] >= SPREAD_REFUSALS // 4, seen


# -- files: plan files and Kafka log-dirs files, mutated ------------------------------
#
# A good plan file (with the snapshot it was made for) and a good kafka-log-dirs output, mutated at
# random: a value anywhere replaced by a wild one (NaN, 1e400, 10**400, a negative, a string, null,
# a list, an object, a long text), bytes flipped, the text cut short. Every command that reads them
# must answer 0 (or 1 where that means "differs") or refuse in one line with exit 2: never a
# traceback, never a result holding nan or inf.

FILE_EXAMPLES = 60
SNAPSHOT = {
    "schema": "albic.snapshot/1",
    "nodes": [{"id": "n1", "capacity": 1.0}, {"id": "n2", "capacity": 2.0}],
    "key_groups": [
        {"id": "a", "operator": "op", "load": 3.0, "state_size": 10.0, "index": 0, "node": "n1"},
        {"id": "b", "operator": "op", "load": 1.0, "state_size": 5.0, "index": 1, "node": "n1"},
        {"id": "c", "operator": "op", "load": 2.0, "state_size": 1.0, "index": 2, "node": "n2"},
    ],
}
LOG_DIRS = {
    "version": 1,
    "brokers": [
        {
            "broker": b,
            "logDirs": [
                {
                    "logDir": "/data",
                    "error": None,
                    "partitions": [
                        {"partition": p, "size": 100 * (i + 1), "offsetLag": 0, "isFuture": False}
                        for i, p in enumerate(held)
                    ],
                }
            ],
        }
        for b, held in ((1, ["t-0", "t-1"]), (2, ["t-0"]), (3, ["t-1"]))
    ],
}
WILD = [
    float("nan"),
    float("inf"),
    -float("inf"),
    1e400,
    10**400,
    -1,
    0,
    1e308,
    "x",
    None,
    [],
    {},
    True,
    "y" * 5000,
]


def _places(data, path=()):
    """Every (path) to a value in ``data``, containers included."""
    yield path
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    for key, value in items:
        yield from _places(value, (*path, key))


@st.composite
def mutated(draw, document: dict) -> bytes:
    """``document`` as JSON text, mutated in one of three ways."""
    how = draw(st.sampled_from(["value", "bytes", "cut"]))
    if how == "value":
        doc = json.loads(json.dumps(document))
        places = [p for p in _places(doc) if p]
        path = draw(st.sampled_from(places))
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        parent[path[-1]] = draw(st.sampled_from(WILD))
        return json.dumps(doc).encode()
    text = bytearray(json.dumps(document).encode())
    if how == "cut":
        return bytes(text[: draw(st.integers(0, len(text) - 1))])
    for _ in range(draw(st.integers(1, 4))):
        text[draw(st.integers(0, len(text) - 1))] = draw(st.integers(0, 255))
    return bytes(text)


def _answers_cleanly(code: int, out: str, err: str, allowed: tuple[int, ...]) -> None:
    assert "Traceback" not in err, err
    assert code in allowed, (code, err)
    if code == 2:
        assert err.startswith("albic: error: ") and err.count("\n") == 1, err
    else:
        assert not re.search(r"\b(nan|inf)\b", out), out


def test_mutated_plan_files_are_planned_around_or_refused(tmp_path, capsys):
    snapshot = tmp_path / "snapshot.json"
    snapshot.write_text(json.dumps(SNAPSHOT))
    plan = tmp_path / "plan.json"
    assert main(["plan", str(snapshot), "--planner", "flux", "--out", str(plan)]) == 0
    good = json.loads(plan.read_text())
    bad = tmp_path / "bad-plan.json"
    capsys.readouterr()

    @settings(max_examples=FILE_EXAMPLES, deadline=None, database=None, derandomize=True)
    @given(mutated(good), st.sampled_from(["explain", "schedule", "plot"]))
    def run(data, command):
        bad.write_bytes(data)
        extra = ["--out", str(tmp_path / "f.png")] if command == "plot" else []
        code = main([command, str(bad), "--snapshot", str(snapshot), *extra])
        captured = capsys.readouterr()
        _answers_cleanly(code, captured.out, captured.err, (0, 2))

    run()


def test_mutated_log_dirs_files_are_imported_or_refused(tmp_path, capsys):
    bad = tmp_path / "log-dirs.json"
    plan = tmp_path / "plan.json"
    good = tmp_path / "good.json"
    good.write_text(json.dumps(LOG_DIRS))
    assert main(["kafka", "import", str(good), "--out", str(tmp_path / "k.json")]) == 0
    assert main(["plan", str(tmp_path / "k.json"), "--planner", "flux", "--out", str(plan)]) == 0
    capsys.readouterr()

    @settings(max_examples=FILE_EXAMPLES, deadline=None, database=None, derandomize=True)
    @given(mutated(LOG_DIRS), st.sampled_from(["import", "verify"]))
    def run(data, action):
        bad.write_bytes(b"Querying brokers for log directories information\n" + data)
        out = tmp_path / "s.json"
        out.unlink(missing_ok=True)
        if action == "import":
            code = main(["kafka", "import", str(bad), "--out", str(out)])
        else:
            code = main(["kafka", "verify", str(plan), str(bad)])
        captured = capsys.readouterr()
        _answers_cleanly(code, captured.out, captured.err, (0, 2) if action == "import" else (0, 1, 2))
        assert code == 0 or not out.exists()

    run()
