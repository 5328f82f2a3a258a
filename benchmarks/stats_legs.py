"""The legs of the statistics benchmark (``benchmarks.stats_speed``): each leg runs one engine at
several scales and returns one row per scale, a dict with the keys of :data:`ROW_KEYS`:

- ``engine``: what ran (e.g. ``albic spark local[2]``);
- ``scale``, ``events`` (events read x scale), ``seconds`` (the job, warm), ``events_per_s``;
- ``peak_mb``: the peak resident memory of the leg's processes during that job (:class:`PeakMemory`);
- ``baseline``, ``baseline_seconds``, ``baseline_peak_mb``: the same-run baseline of that engine
  (here the hand-written PySpark job of :mod:`benchmarks.stats_spark_baseline`, in the same Spark
  session), and ``ratio`` = seconds / baseline_seconds (< 1: albic is faster).

:func:`spark_legs` runs the Spark legs, each in its own subprocess (a process holds one Spark
master); :func:`format_rows` prints any legs' rows as one table.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROW_KEYS = (
    "engine",
    "scale",
    "events",
    "seconds",
    "events_per_s",
    "peak_mb",
    "baseline",
    "baseline_seconds",
    "baseline_peak_mb",
    "ratio",
)
KEY_GROUPS = 128


def leg_row(
    engine: str,
    scale: int,
    events: int,
    seconds: float,
    peak_mb: float | None,
    baseline: str | None = None,
    baseline_seconds: float | None = None,
    baseline_peak_mb: float | None = None,
) -> dict:
    """One row of a leg (:data:`ROW_KEYS`); ``events`` is the scaled trace's."""
    return {
        "engine": engine,
        "scale": scale,
        "events": events,
        "seconds": round(seconds, 2),
        "events_per_s": round(events / seconds),
        "peak_mb": None if peak_mb is None else round(peak_mb),
        "baseline": baseline,
        "baseline_seconds": None if baseline_seconds is None else round(baseline_seconds, 2),
        "baseline_peak_mb": None if baseline_peak_mb is None else round(baseline_peak_mb),
        "ratio": None if baseline_seconds is None else round(seconds / baseline_seconds, 2),
    }


def format_rows(rows: list[dict]) -> str:
    """The rows as one table, by scale then engine."""
    import pandas as pd

    frame = pd.DataFrame(rows, columns=list(ROW_KEYS)).sort_values(["scale", "engine"], kind="stable")
    frame["scale"] = frame["scale"].map(lambda s: f"{s}x")
    frame = frame.astype(object).where(frame.notna(), "-")
    return frame.rename(
        columns={"seconds": "s", "events_per_s": "events/s", "baseline_seconds": "baseline s"}
    ).to_string(index=False, na_rep="-")


class PeakMemory:
    """The peak resident memory of this process and all its descendants (for a Spark leg: the
    driver's Python, the JVM and its Python workers) over a stretch of time: on Linux, every
    process's peak (``VmHWM``) is reset at :meth:`start` and their sum read at :meth:`mb` (an upper
    bound of the peak of the sum, as the processes may peak at different moments). Elsewhere the
    largest peak of this process and of its finished children since it started
    (``getrusage``), which cannot be reset."""

    def __init__(self) -> None:
        self.linux = Path("/proc/self/clear_refs").exists()

    def start(self) -> None:
        if self.linux:
            for pid in _tree(os.getpid()):
                try:
                    Path(f"/proc/{pid}/clear_refs").write_text("5")
                except OSError:  # a process that ended, or one we may not reset
                    pass

    def mb(self) -> float:
        if self.linux:
            return sum(_status_kb(pid, "VmHWM") for pid in _tree(os.getpid())) / 1024
        peaks = [
            resource.getrusage(who).ru_maxrss for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
        ]
        return max(peaks) / (1024 * 1024 if sys.platform == "darwin" else 1024)


def _tree(root: int) -> list[int]:
    """``root`` and every process descending from it (from ``/proc/*/stat``)."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parent = int(stat[stat.rindex(")") + 2 :].split()[1])
            parents.setdefault(parent, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += parents.get(pid, [])
    return found


def _status_kb(pid: int, field: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def timed(job, memory: PeakMemory) -> tuple[float, float]:
    """Seconds and peak MB of ``job()``."""
    memory.start()
    started = time.perf_counter()
    job()
    return time.perf_counter() - started, memory.mb()


def spark_leg(master: str, events: str, scales: tuple[int, ...]) -> dict:
    """In this process: albic's Spark job and the hand-written one on one session, at each scale,
    after a first (cold) albic job at 1x; at 1x the two jobs' aggregates are checked equal.
    Returns ``{"rows": [...], "session": s, "cold": s, "failures": [...]}`` (a failed baseline
    leaves its row's baseline empty)."""
    import pyarrow.parquet as pq

    from albic.spark.session import error_cause, spark_session
    from albic.spark.stats_engine import run_spark
    from albic.stats.traces import flights
    from benchmarks.stats_spark_baseline import run_baseline, same_aggregates, topology

    spec = flights.spec()
    operators, edges = topology(spec)
    n = pq.ParquetFile(events).metadata.num_rows
    memory = PeakMemory()
    started = time.perf_counter()
    spark = spark_session(master, "albic-bench")
    session = time.perf_counter() - started
    scratch = Path(tempfile.mkdtemp(prefix="albic-bench-"))
    try:

        def albic(scale: int, out: Path) -> None:
            run_spark(events, spec, out, key_groups=KEY_GROUPS, scale=scale, spark=spark)

        def baseline(scale: int, out: Path) -> None:
            run_baseline(
                spark, events, spec.timestamp, operators, edges, out, key_groups=KEY_GROUPS, scale=scale
            )

        cold, _ = timed(lambda: albic(1, scratch / "cold"), memory)
        rows, failures = [], []
        for scale in scales:
            a, b = scratch / f"albic-{scale}", scratch / f"baseline-{scale}"
            seconds, peak = timed(lambda: albic(scale, a), memory)
            try:
                base_seconds, base_peak = timed(lambda: baseline(scale, b), memory)
            except Exception as err:  # a baseline that fails (out of memory) is a result too
                base_seconds = base_peak = None
                failures.append(f"{master} {scale}x: the hand-written job failed: {error_cause(err)}")
            if scale == 1 and base_seconds is not None:
                problem = same_aggregates(a, b)
                if problem:
                    raise AssertionError(f"on {master} the hand-written job differs from albic's: {problem}")
            shutil.rmtree(a, ignore_errors=True)
            shutil.rmtree(b, ignore_errors=True)
            engine = f"albic spark {master}"
            rows.append(
                leg_row(
                    engine, scale, n * scale, seconds, peak, "hand-written PySpark", base_seconds, base_peak
                )
            )
    finally:
        spark.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    return {"rows": rows, "session": session, "cold": cold, "failures": failures}


def spark_legs(events: str, scales: tuple[int, ...], masters: tuple[str, ...]) -> dict:
    """:func:`spark_leg` on each master, each in a subprocess of its own: ``{master: result}``."""
    legs = {}
    for master in masters:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "benchmarks.stats_legs",
                "--spark-leg",
                master,
                events,
                ",".join(map(str, scales)),
            ],
            capture_output=True,
            text=True,
        )
        if done.returncode:
            raise RuntimeError(f"the Spark leg on {master} failed:\n{done.stderr[-3000:]}")
        legs[master] = json.loads(done.stdout.strip().splitlines()[-1])
    return legs


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--spark-leg":
        master, events, scales = sys.argv[2], sys.argv[3], tuple(map(int, sys.argv[4].split(",")))
        print(json.dumps(spark_leg(master, events, scales)))
        return
    raise SystemExit("usage: python -m benchmarks.stats_legs --spark-leg MASTER EVENTS SCALES")


if __name__ == "__main__":
    main()
