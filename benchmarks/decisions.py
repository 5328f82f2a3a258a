"""Decisions that pay: ``albic recommend`` judged on the periods it did not choose on.

For each statistics folder (by default three built here: the flights week of 2013-06-16 on the
default scaling cluster of 4 to 8 nodes, 32 key groups per operator; words, 7 days on 8 nodes;
the zipf trace, 7 days on 8 nodes with 64 key groups per operator; ``--stats DIR`` adds others),
the recommendation chosen on the first 60 % of the periods, and on the last 40 %:

- its mean load distance, against the reference's (the engine's own split) and against the best
  of the plain comparison (milp and flux at 5 and 20 moves with ``previous`` and ``always``): the
  issue asks for at most 1 point worse than either;
- its moves, against that plain comparison's.

For the zipf trace, whose true rates are generated, it also replays **milp planned on the true
rates** (each period's plan made from the rates the period's counts were drawn from: a perfect
forecast) at the recommendation's budget, with the same placement carried from period to period,
scored on the counted loads as every replay is: the recommendation's held-out moves should be at
most 1.5x that, at a mean load distance within 3 points of it.

The baseline of every figure is a replay of the same run, on the same statistics.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np

from albic.cli.main import main as albic_main
from albic.core import metrics
from albic.core.hashing import key_groups
from albic.core.model import Snapshot
from albic.core.planner import get_planner
from albic.evaluation.recommend import Recommendation, recommend
from albic.evaluation.replay import carried_snapshot
from albic.io import read_snapshots
from albic.io.datasets import default_placement, read_manifest

TRACES = {
    "flights 2013-06-16, 4:8 nodes": [
        "flights",
        "--start",
        "2013-06-16",
        "--days",
        "7",
        "--key-groups",
        "32",
    ],
    "words, 8 nodes": ["words", "--days", "7", "--key-groups", "32", "--node-counts", "8"],
    "zipf, 8 nodes": ["zipf", "--days", "7", "--key-groups", "64", "--node-counts", "8"],
}


def _statistics(folder: Path, argv: list[str]) -> Path:
    out = folder / argv[0]
    code = albic_main(["stats", *argv, "--engine", "pandas", "--out", str(out)])
    if code != 0:
        raise RuntimeError(f"albic stats {' '.join(argv)} failed")
    return out


def true_snapshots(stats: Path) -> list[Snapshot]:
    """The zipf statistics' periods with each key group's load replaced by its true rate (the
    events the period's counts were drawn from, times the same per-event load)."""
    from albic.stats.traces import zipf

    manifest = read_manifest(stats)
    snapshots = list(read_snapshots(stats))
    rates = zipf.true_rates(days=len(snapshots) // 24)
    items = rates.columns.to_numpy()
    groups = manifest["key_groups"]
    per_item = key_groups(items, int(groups["item"]))
    categories = np.array([f"c{int(i[1:]) % 16}" for i in items])
    per_category = key_groups(categories, int(groups["category"]))
    out = []
    for snapshot, (_, row) in zip(snapshots, rates.iterrows()):
        values = row.to_numpy()
        true = {f"item/{g}": 0.0 for g in range(int(groups["item"]))}
        true.update({f"category/{g}": 0.0 for g in range(int(groups["category"]))})
        for name, codes in (("item", per_item), ("category", per_category)):
            for g, v in zip(codes, values):
                true[f"{name}/{g}"] += v / 3600.0  # events an hour -> events a second, as load is
        kgs = [
            kg.__class__(**{**kg.__dict__, "load": true[kg.id], "load_error": 0.0})
            for kg in snapshot.key_groups
        ]
        out.append(
            Snapshot(
                snapshot.nodes,
                kgs,
                snapshot.assignment,
                snapshot.traffic,
                snapshot.operators,
                snapshot.period,
            )
        )
    return out


def replay_on_truth(counted: list[Snapshot], truth: list[Snapshot], budget: int, time_limit: float = 0.25):
    """milp at ``budget`` moves planned each period (the first too) on the period's true rates,
    the placement carried; per period its load distance on the counted loads and its moves."""
    planner = get_planner("milp", max_moves=budget, time_limit=time_limit)
    placement = default_placement(counted[0])
    rows = []
    for scored_stats, true_stats in zip(counted, truth):
        scored = carried_snapshot(scored_stats, placement)
        decision = carried_snapshot(true_stats, placement)
        plan = planner.plan(decision)
        after = metrics.node_of(decision, plan.assignment)
        rows.append((scored.period, metrics.load_distance_pct(scored, after), metrics.moves(scored, after)))
        placement = scored.arrays().assignment(after)
    return rows


def _budget(chosen: Recommendation) -> int:
    return int(chosen.parameters.get("max_moves") or 5)


def run(jobs: int | None = None, stats: list[str] | None = None) -> str:
    jobs = jobs or 2
    lines = [
        "| statistics | periods (train / held out) | recommended | held-out mean LD % | reference % | best plain % | "
        "moves (rec / best plain) | ok | seconds |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    truth_lines: list[str] = []
    with tempfile.TemporaryDirectory() as scratch:
        folders = {name: _statistics(Path(scratch), argv) for name, argv in TRACES.items()}
        folders.update({Path(s).name: Path(s) for s in stats or []})
        for name, folder in folders.items():
            started = time.perf_counter()
            chosen = recommend(folder, jobs=jobs, show_progress=False)
            took = time.perf_counter() - started
            held = chosen.held_out
            best = min(chosen.baselines, key=lambda b: b["mean_load_distance_pct"])
            ref = chosen.reference_held_out.get("mean_load_distance_pct")
            ok = held["mean_load_distance_pct"] <= best["mean_load_distance_pct"] + 1 and (
                ref is None or held["mean_load_distance_pct"] <= ref + 1
            )
            what = (
                "keep the engine's split"
                if chosen.keeps_engine_split
                else f"{chosen.spec}, {chosen.decide_on}, {chosen.trigger}"
            )
            lines.append(
                f"| {name} | {chosen.train['periods']} / {held['periods']} | {what} | "
                f"{held['mean_load_distance_pct']:.2f} | {ref if ref is None else f'{ref:.2f}'} | "
                f"{best['mean_load_distance_pct']:.2f} ({best['spec']}) | {held['total_moves']} / {best['total_moves']} | "
                f"{'yes' if ok else 'NO'} | {took:.0f} |"
            )
            if name.startswith("zipf"):
                truth_lines = _against_truth(folder, chosen)
    return "\n".join([*lines, "", *truth_lines])


def _against_truth(folder: Path, chosen: Recommendation) -> list[str]:
    counted = list(read_snapshots(folder))
    budget = _budget(chosen)
    rows = replay_on_truth(counted, true_snapshots(folder), budget)
    held = [r for r in rows if r[0] >= chosen.held_out["first"]]
    truth_ld = float(np.mean([r[1] for r in held]))
    truth_moves = int(sum(r[2] for r in held))
    rec = chosen.held_out
    ratio = rec["total_moves"] / truth_moves if truth_moves else float("inf")
    ok = ratio <= 1.5 and rec["mean_load_distance_pct"] <= truth_ld + 3
    return [
        f"zipf, held out: the recommendation {rec['mean_load_distance_pct']:.2f} % with {rec['total_moves']} moves; "
        f"milp at {budget} moves planned on the true rates {truth_ld:.2f} % with {truth_moves} moves "
        f"(moves {ratio:.2f}x, load distance {rec['mean_load_distance_pct'] - truth_ld:+.2f} points): "
        f"{'within' if ok else 'OUTSIDE'} 1.5x and 3 points"
    ]
