"""Backtest planner x budget x decision rule x trigger on a statistics folder, and recommend one.

::

    albic recommend STATS_DIR --out DIR [--train 0.6] [--planner milp --planner flux]
        [--budgets max_moves=5,20] [--decide-on previous --decide-on forecast:mean:24 ...]
        [--trigger always --trigger gain] [--time-limit 0.25] [--tolerance noise] [--jobs 2]

Every candidate (each ``--planner`` at each budget, under each ``--decide-on`` rule and each
``--trigger``) and the reference (the engine's own split; ``--reference``) are replayed over all
periods; the choice is made on the first ``--train`` share of the periods (the least state moved
among the candidates whose mean load distance there is not worse than the best's beyond noise,
or within ``--tolerance`` points of it) and judged on the rest (albic/evaluation/recommend.py). The recommendation may be to keep
the engine's split.

OUT gets recommendation.json (the choice with its parameters, ``decide_on``, ``trigger``, the
training and held-out figures, the runner-up, the plain comparison and the verdict: ``albic compare
STATS_DIR --recommendation OUT/recommendation.json`` replays it and gives its held-out figures),
candidates.csv (every candidate's figures on both parts) and recommendation.png. ``--engine spark``
runs every replay as a Spark task, with the same recommendation.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from albic.base.extras import need
from albic.base.formats import seconds
from albic.cli.commands.compare import check_folders, engine_runner, stream_model
from albic.evaluation import plot
from albic.evaluation.decide import DECIDE_ON_HELP, TRIGGER_HELP
from albic.evaluation.recommend import (
    DEFAULT_BUDGETS,
    DEFAULT_PLANNERS,
    DEFAULT_TIME_LIMIT,
    DEFAULT_TOLERANCE,
    DEFAULT_TRAIN,
    DEFAULT_TRIGGERS,
    RecommendRules,
    recommend,
)
from albic.evaluation.replay import ReplayRules
from albic.evaluation.stream import DEFAULT_BANDWIDTH, PEAK_UTILISATION
from albic.evaluation.verdict import DEFAULT_REFERENCE
from albic.spark.compare_engine import ENGINES


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("stats", type=Path, metavar="STATS_DIR", help="a folder written by 'albic stats'")
    parser.add_argument("--out", type=Path, required=True, metavar="DIR", help="output folder")
    parser.add_argument(
        "--train",
        type=float,
        default=DEFAULT_TRAIN,
        metavar="SHARE",
        help=f"the share of the periods, from the first, the choice is made on (default {DEFAULT_TRAIN:g})",
    )
    parser.add_argument(
        "--planner",
        action="append",
        dest="planners",
        metavar="NAME[:k=v,...]",
        help=f"a candidate planner (repeatable; default {', '.join(DEFAULT_PLANNERS)})",
    )
    parser.add_argument(
        "--budgets", default=DEFAULT_BUDGETS, metavar="PARAMETER=V1,V2,...", help=f"default {DEFAULT_BUDGETS}"
    )
    parser.add_argument(
        "--decide-on",
        action="append",
        metavar="RULE",
        help="a candidate decision rule (repeatable; default previous, forecast:mean:K and "
        "forecast:shrink:K, K a day of periods): " + DECIDE_ON_HELP.replace("%", "%%"),
    )
    parser.add_argument(
        "--trigger",
        action="append",
        metavar="RULE",
        help=f"a candidate trigger (repeatable; default {', '.join(DEFAULT_TRIGGERS)}): "
        + TRIGGER_HELP.replace("%", "%%"),
    )
    parser.add_argument(
        "--time-limit",
        type=float,
        default=DEFAULT_TIME_LIMIT,
        metavar="SECONDS",
        help=f"per-period time limit of the planners that take one (default {DEFAULT_TIME_LIMIT:g})",
    )
    parser.add_argument(
        "--tolerance",
        type=_tolerance,
        default=DEFAULT_TOLERANCE,
        metavar="POINTS|noise",
        help="which candidates balance alike with the best on the training periods (the one moving "
        f"least state is chosen): {DEFAULT_TOLERANCE} (default), those not worse than the best beyond "
        "noise (the paired 95 %% interval of the difference holds 0), or a number of points of mean "
        "load distance",
    )
    parser.add_argument(
        "--reference",
        default=DEFAULT_REFERENCE,
        metavar="NAME",
        help="the engine's own behaviour the candidates are judged against (default: its split by "
        "the statistics' hash), a planner name, or none",
    )
    parser.add_argument(
        "--jobs", type=int, default=1, metavar="N", help="replays at a time (default %(default)s)"
    )
    parser.add_argument("--engine", choices=ENGINES, default="local", help="local (default) or spark")
    parser.add_argument("--master", metavar="URL", help="--engine spark: the Spark master")
    parser.add_argument(
        "--conf", action="append", default=[], metavar="KEY=VALUE", help="--engine spark: a setting"
    )
    parser.set_defaults(bandwidth=DEFAULT_BANDWIDTH, node_rate=None, target_utilisation=PEAK_UTILISATION)


def _tolerance(text: str) -> float | str:
    if text.strip() == "noise":
        return "noise"
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of points or noise, got {text!r}") from None


def recommendation_rules(args: argparse.Namespace) -> RecommendRules:
    """The recommendation's rules of the options, built once and checked before any work."""
    rules = RecommendRules(
        planners=args.planners or list(DEFAULT_PLANNERS),
        budgets=args.budgets,
        decide_on=args.decide_on,
        triggers=args.trigger or list(DEFAULT_TRIGGERS),
        train=args.train,
        tolerance=args.tolerance,
        time_limit=args.time_limit,
        reference=args.reference,
        replay=ReplayRules(stream=stream_model(args)),
    )
    return rules.checked()


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    need("matplotlib", "'albic recommend' (its figure)")
    rules = recommendation_rules(args)
    runner = engine_runner(args, "recommend")
    check_folders(args)
    chosen = recommend(args.stats, rules=rules, runner=runner)
    print(chosen.text())
    written = chosen.write(args.out)
    figure = plot.recommendation_figure(chosen)
    figure.savefig(args.out / "recommendation.png", dpi=110)
    names = ", ".join(p.name for p in [*written, args.out / "recommendation.png"])
    print(f"wrote {args.out}/: {names} ({seconds(time.perf_counter() - started)} in all)")
    return 0
