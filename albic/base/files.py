"""Temporary files and folders that a killed run leaves for the next run to remove.

albic writes its outputs through a temporary sibling renamed into place (:mod:`albic.io`,
``albic stats``). A run killed with ``kill -9`` cannot remove its temporary, so every temporary's
name carries the host and process id of the run that made it: ``.NAME.tmp-HOST-PID-RANDOM``. A
later run writing the same ``NAME`` (or cleaning a scratch folder) removes the temporaries of
processes that no longer run on this host; those of live processes, and of other hosts sharing
the folder, are left alone, so two runs at once never delete each other's work.

Example
-------
>>> import tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> handle, tmp = create(folder / "plan.json")
>>> handle.close()
>>> tmp.name.startswith(".plan.json.tmp-")
True
>>> remove_stale(folder / "plan.json")  # our own process still runs: kept
[]
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import uuid
from pathlib import Path
from typing import Any, BinaryIO

__all__ = [
    "create",
    "sibling",
    "make_folder",
    "remove_stale",
    "scratch_prefix",
    "remove_stale_scratch",
    "atomic_write_text",
    "atomic_write_bytes",
]


def _tag() -> str:
    host = socket.gethostname().replace("-", "_") or "host"
    return f"{host}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def _prefix(target: Path) -> str:
    return f".{target.name}.tmp-"


def create(target: Path) -> tuple[BinaryIO, Path]:
    """A new private temporary file next to ``target``, open for binary writing, and its path."""
    path = target.parent / f"{_prefix(target)}{_tag()}"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    return os.fdopen(fd, "wb"), path


def sibling(target: Path) -> Path:
    """A fresh temporary name next to ``target`` (nothing is created), e.g. to move an old
    output aside; :func:`remove_stale` removes it if the process dies before it does."""
    return target.parent / f"{_prefix(target)}{_tag()}"


def make_folder(target: Path) -> Path:
    """A new temporary folder next to ``target`` (for outputs that are folders)."""
    path = sibling(target)
    path.mkdir()
    return path


def _dead(name: str, prefix: str) -> bool:
    """Whether the temporary ``name`` was made on this host by a process that no longer runs."""
    host, _, rest = name[len(prefix) :].partition("-")
    pid, _, _ = rest.partition("-")
    if host != (socket.gethostname().replace("-", "_") or "host") or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:  # e.g. PermissionError: the process runs under another user
        return False
    return False


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _remove_dead(folder: Path, prefix: str) -> list[Path]:
    """Remove the entries of ``folder`` named ``prefix``... whose process is dead."""
    try:
        candidates = sorted(p for p in folder.iterdir() if p.name.startswith(prefix))
    except OSError:
        return []
    removed = []
    for path in candidates:
        if _dead(path.name, prefix):
            _remove(path)
            removed.append(path)
    return removed


def remove_stale(target: Path) -> list[Path]:
    """Remove the temporaries of ``target`` left by dead processes; return what was removed."""
    return _remove_dead(target.parent, _prefix(target))


def scratch_prefix(kind: str) -> str:
    """The name prefix of a scratch folder made with ``tempfile.mkdtemp(prefix=...)``, e.g.
    ``albic-events-HOST-PID-``; :func:`remove_stale_scratch` removes those of dead processes."""
    host = socket.gethostname().replace("-", "_") or "host"
    return f"albic-{kind}-{host}-{os.getpid()}-"


def remove_stale_scratch(kind: str, folder: str | os.PathLike[str] | None = None) -> list[Path]:
    """Remove the scratch folders of ``kind`` in ``folder`` (default: the temp folder) whose
    process no longer runs; return what was removed."""
    import tempfile

    root = Path(folder if folder is not None else tempfile.gettempdir())
    return _remove_dead(root, f"albic-{kind}-")


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically (:func:`atomic_write_bytes`)."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` through a temporary file in the same folder, then rename it.

    Readers see the old file or the whole new one, never a part; on failure nothing is left behind
    (a temporary file of a killed run is removed by the next write to the same path, see
    this module). An existing file keeps its permission bits; a symbolic link is
    followed (the file it points to is replaced, the link stays). An ``OSError`` names ``path``.
    """
    given = Path(path)
    target = Path(os.path.realpath(given))
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mode = 0o666 & ~_umask()  # the mode an ordinary open() would give a new file
    except OSError as err:
        raise _naming(err, given) from None
    try:
        remove_stale(target)
        handle, tmp = create(target)
    except OSError as err:
        raise _naming(err, given) from None
    try:
        os.chmod(tmp, mode)
        with handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException as err:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(err, OSError):
            raise _naming(err, given) from None
        raise
    return given


def check_writable(path: str | os.PathLike[str]) -> None:
    """Raise an ``OSError`` naming ``path`` unless :func:`atomic_write_text` could write it now:
    the folder exists and takes a new file, and an existing file is writable (a read-only file is
    not replaced behind its owner's back). Creates nothing that stays."""
    given = Path(path)
    target = Path(os.path.realpath(given))
    if target.is_dir():
        raise IsADirectoryError(21, "it is a folder; give a file name", str(given))
    if not target.parent.is_dir():
        raise FileNotFoundError(2, f"folder {target.parent} does not exist", str(given))
    if target.exists() and not os.access(target, os.W_OK):
        raise PermissionError(13, "Permission denied (the file is read-only)", str(given))
    try:
        handle, tmp = create(target)
    except OSError as err:
        raise _naming(err, given) from None
    handle.close()
    Path(tmp).unlink(missing_ok=True)


def _naming(err: OSError, path: Path) -> OSError:
    """``err`` as raised for ``path`` (the user's name for the file, not a temporary one)."""
    if err.errno is None:
        return err
    return OSError(err.errno, err.strerror, str(path))  # OSError picks the subclass from errno


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def dumps(data: Any, *, indent: int | None = 2) -> str:
    """JSON text as albic writes it: no NaN or infinity, UTF-8 kept readable."""
    return json.dumps(data, indent=indent, allow_nan=False, ensure_ascii=False)
