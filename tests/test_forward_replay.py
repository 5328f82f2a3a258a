"""Forward scoring: plans made from what was known before the period, scored on the period itself.

Against truth: alternating load patterns whose every plan is wrong one period later; a recording
planner that proves no plan saw the loads it was scored on; every forward figure of a comparison
on real statistics recomputed by hand (the chain of plans rebuilt from the model and the planner
alone, the balance scored with arithmetic of its own); triggers on hand-made series.
"""

import numpy as np
import pandas as pd
import pytest

import albic
from albic.base.errors import InvalidParameterError
from albic.cli.main import main
from albic.core.model import KeyGroup, Node, Snapshot, Traffic
from albic.core.planner import Planner, PlannerTags, get_planner
from albic.evaluation.compare import CompareRules, compare, replay_run, summarize
from albic.evaluation.decide import KnownPeriods, parse_decide_on, parse_trigger
from albic.evaluation.replay import ReplayRules, replay
from albic.evaluation.store import read_replay_table
from albic.evaluation.stream import StreamModel

# B is A mirrored. The only balanced placements are {k0} | {k1, k2, k3} for A and {k3} | the rest
# for B (no placement balances both): each gives the other pattern 1 | 7, 75 % of the mean 4.
PATTERN_A = (4.0, 2.0, 1.0, 1.0)
PATTERN_B = (1.0, 1.0, 2.0, 4.0)
BALANCED_FOR_A = {"k0": "n1", "k1": "n2", "k2": "n2", "k3": "n2"}


def alternating(periods):
    """Patterns A, B, A, ...; each period's loads scaled by its own factor, so that loads seen
    are the loads of one period only."""
    out = []
    for t in range(periods):
        pattern = PATTERN_A if t % 2 == 0 else PATTERN_B
        kgs = [
            KeyGroup(f"k{i}", "op", load * (1 + t / 64), 100.0 * (t + 1)) for i, load in enumerate(pattern)
        ]
        out.append(Snapshot([Node("n1"), Node("n2")], kgs, {k.id: "n1" for k in kgs}, period=f"t{t}"))
    return out


class Recording(Planner):
    """Plans with milp and records the loads of every snapshot it was handed, by period."""

    name = "test_recording"
    seen: list[tuple[str, tuple[float, ...]]] = []

    def tags(self):
        return PlannerTags()

    def _plan(self, snapshot):
        Recording.seen.append((snapshot.period, tuple(kg.load for kg in snapshot.key_groups)))
        plan = get_planner("milp", max_moves=2, time_limit=None).plan(snapshot)
        return self.result(snapshot, dict(plan.assignment), status=plan.status)


@pytest.fixture
def recording():
    Recording.seen = []
    return Recording()


def test_hindsight_fits_every_period_and_previous_is_always_one_pattern_behind(recording):
    periods = alternating(6)
    oracle = replay(periods, get_planner("milp", max_moves=2), initial=BALANCED_FOR_A, decide_on="hindsight")
    assert oracle["load_distance_pct"].max() == pytest.approx(0.0, abs=1e-9)
    assert (oracle["decided_on"] == "hindsight").all() and oracle["planned"].all()

    forward = replay(periods, recording, initial=BALANCED_FOR_A)
    assert (forward["decided_on"] == "previous").all()
    assert forward["status"].iloc[0] == "SKIPPED" and not forward["planned"].iloc[0]
    assert forward["load_distance_pct"].tolist() == pytest.approx([0.0] + [75.0] * 5)
    # What each plan was made from was balanced: the plan fitted the past perfectly.
    assert forward["hindsight_load_distance_pct"].iloc[1:].tolist() == pytest.approx([0.0] * 5)
    summary = summarize(forward)
    assert summary.loc["test_recording", "mean_load_distance_pct"] == pytest.approx(375 / 6)
    assert summary.loc["test_recording", "hindsight_mean_load_distance_pct"] == pytest.approx(0.0)
    assert summary.loc["test_recording", "planned"] == 5


def test_no_plan_sees_the_loads_it_is_scored_on(recording):
    periods = alternating(7)
    loads = {s.period: tuple(kg.load for kg in s.key_groups) for s in periods}
    for decide_on in (
        "previous",
        "forecast:last",
        "forecast:mean:3",
        "forecast:ewma:0.5",
        "forecast:seasonal:2",
    ):
        Recording.seen = []
        replay(periods, recording, initial=BALANCED_FOR_A, decide_on=decide_on)
        assert [period for period, _ in Recording.seen] == [f"t{t}" for t in range(1, 7)], decide_on
        for period, seen in Recording.seen:
            assert seen != loads[period], (decide_on, period, seen)
    # seasonal:2 forecasts period t by period t-2, which has t's pattern: it sees t-2's loads
    # (t1: fewer than 2 periods known, t0's) and its plans fit the period they are scored on.
    Recording.seen = []
    rows = replay(periods, recording, initial=BALANCED_FOR_A, decide_on="forecast:seasonal:2")
    assert Recording.seen[0][1] == loads["t0"]
    assert [seen for _, seen in Recording.seen[1:]] == [loads[f"t{t - 2}"] for t in range(2, 7)]
    assert rows["load_distance_pct"].tolist()[2:] == pytest.approx([0.0] * 5)
    Recording.seen = []
    replay(periods, recording, initial=BALANCED_FOR_A, decide_on="hindsight")
    assert Recording.seen == [(s.period, loads[s.period]) for s in periods]  # the oracle does see them


def test_the_decision_snapshot_is_the_scored_period_with_what_was_known():
    nodes = [Node("n1"), Node("n2"), Node("n3")]
    first = Snapshot(
        nodes[:2],
        [KeyGroup("a", "op", 2.0, 10.0, arrival_rate=4.0, service_rate=1.0), KeyGroup("b", "op", 6.0, 30.0)],
        {"a": "n1", "b": "n2"},
        traffic=[Traffic("a", "b", 5.0)],
        period="t0",
    )
    second = Snapshot(
        nodes,
        [
            KeyGroup("a", "op", 9.0, 99.0, arrival_rate=8.0, service_rate=1.0),
            KeyGroup("b", "op", 9.0, 99.0),
            KeyGroup("c", "op", 9.0, 99.0, resources={"memory": 1.0}),
        ],
        {"a": "n1", "b": "n1", "c": "n3"},
        traffic=[Traffic("a", "c", 7.0)],
        period="t1",
    )
    known = KnownPeriods(parse_decide_on("previous"))
    assert known.snapshot(first) is None  # nothing known before the first period
    known.add(first)
    decision = known.snapshot(second)
    assert [n.id for n in decision.nodes] == ["n1", "n2", "n3"]  # the scored period's nodes
    assert [(kg.id, kg.load, kg.state_size) for kg in decision.key_groups] == [
        ("a", 2.0, 10.0),
        ("b", 6.0, 30.0),
        ("c", 0.0, 0.0),  # new in t1: nothing known of it
    ]
    assert decision.key_groups[0].arrival_rate == 4.0 and decision.key_groups[2].resources == {}
    assert [(t.src, t.dst, t.rate) for t in decision.traffic] == [("a", "b", 5.0)]
    assert decision.period == "t1"
    assert KnownPeriods(parse_decide_on("hindsight")).snapshot(second) is second


def test_threshold_and_cooldown_skip_the_periods_they_should():
    # Known load distance of the carried placement (both key groups on their own node, loads
    # x and 10 - x: distance |x - 5| / 5): 0, 60, 60, 20, 80, 80, 0 % for the periods' loads.
    xs = [5.0, 8.0, 8.0, 6.0, 9.0, 9.0, 5.0]

    def periods():
        for t, x in enumerate(xs):
            kgs = [KeyGroup("a", "op", x), KeyGroup("b", "op", 10.0 - x)]
            yield Snapshot([Node("n1"), Node("n2")], kgs, {"a": "n1", "b": "n2"}, period=f"t{t}")

    class Stay(Planner):
        name = "test_stay"

        def tags(self):
            return PlannerTags()

        def _plan(self, snapshot):
            return self.result(snapshot, dict(snapshot.assignment))

    initial = {"a": "n1", "b": "n2"}
    # Period t is decided on t-1's loads: known distances (t1..t6) 0, 60, 60, 20, 80, 80.
    rows = replay(list(periods()), Stay(), initial=initial, trigger="threshold:50")
    assert rows["planned"].tolist() == [False, False, True, True, False, True, True]
    assert rows["status"].tolist()[:2] == ["SKIPPED", "SKIPPED"] and (rows["moves"] == 0).all()
    rows = replay(list(periods()), Stay(), initial=initial, trigger="threshold:50,cooldown:3")
    assert rows["planned"].tolist() == [False, False, True, False, False, True, False]
    rows = replay(list(periods()), Stay(), initial=initial, trigger="threshold:10", decide_on="hindsight")
    assert rows["planned"].tolist() == [False, True, True, True, True, True, False]


def test_a_threshold_leaves_noise_alone_where_planning_always_chases_it():
    # Six key groups on two nodes, balanced but for +-5 % noise per period (load distance < 10 %).
    rng = np.random.default_rng(7)
    periods = []
    for t in range(12):
        loads = np.array([3.0, 2.0, 1.0, 3.0, 2.0, 1.0]) * rng.uniform(0.95, 1.05, 6)
        kgs = [KeyGroup(f"k{i}", "op", float(load), 1.0) for i, load in enumerate(loads)]
        periods.append(Snapshot([Node("n1"), Node("n2")], kgs, {k.id: "n1" for k in kgs}, period=f"t{t}"))
    initial = {f"k{i}": "n1" if i < 3 else "n2" for i in range(6)}
    milp = get_planner("milp", max_moves=2, time_limit=None)
    always = replay(periods, milp, initial=initial)
    lazy = replay(periods, milp, initial=initial, trigger="threshold:10")
    assert always["moves"].sum() > 0 and always["planned"].sum() == 11
    assert lazy["moves"].sum() == 0 and not lazy["planned"].any()
    assert lazy["load_distance_pct"].max() < 10.0


@pytest.mark.parametrize(
    ("decide_on", "message"),
    [
        ("tomorrow", "decide_on 'tomorrow': use previous"),
        (
            "forecast:ewma:2",
            "The 'ALPHA' parameter of forecaster 'ewma:2' must be a float in (0, 1]. Got 2.0",
        ),
        ("forecast:seasonal:0", "The 'K' parameter of forecaster 'seasonal:0' must be an int >= 1. Got 0"),
        ("forecast:", "forecaster '': unknown"),
    ],
)
def test_bad_rules_are_named_before_any_replay(decide_on, message):
    with pytest.raises(InvalidParameterError, match=message.replace("(", r"\(").replace(")", r"\)")):
        compare(alternating(2), ["flux"], decide_on=decide_on)
    with pytest.raises(InvalidParameterError, match="cooldown:K"):
        parse_trigger("threshold:5,cooldown:0")
    with pytest.raises(InvalidParameterError, match="use always"):
        compare(alternating(2), ["flux"], trigger="sometimes")


def test_local_and_worker_processes_give_the_same_forward_tables():
    periods = alternating(5)
    options = dict(budgets="max_moves=1,2", decide_on="forecast:ewma:0.5", trigger="threshold:10,cooldown:2")
    one = albic.compare(periods, ["flux", "milp:time_limit=1"], **options)
    two = albic.compare(periods, ["flux", "milp:time_limit=1"], jobs=2, **options)
    pd.testing.assert_frame_equal(one.drop(columns="seconds"), two.drop(columns="seconds"))
    assert (one["decided_on"] == "forecast:ewma:0.5").all() and one["planned"].any()


def test_rules_given_as_an_object_or_as_keywords_are_the_same_rules():
    periods = alternating(4)
    rules = albic.ReplayRules(decide_on="hindsight", trigger="threshold:10", remote_cost=0.5)
    by_object = albic.compare(periods, ["flux"], rules=rules)
    by_keywords = albic.compare(
        periods, ["flux"], decide_on="hindsight", trigger="threshold:10", remote_cost=0.5
    )
    pd.testing.assert_frame_equal(by_object.drop(columns="seconds"), by_keywords.drop(columns="seconds"))
    assert (by_object["decided_on"] == "hindsight").all()
    # A keyword overrides the object's rule of that name; the others stay.
    previous = replay(periods, "flux", rules=rules, decide_on="previous")
    assert (previous["decided_on"] == "previous").all()
    assert (
        previous["load_index"].tolist()
        == replay(periods, "flux", decide_on="previous", trigger="threshold:10", remote_cost=0.5)[
            "load_index"
        ].tolist()
    )
    with pytest.raises(TypeError, match="'decide'"):
        replay(periods, "flux", decide="hindsight")


def test_a_comparisons_rules_reach_its_runner_as_one_checked_record():
    """Built once (CompareRules), the replay rules travel to the runner as a record: the rules in
    their canonical text, the default stream model given, the other rules as given."""
    seen = []

    def runner(source, todo, rules, show_progress):
        seen.append(rules)
        for i, run in todo:
            yield i, replay_run(source, run, rules)

    table = compare(
        alternating(3),
        ["flux"],
        runner=runner,
        rules=CompareRules(budgets="max_moves=1,2", reference=None),
        decide_on=" previous ",
        trigger="threshold:5",
        remote_cost=0.3,
    )
    assert seen == [
        ReplayRules(decide_on="previous", trigger="threshold:5", remote_cost=0.3, stream=StreamModel())
    ]
    assert table["budget"].drop_duplicates().tolist() == [1.0, 2.0]
    by_keywords = compare(
        alternating(3),
        ["flux"],
        budgets="max_moves=1,2",
        reference=None,
        trigger="threshold:5",
        remote_cost=0.3,
    )
    pd.testing.assert_frame_equal(table.drop(columns="seconds"), by_keywords.drop(columns="seconds"))
    # albic.compare (either engine) keeps the record's own rules: budgets and no reference.
    through_api = albic.compare(
        alternating(3), ["flux"], rules=CompareRules(budgets="max_moves=1,2", reference=None)
    )
    assert through_api["budget"].drop_duplicates().tolist() == [1.0, 2.0]
    assert not through_api["reference"].any()


def test_a_planner_given_twice_is_refused_and_two_sharing_a_name_are_numbered(tmp_path, capsys):
    """albic.compare and albic compare label planners by one rule: the same planner twice (its
    replay would repeat) is refused by both; different planners sharing a name are numbered."""
    with pytest.raises(InvalidParameterError, match="planner 'flux' is given twice with the same parameters"):
        albic.compare(alternating(2), ["flux", "flux"])
    out = tmp_path / "out"
    code = main(
        ["compare", str(tmp_path / "no-stats"), "--planner", "flux", "--planner", "flux", "--out", str(out)]
    )
    assert code == 2 and "planner 'flux' is given twice with the same parameters" in capsys.readouterr().err
    two = [get_planner("flux", max_moves=1), get_planner("flux", max_moves=2)]
    table = albic.compare(alternating(2), two, reference=None)
    runs = table.drop_duplicates("planner")
    assert runs["planner"].tolist() == ["flux", "flux#2"] and runs["budget"].tolist() == [1.0, 2.0]


def _hand_load_distance_pct(snapshot_loads, capacities, placement, wanted):
    """max |u_i - mean| / mean over the wanted nodes, in plain Python."""
    load = dict.fromkeys(capacities, 0.0)
    for kg, node in placement.items():
        load[node] += snapshot_loads[kg]
    active = [n for n in capacities if n in wanted]
    mean = sum(load[n] for n in active) / sum(capacities[n] for n in active)
    return 100.0 * max(abs(load[n] / capacities[n] - mean) for n in active) / mean


def test_a_comparison_on_real_statistics_is_the_chain_recomputed_by_hand(tmp_path, capsys):
    from albic.cli.main import main

    stats = tmp_path / "stats"
    argv = "stats flights --engine pandas --days 1 --key-groups 4 --node-counts 2:4 --out".split()
    argv.append(str(stats))
    assert main(argv) == 0
    out = tmp_path / "out"
    assert (
        main(
            [
                "compare",
                str(stats),
                "--planner",
                "flux",
                "--planner",
                "milp",
                "--budgets",
                "max_moves=10",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert (
        "scoring: previous (each period planned from the one before it, scored on its own statistics)"
        in printed
    )
    table = read_replay_table(out / "replay.csv")
    rows = table[table["planner"] == "flux"].reset_index(drop=True)
    assert (rows["decided_on"] == "previous").all()

    periods = list(albic.read_snapshots(stats))
    flux = get_planner("flux", max_moves=10)
    placement = dict(get_planner("storm_default").plan(periods[0]).assignment)
    checked = 0
    for t, period in enumerate(periods):
        wanted = {n.id for n in period.nodes}
        loads = {kg.id: kg.load for kg in period.key_groups}
        if t > 0:
            before = periods[t - 1]
            holders = [n for n in dict.fromkeys(placement.values()) if n not in wanted]
            decision = Snapshot(
                [*period.nodes, *(Node(n, removing=True) for n in holders)],
                before.key_groups,
                placement,
                traffic=before.traffic,
                period=period.period,
            )
            new = dict(flux.plan(decision).assignment)
            state = {kg.id: kg.state_size for kg in before.key_groups}
            moved = [kg for kg in new if new[kg] != placement[kg]]
            assert rows.loc[t, "moves"] == len(moved)
            assert rows.loc[t, "migration_cost"] == pytest.approx(sum(state[kg] for kg in moved))
            placement = new
        capacities = {n: 1.0 for n in [*wanted, *placement.values()]}
        assert rows.loc[t, "load_distance_pct"] == pytest.approx(
            _hand_load_distance_pct(loads, capacities, placement, wanted)
        ), period.period
        checked += 1
    assert checked == len(periods) > 10 and rows["moves"].sum() > 0


def test_a_one_operator_planner_is_refused_in_a_comparison_of_several(stats_dir_two_operators):
    source, names = stats_dir_two_operators
    with pytest.raises(InvalidParameterError) as err:
        compare(source, ["flux", f"ssm:operator={names[0]}"], reference=None)
    message = str(err.value)
    assert f"plans operator {names[0]!r} alone" in message and names[1] in message
    # Without operator= it plans every operator, one at a time: accepted.
    table = compare(source, ["ssm"], reference=None)
    assert (table["status"] != "ERROR").all() and set(table["planner"]) == {"ssm"}


@pytest.fixture(scope="module")
def stats_dir_two_operators(user_stats):
    from albic.io.datasets import read_operators

    names = sorted(op.name for op in read_operators(user_stats))
    assert len(names) >= 2
    return user_stats, names
