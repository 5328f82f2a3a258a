"""A plan in Flink's form: each node's contiguous key-group range.

:func:`flink_ranges` turns a plan into each node's contiguous key-group range, the form Flink can
take (``albic export flink PLAN.json``), and refuses a plan that is not contiguous per node. The
key-group arithmetic itself is :mod:`albic.core.flink_keys`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from typing import Any

from albic.base.errors import InvalidParameterError, NotContiguousError

__all__ = ["flink_ranges", "split_key_group_id"]


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


def flink_ranges(
    assignment: Mapping[str, str], key_groups: Iterable[tuple[str, str, int]] | None = None
) -> dict[str, list[dict[str, Any]]]:
    """Each operator's nodes with their contiguous key-group ranges, in key-group order.

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
    problems = []
    for operator, seen in numbers.items():
        if sorted(seen) != list(range(len(seen))):
            missing = sorted(set(range(max(seen) + 1)) - set(seen))
            twice = sorted(g for g in set(seen) if seen.count(g) > 1)
            problems.append(
                f"operator {operator!r}: key groups must be 0 .. {len(seen) - 1} once each"
                + (f"; missing {_runs_text(_runs(missing))}" if missing else "")
                + (f"; repeated {twice}" if twice else "")
            )
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
