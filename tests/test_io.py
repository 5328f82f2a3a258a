"""Snapshot and plan JSON, schema v1: exact round trips, strict reading, atomic writing; the PMC table."""

import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from albic import KeyGroup, Node, Operator, Plan, PlanStatus, Snapshot, Traffic
from albic.base.errors import AlbicError, InvalidParameterError, InvalidSnapshotError
from albic.core.model import Move
from albic.io import (
    InvalidPlanFileError,
    plan_from_dict,
    plan_to_dict,
    read_plan,
    read_snapshot,
    snapshot_from_dict,
    snapshot_to_dict,
    write_plan,
    write_snapshot,
)
from albic.io.pmc import read_pmc_table, write_pmc_table

DESIGN_EXAMPLE = {
    "schema": "albic.snapshot/1",
    "period": "2013-01-01T08",
    "nodes": [{"id": "n1", "capacity": 1.0}, {"id": "n2", "capacity": 2.0, "removing": True}],
    "key_groups": [
        {"id": "route/17", "operator": "route", "load": 12.5, "state_size": 3072, "index": 17, "node": "n1"},
        {"id": "tailnum/3", "operator": "tailnum", "load": 1.0, "node": "n2"},
    ],
    "traffic": [{"src": "tailnum/3", "dst": "route/17", "rate": 4.0}],
}

FULL = Snapshot(
    nodes=[Node("n1", capacity=1.5, cores=8, host="h1"), Node("n2", removing=True)],
    key_groups=[
        KeyGroup(
            "a",
            "src",
            0.1 + 0.2,
            1e-300,
            index=0,
            resources={"mem": 2.5},
            arrival_rate=10.0,
            service_rate=12.0,
        ),
        KeyGroup("b", "sink", 1 / 3, 7.0),
    ],
    assignment={"a": "n1", "b": "n2"},
    traffic=[Traffic("a", "b", 2.0 / 7)],
    operators=[Operator("src", downstream=("sink",), partition_attributes=("k",)), Operator("sink")],
    period=42,
)


def test_the_design_example_reads():
    snap = snapshot_from_dict(DESIGN_EXAMPLE)
    kg = snap.key_groups[0]
    assert (kg.id, kg.load, kg.state_size, kg.index) == ("route/17", 12.5, 3072.0, 17)
    assert snap.nodes[1].removing and snap.assignment["tailnum/3"] == "n2"
    assert snap.key_groups[1].state_size == 0.0  # optional, defaults to 0


def test_round_trip_is_exact_including_every_optional_field(tmp_path):
    assert snapshot_from_dict(json.loads(json.dumps(snapshot_to_dict(FULL)))) == FULL
    path = write_snapshot(FULL, tmp_path / "s.json")
    assert read_snapshot(path) == FULL


def test_optional_fields_are_written_only_when_set():
    data = snapshot_to_dict(Snapshot([Node("n")], [KeyGroup("k", "op", 1.0)], {"k": "n"}))
    assert data["nodes"] == [{"id": "n", "capacity": 1.0}]
    assert data["key_groups"] == [{"id": "k", "operator": "op", "load": 1.0, "state_size": 0.0, "node": "n"}]
    assert "operators" not in data


@pytest.mark.parametrize(
    "mutate, fragment",
    [
        (lambda d: d.pop("nodes"), "lacks the required field 'nodes'"),
        (lambda d: d["key_groups"][0].pop("load"), "key_groups[0] lacks the required field 'load'"),
        (lambda d: d["key_groups"][1].update(laod=3), "key_groups[1] has unknown field 'laod'"),
        (lambda d: d.update(schema="albic.snapshot/2"), "schema is 'albic.snapshot/2'"),
        (lambda d: d.update(nodes={"id": "n1"}), "nodes must be a list, got an object"),
        (lambda d: d["traffic"].append(5), "traffic[1] must be an object, got a number"),
        (lambda d: d["key_groups"][0].update(load=-1), "key group 'route/17': load = -1.0"),
        (lambda d: d["key_groups"][0].update(node="n7"), "unknown node 'n7'"),
        # ill-typed JSON values are problems too, not crashes
        (lambda d: d["key_groups"][0].update(id=["x"]), "key_groups[0].id must be a string, got a list"),
        (lambda d: d["key_groups"][0].update(node={"n": 1}), "assigned to unknown node {'n': 1}"),
        (lambda d: d["traffic"][0].update(dst=[1]), "unknown key group [1]"),
        (lambda d: d["key_groups"][0].update(index=True), "index = True"),
        (lambda d: d.update(period=[2013]), "period = [2013]"),
        (lambda d: d.update(operators=[{"name": ["op"]}]), "name ['op'] must be a non-empty string"),
    ],
)
def test_structural_and_value_problems_name_their_place(mutate, fragment):
    data = json.loads(json.dumps(DESIGN_EXAMPLE))
    mutate(data)
    with pytest.raises(InvalidSnapshotError) as info:
        snapshot_from_dict(data)
    assert fragment in str(info.value)


def test_reading_a_file_names_it(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"schema": "albic.snapshot/1", "nodes": [', encoding="utf-8")
    with pytest.raises(InvalidSnapshotError, match=r"broken.json.*not valid JSON.*line 1"):
        read_snapshot(path)
    with pytest.raises(FileNotFoundError):
        read_snapshot(tmp_path / "missing.json")


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "s.json"
    write_snapshot(FULL, path)
    before = path.read_text()
    invalid = FULL.with_assignment({"a": "n1", "b": "nowhere"})
    with pytest.raises(InvalidSnapshotError):
        write_snapshot(invalid, path)
    plan = Plan("p", PlanStatus.FEASIBLE, {"a": "n1"}, metrics={"bad": float("nan")})
    with pytest.raises(ValueError):
        write_plan(plan, tmp_path / "p.json")
    assert path.read_text() == before
    assert sorted(os.listdir(tmp_path)) == ["s.json"]


PLAN = Plan(
    planner="flux",
    status=PlanStatus.FEASIBLE,
    assignment={"a": "n1", "b": "n1"},
    moves=(Move("b", "n2", "n1", 7.0),),
    metrics={"moves": 1, "load_distance": 0.25},
    objective=0.25,
    bound=None,
    seconds=0.001,
    details={"rounds": [1, 2], "nested": {"x": None}},
)


def test_plan_json_has_the_documented_fields_and_round_trips(tmp_path):
    data = plan_to_dict(PLAN)
    assert list(data) == [
        "schema",
        "planner",
        "status",
        "assignment",
        "moves",
        "metrics",
        "objective",
        "bound",
        "seconds",
        "details",
    ]
    assert data["status"] == "FEASIBLE"
    assert data["moves"] == [{"key_group": "b", "from": "n2", "to": "n1", "cost": 7.0}]
    assert plan_from_dict(json.loads(PLAN.to_json())) == PLAN
    assert read_plan(write_plan(PLAN, tmp_path / "p.json")) == PLAN


def test_bad_plan_files_are_reported():
    data = plan_to_dict(PLAN)
    data["status"] = "GREAT"
    data["moves"][0].pop("to")
    with pytest.raises(InvalidPlanFileError) as info:
        plan_from_dict(data)
    assert "status is 'GREAT'" in str(info.value) and "moves[0] lacks the required field 'to'" in str(
        info.value
    )


def test_plan_to_frame_has_one_row_per_key_group():
    frame = PLAN.to_frame()
    assert frame.to_dict("records") == [
        {"key_group": "a", "node": "n1", "previous_node": "n1", "moved": False, "cost": 0.0},
        {"key_group": "b", "node": "n1", "previous_node": "n2", "moved": True, "cost": 7.0},
    ]


def test_non_utf8_files_are_named(tmp_path):
    path = tmp_path / "latin1.json"
    path.write_bytes(b'{"schema": "caf\xe9"}')
    with pytest.raises(InvalidSnapshotError, match=r"latin1.json.*not UTF-8 text \(byte 15"):
        read_snapshot(path)


def test_written_files_follow_the_umask_not_private(tmp_path):
    old = os.umask(0o022)
    try:
        path = write_snapshot(FULL, tmp_path / "s.json")
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o644


def test_a_plan_shows_itself_in_a_line_a_text_and_a_table(tmp_path, capsys):
    import albic
    from albic.cli.main import main
    from albic.io.examples import example_snapshot

    snapshot = example_snapshot()
    write_snapshot(snapshot, tmp_path / "s.json")
    plan = albic.plan(snapshot, "flux", max_moves=3)
    # The repr is one short line, never the assignment of every key group.
    text = repr(plan)
    assert "\n" not in text and len(text) < 300 and "tailnum/0" not in text
    assert text.startswith("<Plan flux: FEASIBLE, 3 moves") and "64 key groups on 5 nodes" in text
    # The explanation as text is what albic explain prints.
    write_plan(plan, tmp_path / "p.json")
    assert main(["explain", str(tmp_path / "p.json"), "--snapshot", str(tmp_path / "s.json")]) == 0
    assert capsys.readouterr().out == plan.explain_text() + "\n"
    # The table knows each key group's operator, load and state when the snapshot is known.
    frame = plan.to_frame()
    assert list(frame.columns) == [
        "key_group", "operator", "load", "state_size", "node", "previous_node", "moved", "cost",
    ]  # fmt: skip
    by_id = {kg.id: kg for kg in snapshot.key_groups}
    for row in frame.to_dict("records"):
        kg = by_id[row["key_group"]]
        assert (row["operator"], row["load"], row["state_size"]) == (kg.operator, kg.load, kg.state_size)
    assert frame["moved"].sum() == 3 and frame["cost"].sum() == plan.migration_cost


def test_a_pmc_table_round_trips_and_its_files_have_the_documented_columns(tmp_path):
    rows = [(1, []), (2, [3]), (2, [4]), (3, [2, 5])]
    meta = {"inputs": {"tasks": 6}, "tau": 0.25, "gamma": 0.8, "block_bounds": [0, 2, 4, 6], "operator": "op"}
    out = write_pmc_table(tmp_path / "pmc", rows, [0.0, 1.5, 2.0, 0.125], meta)
    table = pq.read_table(out / "table.parquet")
    assert table.schema.types == [pa.int32(), pa.list_(pa.int32()), pa.float64()]
    assert table.to_pydict() == {
        "n": [1, 2, 2, 3],
        "cuts": [[], [3], [4], [2, 5]],
        "cost": [0.0, 1.5, 2.0, 0.125],
    }
    assert json.loads((out / "metadata.json").read_text()) == {"schema": "albic.pmc/1", **meta}
    costs = read_pmc_table(out)
    assert (costs.tasks, costs.tau, costs.gamma, costs.operator) == (6, 0.25, 0.8, "op")
    assert costs.bounds == (0, 2, 4, 6) and costs.key_groups == ()
    assert [costs.lookup(n, tuple(cuts)) for n, cuts in rows] == [0.0, 1.5, 2.0, 0.125]
    assert costs.lookup(2, (2,)) is None and costs.lookup(4, ()) is None


def test_a_pmc_table_the_planner_could_not_read_is_neither_written_nor_read(tmp_path):
    with pytest.raises(InvalidParameterError, match=r"PMC metadata lacks inputs.tasks, gamma"):
        write_pmc_table(tmp_path / "a", [(1, [])], [0.0], {"tau": 0.2})
    with pytest.raises(InvalidParameterError, match="a PMC table of 1 partitionings got 2 costs"):
        write_pmc_table(tmp_path / "a", [(1, [])], [0.0, 1.0], {"inputs": {"tasks": 1}, "tau": 0, "gamma": 0})
    assert not (tmp_path / "a" / "metadata.json").exists()
    with pytest.raises(AlbicError, match=r"holds no PMC table \(table.parquet and metadata.json\)"):
        read_pmc_table(tmp_path)
    out = write_pmc_table(tmp_path / "b", [(1, [])], [0.0], {"inputs": {"tasks": 1}, "tau": 0, "gamma": 0})
    (out / "metadata.json").write_text('{"inputs": {"tasks": "many"}, "tau": 0, "gamma": 0}')
    with pytest.raises(AlbicError, match=r"metadata.json: not the metadata.json 'albic precompute' writes"):
        read_pmc_table(out)
    (out / "table.parquet").write_text("not parquet")
    with pytest.raises(AlbicError, match="not a readable Parquet file"):
        read_pmc_table(out)
