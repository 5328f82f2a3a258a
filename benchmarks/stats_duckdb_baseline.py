"""The single-machine engine's baseline: the statistics' aggregates as a user would write them in
DuckDB SQL in an afternoon.

Per operator, period and key group: events, distinct keys, timed events and busy seconds; per edge,
period and pair of key groups: events. The trace is replayed ``scale`` times by a cross join with
the copies (copy ``c > 0`` appends ``#c`` to every key, as ``--scale`` does), periods are UTC hours
of the event time, and keys go to key groups by DuckDB's own ``hash()``: albic's blake2b has no
DuckDB function, and a Python function per event would make the baseline a straw man. The output is
Parquet, the key groups as integers, the periods as epoch seconds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def _key(op: Any) -> str:
    text = " || '|' || ".join(f'CAST("{c}" AS VARCHAR)' for c in op.keys)
    return f"(({text}) || CASE WHEN copy > 0 THEN '#' || copy ELSE '' END)"


def run(con: Any, events: str, spec: Any, out: Path, *, scale: int, key_groups: int) -> None:
    """Write ``kg_<operator>.parquet`` and ``traffic_<src>_<dst>.parquet`` into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    period = f'epoch_us("{spec.timestamp}") // 3600000000 * 3600'
    keyed = ", ".join(f"{_key(op)} AS key_{i}" for i, op in enumerate(spec.operators))
    hashed = ", ".join(f"hash(key_{i}) % {key_groups} AS kg_{i}" for i in range(len(spec.operators)))
    service = [f', "{op.service_time}" AS busy_{i}' for i, op in enumerate(spec.operators) if op.service_time]
    con.execute(
        f"""CREATE OR REPLACE TEMP TABLE scaled AS SELECT {period} AS p, {keyed}{"".join(service)}
        FROM read_parquet('{events}'), range({scale}) copies(copy)"""
    )
    con.execute(f"CREATE OR REPLACE TEMP TABLE hashed AS SELECT *, {hashed} FROM scaled")
    for i, op in enumerate(spec.operators):
        busy = f"busy_{i}" if op.service_time else "NULL::DOUBLE"
        con.execute(
            f"""COPY (SELECT p, kg_{i} AS idx, count(*) AS events, count(DISTINCT key_{i}) AS keys,
                count({busy}) AS timed, sum({busy}) AS busy
            FROM hashed WHERE key_{i} IS NOT NULL GROUP BY p, idx) TO '{out}/kg_{op.name}.parquet'"""
        )
    position = {op.name: i for i, op in enumerate(spec.operators)}
    for edge in spec.edges:
        a, b = position[edge.src], position[edge.dst]
        con.execute(
            f"""COPY (SELECT p, kg_{a} AS s, kg_{b} AS d, count(*) AS events FROM hashed
            WHERE key_{a} IS NOT NULL AND key_{b} IS NOT NULL GROUP BY p, s, d)
            TO '{out}/traffic_{edge.src}_{edge.dst}.parquet'"""
        )
