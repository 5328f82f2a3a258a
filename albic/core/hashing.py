"""The one stable key -> key-group hash of albic.

A key (text) goes to key group
``int.from_bytes(hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest(), "big") % K``.
It is stable across runs, machines and Python versions (unlike ``hash()``, which is salted per
process), and every producer of statistics uses this function: the Spark job
(``albic.spark.stats_engine``), its pandas twin (``albic.stats.job``) and ``data/make_example_snapshot.py``,
so their key groups agree.

``method="flink"`` (``hash = "flink"`` in an ``albic stats`` spec) uses Flink's own key-group
assignment instead, for keys hashed as Java strings (:func:`albic.core.flink_keys.flink_key_group`),
so that the key groups in the statistics are those a Flink job with maximum parallelism
``key_groups``, keyed by the same text, has.

Example
-------
>>> key_group("N14228", 32), key_group("IAH", 32)
(24, 7)
>>> key_groups(["N14228", "IAH"], 32).tolist()
[24, 7]
>>> key_groups(["N14228", "IAH"], 128, method="flink").tolist()
[38, 48]
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import numpy as np

from albic.core.flink_keys import flink_key_group

__all__ = ["key_group", "key_groups", "stable_hash", "METHODS"]

#: The key -> key group hashes: albic's own (blake2b) and Flink's.
METHODS = ("blake2b", "flink")


def stable_hash(key: str) -> int:
    """The unsigned 64-bit blake2b hash of ``key`` (UTF-8), big-endian."""
    return int.from_bytes(hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest(), "big")


def key_group(key: str, key_groups: int) -> int:
    """The key group (``0 .. key_groups-1``) of ``key``."""
    if key_groups < 1:
        raise ValueError(f"key_groups must be at least 1, got {key_groups}")
    return stable_hash(key) % key_groups


def key_groups(keys: Iterable[str], key_groups: int, method: str = "blake2b") -> np.ndarray:
    """The key group of every key, as an int64 array (one hash per distinct key)."""
    if key_groups < 1:
        raise ValueError(f"key_groups must be at least 1, got {key_groups}")
    if method not in METHODS:
        raise ValueError(f"hash method {method!r} is not one of {METHODS}")
    keys = list(keys)
    if method == "flink":
        return flink_key_group(keys, max_parallelism=key_groups, key_type="string")
    cache = {k: stable_hash(k) % key_groups for k in set(keys)}
    return np.fromiter((cache[k] for k in keys), dtype=np.int64, count=len(keys))
