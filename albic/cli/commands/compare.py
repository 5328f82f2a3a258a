"""Replay the periods of a statistics dataset through several planners, at equal budgets.

::

    albic compare STATS_DIR --planner flux --planner albic:time_limit=0.5 --planner cola \\
        --budgets max_moves=5,10,20,40 --out DIR

STATS_DIR is what ``albic stats`` writes. Each ``--planner`` is ``NAME`` or
``NAME:key=value,key=value`` (values as for ``albic plan --param``: JSON literals, none, or
text); ``--planner all`` means every registered planner. Every period is planned on the placement
the previous period's plan left (the first on ``--current``, by default the statistics' own
split: stock Flink's for statistics made with ``hash = "flink"``, else Storm's default), from what was known before
it (``--decide-on``: ``previous`` by default, ``forecast:NAME``, or the ``hindsight`` oracle) and
when ``--trigger`` says so, and scored on its own statistics (albic/evaluation/decide.py). With
``--budgets PARAMETER=V1,V2,...`` (``max_moves`` or ``max_migration_cost``) every planner that has
that parameter runs once per budget; the others run once, as reference points. ``--bandwidth``,
``--node-rate`` and ``--target-utilisation`` set the model of what the plans cost the stream
(albic/evaluation/stream.py).

OUT gets summary.csv (one row per planner and budget), replay.csv (one row per planner, budget and
period) and the figures tradeoff.png (mean load distance against state moved per period: which
planner to use), load_distance.png, migration_cost.png, stream.png (what the plans cost the
stream) and solve_time.png; the scoring, the stream model's node rate and the summary table are
printed. Exit status 1 when a planner broke its contract (its rows say ERROR); the other planners
still run.

``--engine spark`` runs every replay as a Spark task (``--master URL``, default ``local[*]`` or
spark-submit's; ``--conf KEY=VALUE`` for any Spark setting), with the same table; the executors
need albic (README, "albic compare on a Spark cluster"; albic/spark/compare_engine.py). On both
engines each replay is kept in OUT as it finishes, and ``--resume`` runs only the replays that are
not in OUT yet (a grid cut off loses only the replays in flight).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from albic.base.errors import AlbicError, InvalidParameterError, UsageError
from albic.base.extras import need
from albic.base.formats import did_you_mean, number, seconds
from albic.cli.period_options import add_current_argument
from albic.cli.spark_options import spark_settings
from albic.core.planner import get_planner
from albic.core.registry import planner_class, planner_names
from albic.evaluation import plot
from albic.evaluation.compare import (
    NO_PLAN,
    CompareRules,
    Runner,
    compare,
    labelled,
    parse_budgets,
    parse_planner_spec,
    planner_label,
    reference_name,
    runs,
    source_periods,
    summarize,
    whole_periods,
    with_reference,
)
from albic.evaluation.decide import (
    DECIDE_ON_HELP,
    TRIGGER_HELP,
    describe_scoring,
)
from albic.evaluation.recommend import Recommendation, read_recommendation
from albic.evaluation.replay import ReplayRules
from albic.evaluation.store import ReplayStore
from albic.evaluation.stream import DEFAULT_BANDWIDTH, PEAK_UTILISATION, StreamModel
from albic.evaluation.verdict import DEFAULT_REFERENCE, RESAMPLES, SEED, block_length, verdict
from albic.io import atomic_write_text, read_snapshots
from albic.io.datasets import partial_periods, read_manifest
from albic.io.periods import period_labels, read_period, read_placement
from albic.spark.compare_engine import ENGINES, runner_for
from albic.stats.periods import period_lengths, wall_seconds


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("stats", type=Path, metavar="STATS_DIR", help="a folder written by 'albic stats'")
    add_comparison_arguments(parser, planners_required=False)
    parser.add_argument(
        "--recommendation",
        type=Path,
        metavar="FILE",
        help="replay what 'albic recommend' chose (its recommendation.json: the planner, --decide-on, "
        "--trigger and --reference) and give its held-out figures again",
    )
    add_current_argument(parser, "the placement before the first period, ")
    parser.add_argument("--out", type=Path, required=True, metavar="DIR", help="output folder")
    parser.add_argument(
        "--engine",
        choices=ENGINES,
        default="local",
        help="local (default: this machine, --jobs processes) or spark (every replay a Spark task)",
    )
    parser.add_argument(
        "--master",
        metavar="URL",
        help="--engine spark: the Spark master (default local[*], or spark-submit's)",
    )
    parser.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="--engine spark: a Spark setting (repeatable), e.g. spark.task.maxFailures=4",
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="run only the replays that are not in OUT yet (of an earlier run cut "
        "off, or finished with fewer planners or budgets)",
    )


def add_comparison_arguments(parser: argparse.ArgumentParser, *, planners_required: bool = True) -> None:
    """The options ``albic compare`` shares with ``albic demo``."""
    parser.add_argument(
        "--planner",
        action="append",
        dest="planners",
        metavar="NAME[:k=v,...]",
        required=planners_required,
        help="a planner and its parameters (repeatable), or 'all'",
    )
    parser.add_argument(
        "--budgets",
        metavar="PARAMETER=V1,V2,...",
        help="run every budgeted planner at each budget, e.g. max_moves=5,10,20,40",
    )
    parser.add_argument(
        "--decide-on",
        default="previous",
        metavar="RULE",
        help="what each period's plan is made from: " + DECIDE_ON_HELP.replace("%", "%%"),
    )
    parser.add_argument(
        "--trigger",
        default="always",
        metavar="RULE",
        help="which periods are planned: " + TRIGGER_HELP.replace("%", "%%"),
    )
    parser.add_argument(
        "--reference",
        default=DEFAULT_REFERENCE,
        metavar="NAME",
        help="the replay every run is judged against: default (the engine's own split, "
        "flink_default or storm_default by the statistics' hash, re-split only when the node count "
        "changes), a planner name, or none",
    )
    parser.add_argument(
        "--time-limit",
        type=float,
        metavar="SECONDS",
        help="per-period time limit for the planners that take one and whose spec does not set it",
    )
    parser.add_argument(
        "--remote-cost",
        type=float,
        default=ReplayRules.remote_cost,
        metavar="C",
        help=f"load of one remote tuple, for the load index (default {ReplayRules.remote_cost:g})",
    )
    parser.add_argument(
        "--bandwidth",
        type=float,
        default=DEFAULT_BANDWIDTH,
        metavar="BYTES_PER_S",
        help=f"one link's bandwidth for moving state (default {DEFAULT_BANDWIDTH:g}: 1 Gbit/s)",
    )
    parser.add_argument(
        "--node-rate",
        type=float,
        metavar="RATE",
        help="load a node serves per second per unit of capacity (default: derived so that the "
        "busiest period's mean utilisation is --target-utilisation)",
    )
    parser.add_argument(
        "--target-utilisation",
        type=float,
        default=PEAK_UTILISATION,
        metavar="U",
        help=f"the busiest period's mean utilisation when the node rate is derived (default {PEAK_UTILISATION:g})",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=1,
        metavar="N",
        help="replays run at a time, in worker processes (default 1)",
    )
    parser.add_argument(
        "--drop-partial",
        action="store_true",
        help="leave out the partial periods: the first and last when the events cover only part "
        "of them (by default they are replayed, their rates over the covered time)",
    )


def planner_specs(specs: list[str], time_limit: float | None) -> dict:
    """Label -> planner, from ``--planner`` specs (``all``: every registered one), labelled as
    ``albic.compare`` labels them (:func:`~albic.evaluation.compare.labelled`)."""

    registered = planner_names()
    expanded = [name for spec in specs for name in (registered if spec.strip() == "all" else [spec])]
    pairs = []
    for spec in expanded:
        name, params = parse_planner_spec(spec)
        if name not in registered:
            raise InvalidParameterError(
                f"--planner {spec!r}: unknown planner {name!r}{did_you_mean(name, registered)}; "
                f"registered: {', '.join(registered)}"
            )
        cls = planner_class(name)
        if cls is not None and time_limit is not None and "time_limit" in cls.parameter_names():
            params.setdefault("time_limit", time_limit)
        pairs.append((spec.strip(), get_planner(name, **params)))
    return labelled(pairs)


def format_summary(summary) -> str:
    """The summary table as aligned text."""
    rows = [
        [
            "planner",
            "budget",
            "periods",
            "planned",
            "no plan",
            "mean LD %",
            "vs ref (95% CI)",
            "better/worse",
            "p95 LD %",
            "hindsight mean LD %",
            "floor LD %",
            "at floor",
            "moves",
            "state moved %/period",
            "moved (x state)",
            "mean solve ms",
            "p99 (steady median)",
            "in service times",
            "overloaded (longest drain)",
        ]
    ]
    for r in summary.reset_index().to_dict("records"):
        budget = "-" if r["budget"] != r["budget"] else f"{r['budget_parameter']}={r['budget']:g}"
        rows.append(
            [
                planner_label(r["planner"], int(r["fell_back"]), int(r["periods"])),
                budget,
                str(r["periods"]),
                str(r["planned"]),
                _no_plan(r),
                _fixed(r["mean_load_distance_pct"], 2),
                _versus(r),
                _better_worse(r),
                _fixed(r["p95_load_distance_pct"], 2),
                _fixed(r["hindsight_mean_load_distance_pct"], 2),
                _fixed(r["mean_floor_load_distance_pct"], 2),
                _fixed(r["at_floor_periods"], 0),
                str(int(r["total_moves"])),
                _fixed(r["mean_migration_cost_pct"], 2),
                _fixed(r["state_moved_times"], 2),
                _fixed(1000 * r["mean_solve_seconds"], 1),
                seconds(r["median_p99_latency_ms"] / 1000),
                number(r["median_p99_service_times"]),
                _overloaded(r),
            ]
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows)


def floor_note(table) -> str:
    """What the floor columns mean, naming the key group that sets the floor most often."""
    text = (
        "floor LD: the load distance no placement goes below, whatever the budget, when one key "
        "group alone is too heavy for a node (mean over the periods); at floor: periods whose "
        "load distance is at it, where no budget or search does better"
    )
    setters = table["floor_key_group"].fillna("")
    setters = setters[setters != ""]
    if setters.empty:
        return text + " (no key group sets a floor in these periods)"
    counts = table.loc[setters.index].groupby("floor_key_group")["period"].nunique()
    return (
        f"{text}; {counts.idxmax()} sets it most often ({counts.max()} of "
        f"{table['period'].nunique()} periods)"
    )


def _versus(row: dict) -> str:
    """A run's mean difference to the reference with its interval ('reference' for the reference)."""
    if row.get("reference"):
        return "reference"
    mean, low, high = row["vs_reference_pct"], row["vs_reference_low"], row["vs_reference_high"]
    if mean != mean:
        return "-"
    return f"{mean:+.2f} [{low:+.2f}, {high:+.2f}]"


def _better_worse(row: dict) -> str:
    better, worse = row["better_periods"], row["worse_periods"]
    return "-" if better != better else f"{int(better)}/{int(worse)}"


def reference_note(summary) -> str:
    """What the reference columns mean: the reference, the bootstrap's settings."""
    marked = summary[summary["reference"]]
    if marked.empty:
        return "no reference replayed (--reference none)"
    n = int(marked["periods"].iloc[0])
    return (
        f"vs ref: the mean over the periods of the load distance minus the reference's "
        f"({marked.index[0]}: the engine's own split, re-split only when the node count changes), "
        f"in points (negative: better), with its 95% confidence interval (moving-block bootstrap "
        f"over periods, blocks of {block_length(n)}, {RESAMPLES} resamples, seed {SEED}); "
        "better/worse: periods it did better and worse than the reference in"
    )


def _no_plan(row: dict) -> str:
    """The periods of a summary row asked for a plan that made none, by status ('-' for none)."""
    parts = [f"{int(row[column])} {status}" for status, column in NO_PLAN.items() if row.get(column)]
    return ", ".join(parts) or "-"


def partial_note(source, dropped: bool) -> str | None:
    """One line naming the statistics folder's partial periods and the share of each that its
    events cover, or None when it has none (or the source is not a statistics folder)."""
    if not isinstance(source, Path):
        return None
    manifest = read_manifest(source)
    partial = partial_periods(manifest)
    if not partial:
        return None
    lengths = period_lengths(
        wall_seconds(list(partial)), int(manifest["period_seconds"]), manifest.get("timezone", "UTC")
    )
    listed = ", ".join(
        f"{label} ({covered / length:.0%} covered)"
        for (label, covered), length in zip(partial.items(), lengths)
    )
    what = (
        "left out (--drop-partial)"
        if dropped
        else "replayed with rates over the covered time (column partial; --drop-partial leaves them out)"
    )
    return f"partial periods, which the events cover only in part: {listed}; {what}"


def _overloaded(row: dict) -> str:
    """The periods with an overloaded node of a summary row, of all, with the longest time a
    backlog took to drain and those not drained by the end ('-' for a run with no result)."""
    if row["overloaded_periods"] != row["overloaded_periods"]:
        return "-"
    text = f"{int(row['overloaded_periods'])} of {int(row['periods'])}"
    notes = (
        [] if row["max_drain_seconds"] != row["max_drain_seconds"] else [seconds(row["max_drain_seconds"])]
    )
    if row["undrained_periods"]:
        notes.append(f"{int(row['undrained_periods'])} not drained")
    return f"{text} ({'; '.join(notes)})" if notes else text


#: What the latency columns of the summary table mean.
LATENCY_NOTE = (
    "p99: the p99 latency of the steady periods (no node overloaded), their median, in time and in "
    "service times (one unit of load on one unit of capacity; ln(100) / (1 - utilisation) on one "
    "node); overloaded: periods with a node above capacity, counted apart, with the longest time "
    "their backlog took to drain after the period's end"
)


def node_rate_line(stream: StreamModel, snapshots) -> str:
    """The stream model's settings as printed: the node rate, and when it was derived what that
    implies and the option that gives it."""
    line = (
        f"stream model: links {stream.bandwidth:g} bytes/s; {stream.calibrated(list(snapshots)).derivation}"
    )
    if stream.node_rate is None:
        line += ": give --node-rate (the load one unit of capacity serves per second) for real ones"
    return line


def _fixed(value: float, digits: int) -> str:
    return "-" if value != value else f"{value:.{digits}f}"


def compare_and_write(
    source,
    planners: dict,
    rules: CompareRules,
    out: Path,
    *,
    runner: Runner | None = None,
    resume: bool = False,
    timezone: str | None = None,
    recommendation: Recommendation | None = None,
) -> int:
    """Replay ``source`` (snapshots or a statistics folder) under ``rules`` (checked:
    :func:`comparison_rules`), print the summary and notes, write the CSV files and figures (their
    time axes in ``timezone``, the statistics'); the exit status. Each replay is kept in ``out`` as
    it finishes; with ``resume`` those already there are not run again."""

    sweep = parse_budgets(rules.budgets)
    source = source if isinstance(source, Path) else list(source)
    note = partial_note(source, rules.drop_partial)
    if rules.drop_partial:  # before anything counts the periods or calibrates the stream model
        source = whole_periods(source)
    reference = reference_name(source, rules.reference)
    todo = with_reference(runs(planners, rules.budgets), reference)
    count = len(todo)
    swept = "" if sweep is None else f", {sweep[0]} " + ",".join(f"{v:g}" for v in sweep[1])
    periods = len(source_periods(source))
    judged = f", judged against the reference {reference}" if reference else ""
    print(f"{periods} periods, {count} replays ({len(planners)} planners{swept}{judged})", flush=True)
    scoring = describe_scoring(rules.replay.decide_on, rules.replay.trigger)
    print(scoring, flush=True)
    if note:
        print(note, flush=True)
    snapshots = source if not isinstance(source, Path) else read_snapshots(source)
    print(node_rate_line(rules.replay.stream, snapshots), flush=True)
    store = ReplayStore(out, resume=resume)
    table = compare(source, planners, rules=rules, runner=runner, store=store)
    if resume:
        print(
            f"resumed: {store.reused} of {count} replays were already in {out}, "
            f"{count - store.reused} run now"
        )
    status = 0
    for planner, rows in table[table["status"] == "ERROR"].groupby("planner", sort=False):
        status = 1
        print(f"albic: internal error in planner {planner}: {rows['error'].iloc[0]}", file=sys.stderr)
    summary = summarize(table)
    print(format_summary(summary))
    print(f"{scoring}; hindsight LD: the same plans on the loads they were made from")
    print(reference_note(summary))
    print(LATENCY_NOTE)
    if (summary[list(NO_PLAN.values())].to_numpy() > 0).any():
        print(
            "no plan: periods the planner was asked for and made none; they keep their placement "
            "and count in the means as a running cluster would see them ('-' for a planner with no plan at all)"
        )
    print(floor_note(table))
    for planner, rows in table.groupby("planner", sort=False):
        fell_back = rows[rows["fallback"].fillna("") != ""]
        if len(fell_back):
            print(
                f"{planner}: {len(fell_back)} of {len(rows)} period(s) planned by another planner "
                f"({fell_back['fallback'].iloc[0]}): those rows are not {planner}'s own result"
            )
        held = rows[rows["status"] == "HELD"]
        if len(held):
            print(
                f"{planner}: {len(held)} of {len(rows)} period(s) HELD: a plan was made but did not pay "
                "(--trigger gain), so the placement was kept"
            )
        for kind in NO_PLAN:
            failed = rows[rows["status"] == kind]
            if len(failed):
                print(
                    f"{planner}: {len(failed)} of {len(rows)} period(s) {kind}, e.g. {failed['error'].iloc[0]}"
                )
    store.write(table)
    atomic_write_text(out / "summary.csv", summary.to_csv())
    figures = plot.standard_figures(table, out, timezone=timezone)
    print(f"wrote {out}/summary.csv, replay.csv and figures {', '.join(p.name for p in figures)}")
    print(verdict(summary))
    if recommendation is not None:
        print(held_out_note(recommendation, table))
    return status


def held_out_note(recommendation: Recommendation, table) -> str:
    """The recommendation's held-out figures computed again from this comparison, beside those
    its file holds."""
    again, said = recommendation.held_out_of(table), recommendation.held_out
    return (
        f"held out {said['periods']} periods ({said['first']} .. {said['last']}): mean load distance "
        f"{again['mean_load_distance_pct']:.2f} % and {again['total_moves']} moves now, "
        f"{said['mean_load_distance_pct']:.2f} % and {said['total_moves']} moves in the recommendation"
    )


def stream_model(args: argparse.Namespace) -> StreamModel:
    """The stream model of --bandwidth, --node-rate and --target-utilisation."""
    return StreamModel(
        bandwidth=args.bandwidth, node_rate=args.node_rate, target_utilisation=args.target_utilisation
    )


def comparison_rules(args: argparse.Namespace) -> CompareRules:
    """The comparison's rules of --budgets, --reference, --drop-partial, --decide-on, --trigger,
    --remote-cost and the stream model's options, built once and checked before any work."""
    replayed = ReplayRules(
        decide_on=args.decide_on,
        trigger=args.trigger,
        remote_cost=args.remote_cost,
        stream=stream_model(args),
    )
    rules = CompareRules(
        budgets=args.budgets, reference=args.reference, drop_partial=args.drop_partial, replay=replayed
    )
    return rules.checked()


def flag(setting: str, value: str | None = None) -> str:
    """How the command line's messages name a setting (``--jobs``) or a setting's value
    (``--engine spark``): as its option (:func:`albic.spark.compare_engine.runner_for`)."""
    option = "--" + setting.replace("_", "-")
    return option if value is None else f"{option} {value}"


def engine_runner(args: argparse.Namespace, command: str) -> Runner:
    """The runner of ``--engine``, ``--jobs``, ``--master`` and ``--conf``, every option checked
    before any work (:func:`~albic.spark.compare_engine.runner_for`, as ``albic.compare`` picks
    it)."""
    conf = spark_settings(args.conf)
    if args.engine == "spark":
        need("pyspark", f"'albic {command} --engine spark'")  # a missing extra fails before any work
    return runner_for(args.engine, jobs=args.jobs, master=args.master, conf=conf, named=flag)


def check_folders(args: argparse.Namespace) -> None:
    """The statistics folder has periods, and --out is not that folder."""
    if not period_labels(args.stats):  # first: it names a missing, special or looping folder
        raise AlbicError(f"{args.stats}: the statistics have no periods")
    if os.path.realpath(args.out) == os.path.realpath(args.stats):  # realpath: a link loop does not raise
        raise AlbicError(f"--out {args.out} is the statistics folder itself; choose another folder")


def run(args: argparse.Namespace) -> int:

    started = time.perf_counter()
    recommendation = None
    if args.recommendation is not None:
        if args.planners:
            raise UsageError("--recommendation names the planner itself: give it without --planner")
        recommendation = read_recommendation(args.recommendation)
        args.planners = [recommendation.spec]
        args.decide_on, args.trigger, args.reference = (
            recommendation.decide_on,
            recommendation.trigger,
            recommendation.reference or "none",
        )
    elif not args.planners:
        raise UsageError("give at least one --planner (or --recommendation FILE)")
    planners = planner_specs(args.planners, args.time_limit)
    rules = comparison_rules(args)
    need("matplotlib", "'albic compare' (its figures)")  # before any replay, not after the CSVs
    runner = engine_runner(args, "compare")
    check_folders(args)
    if args.current is not None:
        rules = CompareRules.of(rules, {"initial": read_placement(args.current, read_period(args.stats, 0))})
    status = compare_and_write(
        args.stats,
        planners,
        rules,
        args.out,
        runner=runner,
        resume=args.resume,
        timezone=read_manifest(args.stats).get("timezone", "UTC"),
        recommendation=recommendation,
    )
    print(f"({time.perf_counter() - started:.1f}s in all)")
    return status
