"""The JSON Schemas of albic.snapshot/1 and albic.plan/1.

They ship with the package and `albic schema` prints them; every file albic writes follows them
(here on every shape of snapshot the generators make and a plan of every planner, and in the whole
run through the conftest hook ``written_files_follow_their_schemas``); a file that breaks them is
refused by albic's readers in albic's own words, not the schema library's.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import numpy as np
import pytest

from albic import available_planners, get_planner
from albic.base.errors import InvalidPlanFileError, InvalidSnapshotError, UnsupportedSnapshotError
from albic.cli.main import main
from albic.core.model import KeyGroup, Node, Snapshot
from albic.core.planner import PlannerTags
from albic.io import read_plan, read_snapshot, write_plan, write_snapshot
from albic.io.examples import example_snapshot
from albic.io.schemas import SCHEMAS, schema, schema_text
from albic.testing import (
    Size,
    interval_snapshot,
    queueing_snapshot,
    random_snapshot,
    replica_snapshot,
    suite_snapshots,
)

ROOT = Path(__file__).resolve().parents[1]
VALIDATORS = {name: jsonschema.Draft202012Validator(schema(name)) for name in SCHEMAS}


def test_the_schemas_are_json_schemas_and_albic_schema_prints_them(capsys):
    for name in SCHEMAS:
        jsonschema.Draft202012Validator.check_schema(schema(name))
        assert schema(name)["properties"]["schema"] == {"const": SCHEMAS[name]}
        assert main(["schema", name]) == 0
        assert capsys.readouterr().out == schema_text(name)
        assert schema_text(name) == (ROOT / "albic" / "io" / f"{name}.schema.json").read_text()
    # Shipped as package data, so an installed albic has them (tests/test_install.py runs it).
    assert '"albic.io" = ["*.schema.json"]' in (ROOT / "pyproject.toml").read_text()


def every_snapshot():
    rng_shapes = {
        f"suite {k}": s
        for tags in (None, PlannerTags(interval=True), PlannerTags(queueing=True))
        for k, s in suite_snapshots(0, tags).items()
    }
    rng = np.random.default_rng(1)
    return {
        "example": example_snapshot(),
        **rng_shapes,
        "replicas": replica_snapshot(rng, removing=1),
        "interval": interval_snapshot(rng, new_nodes=1),
        "queueing": queueing_snapshot(rng, period=7),
        "random": random_snapshot(rng, Size(4, 16, 3)),
        "hosts and resources": Snapshot(
            [Node("a", host="rack-1", capacity=2.0), Node("b", host="rack-2"), Node("c", removing=True)],
            [KeyGroup("x", "op", 1.5, 10.0, resources={"memory": 3.0}), KeyGroup("y", "op", 0.5)],
            {"x": "c", "y": "a"},
            period=None,
        ),
    }


def test_every_snapshot_and_plan_albic_writes_follows_its_schema(
    tmp_path, written_files_follow_their_schemas
):
    counted = written_files_follow_their_schemas
    plans_before = counted[SCHEMAS["plan"]]
    written = 0
    for label, snapshot in every_snapshot().items():
        path = write_snapshot(snapshot, tmp_path / "s.json")
        document = json.loads(path.read_text())
        assert list(VALIDATORS["snapshot"].iter_errors(document)) == [], label
        for name in available_planners():
            params = (
                {"time_limit": 0.05} if "time_limit" in available_planners()[name].parameter_names() else {}
            )
            try:
                plan = get_planner(name, **params).plan(snapshot)
            except UnsupportedSnapshotError:
                continue
            document = json.loads(write_plan(plan, tmp_path / "p.json").read_text())
            assert list(VALIDATORS["plan"].iter_errors(document)) == [], (label, name)
            written += 1
    assert written > 50
    # The run-wide hook saw each of these writes too.
    assert counted[SCHEMAS["plan"]] - plans_before == written


def test_the_plan_of_albic_plan_on_stdout_follows_its_schema(capsys):
    assert main(["plan", str(ROOT / "data" / "example_snapshot.json"), "-p", "max_moves=3"]) == 0
    assert list(VALIDATORS["plan"].iter_errors(json.loads(capsys.readouterr().out))) == []


def bad(document_of, change):
    document = json.loads(json.dumps(document_of))
    change(document)
    return document


SNAPSHOT = json.loads((ROOT / "data" / "example_snapshot.json").read_text())
PLAN = get_planner("flux", max_moves=2).plan(example_snapshot()).to_dict()


@pytest.mark.parametrize(
    "document, kind, albics_words",
    [
        (
            bad(SNAPSHOT, lambda d: d["key_groups"][0].pop("load")),
            "snapshot",
            "key_groups[0] lacks the required field 'load'",
        ),
        (
            bad(SNAPSHOT, lambda d: d["nodes"][0].update(capacty=2)),
            "snapshot",
            "nodes[0] has unknown field 'capacty'",
        ),
        (
            bad(SNAPSHOT, lambda d: d["key_groups"][1].update(load=-1.0)),
            "snapshot",
            "load = -1.0, must be a finite number >= 0",
        ),
        (
            bad(SNAPSHOT, lambda d: d.update(schema="albic.snapshot/2")),
            "snapshot",
            "schema is 'albic.snapshot/2', expected 'albic.snapshot/1'",
        ),
        (
            bad(SNAPSHOT, lambda d: d.update(nodes={"n1": {}})),
            "snapshot",
            "nodes must be a list, got an object",
        ),
        (bad(PLAN, lambda d: d.update(status="DONE")), "plan", "status is 'DONE', expected one of"),
        (bad(PLAN, lambda d: d["moves"][0].pop("to")), "plan", "moves[0] lacks the required field 'to'"),
        (bad(PLAN, lambda d: d.update(assignment=[])), "plan", "assignment must be an object, got a list"),
    ],
)
def test_a_file_that_breaks_the_schema_is_refused_in_albics_words(
    tmp_path, capsys, document, kind, albics_words
):
    assert list(VALIDATORS[kind].iter_errors(document)) != []  # the schema catches it too
    path = tmp_path / f"{kind}.json"
    path.write_text(json.dumps(document))
    error = InvalidSnapshotError if kind == "snapshot" else InvalidPlanFileError
    with pytest.raises(error) as caught:
        (read_snapshot if kind == "snapshot" else read_plan)(path)
    assert albics_words in str(caught.value)
    if kind == "snapshot":  # and on the command line, one line, exit 2
        assert main(["plan", str(path)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and albics_words in err and "jsonschema" not in err
