"""ALBIC's union-find of collocated pairs (:func:`albic.planners.collocation.merge_pairs`, hand-written)
against networkx: ``networkx.utils.UnionFind`` and ``networkx.connected_components`` of a Graph,
with scipy's ``csgraph.connected_components`` for reference. The same pairs, the same sets (checked),
least CPU time of ``repeat`` runs (single-threaded, so the CPU time is not inflated by a shared
machine's queue). Pairs are ``(k, j, rate)`` between random key groups, as step 1 of Algorithm 2
makes them; the first rows are the paper's sizes.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from albic.planners.collocation import merge_pairs
from benchmarks.timing import min_cpu_seconds

SIZES = [(400, 100), (2400, 600), (20_000, 5_000), (100_000, 20_000), (100_000, 100_000)]


def nx_union_find(n: int, pairs) -> list[np.ndarray]:
    from networkx.utils import UnionFind

    uf = UnionFind()
    for k, j, *_ in pairs:
        uf.union(k, j)
    return [np.array(g) for g in sorted(sorted(s) for s in uf.to_sets()) if len(g) > 1]


def nx_components(n: int, pairs) -> list[np.ndarray]:
    import networkx as nx

    graph = nx.Graph()
    graph.add_edges_from((k, j) for k, j, *_ in pairs)
    return [np.array(g) for g in sorted(sorted(c) for c in nx.connected_components(graph)) if len(g) > 1]


def scipy_components(n: int, pairs) -> list[np.ndarray]:
    import scipy.sparse
    import scipy.sparse.csgraph

    ends = np.array([(k, j) for k, j, *_ in pairs], dtype=np.int64).reshape(-1, 2)
    matrix = scipy.sparse.coo_array((np.ones(len(ends)), (ends[:, 0], ends[:, 1])), shape=(n, n))
    _, labels = scipy.sparse.csgraph.connected_components(matrix, directed=False)
    groups: dict[int, list[int]] = {}
    for v in np.unique(ends).tolist():
        groups.setdefault(int(labels[v]), []).append(v)
    return [np.array(g) for g in sorted(groups.values()) if len(g) > 1]


def run(repeat: int = 5, seed: int = 0) -> str:
    rng = np.random.default_rng(seed)
    rows = []
    for n, m in SIZES:
        k = rng.integers(0, n, m)
        j = (k + 1 + rng.integers(0, n - 1, m)) % n  # never k itself
        pairs = list(zip(k.tolist(), j.tolist(), rng.random(m).tolist()))
        want = merge_pairs(n, pairs)
        row = {"key groups": n, "pairs": m}
        for name, fn in (
            ("hand-written ms", merge_pairs),
            ("nx.UnionFind ms", nx_union_find),
            ("nx.components ms", nx_components),
            ("scipy csgraph ms", scipy_components),
        ):
            seconds, got = min_cpu_seconds(lambda fn=fn: fn(n, pairs), repeat)
            assert len(got) == len(want) and all(np.array_equal(a, b) for a, b in zip(got, want)), name
            row[name] = 1e3 * seconds
        row["nx.UnionFind / hand"] = row["nx.UnionFind ms"] / row["hand-written ms"]
        rows.append(row)
    return pd.DataFrame(rows).round(3).to_string(index=False)
