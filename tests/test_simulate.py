"""Replay (placement carried period to period, node-count convention), compare, summarize, plots."""

import pytest

import albic
from albic.core.model import KeyGroup, Node, Snapshot, Traffic
from albic.core.planner import Planner, PlannerTags, unsupported
from albic.evaluation.compare import compare, summarize
from albic.evaluation.replay import REPLAY_COLUMNS, carried_snapshot, replay


def period(name, nodes, loads=(4.0, 3.0, 2.0, 1.0)):
    kgs = [KeyGroup(f"k{i}", "op", load, 10.0 * (i + 1), index=i) for i, load in enumerate(loads)]
    # A placeholder placement, as read_snapshots gives: replay must replace it.
    return Snapshot(
        [Node(n) for n in nodes],
        kgs,
        {k.id: nodes[-1] for k in kgs},
        traffic=[Traffic("k0", "k1", 2.0), Traffic("k2", "k3", 1.0)],
        period=name,
    )


class StayPut(Planner):
    name = "test_stay_put"

    def tags(self):
        return PlannerTags()

    def _plan(self, snapshot):
        return self.result(snapshot, dict(snapshot.assignment), status="FEASIBLE")


class OddOnly(StayPut):
    """Rejects period t1 (as a planner would a snapshot outside its model)."""

    name = "test_odd_only"

    def _check_supported(self, snapshot):
        if snapshot.period == "t1":
            raise unsupported(self, "period t1 is outside my model")


class Exploding(StayPut):
    name = "test_exploding"

    def _plan(self, snapshot):
        raise RuntimeError("boom")


def test_the_placement_is_carried_and_the_first_is_storm_default():
    snaps = [period("t0", ["n1", "n2"]), period("t1", ["n1", "n2"])]
    rows = replay(snaps, StayPut())
    assert list(rows.columns) == list(REPLAY_COLUMNS)
    # Storm default: k0, k1 on n1 (load 7), k2, k3 on n2 (load 3); mean 5 -> load distance 2 (40%).
    assert rows["load_distance_before"].tolist() == [2.0, 2.0]
    assert rows["load_distance_pct"].tolist() == [40.0, 40.0]
    # Traffic k0->k1 (2.0) is local, k2->k3 (1.0) is local too: collocation 1, load index 1.
    assert rows["collocation_factor"].tolist() == [1.0, 1.0]
    assert rows["moves"].tolist() == [0, 0]


def test_a_mapping_as_initial_placement_and_the_load_index():
    snaps = [period("t0", ["n1", "n2"])]
    initial = {"k0": "n1", "k1": "n2", "k2": "n1", "k3": "n2"}
    row = replay(snaps, StayPut(), initial=initial, remote_cost=0.5).iloc[0]
    # Loads n1 = 4 + 2 = 6, n2 = 3 + 1 = 4; both edges cross nodes: remote traffic 3,
    # load index = (10 + 0.5 x 3) / 10.
    assert row["load_distance_before"] == 1.0
    assert row["remote_traffic"] == 3.0 and row["collocation_factor"] == 0.0
    assert row["load_index"] == pytest.approx(1.15)


def test_nodes_leave_as_removing_nodes_and_arrive_empty():
    placement = {"k0": "n1", "k1": "n2", "k2": "n3", "k3": "n3"}
    snap = carried_snapshot(period("t", ["n1", "n4"]), placement)
    assert [(n.id, n.removing) for n in snap.nodes] == [
        ("n1", False),
        ("n4", False),
        ("n2", True),
        ("n3", True),
    ]
    # Flux moves everything off the removing nodes; next period they are gone.
    rows = replay([period("t0", ["n1", "n2", "n3"]), period("t1", ["n1"]), period("t2", ["n1"])], "flux")
    assert rows[["nodes", "removing"]].values.tolist() == [[3, 0], [1, 2], [1, 0]]
    assert rows["moves"].iloc[2] == 0


def test_unsupported_and_failing_periods_are_recorded_not_raised():
    snaps = [period("t0", ["n1", "n2", "n3"]), period("t1", ["n1", "n2"]), period("t2", ["n1"])]
    rows = replay(snaps, OddOnly())
    # The first period has nothing known before it: scored, not planned.
    assert rows["status"].tolist() == ["SKIPPED", "UNSUPPORTED", "FEASIBLE"]
    assert rows["planned"].tolist() == [False, True, True]
    assert "outside my model" in rows["error"].iloc[1]
    # The unsupported period keeps the placement: n3 still holds key groups, so it is removing.
    assert rows["removing"].tolist() == [0, 1, 2]
    oracle = replay(snaps, OddOnly(), decide_on="hindsight")
    assert oracle["status"].tolist() == ["FEASIBLE", "UNSUPPORTED", "FEASIBLE"]
    failed = replay(snaps, Exploding())
    assert failed["status"].tolist() == ["SKIPPED", "ERROR", "ERROR"]
    assert "RuntimeError: boom" in failed["error"].iloc[1]


def test_compare_is_one_tidy_table_and_summarize_adds_up():
    snaps = [period("t0", ["n1", "n2"]), period("t1", ["n1", "n2", "n3"])]
    table = compare(snaps, ["flux", StayPut(), OddOnly()])
    assert table.groupby("planner").size().to_dict() == {
        "flux": 2,
        "test_stay_put": 2,
        "test_odd_only": 2,
        "storm_default": 2,  # the reference
    }
    summary = summarize(table)
    flux = table[table["planner"] == "flux"]
    assert summary.loc["flux", "total_moves"] == flux["moves"].sum()
    assert summary.loc["flux", "mean_load_distance_pct"] == pytest.approx(flux["load_distance_pct"].mean())
    assert summary.loc["test_odd_only", "unsupported"] == 1
    assert summary.loc["test_stay_put", "total_migration_cost_pct"] == 0.0


def test_albic_exports_compare_and_replay_lazily():
    # albic.compare chooses the engine (local or Spark), so it lives in the Spark room, which
    # imports pyspark only when Spark runs; the local engine is albic.evaluation.compare.
    from albic.spark import compare_engine

    assert albic.compare is compare_engine.compare and albic.replay is replay
    snaps = [period("t0", ["n1", "n2"]), period("t1", ["n1"])]
    assert (
        albic.compare(snaps, ["flux"], budgets="max_moves=1")
        .drop(columns="seconds")
        .equals(compare(snaps, ["flux"], budgets="max_moves=1").drop(columns="seconds"))
    )


def test_albic_compare_on_the_local_engine_does_not_import_pyspark():
    import subprocess
    import sys

    code = (
        "import sys, albic\n"
        "from albic.io.examples import example_snapshot\n"
        "table = albic.compare([example_snapshot()], ['flux'], budgets='max_moves=1')\n"
        "print(len(table), 'pyspark' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["2", "False"]  # flux's period and the reference's


def test_standard_figures_are_written(tmp_path):
    from albic.evaluation import plot

    table = compare([period("t0", ["n1", "n2"]), period("t1", ["n1"])], ["flux", StayPut()])
    paths = plot.standard_figures(table, tmp_path / "figs")
    assert [p.name for p in paths] == [
        "tradeoff.png",
        "load_distance.png",
        "migration_cost.png",
        "stream.png",
        "solve_time.png",
    ]
    for path in paths:
        assert path.read_bytes()[:4] == b"\x89PNG"


def test_a_key_group_new_in_a_period_starts_where_the_period_puts_it():
    def snap(name, n):
        kgs = [KeyGroup(f"k{i}", "op", 1.0) for i in range(n)]
        return Snapshot([Node("n1"), Node("n2")], kgs, {k.id: "n2" for k in kgs}, period=name)

    first, second = snap("t0", 2), snap("t1", 3)  # k2 is new in t1, placed on n2
    rows = replay([first, second], StayPut(), initial={"k0": "n1", "k1": "n2"})
    assert rows["load_distance_before"].tolist() == [0.0, 0.5]  # t1: n1 = 1, n2 = 2, mean 1.5


def test_the_key_group_floor_in_rows_and_summary():
    # Loads 7, 1, 1, 1 on two nodes: mean 5, the key group of 7 alone is 2 above it (40 %), and
    # 7 | 1+1+1 is the best placement there is. The replay starts on Storm's split, 7+1 | 1+1
    # (8 | 2: 60 %); flux's one move k1 -> n2 reaches the floor.
    snaps = [period(t, ["n1", "n2"], loads=(7.0, 1.0, 1.0, 1.0)) for t in ("t0", "t1", "t2")]
    table = compare(snaps, ["flux", StayPut()], budgets="max_moves=1")
    assert (table["floor_load_distance_pct"] == 40.0).all() and (table["floor_key_group"] == "k0").all()
    flux = table[table["planner"] == "flux"]
    assert flux["load_distance_pct"].tolist() == pytest.approx([60.0, 40.0, 40.0])  # t0 not planned
    stay = table[table["planner"] == "test_stay_put"]
    assert stay["load_distance_pct"].tolist() == pytest.approx([60.0] * 3)
    summary = summarize(table)
    assert summary.loc["flux", "at_floor_periods"] == 2
    assert summary.loc["test_stay_put", "at_floor_periods"] == 0
    assert summary.loc["flux", "mean_floor_load_distance_pct"] == 40.0
