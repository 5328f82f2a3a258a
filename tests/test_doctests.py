"""The docstring examples of albic.planners and albic.solvers, run under their installed names.

pytest collects the examples of ``albic/`` itself (``--doctest-modules``); the planners and solvers
live in the top-level folders ``planners/`` and ``solvers/``, which pytest would import a second
time under top-level names, so their examples run here, module by module.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import albic.planners
import albic.solvers

MODULES = sorted(
    info.name
    for package in (albic.planners, albic.solvers)
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + ".")
)


def test_every_planner_and_solver_module_is_found():
    assert {"albic.planners.flux", "albic.planners.albic_milp", "albic.solvers.milp"} <= set(MODULES)


def examples(name: str) -> list[doctest.DocTest]:
    return [
        test for test in doctest.DocTestFinder().find(importlib.import_module(name), name) if test.examples
    ]


def test_the_modules_have_examples_to_run():
    assert sum(len(test.examples) for name in MODULES for test in examples(name)) >= 150


@pytest.mark.parametrize("name", MODULES)
def test_the_examples_in_the_docstrings_hold(name):
    runner = doctest.DocTestRunner()
    report: list[str] = []
    for test in examples(name):
        runner.run(test, out=report.append)
    assert runner.summarize(verbose=False).failed == 0, "".join(report)


def test_the_runner_sees_a_failing_example():
    runner = doctest.DocTestRunner()
    test = doctest.DocTestParser().get_doctest(">>> 1 + 1\n3\n", {}, "bad", "bad.py", 0)
    runner.run(test, out=lambda _: None)
    assert runner.summarize(verbose=False).failed == 1
