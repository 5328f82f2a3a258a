"""The conformance suite every planner passes.

:func:`check_planner` is to albic what scikit-learn's ``check_estimator`` is to estimators: it runs
the general checks of the planner contract (design section 4) and the ones its tags promise, on
scenarios generated for what the tags say the planner supports, and raises one ``AssertionError``
listing every check that failed.

- Scenarios: ``interval`` planners get single-operator interval snapshots (homogeneous nodes,
  indices ``0..m-1``, each node holding one contiguous run), ``queueing`` planners snapshots with
  arrival and service rates and node cores, every other planner the general set (skewed loads,
  new and removing nodes, heterogeneous capacities, several operators with traffic, rates, edge
  cases). Every family has new and removing nodes; budgeted planners are planned under several
  budgets on each scenario.
- A check that a planner's tags promise and that ran on zero cases fails: a planner cannot pass a
  check by declining every snapshot it would apply to.
- The ``exact`` check compares the plan with brute force under a *reference objective* written
  here from the paper's definition (:func:`reference_objective`), not under the planner's own
  ``evaluate()``: a wrong objective in the planner would sit on both sides of that comparison.
  Other engineers' planners plug theirs in with :func:`register_reference_objective`; a planner
  without one falls back to its ``evaluate()`` and the report says so.

Example
-------
>>> from albic.testing import check_planner
>>> from albic import get_planner
>>> report = check_planner(get_planner("storm_default"))
>>> report.scenarios_run >= 8, report.cases["valid_plans"] == report.scenarios_run
(True, True)
>>> "valid_plans" in report  # the report is also the list of the checks that applied
True

The snapshots come from :mod:`albic.testing.generators`, the truth from
:mod:`albic.testing.references`.
"""

from __future__ import annotations

import copy
import itertools
import json
import math
import pickle
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from albic.base import formats
from albic.base.errors import CheckFailed, PlannerBugError, UnsupportedSnapshotError
from albic.core.checks import within_budget
from albic.core.model import PlanStatus, Snapshot
from albic.core.plan import Plan
from albic.core.planner import Planner
from albic.io import plan_from_dict, snapshot_to_dict
from albic.testing.generators import balanced_for, replica_snapshot, small_snapshots, suite_snapshots
from albic.testing.references import brute_force_best, lexicographically_less, reference_objective

#: Every registered planner must plan at least this many of its scenarios (tests/test_conformance).
MIN_SCENARIOS = 8


# -- the suite ------------------------------------------------------------------------------------


class ConformanceReport(list):
    """What :func:`check_planner` ran: a list of the names of the checks that applied (so
    ``"exact" in report`` works), plus

    - ``scenarios``: every scenario's name mapped to ``"planned"`` or ``"declined: <reason>"``;
    - ``cases``: per check, on how many snapshots (or snapshot-and-budget pairs) it ran;
    - ``not_applicable``: the checks the planner's tags do not promise;
    - ``exact_reference``: what the exact check compared with (``None`` if it did not apply);
    - ``failures``: each failed check and why (:func:`run_checks`; :func:`check_planner` raises).
    """

    def __init__(self, planner: str, checks: list[str]) -> None:
        super().__init__(checks)
        self.planner = planner
        self.scenarios: dict[str, str] = {}
        self.cases: dict[str, int] = {}
        self.not_applicable: list[str] = []
        self.exact_reference: str | None = None
        self.failures: dict[str, str] = {}

    @property
    def scenarios_run(self) -> int:
        """How many scenarios the planner planned (declined ones excluded)."""
        return sum(1 for v in self.scenarios.values() if v == "planned")

    def skipped(self) -> list[str]:
        """Checks that applied but ran on zero cases (check_planner fails on any)."""
        return [name for name in self if self.cases.get(name, 0) == 0]

    def summary(self) -> str:
        ran = ", ".join(f"{name} {self.cases.get(name, 0)}" for name in self)
        return (
            f"{self.planner}: {self.scenarios_run}/{len(self.scenarios)} scenarios planned; "
            f"cases per check: {ran}"
        )


@dataclass
class _Run:
    """Plans of one planner on the suite's snapshots, shared by the checks."""

    planner: Planner
    seed: int
    snapshots: dict[str, Snapshot]
    plans: dict[str, Plan] = field(default_factory=dict)
    unsupported: dict[str, str] = field(default_factory=dict)
    exact_reference: str | None = None


def _fail(message: str) -> None:
    raise CheckFailed(message)


def _plan_or_fail(planner: Planner, snapshot: Snapshot, label: str) -> Plan | None:
    """The plan, ``None`` when the planner declines the snapshot, a check failure on a bug."""
    try:
        return planner.plan(snapshot)
    except UnsupportedSnapshotError:
        return None
    except PlannerBugError as err:
        _fail(f"on snapshot {label!r}: {err}")
    except Exception as err:  # any other exception on a valid snapshot is a bug too
        _fail(f"on snapshot {label!r}: raised {type(err).__name__}: {err}")
    return None  # unreachable


def _check_valid_plans(run: _Run) -> int:
    """Every supported snapshot gets a plan that keeps the contract (checked by check_plan)."""
    for label, snapshot in run.snapshots.items():
        try:
            plan = run.planner.plan(snapshot)
        except UnsupportedSnapshotError as err:
            if not str(err):
                _fail(f"on snapshot {label!r}: UnsupportedSnapshotError without a message")
            run.unsupported[label] = str(err)
            continue
        except PlannerBugError as err:
            _fail(f"on snapshot {label!r}: {err}")
        except Exception as err:
            _fail(f"on snapshot {label!r}: raised {type(err).__name__}: {err}")
        run.plans[label] = plan
    if not run.plans:
        _fail("the planner declined every snapshot of the suite: " + "; ".join(run.unsupported.values()))
    return len(run.plans)


def _fingerprint(snapshot: Snapshot) -> tuple[str, bytes]:
    return json.dumps(snapshot_to_dict(snapshot), sort_keys=True), pickle.dumps(snapshot)


def _check_no_mutation(run: _Run) -> int:
    """Planning leaves the snapshot exactly as it was."""
    # Fresh copies: the earlier checks may already have changed run.snapshots, and a planner that
    # changes a snapshot the same way twice would look innocent on a second look.
    count = 0
    for label, snapshot in suite_snapshots(run.seed, run.planner.tags()).items():
        if label not in run.plans:
            continue
        pristine = copy.deepcopy(snapshot)
        before = _fingerprint(snapshot)
        _plan_or_fail(run.planner, snapshot, label)
        if _fingerprint(snapshot) != before or snapshot != pristine:
            _fail(f"planning snapshot {label!r} changed it")
        count += 1
    return count


def _check_deterministic(run: _Run) -> int:
    """A fresh planner with the same parameters (and seed) gives the same plan again.

    The planner contract keeps a ``time_limit`` as a wall-clock promise in every mode: a
    deterministic planner's work budget decides what is done, and a wall-clock guard may stop it
    first on a slow or loaded machine, saying so with ``details["stopped_by"] == "wall clock"``.
    Such a plan is not promised to be reproducible, so a pair with one is not compared (and not
    counted: if every pair was cut by the clock, the check ran on zero cases and fails)."""
    compared = 0
    for label, plan in run.plans.items():
        again = _plan_or_fail(run.planner.clone(), run.snapshots[label], label)
        if again is not None and "wall clock" in (
            plan.details.get("stopped_by"),
            again.details.get("stopped_by"),
        ):
            continue
        if again is None or dict(again.assignment) != dict(plan.assignment) or again.status != plan.status:
            _fail(
                f"snapshot {label!r}: a second run of an identical planner gave another plan "
                "(tag the planner deterministic=False or give it a seed)"
            )
        compared += 1
    return compared


def _check_no_moves_when_balanced(run: _Run) -> int:
    """A perfectly balanced placement with no scaling is left alone."""
    plan = _plan_or_fail(run.planner, balanced_for(run.planner.tags()), "balanced")
    if plan is None:
        return 0
    if plan.moves:
        _fail(
            f"moved {formats.count(len(plan.moves), 'key group')} of an already balanced snapshot: {plan.moves[:3]}"
        )
    return 1


def _check_pickles(run: _Run) -> int:
    """Planner and plans survive pickling (Spark ships them to executors)."""
    try:
        clone = pickle.loads(pickle.dumps(run.planner))
    except Exception as err:
        _fail(f"the planner does not pickle: {type(err).__name__}: {err}")
    if clone.get_params() != run.planner.get_params():
        _fail("the unpickled planner has other parameters")
    for label, plan in run.plans.items():
        try:
            if pickle.loads(pickle.dumps(plan)) != plan:
                _fail(f"the plan of snapshot {label!r} changes when pickled")
        except CheckFailed:
            raise
        except Exception as err:
            _fail(f"the plan of snapshot {label!r} does not pickle: {type(err).__name__}: {err}")
    return len(run.plans)


def _check_json_round_trip(run: _Run) -> int:
    """Plans survive a JSON round trip exactly (plain Python types, no NaN)."""
    for label, plan in run.plans.items():
        try:
            back = plan_from_dict(json.loads(plan.to_json()))
        except Exception as err:
            _fail(f"the plan of snapshot {label!r} does not survive JSON: {type(err).__name__}: {err}")
        if back != plan:
            _fail(f"the plan of snapshot {label!r} changes in a JSON round trip")
    return len(run.plans)


def _budgeted_variants(snapshot: Snapshot) -> Iterator[dict[str, Any]]:
    sizes = sorted(kg.state_size for kg in snapshot.key_groups if kg.state_size > 0)
    yield {"max_moves": 0}
    yield {"max_moves": 1}
    yield {"max_moves": 3}
    yield {"max_migration_cost": 0.0}
    if sizes:
        yield {"max_migration_cost": sizes[0]}
        yield {"max_migration_cost": 0.25 * sum(sizes)}
    yield {"max_moves": 2, "max_migration_cost": sizes[len(sizes) // 2] if sizes else 0.0}


def _check_budgets(run: _Run) -> int:
    """Planners tagged ``budget`` never move more key groups or more state than allowed."""
    count = 0
    for label, snapshot in run.snapshots.items():
        if label not in run.plans:
            continue
        for budget in _budgeted_variants(snapshot):
            plan = _plan_or_fail(run.planner.clone(**budget), snapshot, f"{label} with {budget}")
            if plan is None:
                continue
            count += 1
            cost = math.fsum(m.cost for m in plan.moves)
            over_cost = not within_budget(cost, budget.get("max_migration_cost"))
            if len(plan.moves) > budget.get("max_moves", math.inf) or over_cost:
                _fail(
                    f"snapshot {label!r} with {budget}: {formats.count(len(plan.moves), 'move')} costing {cost:g}"
                )
    return count


def _exact_cases(run: _Run) -> Iterator[tuple[Planner, Snapshot, str]]:
    """The planner on every small snapshot; a budgeted planner also with tight budgets on some."""
    planner = run.planner
    small = small_snapshots(tags=planner.tags())
    for snapshot in small:
        yield planner, snapshot, str(snapshot.period)
    if planner.tags().budget:
        for snapshot in small[:6]:
            sizes = sorted(kg.state_size for kg in snapshot.key_groups)
            for budget in (
                {"max_moves": 1},
                {"max_migration_cost": sizes[len(sizes) // 2] if sizes else 0.0},
            ):
                yield planner.clone(**budget), snapshot, f"{snapshot.period} with {budget}"
        # Scale-in under one move: draining has to choose which load leaves first.
        for snapshot in small[6:]:
            arrays = snapshot.arrays()
            if bool(arrays.removing[arrays.current].any()):
                yield planner.clone(max_moves=1), snapshot, f"{snapshot.period} with {{'max_moves': 1}}"


def _check_exact(run: _Run) -> int:
    """Planners tagged ``exact`` reach the brute-force optimum of the suite's reference objective."""
    count = 0
    for planner, snapshot, label in _exact_cases(run):
        plan = _plan_or_fail(planner, snapshot, label)
        if plan is None:
            continue
        count += 1
        objective, run.exact_reference = reference_objective(planner)
        best, witness = brute_force_best(snapshot, objective)
        if best is None:
            if plan.status is not PlanStatus.INFEASIBLE:
                _fail(f"snapshot {label!r}: brute force finds no feasible plan, status {plan.status}")
            continue
        value = objective(snapshot, plan.assignment)
        if value is None:
            _fail(
                f"snapshot {label!r}: the plan breaks the model's constraints ({run.exact_reference} "
                f"says infeasible); brute force finds {best} with {witness}"
            )
        if plan.status is not PlanStatus.OPTIMAL or lexicographically_less(best, tuple(value)):
            _fail(
                f"snapshot {label!r}: plan has status {plan.status} and objective {value}, "
                f"brute force finds {best} with {witness}"
            )
    return count


def _check_interval(run: _Run) -> int:
    """Planners tagged ``interval`` give each node a contiguous index range per operator."""
    for label, plan in run.plans.items():
        snapshot = run.snapshots[label]
        by_operator: dict[str, list[tuple[int, str]]] = {}
        for kg in snapshot.key_groups:
            if kg.index is not None:
                by_operator.setdefault(kg.operator, []).append((kg.index, plan.assignment[kg.id]))
        for operator, entries in by_operator.items():
            runs = [node for node, _ in itertools.groupby(n for _, n in sorted(entries))]
            if len(runs) != len(set(runs)):
                _fail(f"snapshot {label!r}, operator {operator!r}: node runs {runs} are not contiguous")
    return len(run.plans)


def _check_queueing(run: _Run) -> int:
    """Planners tagged ``queueing`` report ``details["cores"]`` (``{executor: {node: cores}}``)
    that fit: no node gives more cores than it has, a removing node none, and every executor gets
    more service than its arrivals (``cores * service_rate > arrival_rate``: a stable queue); a
    plan is INFEASIBLE only when the active cores cannot keep every executor stable, i.e. when
    ``sum(floor(arrival / service) + 1)`` exceeds them."""
    count = 0
    for label, plan in run.plans.items():
        snapshot = run.snapshots[label]
        nodes = {n.id: n for n in snapshot.nodes}
        available = sum(n.cores for n in snapshot.nodes if not n.removing)
        needed = sum(math.floor(kg.arrival_rate / kg.service_rate) + 1 for kg in snapshot.key_groups)
        count += 1
        if plan.status is PlanStatus.INFEASIBLE:
            if needed <= available:
                _fail(
                    f"snapshot {label!r}: INFEASIBLE, but the executors need {needed} cores to be "
                    f"stable and the active nodes have {available}"
                )
            continue
        cores = plan.details.get("cores")
        if not isinstance(cores, Mapping):
            _fail(
                f"snapshot {label!r}: details['cores'] is {cores!r}, expected {{executor: {{node: cores}}}}"
            )
        given = {n: 0 for n in nodes}
        for kg in snapshot.key_groups:
            row = cores.get(kg.id, {})
            for node, k in row.items():
                if node not in nodes:
                    _fail(f"snapshot {label!r}: executor {kg.id!r} has cores on unknown node {node!r}")
                given[node] += k
            if sum(row.values()) * kg.service_rate <= kg.arrival_rate:
                _fail(
                    f"snapshot {label!r}: executor {kg.id!r} gets {sum(row.values())} cores of "
                    f"{kg.service_rate:g}/s for {kg.arrival_rate:g}/s arriving: an unstable queue"
                )
        for node, k in given.items():
            limit = 0 if nodes[node].removing else nodes[node].cores
            if k > limit:
                _fail(
                    f"snapshot {label!r}: node {node!r} gives {k} cores, it has {limit}"
                    + (" (removing)" if nodes[node].removing else "")
                )
    return count


# name -> (check, which tag promises it; None: every planner)
def _check_spread(run: _Run) -> int:
    """Planners tagged ``spread`` plan replica snapshots (:func:`replica_snapshot`: scale-in,
    scale-out, under budgets when tagged ``budget``) and never put two key groups of one spread
    value on one node, counted here without the model's own checks."""
    rng = np.random.default_rng(run.seed + 104729)
    count = 0
    for i in range(4):
        snapshot = replica_snapshot(
            rng, n_nodes=5 + i % 2, removing=i % 2, new_nodes=(i + 1) % 2, period=f"replicas{i}"
        )
        budgets = [{}, {"max_moves": 2}] if run.planner.tags().budget else [{}]
        for budget in budgets:
            label = f"replicas{i}" + (f" with {budget}" if budget else "")
            plan = _plan_or_fail(run.planner.clone(**budget), snapshot, label)
            if plan is None:
                _fail(f"snapshot {label!r}: declined, but the planner is tagged spread")
            held: dict[tuple[Any, str], str] = {}
            for kg in snapshot.key_groups:
                key = (kg.spread, plan.assignment[kg.id])
                if key in held:
                    _fail(
                        f"snapshot {label!r}: {held[key]!r} and {kg.id!r} of spread {kg.spread!r} "
                        f"both on node {key[1]!r}"
                    )
                held[key] = kg.id
            count += 1
    return count


_CHECKS: dict[str, tuple[Callable[[_Run], int], str | None]] = {
    "valid_plans": (_check_valid_plans, None),
    "no_mutation": (_check_no_mutation, None),
    "deterministic": (_check_deterministic, "deterministic"),
    "no_moves_when_balanced": (_check_no_moves_when_balanced, None),
    "pickles": (_check_pickles, None),
    "json_round_trip": (_check_json_round_trip, None),
    "budgets": (_check_budgets, "budget"),
    "exact": (_check_exact, "exact"),
    "interval": (_check_interval, "interval"),
    "queueing": (_check_queueing, "queueing"),
    "spread": (_check_spread, "spread"),
}


def planner_checks(planner: Planner) -> list[str]:
    """The names of the checks that apply to ``planner`` (the general ones and those its tags
    promise), in the order the suite runs them.

    >>> from albic import get_planner
    >>> planner_checks(get_planner("ssm"))[:3], "exact" in planner_checks(get_planner("flux"))
    (['valid_plans', 'no_mutation', 'deterministic'], False)
    """
    tags = planner.tags()
    return [name for name, (_, tag) in _CHECKS.items() if tag is None or getattr(tags, tag)]


def run_checks(planner: Planner, *, seed: int = 0, checks: Sequence[str] | None = None) -> ConformanceReport:
    """Run the suite on ``planner`` and return its report without raising: ``report.failures``
    maps each failed check to why. :func:`check_planner` is this plus the raise; a test suite
    that reports one result per planner and check (as scikit-learn's ``parametrize_with_checks``)
    runs this once per planner and asserts per check (``tests/test_conformance.py``)."""
    if not isinstance(planner, Planner):
        raise TypeError(f"check_planner takes a Planner instance, got {type(planner).__name__}")
    unknown = sorted(set(checks or ()) - set(_CHECKS))
    if unknown:
        raise ValueError(f"unknown conformance checks {unknown}; the checks: {list(_CHECKS)}")
    run = _Run(planner, seed, suite_snapshots(seed, planner.tags()))
    applies = [
        name for name in planner_checks(planner) if checks is None or name == "valid_plans" or name in checks
    ]
    report = ConformanceReport(getattr(planner, "name", type(planner).__name__), applies)
    report.not_applicable = [name for name in _CHECKS if name not in applies]
    for name in applies:
        if name != "valid_plans" and not run.plans:
            break  # nothing to check further; valid_plans already failed
        try:
            report.cases[name] = _CHECKS[name][0](run)
            if report.cases[name] == 0:
                _fail(
                    "ran on zero cases: the planner declined every snapshot this check needs "
                    f"({'; '.join(sorted(set(run.unsupported.values()))) or 'none declined'})"
                )
        except CheckFailed as err:
            report.failures[name] = str(err)
    report.scenarios = {
        label: "planned" if label in run.plans else f"declined: {run.unsupported.get(label, '?')}"
        for label in run.snapshots
    }
    report.exact_reference = run.exact_reference
    return report


def check_planner(
    planner: Planner, *, seed: int = 0, checks: Sequence[str] | None = None
) -> ConformanceReport:
    """Run the conformance suite on ``planner``; return a :class:`ConformanceReport`.

    Raises one ``AssertionError`` naming every failed check and why. The checks: valid plans on
    every scenario of :func:`suite_snapshots` for the planner's tags (or a clear
    ``UnsupportedSnapshotError``), no mutation of the snapshot, no moves on a balanced snapshot,
    pickling, exact JSON round trip, and by tag: determinism (``deterministic``), budgets
    (``budget``), brute-force optimality under the reference objective (``exact``), contiguous
    intervals (``interval``), cores that fit (``queueing``), replicas on distinct nodes
    (``spread``). A check that applies and ran on zero cases fails. ``checks`` runs only the
    named checks (``valid_plans`` always runs: the others need its plans), e.g. to test one check
    quickly.
    """
    report = run_checks(planner, seed=seed, checks=checks)
    if report.failures:
        listed = "\n".join(f"  - {name}: {why}" for name, why in report.failures.items())
        raise AssertionError(
            f"{planner!r} fails {formats.count(len(report.failures), 'conformance check')}:\n{listed}"
        )
    return report
