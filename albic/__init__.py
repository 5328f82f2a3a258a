"""albic: load balancing and state-migration planners for parallel stream processors.

The public entry points::

    import albic
    snapshot = albic.read_snapshot("data/example_snapshot.json")
    plan = albic.plan(snapshot, "flux", max_moves=5)
    print(plan.summary())

Importing ``albic`` stays light: no planner, solver or Spark module is imported until it is used.
"""

from albic.base.errors import (
    AlbicError,
    InvalidParameterError,
    InvalidSnapshotError,
    PlannerBugError,
    UnsupportedSnapshotError,
)
from albic.core.model import KeyGroup, Move, Node, Operator, PlanStatus, Snapshot, Traffic
from albic.core.plan import Plan
from albic.core.planner import Planner, PlannerTags, get_planner, plan, register_planner
from albic.core.registry import available_planners
from albic.io import read_plan, read_snapshot, read_snapshots, write_plan, write_snapshot

__version__ = "0.1.0"

# Imported on first use (they pull in pandas; albic.evaluation.plot pulls in matplotlib when it draws):
# ``albic.compare(...)``, ``albic.replay(...)``, ``albic.schedule(...)``,
# ``albic.evaluation.plot.standard_figures(...)``. ``albic.compare`` chooses between the local
# engine (albic.evaluation.compare) and Spark (engine="spark"), so it lives in the first room that
# sees both; it imports pyspark only when Spark runs.
_LAZY = {
    "compare": ("albic.spark.compare_engine", "compare"),
    "summarize": ("albic.evaluation.compare", "summarize"),
    "replay": ("albic.evaluation.replay", "replay"),
    "schedule": ("albic.rollout.schedule", "schedule"),
    "plot": ("albic.evaluation.plot", None),
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        module_name, attribute = _LAZY[name]
        module = importlib.import_module(module_name)
        value = module if attribute is None else getattr(module, attribute)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'albic' has no attribute {name!r}")


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
    "read_snapshots",
    "write_snapshot",
    "compare",
    "summarize",
    "replay",
    "schedule",
    "plot",
    "read_plan",
    "write_plan",
]
