"""Statistics datasets: many periods as Parquet tables (design section 6, a *contract*).

``albic stats`` writes a folder of tables ``key_groups/``, ``traffic/`` and ``nodes/`` (each with a
``period`` column) and a ``manifest.json`` of schema :data:`STATS_SCHEMA`; :func:`read_snapshots`
reads it back as one :class:`~albic.core.model.Snapshot` per period.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from albic.base import files as tempfiles
from albic.base.errors import AlbicError, InvalidSnapshotError
from albic.core.flink_keys import flink_subtasks
from albic.core.model import KeyGroup, Node, Operator, Snapshot, Traffic
from albic.io.reader import check_input_folder, read_input_json

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "STATS_SCHEMA",
    "MANIFEST",
    "read_snapshots",
    "read_manifest",
    "statistics_identity",
    "partial_periods",
    "read_operators",
    "key_groups_used",
    "default_placement",
    "split_over",
    "key_group_events",
    "dataset_folder",
    "write_table",
    "write_manifest",
]

STATS_SCHEMA = "albic.stats/1"
MANIFEST = "manifest.json"


def read_snapshots(path: str | os.PathLike[str]) -> Iterator[Snapshot]:
    """The snapshots of a statistics dataset (``albic stats``' output, design section 6), one per
    period in time order.

    Each snapshot has every key group of every operator (``key_groups`` per operator from the
    manifest; each operator carries the spec's key hash and maximum parallelism,
    :class:`~albic.core.model.Operator`; a key group without events that period has load 0 and state 0), the period's traffic
    and nodes ``n1 .. n_count`` of the node-count series. Statistics are placement-free, so the
    ``assignment`` is a placeholder: each operator's key groups split evenly and consecutively
    over the period's nodes (as Storm's default does); :func:`albic.evaluation.replay.replay` replaces it
    with the placement carried over from the previous period. A partial period (the manifest's
    ``partial_periods``; absent in older datasets: none) has its covered seconds as the snapshot's
    ``covered_seconds``.

    Example
    -------
    >>> for snapshot in read_snapshots("out/stats"):       # doctest: +SKIP
    ...     print(snapshot.period, len(snapshot.nodes))
    """
    import pandas as pd
    import pyarrow.parquet as pq

    root = Path(path)
    manifest = read_manifest(root)
    operators = _dataset_operators(manifest["spec"])
    counts = manifest["key_groups"]
    ids = [(op.name, i, f"{op.name}/{i}") for op in operators for i in range(int(counts[op.name]))]
    # Rates: arrival_rate 0 and the operator's service rate (manifest) for a key group without
    # events in a period; absent in datasets made before albic stats measured them.
    names = pq.read_schema(next((root / "key_groups").glob("*.parquet"))).names
    rated = "arrival_rate" in names
    rate_columns = ["arrival_rate", "service_rate"] if rated else []
    count_columns = ["operator", "events"] if "events" in names else []
    idle_service = manifest.get("service_rate", {}) if rated else None
    kg_table = pd.read_parquet(
        root / "key_groups", columns=["period", "id", "load", "state_size", *rate_columns, *count_columns]
    )
    one_event = _one_event_loads(kg_table) if count_columns else None
    traffic_table = pd.read_parquet(root / "traffic", columns=["period", "src", "dst", "rate"])
    nodes_table = pd.read_parquet(root / "nodes")
    kg_by_period = dict(tuple(kg_table.groupby("period", sort=False)))
    traffic_by_period = dict(tuple(traffic_table.groupby("period", sort=False)))
    partial = partial_periods(manifest)
    for period, nodes_rows in nodes_table.groupby("period", sort=True):  # labels sort as times
        nodes = _period_nodes(nodes_rows)
        key_groups = _period_key_groups(ids, kg_by_period.get(period), idle_service, one_event, period)
        traffic = _period_traffic(traffic_by_period.get(period))
        placement = _placement(key_groups, [n.id for n in nodes], operators)
        covered = partial.get(str(period))
        yield Snapshot(
            nodes, key_groups, placement, traffic, operators, period=str(period), covered_seconds=covered
        )


def partial_periods(manifest: Mapping[str, Any]) -> dict[str, float]:
    """The partial periods a statistics manifest lists: label -> the seconds its events cover
    (none in a manifest written before albic stats marked them).

    >>> partial_periods({"partial_periods": {"2024-01-01T00:00": 313200}}), partial_periods({})
    ({'2024-01-01T00:00': 313200.0}, {})
    """
    return {str(label): float(seconds) for label, seconds in manifest.get("partial_periods", {}).items()}


def read_operators(path: str | os.PathLike[str]) -> tuple[Operator, ...]:
    """The operators of the statistics dataset in folder ``path``, as its snapshots carry them
    (keys, downstream operators, key hash), read from its manifest alone."""
    return _dataset_operators(read_manifest(path)["spec"])


def _dataset_operators(spec: Mapping[str, Any]) -> tuple[Operator, ...]:
    """The spec's operators, each with its downstream operators, keys, key hash and (for Flink's
    hash) maximum parallelism."""
    edges = spec["edges"]
    # The hash the key groups were made with: the spec's "hash" (absent from datasets made when
    # albic's blake2b was the only one); its max_parallelism when set (Flink's key groups at N).
    key_hash = spec.get("hash", "blake2b")
    max_parallelism = spec.get("max_parallelism") if key_hash == "flink" else None
    return tuple(
        Operator(
            op["name"],
            downstream=tuple(e["dst"] for e in edges if e["src"] == op["name"]),
            partition_attributes=tuple(op["keys"]),
            key_hash=key_hash,
            max_parallelism=max_parallelism,
        )
        for op in spec["operators"]
    )


def _period_nodes(rows: Any) -> list[Node]:
    """The period's nodes (one core each where the dataset records none)."""
    cores = rows["cores"] if "cores" in rows else [1] * len(rows)
    return [Node(str(i), float(c), cores=int(k)) for i, c, k in zip(rows["id"], rows["capacity"], cores)]


def _one_event_loads(kg_table: Any) -> dict[tuple[str, str], float]:
    """(period, operator) -> the load one event adds (the median of load / events over the
    operator's key groups with events that period; ``(None, operator)``: over every period, for
    a period in which the operator has none)."""
    counted = kg_table[kg_table["events"] > 0]
    per_event = (counted["load"] / counted["events"]).rename("per_event")
    frame = counted[["period", "operator"]].assign(per_event=per_event)
    out = {
        (str(p), str(o)): float(v)
        for (p, o), v in frame.groupby(["period", "operator"])["per_event"].median().items()
    }
    out.update({(None, str(o)): float(v) for o, v in frame.groupby("operator")["per_event"].median().items()})
    return out


def _load_errors(
    ids: list[tuple[str, int, str]],
    rows: Any,
    loads: Mapping[str, float],
    one_event: Mapping[tuple[Any, str], float] | None,
    period: Any,
) -> dict[str, float | None]:
    """Each key group's load error (:class:`~albic.core.model.KeyGroup`): ``load / sqrt(events)``,
    the Poisson error of a count of ``events``; for a key group without events, the load of one
    event (a count of 0 is known to about one event). Empty for a dataset without counts."""
    if one_event is None:
        return {}
    counts = {} if rows is None else dict(zip(rows["id"], rows["events"].tolist()))
    errors: dict[str, float | None] = {}
    for op, _, kid in ids:
        events = counts.get(kid, 0)
        if events > 0:
            errors[kid] = float(loads[kid]) / float(events) ** 0.5
        else:
            errors[kid] = one_event.get((str(period), op), one_event.get((None, op)))
    return errors


def _period_key_groups(
    ids: list[tuple[str, int, str]],
    rows: Any,
    idle_service: Mapping[str, Any] | None,
    one_event: Mapping[tuple[Any, str], float] | None = None,
    period: Any = None,
) -> list[KeyGroup]:
    """Every key group of ``ids`` (operator, number, id) in one period, from the period's rows
    (``None``: no events); ``idle_service`` is the operators' service rates for a key group
    without events, or ``None`` for a dataset without rates; ``one_event`` the load one event adds
    per (period, operator), for the load errors (``None``: the dataset has no counts)."""
    rated = idle_service is not None
    load, state, arrival, service = {}, {}, {}, {}
    if rows is not None:
        load = dict(zip(rows["id"], rows["load"].tolist()))
        state = dict(zip(rows["id"], rows["state_size"].tolist()))
        if rated:
            arrival = dict(zip(rows["id"], rows["arrival_rate"].tolist()))
            service = dict(zip(rows["id"], rows["service_rate"].tolist()))
    errors = _load_errors(ids, rows, load, one_event, period)
    return [
        KeyGroup(
            kid,
            op,
            load.get(kid, 0.0),
            state.get(kid, 0.0),
            index=i,
            arrival_rate=arrival.get(kid, 0.0) if rated else None,
            service_rate=_rate(service.get(kid, idle_service.get(op))) if rated else None,
            load_error=errors.get(kid),
        )
        for op, i, kid in ids
    ]


def _period_traffic(rows: Any) -> tuple[Traffic, ...]:
    """The period's traffic (``rows`` ``None``: none), ordered by source and destination: the
    engines write rows in their own order (Spark's and DuckDB's vary between runs), and a snapshot
    (its digest, a planner's ties) must not."""
    if rows is None:
        return ()
    return tuple(Traffic(s, d, r) for s, d, r in sorted(zip(rows["src"], rows["dst"], rows["rate"].tolist())))


def read_manifest(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The manifest of the statistics dataset in folder ``path`` (checked: a folder albic may
    read, holding a manifest of schema :data:`STATS_SCHEMA`)."""
    root = Path(path)
    check_input_folder(root, "statistics folder")
    manifest_path = root / MANIFEST
    if not manifest_path.is_file():
        raise InvalidSnapshotError(
            f"{root} is not a statistics dataset: it has no {MANIFEST} (write one with 'albic stats')"
        )
    manifest = read_input_json(manifest_path, "statistics manifest")
    if not isinstance(manifest, dict) or manifest.get("schema") != STATS_SCHEMA:
        schema = manifest.get("schema") if isinstance(manifest, dict) else None
        raise InvalidSnapshotError(f"{manifest_path}: schema {schema!r} is not {STATS_SCHEMA!r}")
    return manifest


#: Manifest fields that do not change a dataset's statistics: the engine (both give the same
#: tables) and how the trace was named (the same file under another path is the same trace).
_NOT_IDENTITY = ("engine", "trace")


def statistics_identity(path: str | os.PathLike[str]) -> str:
    """What identifies the statistics of folder ``path``: ``"sha256:"`` and the digest of its
    manifest (spec, periods, time zone, node-count rule, key groups, events, scale) without
    :data:`_NOT_IDENTITY`. A plan made by ``albic plan`` from a period of the folder records it,
    so that another folder whose period happens to hold the same snapshot (another node-count rule
    that gives this period the same count) is refused too.

    >>> statistics_identity("out/stats")           # doctest: +SKIP
    'sha256:4be1...'
    """
    manifest = {k: v for k, v in read_manifest(path).items() if k not in _NOT_IDENTITY}
    text = json.dumps(manifest, sort_keys=True, separators=(",", ":"))
    return f"sha256:{hashlib.sha256(text.encode()).hexdigest()}"


def key_groups_used(path: str | os.PathLike[str]) -> dict[str, tuple[int, int]]:
    """Operator -> (key groups that hold an event in some period, key groups) of the statistics
    dataset in folder ``path``: an operator with fewer distinct keys than key groups leaves the
    rest empty in every period."""
    import pandas as pd

    root = Path(path)
    counts = read_manifest(root)["key_groups"]
    rows = pd.read_parquet(root / "key_groups", columns=["operator", "index"])
    used = rows.drop_duplicates().groupby("operator").size()
    return {op: (int(used.get(op, 0)), int(k)) for op, k in counts.items()}


def key_group_events(path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """Each operator's events per key group (by index), summed over every period of a statistics
    dataset: the exact counts the ``events`` column holds, where a snapshot keeps only rates.

    Example
    -------
    >>> key_group_events("out/stats")["tailnum"][:3]      # doctest: +SKIP
    array([207, 211, 172])
    """
    import pandas as pd

    root = Path(path)
    manifest = read_manifest(root)
    table = pd.read_parquet(root / "key_groups", columns=["operator", "index", "events"])
    out = {}
    for operator, count in manifest["key_groups"].items():
        rows = table[table["operator"] == operator]
        events = np.zeros(int(count), dtype=np.int64)
        np.add.at(events, rows["index"].to_numpy(dtype=np.int64), rows["events"].to_numpy(dtype=np.int64))
        out[operator] = events
    return out


def _rate(value: float | None) -> float | None:
    """A service rate read back: NaN (an operator with cost 0 and no measured times) is None."""
    return None if value is None or value != value else float(value)


def split_over(members: Sequence[str], node_ids: Sequence[str], *, flink: bool = False) -> dict[str, str]:
    """One operator's key groups ``members`` (in index order) cut into consecutive blocks over
    the nodes ``node_ids``, as the engine the key groups were hashed for splits them.

    Storm's default (``flink=False``): node ``j`` gets positions ``[floor(j*m/n),
    floor((j+1)*m/n))`` of the ``m`` key groups, the larger blocks last. Flink's own
    ``KeyGroupRangeAssignment`` (``flink=True``, the ``m`` key groups being Flink's ``0 .. m-1``):
    subtask ``i`` of ``p = min(n, m)`` gets ``ceil(i*m/p) .. floor(((i+1)*m - 1)/p)``, the larger
    blocks first (:func:`albic.core.flink_keys.flink_subtasks`).

    >>> split_over(list("abcdefghij"), ["n1", "n2", "n3"])["d"], split_over(list("abcdefghij"), ["n1", "n2", "n3"], flink=True)["d"]
    ('n2', 'n1')
    """
    m, n = len(members), len(node_ids)
    if flink:
        block = flink_subtasks(m, min(n, m)) if m else np.zeros(0, dtype=np.int64)
    else:
        block = np.searchsorted((np.arange(n + 1) * m) // n, np.arange(m), side="right") - 1
    return {kid: node_ids[j] for kid, j in zip(members, block.tolist())}


def default_placement(snapshot: Snapshot, *, flink: bool | None = None) -> dict[str, str]:
    """Where a statistics period's key groups are when no placement is given: each operator's
    key groups (in ``index`` order, unindexed ones last) split over the active nodes (in order)
    by :func:`split_over`, Flink's way for an operator whose key groups were made with Flink's
    hash (``Operator.key_hash == "flink"``: a job that runs stock Flink), else Storm's default
    split. Statistics are placement-free: this is the placement :func:`read_snapshots` gives
    every period, and the one a replay starts from by default. ``flink`` True or False splits
    every operator Flink's or Storm's way, whatever its hash."""
    nodes = [node.id for node in snapshot.active_nodes]
    return _placement(snapshot.key_groups, nodes, snapshot.operators, flink)


def _placement(
    key_groups: Sequence[KeyGroup],
    node_ids: Sequence[str],
    operators: Sequence[Operator],
    flink: bool | None = None,
) -> dict[str, str]:
    hashed = {op.name for op in operators if op.key_hash == "flink"}
    per_op: dict[str, list[KeyGroup]] = {}
    for kg in key_groups:
        per_op.setdefault(kg.operator, []).append(kg)
    placement = {}
    for name, members in per_op.items():
        ordered = sorted(members, key=lambda kg: (kg.index is None, kg.index or 0))  # stable
        way = name in hashed if flink is None else flink
        placement.update(split_over([kg.id for kg in ordered], node_ids, flink=way))
    return placement


# -- writing --------------------------------------------------------------------------------------


@contextlib.contextmanager
def dataset_folder(out: str | os.PathLike[str]) -> Iterator[Path]:
    """A temporary folder next to ``out`` that replaces ``out`` only if the block succeeds.

    ``out`` may not exist, be an empty folder, or be an earlier albic stats dataset (it has a
    manifest); anything else is refused before any work, so nothing of the user's is overwritten.
    """
    out = Path(out).resolve()
    if out.exists():
        if not out.is_dir():
            raise AlbicError(f"cannot write the statistics to {out}: it is a file")
        if any(out.iterdir()) and not (out / MANIFEST).exists():
            raise AlbicError(
                f"cannot write the statistics to {out}: the folder is not empty and is not an albic "
                "stats dataset; choose a new or empty folder"
            )
    out.parent.mkdir(parents=True, exist_ok=True)
    # Temporaries named by host and pid: a later run removes those of a killed run.
    tempfiles.remove_stale(out)
    tmp = tempfiles.make_folder(out)
    try:
        yield tmp
        old = None
        if out.exists():
            old = tempfiles.sibling(out)
            out.rename(old)
        tmp.rename(out)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def write_manifest(folder: Path, **fields: Any) -> None:
    (folder / MANIFEST).write_text(
        json.dumps({"schema": STATS_SCHEMA, **fields}, indent=2, sort_keys=True) + "\n",
        encoding="utf-8",
    )


def write_table(frame: pd.DataFrame, folder: Path) -> None:
    folder.mkdir()
    frame.to_parquet(folder / "part-0.parquet", index=False)
