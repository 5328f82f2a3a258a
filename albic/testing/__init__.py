"""Testing planners: the conformance suite, snapshot generators, brute-force references, fuzzing.

The public entry point is :func:`check_planner`; the generators and references are public too, for
any planner's own tests::

    from albic.testing import check_planner, random_snapshot, brute_force_best

- :mod:`albic.testing.conformance`: :func:`check_planner` and its report;
- :mod:`albic.testing.generators`: valid snapshots (random, interval, queueing, replicas, hypothesis);
- :mod:`albic.testing.references`: brute force and reference objectives from the papers;
- :mod:`albic.testing.fuzz`: random snapshots through every planner and the validator.
"""

from albic.testing.conformance import (
    MIN_SCENARIOS,
    ConformanceReport,
    check_planner,
    planner_checks,
    run_checks,
)
from albic.testing.generators import (
    BRUTE_FORCE_MAX_KEY_GROUPS,
    BRUTE_FORCE_MAX_NODES,
    Size,
    balanced_snapshot,
    interval_snapshot,
    queueing_snapshot,
    random_snapshot,
    replica_snapshot,
    small_snapshots,
    snapshots,
    suite_snapshots,
)
from albic.testing.references import (
    albic_milp_objective,
    brute_force_best,
    interval_objective,
    milp_objective,
    reference_objective,
    register_reference_objective,
)

__all__ = [
    "Size",
    "check_planner",
    "run_checks",
    "planner_checks",
    "ConformanceReport",
    "brute_force_best",
    "albic_milp_objective",
    "random_snapshot",
    "interval_snapshot",
    "replica_snapshot",
    "balanced_snapshot",
    "queueing_snapshot",
    "suite_snapshots",
    "small_snapshots",
    "snapshots",
    "reference_objective",
    "register_reference_objective",
    "interval_objective",
    "milp_objective",
    "BRUTE_FORCE_MAX_KEY_GROUPS",
    "BRUTE_FORCE_MAX_NODES",
    "MIN_SCENARIOS",
]
