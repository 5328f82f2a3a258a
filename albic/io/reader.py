"""The one reader of every file a user gives albic: snapshots, plans, Kafka files, specs, series.

A command never opens a user's file by itself; it asks this module, which refuses, each in one line
naming the file and the rule (:class:`albic.base.errors.InputFileError`):

- what is not a regular file -- a FIFO, a device, a folder, a socket, a symbolic-link loop --
  found with ``os.stat`` *before* anything is opened (opening a FIFO would wait for a writer
  forever, reading ``/dev/zero`` would never end); the file is then opened without blocking and
  checked again, so a file swapped in between is refused too;
- a file larger than :func:`max_input_bytes` (1 GiB unless raised with ``albic --max-input-size``
  or the environment variable :data:`MAX_INPUT_ENV`), before reading it;
- compressed (gzip, bzip2, xz, zip, zstd) or binary input (Parquet, NUL bytes), from its first
  bytes, so that 200 MB of garbage is refused after reading 64 kB;
- text that is not UTF-8, with the offset of the first bad byte;
- JSON with a key twice in one object, nested deeper than :data:`MAX_JSON_DEPTH`, holding NaN,
  Infinity, a number beyond the float range (``1e400``) or an integer a float cannot hold
  (``10**400``): each named by the field's JSON path.

A missing or unreadable file stays an ``OSError`` naming it (``FileNotFoundError``,
``PermissionError``), as Python's own ``open`` raises.

Example
-------
>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "doc.json"
>>> _ = path.write_text('{"rate": 1e400}')
>>> try:
...     read_input_json(path, "rates file")
... except InputFileError as err:
...     print(err.rule)
rate = inf: not a finite number (NaN, Infinity and numbers beyond 1.8e308 are refused)
"""

from __future__ import annotations

import codecs
import contextlib
import csv
import io
import json
import math
import os
import re
import stat
import sys
from collections.abc import Iterator
from typing import Any, BinaryIO

from albic.base.errors import DuplicateKeyError, InputFileError, InvalidParameterError, shown

__all__ = [
    "MAX_INPUT_ENV",
    "DEFAULT_MAX_INPUT_BYTES",
    "MAX_JSON_DEPTH",
    "parse_size",
    "format_size",
    "max_input_bytes",
    "input_limit",
    "check_input_file",
    "read_input_bytes",
    "read_input_text",
    "read_input_json",
    "read_stdin_text",
    "read_input_csv",
    "check_input_head",
    "check_input_folder",
    "check_header",
    "sniff",
    "decode",
    "loads",
    "json_depth",
    "non_finite",
    "finite_number",
]

#: The environment variable that sets the largest input file albic reads (bytes, or 500M, 2G...).
MAX_INPUT_ENV = "ALBIC_MAX_INPUT_BYTES"
#: The default largest input: a snapshot of a million key groups is about 200 MB.
DEFAULT_MAX_INPUT_BYTES = 1 << 30
#: The deepest nesting of arrays and objects a JSON input may have. A snapshot needs 4 levels
#: (document, key_groups, a key group, its resources); the limit leaves room for plan details.
MAX_JSON_DEPTH = 64

# The first bytes that give a compressed or binary file away, and what to tell the user.
_MAGIC = (
    (b"\x1f\x8b", "compressed (gzip); decompress it first (gunzip)"),
    (b"BZh", "compressed (bzip2); decompress it first (bunzip2)"),
    (b"\xfd7zXZ\x00", "compressed (xz); decompress it first (unxz)"),
    (b"PK\x03\x04", "compressed (zip); extract it first (unzip)"),
    (b"\x28\xb5\x2f\xfd", "compressed (zstd); decompress it first (unzstd)"),
    (b"PAR1", "a Parquet file, not text"),
)
_HEAD = 1 << 16
_CHUNK = 1 << 20
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:I?B)?\s*", re.IGNORECASE)
_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)
_override: int | None = None


def parse_size(text: str) -> int:
    """A size in bytes from ``"1000"``, ``"64k"``, ``"500M"`` or ``"2GiB"`` (units of 1024).

    >>> parse_size("500M"), parse_size("1g"), parse_size("123")
    (524288000, 1073741824, 123)
    """
    found = _SIZE.fullmatch(str(text))
    if found is None or float(found[1]) < 1:
        raise ValueError(f"{text!r} is not a size: give bytes, or a number with K, M, G or T (e.g. 2G)")
    return int(float(found[1]) * _UNITS[found[2].upper()])


def format_size(size: int) -> str:
    """``size`` bytes for a person.

    >>> format_size(1 << 30), format_size(209715200), format_size(12)
    ('1 GiB', '200 MiB', '12 bytes')
    """
    for unit in ("T", "G", "M", "K"):
        if size >= _UNITS[unit]:
            return f"{size / _UNITS[unit]:.4g} {unit}iB"
    return f"{size} bytes"


def max_input_bytes() -> int:
    """The largest input file albic reads now: :func:`input_limit`'s, else :data:`MAX_INPUT_ENV`'s,
    else :data:`DEFAULT_MAX_INPUT_BYTES`."""
    if _override is not None:
        return _override
    given = os.environ.get(MAX_INPUT_ENV)
    if not given:
        return DEFAULT_MAX_INPUT_BYTES
    try:
        return parse_size(given)
    except ValueError as err:  # not an input file's fault: a setting, named as such
        raise InvalidParameterError(f"{MAX_INPUT_ENV}={given!r}: {err}") from None


@contextlib.contextmanager
def input_limit(size: int | None) -> Iterator[None]:
    """Read inputs of up to ``size`` bytes inside the block (``None``: the usual limit); what
    ``albic --max-input-size`` sets.

    >>> with input_limit(10):
    ...     max_input_bytes()
    10
    """
    global _override
    before, _override = _override, size
    try:
        yield
    finally:
        _override = before


def _refuse(path: str | os.PathLike[str], what: str, rule: str) -> InputFileError:
    return InputFileError(str(path), rule, what=what)


def _kind(mode: int) -> str | None:
    """What a file of ``mode`` is, when it is not a regular file."""
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def check_input_file(
    path: str | os.PathLike[str], what: str = "input file", *, limit: bool = True
) -> os.stat_result:
    """The ``os.stat`` of ``path`` if it is a regular file albic may read (of at most
    :func:`max_input_bytes` when ``limit``), else :class:`InputFileError`; nothing is opened.

    >>> check_input_file("/dev/zero", "snapshot")
    Traceback (most recent call last):
    ...
    albic.base.errors.InputFileError: snapshot /dev/zero: is a character device, not a regular file; albic reads input from regular files only
    """
    try:
        info = os.stat(path)
    except OSError as err:
        if err.errno == 40:  # ELOOP: the error's own text ("Too many levels...") hides the cause
            raise _refuse(path, what, "is a symbolic link in a loop (it never reaches a file)") from None
        raise OSError(err.errno, err.strerror, str(path)) from None
    kind = _kind(info.st_mode)
    if kind is not None:
        raise _refuse(path, what, f"is {kind}, not a regular file; albic reads input from regular files only")
    if limit and info.st_size > max_input_bytes():
        raise _too_large(path, what, info.st_size)
    return info


def _too_large(path: str | os.PathLike[str], what: str, size: int | None) -> InputFileError:
    has = f"is {format_size(size)}" if size is not None else "is larger than that"
    return _refuse(
        path,
        what,
        f"{has}; albic reads at most {format_size(max_input_bytes())} of input (raise the "
        f"limit with input_limit(SIZE) or {MAX_INPUT_ENV}=SIZE)",
    )


def sniff(head: bytes) -> str | None:
    """Why bytes starting with ``head`` are not text albic reads (compressed, binary), or None.

    >>> sniff(b"\\x1f\\x8b\\x08\\x00"), sniff(b'{"a": 1}')
    ('compressed (gzip); decompress it first (gunzip)', None)
    """
    for magic, rule in _MAGIC:
        if head.startswith(magic):
            return rule
    nul = head.find(b"\x00")
    if nul >= 0:
        return f"binary data, not text (a NUL byte at byte {nul})"
    return None


def read_input_bytes(path: str | os.PathLike[str], what: str = "input file") -> bytes:
    """The bytes of the regular file ``path`` (see :func:`check_input_file`), refusing
    compressed and binary data from the first 64 kB and stopping at the size limit."""
    with _opened(path, what, limit=True) as (handle, head):
        limit = max_input_bytes()
        parts, size = [head], len(head)
        while len(parts[-1]) and size <= limit:  # a file still growing stops at the limit too
            parts.append(handle.read(min(_CHUNK, limit + 1 - size)))
            size += len(parts[-1])
    if size > limit:
        raise _too_large(path, what, None)
    return b"".join(parts)


def check_input_head(path: str | os.PathLike[str], what: str = "input file", *, limit: bool = True) -> None:
    """Refuse ``path`` as :func:`read_input_text` would, reading only its first 64 kB (compressed,
    binary, not UTF-8): for text files another library reads (pandas, pyarrow), e.g. an events
    file, which has no size limit."""
    with _opened(path, what, limit=limit) as (_, head):
        try:  # not final: the head may end inside a character
            codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
        except UnicodeDecodeError as err:
            raise _refuse(path, what, f"not UTF-8 text (byte {err.start} cannot be decoded)") from None


def check_input_folder(path: str | os.PathLike[str], what: str = "folder") -> None:
    """Refuse ``path`` unless it is a folder (missing: ``FileNotFoundError``), naming what it is.

    >>> check_input_folder("/dev/null", "statistics folder")
    Traceback (most recent call last):
    ...
    albic.base.errors.InputFileError: statistics folder /dev/null: is a character device, not a folder
    """
    try:
        info = os.stat(path)
    except OSError as err:
        if err.errno == 40:
            raise _refuse(path, what, "is a symbolic link in a loop (it never reaches a folder)") from None
        raise OSError(err.errno, err.strerror, str(path)) from None
    if not stat.S_ISDIR(info.st_mode):
        raise _refuse(path, what, f"is {_kind(info.st_mode) or 'a file'}, not a folder")


def check_header(names: list[str], path: str | os.PathLike[str], what: str) -> None:
    """Refuse a CSV header naming a column twice (readers would silently keep one, or rename it).

    >>> check_header(["rate", "topic", "rate"], "r.csv", "rates file")
    Traceback (most recent call last):
    ...
    albic.base.errors.InputFileError: rates file r.csv: the header names the column 'rate' twice; column names must be unique
    """
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise _refuse(
                path, what, f"the header names the column {name!r} twice; column names must be unique"
            )
        seen.add(name)


@contextlib.contextmanager
def _opened(path: str | os.PathLike[str], what: str, *, limit: bool) -> Iterator[tuple[BinaryIO, bytes]]:
    """The checked file open for reading, and its first bytes, which are neither compressed nor
    binary."""
    check_input_file(path, what, limit=limit)
    try:
        # O_NONBLOCK: a FIFO put in place since the stat above must not make open() wait.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as err:
        raise OSError(err.errno, err.strerror, str(path)) from None
    with os.fdopen(fd, "rb") as handle:
        kind = _kind(os.fstat(fd).st_mode)
        if kind is not None:
            raise _refuse(path, what, f"is {kind}, not a regular file")
        head = handle.read(_HEAD)
        rule = sniff(head)
        if rule is not None:
            raise _refuse(path, what, rule)
        yield handle, head


def decode(data: bytes, path: str | os.PathLike[str], what: str) -> str:
    """UTF-8 ``data`` as text (a byte-order mark some editors write is dropped), else
    :class:`InputFileError` naming the first byte that is not UTF-8."""
    try:
        return codecs.decode(data, "utf-8-sig")
    except UnicodeDecodeError as err:
        raise _refuse(path, what, f"not UTF-8 text (byte {err.start} cannot be decoded)") from None


def read_input_text(path: str | os.PathLike[str], what: str = "input file") -> str:
    """The UTF-8 text of the file ``path`` (:func:`read_input_bytes`, then :func:`decode`)."""
    return decode(read_input_bytes(path, what), path, what)


def read_stdin_text(what: str = "standard input") -> str:
    """Standard input as UTF-8 text, up to the size limit (a pipe has no size to check first)."""
    limit = max_input_bytes()
    if not hasattr(sys.stdin, "buffer"):  # a text stream put in its place (a test's StringIO)
        text = sys.stdin.read(limit + 1)
        if len(text) > limit:
            raise _too_large("-", what, None)
        return text
    data = sys.stdin.buffer.read(limit + 1)
    if len(data) > limit:
        raise _too_large("-", what, None)
    rule = sniff(data[:_HEAD])
    if rule is not None:
        raise _refuse("-", what, rule)
    return decode(data, "-", what)


def read_input_json(path: str | os.PathLike[str], what: str = "input file", *, finite: bool = True) -> Any:
    """The JSON document in the file ``path``, read with :func:`loads`' limits."""
    text = read_input_text(path, what)
    try:
        return loads(text, finite=finite)
    except ValueError as err:
        raise _refuse(path, what, str(err)) from None


def read_input_csv(path: str | os.PathLike[str], what: str = "input file", *, numeric: tuple[str, ...] = ()):
    """The CSV file ``path`` as a pandas DataFrame, read after :func:`read_input_text`'s checks;
    each column of ``numeric`` must hold finite numbers only (the first other value is named by
    its row and column)."""
    import numpy as np
    import pandas as pd

    text = read_input_text(path, what)
    check_header(next(csv.reader(io.StringIO(text)), []), path, what)
    try:
        frame = pd.read_csv(io.StringIO(text))
    except (pd.errors.EmptyDataError, pd.errors.ParserError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise _refuse(path, what, f"not a readable CSV file ({first})") from None
    for column in numeric:
        if column not in frame:
            continue  # the caller names the missing columns in its own terms
        values = pd.to_numeric(frame[column], errors="coerce").astype(float)
        bad = ~np.isfinite(values.to_numpy())
        if bad.any():
            row = int(bad.nonzero()[0][0])
            value = shown(frame[column].iloc[row])
            raise _refuse(path, what, f"row {row + 1}, column {column!r} = {value}: not a finite number")
    return frame


# -- JSON -----------------------------------------------------------------------------------------


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKeyError(key)
            seen.add(key)
    return obj


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
# Outside strings, every non-finite or out-of-range number has one of these shapes.
_SUSPECT = re.compile(r"NaN|Infinity|[eE]\+?\d{3}|\d{309}")
_BRACKETS = b"[{]}"


def json_depth(text: str) -> int:
    """The deepest nesting of arrays and objects in JSON ``text`` (brackets in strings ignored).

    >>> json_depth('{"a": [[1], "]]]"]}')
    3
    """
    return _depth(_STRING.sub("", text))


def _depth(skeleton: str) -> int:
    import numpy as np  # here, not at the top: the command line's start reads this module

    codes = np.frombuffer(skeleton.encode("utf-8", "replace"), dtype=np.uint8)
    bracket_codes = np.frombuffer(_BRACKETS, dtype=np.uint8)
    brackets = codes[np.isin(codes, bracket_codes)]  # only the brackets: little memory for big files
    step = np.isin(brackets, bracket_codes[:2]).astype(np.int32) * 2 - 1
    return int(np.cumsum(step).max(initial=0))


def loads(text: str, *, finite: bool = True) -> Any:
    """JSON ``text`` parsed with albic's limits; raises ``ValueError`` with one line for people:
    unique keys, at most :data:`MAX_JSON_DEPTH` levels, numbers of at most 4300 digits and, when
    ``finite``, no NaN, Infinity or number beyond the float range (named by its JSON path).

    >>> loads('{"a": [1, 2.5]}')
    {'a': [1, 2.5]}
    >>> loads('{"a": [1, NaN]}')
    Traceback (most recent call last):
    ...
    ValueError: a[1] = nan: not a finite number (NaN, Infinity and numbers beyond 1.8e308 are refused)
    """
    try:
        data = json.loads(text, object_pairs_hook=_unique_keys)
    except RecursionError:  # far too deep: say how deep, from the text
        raise ValueError(_too_deep(json_depth(text))) from None
    except DuplicateKeyError as err:
        raise ValueError(f"an object has the key {err.args[0]!r} twice; keys must be unique") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"not valid JSON: {err.msg} at line {err.lineno}, column {err.colno}") from None
    except ValueError as err:  # e.g. an integer of more than 4300 digits
        raise ValueError(f"not readable JSON: {str(err).split(';')[0]}") from None
    skeleton = _STRING.sub("", text)
    depth = _depth(skeleton)
    if depth > MAX_JSON_DEPTH:
        raise ValueError(_too_deep(depth))
    if finite and _SUSPECT.search(skeleton):  # rare: only then walk the document for the path
        problem = non_finite(data)
        if problem is not None:
            raise ValueError(problem)
    return data


def _too_deep(depth: int) -> str:
    return f"nested {depth} levels deep; albic reads at most {MAX_JSON_DEPTH} levels"


def non_finite(data: Any) -> str | None:
    """The first number in ``data`` (parsed JSON) that is NaN, infinite or an integer beyond the
    float range, as ``"PATH = VALUE: rule"``; None when every number is finite.

    >>> non_finite({"moves": [{"cost": 10**400}]})[:28]
    'moves[0].cost = 100000000000'
    """
    stack: list[tuple[Any, str]] = [(data, "")]
    while stack:
        value, path = stack.pop()
        if isinstance(value, dict):
            stack.extend((v, f"{path}.{k}" if path else str(k)) for k, v in reversed(value.items()))
        elif isinstance(value, list):
            stack.extend((v, f"{path}[{i}]") for i, v in reversed(list(enumerate(value))))
        else:
            rule = _number_rule(value)
            if rule is not None:
                return f"{path or 'the document'} = {shown(value)}: {rule}"
    return None


def _number_rule(value: Any) -> str | None:
    if isinstance(value, float) and not math.isfinite(value):
        return "not a finite number (NaN, Infinity and numbers beyond 1.8e308 are refused)"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > sys.float_info.max:
        return "an integer beyond the float range (at most 1.8e308)"
    return None


def finite_number(text: str, where: str) -> float:
    """``text`` (a CSV field) as a finite float, else ``ValueError`` naming ``where``.

    >>> finite_number(" 2.5", "rate")
    2.5
    >>> finite_number("1e400", "rate")
    Traceback (most recent call last):
    ...
    ValueError: rate = '1e400': not a finite number (NaN, Infinity and numbers beyond 1.8e308 are refused)
    """
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise ValueError(f"{where} = {text!r}: not a number") from None
    if not math.isfinite(value):
        raise ValueError(f"{where} = {text!r}: {_number_rule(value)}")
    return value
