"""Plain-text and CSV reports for people: a snapshot in one line, plans side by side.

Example
-------
>>> from albic.model import Node, KeyGroup, Snapshot
>>> snap = Snapshot([Node("n1"), Node("n2")], [KeyGroup("a", "op", 1.0)], {"a": "n1"}, period="h0")
>>> describe_snapshot(snap)
'period h0: 2 nodes (new: n2; removing: none), 1 key groups (op: 1), 0 traffic edges'
>>> table = format_table([failed_row("stay_put", "skipped")])
>>> table.splitlines()[1].split()
['stay_put', 'skipped', '-', '-', '-', '-', '-', '-']
"""
from __future__ import annotations

import csv
import io
import os
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from albic.io import atomic_write_text
from albic.model import Plan, Snapshot

__all__ = [
    "COLUMNS",
    "describe_snapshot",
    "comparison_row",
    "failed_row",
    "format_table",
    "write_csv",
]

Row = dict[str, Any]

#: The comparison columns: CSV field names, in order (the CSV holds the raw numbers).
COLUMNS = (
    "planner",
    "status",
    "moves",
    "migration_cost_pct",
    "load_distance_pct_before",
    "load_distance_pct",
    "imbalance",
    "collocation_factor",
    "solve_ms",
)


def describe_snapshot(snapshot: Snapshot) -> str:
    """One line: the period, the nodes (which are new, which removing), key groups and traffic."""
    holding = set(snapshot.assignment.values())
    new = [n.id for n in snapshot.nodes if n.id not in holding and not n.removing]
    removing = [n.id for n in snapshot.nodes if n.removing]
    per_operator = Counter(kg.operator for kg in snapshot.key_groups)
    operators = ", ".join(f"{op}: {count}" for op, count in per_operator.items())
    return (
        f"period {snapshot.period}: {len(snapshot.nodes)} nodes "
        f"(new: {', '.join(new) or 'none'}; removing: {', '.join(removing) or 'none'}), "
        f"{len(snapshot.key_groups)} key groups ({operators}), "
        f"{len(snapshot.traffic)} traffic edges"
    )


def comparison_row(plan: Plan) -> Row:
    """The comparison figures of one plan, as raw numbers keyed by :data:`COLUMNS`."""
    m = plan.metrics
    return {
        "planner": plan.planner,
        "status": str(plan.status),
        "moves": len(plan.moves),
        "migration_cost_pct": m["migration_cost_pct"],
        "load_distance_pct_before": m["load_distance_pct_before"],
        "load_distance_pct": m["load_distance_pct"],
        "imbalance": m["imbalance"],
        "collocation_factor": m["collocation_factor"],
        "solve_ms": plan.seconds * 1000.0,
    }


def failed_row(planner: str, status: str) -> Row:
    """A row for a planner that produced no plan (its figures are empty)."""
    return {**dict.fromkeys(COLUMNS), "planner": planner, "status": status}


def _number(fmt: str) -> Callable[[Any], str]:
    return lambda value: "-" if value is None else format(value, fmt)


def _distance(row: Row) -> str:
    before, after = row["load_distance_pct_before"], row["load_distance_pct"]
    return "-" if after is None else f"{before:.2f} -> {after:.2f}"


# Shown columns: header and how to render a row.
_SHOWN: Sequence[tuple[str, Callable[[Row], str]]] = (
    ("planner", lambda r: str(r["planner"])),
    ("status", lambda r: str(r["status"])),
    ("moves", lambda r: _number("d")(r["moves"])),
    ("migration % of state", lambda r: _number(".2f")(r["migration_cost_pct"])),
    ("load distance % of mean", _distance),
    ("imbalance", lambda r: _number(".2f")(r["imbalance"])),
    ("collocation", lambda r: _number(".3f")(r["collocation_factor"])),
    ("solve ms", lambda r: _number(".1f")(r["solve_ms"])),
)


def format_table(rows: Sequence[Row]) -> str:
    """The rows as an aligned text table with a header line."""
    cells = [[header for header, _ in _SHOWN]]
    cells += [[render(row) for _, render in _SHOWN] for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(_SHOWN))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip() for line in cells
    )


def write_csv(rows: Sequence[Row], path: str | os.PathLike[str]) -> Path:
    """The rows as CSV (raw numbers, empty cells for missing figures), written atomically."""
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return atomic_write_text(path, text.getvalue())
