"""The independent model's answers (tests/planners/independent_milp.py) for the cases of
tests/planners/test_milp_optimal.py, kept in ``recorded_optima.json``: proving them again on every
run took 15 of the suite's CPU seconds, for the same answers.

A case is looked up by a fingerprint of everything its answer depends on: the snapshot's document,
the budget, the deterministic-time limit, the model's source and OR-Tools' version (CP-SAT's
deterministic time is the same on every machine, not across versions). A case not found is solved
by the model there and then, so a changed case is never answered from an old record; run the tests
with ``ALBIC_RECORD_OPTIMA=1`` to record the new answers (one worker: ``-n 0``).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import ortools
from independent_milp import optimum

from albic.core.codec import snapshot_to_dict
from albic.core.model import Snapshot

RECORD = Path(__file__).with_name("recorded_optima.json")
MODEL = Path(__file__).with_name("independent_milp.py")


def fingerprint(snapshot: Snapshot, max_moves: int | None, dtime_limit: float, model: str) -> str:
    """The case's key; ``model`` is the sha256 of the model's source."""
    case = [snapshot_to_dict(snapshot), max_moves, dtime_limit, model, ortools.__version__]
    return hashlib.sha256(json.dumps(case, sort_keys=True).encode()).hexdigest()


class RecordedOptima:
    """``optimum(snapshot, max_moves, dtime_limit)`` of the independent model, from the record
    where it has the case; ``solved`` counts the cases the model had to solve."""

    def __init__(self) -> None:
        self.table = json.loads(RECORD.read_text()) if RECORD.exists() else {}
        self.model = hashlib.sha256(MODEL.read_bytes()).hexdigest()
        self.solved = 0

    def __call__(self, snapshot: Snapshot, max_moves: int | None, dtime_limit: float):
        key = fingerprint(snapshot, max_moves, dtime_limit, self.model)
        if key not in self.table:
            levels, dtime = optimum(snapshot, max_moves, dtime_limit)
            self.table[key] = [None if levels is None else list(levels), dtime]
            self.solved += 1
            if os.environ.get("ALBIC_RECORD_OPTIMA") == "1":
                RECORD.write_text(json.dumps(self.table, indent=0, sort_keys=True) + "\n")
        levels, dtime = self.table[key]
        return (None if levels is None else tuple(levels)), dtime
