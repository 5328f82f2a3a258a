"""Silencing what C libraries and solvers print on file descriptor 1.

C libraries albic calls (METIS prints ``***Cannot bisect a graph with 0 vertices!``) and solver logs
write straight to file descriptor 1, around Python's ``sys.stdout``; :func:`quiet_stdout` points
that descriptor at ``/dev/null`` while they run, so that a command's standard output carries only
its result. It lives with the kernels because the kernels are what talk.

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

__all__ = ["quiet_stdout", "flush_c_stdio"]


def flush_c_stdio() -> None:
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
    flush_c_stdio()
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
        flush_c_stdio()
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)
