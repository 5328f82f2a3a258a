"""Standard output that carries nothing but albic's own output.

``albic plan`` prints the plan as JSON on stdout so that it can be piped into the next tool.
:func:`write_stdout` turns a failed write (a closed stdout, a reader that left the pipe, a full
disk) into :class:`StdoutError` instead of a silent loss. What C libraries and solvers print to
file descriptor 1 while albic works is discarded by :func:`albic.solvers.quiet.quiet_stdout`.
"""

from __future__ import annotations

import sys

from albic.base.errors import StdoutError

__all__ = ["write_stdout"]


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
