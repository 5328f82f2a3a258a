"""A planner's answer: :class:`Plan` (design section 3, a *contract*).

A plan holds the new assignment, the moves derived from it, the metrics before and after, and the
planner's details; it turns itself into JSON (schema ``albic.plan/1``), a table, an explanation
(:func:`albic.core.explain.explain`), a figure (:func:`albic.core.figure.plan_figure`) and a
one-line summary.

Example
-------
>>> from albic.core.model import Node, KeyGroup, Snapshot
>>> from albic.core.planner import get_planner
>>> snap = Snapshot([Node("a"), Node("b")], [KeyGroup("x", "op", 2.0, 10), KeyGroup("y", "op", 2.0, 10)],
...                 {"x": "a", "y": "a"})
>>> plan = get_planner("flux", max_moves=1).plan(snap)
>>> plan.to_dict()["moves"]
[{'key_group': 'x', 'from': 'a', 'to': 'b', 'cost': 10.0}]
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from albic.base.files import dumps
from albic.base.formats import count, number, percent, seconds, size
from albic.core.explain import explain, explain_text
from albic.core.figure import plan_figure
from albic.core.model import Move, PlanStatus, Snapshot

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

__all__ = ["Plan", "PLAN_SCHEMA", "moves_to"]

#: The schema name a plan's JSON form carries (design section 6).
PLAN_SCHEMA = "albic.plan/1"


def moves_to(snapshot: Snapshot, where: np.ndarray) -> tuple[Move, ...]:
    """The moves from ``snapshot``'s placement to the node indices ``where`` (one per key group,
    in key-group order), each with its key group's state size as its cost: how albic derives a
    plan's moves, never trusting a planner's. By node indices (numpy), not a pass over the key
    groups: 100,000 key groups take a few milliseconds."""
    arrays = snapshot.arrays()
    ids, node_ids, sizes = arrays.key_group_ids, arrays.node_ids, arrays.state_sizes
    return tuple(
        Move(ids[k], node_ids[arrays.current[k]], node_ids[where[k]], float(sizes[k]))
        for k in np.flatnonzero(where != arrays.current).tolist()
    )


_NO_PLAN_MEANING = {
    PlanStatus.INFEASIBLE: "the planner proved that no plan meets its constraints",
    PlanStatus.NO_SOLUTION: "a limit was reached before the planner found any plan",
}


@dataclass(frozen=True, repr=False)
class Plan:
    """A planner's answer for one snapshot.

    ``moves`` and ``metrics`` are derived by albic from ``snapshot.assignment`` and ``assignment``
    (:meth:`albic.core.planner.Planner.plan`), never written by a planner. ``details`` holds
    planner-specific results in plain Python types (JSON-serialisable).
    """

    planner: str
    status: PlanStatus
    assignment: Mapping[str, str]
    moves: tuple[Move, ...] = ()
    metrics: Mapping[str, Any] = field(default_factory=dict)
    objective: float | None = None
    bound: float | None = None
    seconds: float = 0.0
    details: Mapping[str, Any] = field(default_factory=dict)
    #: The snapshot the plan was made for, when :meth:`albic.core.planner.Planner.plan` made it in
    #: this process (not part of the JSON form): what :meth:`explain`, :meth:`to_frame` and
    #: :meth:`figure` read when they are given no snapshot.
    snapshot: Snapshot | None = field(default=None, compare=False)
    #: Whether the planner that made it proves its plans optimal (its ``tags().exact``); None for
    #: a plan read from a file, whose explanation asks the registry.
    exact: bool | None = field(default=None, compare=False)
    #: What the plan was made from, as its JSON form records it (:meth:`made_from_record`):
    #: ``period``, ``snapshot`` (:meth:`Snapshot.digest`) and, for a period of a statistics
    #: folder planned by ``albic plan``, ``statistics`` (the folder's identity,
    #: :func:`albic.io.datasets.statistics_identity`). None: derived from :attr:`snapshot`.
    made_from: Mapping[str, Any] | None = field(default=None, compare=False)

    __hash__ = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if isinstance(self.status, str) and not isinstance(self.status, PlanStatus):
            try:
                object.__setattr__(self, "status", PlanStatus(self.status))
            except ValueError:
                pass  # left for albic.core.checks to report with the planner's name
        object.__setattr__(self, "moves", tuple(self.moves))

    @property
    def no_plan_reason(self) -> str | None:
        """Why the planner made no plan (status INFEASIBLE or NO_SOLUTION): the reason it gave
        (``details["reason"]``), else what the status means; ``None`` for a plan that was made.

        >>> Plan("x", PlanStatus.INFEASIBLE, {}).no_plan_reason
        'the planner proved that no plan meets its constraints (it gave no reason)'
        """
        status = PlanStatus(self.status)
        if status.found:
            return None
        reason = self.details.get("reason") if isinstance(self.details, Mapping) else None
        return str(reason) if reason else f"{_NO_PLAN_MEANING[status]} (it gave no reason)"

    @property
    def previous_assignment(self) -> dict[str, str]:
        """Where the key groups were before the plan: a moved key group at its move's source,
        every other one where the plan leaves it. A plan file records its moves, so this is the
        placement it was made from, whatever snapshot file is at hand."""
        before = dict(self.assignment)
        before.update((m.key_group, m.source) for m in self.moves)
        return before

    def made_from_record(self) -> dict[str, Any] | None:
        """What the plan records of the snapshot it was made for: its own record, else the period
        and digest of the snapshot it was made for in this process; None when neither is known (a
        plan file written before albic recorded it).

        >>> from albic.core.model import Node, KeyGroup, Snapshot
        >>> from albic.core.planner import get_planner
        >>> snap = Snapshot([Node("a"), Node("b")], [KeyGroup("x", "op", 1.0)], {"x": "a"}, period="h0")
        >>> record = get_planner("flux").plan(snap).made_from_record()
        >>> record["period"], record["snapshot"] == snap.digest()
        ('h0', True)
        """
        if self.made_from is not None:
            return dict(self.made_from)
        if self.snapshot is None:
            return None
        return {"period": self.snapshot.period, "snapshot": self.snapshot.digest()}

    @property
    def migration_cost(self) -> float:
        """Sum of the state sizes moved."""
        return float(sum(m.cost for m in self.moves))

    def to_dict(self) -> dict[str, Any]:
        """The plan as JSON-ready data (schema ``albic.plan/1``)."""
        return {
            "schema": PLAN_SCHEMA,
            "planner": self.planner,
            "status": str(self.status),
            "assignment": dict(self.assignment),
            "moves": [
                {"key_group": m.key_group, "from": m.source, "to": m.target, "cost": m.cost}
                for m in self.moves
            ],
            "metrics": dict(self.metrics),
            "objective": self.objective,
            "bound": self.bound,
            "seconds": self.seconds,
            "details": dict(self.details),
            **({} if (record := self.made_from_record()) is None else {"made_from": record}),
        }

    def to_json(self, *, indent: int | None = 2) -> str:
        """The plan as JSON text (schema ``albic.plan/1``)."""
        return dumps(self.to_dict(), indent=indent)

    def to_frame(self, snapshot: Snapshot | None = None) -> pd.DataFrame:
        """One row per key group: ``key_group, node, previous_node, moved, cost``, and, when the
        snapshot is known (given, or remembered by a plan made in this process), its
        ``operator``, ``load`` and ``state_size`` after ``key_group``.

        >>> from albic.core.model import Node, KeyGroup
        >>> from albic.core.planner import get_planner
        >>> snap = Snapshot([Node("a"), Node("b")], [KeyGroup("x", "op", 2.0, 10), KeyGroup("y", "op", 1.0, 10)],
        ...                 {"x": "a", "y": "a"})
        >>> get_planner("flux", max_moves=1).plan(snap).to_frame().to_dict("records")[0]
        {'key_group': 'x', 'operator': 'op', 'load': 2.0, 'state_size': 10.0, 'node': 'b', 'previous_node': 'a', 'moved': True, 'cost': 10.0}
        """
        import pandas as pd

        moved = {m.key_group: m for m in self.moves}
        frame = pd.DataFrame(
            [
                {
                    "key_group": kid,
                    "node": nid,
                    "previous_node": moved[kid].source if kid in moved else nid,
                    "moved": kid in moved,
                    "cost": moved[kid].cost if kid in moved else 0.0,
                }
                for kid, nid in self.assignment.items()
            ],
            columns=["key_group", "node", "previous_node", "moved", "cost"],
        )
        snapshot = snapshot if snapshot is not None else self.snapshot
        if snapshot is None:
            return frame
        groups = {kg.id: kg for kg in snapshot.key_groups}
        known = [groups.get(kid) for kid in frame["key_group"]]
        for position, (column, field_name) in enumerate(
            (("operator", "operator"), ("load", "load"), ("state_size", "state_size")), start=1
        ):
            values = [None if kg is None else getattr(kg, field_name) for kg in known]
            frame.insert(position, column, values)
        return frame

    def explain_text(self, snapshot: Snapshot | None = None, **limits: Any) -> str:
        """:meth:`explain` for people: the text ``albic explain`` prints (goals before and after,
        each move with its reason, the warnings)."""
        return explain_text(self.explain(snapshot, **limits))

    def explain(self, snapshot: Snapshot | None = None, **limits: Any) -> dict[str, Any]:
        """Each goal before and after, a reason per move and warnings (:func:`albic.core.explain.explain`).

        ``snapshot`` may be left out for a plan made in this process by ``planner.plan(snapshot)``;
        a plan read from a file needs it.
        """
        return explain(self, snapshot, **limits)

    def plot(self, snapshot: Snapshot | None = None, **options: Any) -> Figure:
        """The plan as a figure: node utilisation before and after, the mean and the target band,
        the moves (:func:`albic.core.figure.plan_figure`; needs albic's extra ``plot``). Save it
        with ``plan.plot().savefig("plan.png")``.

        ``snapshot`` may be left out for a plan made in this process; for a plan read from a file,
        without it the bars count key groups per node.
        """
        return plan_figure(self, snapshot, **options)

    def __repr__(self) -> str:
        """One line (a plan's assignment runs to thousands of key groups): what :meth:`summary`
        says; ``to_dict()``, ``to_frame()`` and ``assignment`` hold the rest."""
        nodes = len(set(self.assignment.values()))
        return (
            f"<Plan {self.summary()}; {count(len(self.assignment), 'key group')} on {count(nodes, 'node')}>"
        )

    def summary(self) -> str:
        """One line for people: status, moves, migration cost and load distance before -> after."""
        m = self.metrics
        status = str(self.status)
        holding = self.details.get("removing_nodes_holding") or {}
        if holding or m.get("removing_load", 0) > 0:
            # A plan that leaves load on nodes being removed is not done, whatever its status says.
            names = f" {', '.join(map(str, holding))}" if holding else "s"
            status += (
                f" but removing node{names} still hold{'s' * (len(holding) == 1)} "
                f"{number(m.get('removing_load', 0.0))} load"
            )
        parts = [f"{self.planner}: {status}", count(len(self.moves), "move")]
        if "migration_cost_pct" in m:
            parts.append(
                f"migration cost {size(self.migration_cost)} ({percent(m['migration_cost_pct'])} of state)"
            )
        if "load_distance_pct" in m and "load_distance_pct_before" in m:
            parts.append(
                f"load distance {percent(m['load_distance_pct_before'])} -> "
                f"{percent(m['load_distance_pct'])} of mean"
            )
        parts.append(seconds(self.seconds))
        if self.no_plan_reason is not None:
            parts.append(f"no plan: {self.no_plan_reason}")
        if self.details.get("fallback"):  # e.g. mtm planned as SSM: the status alone hides why
            parts.append(f"fallback: {self.details['fallback']}")
        return ", ".join(parts)
