"""Node-count series: how many nodes each statistics period has, by one of three rules.

The three rules are one option, ``--node-counts`` of ``albic stats`` (alias ``--nodes``):

- ``--node-counts MIN:MAX`` -- **load mapping** (:class:`NodeCountRule`): each period's total load,
  clipped to its 5%..95% quantiles, mapped linearly onto ``MIN..MAX`` nodes;
- ``--node-counts N`` -- **fixed**: ``N`` nodes in every period (the load mapping with MIN = MAX);
- ``--node-counts FILE[:COLUMN]`` or ``FILE:TIME_COLUMN:COUNT_COLUMN`` -- **external**
  (:class:`ExternalNodeCounts`): a CSV or Parquet file with a time column (named, else ``time``,
  ``timestamp``, ``period``, ``date`` or ``datetime``, else the one column whose values are all
  times, e.g. ``ts``) and a column of counts (named, else ``nodes``, ``node_count`` or ``n_nodes``,
  else the one numeric column left, e.g. ``machines``), forward-filled onto the periods (a period gets the last value at or before its
  start); with ``--normalise LO:HI`` the column may hold any numbers (utilisation, load), mapped
  linearly onto whole counts ``LO..HI`` (minimum -> LO, maximum -> HI).

The same file is accepted by ``albic mtm FILE --column NAME`` and, through
:func:`with_node_counts`, by :func:`albic.evaluation.replay.replay`.

A node count over :data:`MAX_NODES` is refused before any work: it is almost always a load or
utilisation column read as counts (a transition matrix over 6,295 states is a 793 MB JSON).

Example
-------
>>> parse_node_counts("4:8"), parse_node_counts("6")
(NodeCountRule(n_min=4, n_max=8, low_quantile=0.05, high_quantile=0.95), NodeCountRule(n_min=6, n_max=6, low_quantile=0.05, high_quantile=0.95))
>>> import pandas as pd
>>> series = pd.DataFrame({"time": ["2013-01-01T00:00Z", "2013-01-01T02:00Z"], "cpu": [0.2, 0.9]})
>>> rule = ExternalNodeCounts(series, column="cpu", normalise=(2, 9))
>>> rule.for_periods([0.0, 0.0, 0.0], ["2013-01-01T00:00", "2013-01-01T01:00", "2013-01-01T02:00"])
[2, 2, 9]
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Union

import numpy as np

from albic.base.errors import AlbicError, InvalidParameterError
from albic.core.model import Node, Snapshot
from albic.io.reader import check_input_file, read_input_csv
from albic.stats.periods import epoch_micros, period_starts

__all__ = [
    "MAX_NODES",
    "COUNT_COLUMNS",
    "TIME_COLUMNS",
    "NodeCountRule",
    "ExternalNodeCounts",
    "parse_node_counts",
    "parse_range",
    "normalise_counts",
    "read_series",
    "check_counts",
    "with_node_counts",
    "DEFAULT_NODES",
    "rule_sentence",
]

#: The largest node count (and transition-matrix size) albic accepts; see the module docstring.
MAX_NODES = 1000
#: The node count of every period of a user's events file unless told otherwise: a fixed cluster,
#: so that an engine's own split moves nothing and a comparison's reference is static; scaling
#: with load is what a user asks for (``--node-counts MIN:MAX``), not what albic invents.
DEFAULT_NODES = 4
#: Default count columns, in order of preference.
COUNT_COLUMNS = ("nodes", "node_count", "n_nodes")
#: Time columns of an external series, in order of preference.
TIME_COLUMNS = ("time", "timestamp", "period", "date", "datetime")


@dataclasses.dataclass(frozen=True)
class NodeCountRule:
    """How each period's total load becomes a node count in ``[n_min, n_max]``.

    The total loads of all periods are clipped to their ``low_quantile`` .. ``high_quantile``
    range (so a few outlier periods do not squash everything else), mapped linearly onto
    ``[n_min, n_max]`` and rounded half up. ``n_min == n_max`` gives a fixed cluster.

    >>> NodeCountRule(2, 4, 0.0, 1.0).counts([0.0, 5.0, 10.0, 7.4])
    [2, 3, 4, 3]
    >>> NodeCountRule(2, 4).counts([1.0, 1.0])   # no spread: the middle of the range
    [3, 3]
    """

    n_min: int = 4
    n_max: int = 8
    low_quantile: float = 0.05
    high_quantile: float = 0.95

    def __post_init__(self) -> None:
        if not (1 <= self.n_min <= self.n_max):
            raise AlbicError(f"node counts: need 1 <= n_min <= n_max, got {self.n_min}..{self.n_max}")
        if self.n_max > MAX_NODES:
            raise AlbicError(f"node counts: {self.n_max} nodes is over the limit of {MAX_NODES}")
        if not (0.0 <= self.low_quantile < self.high_quantile <= 1.0):
            raise AlbicError(
                f"node counts: need 0 <= low quantile < high quantile <= 1, "
                f"got {self.low_quantile}..{self.high_quantile}"
            )

    def counts(self, totals: Sequence[float]) -> list[int]:
        totals = np.asarray(totals, dtype=float)
        if totals.size == 0:
            return []
        low, high = np.quantile(totals, [self.low_quantile, self.high_quantile])
        if high <= low:
            share = np.full(totals.size, 0.5)
        else:
            share = (np.clip(totals, low, high) - low) / (high - low)
        return np.floor(self.n_min + share * (self.n_max - self.n_min) + 0.5).astype(int).tolist()

    def for_periods(self, totals: Sequence[float], periods: Sequence[str]) -> list[int]:
        """The counts of the periods (labels ``periods``) whose total loads are ``totals``."""
        return self.counts(totals)

    def describe(self) -> dict[str, Any]:
        kind = "fixed" if self.n_min == self.n_max else "load"
        return {"kind": kind, **dataclasses.asdict(self)}


def rule_sentence(described: Mapping[str, Any]) -> str:
    """A node-count rule in words, from its manifest form (the rules' ``describe()``).

    >>> rule_sentence(NodeCountRule(4, 4).describe()), rule_sentence(NodeCountRule(4, 8).describe())
    ('fixed, 4 nodes in every period', "load mapping, each period's total load onto 4..8 nodes")
    """
    kind = described.get("kind")
    if kind == "fixed":
        return f"fixed, {described['n_min']} nodes in every period"
    if kind == "load":
        return f"load mapping, each period's total load onto {described['n_min']}..{described['n_max']} nodes"
    column = f", column {described['column']}" if described.get("column") else ""
    normalise = described.get("normalise")
    onto = f", mapped onto {normalise[0]}..{normalise[1]} nodes" if normalise else ""
    return f"external series {described.get('source')}{column}{onto}"


def parse_range(text: str, name: str, kind: type = int) -> tuple[Any, Any]:
    """``"8:16"`` -> ``(8, 16)`` (one value ``"8"`` -> ``(8, 8)``); errors name the option.

    >>> parse_range("8:16", "parameter normalise")
    (8, 16)
    """
    low, sep, high = str(text).partition(":")
    try:
        return (kind(low), kind(high)) if sep else (kind(low), kind(low))
    except ValueError:
        raise InvalidParameterError(f"{name}: expected LOW:HIGH or one value, got {text!r}") from None


def normalise_counts(values: Sequence[float], low: int, high: int) -> list[int]:
    """Whole node counts proportional to ``values``, scaled linearly into ``[low, high]`` and
    rounded half up (min -> low, max -> high; no spread -> low); the paper's "allocate nodes
    proportional to the number of tweets ... normalized into the range of [8, 16]".

    >>> normalise_counts([10, 20, 30], 8, 16)
    [8, 12, 16]
    """
    if not 1 <= low <= high:
        raise InvalidParameterError(f"parameter normalise: need 1 <= LO <= HI, got {low}:{high}")
    if high > MAX_NODES:
        raise InvalidParameterError(f"parameter normalise: {high} nodes is over the limit of {MAX_NODES}")
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return []
    if not np.isfinite(values).all():
        raise InvalidParameterError("parameter normalise: the series holds missing or infinite values")
    lo, hi = float(values.min()), float(values.max())
    scaled = np.full(values.size, float(low)) if hi == lo else low + (values - lo) / (hi - lo) * (high - low)
    return [int(v) for v in np.floor(scaled + 0.5)]


def check_counts(values: Sequence[Any], what: str) -> list[int]:
    """``values`` as whole node counts in ``1..MAX_NODES``; otherwise an error naming ``what``, the
    first bad value and the fix."""
    counts = []
    for row, value in enumerate(values):
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = float("nan")
        if not np.isfinite(number) or number != int(number) or number < 1:
            raise InvalidParameterError(
                f"{what}: row {row} holds {value.item() if isinstance(value, np.generic) else value!r}, "
                "not a whole node count >= 1; if the column is a "
                "load or utilisation, map it onto node counts with parameter normalise LO:HI"
            )
        if number > MAX_NODES:
            raise InvalidParameterError(
                f"{what}: row {row} holds {int(number)} nodes, over the limit of {MAX_NODES} (a "
                f"{int(number)} x {int(number)} transition matrix); if the column is a load or "
                "utilisation, map it onto node counts with parameter normalise LO:HI"
            )
        counts.append(int(number))
    return counts


Source = Union[str, "os.PathLike[str]", Any]  # a path or a DataFrame


def _read_frame(source: Source):
    import pandas as pd

    if isinstance(source, pd.DataFrame):
        return source, "the node-count series"
    path = Path(source)
    if path.suffix.lower() == ".parquet":
        check_input_file(path, "node-count series")
        try:
            return pd.read_parquet(path), str(path)
        except Exception as err:  # pyarrow's errors have no common base worth naming
            raise AlbicError(
                f"{path}: not a readable Parquet node-count series ({str(err).strip()[:200]!r})"
            ) from None
    return read_input_csv(path, "node-count series"), str(path)


def count_column(columns: Sequence[str], column: str | None, source: str, numeric: Sequence[str] = ()) -> str:
    """``column`` if the table has it, else the first default count column (:data:`COUNT_COLUMNS`),
    else the one numeric column of ``numeric`` (those left once the time column is known); errors
    list the table's columns."""
    if column is not None:
        if column not in columns:
            raise AlbicError(f"{source} has no column {column!r} (columns: {list(columns)})")
        return column
    found = next((c for c in COUNT_COLUMNS if c in columns), None)
    if found is None and len(numeric) == 1:
        found = numeric[0]
    if found is None:
        raise AlbicError(
            f"{source} has no column named one of {list(COUNT_COLUMNS)} and not one numeric column to "
            f"take instead; name the column of counts (FILE:COLUMN or FILE:TIME_COLUMN:COUNT_COLUMN) "
            f"-- columns: {list(columns)}"
        )
    return found


def _looks_like_times(values: Any) -> bool:
    """Whether every value of a column is a point in time: a datetime column, or text that parses
    as one (numbers do not count: a count column is not a time column)."""
    import pandas as pd

    if pd.api.types.is_datetime64_any_dtype(values):
        return True
    if not (pd.api.types.is_object_dtype(values) or pd.api.types.is_string_dtype(values)) or not len(values):
        return False
    text = values.astype(str)
    if pd.to_numeric(text, errors="coerce").notna().any():
        return False
    return bool(pd.to_datetime(text, errors="coerce", utc=True, format="ISO8601").notna().all())


def time_column_of(frame: Any, named: str | None, count: str | None, source: str) -> str | None:
    """The time column: ``named`` (it must exist), else the first of :data:`TIME_COLUMNS`, else the
    one column whose values are all points in time (found by content, as the trace spec names its
    own: ``ts`` works); ``None`` when there is none. Several candidates by content: an error
    naming them (name one: ``FILE:TIME_COLUMN:COUNT_COLUMN``)."""
    columns = list(frame.columns)
    if named is not None:
        if named not in columns:
            raise AlbicError(f"{source} has no column {named!r} (columns: {columns})")
        return named
    found = next((c for c in TIME_COLUMNS if c in columns and c != count), None)
    if found is not None:
        return found
    timed = [c for c in columns if c != count and _looks_like_times(frame[c])]
    if len(timed) > 1:
        raise AlbicError(
            f"{source} has several columns of times {timed}; name the one to use "
            "(FILE:TIME_COLUMN:COUNT_COLUMN)"
        )
    return timed[0] if timed else None


def read_series(
    source: Source, column: str | None = None, *, timed: bool = True, time_column: str | None = None
):
    """The series of ``source`` (CSV/Parquet path or DataFrame) as ``(times, values, name)``.

    ``times`` are microseconds since the epoch (UTC; text without a zone is read as UTC) of the
    time column (:func:`time_column_of`: named, one of :data:`TIME_COLUMNS`, or the one whose values
    are times), sorted; ``None`` when ``timed`` is false and the table has no time column (the
    rows are then taken in file order). ``values`` are the raw values of the count column
    (:func:`count_column`: named, one of :data:`COUNT_COLUMNS`, or the one numeric column left).

    >>> import pandas as pd
    >>> frame = pd.DataFrame({"ts": ["2024-01-01T01:00Z", "2024-01-01T00:00Z"], "machines": [5, 4]})
    >>> times, values, name = read_series(frame)
    >>> values.tolist(), name
    ([4, 5], 'the node-count series:machines')
    """
    import pandas as pd

    frame, name = _read_frame(source)
    time = time_column_of(frame, time_column, column, name)
    numeric = [c for c in frame.columns if c != time and pd.api.types.is_numeric_dtype(frame[c])]
    column = count_column(list(frame.columns), column, name, numeric)
    if time == column:
        raise AlbicError(f"{name}: the time column and the count column are both {column!r}")
    if time is None:
        if timed:
            raise AlbicError(
                f"{name} has no time column: none is named one of {list(TIME_COLUMNS)} and none holds "
                f"times only; name it (FILE:TIME_COLUMN:COUNT_COLUMN) -- columns: {list(frame.columns)}"
            )
        return None, frame[column].to_numpy(), f"{name}:{column}"
    times = epoch_micros(frame[time], time, name)
    order = np.argsort(times, kind="stable")
    return times[order], frame[column].to_numpy()[order], f"{name}:{column}"


@dataclasses.dataclass(frozen=True)
class ExternalNodeCounts:
    """Node counts from a series outside the trace (see the module docstring).

    ``source`` is a CSV/Parquet path or a DataFrame; ``column`` the count column (default one of
    :data:`COUNT_COLUMNS`); ``normalise`` ``(LO, HI)`` maps any numbers linearly onto whole counts
    over the periods' values; ``timezone`` is the one the periods' labels are in.
    """

    source: Any
    column: str | None = None
    normalise: tuple[int, int] | None = None
    timezone: str = "UTC"
    time_column: str | None = None

    def check(self) -> None:
        """Read the series and check every value now, so that a bad file fails before any work
        (the statistics job reads it again, after the trace)."""
        import pandas as pd

        _, values, name = read_series(self.source, self.column, time_column=self.time_column)
        if self.normalise is None:
            check_counts(values, name)
            return
        numbers = pd.to_numeric(pd.Series(values), errors="coerce").to_numpy(dtype=float)
        if not np.isfinite(numbers).all():
            row = int(np.flatnonzero(~np.isfinite(numbers))[0])
            raise AlbicError(f"{name}: row {row} holds {values[row]!r}, not a finite number")

    def for_periods(self, totals: Sequence[float], periods: Sequence[str]) -> list[int]:
        import pandas as pd

        times, values, name = read_series(self.source, self.column, time_column=self.time_column)
        if len(times) == 0:
            raise AlbicError(f"{name}: the node-count series has no rows")
        wall = period_starts(times, 1, self.timezone)
        starts = (
            pd.to_datetime(list(periods), format="%Y-%m-%dT%H:%M")
            .to_numpy()
            .astype("datetime64[s]")
            .astype(np.int64)
        )
        at = np.searchsorted(wall, starts, side="right") - 1
        if len(starts) and at[0] < 0:
            raise AlbicError(
                f"{name}: the series starts at {pd.Timestamp(int(times[0]), unit='us')} UTC, after "
                f"the first period {periods[0]}; it must cover every period (values are "
                "forward-filled, never back-filled)"
            )
        picked = values[at]
        if self.normalise is not None:
            as_numbers = pd.to_numeric(pd.Series(picked), errors="coerce").to_numpy(dtype=float)
            if np.isnan(as_numbers).any():
                row = int(np.flatnonzero(np.isnan(as_numbers))[0])
                raise AlbicError(f"{name}: {picked[row]!r} is not a number")
            return normalise_counts(as_numbers, *self.normalise)
        return check_counts(picked, name)

    def describe(self) -> dict[str, Any]:
        source = self.source if isinstance(self.source, (str, os.PathLike)) else "DataFrame"
        described = {
            "kind": "external",
            "source": str(source),
            "column": self.column,
            "normalise": list(self.normalise) if self.normalise else None,
        }
        if self.time_column is not None:  # only when named: manifests written before stay the same
            described["time_column"] = self.time_column
        return described


Rule = NodeCountRule | ExternalNodeCounts


def parse_node_counts(
    text: str,
    *,
    normalise: tuple[int, int] | None = None,
    quantiles: tuple[float, float] = (0.05, 0.95),
    timezone: str = "UTC",
) -> Rule:
    """The rule of ``--node-counts`` (module docstring): ``MIN:MAX``, ``N``, ``FILE[:COLUMN]`` or
    ``FILE:TIME_COLUMN:COUNT_COLUMN``."""
    text = str(text)
    if re.fullmatch(r"\s*\d+\s*(:\s*\d+\s*)?", text):
        if normalise is not None:
            raise InvalidParameterError(
                "parameter normalise LO:HI maps an external series (parameter node_counts "
                f"FILE[:COLUMN]) onto node counts; it does not apply to parameter node_counts {text}"
            )
        low, high = parse_range(text, "parameter node_counts")
        try:
            return NodeCountRule(low, high, *quantiles)
        except AlbicError as err:
            raise InvalidParameterError(f"parameter node_counts {text}: {err}") from None
    path, time_column, column = text, None, None
    if not Path(text).exists() and ":" in text:
        path, _, column = text.rpartition(":")
        if not Path(path).exists() and ":" in path:  # FILE:TIME_COLUMN:COUNT_COLUMN
            path, _, time_column = path.rpartition(":")
    if os.path.lexists(path):  # a FIFO, a device, a folder, a link in a loop: named as such
        check_input_file(path, "parameter node_counts file")
    else:
        raise InvalidParameterError(
            f"parameter node_counts {text!r}: expected MIN:MAX (load mapping), N (fixed) or FILE[:COLUMN] / "
            f"FILE:TIME_COLUMN:COUNT_COLUMN (an external series), but {path!r}: No such file or directory"
        )
    return ExternalNodeCounts(path, column or None, normalise, timezone, time_column or None)


def with_node_counts(snapshots: Iterable[Any], counts: Mapping[str, int] | Sequence[int]) -> Iterator[Any]:
    """``snapshots`` with their nodes replaced by ``n1 .. n_count`` of an external series: a
    mapping ``{period label: count}`` or one count per snapshot in order. For
    :func:`albic.evaluation.replay.replay`::

        replay(with_node_counts(read_snapshots("stats"), counts), "flux")

    >>> from albic.core.model import Node, KeyGroup, Snapshot
    >>> snap = Snapshot([Node("n1")], [KeyGroup("k", "op", 1.0)], {"k": "n1"}, period="p")
    >>> [len(s.nodes) for s in with_node_counts([snap], {"p": 3})]
    [3]
    """

    ordered = None if isinstance(counts, Mapping) else list(counts)
    for step, snapshot in enumerate(snapshots):
        if ordered is None:
            if snapshot.period not in counts:
                raise AlbicError(f"the node-count series has no count for period {snapshot.period!r}")
            count = counts[snapshot.period]
        elif step < len(ordered):
            count = ordered[step]
        else:
            raise AlbicError(f"the node-count series has {len(ordered)} counts, fewer than the periods")
        count = check_counts([count], f"node count of period {snapshot.period!r}")[0]
        nodes = [Node(f"n{i + 1}") for i in range(count)]
        first = nodes[0].id
        yield Snapshot(
            nodes,
            snapshot.key_groups,
            {kg.id: first for kg in snapshot.key_groups},
            snapshot.traffic,
            snapshot.operators,
            period=snapshot.period,
            covered_seconds=snapshot.covered_seconds,
        )
