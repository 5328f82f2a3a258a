"""albic's Flink hash and range split against Flink's own classes on the JVM (flink-dist from the
package index; see conftest.py): 12,000 keys of each Java type at several maximum parallelisms."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from albic.core.flink_keys import flink_key_group, flink_key_group_range, flink_subtask

JAVA = Path(__file__).with_name("FlinkKeyGroups.java")
MAX_PARALLELISMS = [1, 2, 7, 128, 1000, 32768]
N_KEYS = 12_000
pytestmark = pytest.mark.slow  # a JVM start per test, and the jar's download on a fresh machine


def run_flink(flink_dist: Path, tmp_path: Path, key_type: str, lines: list[str]) -> np.ndarray:
    keys = tmp_path / f"{key_type}.txt"
    keys.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    done = subprocess.run(
        ["java", "-cp", str(flink_dist), str(JAVA), str(keys), key_type, *map(str, MAX_PARALLELISMS)],
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


def test_range_split_matches_flink(flink_dist, tmp_path):
    done = subprocess.run(
        ["java", "-cp", str(flink_dist), str(JAVA), "-", "ranges", "1", "10", "128", "1000"],
        capture_output=True,
        text=True,
        check=True,
    )
    ranges = subtasks = 0
    for line in done.stdout.splitlines():
        kind, *numbers = line.split()
        values = list(map(int, numbers))
        if kind == "R":
            max_p, p, s, start, end = values
            assert flink_key_group_range(s, max_p, p) == (start, end)
            ranges += 1
        else:
            max_p, p, g, s = values
            assert flink_subtask(g, max_p, p) == s
            subtasks += 1
    assert ranges > 5000 and subtasks > 75_000
