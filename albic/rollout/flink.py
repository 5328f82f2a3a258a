"""Plans in Flink's terms: stock Flink's ranges, an explicit table for other engines, and a
skew-aware parallelism advisor.

**Stock Flink.** A Flink job cannot be told which key groups a subtask owns: subtask ``i`` of ``p``
always owns the contiguous range that ``KeyGroupRangeAssignment.computeKeyGroupRangeForOperatorIndex``
computes from ``p`` and the maximum parallelism ``N`` (:func:`albic.core.flink_keys.flink_key_group_ranges`,
checked on the JVM). So in stock Flink a plan *is* a parallelism. :func:`stock_flink_ranges` takes a
plan's key-group -> node assignment and returns stock Flink's ranges at the parallelism it names
(the number of nodes holding the operator's key groups), or refuses it
(:class:`~albic.base.errors.NotStockFlinkError`) naming how many key groups differ from that split
and the nearest parallelism whose split the plan comes closest to.

**Which key groups.** Ranges only mean something over Flink's own key groups. A snapshot knows the
hash its key groups were made with through its operators: ``Operator.key_hash`` and
``Operator.max_parallelism``, which :func:`albic.io.read_snapshots` copies from the statistics
dataset's manifest (the spec's ``hash`` and ``max_parallelism``; a dataset made before the hash
existed is blake2b) and a snapshot file keeps. That is the reading chosen here: a snapshot whose
operator says ``key_hash = "flink"`` has Flink's key groups; one that says ``"blake2b"``, or says
nothing (a hand-made snapshot, an operator not declared), is refused for stock Flink
(:class:`~albic.base.errors.KeyHashError`, naming the hash). The job's maximum parallelism ``N`` is
the one given, else the statistics' ``max_parallelism``, else Flink's default for the parallelism
(``computeDefaultMaxParallelism``: 128 up to parallelism 85); the statistics' ``K`` key groups fold
exactly onto ``N`` key groups when ``N`` divides ``K`` (:func:`albic.core.flink_keys.fold_key_groups`).

**Custom assignment.** Engines that take an explicit table -- Flink with a custom key-group
assignment, Storm or Kafka Streams with a custom partitioner -- get :func:`custom_assignment`: each
node's runs of key groups, labelled as not stock Flink. :func:`flink_ranges` is the contiguous form
of that table (one range per node), kept for the interval planners.

**Advisor.** :func:`advise` sizes a keyed operator the way stock Flink will run it: for every
candidate parallelism, each subtask's load under Flink's ranges, the busiest subtask's utilisation
(load over ``subtask_capacity``), the imbalance, and the key groups and state that change subtask
from the current parallelism. It recommends the smallest parallelism whose busiest subtask stays at
or under the target utilisation (by default Flink's autoscaler's,
:data:`AUTOSCALER_TARGET_UTILISATION`), in every period of a statistics dataset (the peak that
matters, not the mean), or None with the reason when none can (one key group alone over the target).
Beside it, :func:`autoscaler_parallelism` is what Flink's autoscaler rule picks
(``JobVertexScaler.computeScaleTargetParallelism`` and ``scale``): scale the current parallelism by
the busiest subtask's utilisation over the target (busy time aggregated by ``MAX``, its default;
``AVG`` gives the average), then align to a divisor of the maximum parallelism -- blind to where
the hot key groups fall at the new parallelism.

Example
-------
>>> ids = {f"op/{g}": ("op", g) for g in range(32)}
>>> ranges = stock_flink_ranges({f"op/{g}": "abcde"[g * 5 // 32] for g in range(32)}, ids,
...                             max_parallelism={"op": 32})
>>> [(r["node"], r["start"], r["end"]) for r in ranges["op"]["ranges"]]
[('a', 0, 6), ('b', 7, 12), ('c', 13, 19), ('d', 20, 25), ('e', 26, 31)]
>>> ssm_like = {f"op/{g}": "abcde"[min(g // 8, 3) + (g >= 25)] for g in range(32)}  # 0-7 ... 24-24, 25-31
>>> stock_flink_ranges(ssm_like, ids, max_parallelism={"op": 32})  # doctest: +ELLIPSIS
Traceback (most recent call last):
albic.base.errors.NotStockFlinkError: operator 'op': 9 of 32 key groups are not where stock Flink puts them at parallelism 5 ...
"""

from __future__ import annotations

import io
import itertools
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from albic.base.errors import InvalidParameterError, KeyHashError, NotContiguousError, NotStockFlinkError
from albic.base.files import atomic_write_bytes
from albic.base.formats import share, size
from albic.core.flink_keys import (
    check_max_parallelism,
    default_max_parallelism,
    flink_key_group_ranges,
    flink_subtasks,
    fold_key_groups,
)
from albic.core.metrics import ABS_NOISE
from albic.core.model import Snapshot
from albic.core.planner import Interval, Options, check_params
from albic.io import read_snapshot, read_snapshots

__all__ = [
    "flink_ranges",
    "split_key_group_id",
    "flink_key_groups",
    "stock_flink_ranges",
    "custom_assignment",
    "advise",
    "advice_table",
    "plot_advice",
    "autoscaler_parallelism",
    "subtask_weights",
    "ADVICE_SCHEMA",
    "RANGES_SCHEMA",
    "CUSTOM_SCHEMA",
    "AUTOSCALER_TARGET_UTILISATION",
]

ADVICE_SCHEMA = "albic.flink-advice/1"
RANGES_SCHEMA = "albic.flink-ranges/1"
CUSTOM_SCHEMA = "albic.custom-assignment/1"
#: The busiest subtask's target utilisation: Flink's autoscaler default
#: ``job.autoscaler.target.utilization``, as the advice sizes for a job Flink will rescale (the
#: stream model calibrates its node rate to :data:`albic.evaluation.stream.PEAK_UTILISATION`).
AUTOSCALER_TARGET_UTILISATION = 0.7
# Flink autoscaler defaults (AutoScalerOptions): scale-down.max-factor, scale-up.max-factor,
# vertex.min-parallelism, vertex.max-parallelism.
_MAX_SCALE_DOWN_FACTOR = 0.6
_MAX_SCALE_UP_FACTOR = 100000.0
_VERTEX_MIN_PARALLELISM = 1
_VERTEX_MAX_PARALLELISM = 200
_AGGREGATORS = ("MAX", "AVG")
_CUSTOM_LABEL = (
    "custom key-group assignment, not stock Flink: for Flink with a custom key-group "
    "assignment, Storm or Kafka Streams with a custom partitioner"
)


# -- key groups -----------------------------------------------------------------------------------


def _runs(groups: list[int]) -> list[tuple[int, int]]:
    """Sorted key groups as maximal runs ``(first, last)`` of consecutive numbers."""
    out = []
    for _, run in itertools.groupby(enumerate(sorted(groups)), key=lambda t: t[1] - t[0]):
        members = [g for _, g in run]
        out.append((members[0], members[-1]))
    return out


def _runs_text(runs: list[tuple[int, int]]) -> str:
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def split_key_group_id(kid: str) -> tuple[str, int]:
    """``"operator/17"`` (the ids ``albic stats`` writes) -> ``("operator", 17)``."""
    operator, slash, number = kid.rpartition("/")
    if not slash or not number.isdigit():
        raise InvalidParameterError(
            f"key group id {kid!r} is not OPERATOR/NUMBER, the form 'albic stats' writes; "
            "cannot tell its Flink key group"
        )
    return operator, int(number)


def flink_key_groups(snapshot: Snapshot | None, ids: Iterable[str]) -> dict[str, tuple[str, int]]:
    """``{key group id: (operator, key group number)}``: the snapshot's ``operator`` and ``index``
    where it has them, else read from ids ``OPERATOR/NUMBER``."""
    known = {} if snapshot is None else {kg.id: kg for kg in snapshot.key_groups}
    out = {}
    for kid in ids:
        kg = known.get(kid)
        if snapshot is not None and kg is None:
            raise InvalidParameterError(
                f"the plan places key group {kid!r}, which the snapshot does not have"
            )
        out[kid] = (
            (kg.operator, kg.index) if kg is not None and kg.index is not None else split_key_group_id(kid)
        )
    return out


def _numbers_problem(operator: str, seen: list[int]) -> str | None:
    if sorted(seen) == list(range(len(seen))):
        return None
    missing = sorted(set(range(max(seen) + 1)) - set(seen))
    twice = sorted(g for g in set(seen) if seen.count(g) > 1)
    return (
        f"operator {operator!r}: key groups must be 0 .. {len(seen) - 1} once each"
        + (f"; missing {_runs_text(_runs(missing))}" if missing else "")
        + (f"; repeated {twice}" if twice else "")
    )


def flink_ranges(
    assignment: Mapping[str, str], key_groups: Iterable[tuple[str, str, int]] | None = None
) -> dict[str, list[dict[str, Any]]]:
    """Each operator's nodes with their contiguous key-group ranges, in key-group order: the
    one-range-per-node form of :func:`custom_assignment` (not stock Flink's split unless the plan
    happens to be it; :func:`stock_flink_ranges` is that).

    ``key_groups`` gives ``(id, operator, key group number)``; by default they come from ids of the
    form ``OPERATOR/NUMBER``. Returns ``{operator: [{"node", "subtask", "start", "end"}, ...]}``
    (``start``/``end`` inclusive, as in Flink's ``KeyGroupRange``; ``subtask`` = position in
    key-group order). Raises :class:`NotContiguousError` naming, per node, the runs of key groups
    that are not one range, or key groups whose numbers are not ``0 .. max_parallelism-1`` once.

    >>> flink_ranges({"op/0": "a", "op/1": "a", "op/2": "b"})
    {'op': [{'node': 'a', 'subtask': 0, 'start': 0, 'end': 1}, {'node': 'b', 'subtask': 1, 'start': 2, 'end': 2}]}
    """
    if key_groups is None:
        key_groups = [(kid, *split_key_group_id(kid)) for kid in assignment]
    by_operator: dict[str, dict[str, list[int]]] = {}
    numbers: dict[str, list[int]] = {}
    for kid, operator, number in key_groups:
        by_operator.setdefault(operator, {}).setdefault(assignment[kid], []).append(number)
        numbers.setdefault(operator, []).append(number)
    problems = [p for op, seen in numbers.items() if (p := _numbers_problem(op, seen))]
    out: dict[str, list[dict[str, Any]]] = {}
    for operator, nodes in by_operator.items():
        ranges = []
        for node, groups in nodes.items():
            runs = _runs(groups)
            if len(runs) > 1:
                problems.append(
                    f"operator {operator!r}: node {node!r} holds key groups {_runs_text(runs)}, "
                    "not one contiguous range"
                )
            ranges.append((runs[0][0], runs[-1][1], node))
        out[operator] = [
            {"node": node, "subtask": i, "start": start, "end": end}
            for i, (start, end, node) in enumerate(sorted(ranges))
        ]
    if problems:
        raise NotContiguousError(
            "the plan cannot be written as Flink key-group ranges: " + "; ".join(problems)
        )
    return out


def custom_assignment(
    assignment: Mapping[str, str],
    key_groups: Mapping[str, tuple[str, int]],
    key_hash: Mapping[str, str | None] | None = None,
) -> dict[str, Any]:
    """The plan as an explicit table per operator, labelled as not stock Flink:
    ``{"schema", "kind", "operators": {op: {"key_groups": K, "key_hash", "assignment": [node of
    key group 0, 1, ...], "nodes": {node: [[start, end], ...]}}}}``."""
    numbers: dict[str, dict[int, str]] = {}
    for kid, node in assignment.items():
        operator, number = key_groups[kid]
        numbers.setdefault(operator, {})[number] = node
    problems = [p for op, seen in numbers.items() if (p := _numbers_problem(op, list(seen)))]
    if problems:
        raise InvalidParameterError("the plan cannot be written as a key-group table: " + "; ".join(problems))
    operators = {}
    for operator, table in sorted(numbers.items()):
        rows = [table[g] for g in range(len(table))]
        nodes: dict[str, list[list[int]]] = {}
        for node in dict.fromkeys(rows):
            nodes[node] = [[a, b] for a, b in _runs([g for g, n in enumerate(rows) if n == node])]
        operators[operator] = {
            "key_groups": len(rows),
            "key_hash": (key_hash or {}).get(operator),
            "assignment": rows,
            "nodes": nodes,
        }
    return {"schema": CUSTOM_SCHEMA, "kind": _CUSTOM_LABEL, "operators": operators}


# -- stock Flink ----------------------------------------------------------------------------------


def check_flink_hash(
    snapshot: Snapshot, operators: Iterable[str], what: str = "stock-Flink ranges", where: str | None = None
) -> None:
    """:class:`KeyHashError` unless every one of ``operators`` is declared in the snapshot with
    ``key_hash = "flink"`` (see the module docstring for the reading); ``where`` names the file."""
    declared = {op.name: op for op in snapshot.operators}
    prefix = f"{where}: " if where else ""
    for name in operators:
        op = declared.get(name)
        if op is None or op.key_hash is None:
            raise KeyHashError(
                f"{prefix}operator {name!r}: the snapshot does not say which hash made its key groups, so "
                f"they cannot be taken for Flink's; {what} need statistics made with hash = "
                '"flink" in the albic stats spec (or write an explicit table with custom_assignment)'
            )
        if op.key_hash != "flink":
            raise KeyHashError(
                f"{prefix}operator {name!r}: its key groups were made with the {op.key_hash} hash, not "
                f"Flink's, so they are not the key groups a Flink job has and {what} over them "
                'would be wrong; make the statistics with hash = "flink" in the albic stats spec '
                "(or use custom_assignment for an engine that takes an explicit table)"
            )


def job_max_parallelism(
    key_groups: int, parallelism: int, given: int | None = None, stated: int | None = None
) -> tuple[int, str]:
    """The job's maximum parallelism and where it came from: ``given``, else ``stated`` (the
    statistics' ``max_parallelism``), else Flink's default for ``parallelism``; checked to divide
    the ``key_groups`` the statistics were hashed into."""
    if given is not None:
        n, source = check_max_parallelism(given), "given"
    elif stated is not None:
        n, source = check_max_parallelism(stated), "the statistics' max_parallelism"
    else:
        n = default_max_parallelism(parallelism)
        source = f"Flink's default for parallelism {parallelism} (computeDefaultMaxParallelism)"
    fold_key_groups([], key_groups, n)  # raises unless n divides key_groups
    return n, source


def _overlap(node_of: np.ndarray, n_nodes: int, subtask_of: np.ndarray, q: int) -> int:
    """The most key groups a one-to-one matching of nodes to subtasks at parallelism ``q`` puts
    where Flink does (maximum-weight bipartite matching)."""
    from scipy.optimize import linear_sum_assignment

    counts = np.bincount(node_of * q + subtask_of, minlength=n_nodes * q).reshape(n_nodes, q)
    rows, cols = linear_sum_assignment(counts, maximize=True)
    return int(counts[rows, cols].sum())


def stock_flink_ranges(
    assignment: Mapping[str, str],
    key_groups: Mapping[str, tuple[str, int]],
    *,
    sizes: Mapping[str, int] | None = None,
    max_parallelism: Mapping[str, int | None] | None = None,
    stated: Mapping[str, int | None] | None = None,
) -> dict[str, dict[str, Any]]:
    """Stock Flink's ranges for each operator of the plan, at the parallelism the plan names.

    ``assignment`` maps key group ids to nodes, ``key_groups`` ids to ``(operator, number)``
    (:func:`flink_key_groups`), ``sizes`` an operator to its number of key groups (by default, as
    many as the plan places). The parallelism ``p`` of an operator is the number of nodes holding
    its key groups; its maximum parallelism ``N`` comes from ``max_parallelism`` (given), else
    ``stated`` (the statistics'), else Flink's default for ``p`` (:func:`job_max_parallelism`). The
    plan is accepted when some one-to-one naming of its nodes as subtasks puts every key group
    (folded onto ``N``) where ``KeyGroupRangeAssignment`` does; else :class:`NotStockFlinkError`
    names how many key groups differ at ``p`` and the parallelism whose split is nearest (fewest
    key groups differing under the best naming, then nearest to ``p``).

    Returns ``{operator: {"max_parallelism", "max_parallelism_from", "parallelism", "ranges":
    [{"subtask", "node", "start", "end"}]}}`` with Flink's own ranges (over the ``N`` key groups).
    """
    given = dict(max_parallelism or {})
    stated = dict(stated or {})
    sizes = dict(sizes or {})
    per_op: dict[str, dict[int, str]] = {}
    for kid, node in assignment.items():
        operator, number = key_groups[kid]
        per_op.setdefault(operator, {})[number] = node
    out = {}
    for operator, table in sorted(per_op.items()):
        if (p := _numbers_problem(operator, list(table))) is not None:
            raise InvalidParameterError(f"the plan cannot be written as Flink ranges: {p}")
        k = sizes.get(operator, len(table))
        if k != len(table):
            raise InvalidParameterError(
                f"operator {operator!r}: the plan places {len(table)} of its {k} key groups"
            )
        out[operator] = _operator_ranges(operator, table, k, given.get(operator), stated.get(operator))
    return out


def _operator_ranges(
    operator: str, table: Mapping[int, str], k: int, given: int | None, stated: int | None
) -> dict[str, Any]:
    """Stock Flink's ranges of one operator whose ``k`` key groups the plan places as ``table``
    (number -> node), or :class:`NotStockFlinkError` (see :func:`stock_flink_ranges`)."""
    nodes = list(dict.fromkeys(table[g] for g in range(k)))
    index = {n: i for i, n in enumerate(nodes)}
    node_of = np.array([index[table[g]] for g in range(k)], dtype=np.int64)
    p = len(nodes)
    n, source = job_max_parallelism(k, p, given, stated)
    if p > n:
        raise NotStockFlinkError(
            f"operator {operator!r}: the plan uses {p} nodes, more than the maximum parallelism "
            f"{n}; stock Flink cannot run it"
        )
    folded = fold_key_groups(np.arange(k), k, n)
    at_p = k - _overlap(node_of, p, flink_subtasks(n, p)[folded], p)
    if at_p:
        best_q, best = _nearest_stock_split(node_of, p, folded, n, at_p)
        raise NotStockFlinkError(
            f"operator {operator!r}: {at_p} of {k} key groups are not where stock Flink puts "
            f"them at parallelism {p} (the plan's {p} nodes, maximum parallelism {n}); the "
            f"nearest stock split is parallelism {best_q} ({best} key groups differ). Flink "
            "takes no other ranges (KeyGroupRangeAssignment): plan with flink_default or "
            "'albic flink advise', or write an explicit table with custom_assignment"
        )
    subtask_of_node = {}
    subtasks = flink_subtasks(n, p)[folded]
    for g in range(k):
        subtask_of_node[nodes[node_of[g]]] = int(subtasks[g])
    node_of_subtask = {s: node for node, s in subtask_of_node.items()}
    return {
        "max_parallelism": n,
        "max_parallelism_from": source,
        "parallelism": p,
        "ranges": [
            {"subtask": s, "node": node_of_subtask[s], "start": a, "end": b}
            for s, (a, b) in enumerate(flink_key_group_ranges(n, p))
        ],
    }


def _nearest_stock_split(
    node_of: np.ndarray, p: int, folded: np.ndarray, n: int, at_p: int
) -> tuple[int, int]:
    """The parallelism whose stock split the plan's ``p`` nodes (``node_of``, one per key group)
    come closest to, and how many key groups differ there: fewest differing, then nearest to ``p``
    (where ``at_p`` differ)."""
    k = node_of.size
    best_q, best = p, at_p
    for q in range(1, n + 1):
        bound = k - p * math.ceil(n / q) * (k // n)  # the most a q-split can match
        if q > p and bound >= best:
            break
        if q == p:
            continue
        differ = k - _overlap(node_of, p, flink_subtasks(n, q)[folded], q)
        if (differ, abs(q - p), q) < (best, abs(best_q - p), best_q):
            best_q, best = q, differ
    return best_q, best


# -- the advisor ----------------------------------------------------------------------------------


def autoscaler_parallelism(
    current: int,
    busiest_utilisation: float,
    mean_utilisation: float,
    max_parallelism: int,
    target_utilisation: float = AUTOSCALER_TARGET_UTILISATION,
    aggregator: str = "MAX",
) -> tuple[int, int]:
    """What Flink's autoscaler picks for a keyed vertex running at ``current``, measured at
    ``busiest_utilisation`` (busiest subtask) and ``mean_utilisation`` (mean subtask): ``(aligned
    parallelism, parallelism before the alignment)``.

    ``JobVertexScaler.computeScaleTargetParallelism``: the true processing rate is the input rate
    over the busy time (aggregated by ``MAX``, the default, or ``AVG``), the target capacity the
    input rate over the target utilisation, so the scale factor is ``busy / target``, capped by
    ``scale-down.max-factor`` 0.6 and ``scale-up.max-factor`` 100000; ``scale()``: ``ceil(factor *
    current)`` within ``[min(current, 1), min(N, max(current, 200))]``, then (EVENLY_SPREAD, a keyed
    input) the first divisor of ``N`` upward -- up to ``current`` only when scaling down --, else the
    smallest parallelism downward with as few key groups per subtask, never reversing the direction.
    Left out: backlog catch-up and restart time (no lag), the rounding of the target rate (albic's
    load unit need not be records per second), the utilisation boundary and scaling history.

    >>> autoscaler_parallelism(2, 0.9, 0.9, 128)   # 2 * 0.9 / 0.7 = 2.57 -> 3 -> the divisor 4
    (4, 3)
    """
    check_params(
        "autoscaler_parallelism()", {"aggregator": aggregator}, {"aggregator": Options(_AGGREGATORS)}
    )
    busy = busiest_utilisation if aggregator == "MAX" else mean_utilisation
    if not busy > 0:
        return current, current  # no processing rate measured: no change
    factor = min(max(busy / target_utilisation, 1 - _MAX_SCALE_DOWN_FACTOR), 1 + _MAX_SCALE_UP_FACTOR)
    raw = int(min(math.ceil(factor * current), 2**31 - 1))
    lower, upper = min(current, _VERTEX_MIN_PARALLELISM), max(current, _VERTEX_MAX_PARALLELISM)
    upper_bound = min(max_parallelism, upper)
    new = min(max(lower, raw), upper_bound)
    if new == current:
        return current, new
    n, scale_up = max_parallelism, new > current
    for p in range(new, (upper_bound if scale_up else min(current, upper_bound)) + 1):
        if n % p == 0:
            return p, new
    p = new
    while p > 0:
        if n // p > n // new:
            if n % p != 0:
                p += 1
            break
        p -= 1
    p = max(p, lower)
    if (scale_up and p <= current) or (not scale_up and p >= current):
        return current, new
    return p, new


def _subtask_loads(cumulative: np.ndarray, n: int, p: int) -> np.ndarray:
    """Per period, each subtask's load at parallelism ``p``: ``cumulative`` is ``[periods, n+1]``."""
    s = np.arange(p)
    starts = (s * n + p - 1) // p
    ends = ((s + 1) * n - 1) // p
    return cumulative[:, ends + 1] - cumulative[:, starts]


def subtask_weights(weights: Any, max_parallelism: int, parallelism: int) -> np.ndarray:
    """Each subtask's share of ``weights`` (one per statistics key group, ``K`` of them, made with
    Flink's hash) in a job with maximum parallelism ``N`` running at ``parallelism``: the key groups
    folded onto ``N`` (``N`` must divide ``K``), summed over stock Flink's ranges. Integer weights
    (event counts) give exact integer sums.

    >>> subtask_weights([1, 2, 3, 4, 5, 6, 7, 8], 4, 3).tolist()   # key groups 0-1, 2, 3 of 4
    [14, 10, 12]
    """
    values = np.asarray(weights)
    k = values.size
    n, p = check_max_parallelism(max_parallelism), int(parallelism)
    flink_key_group_ranges(n, p)  # raises unless 1 <= p <= n
    folded = np.zeros(n, dtype=values.dtype)
    np.add.at(folded, fold_key_groups(np.arange(k), k, n), values)
    cumulative = np.concatenate([np.zeros(1, dtype=values.dtype), np.cumsum(folded)])
    return _subtask_loads(cumulative[None, :], n, p)[0]


def _read_source(source: Any) -> list[Snapshot]:
    if isinstance(source, Snapshot):
        return [source]
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        return list(read_snapshots(path)) if path.is_dir() else [read_snapshot(path)]
    snapshots = list(source)
    if not snapshots or not all(isinstance(s, Snapshot) for s in snapshots):
        raise InvalidParameterError(
            "advise() takes a Snapshot, snapshots, or a snapshot file or statistics folder"
        )
    return snapshots


# What advise() accepts, checked before anything is read.
_ADVICE_RULES = {
    "subtask_capacity": Interval(float, 0, closed="neither", note="the load one subtask carries at 100 %"),
    "target_utilisation": Interval(float, 0, 1, closed="right"),
    "busy_time_aggregator": Options(_AGGREGATORS),
    "current": [Interval(int, 1), None],
}


def _advised_operator(last: Snapshot, operator: str | None) -> str:
    """The operator named, or the snapshot's only one."""
    names = list(dict.fromkeys(kg.operator for kg in last.key_groups))
    if operator is None:
        if len(names) != 1:
            raise InvalidParameterError(
                f"the snapshot has {len(names)} operators ({', '.join(names)}); name one with parameter operator"
            )
        return names[0]
    if operator not in names:
        raise InvalidParameterError(
            f"operator {operator!r} is not in the snapshot (operators: {', '.join(names)})"
        )
    return operator


def _current_parallelism(last: Snapshot, current: int | None) -> int:
    """The parallelism given, else the last snapshot's active nodes."""
    if current is None:
        return sum(1 for node in last.nodes if not node.removing)
    return current


def _key_group_series(
    snapshots: list[Snapshot], operator: str
) -> tuple[list[list[float]], list[list[float]], list[Any]]:
    """Per period, the load and state of each of the K statistics' key groups (by number), and
    the periods' labels."""
    loads, states, labels = [], [], []
    k = None
    for snap in snapshots:
        groups = sorted(
            (kg.index if kg.index is not None else split_key_group_id(kg.id)[1], kg.load, kg.state_size)
            for kg in snap.key_groups
            if kg.operator == operator
        )
        numbers = [g for g, _, _ in groups]
        if numbers != list(range(len(numbers))) or (k is not None and len(numbers) != k):
            raise InvalidParameterError(
                f"period {snap.period!r}: operator {operator!r} must have key groups with index 0 .. K-1, "
                "the same K in every period"
            )
        k = len(numbers)
        loads.append([w for _, w, _ in groups])
        states.append([s for _, _, s in groups])
        labels.append(snap.period)
    return loads, states, labels


@dataclass(frozen=True)
class _FoldedPeriods:
    """The operator's load and state per period (rows) on the job's ``N`` key groups (columns),
    and ``cumulative``, the running sums of the loads that Flink's ranges cut (``N + 1`` columns)."""

    labels: list[Any]
    load: np.ndarray
    state: np.ndarray
    cumulative: np.ndarray
    capacity: float

    @classmethod
    def fold(
        cls, loads: list[list[float]], states: list[list[float]], labels: list[Any], n: int, capacity: float
    ) -> _FoldedPeriods:
        k = len(loads[0])
        folded = fold_key_groups(np.arange(k), k, n)
        load = np.stack([np.bincount(folded, weights=np.asarray(w, float), minlength=n) for w in loads])
        state = np.stack([np.bincount(folded, weights=np.asarray(s, float), minlength=n) for s in states])
        cumulative = np.concatenate([np.zeros((len(loads), 1)), np.cumsum(load, axis=1)], axis=1)
        return cls(labels, load, state, cumulative, capacity)

    @property
    def max_parallelism(self) -> int:
        return self.load.shape[1]

    @property
    def totals(self) -> np.ndarray:
        return self.load.sum(axis=1)

    def subtask_loads(self, p: int) -> np.ndarray:
        return _subtask_loads(self.cumulative, self.max_parallelism, p)

    def busiest(self, p: int) -> np.ndarray:
        """Per period, the busiest subtask's utilisation at parallelism ``p``."""
        return self.subtask_loads(p).max(axis=1) / self.capacity


def _over_target_reason(periods: _FoldedPeriods, heaviest: np.ndarray, target: float) -> str | None:
    """Why no parallelism meets the target, when a key group alone is over it (in some period)."""
    over = np.flatnonzero(heaviest > target * (1 + ABS_NOISE))
    if not over.size:
        return None
    t = int(over[np.argmax(heaviest[over])])
    g = int(np.argmax(periods.load[t]))
    when = "" if periods.labels[t] is None else f" in period {periods.labels[t]!r}"
    return (
        f"key group {g} alone carries {periods.load[t, g]:g}{when}, "
        f"{share(heaviest[t])} of a subtask: over the target {share(target)} at every parallelism "
        "(a key group is never split)"
    )


def _recommendation(
    periods: _FoldedPeriods, target: float
) -> tuple[int | None, str | None, list[int | None]]:
    """The smallest parallelism meeting the target in every period (or None and the reason), and
    the smallest for each period alone."""
    heaviest = periods.load.max(axis=1) / periods.capacity
    reason = _over_target_reason(periods, heaviest, target)
    recommended = None
    per_period_rec: list[int | None] = [None] * len(periods.labels)
    for p in range(1, periods.max_parallelism + 1):
        ok = periods.busiest(p) <= target * (1 + ABS_NOISE)
        for t in np.flatnonzero(ok).tolist():
            if per_period_rec[t] is None:
                per_period_rec[t] = p
        if recommended is None and reason is None and ok.all():
            recommended = p
        # Stop once every period that can meet the target has its parallelism (a period with a key
        # group over the target never can: scanning on to N would cost O(N^2) for nothing).
        if all(
            r is not None for r, ok_t in zip(per_period_rec, heaviest <= target * (1 + ABS_NOISE)) if ok_t
        ) and (recommended is not None or reason is not None):
            break
    return recommended, reason, per_period_rec


def _autoscaler_picks(
    periods: _FoldedPeriods, current: int, target: float, aggregator: str
) -> list[tuple[int, int]]:
    """The autoscaler's pick for each period, measured at the current parallelism."""
    at_current = periods.subtask_loads(current)
    return [
        autoscaler_parallelism(
            current,
            float(at_current[t].max() / periods.capacity),
            float(at_current[t].mean() / periods.capacity),
            periods.max_parallelism,
            target,
            aggregator,
        )
        for t in range(len(periods.labels))
    ]


def _candidates(periods: _FoldedPeriods, top: int, current: int, target: float) -> list[dict[str, Any]]:
    """One row per parallelism ``1 .. top``, at its worst period: the busiest subtask, the imbalance,
    and what changes subtask from the current parallelism."""
    n = periods.max_parallelism
    current_subtask = flink_subtasks(n, current)
    candidates = []
    for p in range(1, top + 1):
        sub = periods.subtask_loads(p)
        worst = int(np.argmax(sub.max(axis=1)))
        u = sub[worst] / periods.capacity
        moved = flink_subtasks(n, p) != current_subtask
        candidates.append(
            {
                "parallelism": p,
                "busiest_utilisation": float(u.max()),
                "imbalance": float(u.max() - u.mean()),
                "meets_target": bool(u.max() <= target * (1 + ABS_NOISE)),
                "period": periods.labels[worst],
                "subtask_loads": [float(x) for x in sub[worst]],
                "key_groups_moved": int(moved.sum()),
                "state_moved": float(periods.state[worst][moved].sum()),
            }
        )
    return candidates


def _autoscaler_at_peak(
    periods: _FoldedPeriods, auto: list[tuple[int, int]], target: float
) -> dict[str, Any]:
    """The autoscaler's pick at the period of the largest total load, and whether it overloads."""
    peak = int(np.argmax(periods.totals))
    auto_p, auto_raw = auto[peak]
    auto_busiest = float(periods.busiest(auto_p).max())
    return {
        "parallelism": auto_p,
        "before_alignment": auto_raw,
        "period": periods.labels[peak],
        "busiest_utilisation": auto_busiest,
        "over_target": bool(auto_busiest > target * (1 + ABS_NOISE)),
        "overloaded": bool(auto_busiest > 1 + ABS_NOISE),
    }


def _per_period(
    periods: _FoldedPeriods, per_period_rec: list[int | None], auto: list[tuple[int, int]]
) -> list[dict[str, Any]]:
    """Per period: its total load, the recommendation and the autoscaler's pick for it alone."""
    totals = periods.totals
    return [
        {
            "period": periods.labels[t],
            "total_load": float(totals[t]),
            "recommended": per_period_rec[t],
            "autoscaler": auto[t][0],
            "autoscaler_busiest_utilisation": float(periods.busiest(auto[t][0])[t]),
        }
        for t in range(len(periods.labels))
    ]


def advise(
    source: Snapshot | Sequence[Snapshot] | str | os.PathLike[str],
    *,
    subtask_capacity: float,
    max_parallelism: int | None = None,
    current: int | None = None,
    target_utilisation: float = AUTOSCALER_TARGET_UTILISATION,
    operator: str | None = None,
    busy_time_aggregator: str = "MAX",
) -> dict[str, Any]:
    """Advice on the parallelism of one keyed operator under stock Flink (see the module docstring).

    ``source``: a snapshot, a sequence of snapshots (periods), or a snapshot file / statistics folder.
    ``subtask_capacity`` is the load one subtask carries at 100 % (in the snapshot's load unit);
    ``current`` defaults to the number of active nodes of the last snapshot; ``max_parallelism``
    to the statistics' (else Flink's default for ``current``); ``operator`` to the only one.
    Returns the ADVICE.json document: ``recommended`` (int or None, with ``reason``), ``autoscaler``
    (its pick, at the peak period, and whether that pick overloads a subtask), ``candidates`` (one
    row per parallelism ``1 .. max(2 x the picks, 16)``, at most ``N``), ``periods`` (per period: its
    total load, the recommendation and the autoscaler's pick for that period alone).
    """
    settings = {
        "subtask_capacity": subtask_capacity,
        "target_utilisation": target_utilisation,
        "busy_time_aggregator": busy_time_aggregator,
        "current": current,
    }
    check_params("advise()", settings, _ADVICE_RULES)
    capacity, target = float(subtask_capacity), float(target_utilisation)
    snapshots = _read_source(source)
    last = snapshots[-1]
    operator = _advised_operator(last, operator)
    where = str(source) if isinstance(source, (str, os.PathLike)) else None
    check_flink_hash(last, [operator], "Flink's ranges, and so the advice,", where)
    declared = next(op for op in last.operators if op.name == operator)
    current = _current_parallelism(last, current)
    loads, states, labels = _key_group_series(snapshots, operator)
    k = len(loads[0])
    n, source_n = job_max_parallelism(k, current, max_parallelism, declared.max_parallelism)
    if current > n:
        raise InvalidParameterError(f"current = {current} is above the maximum parallelism {n}")
    periods = _FoldedPeriods.fold(loads, states, labels, n, capacity)
    recommended, reason, per_period_rec = _recommendation(periods, target)
    auto = _autoscaler_picks(periods, current, target, busy_time_aggregator)
    autoscaler = _autoscaler_at_peak(periods, auto, target)
    picks = (recommended or 0, autoscaler["parallelism"], current, max((a for a, _ in auto), default=0))
    return {
        "schema": ADVICE_SCHEMA,
        "operator": operator,
        "key_hash": "flink",
        "key_groups": k,
        "max_parallelism": n,
        "max_parallelism_from": source_n,
        "subtask_capacity": capacity,
        "target_utilisation": target,
        "current": current,
        "busy_time_aggregator": busy_time_aggregator,
        "recommended": recommended,
        "reason": reason,
        "autoscaler": autoscaler,
        "candidates": _candidates(periods, min(n, max(16, 2 * max(picks))), current, target),
        "periods": _per_period(periods, per_period_rec, auto),
    }


def advice_table(advice: Mapping[str, Any]) -> str:
    """The advice as a text table: one line per candidate parallelism, the picks marked."""
    target = advice["target_utilisation"]
    lines = [
        f"operator {advice['operator']!r}: {advice['key_groups']} key groups, maximum parallelism "
        f"{advice['max_parallelism']} ({advice['max_parallelism_from']}), subtask capacity "
        f"{advice['subtask_capacity']:g}, target {share(target)}, current parallelism {advice['current']}",
        f"{'p':>5}  {'busiest':>9}  {'imbalance':>9}  {'moved kg':>8}  {'state moved':>11}  pick",
    ]
    for row in advice["candidates"]:
        marks = []
        if row["parallelism"] == advice["recommended"]:
            marks.append("albic")
        if row["parallelism"] == advice["autoscaler"]["parallelism"]:
            marks.append("autoscaler")
        if row["parallelism"] == advice["current"]:
            marks.append("current")
        lines.append(
            f"{row['parallelism']:>5}  {share(row['busiest_utilisation']):>9}  {share(row['imbalance']):>9}  "
            f"{row['key_groups_moved']:>8}  {size(row['state_moved']):>11}  {', '.join(marks)}"
        )
    auto = advice["autoscaler"]
    verdict = (
        "overloads a subtask"
        if auto["overloaded"]
        else "keeps a subtask over the target"
        if auto["over_target"]
        else "meets the target"
    )
    rec = (
        f"recommended parallelism {advice['recommended']}"
        if advice["recommended"] is not None
        else f"no parallelism meets the target: {advice['reason']}"
    )
    lines.append(
        f"{rec}; Flink's autoscaler rule picks {auto['parallelism']} "
        f"(busiest subtask {share(auto['busiest_utilisation'])}: {verdict})"
    )
    return "\n".join(lines)


def plot_advice(advice: Mapping[str, Any], path: str | os.PathLike[str]) -> Path:
    """The busiest subtask's utilisation against the parallelism, the target line and both picks
    marked, written as an image (matplotlib; the format follows the suffix, e.g. ``.png``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = advice["candidates"]
    ps = [r["parallelism"] for r in rows]
    busiest = [100 * r["busiest_utilisation"] for r in rows]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.plot(ps, busiest, marker="o", markersize=3, color="tab:blue", label="busiest subtask (Flink's ranges)")
    ax.axhline(
        100 * advice["target_utilisation"],
        color="tab:red",
        linestyle="--",
        label=f"target {share(advice['target_utilisation'])}",
    )
    ax.axhline(100, color="grey", linewidth=0.8)
    by_p = dict(zip(ps, busiest))
    auto = advice["autoscaler"]["parallelism"]
    if auto in by_p:
        ax.plot(
            [auto],
            [by_p[auto]],
            marker="s",
            markersize=11,
            markerfacecolor="none",
            markeredgewidth=2,
            color="tab:orange",
            linestyle="none",
            label=f"Flink autoscaler's pick: {auto}",
        )
    rec = advice["recommended"]
    if rec in by_p:
        ax.plot(
            [rec],
            [by_p[rec]],
            marker="*",
            markersize=15,
            color="tab:green",
            linestyle="none",
            label=f"albic's pick: {rec}",
        )
    ax.set_xlabel("parallelism")
    ax.set_ylabel("busiest subtask utilisation (%)")
    title = f"operator {advice['operator']}: maximum parallelism {advice['max_parallelism']}"
    if rec is None:
        title += " (no parallelism meets the target)"
    ax.set_title(title)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper right")
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format=Path(path).suffix.lstrip(".") or "png", dpi=110)
    plt.close(fig)
    return atomic_write_bytes(path, buffer.getvalue())
