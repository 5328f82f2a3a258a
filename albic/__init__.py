"""albic: load balancing and state-migration planners for parallel stream processors.

The public entry points::

    import albic
    snapshot = albic.read_snapshot("data/example_snapshot.json")
    plan = albic.plan(snapshot, "flux", max_moves=5)
    print(plan.summary())

Importing ``albic`` stays light: every name is imported when it is first used.
"""

from typing import TYPE_CHECKING

from albic.base.lazy import lazy_exports

__version__ = "0.1.0"

# Every public name is imported on first use, so that ``import albic`` (and the command line's
# start) loads nothing heavy. ``albic.compare`` chooses between the local engine
# (albic.evaluation.compare) and Spark (engine="spark"), so it lives in the first room that sees
# both; it imports pyspark only when Spark runs.
_PUBLIC = {
    **{
        name: f"albic.base.errors:{name}"
        for name in (
            "AlbicError",
            "InvalidParameterError",
            "InvalidSnapshotError",
            "PlannerBugError",
            "UnsupportedSnapshotError",
        )
    },
    **{
        name: f"albic.core.model:{name}"
        for name in (
            "KeyGroup",
            "Move",
            "Node",
            "Operator",
            "PlanStatus",
            "Snapshot",
            "Traffic",
        )
    },
    "Plan": "albic.core.plan:Plan",
    **{
        name: f"albic.core.planner:{name}"
        for name in (
            "Planner",
            "PlannerTags",
            "get_planner",
            "plan",
            "register_planner",
        )
    },
    "available_planners": "albic.core.registry:available_planners",
    **{
        name: f"albic.io:{name}"
        for name in (
            "read_plan",
            "read_snapshot",
            "read_snapshots",
            "write_plan",
            "write_snapshot",
        )
    },
    "compare": "albic.spark.compare_engine:compare",
    "summarize": "albic.evaluation.compare:summarize",
    "recommend": "albic.spark.compare_engine:recommend",
    "read_recommendation": "albic.evaluation.recommend:read_recommendation",
    "verdict": "albic.evaluation.verdict:verdict",
    "replay": "albic.evaluation.replay:replay",
    "ReplayRules": "albic.evaluation.replay:ReplayRules",
    "schedule": "albic.rollout.schedule:schedule",
    "plot": "albic.evaluation.plot",
}
__getattr__, __dir__ = lazy_exports(globals(), _PUBLIC)

if TYPE_CHECKING:  # what type checkers and editors see
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
    "ReplayRules",
    "schedule",
    "plot",
    "read_plan",
    "write_plan",
]
