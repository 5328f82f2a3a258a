"""albic's Flink hash and range split against Flink's own classes on the JVM (flink-dist from the
package index; see conftest.py): 12,000 keys of each Java type at several maximum parallelisms; every
subtask's range and every key group's subtask at every parallelism up to the maximum, at several
maximum parallelisms (over 500,000 ranges, over a million key groups); Flink's default maximum
parallelism for every operator parallelism 1 .. 32768."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
from flink_cluster import quick_jvm_options  # tests/engines is on sys.path (rootdir-less tests)

from albic.core.flink_keys import (
    default_max_parallelism,
    flink_key_group,
    flink_key_group_range,
    flink_key_group_ranges,
    flink_subtask,
    flink_subtasks,
)

JAVA = Path(__file__).with_name("FlinkKeyGroups.java")
# Each run compiles the source and answers at once: the quick compiler, as the tests' other JVMs.
RUN_JAVA = ["java", *quick_jvm_options().split()]
MAX_PARALLELISMS = [1, 2, 7, 128, 1000, 32768]
N_KEYS = 12_000
pytestmark = pytest.mark.slow  # a JVM start per test (and the jar's download where make flink did not run)


def run_flink(flink_dist: Path, tmp_path: Path, key_type: str, lines: list[str]) -> np.ndarray:
    keys = tmp_path / f"{key_type}.txt"
    keys.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    done = subprocess.run(
        [*RUN_JAVA, "-cp", str(flink_dist), str(JAVA), str(keys), key_type, *map(str, MAX_PARALLELISMS)],
        capture_output=True,
        text=True,
        check=True,
    )
    rows = [list(map(int, line.split("\t"))) for line in done.stdout.splitlines()]
    assert len(rows) == len(lines)
    return np.array(rows, dtype=np.int64)


def random_strings(rng: np.random.Generator, count: int) -> list[str]:
    """ASCII, Latin/Greek/CJK (BMP) and astral characters (surrogate pairs in Java), empty too."""
    alphabets = [
        [chr(c) for c in range(0x20, 0x7F)],
        [chr(c) for c in list(range(0xC0, 0x250)) + list(range(0x391, 0x3CA)) + list(range(0x4E00, 0x4E80))],
        [chr(c) for c in range(0x1F600, 0x1F650)] + [chr(0x10FFFF), chr(0x10000)],
    ]
    keys = {"", "a", "N14228", "hello world", "\u00e9t\u00e9", "\U0001f600"}
    while len(keys) < count:
        length = int(rng.integers(0, 40))
        pool = alphabets[int(rng.integers(0, 3))] + alphabets[0]
        keys.add("".join(pool[i] for i in rng.integers(0, len(pool), size=length)))
    keys = sorted(keys)
    keys.remove("")  # the empty key in the middle, not first: it must not cut its neighbours short
    keys.insert(len(keys) // 2, "")
    return keys


def test_string_keys_match_flink(flink_dist, tmp_path):
    keys = random_strings(np.random.default_rng(1), N_KEYS)
    expected = run_flink(flink_dist, tmp_path, "string", keys)
    for j, max_p in enumerate(MAX_PARALLELISMS):
        ours = flink_key_group(keys, max_parallelism=max_p, key_type="string")
        mismatch = np.flatnonzero(ours != expected[:, j])
        assert mismatch.size == 0, [(keys[i], ours[i], expected[i, j]) for i in mismatch[:5]]
    assert len(set(expected[:, 3].tolist())) == 128  # the keys reach every key group
    assert flink_key_group(keys[7], 128) == expected[7, 3]  # the scalar form too


@pytest.mark.parametrize("key_type, bits", [("int", 32), ("long", 64)])
def test_integer_keys_match_flink(flink_dist, tmp_path, key_type, bits):
    rng = np.random.default_rng(2)
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    edges = [0, 1, -1, low, high, low + 1, high - 1, 1 << 31, -(1 << 31) - 1][: 7 if bits == 32 else 9]
    values = edges + rng.integers(low, high, size=N_KEYS, endpoint=True, dtype=np.int64).tolist()
    values += list(range(-500, 500))
    expected = run_flink(flink_dist, tmp_path, key_type, [str(v) for v in values])
    for j, max_p in enumerate(MAX_PARALLELISMS):
        ours = flink_key_group(np.array(values, dtype=np.int64), max_parallelism=max_p, key_type=key_type)
        mismatch = np.flatnonzero(ours != expected[:, j])
        assert mismatch.size == 0, [(values[i], ours[i], expected[i, j]) for i in mismatch[:5]]
    assert flink_key_group(values[3], 128, key_type=key_type) == expected[3, 3]


RANGE_MAX_PARALLELISMS = [1, 2, 7, 10, 128, 1000]


def jvm_integers(flink_dist: Path, mode: str, *numbers: int) -> np.ndarray:
    done = subprocess.run(
        [*RUN_JAVA, "-cp", str(flink_dist), str(JAVA), "-", mode, *map(str, numbers)],
        capture_output=True,
        text=True,
        check=True,
    )
    return np.array(done.stdout.split(), dtype=np.int64)


def test_every_range_at_every_parallelism_matches_flink(flink_dist):
    """computeKeyGroupRangeForOperatorIndex for every subtask of every parallelism 1 .. maxP."""
    flat = jvm_integers(flink_dist, "ranges", *RANGE_MAX_PARALLELISMS).reshape(-1, 2)
    ours = [
        r
        for max_p in RANGE_MAX_PARALLELISMS
        for p in range(1, max_p + 1)
        for r in flink_key_group_ranges(max_p, p)
    ]
    assert len(ours) == flat.shape[0] == sum(m * (m + 1) // 2 for m in RANGE_MAX_PARALLELISMS)
    mismatch = np.flatnonzero((np.array(ours) != flat).any(axis=1))
    assert mismatch.size == 0, [(ours[i], flat[i].tolist()) for i in mismatch[:5]]
    # The scalar form agrees on a sample (it is the same arithmetic, one subtask at a time).
    sample = [(1000, p, s) for p in (1, 3, 7, 999, 1000) for s in (0, p // 2, p - 1)]
    offset = {p: sum(range(1, p)) for p in (1, 3, 7, 999, 1000)}
    base = sum(m * (m + 1) // 2 for m in RANGE_MAX_PARALLELISMS[:-1])
    for max_p, p, s in sample:
        assert flink_key_group_range(s, max_p, p) == tuple(flat[base + offset[p] + s])
    assert len(ours) > 500_000


def test_every_operator_index_matches_flink(flink_dist):
    """computeOperatorIndexForKeyGroup for every key group at every parallelism 1 .. maxP."""
    flat = jvm_integers(flink_dist, "subtasks", *RANGE_MAX_PARALLELISMS)
    ours = np.concatenate(
        [flink_subtasks(max_p, p) for max_p in RANGE_MAX_PARALLELISMS for p in range(1, max_p + 1)]
    )
    assert ours.shape == flat.shape and flat.size > 1_000_000
    mismatch = np.flatnonzero(ours != flat)
    assert mismatch.size == 0, mismatch[:5]
    assert (
        flink_subtask(np.arange(1000), 1000, 7).tolist()
        == flat[sum(m * m for m in RANGE_MAX_PARALLELISMS[:-1]) + 6 * 1000 :][:1000].tolist()
    )


def test_default_max_parallelism_matches_flink(flink_dist):
    """computeDefaultMaxParallelism for every operator parallelism 1 .. 32768."""
    flat = jvm_integers(flink_dist, "defaults", 1, 32768)
    ours = np.array([default_max_parallelism(p) for p in range(1, 32769)])
    assert flat.size == 32768
    mismatch = np.flatnonzero(ours != flat)
    assert mismatch.size == 0, [(int(i) + 1, ours[i], flat[i]) for i in mismatch[:5]]
    assert set(flat.tolist()) == {2**k for k in range(7, 16)}  # 128 .. 32768: every step seen
