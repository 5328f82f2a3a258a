"""Whether a plan pays: its expected gain in balance beyond the noise of the loads, against what its
moves cost (design section 7c).

A plan is made from measured loads, and measured loads are noisy: a key group's load counted from
``n`` events is off by about ``load / sqrt(n)`` (its ``load_error``). A planner given such loads
spends its budget on the noise too: it moves key groups to even out differences that the next
period will not have. :func:`payoff` judges a plan on what the loads are *expected* to be:

1. **The rates behind the loads** (:func:`estimated_rates`): each operator's loads shrunk toward
   the operator's mean load by how much of their spread their errors explain (empirical Bayes,
   James and Stein's estimator in Efron and Morris's form, 1975). With ``x_i`` the loads of an
   operator's ``m`` key groups, ``s_i`` their errors and ``x`` their mean, the rates' own spread
   is ``tau^2 = max(0, var(x) - mean(s^2))`` and key group ``i``'s rate is estimated
   ``x + w_i (x_i - x)`` with ``w_i = tau^2 / (tau^2 + s_i^2)``, of standard error
   ``sqrt(w_i) s_i``. Loads whose differences are all noise (``tau = 0``) are all their mean;
   loads measured without error (``load_error`` None, or 0) are kept as they are.
2. **The gain over draws**: ``draws`` sets of loads drawn around the estimated rates with their
   errors (normal, at least 0; a fixed ``seed``), and the plan's gain on each, the load distance
   (% of the mean) before the plan less that after it. ``gain_pct`` is their mean, ``noise_pct``
   their standard deviation.
3. **Moves that do not pay are dropped** (``prune``): one at a time, the move whose return to
   its source loses the least gain on average over the draws goes back, while that loss is at
   most what the move costs. Moves off a removing node stay: the node must be drained.
4. **The verdict**: the plan pays when ``gain_pct - z x noise_pct`` (the gain beyond what noise
   alone would show, one-sided at ``z``: 1.645 for 95 %) exceeds its cost plus ``margin``. Its
   cost is ``cost`` points of load distance per % of the state moved (a user's weight; 0 by
   default: then a plan pays when its gain is real). ``break_even_periods`` is the cost over the
   gain: the periods a plan must live to pay for its moves.

Example
-------
>>> from albic.core.model import Node, KeyGroup, Snapshot
>>> noisy = [KeyGroup(f"k{i}", "op", load, 1.0, load_error=4.5) for i, load in enumerate([22.0, 18.0, 20.0, 20.0])]
>>> snap = Snapshot([Node("a"), Node("b")], noisy, {"k0": "a", "k1": "b", "k2": "a", "k3": "b"})
>>> judged = payoff(snap, {"k0": "a", "k1": "a", "k2": "b", "k3": "b"})   # 42:38 -> 40:40
>>> judged.pays, judged.gain_pct            # errors of 4.5 explain the 42:38: nothing to gain
(False, 0.0)
>>> exact = [KeyGroup(f"k{i}", "op", load, 1.0) for i, load in enumerate([40.0, 30.0, 5.0, 5.0])]
>>> skewed = Snapshot([Node("a"), Node("b")], exact, {"k0": "a", "k1": "a", "k2": "b", "k3": "b"})
>>> judged = payoff(skewed, {"k0": "a", "k1": "b", "k2": "a", "k3": "b"})  # 70:10 -> 45:35
>>> judged.pays, judged.gain_pct, judged.moves_kept, judged.moves_dropped   # k2's move goes back: 40:40
(True, 75.0, 1, 1)
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from albic.base.errors import InvalidParameterError
from albic.core import metrics
from albic.core.model import Snapshot
from albic.core.plan import Plan, moves_to

__all__ = ["Payoff", "payoff", "estimated_rates", "only_moves_that_pay", "DRAWS", "Z"]

#: Draws of the loads a plan is judged on.
DRAWS = 64
#: One-sided 95 %: a gain must stand 1.645 standard deviations of its noise above its cost.
Z = 1.645


@dataclass(frozen=True)
class Payoff:
    """What a plan is expected to gain and cost, per period, in points of load distance (% of the
    mean), and the placement that keeps only its moves that pay (``node_of``, node indices)."""

    pays: bool
    gain_pct: float
    noise_pct: float
    cost_pct: float
    moves_kept: int
    moves_dropped: int
    state_moved_pct: float
    node_of: np.ndarray = field(repr=False, compare=False)

    @property
    def break_even_periods(self) -> float:
        """Periods a plan must live for its expected gain to pay its cost (0: free; inf: never)."""
        if self.cost_pct <= 0:
            return 0.0
        return self.cost_pct / self.gain_pct if self.gain_pct > 0 else math.inf

    def details(self) -> dict[str, float | int | bool]:
        """Plain values for a plan's details (JSON: ``break_even_periods`` None for never)."""
        return {
            "pays": self.pays,
            "expected_gain_pct": self.gain_pct,
            "gain_noise_pct": self.noise_pct,
            "cost_pct": self.cost_pct,
            # JSON has no infinity: a plan that never breaks even says None.
            "break_even_periods": None if math.isinf(self.break_even_periods) else self.break_even_periods,
            "moves_kept": self.moves_kept,
            "moves_dropped": self.moves_dropped,
        }


def estimated_rates(snapshot: Snapshot) -> tuple[np.ndarray, np.ndarray]:
    """The rates behind each key group's load and their standard errors (module docstring, 1), in
    ``snapshot.key_groups`` order.

    >>> from albic.core.model import Node, KeyGroup, Snapshot
    >>> kgs = [KeyGroup(f"k{i}", "op", load, load_error=1.5) for i, load in enumerate([2.0, 4.0])]
    >>> rates, errors = estimated_rates(Snapshot([Node("a")], kgs, {"k0": "a", "k1": "a"}))
    >>> rates.tolist(), errors.tolist()       # a variance of 2 that errors of 1.5 explain: all noise
    ([3.0, 3.0], [0.0, 0.0])
    """
    loads = snapshot.arrays().loads.astype(float)
    errors = np.array([kg.load_error or 0.0 for kg in snapshot.key_groups], dtype=float)
    rates, spread = loads.copy(), errors.copy()
    operators = np.array([kg.operator for kg in snapshot.key_groups])
    for name in np.unique(operators):
        members = np.flatnonzero(operators == name)
        x, s2 = loads[members], errors[members] ** 2
        if members.size < 2 or not (s2 > 0).any():
            continue
        tau2 = max(0.0, float(x.var(ddof=1)) - float(s2.mean()))
        weight = np.divide(tau2, tau2 + s2, out=np.ones_like(s2), where=(tau2 + s2) > 0)
        rates[members] = x.mean() + weight * (x - x.mean())
        spread[members] = np.sqrt(weight * s2)
    return rates, spread


class _Draws:
    """Loads drawn around the estimated rates, and the load distance of placements on them."""

    def __init__(self, snapshot: Snapshot, draws: int, seed: int) -> None:
        arrays = snapshot.arrays()
        rates, errors = estimated_rates(snapshot)
        noise = np.random.default_rng(seed).standard_normal((draws, rates.size))
        self.loads = np.maximum(0.0, rates + noise * errors)
        self.capacities = arrays.capacities.astype(float)
        self.active = arrays.active
        self.nodes = self.capacities.size
        total = self.loads.sum(axis=1)
        self.mean = total / max(float(self.capacities[self.active].sum()), 1e-300)

    def node_loads(self, node_of: np.ndarray) -> np.ndarray:
        """Each draw's load per node of the placement ``node_of``: one bincount over every draw."""
        draws = self.loads.shape[0]
        bins = (np.arange(draws)[:, None] * self.nodes + node_of).ravel()
        counted = np.bincount(bins, weights=self.loads.ravel(), minlength=draws * self.nodes)
        return counted.reshape(draws, self.nodes)

    def distance_pct(self, node_loads: np.ndarray) -> np.ndarray:
        """Each draw's load distance in % of its mean (0 where a draw has no load)."""
        utilisation = node_loads[:, self.active] / self.capacities[self.active]
        distance = np.abs(utilisation - self.mean[:, None]).max(axis=1)
        return np.divide(100.0 * distance, self.mean, out=np.zeros_like(distance), where=self.mean > 0)


def payoff(
    snapshot: Snapshot,
    placement: Mapping[str, str] | np.ndarray,
    *,
    z: float = Z,
    cost: float = 0.0,
    margin: float = 0.0,
    prune: bool = True,
    draws: int = DRAWS,
    seed: int = 0,
) -> Payoff:
    """Whether the plan ``placement`` of ``snapshot`` pays, and its moves that do (module docstring)."""
    arrays = snapshot.arrays()
    before = arrays.current
    after = np.array(metrics.node_of(snapshot, placement), copy=True)
    state = arrays.state_sizes.astype(float)
    total_state = float(state.sum())
    share = 100.0 * state / total_state if total_state > 0 else np.zeros_like(state)
    sample = _Draws(snapshot, draws, seed)
    start = sample.distance_pct(sample.node_loads(before))
    loads = sample.node_loads(after)
    dropped = 0
    if prune:
        loads, dropped = _drop_moves_that_do_not_pay(
            sample, before, after, loads, arrays.removing, cost * share
        )
    gains = start - sample.distance_pct(loads)
    moved = after != before
    moved_pct = float(share[moved].sum())
    gain, noise = float(gains.mean()), float(gains.std(ddof=1)) if draws > 1 else 0.0
    pays = bool(moved.any()) and gain - z * noise > cost * moved_pct + margin
    return Payoff(pays, gain, noise, cost * moved_pct, int(moved.sum()), dropped, moved_pct, after)


def only_moves_that_pay(
    plan: Plan, snapshot: Snapshot | None = None, *, z: float = Z, cost: float = 0.0, margin: float = 0.0
) -> Plan:
    """``plan`` with only its moves that pay (module docstring), or none when what is left does
    not pay in all; its details say so under ``"payoff"`` (``pays``, ``expected_gain_pct``,
    ``gain_noise_pct``, ``cost_pct``, ``break_even_periods``, ``moves_kept``, ``moves_dropped``,
    ``load_errors_known``),
    and :func:`albic.core.explain.explain` reports them. ``snapshot`` defaults to the one the plan
    was made for. A plan that made no plan is returned as it is.

    >>> from albic.core.model import Node, KeyGroup, Snapshot
    >>> from albic.core.planner import plan
    >>> kgs = [KeyGroup(f"k{i}", "op", load, 1.0, load_error=4.5) for i, load in enumerate([22.0, 18.0, 20.0, 20.0])]
    >>> snap = Snapshot([Node("a"), Node("b")], kgs, {"k0": "a", "k1": "b", "k2": "a", "k3": "b"})
    >>> noisy = plan(snap, "milp", max_moves=2)
    >>> len(noisy.moves), len(only_moves_that_pay(noisy).moves)   # 42:38 evened out: noise
    (2, 0)
    >>> only_moves_that_pay(noisy).details["payoff"]["pays"]
    False
    """
    snapshot = snapshot if snapshot is not None else plan.snapshot
    if snapshot is None:
        raise InvalidParameterError("only_moves_that_pay: give the snapshot the plan was made for")
    if plan.no_plan_reason is not None:
        return plan
    judged = payoff(snapshot, plan.assignment, z=z, cost=cost, margin=margin)
    where = judged.node_of if judged.pays else snapshot.arrays().current
    return dataclasses.replace(
        plan,
        assignment=snapshot.arrays().assignment(where),
        moves=moves_to(snapshot, where),
        # The plan's own metrics (its limits among them), the balance ones of what is applied.
        metrics={**plan.metrics, **metrics.plan_metrics(snapshot, where)},
        details={
            **dict(plan.details),
            "payoff": {
                **judged.details(),
                "z": z,
                "cost": cost,
                "margin": margin,
                # Without load errors the loads are taken as exact: no noise to discount.
                "load_errors_known": any(kg.load_error for kg in snapshot.key_groups),
            },
        },
    )


def _drop_moves_that_do_not_pay(
    sample: _Draws,
    before: np.ndarray,
    after: np.ndarray,
    loads: np.ndarray,
    removing: np.ndarray,
    move_cost: np.ndarray,
) -> tuple[np.ndarray, int]:
    """Return moves to their sources, least useful first, while one loses no more gain than it
    costs (module docstring, 3); ``after`` is changed in place. The node loads after, and the
    moves returned."""
    dropped = 0
    current = sample.distance_pct(loads)
    while True:
        movable = np.flatnonzero((after != before) & ~removing[before])
        if movable.size == 0:
            return loads, dropped
        losses = np.empty(movable.size)
        for i, kg in enumerate(movable):
            trial = _returned(loads, sample.loads[:, kg], after[kg], before[kg])
            losses[i] = float((sample.distance_pct(trial) - current).mean()) - move_cost[kg]
        best = int(np.argmin(losses))
        if losses[best] > 0:
            return loads, dropped
        kg = movable[best]
        loads = _returned(loads, sample.loads[:, kg], after[kg], before[kg])
        current = sample.distance_pct(loads)
        after[kg] = before[kg]
        dropped += 1


def _returned(loads: np.ndarray, kg_loads: np.ndarray, target: int, source: int) -> np.ndarray:
    trial = loads.copy()
    trial[:, target] -= kg_loads
    trial[:, source] += kg_loads
    return trial
