"""Stream partitioners against references written from their definitions, and the paper's claims."""

import hashlib
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from albic.base.errors import InvalidParameterError
from albic.core.metrics import replication, routing_imbalance
from albic.planners.partitioners import CH_POINTS, PARTITIONERS, key_codes

M64 = (1 << 64) - 1


def fmix64(h):  # MurmurHash3's finaliser, written out in plain Python integers
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & M64
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & M64
    h ^= h >> 33
    return h


def salt(seed, i):
    return (seed * 0x100000001B3 + i * 0x9E3779B97F4A7C15 + i) & M64


def code(key):
    if isinstance(key, str):
        return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "big")
    return key & M64


def choice(key, i, n, seed=0):
    return fmix64(code(key) ^ salt(seed, i)) % n


streams = st.lists(st.integers(0, 30), min_size=1, max_size=300)


def test_key_grouping_is_murmur_fmix64_of_the_key_code():
    keys = [0, 1, 17, 2**40, -5]
    assert PARTITIONERS["kg"](np.array(keys), 7).tolist() == [choice(k, 0, 7) for k in keys]
    words = ["the", "of", "zebra", "the"]
    assert PARTITIONERS["kg"](np.array(words), 5).tolist() == [choice(w, 0, 5) for w in words]
    assert PARTITIONERS["kg"](np.array(words, dtype=object), 5).tolist() == [choice(w, 0, 5) for w in words]


def test_shuffle_grouping_deals_round_robin_per_source():
    # source 0 reads messages 0, 2, 4 and starts at worker 0; source 1 reads 1, 3, 5 and starts at 1
    assert PARTITIONERS["sg"](np.zeros(6, dtype=int), 3, n_sources=2).tolist() == [0, 1, 1, 2, 2, 0]


@settings(max_examples=40, deadline=None)
@given(streams, st.integers(1, 6), st.integers(1, 3))
def test_pkg_follows_its_definition_and_uses_at_most_two_workers_per_key(keys, n, sources):
    local = [[0] * n for _ in range(sources)]
    expected = []
    for t, key in enumerate(keys):
        s, a, b = t % sources, choice(key, 0, n), choice(key, 1, n)
        w = a if local[s][a] <= local[s][b] else b
        local[s][w] += 1
        expected.append(w)
    got = PARTITIONERS["pkg"](np.array(keys), n, n_sources=sources)
    assert got.tolist() == expected
    for key in set(keys):
        assert len(set(got[np.array(keys) == key].tolist())) <= 2


def test_potc_picks_the_less_loaded_of_two_random_workers():
    keys = np.zeros(1000, dtype=int)  # one key: POTC ignores keys
    rng = np.random.default_rng(3)
    first, second = rng.integers(0, 4, 1000), rng.integers(0, 4, 1000)
    load, expected = [0] * 4, []
    for a, b in zip(first, second):
        w = a if load[a] <= load[b] else b
        load[w] += 1
        expected.append(w)
    assert PARTITIONERS["potc"](keys, 4, seed=3).tolist() == expected
    assert max(load) - min(load) <= 2  # the power of two choices


def bound_holds(keys, workers, n, sources, eps):
    for s in range(sources):
        mine = workers[s::sources]
        counts = np.zeros(n, dtype=int)
        for t, w in enumerate(mine, start=1):
            counts[w] += 1
            if counts[w] > math.ceil((1 + eps) * t / n):
                return False
    return True


@settings(max_examples=40, deadline=None)
@given(streams, st.integers(1, 6), st.integers(1, 3), st.sampled_from([0.0, 0.01, 0.3, 1.0]))
def test_porc_and_bounded_ch_never_exceed_their_capacity_bound(keys, n, sources, eps):
    for name in ("porc", "chbl"):
        workers = PARTITIONERS[name](np.array(keys), n, n_sources=sources, eps=eps)
        assert bound_holds(keys, workers, n, sources, eps), name


def test_without_a_binding_capacity_porc_is_key_grouping_and_chbl_is_ch():
    keys = np.random.default_rng(0).zipf(1.3, 5000)
    loose = 10.0 * len(keys)
    assert (PARTITIONERS["porc"](keys, 9, eps=loose) == PARTITIONERS["kg"](keys, 9)).all()
    assert (PARTITIONERS["chbl"](keys, 9, eps=loose) == PARTITIONERS["ch"](keys, 9)).all()


def test_consistent_hashing_moves_keys_only_to_an_added_worker():
    keys = np.arange(20000)
    before = PARTITIONERS["ch"](keys, 10)
    after = PARTITIONERS["ch"](keys, 11)
    moved = before != after
    assert (after[moved] == 10).all()
    assert 0.04 < moved.mean() < 0.16  # about 1/11 of the keys, with CH_POINTS points per worker
    assert CH_POINTS == 10


def test_seeds_change_the_hashes_deterministically():
    keys = np.arange(1000)
    for name, f in PARTITIONERS.items():
        assert (f(keys, 8, seed=1) == f(keys, 8, seed=1)).all(), name
    assert (PARTITIONERS["kg"](keys, 8, seed=1) != PARTITIONERS["kg"](keys, 8, seed=2)).any()


def zipf_stream(n=200_000, z=1.2, keys=10_000, seed=0):
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, keys + 1) ** z
    return rng.choice(keys, size=n, p=p / p.sum())


def test_table_1_shape_kg_and_pkg_grow_porc_and_chbl_stay_near_eps():
    keys = zipf_stream()
    imbalance = {
        name: [routing_imbalance(PARTITIONERS[name](keys, n, eps=0.3), n) for n in (10, 100, 1000)]
        for name in ("kg", "pkg", "porc", "chbl", "sg")
    }
    for name in ("kg", "pkg"):
        assert imbalance[name][0] < imbalance[name][1] < imbalance[name][2], (name, imbalance[name])
    for name in ("porc", "chbl"):
        assert max(imbalance[name]) <= 0.3 + 0.01, (name, imbalance[name])  # ceil() adds at most 1 message
    assert max(imbalance["sg"]) < 0.01
    assert imbalance["kg"][2] > 10 * 0.3


def test_epsilon_trades_imbalance_for_memory():
    keys = zipf_stream()
    runs = [PARTITIONERS["porc"](keys, 100, eps=eps) for eps in (0.001, 0.01, 0.1, 1.0)]
    imbalance = [routing_imbalance(w, 100) for w in runs]
    memory = [replication(keys, w) for w in runs]
    assert imbalance == sorted(imbalance) and memory == sorted(memory, reverse=True), (imbalance, memory)
    assert replication(keys, PARTITIONERS["kg"](keys, 100)) == 1.0
    assert memory[0] < replication(keys, PARTITIONERS["sg"](keys, 100))


@pytest.mark.parametrize(
    "call, fragment",
    [
        (lambda f: f(np.arange(5), 0), "n_workers must be an int >= 1, got 0"),
        (lambda f: f(np.arange(5), 3, n_sources=0), "n_sources must be an int >= 1"),
        (lambda f: f(np.arange(5), 3, eps=-0.1), "eps must be a finite number >= 0"),
        (lambda f: f(np.zeros((2, 2)), 3), "one-dimensional"),
        (lambda f: f(np.array([0.5, 1.5]), 3), "ints or strings, got dtype float64"),
        (lambda f: f(np.array(["a", None], dtype=object), 3), "must not contain None"),
    ],
)
def test_bad_input_is_named(call, fragment):
    for f in PARTITIONERS.values():
        with pytest.raises(InvalidParameterError, match=fragment):
            call(f)


def test_key_codes_are_stable_and_typed():
    assert key_codes(np.array([3, -1])).tolist() == [3, M64]
    assert key_codes(np.array(["a"]))[0] == code("a")
