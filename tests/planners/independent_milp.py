"""An independent CP-SAT model of ALBIC's MILP objective, written from the paper's definition
(section 4.3.1 and the levels of ``albic.planners.milp_items``), sharing no code with the planner: OR-Tools'
own modelling API, every level solved in turn and fixed at its optimum.

Used by tests/planners/test_milp_optimal.py to check that ``milp`` says OPTIMAL wherever this
model proves the optimum within the planner's time limit, and that the optimum is the same.
"""

from __future__ import annotations

import math

from ortools.sat.python import cp_model

from albic.core.model import Snapshot


def _quantum_scale(loads: list[float]) -> int | None:
    """The smallest whole ``s`` up to 10**6 with every ``load * s`` whole (None: there is none)."""
    for s in (1, 2, 4, 10, 60, 100, 360, 1000, 3600, 7200, 36000, 86400, 10**6):
        if all(abs(x * s - round(x * s)) <= 1e-6 for x in loads):
            return s
    return None


def optimum(snapshot: Snapshot, max_moves: int | None, dtime_limit: float):
    """``(levels, dtime)``: the optimal objective levels (max_deviation, load_on_removing,
    key_groups_on_removing, one_sided_deviations, state_moved) in the snapshot's units, or None
    when a level was not proven within ``dtime_limit`` of CP-SAT's deterministic time in all (the
    same on every machine, loaded or not); and the deterministic time spent."""
    used = 0.0
    kgs = snapshot.key_groups
    nodes = snapshot.nodes
    if any(n.capacity != 1.0 for n in nodes) or any(kg.spread is not None for kg in kgs):
        raise ValueError("this reference covers nodes of capacity 1 without spread")
    scale = _quantum_scale([kg.load for kg in kgs])
    if scale is None:
        raise ValueError("loads are not whole multiples of a simple quantum")
    active = [i for i, n in enumerate(nodes) if not n.removing]
    n_active = len(active)
    node_index = {n.id: i for i, n in enumerate(nodes)}
    cur = [node_index[snapshot.assignment[kg.id]] for kg in kgs]
    w = [round(kg.load * scale) for kg in kgs]
    total = sum(w)
    state = [round(kg.state_size) for kg in kgs]
    if any(abs(kg.state_size - s) > 1e-9 for kg, s in zip(kgs, state)):
        raise ValueError("state sizes must be whole numbers here")

    model = cp_model.CpModel()
    x = {}
    for k in range(len(kgs)):
        for i in range(len(nodes)):
            if i in active or i == cur[k]:
                x[k, i] = model.new_bool_var(f"x{k}_{i}")
        model.add_exactly_one(x[k, i] for i in range(len(nodes)) if (k, i) in x)
    big = n_active * total + total + 1
    # n_active * load_i - total = n_active * (u_i - mean) in units of 1 / scale.
    dev = {}
    for i in range(len(nodes)):
        dev[i] = model.new_int_var(-big, big, f"dev{i}")
        model.add(dev[i] == n_active * sum(w[k] * x[k, i] for k in range(len(kgs)) if (k, i) in x) - total)
    d = model.new_int_var(0, big, "d")
    for i in range(len(nodes)):
        model.add(d >= dev[i])
        if i in active:
            model.add(d >= -dev[i])
    moved = [1 - x[k, cur[k]] for k in range(len(kgs))]
    if max_moves is not None:
        model.add(sum(moved) <= max_moves)
    removing = [i for i in range(len(nodes)) if i not in active]
    left_load = sum(w[k] * x[k, i] for k in range(len(kgs)) for i in removing if (k, i) in x)
    left_count = sum(x[k, i] for k in range(len(kgs)) for i in removing if (k, i) in x)
    top = model.new_int_var(-big, big, "top")
    low = model.new_int_var(-big, big, "low")
    for i in range(len(nodes)):
        model.add(top >= dev[i])
    for i in active:
        model.add(low >= -dev[i])
    levels = [d, left_load, left_count, top + low, sum(state[k] * moved[k] for k in range(len(kgs)))]
    values = []
    for expr in levels:
        left = dtime_limit - used
        if left <= 0:
            return None, used
        model.minimize(expr)
        solver = cp_model.CpSolver()
        solver.parameters.max_deterministic_time = left
        solver.parameters.num_workers = 1
        status = solver.solve(model)
        used += solver.response_proto.deterministic_time
        if status != cp_model.OPTIMAL:
            return None, used
        best = round(solver.objective_value)
        values.append(best)
        model.add(expr == best)
        model.clear_hints()
        for var in x.values():
            model.add_hint(var, solver.boolean_value(var))
    unit = n_active * scale  # dev units per unit of utilisation
    levels_out = (
        values[0] / unit,
        values[1] / scale,
        float(values[2]),
        values[3] / unit,
        float(values[4]),
    )
    assert all(math.isfinite(v) for v in levels_out)
    return levels_out, used
