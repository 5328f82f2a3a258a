"""The house rule of design section 2, as import-linter contracts (pyproject.toml), run here.

Imports go one way: ``base <- core <- io <- {stats, evaluation, rollout, testing} <- spark <- cli``;
the four wings never import each other; planners use base, core, io and solvers; solvers import no
albic module. The contracts must hold on the code as it is, and must catch a wrong import: a copy of
the packages with one deliberately wrong import fails them, naming the contract and the import.

import-linter reads packages from disk, and the repository keeps ``albic.planners`` and
``albic.solvers`` in the top-level folders ``planners/`` and ``solvers/`` (pyproject.toml maps
them), so the contracts run on a copy laid out as the installed package is: the two folders
inside ``albic/``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).with_name("lint-imports")
# Each folder of the repository and where the installed package has it.
LAYOUT = {"albic": "albic", "planners": "albic/planners", "solvers": "albic/solvers"}


def lint(folder: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(folder)}  # the copy's packages, not the installed ones
    return subprocess.run(
        [str(LINT), "--no-cache", str(folder / "pyproject.toml")],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def copy_of_the_house(tmp_path: Path) -> Path:
    """The packages laid out as installed, with the project's pyproject.toml."""
    for folder, installed in LAYOUT.items():
        shutil.copytree(ROOT / folder, tmp_path / installed, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def in_the_copy(house: Path, source: str) -> Path:
    """Where the repository's file ``source`` (e.g. ``planners/flux.py``) is in the copy."""
    folder, _, rest = source.partition("/")
    return house / LAYOUT[folder] / rest


def add_import(module: Path, line: str) -> None:
    text = module.read_text()
    start = text.index("from __future__ import annotations\n") + len("from __future__ import annotations\n")
    module.write_text(text[:start] + line + "\n" + text[start:])


def test_the_contracts_hold_on_the_code_as_it_is(tmp_path):
    result = lint(copy_of_the_house(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 kept, 0 broken" in result.stdout


@pytest.mark.parametrize(
    ("module", "wrong", "contract", "edge"),
    [
        # the model reaching up into the command line: the circle the layout exists to prevent
        (
            "albic/core/model.py",
            "import albic.cli.main",
            "albic's rooms import one way",
            "albic.core.model -> albic.cli.main",
        ),
        # one wing importing another
        (
            "albic/rollout/kafka.py",
            "import albic.evaluation.replay",
            "albic's rooms import one way",
            "albic.rollout.kafka -> albic.evaluation.replay",
        ),
        (
            "planners/flux.py",
            "import albic.evaluation.replay",
            "planners use base, core, io and solvers only",
            "albic.planners.flux -> albic.evaluation.replay",
        ),
        (
            "solvers/milp.py",
            "import albic.base.errors",
            "solvers are numeric kernels",
            "albic.solvers.milp -> albic.base.errors",
        ),
    ],
)
def test_a_wrong_import_breaks_its_contract_with_a_message_naming_it(tmp_path, module, wrong, contract, edge):
    house = copy_of_the_house(tmp_path)
    add_import(in_the_copy(house, module), wrong)
    result = lint(house)
    assert result.returncode == 1, result.stdout + result.stderr
    broken = result.stdout[result.stdout.index("Broken contracts") :]
    assert contract in broken and edge in broken


HEAVY = ("pulp", "networkx", "highspy", "ortools", "pyspark", "pandas")


def fresh_python(code: str) -> str:
    """What ``code`` prints, run in a fresh interpreter (nothing imported yet) from the repository."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def heavy_imports(code: str) -> str:
    """The heavy libraries loaded after running ``code`` in a fresh interpreter."""
    return fresh_python(code + f"\nimport sys\nprint(sorted(m for m in {HEAVY!r} if m in sys.modules))")


def test_import_albic_and_the_modules_that_use_pulp_and_networkx_stay_light():
    """Design section 2: ``import albic`` loads no heavy library; pulp (which loads highspy) and
    networkx are imported where they are used, so neither the modules that use them nor the
    command line's parser (which imports every command, albic.planners.enorm among them) load them."""
    assert heavy_imports("import albic") == "[]"
    loaded = heavy_imports(
        "import albic.cli.main, albic.planners.enorm, albic.planners.albic_milp, albic.solvers.milp\n"
        "albic.cli.main.build_parser()"
    )
    assert loaded in ("[]", "['pandas']")  # some commands import pandas at module level (not these)
    # the check sees a heavy import when there is one
    assert heavy_imports("import albic, pulp") == "['highspy', 'pulp']"


def test_planning_with_one_planner_imports_that_planner_only():
    """The registry names planners without importing them; get_planner imports one module."""
    code = (
        "import sys, albic.core.registry as r\n"
        "names = r.planner_names()\n"
        "assert {'flux', 'milp', 'albic', 'ssm'} <= set(names), names\n"
        "assert not [m for m in sys.modules if m.startswith('albic.planners.')], 'naming imported one'\n"
        "r.planner_class('flux')\n"
        "print([m for m in sys.modules if m.startswith('albic.planners.') and m != 'albic.planners.flux'])\n"
    )
    others = fresh_python(code)
    assert "albic.planners.albic_milp" not in others and "albic.planners.ssm" not in others, others


def test_albic_plan_with_flux_loads_no_solver_and_no_pandas():
    code = (
        "import contextlib, io\nfrom albic.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    assert main(['plan', 'data/example_snapshot.json', '--planner', 'flux']) == 0\n"
    )
    assert heavy_imports(code) == "[]"
    # the check sees a heavy import when there is one
    assert "ortools" in heavy_imports(code.replace("'flux'", "'milp'"))


def test_albic_help_imports_no_command_module_and_not_numpy():
    code = (
        "import contextlib, io, sys\nfrom albic.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n    assert main(['--help']) == 0\n"
        "print(sorted(m for m in sys.modules if m.startswith('albic.cli.commands.') or m == 'numpy'))\n"
    )
    assert fresh_python(code) == "[]"


@pytest.mark.parametrize(
    "bare, package", [("planners.partitioners", "albic.planners"), ("solvers", "albic.solvers")]
)
def test_the_folders_are_not_importable_under_their_bare_names(bare, package):
    # From the repository's root the folders sit on sys.path: one name per file, or numba's cache
    # (keyed by the file) names a module that another process cannot import.
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", f"import {bare}"], cwd=root, capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1].endswith(f"import {package}, not {bare.split('.')[0]}")
    loaded = subprocess.run(
        [sys.executable, "-c", f"import {package}"], cwd=root, capture_output=True, text=True
    )
    assert loaded.returncode == 0, loaded.stderr
