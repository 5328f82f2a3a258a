"""The single-machine statistics engines against their baseline, DuckDB SQL written by hand.

Each (engine, scale) runs in a subprocess of its own, so its peak memory (the child's maximum
resident set, from ``wait4``) is its own; the baseline (:mod:`benchmarks.stats_duckdb_baseline`)
runs just before albic's engine at every scale, on the same Parquet file. The baseline hashes keys
with DuckDB's ``hash()``, so its key groups differ from albic's; :func:`check_baseline` shows it
computes the same aggregates: events and distinct keys per period and operator, and events per
period and edge, equal to albic's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.stats_legs import KEY_GROUPS, leg_row


def _flights_spec():
    from albic.stats.traces import flights

    return flights.spec()


def _leg(engine: str, events: str, scale: int, out: str) -> float:
    """Run one engine once; the job's seconds."""
    spec = _flights_spec()
    started = time.perf_counter()
    if engine == "duckdb sql":
        import duckdb

        from benchmarks import stats_duckdb_baseline

        con = duckdb.connect()
        stats_duckdb_baseline.run(con, events, spec, Path(out), scale=scale, key_groups=KEY_GROUPS)
        con.close()
    else:
        from albic.stats.duckdb_engine import run_duckdb
        from albic.stats.pandas_engine import run_pandas

        job = {"duckdb": run_duckdb, "pandas": run_pandas}[engine]
        job(events, spec, out, key_groups=KEY_GROUPS, scale=scale)
    return time.perf_counter() - started


def measure(engine: str, events: str, scale: int, out: str) -> dict:
    """Seconds and peak memory (MB) of one engine's run, in a fresh subprocess."""
    command = [
        sys.executable,
        "-m",
        "benchmarks.stats_single_machine",
        "--leg",
        engine,
        events,
        str(scale),
        out,
    ]
    child = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    stdout = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise RuntimeError(f"{engine} at scale {scale} failed (exit {child.returncode})")
    return {
        "seconds": json.loads(stdout.strip().splitlines()[-1])["seconds"],
        "peak_mb": usage.ru_maxrss / 1024,
    }


def check_baseline(albic_out: Path, baseline_out: Path) -> None:
    """Fail unless the baseline's aggregates equal albic's where the hash does not enter: events and
    distinct keys per period and operator, events per period and edge. Summed in DuckDB: the tables
    hold tens of millions of rows at 30x, too many for pandas' strings."""
    import duckdb

    spec = _flights_spec()
    con = duckdb.connect()
    label = "strftime(make_timestamp(p * 1000000), '%Y-%m-%dT%H:%M')"
    _same_sums(
        con,
        f"SELECT period, operator, sum(events), sum(keys) FROM read_parquet('{albic_out}/key_groups/*.parquet') "
        "GROUP BY ALL",
        [
            f"SELECT {label} AS period, '{op.name}' AS operator, sum(events), sum(keys) "
            f"FROM read_parquet('{baseline_out}/kg_{op.name}.parquet') GROUP BY ALL"
            for op in spec.operators
        ],
        "events or keys per period and operator",
    )
    _same_sums(
        con,
        f"SELECT period, split_part(src, '/', 1), split_part(dst, '/', 1), sum(events) "
        f"FROM read_parquet('{albic_out}/traffic/*.parquet') GROUP BY ALL",
        [
            f"SELECT {label} AS period, '{e.src}', '{e.dst}', sum(events) "
            f"FROM read_parquet('{baseline_out}/traffic_{e.src}_{e.dst}.parquet') GROUP BY ALL"
            for e in spec.edges
        ],
        "events per period and edge",
    )
    con.close()


def _same_sums(con, ours: str, theirs: list[str], what: str) -> None:
    """Fail unless albic's sums (the query ``ours``) equal the baseline's (the union of ``theirs``)."""
    mine = con.execute(f"{ours} ORDER BY ALL").fetchall()
    baseline = con.execute(" UNION ALL ".join(theirs) + " ORDER BY ALL").fetchall()
    assert mine and mine == baseline, f"the baseline's {what} differ from albic's"


def rows(events: str, count: int, scales: tuple[int, ...], pandas_scales: tuple[int, ...]) -> list[dict]:
    """Rows (:data:`benchmarks.stats_legs.ROW_KEYS`) of albic's DuckDB engine and, at
    ``pandas_scales``, its pandas twin, each beside the DuckDB SQL baseline run just before them
    at the same scale (checked to compute the same aggregates)."""
    table = []
    for scale in scales:
        with tempfile.TemporaryDirectory(prefix="albic-bench-") as scratch:
            base = measure("duckdb sql", events, scale, f"{scratch}/baseline")
            for engine in ["duckdb", *(["pandas"] if scale in pandas_scales else [])]:
                leg = measure(engine, events, scale, f"{scratch}/{engine}")
                if engine == "duckdb":
                    check_baseline(Path(scratch) / engine, Path(scratch) / "baseline")
                label = "albic duckdb" if engine == "duckdb" else "albic pandas twin"
                table.append(
                    leg_row(
                        label,
                        scale,
                        count * scale,
                        leg["seconds"],
                        leg["peak_mb"],
                        "duckdb sql",
                        base["seconds"],
                        base["peak_mb"],
                    )
                )
    return table


def main() -> None:
    if sys.argv[1] == "--leg":
        engine, events, scale, out = sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
        print(json.dumps({"seconds": _leg(engine, events, scale, out)}))


if __name__ == "__main__":
    main()
