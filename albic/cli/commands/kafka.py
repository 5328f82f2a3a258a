"""Kafka partition replicas in and out of albic.

    albic kafka import LOG_DIRS.json [--rates RATES.csv] [--current REASSIGNMENT.json]
                       [--racks RACKS.csv] [--remove ID,...] [--add ID,...] --out SNAPSHOT.json
    albic kafka export PLAN.json --out REASSIGNMENT.json
    albic kafka export PLAN.json --batches DIR --snapshot SNAPSHOT.json [--max-per-broker K]
                       [--throttle BYTES/S]
    albic kafka verify PLAN.json LOG_DIRS_AFTER.json

``import`` reads the log-dirs file as ``kafka-log-dirs.sh --describe`` prints it (status lines and
one-line JSON, or the JSON pretty-printed) and writes a snapshot with one key group per replica
(``TOPIC-PARTITION/POSITION``, spread over distinct brokers); ``--rates`` gives each partition's
load (CSV ``topic,partition,rate``; without it the load is the replica's size); ``--current`` gives
the replica order (a ``kafka-reassign-partitions.sh`` file; without it, ascending broker id);
``--racks`` each broker's rack (CSV ``broker,rack``, as ``broker.rack``: the planners tagged
``racks``, ``milp``, ``albic`` and ``flux``, then spread each partition's replicas over racks);
``--remove`` marks brokers to empty, ``--add`` adds empty brokers.

``export`` writes the ``kafka-reassign-partitions.sh --execute --reassignment-json-file`` input for
the partitions whose replicas change. A reorder of a partition's replicas on the same brokers is a
leadership change, not a move: it copies nothing and is listed apart. A plan with nothing to
reassign says so and writes no file (Kafka refuses an empty list). ``--batches DIR`` writes one
file per batch instead, in order (``batch-01.json`` ...; ``leadership.json`` last), with
``batches.json`` (each batch's partitions, bytes and estimated duration at ``--throttle``) and
``run.sh`` (the command lines); no broker takes part in more than K partition moves of one batch
(default 5, Cruise Control's). A plan file does not carry its snapshot (loads, removing brokers), so
``--batches`` takes ``--snapshot``, as ``albic schedule`` does.

``verify`` compares a log-dirs file taken afterwards with the plan: partitions not yet where the
plan put them, replicas the plan did not ask for. Exit 0 only when they agree, 1 when they differ.
"""

from __future__ import annotations

import argparse
import os
import shutil
from pathlib import Path

from albic.base.errors import InvalidPlanFileError, InvalidSnapshotError, UsageError
from albic.base.files import make_folder
from albic.cli.period_options import add_made_for_arguments
from albic.io import atomic_write_text, check_writable, dumps, read_plan, write_snapshot
from albic.io.plan_for import read_plan_for
from albic.rollout import kafka
from albic.rollout.schedule import DEFAULT_MAX_PER_NODE


def _ids(text: str) -> list[str]:
    ids = [part.strip() for part in text.split(",") if part.strip()]
    if not ids or not all(i.isdigit() for i in ids):
        raise argparse.ArgumentTypeError(f"expected broker ids like 1,2,3, got {text!r}")
    return ids


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(metavar="ACTION", required=True)
    imp = sub.add_parser("import", help="kafka-log-dirs output -> snapshot")
    imp.add_argument("log_dirs", type=Path, metavar="LOG_DIRS.json")
    imp.add_argument("--rates", type=Path, metavar="RATES.csv", help="topic,partition,rate per line")
    imp.add_argument(
        "--current",
        type=Path,
        metavar="REASSIGNMENT.json",
        help="the current replica order (kafka-reassign-partitions format)",
    )
    imp.add_argument("--racks", type=Path, metavar="RACKS.csv", help="broker,rack per line (broker.rack)")
    imp.add_argument("--remove", type=_ids, default=[], metavar="ID,...", help="brokers to empty")
    imp.add_argument("--add", type=_ids, default=[], metavar="ID,...", help="new, empty brokers")
    imp.add_argument("--out", type=Path, required=True, metavar="SNAPSHOT.json")
    imp.set_defaults(run=_run_import)
    exp = sub.add_parser("export", help="plan -> kafka-reassign-partitions files")
    exp.add_argument("plan", type=Path, metavar="PLAN.json")
    exp.add_argument("--out", type=Path, metavar="REASSIGNMENT.json", help="one reassignment file")
    exp.add_argument("--batches", type=Path, metavar="DIR", help="one reassignment file per batch, in DIR")
    add_made_for_arguments(
        exp, required=False, snapshot_help=" (with --batches: its loads and removing brokers order them)"
    )
    exp.add_argument(
        "--max-per-broker",
        type=int,
        default=DEFAULT_MAX_PER_NODE,
        metavar="K",
        help=f"partition moves a broker takes part in per batch (default {DEFAULT_MAX_PER_NODE})",
    )
    exp.add_argument(
        "--throttle",
        type=int,
        metavar="BYTES/S",
        help="kafka-reassign-partitions.sh --throttle, to estimate each batch's duration",
    )
    exp.set_defaults(run=_run_export)
    ver = sub.add_parser("verify", help="does the cluster (a log-dirs file taken after) match the plan?")
    ver.add_argument("plan", type=Path, metavar="PLAN.json")
    ver.add_argument("log_dirs", type=Path, metavar="LOG_DIRS_AFTER.json")
    ver.set_defaults(run=_run_verify)


def run(args: argparse.Namespace) -> int:  # the sub-actions set their own run
    return args.run(args)


def _run_import(args: argparse.Namespace) -> int:
    check_writable(args.out)
    snapshot = kafka.snapshot_from_log_dirs(
        kafka.read_log_dirs(args.log_dirs),
        rates=kafka.read_rates(args.rates) if args.rates else None,
        current=kafka.read_current(args.current) if args.current else None,
        racks=kafka.read_racks(args.racks) if args.racks else None,
        remove=args.remove,
        add=args.add,
        sources={
            name: str(path)
            for name, path in (("log_dirs", args.log_dirs), ("rates", args.rates), ("racks", args.racks))
            if path
        },
    )
    write_snapshot(snapshot, args.out)
    partitions = {kg.spread for kg in snapshot.key_groups}
    removing = [n.id for n in snapshot.nodes if n.removing]
    racks = sorted({n.rack for n in snapshot.nodes if n.rack is not None})
    on_racks = f"; racks {', '.join(racks)}" if racks else ""
    print(
        f"{len(snapshot.nodes)} brokers ({', '.join(removing) or 'none'} removing{on_racks}), "
        f"{len(partitions)} partitions, {len(snapshot.key_groups)} replicas -> {args.out}"
    )
    return 0


def _summary(changes: dict) -> str:
    moves, lead = changes["moves"], changes["leadership"]
    copies = sum(len(e["added"]) for e in moves)
    size = sum(e["bytes"] for e in moves)
    text = f"{len(moves)} partitions to move ({copies} replica copies, {size:,.0f} bytes)"
    if lead:
        names = ", ".join(f"{e['topic']}-{e['partition']}" for e in lead)
        text += (
            f"; {len(lead)} leadership-only reorders (same brokers, new preferred leader: "
            f"nothing copied): {names}"
        )
    return text


def _run_export(args: argparse.Namespace) -> int:
    if (args.out is None) == (args.batches is None):
        raise UsageError("kafka export writes either --out REASSIGNMENT.json or --batches DIR")
    if args.batches is not None and args.snapshot is None:
        raise UsageError(
            "--batches needs --snapshot SNAPSHOT.json (the snapshot the plan was made for: "
            "loads and removing brokers order the batches, as in albic schedule)"
        )
    if args.out is not None:
        check_writable(args.out)
    # Every input is read before anything is decided, so that a bad --snapshot never passes
    # unnoticed because the plan happens to move nothing.
    if args.snapshot is not None:
        plan, snapshot = read_plan_for(args.plan, args.snapshot, args.period, force=args.force)
    else:
        plan, snapshot = read_plan(args.plan), None
    changes = _changes(plan, args.plan)
    if not changes["moves"] and not changes["leadership"]:
        print(
            "nothing to reassign: the plan moves no replica; no file written "
            "(kafka-reassign-partitions.sh refuses an empty list)"
        )
        return 0
    if args.out is not None:
        document = kafka.reassignment(
            plan.assignment, {**plan.assignment, **{m.key_group: m.source for m in plan.moves}}
        )
        atomic_write_text(args.out, dumps(document) + "\n")
        print(f"{_summary(changes)} -> {args.out}")
        return 0
    result = kafka.kafka_batches(plan, snapshot, max_per_broker=args.max_per_broker, throttle=args.throttle)
    _write_batches(args.batches, result, args.throttle)
    for b in result["batches"]:
        took = "" if b["seconds"] is None else f", about {b['seconds']:.0f} s at the throttle"
        print(
            f"batch {b['batch']}: {len(b['partitions'])} partitions, {b['bytes']:,.0f} bytes{took}"
            f" -> {args.batches / _name(b['batch'])}"
        )
    if result["leadership"]:
        print(
            f"then leadership: {len(result['leadership']['partitions'])} reorders -> "
            f"{args.batches / 'leadership.json'}"
        )
    total = "" if result["seconds"] is None else f", about {result['seconds']:.0f} s in all"
    print(
        f"{_summary(changes)}; {len(result['batches'])} batches of at most {args.max_per_broker} "
        f"partition moves per broker{total}; commands in {args.batches / 'run.sh'}"
    )
    return 0


def _name(batch: int) -> str:
    return f"batch-{batch:02d}.json"


def _write_batches(folder: Path, result: dict, throttle: int | None) -> None:
    """Every file of the batches, built in a temporary folder next to ``folder`` and renamed into
    place: a failure leaves nothing half-written. ``folder`` must not exist or be empty."""
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise UsageError(
            f"--batches {folder}: exists and is not an empty folder; give a new folder "
            "(old batch files beside new ones would be run too)"
        )
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = make_folder(folder)
    try:
        lines = [
            "#!/bin/sh",
            "# The reassignment in batches, one after the other (albic kafka export --batches).",
            "# Set BOOTSTRAP=host:port. Run each --verify until it reports every partition",
            "# completed before the next batch; the --verify that sees it complete removes the throttle.",
            "set -e",
            ': "${BOOTSTRAP:?set BOOTSTRAP=host:port of a broker}"',
            'here=$(dirname "$0")',
        ]
        throttle_arg = "" if throttle is None else f" --throttle {throttle}"
        manifest = []
        for b in result["batches"]:
            name = _name(b["batch"])
            atomic_write_text(tmp / name, dumps(b["reassignment"]) + "\n")
            lines.append(
                f"# batch {b['batch']}: {len(b['partitions'])} partitions, {b['bytes']:,.0f} bytes"
                + ("" if b["seconds"] is None else f", about {b['seconds']:.0f} s")
            )
            lines.append(
                f'kafka-reassign-partitions.sh --bootstrap-server "$BOOTSTRAP" '
                f'--reassignment-json-file "$here/{name}" --execute{throttle_arg}'
            )
            lines.append(
                f'kafka-reassign-partitions.sh --bootstrap-server "$BOOTSTRAP" '
                f'--reassignment-json-file "$here/{name}" --verify'
            )
            manifest.append({**{k: v for k, v in b.items() if k != "reassignment"}, "file": name})
        if result["leadership"]:
            atomic_write_text(tmp / "leadership.json", dumps(result["leadership"]) + "\n")
            election = {
                "partitions": [
                    {"topic": p["topic"], "partition": p["partition"]}
                    for p in result["leadership"]["partitions"]
                ]
            }
            atomic_write_text(tmp / "leader-election.json", dumps(election) + "\n")
            lines.append("# leadership: same brokers, new order (nothing copied), then the preferred leaders")
            lines.append(
                'kafka-reassign-partitions.sh --bootstrap-server "$BOOTSTRAP" '
                '--reassignment-json-file "$here/leadership.json" --execute'
            )
            lines.append(
                'kafka-leader-election.sh --bootstrap-server "$BOOTSTRAP" --election-type PREFERRED '
                '--path-to-json-file "$here/leader-election.json"'
            )
        document = {
            "schema": "albic.kafka-batches/1",
            "max_per_broker": result["max_per_broker"],
            "throttle": throttle,
            "seconds": result["seconds"],
            "batches": manifest,
            "leadership": None
            if not result["leadership"]
            else {"file": "leadership.json", "partitions": result["leadership_partitions"]},
        }
        atomic_write_text(tmp / "batches.json", dumps(document) + "\n")
        atomic_write_text(tmp / "run.sh", "\n".join(lines) + "\n")
        os.chmod(tmp / "run.sh", 0o755)
        if folder.exists():
            folder.rmdir()
        os.replace(tmp, folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _changes(plan, path: Path) -> dict:
    """The plan in Kafka's terms; a plan that is not of a Kafka snapshot is refused naming its file."""
    try:
        return kafka.partition_changes(plan)
    except InvalidSnapshotError as err:
        raise InvalidPlanFileError(err.problems, subject=f"in {path}") from None


def _run_verify(args: argparse.Namespace) -> int:
    plan = read_plan(args.plan)
    _changes(plan, args.plan)
    report = kafka.verify(plan, kafka.read_log_dirs(args.log_dirs), source=str(args.log_dirs))
    for e in report["unmoved"]:
        parts = []
        if e["missing"]:
            parts.append(f"no replica yet on {', '.join(map(str, e['missing']))}")
        if e["extra"]:
            parts.append(f"replicas the plan did not ask for on {', '.join(map(str, e['extra']))}")
        print(
            f"{e['topic']}-{e['partition']}: expected brokers {e['expected']}, found {e['found']}: "
            + "; ".join(parts)
        )
    if report["not_queried"]:
        print(f"note: brokers {', '.join(map(str, report['not_queried']))} are not in the log-dirs file")
    if report["unplanned"]:
        print(
            f"note: {len(report['unplanned'])} partitions are not in the plan (not compared): "
            + ", ".join(report["unplanned"][:10])
        )
    if report["agree"]:
        print(
            f"the cluster agrees with the plan: every one of its {len(kafka.partition_changes(plan)['moves'])} "
            "moved partitions and the rest are where the plan put them"
        )
        return 0
    print(f"{len(report['unmoved'])} partitions differ from the plan")
    return 1
