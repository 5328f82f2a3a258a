"""Numbers of every magnitude.

Valid snapshots with loads of 10^6 and more must plan (the plan check compares at a tolerance
relative to the loads, not at 1e-9 absolute); numbers the model cannot sum safely, integers too
large for a float and parameters of 401 digits are input errors naming the object, the value and
the rule, never an OverflowError or "a bug in the planner".
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from albic import available_planners, get_planner, plan
from albic.base.errors import InvalidParameterError, InvalidSnapshotError, UnsupportedSnapshotError
from albic.cli.main import main
from albic.core.checks import plan_problems
from albic.core.model import MAX_AMOUNT, KeyGroup, Node, Snapshot
from albic.io import snapshot_from_dict


def one_node_snapshot(seed: int, scale: float, n: int = 30) -> Snapshot:
    loads = np.random.default_rng(seed).uniform(0, scale, n)
    return Snapshot(
        [Node("n1")],
        [KeyGroup(f"k{i}", "op", float(x), float(x), index=i) for i, x in enumerate(loads)],
        {f"k{i}": "n1" for i in range(n)},
    )


def test_this_snapshot_rounds_differently_in_numpy_and_fsum():
    """The instance of finding 1: numpy's load distance is not 0, the exact one is."""
    from albic.core import metrics

    snap = one_node_snapshot(1, 1e6)
    assert metrics.load_distance(snap) > 1e-9  # rounding: the old absolute tolerance failed here


@pytest.mark.parametrize("scale", [1e6, 1e9, 1e12])
@pytest.mark.parametrize("name", sorted(available_planners()))
def test_large_loads_on_one_node_plan_with_every_planner(name, scale):
    params = {"time_limit": 0.2} if name in ("milp", "albic") else {}
    for seed in range(3):
        snap = one_node_snapshot(seed, scale)
        try:
            result = plan(snap, name, **params)  # PlannerBugError here was finding 1
        except UnsupportedSnapshotError:
            assert name == "elasticutor"  # no queueing rates in these snapshots
            continue
        assert result.moves == ()
        assert plan_problems(snap, result) == []


def test_the_relative_check_still_catches_a_wrong_load_distance():
    snap = Snapshot(
        [Node("n1"), Node("n2")], [KeyGroup("a", "op", 3e9), KeyGroup("b", "op", 1e9)], {"a": "n1", "b": "n1"}
    )
    good = plan(snap, "flux")
    wrong = dataclasses.replace(
        good, metrics={**good.metrics, "load_distance": good.metrics["load_distance"] + 1e3}
    )
    problems = plan_problems(snap, wrong)
    assert len(problems) == 1 and "metrics['load_distance']" in problems[0]


@pytest.mark.parametrize("field", ["load", "state_size"])
def test_values_beyond_the_range_are_input_errors(field):
    snap = Snapshot(
        [Node("n1"), Node("n2")],
        [KeyGroup("a", "op", 1.0, 1.0), KeyGroup("b", "op", 1.0, 1.0)],
        {"a": "n1", "b": "n1"},
    )
    huge = Snapshot(
        snap.nodes, [dataclasses.replace(k, **{field: 1e308}) for k in snap.key_groups], snap.assignment
    )
    with pytest.raises(InvalidSnapshotError) as info:
        plan(huge, "flux")  # was OverflowError in fsum, then "a bug in the planner"
    assert info.value.problems == [
        f"key group '{k}': {field} = 1e+308, must be a finite number >= 0 and <= 1e+15" for k in "ab"
    ]
    top = Snapshot(
        snap.nodes, [dataclasses.replace(k, **{field: MAX_AMOUNT}) for k in snap.key_groups], snap.assignment
    )
    for name in ("flux", "milp", "cola", "storm_default"):
        params = {"time_limit": 0.2} if name == "milp" else {}
        assert plan_problems(top, plan(top, name, **params)) == []


def test_an_integer_too_large_for_a_float_is_an_input_error():
    kg = KeyGroup("a", "op", 10**400)  # was OverflowError in model._as_float
    with pytest.raises(InvalidSnapshotError, match=r"load = 1000.*\(401 characters\), must be a finite"):
        Snapshot([Node("n1")], [kg], {"a": "n1"}).validate()


def test_json_nested_200000_levels_is_one_clean_line(tmp_path, capsys):
    path = tmp_path / "deep.json"
    path.write_text("[" * 200_000 + "]" * 200_000)  # was RecursionError
    assert main(["plan", str(path), "--planner", "flux"]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"albic: error: Invalid snapshot in {path}: nested 200000 levels deep; "
        "albic reads at most 64 levels\n"
    )


def test_a_401_digit_max_moves_is_an_input_error():
    with pytest.raises(InvalidParameterError) as info:  # was OverflowError in Interval.accepts
        get_planner("flux", max_moves=10**400)
    message = str(info.value)
    assert "'max_moves'" in message and "[0, 1000000000]" in message
    assert "(401 characters)" in message and len(message) < 250


def test_virtual_nodes_are_bounded():
    with pytest.raises(InvalidParameterError, match="'virtual_nodes'.*10000"):
        get_planner("consistent_hashing", virtual_nodes=10_000_000)  # took 58 s and 1.7 GB


def test_the_ring_stays_small_whatever_unit_capacities_have():
    nodes = [Node("n1", capacity=1e6), Node("n2", capacity=5e5)]
    snap = Snapshot(
        nodes, [KeyGroup(f"k{i}", "op", 1.0) for i in range(50)], {f"k{i}": "n1" for i in range(50)}
    )
    big = plan(snap, "consistent_hashing", rebuild=True)
    mean = 7.5e5  # the same capacities in the unit of their mean: 1.33 and 0.67
    unit = Snapshot(
        [dataclasses.replace(n, capacity=n.capacity / mean) for n in nodes], snap.key_groups, snap.assignment
    )
    assert big.details["ring_points"] == 200  # not 1.5e8: capacities read relative to their mean
    assert dict(big.assignment) == dict(plan(unit, "consistent_hashing", rebuild=True).assignment)


def test_json_numbers_that_are_not_finite_name_the_value(tmp_path):
    doc = {
        "schema": "albic.snapshot/1",
        "nodes": [{"id": "n1"}],
        "key_groups": [{"id": "a", "operator": "op", "load": 1.0, "node": "n1"}],
    }
    text = json.dumps(doc).replace("1.0", "Infinity")
    with pytest.raises(InvalidSnapshotError, match="load = inf, must be a finite number"):
        snapshot_from_dict(json.loads(text))
