"""One plan as a figure (issue 25, item 7): Plan.plot() and `albic plot`, checked against the numbers
the figure must show (bar heights, the mean, the band, the marks of removing nodes, the title)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from albic.cli.main import main
from albic.core.model import KeyGroup, Move, Node, Snapshot, Traffic
from albic.core.plan import Plan
from albic.core.reasons import REASONS
from albic.io import write_plan, write_snapshot

# r is being removed; a is hot; b is cool. Loads: r 2, a 6 (x 4, y 2), b 1 -> mean 9 / 2 = 4.5.
SNAP = Snapshot(
    [Node("r", removing=True), Node("a"), Node("b", capacity=2.0)],
    [
        KeyGroup("d", "op", 2.0, 2048),
        KeyGroup("x", "op", 4.0, 4096),
        KeyGroup("y", "op", 2.0, 1024),
        KeyGroup("v", "op", 1.0, 512),
    ],
    {"d": "r", "x": "a", "y": "a", "v": "b"},
    traffic=[Traffic("y", "v", 3.0)],
)
# d drains to a, y joins v on b (collocate): r 0, a 6, b 3 (capacity 2: utilisation 1.5).
PLAN = Plan(
    "by-hand",
    "FEASIBLE",
    {"d": "a", "x": "a", "y": "b", "v": "b"},
    moves=(Move("d", "r", "a", 2048.0), Move("y", "a", "b", 1024.0)),
    metrics={"max_moves": 4, "max_load_distance": 20.0},
)


def band_of(axes):
    handles, labels = axes.get_legend_handles_labels()
    band = handles[next(i for i, label in enumerate(labels) if label.startswith("target band"))]
    ys = band.get_path().transformed(band.get_patch_transform()).vertices[:, 1]
    return float(ys.min()), float(ys.max()), labels


def test_the_figure_shows_what_the_plan_did():
    figure = PLAN.plot(SNAP)
    bars, listing = figure.axes
    before, after = (np.array([p.get_height() for p in c]) for c in bars.containers)
    # Utilisation = load / capacity, per node in snapshot order: r, a, b.
    assert before.tolist() == [2.0, 6.0, 0.5] and after.tolist() == [0.0, 6.0, 1.5]
    mean = 9.0 / 3.0  # the active nodes' capacity is 1 + 2
    line = next(ln for ln in bars.lines if ln.get_label().startswith("mean utilisation"))
    assert line.get_ydata()[0] == pytest.approx(mean)
    low, high, labels = band_of(bars)  # the plan's own max_load_distance: 20% of the mean
    assert (low, high) == pytest.approx((0.8 * mean, 1.2 * mean))
    assert "target band: mean \u00b1 20% of the mean" in labels
    ticks = [t.get_text() for t in bars.get_xticklabels()]
    assert ticks == ["r\n(removing)", "a", "b"]
    # a ends above the band: its after bar is drawn in the "hot" colour, r's in red, b's normal.
    colours = [p.get_facecolor() for p in bars.containers[1]]
    assert colours[0] != colours[1] != colours[2]
    title = figure.get_suptitle()
    # 3 KiB of 7.5 KiB; a stays 3 above the mean of 3 before and after: 100% of the mean.
    assert title == (
        "by-hand (FEASIBLE): 2 moves, 3.00 KiB (40.00% of the state) moved, "
        "budget used 50.00% (2 of max_moves=4)\nload distance 100.00% -> 100.00% of the mean"
    )
    listed = [t.get_text() for t in listing.texts]
    assert listed[0].split() == ["d", "r", "->", "a", "2.00", "KiB", "drain"]
    assert listed[1].split() == ["y", "a", "->", "b", "1.00", "KiB", "collocate"]
    assert {line.split()[-1] for line in listed[:2]} <= set(REASONS)
    # One arrow per pair of nodes, labelled with its number of moves.
    numbers = [t.get_text() for t in bars.texts]
    assert sorted(numbers) == ["1", "1"]


def test_the_legend_names_every_colour_and_reasons_get_their_own_arrows():
    # From a: x (4) drains nothing but balances to b, y (2) collocates with v on b: one pair of
    # nodes, two reasons, two arrows; a and r stay as they were (r keeps d: red bar).
    plan = Plan(
        "by-hand",
        "FEASIBLE",
        {"d": "r", "x": "b", "y": "b", "v": "b"},
        moves=(Move("x", "a", "b", 4096.0), Move("y", "a", "b", 1024.0)),
    )
    to_rgba = pytest.importorskip("matplotlib.colors").to_rgba
    bars = plan.plot(SNAP).axes[0]
    reasons = [m["reason"] for m in plan.explain(SNAP)["moves"]]
    assert sorted(reasons) == ["balance", "collocate"]
    arrows = [p for p in bars.patches if type(p).__name__ == "FancyArrowPatch"]
    assert len(arrows) == 2 and len({tuple(a.get_edgecolor()) for a in arrows}) == 2
    assert sorted(t.get_text() for t in bars.texts) == ["1", "1"]
    # b ends at 7 / 2 = 3.5, above the band (3 +- 10%): orange, and the legend says what that is.
    labels = bars.get_legend().get_texts()
    handles = dict(zip((t.get_text() for t in labels), bars.get_legend().legend_handles))
    assert handles["after the plan"].get_facecolor() == to_rgba("tab:blue")  # not the first bar's
    assert handles["after the plan, above the target band"].get_facecolor() == to_rgba("tab:orange")
    assert "after the plan, above the target band" in [t.get_text() for t in labels]
    assert "after the plan, on a removing node" in [t.get_text() for t in labels]
    assert "after the plan, above the target band" not in [
        t.get_text() for t in PLAN.plot(SNAP, band=100).axes[0].get_legend().get_texts()
    ]


def test_a_band_given_overrides_the_plans(tmp_path):
    low, high, _ = band_of(PLAN.plot(SNAP, band=50).axes[0])
    assert (low, high) == pytest.approx((1.5, 4.5))
    unrecorded = Plan("by-hand", "FEASIBLE", dict(PLAN.assignment), moves=PLAN.moves)
    low, high, _ = band_of(unrecorded.plot(SNAP).axes[0])  # ALBIC's default maxLD, 10%
    assert (low, high) == pytest.approx((2.7, 3.3))


def test_albic_plot_writes_the_figure(tmp_path, capsys):
    write_plan(PLAN, tmp_path / "p.json")
    write_snapshot(SNAP, tmp_path / "s.json")
    out = tmp_path / "fig.png"
    assert (
        main(["plot", str(tmp_path / "p.json"), "--snapshot", str(tmp_path / "s.json"), "--out", str(out)])
        == 0
    )
    assert capsys.readouterr().out == f"wrote {out}\n"
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # Without the snapshot: key groups per node, and the figure says why.
    assert main(["plot", str(tmp_path / "p.json"), "--out", str(tmp_path / "k.svg")]) == 0
    svg = (tmp_path / "k.svg").read_text()
    assert svg.lstrip().startswith("<?xml") and "without the snapshot" in svg


def test_albic_plot_refuses_in_one_line(tmp_path, capsys, monkeypatch):
    write_plan(PLAN, tmp_path / "p.json")
    other = Snapshot([Node("z")], [KeyGroup("q", "op", 1.0)], {"q": "z"})
    write_snapshot(other, tmp_path / "o.json")
    cases = [
        (["--out", str(tmp_path / "f.xyz")], "matplotlib cannot write '.xyz'"),
        (
            ["--snapshot", str(tmp_path / "o.json"), "--out", str(tmp_path / "f.png")],
            "is it the snapshot the plan was made for?",
        ),
        (["--out", str(tmp_path / "no" / "f.png")], "does not exist"),
    ]
    for argv, words in cases:
        assert main(["plot", str(tmp_path / "p.json"), *argv]) == 2
        err = capsys.readouterr().err
        assert err.startswith("albic: error: ") and words in err and err.count("\n") == 1, err
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    assert main(["plot", str(tmp_path / "p.json"), "--out", str(tmp_path / "f.png")]) == 2
    assert capsys.readouterr().err == (
        "albic: error: matplotlib is missing for 'albic plot'; it comes with albic's extra 'plot': "
        "pip install 'albic[plot]'\n"
    )
    assert not list(tmp_path.glob("f.*"))
