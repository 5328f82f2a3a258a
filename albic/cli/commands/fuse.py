"""Fuse a snapshot's operators into components (Enorm's Algorithm 1) and print them.

    albic fuse SNAPSHOT.json [--score comm|pa|baseline] [--seed N] [--out COMPONENTS.json]

The operators and their partition attributes come from the snapshot's ``operators``; the rates
between operators are its key-group ``traffic`` summed per operator pair. An operator that only
appears in key groups has no partition attributes and stays alone. Prints one line per component
(its shared partition attributes and its operators) and the share of traffic between components.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from albic.base.errors import InvalidSnapshotError
from albic.base.formats import count, number, percent
from albic.core.model import Operator
from albic.io import atomic_write_text, read_snapshot
from planners.enorm import baseline_fusion, fuse, inter_component_share, operator_rates

COMMAND = "fuse"
HELP = "fuse a snapshot's operators into components (Enorm)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("snapshot", type=Path, metavar="SNAPSHOT.json")
    parser.add_argument(
        "--score",
        choices=["comm", "pa", "baseline"],
        default="comm",
        help="comm: data rate (default); pa: attribute commonness; baseline: the paper's greedy baseline",
    )
    parser.add_argument("--seed", type=int, default=0, help="random restarts of the baseline")
    parser.add_argument(
        "--out", type=Path, metavar="COMPONENTS.json", help="also write the components as JSON"
    )


def run(args: argparse.Namespace) -> int:
    import json

    snapshot = read_snapshot(args.snapshot)
    operators = list(snapshot.operators)
    known = {op.name for op in operators}
    operators += [
        Operator(name)
        for name in dict.fromkeys(kg.operator for kg in snapshot.key_groups)
        if name not in known
    ]
    if not operators:
        raise InvalidSnapshotError(f"{args.snapshot} has no operators and no key groups to fuse")
    rates = operator_rates(snapshot)
    if args.score == "baseline":
        components = baseline_fusion(operators, rates, seed=args.seed)
    else:
        components = fuse(operators, rates, score=args.score)
    attributes = {op.name: set(op.partition_attributes) for op in operators}
    rows = []
    for members in components:
        shared = sorted(set.intersection(*(attributes[m] for m in members)))
        rows.append({"operators": members, "partition_attributes": shared})
    share = inter_component_share(components, rates)
    for c, row in enumerate(rows, 1):
        pa = ", ".join(row["partition_attributes"]) or "-"
        print(f"component {c} [{pa}]: {', '.join(row['operators'])}")
    print(
        f"{count(len(rows), 'component')} of {count(len(operators), 'operator')} ({args.score}); "
        f"inter-component traffic {percent(100 * share)} of {number(sum(rates.values()))} tuples/s"
    )
    if args.out is not None:
        atomic_write_text(
            args.out,
            json.dumps({"score": args.score, "components": rows, "inter_component_share": share}, indent=2)
            + "\n",
        )
    return 0
