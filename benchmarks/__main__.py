"""Run the benchmarks and print their tables: `python -m benchmarks [NAME ...]` (default: all)."""

import argparse
import importlib
import inspect

# name -> module in this package; each module has run(...) -> str (a table with same-run baselines)
BENCHMARKS = {
    "planners": "planner_speed",
    "partitioners": "partitioner_speed",
    "elasticutor": "elasticutor_speed",
    "ssm": "ssm_speed",
    "milp": "milp_vs_flux",
    "milp-optimal": "milp_optimal",
    "albic": "albic_bound",
    "stats": "stats_speed",
    "stats-large": "stats_large",
    "compare": "compare_speed",
    "fuzz": "fuzz",
    "unionfind": "union_find",
    "decisions": "decisions",
    "search-constants": "search_constants",
}
# Run only when named: stats-large writes a 1 GiB trace, search-constants sweeps milp's and
# albic's constants; each takes minutes.
ONLY_WHEN_NAMED = ("stats-large", "search-constants")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument(
        "names",
        nargs="*",
        choices=[[], *BENCHMARKS],
        metavar="NAME",
        help=f"benchmarks to run, from: {', '.join(BENCHMARKS)} (default: all)",
    )
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per cell (median kept)")
    parser.add_argument(
        "--full",
        action="store_true",
        help="full grids where a benchmark has a quick and a full one (milp, stats, compare, "
        "search-constants; albic: the forward figures too)",
    )
    parser.add_argument(
        "--scale",
        action="store_true",
        help="milp: production sizes (up to 1,000 nodes x 100,000 key groups) instead",
    )
    parser.add_argument(
        "--backends",
        action="store_true",
        help="milp: only the table of MILP backends (CP-SAT, CBC, HiGHS, SCIP, PuLP) "
        "on one instance, at 1 s and 5 s",
    )
    parser.add_argument("--examples", type=int, help="fuzz: random snapshots per planner (default 5000)")
    parser.add_argument(
        "--baseline",
        metavar="PATH",
        help="ssm: also time PMC with the albic checked out at PATH (e.g. a git worktree of an "
        "earlier commit), in the same rounds",
    )
    parser.add_argument("--days", type=int, help="albic: the first N days of each week (default 7)")
    parser.add_argument("--jobs", type=int, help="albic: replays at a time (default 1); decisions: default 2")
    parser.add_argument(
        "--seeds", type=int, help="albic: seeds a replay, figures over all of them (default 3)"
    )
    parser.add_argument(
        "--stats",
        action="append",
        metavar="DIR",
        help="decisions: also recommend on this statistics folder (repeatable)",
    )
    args = parser.parse_args()
    for name in args.names or [n for n in BENCHMARKS if n not in ONLY_WHEN_NAMED]:
        run = importlib.import_module(f"benchmarks.{BENCHMARKS[name]}").run
        accepted = inspect.signature(run).parameters
        kwargs = {
            k: v
            for k, v in (
                ("repeat", args.repeat),
                ("full", args.full),
                ("scale", args.scale),
                ("examples", args.examples),
                ("backends_only", args.backends),
                ("baseline", args.baseline),
                ("days", args.days),
                ("jobs", args.jobs),
                ("seeds", args.seeds),
                ("stats", args.stats),
            )
            if k in accepted and v is not None
        }
        print(f"== {name}")
        print(run(**kwargs))
        print()


if __name__ == "__main__":
    main()
