"""Real traces and their default topologies (design section 1).

A built-in trace is a :class:`~albic.stats.spec.TopologySpec` plus a loader that returns the event
table as a pandas DataFrame; ``albic stats NAME`` writes that table to Parquet and runs the same job
as for a user's trace (``albic stats EVENTS.parquet --spec TOPOLOGY.toml``).

Example
-------
>>> sorted(BUILTIN)
['flights', 'words', 'zipf']
>>> [op.name for op in builtin("flights").spec().operators][:3]
['parse', 'tailnum', 'planes']
"""

from __future__ import annotations

import importlib
from types import ModuleType

from albic.base.errors import AlbicError

__all__ = ["BUILTIN", "NODE_COUNTS", "builtin"]

#: Built-in trace name -> module defining ``spec()`` and ``load_events(...)``.
BUILTIN = {
    "flights": "albic.stats.traces.flights",
    "words": "albic.stats.traces.words",
    "zipf": "albic.stats.traces.zipf",
}


#: The built-in traces' node counts (``--node-counts``): each period's load mapped onto 4..8
#: nodes, so that their comparisons exercise scale-out and scale-in. A user's events file gets a
#: fixed cluster instead (:data:`albic.stats.node_counts.DEFAULT_NODES`).
NODE_COUNTS = "4:8"


def builtin(name: str) -> ModuleType:
    """The module of built-in trace ``name``."""
    if name not in BUILTIN:
        raise AlbicError(f"unknown trace {name!r}; built-in traces: {', '.join(sorted(BUILTIN))}")
    return importlib.import_module(BUILTIN[name])


def write_events(events, path) -> None:
    """Write an event table as Parquet that both engines read: timestamps in microseconds (Spark
    rejects Parquet's nanosecond timestamps)."""
    events.to_parquet(path, index=False, coerce_timestamps="us", allow_truncated_timestamps=True)
