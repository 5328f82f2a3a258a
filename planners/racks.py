"""The rack rule for the planners tagged ``racks`` (milp, albic, flux), vectorised.

Key groups of one ``spread`` value (a Kafka partition's replicas, ``r`` of them) spread over the
nodes' racks as evenly as the active nodes allow: with ``b_j`` active nodes on rack ``j`` and ``m``
the least number with ``sum_j min(m, b_j) >= r``, each rack holds at most ``m`` of them and each
rack with active nodes at least ``min(b_j, m - 1)`` (so ``m = 1``, no two on one rack, whenever
there are at least as many racks as replicas). The validator checks the same rule on its own, in
plain Python (:func:`albic.core.checks.rack_problems`); this module is the planners' fast form of
it: per (spread code, rack) bounds ``lo <= count <= hi``, a check of a placement or of a few moves,
and the MILP rows.
"""

from __future__ import annotations

import numpy as np

from albic.core.model import Snapshot

__all__ = ["node_racks", "RackRule", "add_rack_rows"]


def node_racks(snapshot: Snapshot) -> np.ndarray | None:
    """Each node's rack as a code ``0 .. R-1`` (in node order), or None when no node has a rack."""
    racks = [n.rack for n in snapshot.nodes]
    if all(r is None for r in racks):
        return None
    codes: dict[str, int] = {}
    return np.array([codes.setdefault(r, len(codes)) for r in racks], dtype=np.int64)


class RackRule:
    """Bounds on the key groups of each spread code per rack.

    ``spread[k]`` is key group ``k``'s spread code (-1 for none), ``node_rack[i]`` node ``i``'s rack
    code, ``removing[i]`` whether node ``i`` is leaving (its rack counts for the bound ``m`` only
    through active nodes)."""

    def __init__(self, spread: np.ndarray, node_rack: np.ndarray, removing: np.ndarray) -> None:
        self.spread = np.asarray(spread, dtype=np.int64)
        self.node_rack = np.asarray(node_rack, dtype=np.int64)
        self.n_racks = int(self.node_rack.max()) + 1
        n_codes = int(self.spread.max(initial=-1)) + 1
        active = np.bincount(self.node_rack[~np.asarray(removing, dtype=bool)], minlength=self.n_racks)
        replicas = np.bincount(self.spread[self.spread >= 0], minlength=n_codes)
        top = max(int(replicas.max(initial=1)), 1)
        capacity = np.array([np.minimum(m, active).sum() for m in range(1, top + 1)])
        # m(r): the first m whose capacity reaches r (capped at r: never more than all of them).
        m_of = np.minimum(np.searchsorted(capacity, np.arange(1, top + 1)) + 1, np.arange(1, top + 1))
        self.hi = np.where(replicas > 0, m_of[np.maximum(replicas, 1) - 1], 0)
        self.lo = np.maximum(np.minimum(active[None, :], self.hi[:, None] - 1), 0)
        self.members = [np.flatnonzero(self.spread == c) for c in range(n_codes)]

    def counts(self, codes: np.ndarray, kg_node: np.ndarray) -> np.ndarray:
        """``[len(codes), racks]``: key groups of each code per rack, ``kg_node`` giving each key
        group's node."""
        out = np.zeros((len(codes), self.n_racks), dtype=np.int64)
        for row, c in enumerate(np.asarray(codes).tolist()):
            np.add.at(out[row], self.node_rack[kg_node[self.members[c]]], 1)
        return out

    def holds(self, kg_node: np.ndarray, codes: np.ndarray | None = None) -> bool:
        """Whether the placement ``kg_node`` (node index per key group) keeps the rule for
        ``codes`` (default: every spread code)."""
        codes = np.arange(len(self.members)) if codes is None else np.asarray(codes, dtype=np.int64)
        if codes.size == 0:
            return True
        counts = self.counts(codes, kg_node)
        return bool((counts <= self.hi[codes, None]).all() and (counts >= self.lo[codes]).all())


def add_rack_rows(
    model,
    x: np.ndarray,
    var_item: np.ndarray,
    var_node: np.ndarray,
    item_codes: list,
    fixed: np.ndarray,
    where: np.ndarray,
    rule: RackRule,
) -> None:
    """The rule as rows of a (sub)model over items: for each spread code ``c`` and rack ``j``,
    ``lo - fixed <= sum of x[t, i] over free items t holding c and nodes i on rack j <= hi - fixed``,
    where ``fixed`` counts the key groups of ``c`` that items outside the model keep on ``j``
    (``item_codes[t]``: the spread codes item ``t`` holds, one key group each)."""
    n_racks = rule.n_racks
    fixed_count: dict[int, int] = {}
    for t in np.asarray(fixed).tolist():
        for c in item_codes[t].tolist():
            key = c * n_racks + int(rule.node_rack[where[t]])
            fixed_count[key] = fixed_count.get(key, 0) + 1
    sizes = np.array([item_codes[t].size for t in var_item.tolist()], dtype=np.int64)
    var = np.repeat(np.arange(var_item.size), sizes)
    if var.size == 0:
        return
    codes = np.concatenate([item_codes[t] for t in var_item.tolist()]).astype(np.int64)
    keys = codes * n_racks + rule.node_rack[var_node[var]]
    order = np.argsort(keys, kind="stable")
    keys, var = keys[order], var[order]
    bounds = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1], True])
    for s, e in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        key = int(keys[s])
        c, j = divmod(key, n_racks)
        have = fixed_count.get(key, 0)
        lo, hi = int(rule.lo[c, j]) - have, int(rule.hi[c]) - have
        if lo > 0 or e - s > hi:
            model.add_row(x[var[s:e]], np.ones(e - s), lo=float(max(lo, 0)), hi=float(hi))
