"""The shared model every planner works on (design section 3, a *contract*).

A :class:`Snapshot` is one statistics period: the nodes, the key groups with their load and state
size, where each key group is now (``assignment``), and the traffic between key groups. Scaling is
expressed in the snapshot itself: a new node is a node with no key groups, a node to remove has
``removing=True``. A planner turns a snapshot into a :class:`Plan`.

Example
-------
>>> from albic.core.model import Node, KeyGroup, Snapshot
>>> snap = Snapshot(
...     nodes=[Node("n1"), Node("n2")],
...     key_groups=[KeyGroup("a", "count", load=3.0, state_size=100),
...                 KeyGroup("b", "count", load=1.0, state_size=50)],
...     assignment={"a": "n1", "b": "n1"},
... )
>>> snap.validate().arrays().loads
array([3., 1.])

The dataclasses are frozen and only normalise numbers (numpy scalars and ints become ``float``) at
construction; every rule is checked in one place, :meth:`Snapshot.validate`, which collects all
problems and raises one :class:`~albic.base.errors.InvalidSnapshotError` naming each object, value and
rule. Planners call it before they plan, so an invalid snapshot never reaches a solver.

The range of numbers
--------------------
Amounts (``load``, ``state_size``, traffic ``rate``, ``resources``, ``arrival_rate``,
``service_rate``) are finite and at most :data:`MAX_AMOUNT` (10^15: a petabyte of state, a
petabyte per second of load), a ``service_rate`` at least :data:`MIN_SERVICE_RATE`;
``capacity`` lies in :data:`CAPACITY_RANGE` (10^-6 .. 10^6: it is relative, only ratios matter); ``cores`` is at most :data:`MAX_CORES` and ``index`` at most
:data:`MAX_INDEX`. Within these bounds every sum, mean and utilisation a planner forms over up to
10^9 key groups stays below 10^36, far from float overflow, so a valid snapshot never overflows
later: a value outside them is an input error here, with the object, the value and the rule.
"""

from __future__ import annotations

import enum
import hashlib
import math
import numbers
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields
from operator import attrgetter
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np

from albic.base.errors import InvalidParameterError, InvalidSnapshotError, shown
from albic.base.formats import count

if TYPE_CHECKING:  # pragma: no cover
    import networkx as nx
    import scipy.sparse

__all__ = [
    "Node",
    "KeyGroup",
    "Traffic",
    "Operator",
    "Snapshot",
    "SnapshotArrays",
    "operator_graph",
    "Move",
    "PlanStatus",
    "NO_PLAN_STATUSES",
    "MAX_AMOUNT",
    "CAPACITY_RANGE",
    "MAX_CORES",
    "MAX_INDEX",
    "MIN_SERVICE_RATE",
    "KEY_HASHES",
    "MAX_PARALLELISM",
]

#: The largest load, state size, rate or resource amount a snapshot may hold (see the module).
MAX_AMOUNT = 1e15
#: The smallest service rate (queueing models divide by it).
MIN_SERVICE_RATE = 1e-9
#: The smallest and largest node capacity (capacities are relative: only their ratios matter).
CAPACITY_RANGE = (1e-6, 1e6)
#: The most cores a node may declare (Elasticutor hands them out one at a time).
MAX_CORES = 1_000_000
#: The largest key-group ``index`` (exact in a float and in int64 arithmetic).
MAX_INDEX = 2**53
#: The key -> key group hashes an ``Operator.key_hash`` may name (albic.core.hashing.METHODS).
KEY_HASHES = ("blake2b", "flink")
#: Flink's largest maximum parallelism (``KeyGroupRangeAssignment.UPPER_BOUND_MAX_PARALLELISM``).
MAX_PARALLELISM = 1 << 15


def _as_float(value: Any) -> Any:
    """A real number (numpy scalars included) as a Python float; anything else unchanged.

    Only normalises: values that are not numbers, and integers too large for a float, are left
    unchanged for :meth:`Snapshot.validate` to report.
    """
    if isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_)):
        try:
            return float(value)
        except OverflowError:  # an int beyond 1.8e308: out of range, reported by validate()
            return value
    return value


def _as_optional_float(value: Any) -> Any:
    return None if value is None else _as_float(value)


def _as_int(value: Any) -> Any:
    if isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_)):
        return int(value)
    return value


def _as_bool(value: Any) -> Any:
    return bool(value) if isinstance(value, np.bool_) else value


@dataclass(frozen=True)
class Node:
    """A processing node.

    ``capacity`` is relative processing capacity (heterogeneous clusters: a node of capacity 2 should
    carry twice the load of a node of capacity 1). ``removing`` marks a node the scaling decision wants
    gone (ALBIC's set B): it may keep key groups this period, but planners move them off as the budget
    allows and never move key groups onto it. ``rack`` (e.g. a Kafka broker's ``broker.rack``)
    spreads key groups of one ``spread`` value over racks (:func:`rack_limits`); every node has a
    rack or none does.
    """

    id: str
    capacity: float = 1.0
    removing: bool = False
    cores: int = 1
    host: str | None = None
    rack: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "capacity", _as_float(self.capacity))
        object.__setattr__(self, "removing", _as_bool(self.removing))
        object.__setattr__(self, "cores", _as_int(self.cores))


@dataclass(frozen=True)
class KeyGroup:
    """A key group of an operator: the unit that planners place and migrate.

    ``load`` is the bottleneck-resource load over the period, ``state_size`` the bytes that move with
    the key group, ``index`` its position in the operator's key order (interval planners),
    ``resources`` other per-node-constrained loads (e.g. memory), and the rates feed queueing models.
    ``spread`` (a string or an int, or None): key groups with the same spread value must sit on
    distinct nodes, e.g. the replicas of one Kafka partition (``albic.rollout.kafka``).
    ``load_error`` (or None: not known) is the standard error of ``load``, in its unit: how much
    of a measured load may be noise. ``albic stats`` counts events, so a load from ``n`` events
    has a relative error of ``1 / sqrt(n)`` (Poisson; :func:`albic.io.read_snapshots`), and
    forecasts carry theirs (:mod:`albic.evaluation.forecast`).
    """

    id: str
    operator: str
    load: float
    state_size: float = 0.0
    index: int | None = None
    resources: Mapping[str, float] = field(default_factory=dict, hash=False)
    arrival_rate: float | None = None
    service_rate: float | None = None
    spread: str | int | None = None
    load_error: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "spread", _as_int(self.spread))
        object.__setattr__(self, "load_error", _as_optional_float(self.load_error))
        object.__setattr__(self, "load", _as_float(self.load))
        object.__setattr__(self, "state_size", _as_float(self.state_size))
        object.__setattr__(self, "index", None if self.index is None else _as_int(self.index))
        if isinstance(self.resources, Mapping):
            object.__setattr__(self, "resources", {k: _as_float(v) for k, v in self.resources.items()})
        object.__setattr__(self, "arrival_rate", _as_optional_float(self.arrival_rate))
        object.__setattr__(self, "service_rate", _as_optional_float(self.service_rate))


@dataclass(frozen=True)
class Traffic:
    """``rate`` tuples per second sent from key group ``src`` to key group ``dst`` downstream."""

    src: str
    dst: str
    rate: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "rate", _as_float(self.rate))


@dataclass(frozen=True)
class Operator:
    """An operator of the topology, for topology-level planners (Enorm).

    ``key_hash`` is the hash its keys were sent to key groups with (:data:`KEY_HASHES`: albic's
    ``"blake2b"`` or Flink's ``"flink"``), None when unknown; ``max_parallelism`` is the Flink
    maximum parallelism its key groups were made for, when the statistics' spec set it
    (``max_parallelism = N``; the key groups are then ``0 .. N-1``). ``albic stats`` writes both
    into its manifest, :func:`albic.io.read_snapshots` puts them here, and a snapshot file keeps
    them: this is how a snapshot knows whether its key groups are Flink's own.
    """

    name: str
    downstream: tuple[str, ...] = ()
    partition_attributes: tuple[str, ...] = ()
    key_hash: str | None = None
    max_parallelism: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.downstream, str):
            object.__setattr__(self, "downstream", tuple(self.downstream))
        if not isinstance(self.partition_attributes, str):
            object.__setattr__(self, "partition_attributes", tuple(self.partition_attributes))


@dataclass(frozen=True, eq=False)
class SnapshotArrays:
    """Read-only numpy views of a snapshot, in the order of ``snapshot.nodes`` / ``key_groups``.

    ``current[k]`` is the index of the node key group ``k`` is on now; ``active`` is ``~removing``;
    ``indices[k]`` is key group ``k``'s ``index`` (-1 where it has none); ``traffic`` is an
    ``n_key_groups x n_key_groups`` CSR array of rates (parallel edges summed); ``spread[k]`` is a
    code ``0 .. n-1`` of key group ``k``'s ``spread`` value (equal values, equal codes; -1 where it
    has none).
    """

    node_ids: tuple[str, ...]
    key_group_ids: tuple[str, ...]
    node_index: Mapping[str, int]
    key_group_index: Mapping[str, int]
    loads: np.ndarray
    state_sizes: np.ndarray
    capacities: np.ndarray
    current: np.ndarray
    removing: np.ndarray
    active: np.ndarray
    indices: np.ndarray
    operator_names: tuple[str, ...]
    operator_of: np.ndarray
    traffic: scipy.sparse.csr_array
    spread: np.ndarray

    def assignment(self, node_of: np.ndarray) -> dict[str, str]:
        """``{key group id: node id}`` from node indices in key-group order (plain ``str`` ids)."""
        return dict(zip(self.key_group_ids, (self.node_ids[i] for i in node_of.tolist())))

    def node_loads(self, node_of: np.ndarray) -> np.ndarray:
        """Total load per node when key group ``k`` sits on node ``node_of[k]``."""
        return np.bincount(node_of, weights=self.loads, minlength=len(self.node_ids))


def _readonly(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


@dataclass(frozen=True)
class Snapshot:
    """One statistics period: nodes, key groups, their current placement and their traffic.

    ``assignment`` maps every key group id to the id of the node holding it now. It is stored as a
    read-only mapping so that a planner cannot change the caller's snapshot by accident.

    ``covered_seconds`` marks a *partial* period, the first or last of a trace that its events
    cover only in part (:func:`albic.stats.periods.partial_periods`): the seconds they cover, over
    which its rates are; ``None`` (the default) is a whole period.

    >>> Snapshot([Node("a")], [KeyGroup("x", "op", 1.0)], {"x": "a"}, covered_seconds=900.0).partial
    True
    """

    nodes: tuple[Node, ...]
    key_groups: tuple[KeyGroup, ...]
    assignment: Mapping[str, str]
    traffic: tuple[Traffic, ...] = ()
    operators: tuple[Operator, ...] = ()
    period: str | int | None = None
    covered_seconds: float | None = None

    __hash__ = None  # type: ignore[assignment]  # holds a mapping; snapshots are compared, not hashed

    def __post_init__(self) -> None:
        for name in ("nodes", "key_groups", "traffic", "operators"):
            value = getattr(self, name)
            if isinstance(value, (str, bytes, Mapping)) or not hasattr(value, "__iter__"):
                raise InvalidSnapshotError(f"'{name}' must be a sequence, got {type(value).__name__}")
            object.__setattr__(self, name, tuple(value))
        if not isinstance(self.assignment, Mapping):
            raise InvalidSnapshotError(
                "'assignment' must be a mapping from key group id to node id, "
                f"got {type(self.assignment).__name__}"
            )
        object.__setattr__(self, "assignment", MappingProxyType(dict(self.assignment)))

    # Pickling (Spark ships snapshots to executors) and deepcopy: a mappingproxy cannot be pickled,
    # and the cached arrays are cheaper to rebuild than to ship.
    def __getstate__(self) -> dict[str, Any]:
        state = {f.name: getattr(self, f.name) for f in fields(self)}
        state["assignment"] = dict(self.assignment)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            object.__setattr__(self, name, value)
        object.__setattr__(self, "assignment", MappingProxyType(dict(state["assignment"])))

    # -- validation -------------------------------------------------------------------------------

    def problems(self) -> list[str]:
        """Every rule this snapshot breaks, one message each (empty when valid)."""
        return list(_snapshot_problems(self))

    def validate(self) -> Snapshot:
        """Check every rule of the model; return ``self`` or raise one ``InvalidSnapshotError``.

        The error's ``problems`` list names each offending object, its value and the rule.
        """
        if self.__dict__.get("_valid"):
            return self
        if _quickly_valid(self):
            self.__dict__["_valid"] = True
            return self
        problems = self.problems()
        if problems:
            subject = None if self.period is None else f"(period {self.period!r})"
            raise InvalidSnapshotError(problems, subject=subject)
        self.__dict__["_valid"] = True
        return self

    def digest(self) -> str:
        """A fingerprint of everything the snapshot holds (``"sha256:"`` and 64 hex digits): what a
        plan records of the snapshot it was made for, so that a command given a plan and another
        snapshot -- another period, another node-count rule, an edited file -- refuses it.

        The model keeps numbers as Python ``float``/``int``, so the fields' ``repr`` is exact and
        the same after a JSON round trip; the placement is taken in key-group-id order, so the
        order a mapping was built in does not count. Computed once per snapshot.

        >>> a = Snapshot([Node("n")], [KeyGroup("x", "op", 1.0)], {"x": "n"}, period="h0")
        >>> b = Snapshot([Node("n")], [KeyGroup("x", "op", 1.5)], {"x": "n"}, period="h0")
        >>> a.digest() == Snapshot(a.nodes, a.key_groups, {"x": "n"}, period="h0").digest(), a.digest() == b.digest()
        (True, False)
        """
        cached = self.__dict__.get("_digest")
        if cached is None:
            content = hashlib.sha256()
            for f in fields(self):
                value = getattr(self, f.name)
                if isinstance(value, Mapping):
                    value = sorted(value.items())
                content.update(f"{f.name}={value!r};".encode())
            cached = self.__dict__["_digest"] = f"sha256:{content.hexdigest()}"
        return cached

    # -- derived views ----------------------------------------------------------------------------

    def arrays(self) -> SnapshotArrays:
        """Cached read-only numpy views of this snapshot (validates it first)."""
        cached = self.__dict__.get("_arrays")
        if cached is None:
            self.validate()
            cached = _build_arrays(self)
            self.__dict__["_arrays"] = cached
        return cached

    @property
    def partial(self) -> bool:
        """Whether the events cover only part of this period (``covered_seconds`` is set)."""
        return self.covered_seconds is not None

    @property
    def active_nodes(self) -> tuple[Node, ...]:
        """The nodes that are not removing, in snapshot order."""
        return tuple(n for n in self.nodes if not n.removing)

    def with_assignment(self, assignment: Mapping[str, str]) -> Snapshot:
        """The same period with key groups placed by ``assignment`` (e.g. after applying a plan)."""
        return Snapshot(
            nodes=self.nodes,
            key_groups=self.key_groups,
            assignment=assignment,
            traffic=self.traffic,
            operators=self.operators,
            period=self.period,
            covered_seconds=self.covered_seconds,
        )

    def with_placement(self, placement: Mapping[str, str]) -> Snapshot:
        """The same period with key groups where ``placement`` puts them, on this snapshot's nodes
        plus, marked ``removing``, every node ``placement`` uses that the snapshot does not want:
        a key group on a node that is going away is one a planner moves off. A key group that
        ``placement`` does not place stays where this snapshot has it.

        >>> snap = Snapshot([Node("a")], [KeyGroup("x", "op", 1.0)], {"x": "a"})
        >>> [(n.id, n.removing) for n in snap.with_placement({"x": "b"}).nodes]
        [('a', False), ('b', True)]
        """
        wanted = {node.id for node in self.nodes}
        placed = {kg.id: placement.get(kg.id, self.assignment[kg.id]) for kg in self.key_groups}
        leaving = [
            Node(node_id, removing=True)
            for node_id in dict.fromkeys(placed.values())
            if node_id not in wanted
        ]
        return Snapshot(
            nodes=[*self.nodes, *leaving],
            key_groups=self.key_groups,
            assignment=placed,
            traffic=self.traffic,
            operators=self.operators,
            period=self.period,
            covered_seconds=self.covered_seconds,
        )

    # -- graphs (networkx) ------------------------------------------------------------------------

    def traffic_graph(self) -> nx.DiGraph:
        """The key groups and their traffic as a ``networkx.DiGraph`` (validates first).

        A graph node per key group, in key-group order, with the attributes ``operator``, ``load``,
        ``state_size``, ``node`` (the node holding it now), ``index``, ``resources``,
        ``arrival_rate``, ``service_rate``, ``spread`` and ``load_error``; an edge per ``(src, dst)`` pair with its
        ``rate`` (parallel traffic records summed, as :meth:`arrays` does). ``graph.graph`` holds
        the cluster, ``nodes`` (``{node id: {"capacity", "removing", "cores", "host"}}`` in snapshot
        order), and the ``period``: plain data, so ``networkx.node_link_data`` makes it JSON.
        :meth:`from_graphs` turns it back into this snapshot.
        """
        import networkx as nx

        self.validate()
        cluster = {
            n.id: {"capacity": n.capacity, "removing": n.removing, "cores": n.cores, "host": n.host}
            for n in self.nodes
        }
        graph = nx.DiGraph(nodes=cluster, period=self.period)
        for kg in self.key_groups:
            graph.add_node(
                kg.id,
                operator=kg.operator,
                load=kg.load,
                state_size=kg.state_size,
                node=self.assignment[kg.id],
                index=kg.index,
                resources=dict(kg.resources),
                arrival_rate=kg.arrival_rate,
                service_rate=kg.service_rate,
                spread=kg.spread,
                load_error=kg.load_error,
            )
        for t in self.traffic:
            edge = graph.get_edge_data(t.src, t.dst)
            if edge is None:
                graph.add_edge(t.src, t.dst, rate=t.rate)
            else:
                edge["rate"] += t.rate
        return graph

    def operator_graph(self) -> nx.DiGraph:
        """The operator topology as a ``networkx.DiGraph`` (validates first): :func:`operator_graph`
        of the declared ``operators`` and the traffic summed per operator pair (traffic within one
        operator left out). Without declared operators, the graph nodes are the operators the key
        groups name, in order, with no partition attributes and ``declared=False``. Enorm's fusion
        works on it (:func:`albic.planners.enorm.fuse`)."""
        self.validate()
        operators = self.operators or tuple(
            Operator(name) for name in dict.fromkeys(kg.operator for kg in self.key_groups)
        )
        operator_of = {kg.id: kg.operator for kg in self.key_groups}
        rates: dict[tuple[str, str], float] = {}
        for t in self.traffic:
            pair = (operator_of[t.src], operator_of[t.dst])
            if pair[0] != pair[1]:
                rates[pair] = rates.get(pair, 0.0) + t.rate
        graph = operator_graph(operators, rates)
        if not self.operators:
            for name in graph:
                graph.nodes[name]["declared"] = False
        return graph

    @classmethod
    def from_graphs(cls, traffic: nx.DiGraph, operators: nx.DiGraph | None = None) -> Snapshot:
        """The snapshot of a traffic graph (and an operator graph), as :meth:`traffic_graph` and
        :meth:`operator_graph` make them; validated, so every problem is named at once.

        From ``traffic``: a key group per graph node (``operator``, ``load`` and ``node`` required;
        ``state_size``, ``index``, ``resources``, ``arrival_rate``, ``service_rate``, ``spread``,
        ``load_error`` optional), a :class:`Traffic` per edge (``rate``), the cluster from ``graph["nodes"]`` (else
        a node of capacity 1 per ``node`` value, in order of appearance) and ``graph["period"]``.
        From ``operators``: an :class:`Operator` per graph node not marked ``declared=False``, with
        its ``partition_attributes`` and, as ``downstream``, its successors over the edges not
        marked ``declared=False``. Other attributes are left alone (a graph may carry its tools'
        own). The traffic comes back in the graph's edge order, one record per pair.
        """
        for what, graph in (("traffic", traffic), ("operators", operators)):
            if graph is not None and not (
                hasattr(graph, "is_directed") and graph.is_directed() and not graph.is_multigraph()
            ):
                raise InvalidSnapshotError(
                    f"Snapshot.from_graphs: '{what}' must be a networkx.DiGraph, got {type(graph).__name__}"
                )
        data = dict(traffic.nodes(data=True))
        cluster = traffic.graph.get("nodes")
        if cluster is None:
            cluster = {where: {} for where in dict.fromkeys(d.get("node") for d in data.values())}
        nodes = [
            Node(nid, **{k: v for k, v in (attrs or {}).items() if k in _NODE_ATTRIBUTES})
            for nid, attrs in cluster.items()
        ]
        key_groups = [
            KeyGroup(
                kid,
                d.get("operator"),
                d.get("load"),
                d.get("state_size", 0.0),
                d.get("index"),
                d.get("resources") or {},
                d.get("arrival_rate"),
                d.get("service_rate"),
                d.get("spread"),
                d.get("load_error"),
            )
            for kid, d in data.items()
        ]
        ops: list[Operator] = []
        if operators is not None:
            for name, d in operators.nodes(data=True):
                if d.get("declared", True):
                    down = tuple(v for v, e in operators.adj[name].items() if e.get("declared", True))
                    ops.append(Operator(name, down, tuple(d.get("partition_attributes") or ())))
        snapshot = cls(
            nodes,
            key_groups,
            {kid: d.get("node") for kid, d in data.items()},
            [Traffic(u, v, e.get("rate")) for u, v, e in traffic.edges(data=True)],
            ops,
            traffic.graph.get("period"),
        )
        return snapshot.validate()


_NODE_ATTRIBUTES = ("capacity", "removing", "cores", "host")


def operator_graph(operators: Any, rates: Mapping[tuple[str, str], float] | None = None) -> nx.DiGraph:
    """Operators and the tuples/s between them as a ``networkx.DiGraph``.

    A graph node per :class:`Operator`, in order, with ``partition_attributes`` and
    ``declared=True``; an edge (``rate=0.0``, ``declared=True``) to each operator its
    ``downstream`` lists, in order (a name not among ``operators`` is skipped); then each
    ``rates[(a, b)]`` is added to the edge a -> b, created with ``declared=False`` when not listed.
    So each operator's successors are its declared downstream operators, then those it only sends
    to, in the order of ``rates``: Enorm's tie-break order. Raises
    :class:`~albic.base.errors.InvalidParameterError` for repeated operator names, a rate naming an
    unknown operator, or a rate that is not a number >= 0.

    >>> g = operator_graph([Operator("a", ("b",), ("x",)), Operator("b")], {("a", "b"): 2.0})
    >>> list(g.edges(data=True))
    [('a', 'b', {'rate': 2.0, 'declared': True})]
    """
    import networkx as nx

    names = [op.name for op in operators]
    if len(set(names)) != len(names):
        raise InvalidParameterError(f"operator names must be unique, got {names}")
    graph = nx.DiGraph()
    for op in operators:
        graph.add_node(op.name, partition_attributes=tuple(op.partition_attributes), declared=True)
    for op in operators:
        for down in op.downstream:
            if down in graph and not graph.has_edge(op.name, down):
                graph.add_edge(op.name, down, rate=0.0, declared=True)
    for (src, dst), rate in (rates or {}).items():
        for end in (src, dst):
            if end not in graph:
                raise InvalidParameterError(f"rate from {src!r} to {dst!r}: unknown operator {end!r}")
        if not rate >= 0:
            raise InvalidParameterError(f"rate from {src!r} to {dst!r} = {rate!r} must be >= 0")
        if graph.has_edge(src, dst):
            graph.edges[src, dst]["rate"] += float(rate)
        else:
            graph.add_edge(src, dst, rate=float(rate), declared=False)
    return graph


def _build_arrays(snap: Snapshot) -> SnapshotArrays:
    import scipy.sparse  # lazily: keeps `import albic` light

    node_ids = tuple(n.id for n in snap.nodes)
    kg_ids = tuple(k.id for k in snap.key_groups)
    node_index = {nid: i for i, nid in enumerate(node_ids)}
    kg_index = {kid: k for k, kid in enumerate(kg_ids)}
    operator_names = tuple(dict.fromkeys(k.operator for k in snap.key_groups))
    operator_code = {name: i for i, name in enumerate(operator_names)}
    n_kg = len(kg_ids)
    # map() over attrgetter: no Python frame per edge (hundreds of thousands of edges).
    n_edges = len(snap.traffic)
    src, dst, rate = (
        np.fromiter(map(lookup, map(attrgetter(name), snap.traffic)), dtype=dtype, count=n_edges)
        for name, lookup, dtype in (
            ("src", kg_index.__getitem__, np.int64),
            ("dst", kg_index.__getitem__, np.int64),
            ("rate", float, float),
        )
    )
    if n_edges:
        traffic = scipy.sparse.csr_array((rate, (src, dst)), shape=(n_kg, n_kg))
        traffic.sum_duplicates()
    else:  # no traffic: the empty CSR directly (a third of a small snapshot's arrays, through COO)
        indptr = np.zeros(n_kg + 1, dtype=np.int64)
        traffic = scipy.sparse.csr_array((rate, src, indptr), shape=(n_kg, n_kg))
    removing = np.array([n.removing for n in snap.nodes], dtype=bool)
    for part in (traffic.data, traffic.indices, traffic.indptr):
        part.setflags(write=False)
    return SnapshotArrays(
        node_ids=node_ids,
        key_group_ids=kg_ids,
        node_index=MappingProxyType(node_index),
        key_group_index=MappingProxyType(kg_index),
        loads=_readonly(np.array([k.load for k in snap.key_groups], dtype=float)),
        state_sizes=_readonly(np.array([k.state_size for k in snap.key_groups], dtype=float)),
        capacities=_readonly(np.array([n.capacity for n in snap.nodes], dtype=float)),
        current=_readonly(np.array([node_index[snap.assignment[k]] for k in kg_ids], dtype=np.int64)),
        removing=_readonly(removing),
        active=_readonly(~removing),
        indices=_readonly(
            np.array([-1 if k.index is None else k.index for k in snap.key_groups], dtype=np.int64)
        ),
        operator_names=operator_names,
        operator_of=_readonly(np.array([operator_code[k.operator] for k in snap.key_groups], dtype=np.int64)),
        traffic=traffic,
        spread=_readonly(_spread_codes(snap)),
    )


def _spread_codes(snap: Snapshot) -> np.ndarray:
    codes: dict[Any, int] = {}
    return np.array(
        [-1 if k.spread is None else codes.setdefault(k.spread, len(codes)) for k in snap.key_groups],
        dtype=np.int64,
    )


# -- the rules ------------------------------------------------------------------------------------
#
# Each rule of a field is written once, as a small object that both checks read: the one-by-one
# pass (``problem``: the message for one value) and the bulk pass (``all_hold``: a whole column at
# once, exact types only, so that anything unusual goes the long way and gets its message).


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def _all_of(values: list[Any], *types: type) -> bool:
    """Whether every value's exact type is one of ``types`` (exact: a subclass goes the long way)."""
    return {type(v) for v in values} <= set(types)


@dataclass(frozen=True)
class _Amount:
    """A finite float within ``[low, high]`` (or None when ``optional``)."""

    name: str
    low: float = 0.0
    high: float = MAX_AMOUNT
    optional: bool = False
    advice: str = ""

    @property
    def rule(self) -> str:
        if self.low > 0:
            return f"a finite number > 0 within [{self.low:g}, {self.high:g}]{self.advice}"
        return f"a finite number >= 0 and <= {self.high:g}{self.advice}"

    def problem(self, what: str, value: Any, name: str | None = None) -> str | None:
        if value is None and self.optional:
            return None
        name = name or self.name
        if not _is_number(value):
            return f"{what}: {name} = {shown(value)} ({type(value).__name__}), must be {self.rule}"
        # an Integral here is an int too large for a float (_as_float converts every other one)
        if isinstance(value, numbers.Integral) or not (
            math.isfinite(value) and self.low <= value <= self.high
        ):
            return f"{what}: {name} = {shown(value)}, must be {self.rule}"
        return None

    def all_hold(self, values: list[Any]) -> bool:
        present = [v for v in values if v is not None] if self.optional else values
        if not _all_of(present, float):
            return False
        array = np.fromiter(present, dtype=float, count=len(present))
        # NaN fails both comparisons, infinity the upper bound.
        return bool(((array >= self.low) & (array <= self.high)).all())


@dataclass(frozen=True)
class _Int:
    """An int within ``[low, high]`` (or None when ``optional``)."""

    name: str
    low: int
    high: int
    optional: bool = False

    def problem(self, what: str, value: Any) -> str | None:
        if value is None and self.optional:
            return None
        if not isinstance(value, int) or isinstance(value, bool) or not self.low <= value <= self.high:
            rule = f"an int in [{self.low}, {self.high}]" + (" or None" if self.optional else "")
            return f"{what}: {self.name} = {shown(value)}, must be {rule}"
        return None

    def all_hold(self, values: list[Any]) -> bool:
        present = [v for v in values if v is not None] if self.optional else values
        return _all_of(present, int) and (
            not present or self.low <= min(present) <= max(present) <= self.high
        )


@dataclass(frozen=True)
class _Flag:
    """True or False."""

    name: str

    def problem(self, what: str, value: Any) -> str | None:
        if not isinstance(value, bool):
            return f"{what}: {self.name} = {shown(value)}, must be True or False"
        return None

    def all_hold(self, values: list[Any]) -> bool:
        return _all_of(values, bool)


@dataclass(frozen=True)
class _OptionalText:
    """A string or None (``non_empty``: not the empty string)."""

    name: str
    non_empty: bool = False

    def problem(self, what: str, value: Any) -> str | None:
        if value is not None and (not isinstance(value, str) or (self.non_empty and not value)):
            rule = "a non-empty string or None" if self.non_empty else "a string or None"
            return f"{what}: {self.name} = {shown(value)}, must be {rule}"
        return None

    def all_hold(self, values: list[Any]) -> bool:
        return _all_of(values, str, type(None)) and not (self.non_empty and "" in values)


_FieldRule = _Amount | _Int | _Flag | _OptionalText

NODE_RULES: tuple[_FieldRule, ...] = (
    _Amount("capacity", *CAPACITY_RANGE, advice=" (capacities are relative: rescale them)"),
    _Flag("removing"),
    _Int("cores", 1, MAX_CORES),
    _OptionalText("host"),
    _OptionalText("rack", non_empty=True),
)
KEY_GROUP_RULES: tuple[_FieldRule, ...] = (
    _Amount("load"),
    _Amount("state_size"),
    _Int("index", 0, MAX_INDEX, optional=True),
    _Amount("arrival_rate", optional=True),
    _Amount("service_rate", low=MIN_SERVICE_RATE, optional=True),
    _Amount("load_error", optional=True),
)
# A resource amount, a traffic rate, an operator's Flink maximum parallelism.
_RESOURCE_AMOUNT = _Amount("resources")
_RATE = _Amount("rate")
_MAX_PARALLELISM = _Int("max_parallelism", 1, MAX_PARALLELISM)


def _id_problem(what: str, value: Any) -> str | None:
    if not isinstance(value, str) or not value:
        return f"{what} id {shown(value)} must be a non-empty string"
    return None


def _duplicates(kind: str, ids: list[Any]) -> Iterator[str]:
    for ident, times in Counter(i for i in ids if isinstance(i, str)).items():
        if times > 1:
            yield f"{kind} id {shown(ident)} appears {times} times; ids must be unique"


def _node_problems(i: int, node: Any) -> Iterator[str]:
    if not isinstance(node, Node):
        yield f"nodes[{i}] is a {type(node).__name__}, expected albic.core.model.Node"
        return
    if (p := _id_problem("node", node.id)) is not None:
        yield f"nodes[{i}]: {p}"
    what = f"node {shown(node.id)}"
    for rule in NODE_RULES:
        if (p := rule.problem(what, getattr(node, rule.name))) is not None:
            yield p


def _rack_problems(snap: Snapshot) -> Iterator[str]:
    """Racks are all or nothing: a node without one among nodes with one cannot be placed."""
    with_rack = [n for n in snap.nodes if isinstance(n, Node) and n.rack is not None]
    if with_rack and len(with_rack) < len(snap.nodes):
        missing = [n.id for n in snap.nodes if isinstance(n, Node) and n.rack is None]
        yield (
            f"nodes {', '.join(shown(i) for i in missing[:5])}"
            f"{' ...' if len(missing) > 5 else ''} have no rack while {len(with_rack)} others "
            "have one; give every node a rack or none"
        )


def _key_group_problems(k: int, kg: Any) -> Iterator[str]:
    if not isinstance(kg, KeyGroup):
        yield f"key_groups[{k}] is a {type(kg).__name__}, expected albic.core.model.KeyGroup"
        return
    if (p := _id_problem("key group", kg.id)) is not None:
        yield f"key_groups[{k}]: {p}"
    what = f"key group {shown(kg.id)}"
    if not isinstance(kg.operator, str) or not kg.operator:
        yield f"{what}: operator = {shown(kg.operator)}, must be a non-empty string"
    for rule in KEY_GROUP_RULES:
        if (p := rule.problem(what, getattr(kg, rule.name))) is not None:
            yield p
    if not isinstance(kg.resources, Mapping):
        yield f"{what}: resources = {shown(kg.resources)}, must be a mapping of name to amount"
    else:
        for res, amount in kg.resources.items():
            if not isinstance(res, str):
                yield f"{what}: resource name {shown(res)} must be a string"
            elif (p := _RESOURCE_AMOUNT.problem(what, amount, f"resources[{shown(res)}]")) is not None:
                yield p
    if kg.spread is not None and (
        isinstance(kg.spread, bool) or not isinstance(kg.spread, (str, int)) or kg.spread == ""
    ):
        yield f"{what}: spread = {kg.spread!r}, must be a non-empty string, an int or None"


def _covered_ok(value: Any) -> bool:
    """A snapshot's ``covered_seconds``: None, or a positive finite number (not a bool)."""
    if value is None:
        return True
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < math.inf


def _quickly_valid(snap: Snapshot) -> bool:
    """True only when :func:`_snapshot_problems` would find nothing, checked in bulk (numpy and
    set operations over the usual shapes: exact types, plain floats); False means "look closer",
    and the rule-by-rule pass then names every problem. The rule-by-rule pass costs ~30 us per key
    group and traffic edge in plain Python (3 s at 100,000 key groups with their traffic, inside a
    planner's time limit); this one ~1 us.

    Sound by construction: each rule below is the bulk form of one in the rule-by-rule pass, and
    anything unusual (a subclass, an int too large for a float, a bool) answers False. Tests
    (tests/test_model.py) run every malformed snapshot through ``validate()``, which would accept
    it if this function were wrong."""
    try:
        return _covered_ok(snap.covered_seconds) and _bulk_checks(snap)
    except Exception:  # noqa: BLE001  (an unhashable id, a strange object: the long way names it)
        return False


def _nodes_ok(nodes: tuple[Node, ...]) -> bool:
    """:func:`_node_problems` of every node in bulk, one field at a time (exact types only)."""
    ids = [n.id for n in nodes]
    if not _all_of(ids, str) or "" in ids:
        return False
    return all(rule.all_hold([getattr(n, rule.name) for n in nodes]) for rule in NODE_RULES)


def _bulk_checks(snap: Snapshot) -> bool:
    nodes, kgs, traffic = snap.nodes, snap.key_groups, snap.traffic
    if not nodes or not _all_of(list(nodes), Node) or all(n.removing is True for n in nodes):
        return False
    if not _nodes_ok(nodes):
        return False
    node_ids = {n.id for n in nodes}
    if len(node_ids) != len(nodes) or not _all_of(list(kgs), KeyGroup):
        return False
    ids = [k.id for k in kgs]
    id_set = set(ids)
    if len(id_set) != len(ids) or not _all_of(ids, str) or "" in id_set:
        return False
    operators = {k.operator for k in kgs}
    if not _all_of(list(operators), str) or "" in operators:
        return False
    if not all(rule.all_hold([getattr(k, rule.name) for k in kgs]) for rule in KEY_GROUP_RULES):
        return False
    resources = [k.resources for k in kgs]
    if not _all_of(resources, dict):
        return False
    used = [r for r in resources if r]
    if used and not (
        _all_of([name for r in used for name in r], str)
        and _RESOURCE_AMOUNT.all_hold([amount for r in used for amount in r.values()])
    ):
        return False
    assignment = snap.assignment
    if len(assignment) != len(ids) or assignment.keys() != id_set:
        return False
    if not set(assignment.values()) <= node_ids:
        return False
    spread = [(k.spread, assignment[k.id]) for k in kgs if k.spread is not None]
    if spread and not (
        _all_of([s for s, _ in spread], str, int)
        and "" not in {s for s, _ in spread}
        and len(set(spread)) == len(spread)
    ):
        return False
    if traffic:
        if not _all_of(list(traffic), Traffic):
            return False
        ends = {t.src for t in traffic} | {t.dst for t in traffic}
        if not ends <= id_set or not _RATE.all_hold([t.rate for t in traffic]):
            return False
    if snap.period is not None and type(snap.period) not in (str, int):
        return False
    if any(True for _ in _rack_problems(snap)):
        return False
    return not any(True for _ in _operator_problems(snap))


def _snapshot_problems(snap: Snapshot) -> Iterator[str]:
    for i, node in enumerate(snap.nodes):
        yield from _node_problems(i, node)
    for k, kg in enumerate(snap.key_groups):
        yield from _key_group_problems(k, kg)
    node_list = [getattr(n, "id", None) for n in snap.nodes]
    kg_list = [getattr(k, "id", None) for k in snap.key_groups]
    yield from _duplicates("node", node_list)
    yield from _duplicates("key group", kg_list)
    node_ids = {i for i in node_list if isinstance(i, str)}
    kg_ids = {i for i in kg_list if isinstance(i, str)}

    if not snap.nodes:
        yield "the snapshot has no nodes; at least one active node is needed"
    elif all(isinstance(n, Node) and n.removing is True for n in snap.nodes):
        yield (
            f"every node is removing ({count(len(snap.nodes), 'node')}); at least one node must "
            "stay active to take their key groups"
        )

    for kid in kg_list:
        if isinstance(kid, str) and kid not in snap.assignment:
            yield f"key group {shown(kid)} is not in the assignment; every key group needs a node"
    for kid, nid in snap.assignment.items():
        if kid not in kg_ids:
            yield f"the assignment places unknown key group {shown(kid)} (on node {shown(nid)})"
        elif not isinstance(nid, str) or nid not in node_ids:
            yield f"key group {shown(kid)} is assigned to unknown node {shown(nid)}"

    yield from spread_problems(snap.key_groups, snap.assignment, "are")
    yield from _rack_problems(snap)
    if not _covered_ok(snap.covered_seconds):
        yield (
            f"covered_seconds = {snap.covered_seconds!r}: must be a positive number of seconds "
            "(a partial period) or None (a whole period)"
        )

    for t, edge in enumerate(snap.traffic):
        if not isinstance(edge, Traffic):
            yield f"traffic[{t}] is a {type(edge).__name__}, expected albic.core.model.Traffic"
            continue
        what = f"traffic from {shown(edge.src)} to {shown(edge.dst)}"
        for end in (edge.src, edge.dst):
            if not isinstance(end, str) or end not in kg_ids:
                yield f"{what}: unknown key group {shown(end)}"
        if (p := _RATE.problem(what, edge.rate)) is not None:
            yield p

    if snap.period is not None and (not isinstance(snap.period, (str, int)) or isinstance(snap.period, bool)):
        yield f"period = {shown(snap.period)}, must be a string, an int or None"

    yield from _operator_problems(snap)


def spread_problems(key_groups: Any, assignment: Mapping[str, Any], verb: str) -> Iterator[str]:
    """Where ``assignment`` puts two key groups of the same ``spread`` value on one node.

    One message per node and spread value, e.g. ``key groups 'a', 'b' of spread 'p0' are on node
    'n1' together; ...`` (``verb`` is "are" for a snapshot, "would be" for a plan). Key groups without a node in ``assignment`` are skipped
    (reported elsewhere).
    """
    together: dict[tuple[Any, Any], list[str]] = {}
    for kg in key_groups:
        spread = getattr(kg, "spread", None)
        if spread is None or isinstance(spread, bool) or not isinstance(spread, (str, int)):
            continue
        node = assignment.get(kg.id) if isinstance(kg.id, str) else None
        if isinstance(node, str):
            together.setdefault((spread, node), []).append(kg.id)
    for (spread, node), ids in together.items():
        if len(ids) > 1:
            names = ", ".join(repr(i) for i in ids)
            yield (
                f"key groups {names} of spread {spread!r} {verb} on node {node!r} together; "
                "key groups of one spread must be on distinct nodes"
            )


def _operator_problems(snap: Snapshot) -> Iterator[str]:
    if not snap.operators:
        return
    names = []
    for i, op in enumerate(snap.operators):
        if not isinstance(op, Operator):
            yield f"operators[{i}] is a {type(op).__name__}, expected albic.core.model.Operator"
            continue
        if not isinstance(op.name, str) or not op.name:
            yield f"operators[{i}]: name {shown(op.name)} must be a non-empty string"
        if op.key_hash is not None and op.key_hash not in KEY_HASHES:
            yield (
                f"operator {shown(op.name)}: key_hash = {shown(op.key_hash)}, must be one of "
                f"{list(KEY_HASHES)} or None"
            )
        if op.max_parallelism is not None and (
            (p := _MAX_PARALLELISM.problem(f"operator {shown(op.name)}", op.max_parallelism)) is not None
        ):
            yield p
        elif op.max_parallelism is not None and op.key_hash != "flink":
            yield (
                f"operator {shown(op.name)}: max_parallelism = {op.max_parallelism} but key_hash "
                f"= {shown(op.key_hash)}; a maximum parallelism belongs to Flink's hash"
            )
        names.append(op.name)
    yield from _duplicates("operator", names)
    known = {name for name in names if isinstance(name, str)}
    for op in snap.operators:
        if isinstance(op, Operator):
            for down in op.downstream:
                if not isinstance(down, str) or down not in known:
                    yield f"operator {shown(op.name)}: downstream operator {shown(down)} is not declared"
    used = {k.operator for k in snap.key_groups if isinstance(k, KeyGroup) and isinstance(k.operator, str)}
    undeclared = sorted(used - known)
    for name in undeclared:
        yield f"key groups name operator {shown(name)}, which is not among the declared operators"


# -- plans ----------------------------------------------------------------------------------------


class PlanStatus(str, enum.Enum):
    """How a planner's search ended.

    OPTIMAL: proven optimal. FEASIBLE: found, not proven optimal. INFEASIBLE: proven that no plan
    meets the constraints (the assignment is then the current one). NO_SOLUTION: a limit was reached
    before any plan was found (the assignment is then the current one).
    """

    OPTIMAL = "OPTIMAL"
    FEASIBLE = "FEASIBLE"
    INFEASIBLE = "INFEASIBLE"
    NO_SOLUTION = "NO_SOLUTION"

    def __str__(self) -> str:
        return self.value

    @property
    def found(self) -> bool:
        """Whether a plan was found (OPTIMAL or FEASIBLE); INFEASIBLE and NO_SOLUTION keep the
        placement: no plan was made."""
        return self in (PlanStatus.OPTIMAL, PlanStatus.FEASIBLE)


#: The statuses of a search that made no plan (the placement is kept), as text.
NO_PLAN_STATUSES = (PlanStatus.INFEASIBLE.value, PlanStatus.NO_SOLUTION.value)


@dataclass(frozen=True)
class Move:
    """Key group ``key_group`` moves from node ``source`` to node ``target``; ``cost`` is its state size."""

    key_group: str
    source: str
    target: str
    cost: float
