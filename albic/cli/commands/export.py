"""Write a plan in a stream processor's own terms.

    albic export flink PLAN.json --snapshot SNAPSHOT|STATS_DIR [--period P] [--max-parallelism N]
                       [--out RANGES.json]
    albic export flink ADVICE.json [--out RANGES.json]
    albic export flink PLAN.json --custom-assignment [--snapshot ...] [--out TABLE.json]

``flink`` writes exactly what stock Flink does for the parallelism the plan names: its nodes holding
an operator's key groups are the subtasks, and each subtask owns the range Flink's
``KeyGroupRangeAssignment`` gives it -- nothing else can be told to a stock Flink job. A plan whose
key-group -> node assignment is Flink's split at no parallelism is refused (exit 2) with how many
key groups differ and the nearest parallelism; plan with ``flink_default`` or take the parallelism
``albic flink advise`` recommends (its ADVICE.json exports directly). ``--snapshot`` names the
snapshot or statistics folder the plan was made from: its key groups must have been made with
Flink's hash (``hash = "flink"`` in the ``albic stats`` spec), else the export is refused, naming
the hash. The maximum parallelism is ``--max-parallelism``, else the statistics' ``max_parallelism``,
else Flink's default for the parallelism (``computeDefaultMaxParallelism``, 128 up to 85).

``--custom-assignment`` writes the plan as an explicit key-group table (each node's runs of key
groups), labelled as not stock Flink: for engines that take one -- Flink with a custom key-group
assignment, Storm or Kafka Streams with a custom partitioner.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from albic.base.errors import InputFileError, NotStockFlinkError, UsageError
from albic.cli.period_options import add_made_for_arguments
from albic.core.flink_keys import flink_key_group_ranges
from albic.io import atomic_write_text, check_writable, dumps, read_plan
from albic.io.plan_for import read_plan_for
from albic.io.reader import read_input_json
from albic.rollout import flink


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(metavar="ENGINE", required=True)
    exp = sub.add_parser("flink", help="stock Flink's key-group ranges (or --custom-assignment)")
    exp.add_argument("plan", type=Path, metavar="PLAN.json|ADVICE.json")
    add_made_for_arguments(exp, required=False)
    exp.add_argument(
        "--max-parallelism",
        type=int,
        metavar="N",
        help="the job's maximum parallelism (default: the statistics', else Flink's default)",
    )
    exp.add_argument(
        "--custom-assignment", action="store_true", help="write an explicit key-group table (not stock Flink)"
    )
    exp.add_argument(
        "--out", type=Path, metavar="FILE.json", help="write it here (default: print it as JSON)"
    )
    exp.set_defaults(run=_run_flink)


def run(args: argparse.Namespace) -> int:
    return args.run(args)


def _advice_ranges(path: Path, advice: dict, max_parallelism: int | None) -> dict:
    if advice.get("recommended") is None:
        raise UsageError(
            f"{path}: recommended is null ({advice.get('reason')}); there is no parallelism to export"
        )
    n, p = advice["max_parallelism"], advice["recommended"]
    if max_parallelism is not None and max_parallelism != n:
        raise UsageError(
            f"{path}: the advice is for maximum parallelism {n}, not --max-parallelism "
            f"{max_parallelism}; advise again with it"
        )
    return {
        advice["operator"]: {
            "max_parallelism": n,
            "max_parallelism_from": advice["max_parallelism_from"],
            "parallelism": p,
            "ranges": [
                {"subtask": s, "node": None, "start": a, "end": b}
                for s, (a, b) in enumerate(flink_key_group_ranges(n, p))
            ],
        }
    }


def _run_flink(args: argparse.Namespace) -> int:
    if args.out is not None:
        check_writable(args.out)
    try:
        head = read_input_json(args.plan, "plan file")
    except InputFileError:
        head = None  # read_plan below says what is wrong, in a plan file's words
    if isinstance(head, dict) and head.get("schema") == flink.ADVICE_SCHEMA:
        if args.custom_assignment or args.snapshot:
            raise UsageError(
                f"{args.plan} is an advice: it exports as stock Flink ranges only "
                "(no --custom-assignment, no --snapshot)"
            )
        operators = _advice_ranges(args.plan, head, args.max_parallelism)
        document = {
            "schema": flink.RANGES_SCHEMA,
            "kind": "stock Flink (KeyGroupRangeAssignment)",
            "source": "advice",
            "key_hash": "flink",
            "operators": operators,
        }
        return _write(args, document)
    if args.snapshot:
        plan, snapshot = read_plan_for(args.plan, args.snapshot, args.period, moves=False, force=args.force)
    else:
        plan, snapshot = read_plan(args.plan), None
    key_groups = flink.flink_key_groups(snapshot, plan.assignment)
    declared = {} if snapshot is None else {op.name: op for op in snapshot.operators}
    if args.custom_assignment:
        hashes = {name: op.key_hash for name, op in declared.items()}
        document = flink.custom_assignment(plan.assignment, key_groups, hashes)
        return _write(args, document, custom=True)
    if snapshot is None:
        raise UsageError(
            "stock-Flink export needs --snapshot SNAPSHOT|STATS_DIR (what the plan was "
            "made from) to know which hash made its key groups; or --custom-assignment "
            "for an explicit table"
        )
    operators = sorted({op for op, _ in key_groups.values()})
    flink.check_flink_hash(snapshot, operators, where=f"--snapshot {args.snapshot}")
    sizes = {name: sum(1 for kg in snapshot.key_groups if kg.operator == name) for name in operators}
    given = {name: args.max_parallelism for name in operators} if args.max_parallelism else None
    stated = {name: declared[name].max_parallelism for name in operators}
    try:
        ranges = flink.stock_flink_ranges(
            plan.assignment, key_groups, sizes=sizes, max_parallelism=given, stated=stated
        )
    except NotStockFlinkError as err:
        raise NotStockFlinkError(f"{args.plan}: {err}") from None
    document = {
        "schema": flink.RANGES_SCHEMA,
        "kind": "stock Flink (KeyGroupRangeAssignment)",
        "planner": plan.planner,
        "key_hash": "flink",
        "operators": ranges,
    }
    return _write(args, document)


def _write(args: argparse.Namespace, document: dict, custom: bool = False) -> int:
    text = dumps(document) + "\n"
    if args.out is None:
        print(text, end="")
        return 0
    atomic_write_text(args.out, text)
    for op, body in document["operators"].items():
        if custom:
            cut = "; ".join(
                f"{node} " + ", ".join(f"{a}-{b}" if a != b else f"{a}" for a, b in runs)
                for node, runs in body["nodes"].items()
            )
            print(
                f"{op}: custom assignment (not stock Flink) of {body['key_groups']} key groups over "
                f"{len(body['nodes'])} nodes: {cut}"
            )
        else:
            cut = ", ".join(
                f"{r['start']}-{r['end']}" + (f" ({r['node']})" if r["node"] else "") for r in body["ranges"]
            )
            print(
                f"{op}: stock Flink at parallelism {body['parallelism']}, maximum parallelism "
                f"{body['max_parallelism']}: {cut}"
            )
    print(f"-> {args.out}")
    return 0
