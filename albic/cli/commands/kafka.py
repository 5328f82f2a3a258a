"""Kafka partition replicas in and out of albic.

    albic kafka import LOG_DIRS.json [--rates RATES.csv] [--current REASSIGNMENT.json]
                       [--remove ID,...] [--add ID,...] --out SNAPSHOT.json
    albic kafka export PLAN.json --out REASSIGNMENT.json

``import`` reads what ``kafka-log-dirs.sh --describe`` prints and writes a snapshot with one key
group per replica (``TOPIC-PARTITION/POSITION``, spread over distinct brokers); ``--rates`` gives
each partition's load (CSV ``topic,partition,rate``; without it the load is the replica's size);
``--current`` gives the replica order (a ``kafka-reassign-partitions.sh`` file; without it,
ascending broker id); ``--remove`` marks brokers to empty, ``--add`` adds empty brokers. Plan it
with a planner that honours replicas (``milp``, ``albic``, ``flux``). ``export`` writes the
``kafka-reassign-partitions.sh --execute --reassignment-json-file`` input for the partitions whose
replicas move, keeping each partition's replica order except where a replica's broker changed.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from albic.io import atomic_write_text, dumps, read_plan, write_snapshot
from albic.rollout import kafka

COMMAND = "kafka"
HELP = "import a Kafka cluster (kafka-log-dirs) as a snapshot; export a plan as a reassignment"


def _ids(text: str) -> list[str]:
    ids = [part.strip() for part in text.split(",") if part.strip()]
    if not ids or not all(i.isdigit() for i in ids):
        raise argparse.ArgumentTypeError(f"expected broker ids like 1,2,3, got {text!r}")
    return ids


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(metavar="ACTION", required=True)
    imp = sub.add_parser("import", help="kafka-log-dirs JSON -> snapshot")
    imp.add_argument("log_dirs", type=Path, metavar="LOG_DIRS.json")
    imp.add_argument("--rates", type=Path, metavar="RATES.csv", help="topic,partition,rate per line")
    imp.add_argument(
        "--current",
        type=Path,
        metavar="REASSIGNMENT.json",
        help="the current replica order (kafka-reassign-partitions format)",
    )
    imp.add_argument("--remove", type=_ids, default=[], metavar="ID,...", help="brokers to empty")
    imp.add_argument("--add", type=_ids, default=[], metavar="ID,...", help="new, empty brokers")
    imp.add_argument("--out", type=Path, required=True, metavar="SNAPSHOT.json")
    imp.set_defaults(run=_run_import)
    exp = sub.add_parser("export", help="plan -> kafka-reassign-partitions JSON")
    exp.add_argument("plan", type=Path, metavar="PLAN.json")
    exp.add_argument("--out", type=Path, required=True, metavar="REASSIGNMENT.json")
    exp.set_defaults(run=_run_export)


def run(args: argparse.Namespace) -> int:  # the sub-actions set their own run
    return args.run(args)


def _run_import(args: argparse.Namespace) -> int:

    snapshot = kafka.snapshot_from_log_dirs(
        kafka.read_log_dirs(args.log_dirs),
        rates=kafka.read_rates(args.rates) if args.rates else None,
        current=kafka.read_current(args.current) if args.current else None,
        remove=args.remove,
        add=args.add,
    )
    write_snapshot(snapshot, args.out)
    partitions = {kg.spread for kg in snapshot.key_groups}
    removing = [n.id for n in snapshot.nodes if n.removing]
    print(
        f"{len(snapshot.nodes)} brokers ({', '.join(removing) or 'none'} removing), "
        f"{len(partitions)} partitions, {len(snapshot.key_groups)} replicas -> {args.out}"
    )
    return 0


def _run_export(args: argparse.Namespace) -> int:

    plan = read_plan(args.plan)
    current = dict(plan.assignment)
    current.update({m.key_group: m.source for m in plan.moves})
    document = kafka.reassignment(plan.assignment, current)
    atomic_write_text(args.out, dumps(document) + "\n")
    print(
        f"{len(document['partitions'])} partitions to reassign ({len(plan.moves)} replica moves) "
        f"-> {args.out}"
    )
    return 0
