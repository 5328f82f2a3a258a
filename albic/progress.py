"""A small progress bar for long work, on stderr, that stays quiet where nobody watches.

Example
-------
>>> from albic.progress import progress
>>> total = 0
>>> for x in progress(range(3), "summing", enabled=False):
...     total += x
>>> total
3

It draws only when stderr is a terminal (or when ``enabled=True``), so logs, CI output and notebooks
are not flooded. Written by hand rather than adding a dependency: a bar that counts and times is
twenty lines.
"""
from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator, Sized
from typing import TextIO, TypeVar

__all__ = ["progress"]

T = TypeVar("T")

_WIDTH = 30
_MIN_INTERVAL = 0.1  # seconds between redraws


def progress(
    items: Iterable[T],
    label: str,
    *,
    total: int | None = None,
    enabled: bool | None = None,
    stream: TextIO | None = None,
) -> Iterator[T]:
    """Yield ``items`` while drawing ``label [#####     ] 3/10 1.2s`` on ``stream`` (stderr)."""
    stream = stream or sys.stderr
    if enabled is None:
        enabled = hasattr(stream, "isatty") and stream.isatty()
    if total is None and isinstance(items, Sized):
        total = len(items)
    if not enabled:
        yield from items
        return
    start = last = time.perf_counter()
    done = 0
    _draw(stream, label, done, total, 0.0)
    for item in items:
        yield item
        done += 1
        now = time.perf_counter()
        if now - last >= _MIN_INTERVAL or done == total:
            _draw(stream, label, done, total, now - start)
            last = now
    _draw(stream, label, done, total, time.perf_counter() - start)
    stream.write("\n")
    stream.flush()


def _draw(stream: TextIO, label: str, done: int, total: int | None, seconds: float) -> None:
    if total:
        filled = int(_WIDTH * done / total)
        bar = f"[{'#' * filled}{' ' * (_WIDTH - filled)}] {done}/{total}"
    else:
        bar = f"{done}"
    stream.write(f"\r{label} {bar} {seconds:.1f}s")
    stream.flush()
