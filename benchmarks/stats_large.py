"""A trace larger than the machine's patience: 100 M synthetic events through the DuckDB engine.

The events are written once, a day at a time (memory bounded), to one Parquet file: 30 days of a
stream of ``keys`` items whose popularity is Zipf-skewed (exponent 1.1), each event's time uniform
in its hour, over the zipf trace's topology (``item`` -> ``category``, item mod 16;
:mod:`albic.stats.traces.zipf`). Then ``albic stats --engine duckdb`` computes hourly statistics
with 1,024 key groups per operator in a subprocess, twice: with DuckDB's default memory limit and
with 2 GB, under which it works out of core; each run's time and peak resident memory are
reported beside the machine's memory and the input's size on disk.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DAYS = 30
KEY_GROUPS = 1024
#: DuckDB's own, then a limit far below what the job holds given free rein: it spills to disk.
MEMORY_LIMITS = ("", "2GB")


def write_trace(path: Path, events: int, keys: int = 1_000_000, seed: int = 0) -> int:
    """Write about ``events`` events (a day at a time); returns how many were written."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    per_day = events // DAYS
    start = np.datetime64("2024-01-01T00:00:00", "us").astype(np.int64)
    written = 0
    with pq.ParquetWriter(
        path,
        pa.schema([("ts", pa.timestamp("us", tz="UTC")), ("item", pa.string()), ("category", pa.string())]),
    ) as writer:
        for day in range(DAYS):
            n = per_day if day < DAYS - 1 else events - written
            items = pa.array((rng.zipf(1.1, n) - 1) % keys)
            times = start + day * 86_400_000_000 + np.sort(rng.integers(0, 86_400_000_000, n))
            table = pa.table(
                {
                    "ts": pa.array(times, type=pa.timestamp("us", tz="UTC")),
                    "item": pc.binary_join_element_wise("i", pc.cast(items, pa.string()), ""),
                    "category": pc.binary_join_element_wise(
                        "c", pc.cast(pc.bit_wise_and(items, 15), pa.string()), ""
                    ),
                }
            )
            writer.write_table(table, row_group_size=1 << 20)
            written += n
    return written


def _job(events: str, out: str, memory_limit: str) -> None:
    from albic.stats.duckdb_engine import DuckDBEngine
    from albic.stats.job import run
    from albic.stats.request import StatsRequest
    from albic.stats.traces import zipf

    request = StatsRequest(events, zipf.spec(), out, key_groups=KEY_GROUPS, period="1h")
    run(request, DuckDBEngine(memory_limit=memory_limit or None))


def _measure(path: Path, out: str, memory_limit: str) -> tuple[float, float]:
    """Seconds and peak resident GiB of the job in a subprocess of its own."""
    command = [sys.executable, "-m", "benchmarks.stats_large", "--job", str(path), out, memory_limit]
    started = time.perf_counter()
    child = subprocess.Popen(command)
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError("the DuckDB statistics job failed")
    return seconds, usage.ru_maxrss / 2**20


def run(events: int = 100_000_000) -> str:
    """The table: events, input size, job seconds, events per second, peak memory."""
    with tempfile.TemporaryDirectory(prefix="albic-large-", dir=os.environ.get("ALBIC_BENCH_DIR")) as scratch:
        path = Path(scratch) / "events.parquet"
        started = time.perf_counter()
        count = write_trace(path, events)
        generated = time.perf_counter() - started
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
        lines = [
            f"{count:,} synthetic events ({path.stat().st_size / 2**30:.1f} GiB of Parquet, written in "
            f"{generated:.0f}s), hourly over {DAYS} days, {KEY_GROUPS} key groups, engine duckdb, "
            f"on a machine of {memory:.0f} GiB"
        ]
        for limit in MEMORY_LIMITS:
            seconds, peak = _measure(path, f"{scratch}/stats-{limit or 'default'}", limit)
            lines.append(
                f"memory limit {limit or 'DuckDB default (80 % of memory)'}: job {seconds:.0f}s "
                f"({count / seconds:,.0f} events/s), peak memory {peak:.2f} GiB"
            )
        return "\n".join(lines)


if __name__ == "__main__":
    if sys.argv[1] == "--job":
        _job(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        print(run(int(sys.argv[1])))
