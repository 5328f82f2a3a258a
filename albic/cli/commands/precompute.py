"""PMC: precompute the projected migration cost of every balanced partitioning on Spark.

TASKS is a snapshot JSON (albic.snapshot/1; with --operator when it has several operators) or a CSV
with ``load`` and ``state_size`` columns in task (index) order. MTM is the JSON of ``albic mtm``.
Writes OUT/table.parquet (n, cuts, cost) and OUT/metadata.json; checkpoints (at most every 10 s) in
OUT/_checkpoint so that a killed run resumes when started again with the same inputs. The executors
build the cost rows in one Spark job; the driver keeps them and iterates when they fit
--memory-budget (default: a quarter of spark.driver.memory), else the executors keep them and each
iteration is one Spark job.

Example::

    albic precompute --tasks tasks.csv --mtm mtm.json --tau 1.2 --gamma 0.8 --blocks 16 --out pmc/
"""

from __future__ import annotations

import argparse
from pathlib import Path

from albic.base.errors import AlbicError
from albic.base.progress import spark_progress
from albic.cli.spark_options import add_conf_argument, size_argument, spark_settings
from albic.io import read_snapshot
from albic.io.reader import read_input_csv
from albic.spark.precompute import (
    DEFAULT_MAX_ITERATIONS,
    DEFAULT_MAX_STATES,
    DEFAULT_TOL,
    PrecomputeRequest,
    run_precompute,
)
from albic.spark.session import DEFAULT_MASTER, spark_errors, spark_session
from albic.stats.transitions import read_mtm


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--tasks",
        type=Path,
        required=True,
        metavar="TASKS",
        help="snapshot JSON or CSV with load,state_size per task (index order)",
    )
    parser.add_argument("--operator", help="operator of the snapshot to use (if it has several)")
    parser.add_argument("--mtm", type=Path, required=True, metavar="MTM.json", help="from `albic mtm`")
    parser.add_argument("--tau", type=float, required=True, help="load-balancing threshold")
    parser.add_argument(
        "--gamma", type=float, default=0.8, help="discount factor in [0, 1) (default %(default)g)"
    )
    parser.add_argument("--min-nodes", type=int, help="smallest node count (default: the MTM's)")
    parser.add_argument("--max-nodes", type=int, help="largest node count (default: the MTM's)")
    parser.add_argument("--blocks", type=int, help="coarsen the tasks into this many blocks (approximation)")
    parser.add_argument(
        "--max-states",
        type=int,
        default=DEFAULT_MAX_STATES,
        help="refuse larger state spaces unless coarsened (default %(default)s)",
    )
    parser.add_argument(
        "--tol", type=float, default=DEFAULT_TOL, help="sup-norm tolerance (default %(default)g)"
    )
    parser.add_argument("--max-iterations", type=int, default=DEFAULT_MAX_ITERATIONS)
    parser.add_argument(
        "--memory-budget",
        type=size_argument,
        metavar="SIZE",
        help="the driver keeps the cost rows and iterates when they take at most SIZE (e.g. 2G; "
        "default a quarter of spark.driver.memory, at most half of spark.driver.maxResultSize: 512M "
        "in albic's sessions); beyond it the executors keep them and each iteration is one Spark "
        "job. The table is the same",
    )
    parser.add_argument("--master", help=f"Spark master URL (default {DEFAULT_MASTER}, or spark-submit's)")
    add_conf_argument(parser)
    parser.add_argument("--verbose", action="store_true", help="show Spark's own log")
    parser.add_argument("--out", type=Path, required=True, metavar="DIR")


def read_tasks(path: Path, operator: str | None) -> tuple[list[float], list[float], dict]:
    """Loads and state sizes in index order from a snapshot JSON or a CSV, and what the table is
    for (operator and key-group ids, when known), which the MTM planner checks."""

    if path.suffix == ".json":
        snapshot = read_snapshot(path)
        names = sorted({kg.operator for kg in snapshot.key_groups})
        if operator is None:
            if len(names) != 1:
                raise AlbicError(f"{path} has operators {names}; choose one with --operator")
            operator = names[0]
        kgs = [kg for kg in snapshot.key_groups if kg.operator == operator]
        if not kgs:
            raise AlbicError(f"{path} has no operator {operator!r} (operators: {names})")
        if sorted(kg.index for kg in kgs if kg.index is not None) != list(range(len(kgs))):
            raise AlbicError(f"the key groups of {operator!r} in {path} need indices 0..{len(kgs) - 1}")
        kgs.sort(key=lambda kg: kg.index)
        provenance = {"operator": operator, "key_groups": [kg.id for kg in kgs]}
        return [kg.load for kg in kgs], [kg.state_size for kg in kgs], provenance
    frame = read_input_csv(path, "tasks file", numeric=("load", "state_size"))
    missing = {"load", "state_size"} - set(frame.columns)
    if missing:
        raise AlbicError(f"{path} lacks the columns {sorted(missing)} (has {list(frame.columns)})")
    provenance = {
        "operator": operator,
        "key_groups": frame["id"].astype(str).tolist() if "id" in frame else None,
    }
    return frame["load"].astype(float).tolist(), frame["state_size"].astype(float).tolist(), provenance


def run(args: argparse.Namespace) -> int:

    loads, states, provenance = read_tasks(args.tasks, args.operator)
    mtm = read_mtm(args.mtm)
    spark = spark_session(
        args.master, "albic-precompute", config=spark_settings(args.conf), verbose=args.verbose
    )
    with spark_errors(spark.sparkContext.master), spark_progress(spark, "albic precompute on Spark"):
        request = PrecomputeRequest(
            loads,
            states,
            mtm,
            tau=args.tau,
            gamma=args.gamma,
            out=args.out,
            n_min=args.min_nodes,
            n_max=args.max_nodes,
            blocks=args.blocks,
            max_states=args.max_states,
            tol=args.tol,
            max_iterations=args.max_iterations,
            provenance=provenance,
            memory_budget=args.memory_budget,
        )
        result = run_precompute(request, spark=spark)
    meta = result.metadata
    print(
        f"wrote {meta['states']} projected costs to {args.out} after {meta['iterations']} "
        f"iterations ({'converged' if meta['converged'] else 'NOT converged'})"
    )
    return 0
