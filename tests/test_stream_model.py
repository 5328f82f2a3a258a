"""The stream model against a case computed by hand, a tuple-level simulation and its properties.

The simulation is written here, apart from the model: Poisson arrivals per key group, one FIFO
server per node with exponential service (Lindley's recursion), a moved key group's tuples held
until its state has arrived and then queued at its new node all at once.
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from albic.base.errors import InvalidParameterError
from albic.core.model import KeyGroup, Node, Snapshot
from albic.core.planner import get_planner
from albic.evaluation.compare import compare, summarize
from albic.evaluation.replay import replay
from albic.evaluation.stream import StreamModel, StreamReplay, derived_node_rate, period_seconds
from albic.solvers.stream import empty_times, mm1_p99

LN100 = math.log(100.0)


def snapshot(loads, states, placement, nodes=("n1", "n2", "n3"), period="t0"):
    kgs = [KeyGroup(k, "op", load, state) for k, load, state in zip(placement, loads, states)]
    return Snapshot([Node(n) for n in nodes], kgs, dict(placement), period=period)


# -- a case computed by hand ----------------------------------------------------------------------


def test_a_period_computed_by_hand():
    # n1 holds a (2/s, 3 MB), b (4/s, 1 MB), c (3/s); n3 holds d (12/s). a and b move to n2.
    # Service 10/s a node, links 1 MB/s, a period of 100 s.
    snap = snapshot([2.0, 4.0, 3.0, 12.0], [3e6, 1e6, 0.0, 0.0], {"a": "n1", "b": "n1", "c": "n1", "d": "n3"})
    model = StreamModel(bandwidth=1e6, node_rate=10.0, period_seconds=100.0)
    row, backlog = model.period(snap, snap, {"a": "n2", "b": "n2", "c": "n1", "d": "n3"}, {})
    # Smith's order: b (1e6 / 4) before a (3e6 / 2), both on n1's outgoing and n2's incoming link:
    # b lands at 1 s, a at 4 s. Buffered: 4 x 1 + 2 x 4 = 12 tuples.
    assert row["migration_seconds"] == 4.0
    assert row["buffered_tuples"] == 12.0
    # n2: 4 tuples at 1 s drain at 10 - 4 = 6/s (empty at 1.67 s); 8 tuples at 4 s drain at
    # 10 - 6 = 4/s: empty at 6 s, 2 s after the last transfer. n3 (12/s > 10/s) has no steady state.
    assert row["catch_up_seconds"] == pytest.approx(2.0)
    assert row["overloaded_nodes"] == 1
    assert row["backlog_tuples"] == pytest.approx(200.0)  # (12 - 10) x 100 s, all d's
    assert backlog == {"d": pytest.approx(200.0)}
    # p99 = ln(100) / spare: n1 (3/s) 1/7, n2 (6/s) 1/4, weighted by their arrivals.
    assert row["p99_latency_ms"] == pytest.approx(1000 * LN100 * (3 / 7 + 6 / 4) / 9)
    # In service times (x 10/s): n1 at 0.3 and n2 at 0.6 utilisation, ln(100) / (1 - rho).
    assert row["p99_service_times"] == pytest.approx(LN100 * (3 / 0.7 + 6 / 0.4) / 9)
    assert row["steady"] is False  # n3 is overloaded
    assert math.isnan(row["drain_seconds"])  # alone, a period knows no later one to drain in


def test_a_backlog_travels_with_its_key_group_and_is_served_where_it_lands():
    first = snapshot(
        [2.0, 4.0, 3.0, 12.0], [3e6, 1e6, 0.0, 1e6], {"a": "n1", "b": "n1", "c": "n1", "d": "n3"}
    )
    second = snapshot(
        [2.0, 4.0, 3.0, 6.0], [3e6, 1e6, 0.0, 1e6], {"a": "n1", "b": "n1", "c": "n1", "d": "n3"}
    )
    model = StreamModel(bandwidth=1e6, node_rate=10.0, period_seconds=100.0)
    _, backlog = model.period(first, first, first.assignment, {})
    # d moves to n1 (1 s): its 200 queued tuples and 6 buffered land on n1, which then serves
    # c and d (9/s) at 10/s: 206 tuples drain at 1/s, 206 s after the transfer.
    row, after = model.period(second, second, {"a": "n1", "b": "n1", "c": "n1", "d": "n1"}, backlog)
    # a and b stay on n1 too: n1's arrivals are 2 + 4 + 3 + 6 = 15 > 10: overloaded.
    assert row["overloaded_nodes"] == 1
    assert row["backlog_tuples"] == pytest.approx(206 + 5 * 99)
    moved_b = {"a": "n1", "b": "n2", "c": "n1", "d": "n1"}
    row, after = model.period(second, second, moved_b, backlog)
    # b (1 MB at 1 MB/s) and d (1 MB) leave n1 and n3 on different links, in parallel: 1 s each.
    # n1 then serves a, c, d: 11/s > 10/s -- still overloaded; n2 serves b's 4 buffered at 6/s.
    assert row["migration_seconds"] == 1.0 and row["buffered_tuples"] == pytest.approx(4.0 + 6.0)
    assert row["backlog_tuples"] == pytest.approx(206 + 1 * 99)
    assert set(after) == {"a", "c", "d"}  # split over n1's key groups by load
    assert sum(after.values()) == pytest.approx(305)
    assert after["d"] == pytest.approx(305 * 6 / 11)


def test_a_periods_backlog_drains_where_its_key_group_moves():
    # d (12/s) alone on n3 at 10/s for 300 s: 600 tuples. Then d moves to n1 (1 MB at 1 MB/s) with
    # them and 6 buffered; n1 serves c (1/s) and d (6/s) at 10/s: 606 drain at 3/s, 202 s later.
    nodes = ("n1", "n2", "n3")
    placement = {"c": "n1", "d": "n3"}
    first = snapshot([1.0, 12.0], [0.0, 1e6], placement, nodes=nodes, period="t0")
    second = snapshot([1.0, 6.0], [0.0, 1e6], placement, nodes=nodes, period="t1")
    stream = StreamReplay(StreamModel(bandwidth=1e6, node_rate=10.0, period_seconds=300.0))
    rows = [stream.period(first, first, placement), stream.period(second, second, {"c": "n1", "d": "n1"})]
    assert [r["backlog_tuples"] for r in rows] == pytest.approx([600.0, 0.0])
    assert [r["steady"] for r in rows] == [False, True]
    assert stream.drain_seconds() == pytest.approx([1.0 + 606 / 3, 0.0])


def test_the_queue_is_first_empty_after_each_event():
    # 5 queued at 0 drain at 2 - 1 = 1/s: empty at 5. 4 land at 6 and 0.5/s more arrive: 0.5/s
    # spare, empty at 14. 1 lands at 20 on an empty queue: empty at 22.
    start, each = empty_times(
        5.0, 1.0, 2.0, times=[20.0, 6.0], jumps=[1.0, 4.0], rates=[0.0, 0.5], horizon=30.0
    )
    assert start == 5.0 and each.tolist() == [22.0, 14.0]
    start, each = empty_times(5.0, 3.0, 2.0, times=[1.0], jumps=[1.0], rates=[0.0], horizon=30.0)
    assert math.isinf(start) and math.isinf(each[0])  # overloaded: never empty in the period


def test_the_node_rate_is_derived_from_the_busiest_period_and_said():
    quiet = snapshot(
        [1.0, 1.0, 0.0, 0.0], [0, 0, 0, 0], {"a": "n1", "b": "n2", "c": "n1", "d": "n1"}, period="t0"
    )
    busy = snapshot(
        [3.0, 3.0, 0.0, 0.0], [0, 0, 0, 0], {"a": "n1", "b": "n2", "c": "n1", "d": "n1"}, period="t1"
    )
    rate, how = derived_node_rate([quiet, busy], 0.8)
    assert rate == pytest.approx(6 / 3 / 0.8)  # mean utilisation 2 per unit of capacity in t1
    assert "t1" in how and "0.8" in how
    assert "one unit of load takes 400 ms on one unit of capacity" in how  # 1 / 2.5 per second
    model = StreamModel().calibrated([quiet, busy])
    assert model.node_rate == pytest.approx(2.5) and model.period_seconds == 3600.0
    assert period_seconds(["2024-03-01T00:00", "2024-03-01T00:30", "2024-03-01T01:00"]) == 1800.0


@pytest.mark.parametrize(
    ("settings_", "message"),
    [
        (
            {"bandwidth": 0},
            "'bandwidth' parameter of StreamModel must be a float > 0 (bytes per second). Got 0",
        ),
        (
            {"node_rate": -1.0},
            "'node_rate' parameter of StreamModel must be a float > 0 (load per second per unit of capacity) "
            "or None. Got -1.0",
        ),
        (
            {"target_utilisation": 1.5},
            "'target_utilisation' parameter of StreamModel must be a float in (0, 1] (the busiest period's "
            "mean utilisation). Got 1.5",
        ),
        (
            {"period_seconds": float("nan")},
            "'period_seconds' parameter of StreamModel must be a float > 0 (seconds) or None. Got nan",
        ),
    ],
)
def test_bad_settings_are_named(settings_, message):
    with pytest.raises(InvalidParameterError, match=message.replace("(", r"\(").replace(")", r"\)")):
        StreamModel(**settings_)


# -- against a tuple-level simulation -------------------------------------------------------------


def poisson_times(rng, rate, start, end):
    n = rng.poisson(rate * (end - start))
    return np.sort(rng.uniform(start, end, n))


def fifo_departures(arrivals, service, rng):
    """Lindley's recursion: a FIFO single server with exponential service times."""
    out = np.empty(len(arrivals))
    free = 0.0
    for i, (t, s) in enumerate(zip(arrivals, rng.exponential(1 / service, len(arrivals)))):
        free = max(free, t) + s
        out[i] = free
    return out


def simulate_arrival(rng, staying, moving, pause, service, horizon):
    """One node: its staying key groups' tuples from 0, a key group moving in that arrives at
    ``pause`` with the tuples it buffered meanwhile, and its own from then on. Returns the
    tuples buffered and the time after ``pause`` until the node's queue is first empty."""
    held = poisson_times(rng, moving, 0.0, pause)
    arrivals = np.sort(
        np.concatenate(
            [
                poisson_times(rng, staying, 0.0, horizon),
                np.full(len(held), pause),
                poisson_times(rng, moving, pause, horizon),
            ]
        )
    )
    departures = fifo_departures(arrivals, service, rng)
    later = np.flatnonzero(arrivals >= pause)
    first = later[0]
    for i in range(first + len(held) - 1, len(arrivals) - 1):  # empty: served before the next arrives
        if departures[i] <= arrivals[i + 1]:
            return len(held), departures[i] - pause
    return len(held), math.inf


def test_buffered_tuples_and_catch_up_agree_with_the_simulation():
    # A key group of 50/s moves 4 MB at 1 MB/s onto a node that serves 30/s of its own at 100/s.
    snap = snapshot([30.0, 50.0], [0.0, 4e6], {"stay": "n2", "move": "n1"}, nodes=("n1", "n2"))
    model = StreamModel(bandwidth=1e6, node_rate=100.0, period_seconds=60.0)
    row, _ = model.period(snap, snap, {"stay": "n2", "move": "n2"}, {})
    assert row["buffered_tuples"] == 200.0 and row["catch_up_seconds"] == pytest.approx(10.0)
    rng = np.random.default_rng(11)
    runs = [simulate_arrival(rng, 30.0, 50.0, 4.0, 100.0, 40.0) for _ in range(150)]
    buffered, catch_up = (np.mean(x) for x in zip(*runs))
    assert buffered == pytest.approx(row["buffered_tuples"], rel=0.05)
    # The fluid model ignores the queue the node has anyway (0.43 tuples on average at 30 %).
    assert catch_up == pytest.approx(row["catch_up_seconds"], rel=0.10)


def fifo_departures_at_once(arrivals, service, rng):
    """Lindley's recursion in closed form: departure n is the latest over k <= n of arrival k
    plus the service times of k .. n."""
    services = rng.exponential(1 / service, len(arrivals))
    served = np.cumsum(services)
    return served + np.maximum.accumulate(arrivals - (served - services))


def test_a_node_near_saturation_agrees_with_the_simulation():
    # One node at 0.95 utilisation: the model's p99 (ln(100) / 0.05 = 92 service times) against
    # 4 million simulated tuples, the first tenth dropped as warm-up.
    snap = snapshot([0.95], [0.0], {"a": "n1"}, nodes=("n1",))
    row, _ = StreamModel(node_rate=1.0, period_seconds=60.0).period(snap, snap, snap.assignment, {})
    assert row["steady"] is True and row["p99_service_times"] == pytest.approx(LN100 / 0.05)
    rng = np.random.default_rng(5)
    arrivals = poisson_times(rng, 0.95, 0.0, 4_000_000 / 0.95)
    sojourn = fifo_departures_at_once(arrivals, 1.0, rng) - arrivals
    simulated = np.quantile(sojourn[len(sojourn) // 10 :], 0.99)
    assert row["p99_latency_ms"] / 1000 == pytest.approx(simulated, rel=0.10)


def test_a_saturated_periods_drain_agrees_with_the_simulation():
    # 12/s against 10/s for 1000 s (a backlog of 2000 tuples), then 6/s: it drains at 4/s.
    periods_ = [
        snapshot([load], [0.0], {"a": "n1"}, nodes=("n1",), period=f"t{t}")
        for t, load in enumerate((12.0, 6.0, 6.0))
    ]
    model = StreamModel(node_rate=10.0, period_seconds=1000.0)
    rows = replay(periods_, get_planner("flux", max_moves=0), initial=None, stream=model)
    assert rows["steady"].tolist() == [False, True, True]
    assert rows["drain_seconds"].iloc[0] == pytest.approx(500.0)
    drains = []
    for seed in range(20):
        rng = np.random.default_rng(seed)
        arrivals = np.concatenate(
            [poisson_times(rng, 12.0, 0.0, 1000.0), poisson_times(rng, 6.0, 1000.0, 3000.0)]
        )
        departures = fifo_departures_at_once(arrivals, 10.0, rng)
        # Empty: a departure after the period's end before the next tuple arrives.
        empty = np.flatnonzero((departures >= 1000.0) & (departures <= np.append(arrivals[1:], np.inf)))
        drains.append(departures[empty[0]] - 1000.0)
    assert np.mean(drains) == pytest.approx(rows["drain_seconds"].iloc[0], rel=0.10)


def test_the_p99_latency_agrees_with_the_simulation():
    rng = np.random.default_rng(5)
    for rate, service in ((60.0, 100.0), (20.0, 25.0)):
        arrivals = poisson_times(rng, rate, 0.0, 150_000 / rate)
        sojourn = fifo_departures(arrivals, service, rng) - arrivals
        simulated = np.quantile(sojourn[len(sojourn) // 10 :], 0.99)  # past the warm-up
        assert mm1_p99(rate, service) == pytest.approx(simulated, rel=0.10)


# -- properties -----------------------------------------------------------------------------------


@st.composite
def periods(draw):
    n_nodes = draw(st.integers(2, 4))
    n_kgs = draw(st.integers(1, 8))
    loads = draw(st.lists(st.floats(0.0, 10.0), min_size=n_kgs, max_size=n_kgs))
    states = draw(st.lists(st.floats(0.0, 1e7), min_size=n_kgs, max_size=n_kgs))
    nodes = [f"n{i}" for i in range(n_nodes)]
    before = draw(st.lists(st.sampled_from(nodes), min_size=n_kgs, max_size=n_kgs))
    after = draw(st.lists(st.sampled_from(nodes), min_size=n_kgs, max_size=n_kgs))
    ids = [f"k{i}" for i in range(n_kgs)]
    snap = snapshot(loads, states, dict(zip(ids, before)), nodes=nodes)
    backlog = {k: draw(st.floats(0.0, 100.0)) for k in ids if draw(st.booleans())}
    return snap, dict(zip(ids, after)), backlog


@settings(max_examples=150, deadline=None)
@given(periods(), st.floats(1e3, 1e8), st.floats(0.5, 20.0))
def test_properties(case, bandwidth, node_rate):
    snap, after, backlog = case
    model = StreamModel(bandwidth=bandwidth, node_rate=node_rate, period_seconds=60.0)
    still, _ = model.period(snap, snap, snap.assignment, backlog)
    assert still["migration_seconds"] == 0.0 and still["buffered_tuples"] == 0.0
    row, _ = model.period(snap, snap, after, backlog)
    faster, _ = StreamModel(bandwidth=2 * bandwidth, node_rate=node_rate, period_seconds=60.0).period(
        snap, snap, after, backlog
    )
    assert faster["migration_seconds"] <= row["migration_seconds"]
    assert faster["buffered_tuples"] <= row["buffered_tuples"] + 1e-9
    # Doubling the node rate never raises a node's latency (nor its backlog).
    index = snap.arrays().node_index
    arrivals = np.bincount(
        [index[after[kg.id]] for kg in snap.key_groups],
        weights=[kg.load for kg in snap.key_groups],
        minlength=len(snap.nodes),
    )
    for a in arrivals:
        assert mm1_p99(a, 2 * node_rate) <= mm1_p99(a, node_rate)
    doubled, _ = StreamModel(bandwidth=bandwidth, node_rate=2 * node_rate, period_seconds=60.0).period(
        snap, snap, after, backlog
    )
    assert doubled["backlog_tuples"] <= row["backlog_tuples"] + 1e-6
    assert doubled["overloaded_nodes"] <= row["overloaded_nodes"]


def test_a_replay_carries_the_backlog_and_a_planner_that_moves_nothing_costs_nothing():
    periods_ = [
        snapshot(
            [12.0, 1.0, 1.0, 1.0], [1e6] * 4, {"a": "n1", "b": "n2", "c": "n3", "d": "n3"}, period=f"t{t}"
        )
        for t in range(3)
    ]
    model = StreamModel(node_rate=10.0, period_seconds=10.0)
    placement = {"a": "n1", "b": "n2", "c": "n3", "d": "n3"}
    rows = replay(periods_, get_planner("flux", max_moves=0), initial=placement, stream=model)
    # Nothing moves; a stays alone on n1 at 12/s: 20 tuples more every period.
    assert rows["moves"].sum() == 0 and (rows["migration_seconds"] == 0).all()
    assert rows["backlog_tuples"].tolist() == pytest.approx([20.0, 40.0, 60.0])
    assert (rows["overloaded_nodes"] == 1).all()
    assert not rows["steady"].any() and rows["drain_seconds"].isna().all()  # never drained


def test_the_summary_counts_overloaded_periods_apart_with_their_drain():
    # Four key groups of 1..4 on n1 of two nodes; the node rate is derived: 10 / 2 / 0.8 = 6.25 a
    # unit of capacity. t0 is not planned (all on n1: overloaded), flux then balances 5 and 5.
    kgs = [KeyGroup(f"k{i}", "op", float(i + 1), 10.0, index=i) for i in range(4)]
    snaps = [
        Snapshot([Node("n1"), Node("n2")], kgs, {k.id: "n1" for k in kgs}, period=p)
        for p in ("t0", "t1", "t2")
    ]
    table = compare(snaps, ["flux"], reference="none", initial=None)
    row = summarize(table).loc["flux"]
    assert table["steady"].tolist() == [False, True, True]
    # t0 leaves (10 - 6.25) x 3600 s; t1 serves each node's half at 6.25 - 5 a second.
    drain = table["drain_seconds"].iloc[0]
    assert drain == pytest.approx(3.75 * 3600 / 2 / 1.25, rel=0.01)
    assert [row["steady_periods"], row["overloaded_periods"], row["undrained_periods"]] == [2, 1, 0]
    assert row["max_drain_seconds"] == pytest.approx(drain)
    assert row["median_p99_service_times"] == pytest.approx(LN100 / (1 - 5 / 6.25))


def test_explain_says_what_carrying_out_a_plan_pauses(tmp_path, capsys):
    import json

    from albic.cli.main import main

    # Two key groups on n1, n2 empty: flux moves one. Its state at 1 MB/s, its load buffered meanwhile.
    snap = {
        "schema": "albic.snapshot/1",
        "nodes": [{"id": "n1"}, {"id": "n2"}],
        "key_groups": [
            {"id": "a", "operator": "op", "load": 5.0, "state_size": 3e6, "node": "n1"},
            {"id": "b", "operator": "op", "load": 5.0, "state_size": 1e6, "node": "n1"},
        ],
    }
    (tmp_path / "s.json").write_text(json.dumps(snap))
    assert (
        main(["plan", str(tmp_path / "s.json"), "--planner", "flux", "--out", str(tmp_path / "p.json")]) == 0
    )
    moved = [m["key_group"] for m in json.loads((tmp_path / "p.json").read_text())["moves"]]
    assert len(moved) == 1
    capsys.readouterr()
    argv = ["explain", str(tmp_path / "p.json"), "--snapshot", str(tmp_path / "s.json"), "--bandwidth", "1e6"]
    assert main([*argv, "--json"]) == 0
    stream = json.loads(capsys.readouterr().out)["stream"]
    seconds = {"a": 3.0, "b": 1.0}[moved[0]]
    assert stream == {"bandwidth": 1e6, "migration_seconds": seconds, "buffered_tuples": 5.0 * seconds}
    assert main(argv) == 0
    assert f"migration: {seconds:g} s over links of 1e+06 bytes/s" in capsys.readouterr().out
