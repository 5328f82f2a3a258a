"""Fuse a snapshot's operators into components (Enorm's Algorithm 1) and print them.

    albic fuse SNAPSHOT.json [--score comm|pa|baseline] [--seed N] [--out COMPONENTS.json]

The topology is the snapshot's operator graph (``Snapshot.operator_graph()``): its ``operators``
with their partition attributes, and the rates between operators, its key-group ``traffic`` summed
per operator pair. Without declared operators, those the key groups name, with no partition
attributes: each stays alone. A topology with a cycle is refused (one line naming the cycle).
Prints one line per component (its shared partition attributes and its operators) and the share
of traffic between components.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from albic.base.errors import InvalidSnapshotError, TopologyCycleError
from albic.base.formats import count, number, percent
from albic.io import atomic_write_text, read_snapshot
from albic.planners.enorm import baseline_fusion, fuse, inter_component_share, operator_rates


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
    snapshot = read_snapshot(args.snapshot)
    graph = snapshot.operator_graph()
    if not graph:
        raise InvalidSnapshotError(f"{args.snapshot} has no operators and no key groups to fuse")
    rates = operator_rates(snapshot)
    try:
        if args.score == "baseline":
            components = baseline_fusion(graph, seed=args.seed)
        else:
            components = fuse(graph, score=args.score)
    except TopologyCycleError as err:
        raise TopologyCycleError(f"{args.snapshot}: {err}", err.cycle) from None
    attributes = {name: set(pa) for name, pa in graph.nodes(data="partition_attributes")}
    rows = []
    for members in components:
        shared = sorted(set.intersection(*(attributes[m] for m in members)))
        rows.append({"operators": members, "partition_attributes": shared})
    share = inter_component_share(components, rates)
    for c, row in enumerate(rows, 1):
        pa = ", ".join(row["partition_attributes"]) or "-"
        print(f"component {c} [{pa}]: {', '.join(row['operators'])}")
    print(
        f"{count(len(rows), 'component')} of {count(len(graph), 'operator')} ({args.score}); "
        f"inter-component traffic {percent(100 * share)} of {number(sum(rates.values()))} tuples/s"
    )
    if args.out is not None:
        atomic_write_text(
            args.out,
            json.dumps({"score": args.score, "components": rows, "inter_component_share": share}, indent=2)
            + "\n",
        )
    return 0
