"""A comparison's reference, each run's difference to it with its confidence interval, and the verdict.

**The reference** is what the engine does by itself: its own split at each period's node count,
the placement kept while the count is the same and split anew when it changes. That is the
replay of ``flink_default`` (statistics hashed with Flink's hash: a job that runs stock Flink)
or ``storm_default`` (any other hash) with the trigger ``always``: both read no loads, so a
period whose node count did not change gets the split it already has (no moves) and a period
whose count changed gets the engine's re-split. :func:`reference_planner` picks it.

**The difference** of a run to the reference is paired: ``d_t`` = the run's load distance (% of
the mean) minus the reference's, in the same period ``t``, over the periods both scored. Its
mean is the run's gain (negative: better than the reference) and :func:`paired_interval` gives
a 95 % confidence interval by a **moving-block bootstrap** over periods (Kuensch 1989): the
``n`` differences are cut into every block of ``block`` consecutive periods (``n - block + 1``
of them), ``ceil(n / block)`` blocks are drawn with replacement and joined (cut to ``n``), and
the interval is the 2.5 and 97.5 percentiles of the means of :data:`RESAMPLES` such resamples,
drawn with the fixed seed :data:`SEED` (the same table always gives the same interval). Blocks
keep what neighbouring periods share (a busy morning lasts several hours, a placement carries
over), which periods drawn one by one would break, and which would make the interval too
narrow. The block length is ``round(n ** (1/3))`` unless given: the order Hall, Horowitz and
Jing (1995) show is optimal for distribution estimates (6 periods for a week of hours).

**The verdict** (:func:`verdict`) is one line in plain words: which run beat the reference
beyond noise (its interval wholly below 0), by how much and at what state moved; or that none
did, and whether the best was within noise or every run was worse.

Example
-------
>>> import numpy as np
>>> diffs = np.array([-3.0, -2.0, -4.0, -1.0, -3.0, -2.0, -5.0, -2.0])
>>> interval = paired_interval(diffs)
>>> interval.mean, interval.block, interval.low < interval.mean < interval.high < 0
(-2.75, 2, True)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from albic.base.errors import InvalidParameterError
from albic.core.model import Operator

__all__ = [
    "RESAMPLES",
    "SEED",
    "CONFIDENCE",
    "DEFAULT_REFERENCE",
    "Interval",
    "block_length",
    "paired_interval",
    "reference_planner",
    "verdict",
    "describe_interval",
]

#: Bootstrap resamples per interval: the percentiles' own Monte Carlo error is then below a
#: tenth of the interval's width for the series of a comparison (tests/test_verdict.py).
RESAMPLES = 2000
#: The bootstrap's seed: the same differences always give the same interval.
SEED = 0
#: The confidence of the intervals.
CONFIDENCE = 0.95
#: ``reference="default"``: the engine's own split the statistics were hashed for.
DEFAULT_REFERENCE = "default"

# Differences closer to 0 than this are ties (floating-point noise of equal placements).
_TIE = 1e-9


@dataclass(frozen=True)
class Interval:
    """The mean of ``n`` paired differences and its confidence interval ``low .. high`` (moving-block
    bootstrap, blocks of ``block`` periods); ``better`` and ``worse`` count the periods whose
    difference is below and above 0."""

    mean: float
    low: float
    high: float
    block: int
    n: int
    better: int
    worse: int

    @classmethod
    def of_row(cls, row: Any, suffix: str = "") -> Interval:
        """The interval a summary row holds in its ``vs_reference_*``, ``compared_periods``,
        ``better_periods`` and ``worse_periods`` columns (each name with ``suffix``)."""
        return cls(
            float(row[f"vs_reference_pct{suffix}"]),
            float(row[f"vs_reference_low{suffix}"]),
            float(row[f"vs_reference_high{suffix}"]),
            0,
            int(row[f"compared_periods{suffix}"]),
            int(row[f"better_periods{suffix}"]),
            int(row[f"worse_periods{suffix}"]),
        )

    @property
    def beats(self) -> bool:
        """Better than the reference beyond noise: the whole interval is below 0."""
        return self.high < 0

    @property
    def loses(self) -> bool:
        """Worse than the reference beyond noise: the whole interval is above 0."""
        return self.low > 0


def block_length(n: int) -> int:
    """The bootstrap's block length for ``n`` periods: ``round(n ** (1/3))``, at least 1.

    >>> block_length(168), block_length(8), block_length(1)
    (6, 2, 1)
    """
    return max(1, round(n ** (1.0 / 3.0)))


def _resampled_means(diffs: np.ndarray, block: int, resamples: int, seed: int) -> np.ndarray:
    n = diffs.size
    starts = np.random.default_rng(seed).integers(0, n - block + 1, size=(resamples, math.ceil(n / block)))
    # Every resample is its blocks' periods laid end to end, cut to n.
    periods = (starts[:, :, None] + np.arange(block)).reshape(resamples, -1)[:, :n]
    return diffs[periods].mean(axis=1)


def paired_interval(
    diffs: Sequence[float] | np.ndarray,
    *,
    block: int | None = None,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    confidence: float = CONFIDENCE,
) -> Interval:
    """The mean of the paired differences ``diffs`` (one per period, in time order) and its
    ``confidence`` interval by a moving-block bootstrap (module docstring). NaN differences
    (a period one of the two did not score) are left out; none left gives NaN.

    >>> paired_interval([1.0, 1.0, 1.0]).low, paired_interval([]).n
    (1.0, 0)
    """
    values = np.asarray(diffs, dtype=float)
    values = values[np.isfinite(values)]
    n = values.size
    if n == 0:
        return Interval(math.nan, math.nan, math.nan, 0, 0, 0, 0)
    if not 0 < confidence < 1:
        raise InvalidParameterError(f"confidence {confidence!r}: must be between 0 and 1")
    block = block_length(n) if block is None else int(block)
    if not 1 <= block <= n:
        raise InvalidParameterError(f"block {block}: must be between 1 and the {n} periods")
    means = _resampled_means(values, block, resamples, seed)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return Interval(
        float(values.mean()),
        float(low),
        float(high),
        block,
        int(n),
        int((values < -_TIE).sum()),
        int((values > _TIE).sum()),
    )


def reference_planner(operators: Sequence[Operator], reference: str | None = DEFAULT_REFERENCE) -> str | None:
    """The planner whose replay is the reference of a comparison of statistics with these
    ``operators``: ``"flink_default"`` when every operator's keys were hashed with Flink's hash,
    else ``"storm_default"``; a name given is kept; ``None`` or ``"none"``: no reference.

    >>> from albic.core.model import Operator
    >>> flink = [Operator("a", key_hash="flink")]
    >>> reference_planner(flink), reference_planner(flink, "storm_default"), reference_planner(flink, "none")
    ('flink_default', 'storm_default', None)
    """
    if reference is None or str(reference).strip() in ("none", ""):
        return None
    name = str(reference).strip()
    if name != DEFAULT_REFERENCE:
        return name
    flink = bool(operators) and all(op.key_hash == "flink" for op in operators)
    return "flink_default" if flink else "storm_default"


def describe_interval(interval: Interval) -> str:
    """A difference to the reference and its interval in words, for tables and the verdict.

    >>> describe_interval(Interval(-2.5, -4.0, -1.25, 6, 168, 100, 40))
    '2.50 points better (95 % CI 1.25 to 4.00 better; better in 100 of 168 periods, worse in 40)'
    >>> describe_interval(Interval(0.5, -0.25, 1.5, 6, 168, 60, 70))
    '0.50 points worse (95 % CI 0.25 better to 1.50 worse: within noise; better in 60 of 168 periods, worse in 70)'
    """
    if math.isnan(interval.mean):
        return "not compared"
    word = "better" if interval.mean < 0 else "worse"
    if interval.beats or interval.loses:
        edges = sorted((abs(interval.low), abs(interval.high)))
        ci = f"{edges[0]:.2f} to {edges[1]:.2f} {word}"
    else:
        ci = f"{_side(interval.low)} to {_side(interval.high)}: within noise"
    return (
        f"{abs(interval.mean):.2f} points {word} ({CONFIDENCE * 100:.0f} % CI {ci}; "
        f"better in {interval.better} of {interval.n} periods, worse in {interval.worse})"
    )


def _side(value: float) -> str:
    return f"{abs(value):.2f} {'better' if value < 0 else 'worse'}"


def verdict(summary: Any) -> str:
    """One line in plain words from a summary with reference columns
    (:func:`albic.evaluation.compare.summarize`): the run that beat the reference beyond noise by
    the most, by how much and at what state moved; or that none did.

    The summary's rows are indexed by planner, with ``budget_parameter``, ``budget``,
    ``reference`` (the reference's row), ``vs_reference_pct``, ``vs_reference_low``,
    ``vs_reference_high``, ``compared_periods``, ``better_periods``, ``worse_periods``,
    ``mean_migration_cost_pct`` and ``total_moves``.
    """
    rows = summary.reset_index()
    if "reference" not in rows or not rows["reference"].any():
        return "verdict: no reference was replayed, so there is nothing to judge against"
    reference = str(rows.loc[rows["reference"], "planner"].iloc[0])
    judged = rows[~rows["reference"] & rows["vs_reference_pct"].notna()]
    if judged.empty:
        return f"verdict: no planner made a plan to compare with the reference ({reference})"
    winners = judged[judged["vs_reference_high"] < 0]
    if not winners.empty:
        best = winners.loc[winners["vs_reference_pct"].idxmin()]
        others = len(winners) - 1
        more = f"; {others} other run{'s' if others != 1 else ''} also beat it beyond noise" if others else ""
        return (
            f"verdict: {_run_name(best)} beats the reference ({reference}): "
            f"{_interval_words(best)} in mean load distance, moving {best['mean_migration_cost_pct']:.2f} % of the state "
            f"per period ({int(best['total_moves'])} moves in all){more}"
        )
    best = judged.loc[judged["vs_reference_pct"].idxmin()]
    if (judged["vs_reference_low"] > 0).all():
        return (
            f"verdict: no planner beats the reference ({reference}): every run is worse beyond "
            f"noise, the closest, {_run_name(best)}, is {_interval_words(best)}; keep the engine's split"
        )
    return (
        f"verdict: no planner beats the reference ({reference}) beyond noise; the best, "
        f"{_run_name(best)}, is {_interval_words(best)}; keep the engine's split"
    )


def _run_name(row: Any) -> str:
    budget = row.get("budget")
    if budget is None or budget != budget or f"{row['budget_parameter']}=" in str(row["planner"]):
        return str(row["planner"])
    return f"{row['planner']} at {row['budget_parameter']}={budget:g}"


def _interval_words(row: Any) -> str:
    return describe_interval(Interval.of_row(row))
