"""Enorm's operator fusion and split/combine cost model (Nasir et al., sections 4.3-4.4, 5.1, 7.6).

Fusion (Algorithm 1) groups the operators of a topology into *components*: each operator in exactly
one component, and the operators of a component share at least one partition attribute
(``PA(C) = intersection of PA(O) != {}``). Three heuristics:

- ``score="comm"`` (the paper's Algorithm 1): repeatedly fuse the pair (operator i, downstream
  operator j) in different, compatible components with the highest output rate ``i -> j``; stop when
  no such pair has a rate above 0.
- ``score="pa"`` (the paper's "alternative scoring"): the same loop, scoring a pair by the
  *commonness* of the attributes the two components share. Reading: the commonness of an attribute
  is the number of current components whose partition attributes contain it, and a pair scores the
  sum over the shared attributes, so pairs sharing widespread attributes fuse first.
- :func:`baseline_fusion` (section 7.6): grow a component from the first operator by fusing the
  downstream operator (of any member) whose component shares the most attributes with it, until
  none can be fused; then start again from a random operator not yet fused. Reading: a restart may
  fuse into a component formed earlier (fusion works on components, and nothing in the paper's
  description forbids it). The stricter reading, where a restart only takes operators that were
  never fused, forms about 50% more components than COMM on the paper's random jobs. That would
  contradict the paper's Figure 14, where COMM forms the most. With this reading COMM forms the
  most, PA the fewest, and the baseline lies between them.

Ties go to the first pair in operator order then downstream order (the paper's strict ``>``).
Partition attributes are kept as bit masks, so an intersection is one ``&``.

The topology is an operator ``networkx.DiGraph`` (``Snapshot.operator_graph()``,
:func:`albic.core.model.operator_graph` of operators and rates, or one of your own): its node order
is the operator order, each node's successors (declared downstream operators first, then those it
only sends to) the downstream order, an edge's ``rate`` the tuples/s. networkx does the graph work:
the adjacency, the union-find of the components (``networkx.utils.UnionFind``) and the check that
the topology is acyclic, as the paper's DAG is (section 3: ``networkx.is_directed_acyclic_graph``,
a topological sort); ``networkx.find_cycle`` names the cycle of a topology that is not, and it is
refused. The fusion itself needs no topological order: its tie-break order is the operator order,
as in the paper's Algorithm 1. networkx costs time, not results (the components are those of the
hand-written adjacency lists and union-find it replaced, on every recorded job): per random job of
the paper's section 7, CPU time, COMM 0.31 -> 0.84 ms at 50 operators and 0.88 -> 2.45 ms at 150,
PA 6.1 -> 8.3 and 43 -> 57 ms, the baseline 0.44 -> 1.28 and 1.7 -> 5.2 ms.

The cost model of section 5.1.1 and the decision rule of 5.1.2 are :func:`split_cost`,
:func:`combine_cost` and :func:`decide_split_or_combine`, called with measured
:class:`ComponentStatistics`.

Example (the word-count job of the paper's example 1: both operators are partitioned on ``word``)
-----------------------------------------------------------------------------------------------
>>> from albic.core.model import Operator
>>> ops = [Operator("split", ("count",), ("line",)), Operator("count", ("letters",), ("word",)),
...        Operator("letters", (), ("word",))]
>>> fuse(ops, {("split", "count"): 10.0, ("count", "letters"): 4.0})
[['split'], ['count', 'letters']]

The same topology as a graph, and one with a cycle:

>>> from albic.core.model import operator_graph
>>> fuse(operator_graph(ops, {("split", "count"): 10.0, ("count", "letters"): 4.0}))
[['split'], ['count', 'letters']]
>>> import networkx as nx
>>> fuse(nx.DiGraph([("a", "b"), ("b", "c"), ("c", "a")]))
Traceback (most recent call last):
...
albic.base.errors.TopologyCycleError: the operator topology has a cycle, a -> b -> c -> a; Enorm fuses the operators of a directed acyclic topology (Nasir et al., section 3)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from albic.base.errors import InvalidParameterError, TopologyCycleError
from albic.core.model import Operator, Snapshot, operator_graph

if TYPE_CHECKING:  # pragma: no cover
    import networkx as nx

__all__ = [
    "fuse",
    "baseline_fusion",
    "FUSION_SCORES",
    "operator_rates",
    "inter_component_share",
    "random_job",
    "ComponentStatistics",
    "Cost",
    "split_cost",
    "combine_cost",
    "decide_split_or_combine",
]

FUSION_SCORES = ("comm", "pa", "baseline")

Rates = Mapping[tuple[str, str], float]


class _Topology:
    """An operator DiGraph by index: names, attribute bit masks, rates and successor lists."""

    def __init__(self, graph: nx.DiGraph) -> None:
        import networkx as nx

        if not (isinstance(graph, nx.DiGraph) and not graph.is_multigraph()):
            raise InvalidParameterError(
                f"Enorm's fusion takes a networkx.DiGraph of operators, got {type(graph).__name__}"
            )
        # networkx's topological sort says whether it is a DAG (0.25 ms at 150 operators and 550
        # edges, where find_cycle's edge walk takes 5 ms); find_cycle names the cycle when not
        if not nx.is_directed_acyclic_graph(graph):
            cycle = nx.find_cycle(graph)
            names = [str(u) for u, _ in cycle] + [str(cycle[-1][1])]
            raise TopologyCycleError(
                f"the operator topology has a cycle, {' -> '.join(names)}; Enorm fuses the operators "
                "of a directed acyclic topology (Nasir et al., section 3)",
                names,
            )
        self.names = list(graph)
        self.index = {name: i for i, name in enumerate(self.names)}
        bit: dict[str, int] = {}
        self.masks = []
        for name in self.names:
            mask = 0
            attributes = graph.nodes[name].get("partition_attributes") or ()
            if isinstance(attributes, str):
                raise InvalidParameterError(
                    f"operator {name!r}: partition_attributes = {attributes!r} "
                    "must be a list of attribute names, not one string"
                )
            for attribute in attributes:
                mask |= 1 << bit.setdefault(attribute, len(bit))
            self.masks.append(mask)
        self.attributes = list(bit)
        self.rate = {
            (self.index[u], self.index[v]): float(rate)
            for u, v, rate in graph.edges(data="rate", default=0.0)
        }
        for (i, j), rate in self.rate.items():
            if not rate >= 0:
                raise InvalidParameterError(
                    f"rate from {self.names[i]!r} to {self.names[j]!r} = {rate!r} must be >= 0"
                )
        # successors in insertion order: declared downstream operators, then those only sent to
        self.downstream = [[self.index[v] for v in graph.successors(name)] for name in self.names]


def _topology(operators: Sequence[Operator] | nx.DiGraph, rates: Rates | None) -> _Topology:
    """The topology of either input form of :func:`fuse`."""
    if hasattr(operators, "successors"):  # a networkx graph: its edges carry the rates
        if rates is not None:
            raise InvalidParameterError(
                "rates come from the graph's edges ('rate'); pass rates=None with a graph"
            )
        return _Topology(operators)
    return _Topology(operator_graph(operators, rates))


class _Components:
    """Operators united into components by networkx's union-find (``of[i]``: the root of operator
    ``i``'s component), each with its members (sorted) and the intersection of their attribute
    masks, kept by root."""

    def __init__(self, masks: list[int]) -> None:
        from networkx.utils import UnionFind

        self.of = UnionFind(range(len(masks)))
        self.members = {i: [i] for i in range(len(masks))}
        self.mask = dict(enumerate(masks))

    def merge(self, a: int, b: int) -> None:
        ra, rb = self.of[a], self.of[b]
        self.of.union(ra, rb)
        keep = self.of[ra]
        gone = rb if keep == ra else ra
        self.members[keep] = sorted(self.members[keep] + self.members.pop(gone))
        self.mask[keep] &= self.mask.pop(gone)

    def groups(self, names: list[str]) -> list[list[str]]:
        """The components in operator order, each in operator order."""
        return [[names[m] for m in members] for members in sorted(self.members.values())]


def fuse(
    operators: Sequence[Operator] | nx.DiGraph, rates: Rates | None = None, *, score: str = "comm"
) -> list[list[str]]:
    """Enorm's Algorithm 1: components (lists of operator names, in operator order).

    ``operators`` is a list of :class:`Operator` with ``rates[(i, j)]``, the tuples/s operator
    ``i`` sends to operator ``j`` (:func:`albic.core.model.operator_graph` makes the graph of
    them), or an operator ``networkx.DiGraph`` itself (``Snapshot.operator_graph()``, or your own:
    nodes with ``partition_attributes``, edges with ``rate``, 0 when missing). The downstream
    operators of ``i`` are its successors: its ``Operator.downstream``, then every ``j`` it sends
    to. ``score`` is ``"comm"`` or ``"pa"`` (module docstring). A topology with a cycle is refused
    (:class:`~albic.base.errors.TopologyCycleError`, naming the cycle networkx finds).
    """
    if score not in ("comm", "pa"):
        raise InvalidParameterError(f"score = {score!r} must be 'comm' or 'pa' (or use baseline_fusion)")
    topo = _topology(operators, rates)
    comps = _Components(topo.masks)
    if score == "comm":
        return _fuse_by_rate(topo, comps)
    n_bits = len(topo.attributes)
    # Commonness of each attribute over the current components, updated at every fusion.
    commonness = [sum(1 for mask in comps.mask.values() if mask >> b & 1) for b in range(n_bits)]
    while True:
        score_of: dict[int, float] = {}  # score of a shared-attribute mask, this round
        best, pair = 0.0, None
        for i in range(len(topo.names)):
            src = comps.of[i]
            for j in topo.downstream[i]:
                dst = comps.of[j]
                if src == dst:
                    continue
                shared = comps.mask[src] & comps.mask[dst]
                if not shared:
                    continue
                value = score_of.get(shared)
                if value is None:
                    value = score_of[shared] = float(
                        sum(commonness[b] for b in range(shared.bit_length()) if shared >> b & 1)
                    )
                if value > best:
                    best, pair = value, (i, j)
        if pair is None:
            return comps.groups(topo.names)
        a, b = comps.mask[comps.of[pair[0]]], comps.mask[comps.of[pair[1]]]
        for bit in range(n_bits):
            commonness[bit] += (((a & b) >> bit) & 1) - ((a >> bit) & 1) - ((b >> bit) & 1)
        comps.merge(*pair)


def _fuse_by_rate(topo: _Topology, comps: _Components) -> list[list[str]]:
    """Algorithm 1 with the COMM score in one pass over the edges by decreasing rate.

    Equivalent to rescanning for the best pair after every fusion: a component's attributes only
    shrink as it grows, so a pair that is incompatible (or inside one component) stays so, and the
    best remaining pair is always the next compatible edge in this order. The stable sort keeps the
    scan's tie-break (operator order, then downstream order).
    """
    edges = [
        (i, j) for i in range(len(topo.names)) for j in topo.downstream[i] if topo.rate.get((i, j), 0.0) > 0
    ]
    edges.sort(key=lambda e: -topo.rate[e])
    for i, j in edges:
        src, dst = comps.of[i], comps.of[j]
        if src != dst and comps.mask[src] & comps.mask[dst]:
            comps.merge(i, j)
    return comps.groups(topo.names)


def baseline_fusion(
    operators: Sequence[Operator] | nx.DiGraph, rates: Rates | None = None, *, seed: int = 0
) -> list[list[str]]:
    """The baseline of section 7.6 (module docstring) on either input of :func:`fuse`; random
    restarts drawn from ``seed``."""
    topo = _topology(operators, rates)
    rng = np.random.default_rng(seed)
    comps = _Components(topo.masks)
    placed = [False] * len(topo.names)
    seed_op = 0 if topo.names else None
    while seed_op is not None:
        placed[seed_op] = True
        while True:
            home = comps.of[seed_op]
            best, choice = 0, None
            for i in comps.members[home]:
                for j in topo.downstream[i]:
                    if comps.of[j] == home:
                        continue
                    # a retry may join a component formed earlier: fusing works on components
                    overlap = (comps.mask[home] & comps.mask[comps.of[j]]).bit_count()
                    if overlap > best:
                        best, choice = overlap, j
            if choice is None:
                break
            for member in comps.members[comps.of[choice]]:
                placed[member] = True
            comps.merge(seed_op, choice)
        free = [i for i, p in enumerate(placed) if not p]
        seed_op = int(free[rng.integers(len(free))]) if free else None
    return comps.groups(topo.names)


def operator_rates(snapshot: Snapshot) -> dict[tuple[str, str], float]:
    """Tuples/s between operators: the snapshot's key-group traffic summed per operator pair
    (traffic inside one operator left out)."""
    operator_of = {kg.id: kg.operator for kg in snapshot.key_groups}
    out: dict[tuple[str, str], float] = {}
    for t in snapshot.traffic:
        pair = (operator_of[t.src], operator_of[t.dst])
        if pair[0] != pair[1]:
            out[pair] = out.get(pair, 0.0) + t.rate
    return out


def inter_component_share(components: Sequence[Sequence[str]], rates: Rates) -> float:
    """Share (0..1) of the inter-operator traffic that crosses components (0 without traffic).

    >>> inter_component_share([["a", "b"], ["c"]], {("a", "b"): 3.0, ("b", "c"): 1.0})
    0.25
    """
    component = {name: c for c, members in enumerate(components) for name in members}
    total = sum(rates.values())
    crossing = sum(r for (s, d), r in rates.items() if component[s] != component[d])
    return crossing / total if total > 0 else 0.0


def random_job(
    rng: np.random.Generator, n_operators: int, n_attributes: int = 30, output_rate: float = 1000.0
) -> tuple[list[Operator], dict[tuple[str, str], float]]:
    """A random job as in the paper's section 7 ("Large Job").

    Partition attributes: the first operator gets a random subset of half the attributes; the
    subset size then changes by a random step in -2..2 for each new operator (kept within
    1..``n_attributes``; the step range is this reading's choice), the subset itself is drawn at
    random. Levels: their number is random in ``[3, 0.75 n]``, the operators are cut into that many
    consecutive non-empty levels at random points. Each operator sends to every operator of the next
    level: starting from ``X = output_rate``, the next operator gets ``Y = U(0, X) * U(0, 1)`` and
    ``X -= Y``.
    """
    if n_operators < 3:
        raise InvalidParameterError(f"n_operators = {n_operators} must be >= 3 (three levels at least)")
    names = [f"op{i}" for i in range(n_operators)]
    attributes = [f"a{b}" for b in range(n_attributes)]
    size = n_attributes // 2
    pas = []
    for _ in names:
        pas.append(tuple(sorted(rng.choice(attributes, size=size, replace=False).tolist())))
        size = int(np.clip(size + rng.integers(-2, 3), 1, n_attributes))
    levels = int(rng.integers(3, max(3, int(0.75 * n_operators)) + 1))
    cuts = np.sort(rng.choice(np.arange(1, n_operators), size=levels - 1, replace=False))
    groups = np.split(np.arange(n_operators), cuts)
    rates: dict[tuple[str, str], float] = {}
    for upper, lower in zip(groups, groups[1:]):
        for i in upper.tolist():
            remaining = output_rate
            for j in lower.tolist():
                y = rng.uniform(0, remaining) * rng.uniform(0, 1)
                remaining -= y
                if y > 0:
                    rates[(names[i], names[j])] = float(y)
    downstream = {name: [] for name in names}
    for upper, lower in zip(groups, groups[1:]):
        for i in upper.tolist():
            downstream[names[i]] = [names[j] for j in lower.tolist()]
    operators = [Operator(name, tuple(downstream[name]), pa) for name, pa in zip(names, pas)]
    return operators, rates


# -- split / combine (section 5.1) ----------------------------------------------------------------


@dataclass(frozen=True)
class ComponentStatistics:
    """What section 5.1.1 measures of a component over one period ``p`` (its longest window).

    ``tuples`` ``T_p``; ``cost_per_tuple`` ``E`` (CPU to run the user logic once); ``windows`` ``W``
    overlapping windows; ``partial_windows`` ``PW_p``; ``migrated_key_groups`` ``MK_p`` (for load
    balance, within p); ``state_cost`` ``K_1`` (cost of moving one copy of a key group's state);
    ``key_groups`` the number of key groups; ``migration_latency`` ``L`` (of one key group with
    state).
    """

    tuples: float
    cost_per_tuple: float
    windows: int
    partial_windows: float
    migrated_key_groups: float
    state_cost: float
    key_groups: int
    migration_latency: float

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
                raise InvalidParameterError(f"ComponentStatistics.{name} = {value!r} must be a number >= 0")


@dataclass(frozen=True)
class Cost:
    """CPU cost over one period and the latency added by load-balancing migrations."""

    cpu: float
    latency: float


def split_cost(s: ComponentStatistics) -> Cost:
    """Split: ``T_p E + PW_p K_1 #keygroups + MK_p K_1`` CPU; latency negligible (0).

    >>> split_cost(ComponentStatistics(1000, 1.0, 4, 10, 5, 2.0, 8, 0.5))
    Cost(cpu=1170.0, latency=0.0)
    """
    cpu = (
        s.tuples * s.cost_per_tuple
        + s.partial_windows * s.state_cost * s.key_groups
        + s.migrated_key_groups * s.state_cost
    )
    return Cost(float(cpu), 0.0)


def combine_cost(s: ComponentStatistics) -> Cost:
    """Combine: ``T_p W E + MK_p K_1 PW_p`` CPU; latency ``MK_p L``.

    >>> combine_cost(ComponentStatistics(1000, 1.0, 4, 10, 5, 2.0, 8, 0.5))
    Cost(cpu=4100.0, latency=2.5)
    """
    cpu = s.tuples * s.windows * s.cost_per_tuple + s.migrated_key_groups * s.state_cost * s.partial_windows
    return Cost(float(cpu), float(s.migrated_key_groups * s.migration_latency))


def decide_split_or_combine(s: ComponentStatistics, max_latency: float, current: str = "split") -> str:
    """Section 5.1.2: the action with the least CPU cost among those whose migration latency is
    within ``max_latency``; on a tie, keep ``current`` ("split" or "combine"). Split's latency is
    negligible, so it is always admissible.

    >>> stats = ComponentStatistics(1000, 1.0, 4, 10, 5, 2.0, 8, 0.5)
    >>> decide_split_or_combine(stats, max_latency=1.0)          # split: 1170 < 4100
    'split'
    >>> one_window = ComponentStatistics(1000, 1.0, 1, 10, 5, 2.0, 8, 0.5)
    >>> decide_split_or_combine(one_window, max_latency=3.0)     # combine: 1100 < 1170, 2.5 <= 3
    'combine'
    >>> decide_split_or_combine(one_window, max_latency=2.0)     # combine's 2.5 s is too slow
    'split'
    """
    if current not in ("split", "combine"):
        raise InvalidParameterError(f"current = {current!r} must be 'split' or 'combine'")
    if not max_latency >= 0:
        raise InvalidParameterError(f"max_latency = {max_latency!r} must be >= 0")
    split, combine = split_cost(s), combine_cost(s)
    if combine.latency > max_latency:
        return "split"
    if combine.cpu == split.cpu:
        return current
    return "combine" if combine.cpu < split.cpu else "split"
