"""What a ``time_limit`` buys: the one place where the searches of ``milp`` and ``albic`` turn what
they do into the limit's unit, and the budget that keeps the account (:class:`Budget`, with its
shares and parts: no other class keeps a time or work share).

**Deterministic mode** (``deterministic=True``, the default, with the CP-SAT backend): no decision
reads a clock. ``time_limit`` is a budget of *work units*, and every step of a search is charged by
what it does, counted, never timed:

=====================================  ============================================================
what                                   charge (work units)
=====================================  ============================================================
a CP-SAT solve                         its deterministic time / ``CPSAT_DTIME_PER_UNIT``, plus
                                       ``SOLVE_WORK`` for the call (set-up CP-SAT does not count)
building a model                       ``BUILD_WORK_PER_VARIABLE`` per variable
a polish step (planners/local_search)  ``POLISH_WORK_PER_STEP`` plus ``POLISH_WORK_PER_CANDIDATE``
                                       per move or swap it evaluates
a levelling step                       ``LEVEL_WORK_PER_STEP``
a branch of the move fit               ``FIT_WORK_PER_STEP`` (planners/move_fit.py), and as much
                                       for each node of its search
a collocating swap's candidate         ``SWAP_WORK_PER_CANDIDATE`` per (key group, node) examined,
(planners/collocation)                 ``SWAP_WORK_PER_PARTNER`` per swap partner scored
an attempt of Algorithm 2 (albic)      ``ATTEMPT_WORK_PER_KEY_GROUP`` per key group (units, METIS,
                                       pins, its starts), besides its swaps and solves
=====================================  ============================================================

The charges are calibrated so that one unit is about one second of one core of the reference
machine (the project's 2-core VM, idle; each figure is a median of its step measured there, with a
margin where a step varies). They are a unit's definition, not a search's tuning: changing one
changes what a given ``time_limit`` buys, as a faster machine would, never the search itself. The
same snapshot and parameters give the same plan on any machine and under any load; a slower or
busier machine takes longer to make it (``plan.seconds``), and ``plan.details["work"]`` is what
the plan charged. CP-SAT runs with one worker and only its deterministic-time limit, so it is
reproducible too.

**Wall-clock mode** (``deterministic=False``, and any backend but CP-SAT, whose limits are wall
seconds): ``time_limit`` is seconds of the wall clock, counted from the ``plan()`` call, and a
promise: the search aims at the limit and a guard in the slack after it stops whatever runs, so
that ``plan()`` returns within ``TIME_LIMIT_FACTOR x time_limit + TIME_LIMIT_SLACK`` seconds.

**The safety net** (parameter ``wall_clock_limit``, off by default): wall-clock seconds after which
the search stops in either mode, for a controller that must have a plan by then even on an
overloaded machine. A deterministic plan it stopped says so: ``details["stopped_by"] == "wall
clock"`` and ``details["deterministic"] is False`` (and so does its row of a replay).

``stopped_by`` names the limit that ended a search: ``"done"`` (it ran out of things to try, or
proved its plan), ``"work budget"`` (deterministic mode), ``"time limit"`` (wall-clock mode) or
``"wall clock"`` (the safety net, in deterministic mode). Once the wall clock has cut a search the
plan keeps saying so: later limits do not overwrite it.
"""

from __future__ import annotations

import math
import time

__all__ = [
    "Budget",
    "cpsat_time",
    "solve_work",
    "CPSAT_DTIME_PER_UNIT",
    "SOLVE_WORK",
    "BUILD_WORK_PER_VARIABLE",
    "BUILD_ESTIMATE_PER_VARIABLE",
    "BUILD_WORK_ALWAYS",
    "POLISH_WORK_PER_CANDIDATE",
    "POLISH_WORK_PER_STEP",
    "LEVEL_WORK_PER_STEP",
    "FIT_WORK_PER_STEP",
    "SWAP_WORK_PER_CANDIDATE",
    "SWAP_WORK_PER_PARTNER",
    "ATTEMPT_WORK_PER_KEY_GROUP",
    "TIME_LIMIT_FACTOR",
    "TIME_LIMIT_SLACK",
    "FINISH_SECONDS_PER_KEY_GROUP",
    "DONE",
    "WORK_BUDGET",
    "TIME_LIMIT",
    "WALL_CLOCK",
]

# Each charge with the data it was measured on. "The calibration" below is `python -m benchmarks
# search-constants --full` (benchmarks/search_constants.py): each step run alone on its 24 cases
# (the flights weeks from 2013-02-03 and 2013-07-07 and the words trace's first week, hours 13 and
# 109, 32 and 128 key groups per operator, 5 and 20 moves), the wall seconds per work unit it was
# charged, median (worst): at most about 1 is a unit that holds. Measured with the machine's 2
# cores at a load average of 3.4, so the figures are higher than on an idle machine.

# CP-SAT's deterministic time is not a second: on the demo's whole models (1,800-2,000
# variables) one of its units took 1.1-2.1 s of one core here, and a call costs ~10 ms it does not
# count. So a work unit buys 0.4 of its units, and a call is charged 0.01. The calibration
# (phase 1 of the whole model): 0.38 (0.48) s per unit.
CPSAT_DTIME_PER_UNIT = 0.4
SOLVE_WORK = 0.01
DTIME_DIGITS = 6
# Models are built as arrays (solvers/milp.py): 1.7-2.7 microseconds per variable from 2,000 to
# 100,000 variables (the model and CP-SAT's proto), with a margin. Building cannot be interrupted,
# so a model is built only when its cost by a larger estimate, which covers CP-SAT's presolve
# too (2 nodes x 20,000 key groups: ~1 s), is at most half the budget left, or at most
# BUILD_WORK_ALWAYS. The calibration (the whole model, every item free): 0.11 (0.58) s per unit.
BUILD_WORK_PER_VARIABLE = 5e-6
BUILD_ESTIMATE_PER_VARIABLE = 1e-4
BUILD_WORK_ALWAYS = 0.5
# The polish (planners/local_search.py): ~0.2 microseconds per candidate evaluated with numpy, and
# ~0.2 ms per step for choosing them; a levelling step ~1 ms at 500 items per node. The
# calibration: the polish 1.22 (1.53) s per unit, the levelling 0.13 (0.17), both from the
# current placement.
POLISH_WORK_PER_CANDIDATE = 2e-7
POLISH_WORK_PER_STEP = 2e-4
LEVEL_WORK_PER_STEP = 1e-3
# The move fit (planners/move_fit.py): 1.2-3.1 microseconds (5th-95th percentile, median 1.8) per
# node of its search or branch it considers, measured over the 190 flights cases of `benchmarks
# milp --full`, idle machine. The calibration: 2.5 (4.0) microseconds per step.
FIT_WORK_PER_STEP = 3e-6
# Collocating swaps (planners/collocation.py): a (key group, node) candidate re-checked ~15
# microseconds, a swap partner scored ~12 microseconds (one sparse row each). The calibration
# (from the current placement, every key group movable): 1.72 (2.02) s per unit.
SWAP_WORK_PER_CANDIDATE = 2e-5
SWAP_WORK_PER_PARTNER = 1.5e-5
# An attempt of Algorithm 2 besides its swaps and solves (units, METIS, pins, the attempt's
# starts and polish set-up): ~0.03 s for the demo's 256 key groups. Not timed alone by the
# calibration; its whole plans take 0.45 (0.72) s per unit of details["work"] for milp at
# time_limit=1 and 0.54 (0.62) for albic at 0.25.
ATTEMPT_WORK_PER_KEY_GROUP = 1.2e-4

# The planner contract's rule for a wall-clock time limit: plan() returns within
# TIME_LIMIT_FACTOR x time_limit + TIME_LIMIT_SLACK seconds.
TIME_LIMIT_FACTOR = 1.1
TIME_LIMIT_SLACK = 0.1
# Wall-clock guards only: the seconds per key group Planner.plan() spends after the search (moves,
# metrics, the validator), about 20 microseconds at 100,000 key groups, with a margin.
FINISH_SECONDS_PER_KEY_GROUP = 25e-6

DONE, WORK_BUDGET, TIME_LIMIT, WALL_CLOCK = "done", "work budget", "time limit", "wall clock"


def cpsat_time(units: float) -> float:
    """CP-SAT's deterministic time that ``units`` of work buy."""
    return units * CPSAT_DTIME_PER_UNIT


def solve_work(deterministic_time: float) -> float:
    """The work units a CP-SAT call that took ``deterministic_time`` is charged. CP-SAT reports the
    same solve's deterministic time differently in the last bits from run to run (0.009074725000000047
    and ...046): rounded to a millionth, the noise no longer reaches the sums the searches decide on."""
    return round(deterministic_time, DTIME_DIGITS) / CPSAT_DTIME_PER_UNIT + SOLVE_WORK


class Budget:
    """What a search may spend and what it spent: the one account of ``time_limit``'s unit.

    ``limit`` is work units when ``deterministic`` (counted by what the search does, never timed)
    and wall-clock seconds counted from ``started`` (default: now) otherwise; None: no limit.
    ``deadline`` is a wall-clock ``time.perf_counter()`` to stop by (None: none): the safety net in
    deterministic mode, the time limit's guard in wall-clock mode. In deterministic mode without a
    deadline no method reads a clock. ``work`` sums the work charged (it is what the limit counts
    in deterministic mode; in wall-clock mode only what the steps did); ``stopped_by`` records
    which limit ended the search (module docstring).

    Two kinds of sub-budget, each a :class:`Budget`:

    - :meth:`share`: a phase of this budget's search (the move fit, the polish) that may take
      ``amount`` of what is left of this budget's own limit. What it spends is spent here as it
      goes, this budget's limits end it too, and its end ends the phase, not the search: it
      records no stop of its own.
    - :meth:`part`: a search of its own within this one (ALBIC's witness, its attempts and swaps),
      given ``limit`` of this budget's unit and counted apart; :meth:`settle` charges here what it
      spent and the limit that stopped it.

    >>> budget = Budget(1.0, deterministic=True)
    >>> fit = budget.share(0.25)
    >>> fit.spend(0.2), fit.spend(0.1), round(budget.own_left(), 9), budget.stopped_by
    (True, False, 0.7, 'done')
    >>> swaps = budget.part(0.5)
    >>> swaps.spend(0.6), swaps.stopped_by
    (False, 'work budget')
    >>> budget.settle(swaps)
    >>> round(budget.own_left(), 9), budget.stopped_by
    (0.1, 'work budget')
    """

    def __init__(
        self,
        limit: float | None,
        deterministic: bool,
        deadline: float | None = None,
        started: float | None = None,
    ) -> None:
        self.limit = limit
        self.deterministic = deterministic
        self.deadline = deadline
        self.work = 0.0
        self._stopped_by = DONE
        self.start = None if deterministic else (time.perf_counter() if started is None else started)
        # A share's: the budget it is spent from, what of that one's own limit is kept when the
        # share ends (None: that one has no limit, so the share counts from its own start), and
        # the most work it may do whatever the mode (None: no such cap).
        self._parent: Budget | None = None
        self._keep: float | None = None
        self._most_work: float | None = None

    @property
    def stopped_by(self) -> str:
        """The limit that ended the search (a share's is its search's)."""
        return self._stopped_by if self._parent is None else self._parent.stopped_by

    @property
    def limit_stop(self) -> str:
        """What ``stopped_by`` says when this budget's own limit ends the search."""
        return WORK_BUDGET if self.deterministic else TIME_LIMIT

    @property
    def wall_stop(self) -> str:
        """What ``stopped_by`` says when the deadline ends the search."""
        return WALL_CLOCK if self.deterministic else TIME_LIMIT

    def own_left(self) -> float:
        """What is left of ``limit`` (work units or seconds); a share's is measured on its parent's,
        so that it ends exactly where its parent has the rest left."""
        if self._keep is not None:
            return self._parent.own_left() - self._keep
        if self.limit is None:
            return math.inf
        used = self.work if self.deterministic else time.perf_counter() - self.start
        return self.limit - used

    def wall_left(self) -> float:
        """Seconds left before the deadline (infinite without one; no clock read then)."""
        return math.inf if self.deadline is None else self.deadline - time.perf_counter()

    def left(self) -> float:
        return min(self.own_left(), self.wall_left())

    def stop(self, by: str) -> None:
        """Record that limit ``by`` ended (part of) the search; a wall-clock cut is never hidden."""
        if self._parent is not None:
            self._parent.stop(by)
        elif self._stopped_by != WALL_CLOCK:
            self._stopped_by = by

    def proven(self) -> None:
        """The search proved its plan: whatever the limits did, the plan is the same."""
        if self._parent is not None:
            self._parent.proven()
        else:
            self._stopped_by = DONE

    def out_of_time(self, reserve: float = 0.0) -> bool:
        """Whether less than ``reserve`` is left; records which limit ran out (a share's own end
        is not recorded: it ends a phase, not the search)."""
        if self._parent is not None:
            return self._parent.out_of_time(reserve) or self._share_ended(reserve)
        own, wall = self.own_left(), self.wall_left()
        if wall <= reserve and (wall < own or not self.deterministic):
            self.stop(self.wall_stop)
            return True
        if own <= reserve:
            self.stop(self.limit_stop)
            return True
        return False

    def charge(self, work: float) -> None:
        """Count ``work`` done (a solve's, after it ran), here and in the budget a share is spent from."""
        self.work += work
        if self._parent is not None:
            self._parent.charge(work)

    def spend(self, work: float) -> bool:
        """Charge ``work`` a step did; whether to go on."""
        self.charge(work)
        return not self.out_of_time()

    def affordable(self, estimate: float) -> bool:
        """Whether a step that cannot be interrupted, estimated at ``estimate`` units (seconds in
        wall-clock mode), may start: at most ``BUILD_WORK_ALWAYS``, or at most half of what is
        left (the limit that decided is recorded)."""
        if estimate <= BUILD_WORK_ALWAYS:
            return True
        own, wall = self.own_left(), self.wall_left()
        if estimate > wall / 2 and (wall < own or not self.deterministic):
            self.stop(self.wall_stop)
            return False
        if estimate > own / 2:
            self.stop(self.limit_stop)
            return False
        return True

    def share(self, amount: float, *, most_work: float | None = None) -> Budget:
        """A phase of this budget's search that may take ``amount`` (this budget's unit) of what
        is left of its own limit, from now, and at most ``most_work`` work units whatever the mode
        (a cap on what the phase does, such as the memory of its search, not on its time: in
        deterministic mode the two are one unit and the lesser counts)."""
        if most_work is not None and self.deterministic:
            amount, most_work = min(amount, most_work), None
        child = Budget(amount, self.deterministic, self.deadline)
        child._parent = self
        own = self.own_left()
        child._keep = own - amount if math.isfinite(own) else None
        child._most_work = most_work
        return child

    def _share_ended(self, reserve: float) -> bool:
        if self._most_work is not None and self.work >= self._most_work:
            return True
        return self.own_left() <= reserve

    def part(self, limit: float | None, *, firm: bool = False) -> Budget:
        """A search of its own within this one: ``limit`` in this budget's unit (None: none), counted
        apart from now, under this budget's deadline; ``firm``: in wall-clock mode its limit is a
        deadline too (nothing changes in deterministic mode, which reads no clock for it).
        :meth:`settle` charges it here when it is done."""
        deadline = self.deadline
        if firm and limit is not None and not self.deterministic:
            end = time.perf_counter() + limit
            deadline = end if deadline is None else min(deadline, end)
        return Budget(limit, self.deterministic, deadline)

    def settle(self, part: Budget) -> None:
        """Charge here the work of ``part`` (done) and the limit that stopped it, if any."""
        self.charge(part.work)
        if part.stopped_by != DONE:
            self.stop(part.stopped_by)
