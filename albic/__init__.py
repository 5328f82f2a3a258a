"""albic: load balancing and state-migration planners for parallel stream processors.

The public entry points::

    import albic
    snapshot = albic.read_snapshot("data/example_snapshot.json")
    plan = albic.plan(snapshot, "flux", max_moves=5)
    print(plan.summary())

Importing ``albic`` stays light: no planner, solver or Spark module is imported until it is used.
"""
from albic.errors import (
    AlbicError,
    InvalidParameterError,
    InvalidSnapshotError,
    PlannerBugError,
    UnsupportedSnapshotError,
)
from albic.io import read_plan, read_snapshot, write_plan, write_snapshot
from albic.model import KeyGroup, Move, Node, Operator, Plan, PlanStatus, Snapshot, Traffic
from albic.planner import (
    Planner,
    PlannerTags,
    available_planners,
    get_planner,
    plan,
    register_planner,
)

__version__ = "0.1.0"

__all__ = [
    "AlbicError",
    "InvalidParameterError",
    "InvalidSnapshotError",
    "PlannerBugError",
    "UnsupportedSnapshotError",
    "KeyGroup",
    "Move",
    "Node",
    "Operator",
    "Plan",
    "PlanStatus",
    "Snapshot",
    "Traffic",
    "Planner",
    "PlannerTags",
    "available_planners",
    "get_planner",
    "plan",
    "register_planner",
    "read_snapshot",
    "write_snapshot",
    "read_plan",
    "write_plan",
]
