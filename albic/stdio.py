"""Standard output that carries nothing but albic's own output.

``albic plan`` prints the plan as JSON on stdout so that it can be piped into the next tool. C
libraries albic calls (METIS prints ``***Cannot bisect a graph with 0 vertices!``) and solver logs
write straight to file descriptor 1, around Python's ``sys.stdout``; :func:`quiet_stdout`
points that descriptor at ``/dev/null`` while they run. :func:`write_stdout` turns a failed write
(a closed stdout, a reader that left the pipe, a full disk) into :class:`StdoutError` instead of a
silent loss.

Example
-------
>>> with quiet_stdout():
...     import os; _ = os.write(1, b"lost on purpose")
"""
from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stdout

__all__ = ["quiet_stdout", "write_stdout", "StdoutError"]


class StdoutError(OSError):
    """Standard output could not take what albic had to write."""


def _flush_c_stdio() -> None:
    """Flush the C library's stdio buffers (METIS' printf output waits there on a pipe)."""
    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):  # no C library to flush: nothing was buffered there
        pass


def _flush_python() -> None:
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
    except (OSError, ValueError):
        pass  # reported by the write that follows, if any


@contextmanager
def quiet_stdout() -> Iterator[None]:
    """Discard everything written to file descriptor 1 (C, solvers and Python) in the block.

    Nests; restores the descriptor afterwards. Affects the whole process, so use it around work
    whose output nobody reads (albic's own results are written after the block).
    """
    _flush_python()
    _flush_c_stdio()
    try:
        saved = os.dup(1)
    except OSError:  # descriptor 1 is closed: nothing can reach it
        yield
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        with open(os.devnull, "w") as sink, redirect_stdout(sink):  # sys.stdout may not be fd 1
            yield
    finally:
        _flush_python()
        _flush_c_stdio()
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)


def write_stdout(text: str) -> None:
    """Write ``text`` to stdout and flush it; raise :class:`StdoutError` if it does not get there."""
    if sys.stdout is None:  # Python found descriptor 1 closed at start (`albic plan ... >&-`)
        raise StdoutError("standard output is closed")
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except (OSError, ValueError) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise StdoutError(f"cannot write to standard output: {reason}") from None
