"""What a replayed plan is decided on, and when a period is planned at all.

**What is known** (``decide_on``, :func:`parse_decide_on`). The plan applied during period t is
made from a *decision snapshot*:

- ``previous``: period t's nodes (the node count of period t is a decision already taken, as an
  autoscaler takes it) and key groups, the placement carried over, and the loads, state sizes,
  traffic and other statistics of period t-1;
- ``forecast:NAME``: the same, but the loads (and arrival rates, where the statistics have them)
  are forecast for period t from the periods before t by a forecaster of
  :mod:`albic.evaluation.forecast` (``forecast:last`` is ``previous``); state sizes, traffic,
  resources and service rates are period t-1's, the latest known;
- ``hindsight``: period t's own statistics, the oracle: a plan fitted to the very loads it is
  scored on. Kept to measure how much a planner depends on knowing the future, and labelled as
  such wherever it appears.

With ``previous`` or a forecast, the first period has nothing known before it: it keeps the
initial placement and is scored, not planned. A key group that no earlier period has (new in
period t) is known with load 0 and no state. Readings chosen here: the period's label is the
scored period's (the plan is *for* period t); the plan's moves and their migration cost are
counted on the state the decision snapshot holds (period t-1's: the state that moves at the start
of period t), so a ``max_migration_cost`` budget holds in the table; the balance of the plan is
scored on period t's statistics (:mod:`albic.evaluation.replay`).

**When to plan** (``trigger``, :func:`parse_trigger`): ``always`` (every period),
``threshold:X[,cooldown:K]``: only when the carried placement's load distance on what is known
exceeds X % of the mean utilisation, and at most once every K periods (default 1: no cool-down),
``rescale``: only when the period's nodes are not the previous period's (the node count
changed): what an engine does by itself, and how a comparison's reference is replayed
(:mod:`albic.evaluation.verdict`), or ``gain[:z=Z,cost=C,margin=M,dwell=K]``: every period is
planned, but a plan is applied only when it pays (:func:`albic.core.payoff.payoff`): its moves
that do not pay are dropped, and what is left is applied when its expected gain in load distance,
less ``Z`` (default 1.645) standard deviations of its noise, exceeds its cost (``C`` points per %
of the state moved, default 0) plus a dead band of ``M`` points (default 0); a plan applied is
left alone for ``K`` periods (default 1) before the next is asked for. A plan that does not pay
is held: status ``HELD``, placement kept.
A period not planned keeps the placement, with status ``SKIPPED`` and no moves. This is how
operators run rebalancers: Cruise Control acts on goal thresholds, the Flink autoscaler on a
utilisation band with a stabilisation window.

Example
-------
>>> from albic.core.model import Node, KeyGroup, Snapshot
>>> def period(name, loads):
...     kgs = [KeyGroup(f"k{i}", "op", load, 1.0) for i, load in enumerate(loads)]
...     return Snapshot([Node("n1"), Node("n2")], kgs, {"k0": "n1", "k1": "n2"}, period=name)
>>> known = KnownPeriods(parse_decide_on("forecast:mean:2"))
>>> known.add(period("t0", [1.0, 4.0])); known.add(period("t1", [3.0, 2.0]))
>>> [kg.load for kg in known.snapshot(period("t2", [9.0, 9.0])).key_groups]
[2.0, 3.0]
>>> parse_trigger("threshold:10,cooldown:3").fires(12.0, periods_since_plan=2)
False
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, replace

import numpy as np

from albic.base.errors import InvalidParameterError
from albic.core.model import KeyGroup, Snapshot
from albic.core.payoff import Z
from albic.evaluation.forecast import FORECASTER_HELP, Forecaster, parse_forecaster

__all__ = [
    "DecideOn",
    "parse_decide_on",
    "Trigger",
    "parse_trigger",
    "GainRule",
    "KnownPeriods",
    "DECIDE_ON_HELP",
    "TRIGGER_HELP",
    "describe_scoring",
]

DECIDE_ON_HELP = f"previous (default), forecast:NAME (NAME: {FORECASTER_HELP}) or hindsight (the oracle)"
TRIGGER_HELP = (
    "always (default), threshold:X[,cooldown:K] (plan when the load distance exceeds X %), "
    "rescale (plan only when the node count changes) or gain[:z=Z,cost=C,margin=M,dwell=K] "
    "(apply a plan only when its expected gain beyond noise pays its moves)"
)


@dataclass(frozen=True)
class DecideOn:
    """What plans are decided on: ``spec`` in its canonical text, and the forecaster of the loads
    (``None`` for ``hindsight``: the scored period itself)."""

    spec: str
    forecaster: Forecaster | None

    @property
    def hindsight(self) -> bool:
        return self.forecaster is None


def parse_decide_on(text: str | DecideOn) -> DecideOn:
    """``"previous"``, ``"forecast:NAME"`` or ``"hindsight"`` -> :class:`DecideOn`.

    >>> parse_decide_on("forecast:seasonal:24").forecaster.window
    24
    >>> parse_decide_on("tomorrow")
    Traceback (most recent call last):
    ...
    albic.base.errors.InvalidParameterError: decide_on 'tomorrow': use previous (default), forecast:NAME (NAME: last, ewma:ALPHA (0 < ALPHA <= 1), seasonal:K, mean:K or shrink:K (K a whole number >= 1)) or hindsight (the oracle)
    """
    if isinstance(text, DecideOn):
        return text
    spec = str(text).strip()
    if spec == "hindsight":
        return DecideOn(spec, None)
    if spec == "previous":
        return DecideOn(spec, parse_forecaster("last"))
    kind, colon, name = spec.partition(":")
    if kind == "forecast" and colon:
        try:
            return DecideOn(spec, parse_forecaster(name))
        except InvalidParameterError as err:
            raise InvalidParameterError(f"decide_on {spec!r}: {err}") from None
    raise InvalidParameterError(f"decide_on {spec!r}: use {DECIDE_ON_HELP}")


@dataclass(frozen=True)
class GainRule:
    """When a plan pays (``gain`` trigger; :func:`albic.core.payoff.payoff`'s ``z``, ``cost`` and
    ``margin``)."""

    z: float = Z
    cost: float = 0.0
    margin: float = 0.0


@dataclass(frozen=True)
class Trigger:
    """When a period is planned: above ``threshold_pct`` (``None``: always), at most once every
    ``cooldown`` periods; with ``on_rescale`` only when the node count changed."""

    spec: str = "always"
    threshold_pct: float | None = None
    cooldown: int = 1
    on_rescale: bool = False
    gain: GainRule | None = None

    def fires(
        self, known_load_distance_pct: float, periods_since_plan: int | None, rescaled: bool = False
    ) -> bool:
        """Whether to plan a period whose carried placement has ``known_load_distance_pct`` on what
        is known, ``periods_since_plan`` periods after the last planned one (``None``: none yet),
        whose nodes changed from the previous period's (``rescaled``)."""
        if self.on_rescale:
            return rescaled
        if periods_since_plan is not None and periods_since_plan < self.cooldown:
            return False
        return self.threshold_pct is None or known_load_distance_pct > self.threshold_pct


def parse_trigger(text: str | Trigger) -> Trigger:
    """``"always"``, ``"threshold:X[,cooldown:K]"`` or ``"rescale"`` -> :class:`Trigger`.

    >>> parse_trigger("threshold:15,cooldown:4")
    Trigger(spec='threshold:15,cooldown:4', threshold_pct=15.0, cooldown=4, on_rescale=False, gain=None)
    >>> parse_trigger("threshold:-1")
    Traceback (most recent call last):
    ...
    albic.base.errors.InvalidParameterError: trigger 'threshold:-1': X must be a finite number >= 0 (% of the mean), got '-1'
    """
    if isinstance(text, Trigger):
        return text
    spec = str(text).strip()
    if spec == "always":
        return Trigger()
    if spec == "rescale":
        return Trigger(spec, on_rescale=True)
    if spec == "gain" or spec.startswith("gain:"):
        return _gain_trigger(spec)
    first, _, rest = spec.partition(",")
    kind, colon, threshold = first.partition(":")
    if kind != "threshold" or not colon:
        raise InvalidParameterError(f"trigger {spec!r}: use {TRIGGER_HELP}")
    try:
        value = float(threshold)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise InvalidParameterError(
            f"trigger {spec!r}: X must be a finite number >= 0 (% of the mean), got {threshold!r}"
        )
    cooldown = 1
    if rest:
        key, colon, k = rest.partition(":")
        if key.strip() != "cooldown" or not colon or not k.strip().isdigit() or int(k) < 1:
            raise InvalidParameterError(
                f"trigger {spec!r}: after the threshold only cooldown:K (K a whole number >= 1), got {rest!r}"
            )
        cooldown = int(k)
    return Trigger(spec, value, cooldown)


_GAIN_KEYS = ("z", "cost", "margin", "dwell")


def _gain_trigger(spec: str) -> Trigger:
    """``gain[:z=Z,cost=C,margin=M,dwell=K]`` -> :class:`Trigger` (module docstring).

    >>> _gain_trigger("gain:cost=2,dwell=3").gain, _gain_trigger("gain:cost=2,dwell=3").cooldown
    (GainRule(z=1.645, cost=2.0, margin=0.0), 3)
    """
    values: dict[str, float] = {}
    for item in filter(None, (p.strip() for p in spec.partition(":")[2].split(","))):
        key, equals, text = item.partition("=")
        key = key.strip()
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if key not in _GAIN_KEYS or not equals or key in values:
            raise InvalidParameterError(
                f"trigger {spec!r}: {item!r}: use gain[:z=Z,cost=C,margin=M,dwell=K], each at most once"
            )
        if not (math.isfinite(value) and value >= 0) or (
            key == "dwell" and (value < 1 or value != int(value))
        ):
            rule = "a whole number >= 1" if key == "dwell" else "a finite number >= 0"
            raise InvalidParameterError(f"trigger {spec!r}: {key} must be {rule}, got {text.strip()!r}")
        values[key] = value
    dwell = int(values.pop("dwell", 1))
    return Trigger(spec, cooldown=dwell, gain=GainRule(**values))


def describe_scoring(decide_on: str, trigger: str = "always") -> str:
    """One line that says how a replay table was scored, for tables, figures and logs.

    >>> describe_scoring("previous")
    'scoring: previous (each period planned from the one before it, scored on its own statistics)'
    >>> describe_scoring("hindsight", "threshold:10")
    'scoring: hindsight (ORACLE: each plan scored on the very loads it was made from); planned when the load distance known exceeds 10 %'
    """
    rule = parse_decide_on(decide_on)
    if rule.hindsight:
        what = "ORACLE: each plan scored on the very loads it was made from"
    elif rule.spec == "previous":
        what = "each period planned from the one before it, scored on its own statistics"
    else:
        what = (
            f"each period planned from a {rule.forecaster.spec} forecast of the periods before it, "
            "scored on its own statistics"
        )
    line = f"scoring: {rule.spec} ({what})"
    when = parse_trigger(trigger)
    if when.on_rescale:
        line += "; planned only when the node count changes"
    if when.gain is not None:
        rule = when.gain
        line += (
            f"; a plan applied only when its expected gain less {rule.z:g} standard deviations of "
            f"its noise exceeds its cost ({rule.cost:g} points per % of state moved) + {rule.margin:g} points"
        )
        if when.cooldown > 1:
            line += f", then left alone for {when.cooldown} periods"
    if when.threshold_pct is not None:
        line += f"; planned when the load distance known exceeds {when.threshold_pct:g} %"
        if when.cooldown > 1:
            line += f", at most once every {when.cooldown} periods"
    return line


class KnownPeriods:
    """The statistics known before the period being decided: the latest periods a rule reads.

    :meth:`add` each period once it is over; :meth:`snapshot` is the decision snapshot of the next
    one (module docstring), ``None`` while nothing is known.
    """

    def __init__(self, decide_on: DecideOn) -> None:
        self.decide_on = decide_on
        window = 0 if decide_on.forecaster is None else decide_on.forecaster.window
        self._periods: deque[_Period] = deque(maxlen=max(window, 1))

    def add(self, snapshot: Snapshot) -> None:
        self._periods.append(_Period(snapshot))

    def snapshot(self, scored: Snapshot) -> Snapshot | None:
        if self.decide_on.forecaster is None:
            return scored
        if not self._periods:
            return None
        ids = tuple(kg.id for kg in scored.key_groups)
        forecaster = self.decide_on.forecaster
        loads, errors = forecaster.with_errors(*self._stacked(ids, "loads", "errors"))
        if not any(period.counted for period in self._periods):
            errors = np.full_like(loads, math.nan)
        rates = forecaster(np.stack([period.aligned(ids, "rates") for period in self._periods]))
        latest = self._periods[-1].snapshot
        by_id = {kg.id: kg for kg in latest.key_groups}
        key_groups = [
            _known_key_group(kg, by_id.get(kg.id), load, rate, error)
            for kg, load, rate, error in zip(scored.key_groups, loads, rates, errors)
        ]
        present = set(ids)
        traffic = [t for t in latest.traffic if t.src in present and t.dst in present]
        return Snapshot(
            nodes=scored.nodes,
            key_groups=key_groups,
            assignment=scored.assignment,
            traffic=traffic,
            operators=scored.operators,
            period=scored.period,
        )

    def _stacked(self, ids: tuple[str, ...], *fields: str) -> list[np.ndarray]:
        return [np.stack([period.aligned(ids, field) for period in self._periods]) for field in fields]


class _Period:
    """A known period's loads, load errors and arrival rates as arrays in its key groups' order."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self.ids = tuple(kg.id for kg in snapshot.key_groups)
        self.loads = np.array([kg.load for kg in snapshot.key_groups], dtype=float)
        self.errors = np.array([_number(kg.load_error) for kg in snapshot.key_groups], dtype=float)
        self.rates = np.array([_number(kg.arrival_rate) for kg in snapshot.key_groups], dtype=float)
        self.counted = bool(np.isfinite(self.errors).any())

    def aligned(self, ids: tuple[str, ...], field: str) -> np.ndarray:
        """The field's values for the key groups ``ids``: a key group this period did not have
        carries no load (0), no arrival rate and no known error (NaN)."""
        values = getattr(self, field)
        if ids == self.ids:
            return values
        position = {kg_id: i for i, kg_id in enumerate(self.ids)}
        missing = 0.0 if field == "loads" else math.nan
        return np.array([values[position[k]] if k in position else missing for k in ids], dtype=float)


def _number(value: float | None) -> float:
    return math.nan if value is None else float(value)


def _known_key_group(
    scored: KeyGroup, latest: KeyGroup | None, load: float, rate: float, error: float
) -> KeyGroup:
    """``scored``'s key group as known before its period: its forecast load, load error and arrival
    rate, the rest of the latest period that had it (no state, no resources if none had)."""
    rate = None if math.isnan(rate) else float(rate)
    error = None if math.isnan(error) else float(error)
    if (
        latest is not None
        and (latest.load, latest.arrival_rate, latest.load_error) == (load, rate, error)
        and (latest.operator, latest.index, latest.spread) == (scored.operator, scored.index, scored.spread)
    ):
        return latest  # what is known is that period's key group as it was (always so for previous)
    base = latest if latest is not None else replace(scored, state_size=0.0, resources={}, arrival_rate=None)
    return replace(
        base,
        operator=scored.operator,
        index=scored.index,
        spread=scored.spread,
        load=float(load),
        arrival_rate=rate,
        load_error=error,
    )
