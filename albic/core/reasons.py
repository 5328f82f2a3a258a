"""Why a move is in a plan: the one vocabulary of move reasons.

Every command and figure that names a move's reason -- ``albic explain`` (:mod:`albic.core.explain`),
``albic schedule`` (:mod:`albic.rollout.schedule`), ``albic plot`` (:mod:`albic.core.figure`) --
takes it from :func:`move_reasons`, so one move has one reason everywhere. The first that applies:

- ``drain``: the key group leaves a node being removed;
- ``collocate``: the move makes more of the key group's traffic node-local: its traffic with the key
  groups on the target (where the plan leaves them) exceeds its traffic with those on the source
  -- given only for a planner whose objective counts traffic (its ``collocation`` tag; a planner
  the registry does not know is given it): milp or flux balance load alone, so a move of theirs
  that happens to localise traffic is ``balance``, and its detail says what it localises;
- ``balance``: any other move; it evens the load (the detail gives both nodes' utilisation before
  the plan as a multiple of the mean).

Example
-------
>>> from albic.core.model import KeyGroup, Move, Node, Snapshot
>>> from albic.core.plan import Plan
>>> snap = Snapshot([Node("r", removing=True), Node("a"), Node("b")],
...                 [KeyGroup("x", "op", 1.0), KeyGroup("y", "op", 3.0), KeyGroup("z", "op", 1.0)],
...                 {"x": "r", "y": "a", "z": "a"})
>>> plan = Plan("by-hand", "FEASIBLE", {"x": "b", "y": "a", "z": "b"},
...             moves=(Move("x", "r", "b", 0.0), Move("z", "a", "b", 0.0)))
>>> move_reasons(snap, plan)
[('drain', 'r is being removed'), ('balance', 'a at 1.60x the mean utilisation -> b at 0.00x')]
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from albic.base.formats import number, times
from albic.core import metrics
from albic.core.model import Snapshot
from albic.core.registry import planner_tag

if TYPE_CHECKING:  # the plan module imports explain, which imports this one
    from albic.core.plan import Plan

__all__ = ["DRAIN", "COLLOCATE", "BALANCE", "REASONS", "move_reasons"]

DRAIN, COLLOCATE, BALANCE = "drain", "collocate", "balance"

#: Reason -> what it means, in the order they are tried.
REASONS = {
    DRAIN: "the key group leaves a node being removed",
    COLLOCATE: "more of the key group's traffic becomes node-local",
    BALANCE: "any other move: it evens the load",
}

_TOL = 1e-9


def move_reasons(snapshot: Snapshot, plan: Plan) -> list[tuple[str, str]]:
    """``(reason, detail)`` for each of ``plan.moves``, in order (see the module docstring)."""
    collocates = planner_tag(plan.planner, "collocation", unknown=True)
    final = dict(plan.assignment)
    nodes = {n.id: n for n in snapshot.nodes}
    load = metrics.load_by_node(snapshot, snapshot.assignment)
    utilisation = {i: load[i] / nodes[i].capacity for i in nodes}
    mean = metrics.mean_utilisation(snapshot)
    neighbours: dict[str, list[tuple[str, float]]] = {}
    for t in snapshot.traffic:
        neighbours.setdefault(t.src, []).append((t.dst, t.rate))
        neighbours.setdefault(t.dst, []).append((t.src, t.rate))

    def reason(key_group: str, source: str, target: str) -> tuple[str, str]:
        if nodes[source].removing:
            return DRAIN, f"{source} is being removed"
        around = neighbours.get(key_group, ())
        with_target = math.fsum(rate for other, rate in around if final[other] == target)
        with_source = math.fsum(rate for other, rate in around if final[other] == source)
        local = (
            f"{number(with_target)} tuples/s with key groups on {target} "
            f"become local ({number(with_source)} stay with {source})"
        )
        if with_target > with_source + _TOL and collocates:
            return COLLOCATE, local
        of_mean = (lambda n: times(utilisation[n] / mean)) if mean > 0 else (lambda n: "-")
        detail = f"{source} at {of_mean(source)} the mean utilisation -> {target} at {of_mean(target)}"
        if with_target > with_source + _TOL:  # by the way: the planner did not aim at it
            detail += f"; by the way, {local}"
        return BALANCE, detail

    return [reason(m.key_group, m.source, m.target) for m in plan.moves]
