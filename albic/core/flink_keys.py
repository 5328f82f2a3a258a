"""Flink's key groups: the key -> key group hash and the key group -> subtask range split.

Flink (``org.apache.flink.runtime.state.KeyGroupRangeAssignment``) sends a key to key group
``MathUtils.murmurHash(key.hashCode()) % maxParallelism`` and gives subtask ``i`` of ``p`` the
contiguous key groups ``ceil(i * maxP / p) .. floor(((i + 1) * maxP - 1) / p)``, i.e. key group
``g`` to subtask ``g * p / maxP`` (integer division). This module computes both exactly as Flink
does for Java ``String``, ``Integer`` and ``Long`` keys -- the Java ``hashCode`` of a string runs
over its UTF-16 code units with 32-bit wrap-around -- vectorised with numpy, so that key groups in
albic's statistics (``hash = "flink"`` in an ``albic stats`` spec) are Flink's own. The test suite
checks it against Flink's own classes on the JVM (``tests/engines/test_flink_jvm.py``).

It is model-level arithmetic (the statistics hash keys with it, ``flink_default`` plans with its
ranges); :mod:`albic.rollout.flink` turns plans into Flink's form with it.

Example
-------
>>> flink_key_group("N14228"), flink_key_group(42, key_type="int"), flink_key_group(2**40, key_type="long")
(38, 29, 54)
>>> flink_key_group(["N14228", "IAH"], max_parallelism=128).tolist()
[38, 48]
>>> flink_subtask(38, max_parallelism=128, parallelism=3), flink_key_group_range(2, 128, 3)
(0, (86, 127))
>>> flink_key_group_ranges(32, 5)
[(0, 6), (7, 12), (13, 19), (20, 25), (26, 31)]
>>> default_max_parallelism(5), default_max_parallelism(100), default_max_parallelism(30000)
(128, 256, 32768)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from albic.base.errors import InvalidParameterError

__all__ = [
    "KEY_TYPES",
    "java_hash_code",
    "murmur_hash",
    "flink_key_group",
    "flink_subtask",
    "flink_key_group_range",
    "flink_key_group_ranges",
    "flink_subtasks",
    "default_max_parallelism",
    "fold_key_groups",
    "check_max_parallelism",
    "DEFAULT_LOWER_BOUND_MAX_PARALLELISM",
]

#: The Java key classes whose ``hashCode`` is reproduced: String, Integer, Long.
KEY_TYPES = ("string", "int", "long")
# Flink's bounds on the maximum parallelism (KeyGroupRangeAssignment.UPPER_BOUND_MAX_PARALLELISM).
MAX_PARALLELISM_LIMIT = 1 << 15
#: Flink's ``KeyGroupRangeAssignment.DEFAULT_LOWER_BOUND_MAX_PARALLELISM``: the least default.
DEFAULT_LOWER_BOUND_MAX_PARALLELISM = 1 << 7

_U32 = np.uint32


def check_max_parallelism(value: Any, what: str = "max_parallelism") -> int:
    """``value`` as an int, or :class:`InvalidParameterError` unless ``1 <= value <= 32768``."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, np.integer))
        or not (1 <= int(value) <= MAX_PARALLELISM_LIMIT)
    ):
        raise InvalidParameterError(
            f"{what} = {value!r}: Flink's maximum parallelism must be an int in [1, {MAX_PARALLELISM_LIMIT}]"
        )
    return int(value)


def _string_hash_codes(keys: list[str]) -> np.ndarray:
    """Java ``String.hashCode()`` of each key, as uint32 (two's complement bits).

    ``h = sum_j u_j * 31**(n-1-j) mod 2**32`` over the UTF-16 code units ``u_j`` (a character
    outside the BMP is two surrogate units, as in Java), computed for all keys at once.
    """
    encoded = [k.encode("utf-16-le") for k in keys]
    lengths = np.fromiter((len(b) // 2 for b in encoded), dtype=np.int64, count=len(encoded))
    units = np.frombuffer(b"".join(encoded), dtype="<u2").astype(np.uint64)
    if units.size == 0:
        return np.zeros(len(keys), dtype=_U32)
    powers = np.ones(int(lengths.max()), dtype=np.uint64)
    for j in range(1, powers.size):  # 31**j mod 2**32
        powers[j] = (powers[j - 1] * 31) & 0xFFFFFFFF
    starts = np.zeros(len(keys), dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    # Exponent of each unit: distance to the end of its own key.
    ends = np.repeat(starts + lengths, lengths)
    exponent = ends - np.arange(units.size) - 1
    terms = (units * powers[exponent]) & 0xFFFFFFFF  # < 2**48: exact in uint64
    # reduceat over the non-empty keys only (an empty key's start would cut its neighbour short).
    sums = np.zeros(len(keys), dtype=np.uint64)
    filled = lengths > 0
    sums[filled] = np.add.reduceat(terms, starts[filled])
    return (sums & 0xFFFFFFFF).astype(_U32)


def java_hash_code(keys: Any, key_type: str = "string") -> np.ndarray:
    """Java's ``hashCode()`` of each key as an int32 array (``String``, ``Integer`` or ``Long``).

    >>> java_hash_code(["a", "hello", "", "x"]).tolist(), java_hash_code([-1, 2**32], "long").tolist()
    ([97, 99162322, 0, 120], [0, 1])
    """
    if key_type not in KEY_TYPES:
        raise InvalidParameterError(f"key_type = {key_type!r}, must be one of {KEY_TYPES}")
    if key_type == "string":
        keys = list(keys)
        bad = next((k for k in keys if not isinstance(k, str)), None)
        if bad is not None or any(k is None for k in keys):
            raise InvalidParameterError(f"key {bad!r} is not a string (key_type='string')")
        return _string_hash_codes(keys).view(np.int32)
    bits, name = (32, "int") if key_type == "int" else (64, "long")
    values = _integers(keys, bits, name)
    if key_type == "int":  # Integer.hashCode() is the value itself
        return values.astype(np.int32)
    # Long.hashCode() = (int) (value ^ (value >>> 32))
    u = values.view(np.uint64)
    return ((u ^ (u >> np.uint64(32))) & np.uint64(0xFFFFFFFF)).astype(_U32).view(np.int32)


def _integers(keys: Any, bits: int, name: str) -> np.ndarray:
    """Keys as an int64 array, each checked to fit a Java ``int`` / ``long``."""
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    array = np.asarray(keys)
    if array.dtype.kind in "iu" and (array.size == 0 or (array.min() >= low and array.max() <= high)):
        return array.astype(np.int64)
    items = array.ravel().tolist() if array.dtype.kind != "O" else list(array.ravel())
    for k in items:
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not low <= k <= high:
            raise InvalidParameterError(
                f"key {k!r} is not a Java {name} (an integer in [{low}, {high}], key_type={name!r})"
            )
    return np.array(items, dtype=np.int64).reshape(array.shape)


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << _U32(r)) | (x >> _U32(32 - r))


def murmur_hash(codes: Any) -> np.ndarray:
    """Flink's ``MathUtils.murmurHash(int)`` of each int32 hash code: one murmur3 round over the
    32-bit code, then ``bitMix``, made non-negative (``Integer.MIN_VALUE`` becomes 0).

    >>> murmur_hash([0, 1, -1]).tolist()
    [593689054, 68075478, 1982413648]
    """
    with np.errstate(over="ignore"):
        code = np.asarray(codes, dtype=np.int64).astype(np.int32).view(_U32)
        code = code * _U32(0xCC9E2D51)
        code = _rotl(code, 15)
        code = code * _U32(0x1B873593)
        code = _rotl(code, 13)
        code = code * _U32(5) + _U32(0xE6546B64)
        code = code ^ _U32(4)
        code = code ^ (code >> _U32(16))  # bitMix
        code = code * _U32(0x85EBCA6B)
        code = code ^ (code >> _U32(13))
        code = code * _U32(0xC2B2AE35)
        code = code ^ (code >> _U32(16))
        signed = code.view(np.int32).astype(np.int64)
    return np.where(signed >= 0, signed, np.where(signed == -(1 << 31), 0, -signed))


def flink_key_group(key: Any, max_parallelism: int = 128, key_type: str = "string") -> Any:
    """The Flink key group of ``key`` (or of each key of a list / array, as an int64 array).

    ``KeyGroupRangeAssignment.assignToKeyGroup(key, maxParallelism)``: ``murmurHash(key.hashCode())
    % maxParallelism`` for a Java ``String`` (``key_type="string"``), ``Integer`` (``"int"``) or
    ``Long`` (``"long"``) key.
    """
    max_parallelism = check_max_parallelism(max_parallelism)
    scalar = isinstance(key, (str, int, np.integer)) or key is None
    keys = [key] if scalar else (list(key) if key_type == "string" else key)
    groups = murmur_hash(java_hash_code(keys, key_type)) % max_parallelism
    return int(groups[0]) if scalar else groups.astype(np.int64)


def _parallelism(max_parallelism: int, parallelism: Any) -> tuple[int, int]:
    max_parallelism = check_max_parallelism(max_parallelism)
    if (
        isinstance(parallelism, bool)
        or not isinstance(parallelism, (int, np.integer))
        or not (1 <= parallelism <= max_parallelism)
    ):
        raise InvalidParameterError(
            f"parallelism = {parallelism!r}: must be an int in [1, max_parallelism={max_parallelism}]"
        )
    return max_parallelism, int(parallelism)


def flink_subtask(key_group: Any, max_parallelism: int, parallelism: int) -> Any:
    """The subtask (operator index) of key group(s) ``key_group`` at ``parallelism``:
    ``computeOperatorIndexForKeyGroup`` = ``key_group * parallelism // max_parallelism``."""
    max_parallelism, parallelism = _parallelism(max_parallelism, parallelism)
    groups = np.asarray(key_group, dtype=np.int64)
    if groups.size and (groups.min() < 0 or groups.max() >= max_parallelism):
        raise InvalidParameterError(
            f"key group {int(groups.min() if groups.min() < 0 else groups.max())} is outside "
            f"0 .. {max_parallelism - 1} (max_parallelism={max_parallelism})"
        )
    subtasks = groups * parallelism // max_parallelism
    return int(subtasks) if subtasks.ndim == 0 else subtasks


def flink_key_group_range(subtask: int, max_parallelism: int, parallelism: int) -> tuple[int, int]:
    """Subtask ``subtask``'s key groups ``(start, end)``, both inclusive, as Flink's
    ``computeKeyGroupRangeForOperatorIndex`` gives them."""
    max_parallelism, parallelism = _parallelism(max_parallelism, parallelism)
    if not 0 <= subtask < parallelism:
        raise InvalidParameterError(f"subtask = {subtask!r}, must be in [0, {parallelism - 1}]")
    start = (subtask * max_parallelism + parallelism - 1) // parallelism
    end = ((subtask + 1) * max_parallelism - 1) // parallelism
    return start, end


def flink_subtasks(max_parallelism: int, parallelism: int) -> np.ndarray:
    """The subtask of every key group ``0 .. max_parallelism-1`` at ``parallelism`` (int64 array)."""
    max_parallelism, parallelism = _parallelism(max_parallelism, parallelism)
    return np.arange(max_parallelism, dtype=np.int64) * parallelism // max_parallelism


def flink_key_group_ranges(max_parallelism: int, parallelism: int) -> list[tuple[int, int]]:
    """Every subtask's ``(start, end)`` at ``parallelism``, in subtask order: stock Flink's split
    (:func:`flink_key_group_range` for each subtask)."""
    max_parallelism, parallelism = _parallelism(max_parallelism, parallelism)
    s = np.arange(parallelism, dtype=np.int64)
    starts = (s * max_parallelism + parallelism - 1) // parallelism
    ends = ((s + 1) * max_parallelism - 1) // parallelism
    return list(zip(starts.tolist(), ends.tolist()))


def default_max_parallelism(parallelism: int) -> int:
    """Flink's maximum parallelism for an operator whose job sets none:
    ``KeyGroupRangeAssignment.computeDefaultMaxParallelism`` =
    ``min(max(roundUpToPowerOfTwo(p + p / 2), 128), 32768)`` (integer division), fixed when the
    job first starts (the state's key groups are made with it)."""
    if (
        isinstance(parallelism, bool)
        or not isinstance(parallelism, (int, np.integer))
        or not (1 <= parallelism <= MAX_PARALLELISM_LIMIT)
    ):
        raise InvalidParameterError(
            f"parallelism = {parallelism!r}: must be an int in [1, {MAX_PARALLELISM_LIMIT}]"
        )
    wanted = int(parallelism) + int(parallelism) // 2
    power = 1 << (wanted - 1).bit_length()  # MathUtils.roundUpToPowerOfTwo
    return min(max(power, DEFAULT_LOWER_BOUND_MAX_PARALLELISM), MAX_PARALLELISM_LIMIT)


def fold_key_groups(groups: Any, key_groups: int, max_parallelism: int) -> np.ndarray:
    """Key groups made with Flink's hash at ``key_groups`` as key groups at ``max_parallelism``.

    ``murmurHash(h) % N == (murmurHash(h) % K) % N`` whenever ``N`` divides ``K``, so statistics
    hashed at ``K`` give the exact key groups of a job with maximum parallelism ``N``; for any other
    ``N`` the keys themselves would be needed, and :class:`InvalidParameterError` says so.

    >>> fold_key_groups([0, 5, 130, 255], 256, 128).tolist()
    [0, 5, 2, 127]
    """
    key_groups = check_max_parallelism(key_groups, "key_groups")
    max_parallelism = check_max_parallelism(max_parallelism)
    if key_groups % max_parallelism:
        raise InvalidParameterError(
            f"max_parallelism = {max_parallelism} does not divide the {key_groups} key groups the "
            f"statistics were hashed into: a key's key group at {max_parallelism} cannot be told "
            f"from its key group at {key_groups} (make the statistics with max_parallelism = "
            f"{max_parallelism}, or a multiple of it)"
        )
    return np.asarray(groups, dtype=np.int64) % max_parallelism
