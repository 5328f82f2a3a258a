"""Stream partitioners: functions that route a stream of keys to workers.

These are the schemes consistent grouping is measured against (consistent-grouping paper, sections
4-5 and Table 3). All share one interface::

    f(keys, n_workers, *, n_sources=1, eps=0.01, seed=0) -> numpy array of worker ids

``keys`` is a numpy array of ints or strings, one per message, in arrival order; the result has one
worker id in ``[0, n_workers)`` per message. ``PARTITIONERS`` maps the names ``kg``, ``pkg``,
``potc``, ``sg``, ``ch``, ``chbl`` and ``porc`` to them.

Example
-------
>>> import numpy as np
>>> keys = np.array([7, 7, 7, 7, 3, 9])
>>> PARTITIONERS["kg"](keys, 4).tolist()            # one worker per key
[1, 1, 1, 1, 2, 1]
>>> PARTITIONERS["sg"](keys, 4).tolist()            # round robin
[0, 1, 2, 3, 0, 1]
>>> bool((np.bincount(PARTITIONERS["porc"](keys, 4, eps=0.0), minlength=4) <= 2).all())
True

Readings of the paper (where it leaves things open):

- Hashing: a key becomes a 64-bit code (an int key is its own code; a string key is the first 8
  bytes of its BLAKE2b digest, stable across processes), and the ``i``-th hash function is MurmurHash3's
  64-bit finaliser ``fmix64`` applied to ``code XOR salt_i`` where the salt mixes ``seed`` and ``i``
  (the paper uses a 64-bit Murmur hash for KG and "a single hash function and concatenating the
  salt" for PORC's infinitely many choices). Worker = hash mod ``n_workers``.
- Sources: message ``t`` is read by source ``t mod n_sources`` (the paper's sources receive the input
  by shuffle grouping). Each source routes independently with only its own local state: PKG, POTC,
  CHBL and PORC compare the loads *this source* has sent (PKG's local load estimation), SG keeps a
  round-robin pointer per source (starting at the source's number), and the capacity bound of CHBL
  and PORC is ``ceil((1 + eps) * m_s / n_workers)`` where ``m_s`` counts the source's messages so far,
  including the one being routed (the capacity "is calculated at run time using the average load").
  Hence with one source no worker ever holds more than that bound.
- POTC draws two random workers per *message* (from a generator seeded by ``seed``); PKG draws two
  per *key* (the first two hash functions); ties go to the first choice.
- CH and CHBL place ``CH_POINTS`` (10) points per worker on a ring of 64-bit positions; CH sends a
  key to the owner of the first point clockwise of the key's position, CHBL walks on clockwise to
  the first point whose owner has spare capacity (Mirrokni et al.'s consistent hashing with bounded
  loads). PORC probes ``hash_1(key), hash_2(key), ...`` and takes the first worker with spare
  capacity; the first is the key's *principal* worker.

The sequential ones (PKG, POTC, CHBL, PORC: each decision depends on the loads the previous messages
made) run in numba-compiled loops: routing must keep up with a stream, and measured here every
partitioner routes well over a million messages per second per core (``make bench``). numba is
albic's extra ``stream`` (``pip install 'albic[stream]'``): the loops are compiled on first use, so
this module (which the consistent-grouping planner imports) imports without it, and routing
without it raises :class:`~albic.base.errors.MissingExtraError` naming the extra.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from albic.base.errors import InvalidParameterError
from albic.base.extras import require
from albic.core.hashing import stable_hash

__all__ = [
    "PARTITIONERS",
    "CH_POINTS",
    "key_codes",
    "key_grouping",
    "partial_key_grouping",
    "power_of_two_choices",
    "shuffle_grouping",
    "consistent_hashing",
    "consistent_hashing_bounded",
    "power_of_random_choices",
]

CH_POINTS = 10
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


# -- keys and hashes ------------------------------------------------------------------------------


def key_codes(keys: np.ndarray) -> np.ndarray:
    """Each key as a stable unsigned 64-bit code (ints as themselves, strings by BLAKE2b)."""
    keys = np.asarray(keys)
    if keys.ndim != 1:
        raise InvalidParameterError(f"keys must be a one-dimensional array, got shape {keys.shape}")
    if keys.dtype.kind in "iu":
        return keys.astype(np.int64, copy=False).view(np.uint64)
    if keys.dtype.kind in "USO":
        import pandas as pd  # hash-based factorize: far faster than sorting strings

        codes, uniques = pd.factorize(keys)
        if (codes < 0).any():
            raise InvalidParameterError("keys must not contain None or NaN")
        digests = np.fromiter(
            (stable_hash(str(u)) for u in uniques),
            dtype=np.uint64,
            count=len(uniques),
        )
        return digests[codes]
    raise InvalidParameterError(f"keys must be ints or strings, got dtype {keys.dtype}")


_KERNELS: list[str] = []


def _kernel(function):
    """A loop that numba compiles on first use: the first call of any kernel compiles them all (a
    kernel that calls another must find it compiled), replacing each in the module."""
    _KERNELS.append(function.__name__)

    @functools.wraps(function)
    def first_call(*args):
        _compile_kernels()
        return globals()[function.__name__](*args)

    first_call.python = function
    return first_call


def _compile_kernels() -> None:
    numba = require("numba", "the stream partitioners (albic.planners.partitioners)")
    module = globals()
    for name in _KERNELS:
        if hasattr(module[name], "python"):  # not compiled yet
            module[name] = numba.njit(cache=True)(module[name].python)


def _salt(seed: int, i: int) -> np.uint64:
    return np.uint64((seed * 0x100000001B3 + i * 0x9E3779B97F4A7C15 + i) & 0xFFFFFFFFFFFFFFFF)


@_kernel
def _fmix64(h):
    # MurmurHash3's 64-bit finaliser: a bijection that mixes every input bit into every output bit.
    h ^= h >> np.uint64(33)
    h *= np.uint64(0xFF51AFD7ED558CCD)
    h ^= h >> np.uint64(33)
    h *= np.uint64(0xC4CEB9FE1A85EC53)
    h ^= h >> np.uint64(33)
    return h


@_kernel
def _hash_mod(codes, salt, n):
    out = np.empty(codes.shape[0], dtype=np.int64)
    for t in range(codes.shape[0]):
        out[t] = np.int64(_fmix64(codes[t] ^ salt) % np.uint64(n))
    return out


def _check(keys: np.ndarray, n_workers: int, n_sources: int, eps: float) -> np.ndarray:
    if isinstance(n_workers, bool) or not isinstance(n_workers, (int, np.integer)) or n_workers < 1:
        raise InvalidParameterError(f"n_workers must be an int >= 1, got {n_workers!r}")
    if isinstance(n_sources, bool) or not isinstance(n_sources, (int, np.integer)) or n_sources < 1:
        raise InvalidParameterError(f"n_sources must be an int >= 1, got {n_sources!r}")
    if not (isinstance(eps, (int, float)) and np.isfinite(eps) and eps >= 0):
        raise InvalidParameterError(f"eps must be a finite number >= 0, got {eps!r}")
    return key_codes(keys)


# -- the partitioners -----------------------------------------------------------------------------


def key_grouping(keys, n_workers, *, n_sources=1, eps=0.01, seed=0):
    """KG: every message of a key to one worker, ``hash_1(key) mod n`` (sources and eps unused)."""
    codes = _check(keys, n_workers, n_sources, eps)
    return _hash_mod(codes, _salt(seed, 0), n_workers)


@_kernel
def _two_choices(first, second, n_workers, n_sources):
    out = np.empty(first.shape[0], dtype=np.int64)
    local = np.zeros((n_sources, n_workers), dtype=np.int64)
    for t in range(first.shape[0]):
        s = t % n_sources
        a = first[t]
        b = second[t]
        w = a if local[s, a] <= local[s, b] else b
        local[s, w] += 1
        out[t] = w
    return out


def partial_key_grouping(keys, n_workers, *, n_sources=1, eps=0.01, seed=0):
    """PKG: the less loaded (by this source's own count) of the key's two hash choices."""
    codes = _check(keys, n_workers, n_sources, eps)
    first = _hash_mod(codes, _salt(seed, 0), n_workers)
    second = _hash_mod(codes, _salt(seed, 1), n_workers)
    return _two_choices(first, second, n_workers, n_sources)


def power_of_two_choices(keys, n_workers, *, n_sources=1, eps=0.01, seed=0):
    """POTC: the less loaded (by this source's own count) of two random workers per message."""
    codes = _check(keys, n_workers, n_sources, eps)
    rng = np.random.default_rng(seed)
    first = rng.integers(0, n_workers, size=len(codes))
    second = rng.integers(0, n_workers, size=len(codes))
    return _two_choices(first, second, n_workers, n_sources)


def shuffle_grouping(keys, n_workers, *, n_sources=1, eps=0.01, seed=0):
    """SG: each source deals its messages round robin, source ``s`` starting at worker ``s``."""
    codes = _check(keys, n_workers, n_sources, eps)
    t = np.arange(len(codes), dtype=np.int64)
    source = t % n_sources
    return (source + t // n_sources) % n_workers


def _ring(n_workers: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Sorted ring positions and the worker owning each (``CH_POINTS`` per worker)."""
    ids = np.arange(n_workers * CH_POINTS, dtype=np.uint64)
    positions = _fmix_all(ids, _salt(seed, 7919))
    order = np.argsort(positions, kind="stable")
    return positions[order], (ids[order] // np.uint64(CH_POINTS)).astype(np.int64)


@_kernel
def _fmix_all(codes, salt):
    out = np.empty(codes.shape[0], dtype=np.uint64)
    for t in range(codes.shape[0]):
        out[t] = _fmix64(codes[t] ^ salt)
    return out


def _ring_start(codes: np.ndarray, positions: np.ndarray, seed: int) -> np.ndarray:
    where = np.searchsorted(positions, _fmix_all(codes, _salt(seed, 0)), side="left")
    return np.where(where == len(positions), 0, where)  # wrap around the ring


def consistent_hashing(keys, n_workers, *, n_sources=1, eps=0.01, seed=0):
    """CH: the owner of the first ring point clockwise of the key (sources and eps unused)."""
    codes = _check(keys, n_workers, n_sources, eps)
    positions, owners = _ring(n_workers, seed)
    return owners[_ring_start(codes, positions, seed)]


@_kernel
def _bounded_ring(start, owners, n_workers, n_sources, eps):
    out = np.empty(start.shape[0], dtype=np.int64)
    local = np.zeros((n_sources, n_workers), dtype=np.int64)
    routed = np.zeros(n_sources, dtype=np.int64)
    points = owners.shape[0]
    for t in range(start.shape[0]):
        s = t % n_sources
        routed[s] += 1
        cap = np.ceil((1.0 + eps) * routed[s] / n_workers)
        p = start[t]
        while local[s, owners[p]] + 1 > cap:
            p = (p + 1) % points
        w = owners[p]
        local[s, w] += 1
        out[t] = w
    return out


def consistent_hashing_bounded(keys, n_workers, *, n_sources=1, eps=0.01, seed=0):
    """CHBL: like CH, but walk clockwise past workers at ``ceil((1 + eps) * average)``."""
    codes = _check(keys, n_workers, n_sources, eps)
    positions, owners = _ring(n_workers, seed)
    return _bounded_ring(_ring_start(codes, positions, seed), owners, n_workers, n_sources, float(eps))


@_kernel
def _porc(codes, salts, n_workers, n_sources, eps):
    out = np.empty(codes.shape[0], dtype=np.int64)
    local = np.zeros((n_sources, n_workers), dtype=np.int64)
    routed = np.zeros(n_sources, dtype=np.int64)
    n = np.uint64(n_workers)
    for t in range(codes.shape[0]):
        s = t % n_sources
        routed[s] += 1
        cap = np.ceil((1.0 + eps) * routed[s] / n_workers)
        i = 0
        while True:
            if i < salts.shape[0]:
                salt = salts[i]
            else:  # beyond the precomputed salts: derive more, deterministically
                salt = _fmix64(salts[i % salts.shape[0]] + np.uint64(i))
            w = np.int64(_fmix64(codes[t] ^ salt) % n)
            if local[s, w] + 1 <= cap:
                break
            i += 1
        local[s, w] += 1
        out[t] = w
    return out


def power_of_random_choices(keys, n_workers, *, n_sources=1, eps=0.01, seed=0):
    """PORC: the first of ``hash_1(key), hash_2(key), ...`` below ``ceil((1 + eps) * average)``."""
    codes = _check(keys, n_workers, n_sources, eps)
    salts = np.array([_salt(seed, i) for i in range(64)], dtype=np.uint64)
    return _porc(codes, salts, n_workers, n_sources, float(eps))


Partitioner = Callable[..., np.ndarray]

PARTITIONERS: dict[str, Partitioner] = {
    "kg": key_grouping,
    "pkg": partial_key_grouping,
    "potc": power_of_two_choices,
    "sg": shuffle_grouping,
    "ch": consistent_hashing,
    "chbl": consistent_hashing_bounded,
    "porc": power_of_random_choices,
}
