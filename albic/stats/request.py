"""What a statistics run is asked to do: one :class:`StatsRequest`, checked in one place.

The command line (``albic stats``, ``albic demo``) and the Python API build the same request;
:func:`albic.stats.job.run` carries it out on an engine (pandas in this process, or Spark). Every
setting is checked when the request is made, before any event is read, with the message a user
of either entry point reads.

Example
-------
>>> from albic.stats.spec import parse_spec
>>> spec = parse_spec('timestamp = "t"\\n[[operators]]\\nname = "w"\\nkeys = ["w"]')
>>> request = StatsRequest("events.csv", spec, "out/stats", period="15min", key_groups=8)
>>> request.period_seconds, request.timezone, request.rule.describe()["kind"]
(900, 'UTC', 'fixed')
>>> StatsRequest("events.csv", spec, "out", period="7min")
Traceback (most recent call last):
...
albic.base.errors.AlbicError: period '7min': must be whole minutes that divide a day (e.g. 1min, 15min, 1h, 6h), whole days (1d, 7d) or whole weeks (1w)
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from albic.base.errors import AlbicError
from albic.stats.node_counts import DEFAULT_NODES, ExternalNodeCounts, NodeCountRule, parse_node_counts
from albic.stats.periods import parse_period, parse_timezone, period_in_weeks
from albic.stats.spec import TopologySpec

__all__ = ["StatsRequest"]


@dataclass(frozen=True)
class StatsRequest:
    """One statistics run (design section 7).

    - ``events``: an events file (``.csv``/``.parquet``), or, for the pandas and DuckDB engines, a DataFrame;
    - ``spec``: the topology (:mod:`albic.stats.spec`); ``out``: the dataset folder to write;
    - ``period`` (``"1h"``, ``"15min"``, ``"1d"``, ``"1w"``, seconds), ``key_groups`` per operator (a spec with
      ``max_parallelism`` fixes it), ``scale`` (replay the trace K times with distinct keys),
      ``timezone`` (IANA name whose wall clock the periods follow), ``cores`` per node;
    - node counts: a rule object as ``nodes`` (:class:`~albic.stats.node_counts.NodeCountRule`,
      :class:`~albic.stats.node_counts.ExternalNodeCounts`), or the text of ``--node-counts``
      as ``node_counts`` with ``normalise`` and ``quantiles`` (default: a fixed cluster of
      :data:`~albic.stats.node_counts.DEFAULT_NODES` nodes; the built-in traces pass their
      scaling rule, :data:`albic.stats.traces.NODE_COUNTS`);
    - ``trace``: the name the manifest records (default: the events file, or ``"events"``).

    After construction ``period_seconds``, ``timezone`` and ``rule`` (the node counts) hold the
    checked values, and ``weeks`` whether the period is in weeks (ISO weeks, starting on Mondays:
    :func:`~albic.stats.periods.period_origin`).
    """

    events: Any
    spec: TopologySpec
    out: Path
    period: str | int = "1h"
    key_groups: int = 128
    scale: int = 1
    nodes: NodeCountRule | ExternalNodeCounts | None = None
    trace: str | None = None
    timezone: str | None = None
    cores: int = 1
    node_counts: str | None = None
    normalise: tuple[int, int] | None = None
    quantiles: tuple[float, float] = (0.05, 0.95)
    period_seconds: int = field(init=False)
    weeks: bool = field(init=False)
    rule: NodeCountRule | ExternalNodeCounts = field(init=False)

    def __post_init__(self) -> None:
        for name in ("key_groups", "scale", "cores"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise AlbicError(f"{name} must be a whole number of at least 1, got {value!r}")
        if not isinstance(self.spec, TopologySpec):
            raise AlbicError(
                f"spec must be a TopologySpec (albic.stats.spec.read_spec), got {type(self.spec).__name__}"
            )
        timezone = parse_timezone(self.timezone)
        if self.nodes is not None and self.node_counts is not None:
            raise AlbicError("give node counts once: as a rule (nodes) or as text (node_counts), not both")
        if self.nodes is not None:
            rule = self.nodes
        elif self.node_counts is not None:
            rule = parse_node_counts(
                self.node_counts, normalise=self.normalise, quantiles=self.quantiles, timezone=timezone
            )
        else:
            rule = NodeCountRule(DEFAULT_NODES, DEFAULT_NODES)
        if isinstance(rule, ExternalNodeCounts):
            rule.check()
        settings = {
            "period_seconds": parse_period(self.period),
            "weeks": period_in_weeks(self.period),
            "timezone": timezone,
            "rule": rule,
            "key_groups": self.spec.key_group_count(self.key_groups),
            "out": Path(self.out),
        }
        for name, value in settings.items():
            object.__setattr__(self, name, value)

    @property
    def source(self) -> str:
        """The events as messages name them: the file, or ``"events"`` for a DataFrame."""
        return str(self.events) if isinstance(self.events, (str, os.PathLike)) else "events"

    @property
    def trace_name(self) -> str:
        """What the manifest records as the trace."""
        return self.trace or self.source
