"""``albic planners``: every registered planner with its class, tags and parameters.

Describing a planner's tags and parameters needs its class, so this command imports every planner
module (``albic plan`` imports only the one it plans with).
"""

from __future__ import annotations

import argparse
import inspect
import sys

from albic.core import registry
from albic.core.planner import Planner

__all__ = ["add_arguments", "run"]

_NO_PLANNERS = "albic: error: no planner is registered; is albic installed (pip install -e .)?"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command takes no arguments."""


def _describe_planner(cls: type[Planner]) -> tuple[str, str, str]:
    """Class path, tags and parameters (with defaults) of a registered planner class."""
    try:
        tags = ", ".join(cls().tags().names()) or "-"
    except TypeError:  # a planner with a required parameter
        tags = "?"
    params = [
        f"{p.name}={p.default!r}" if p.default is not p.empty else f"{p.name} (required)"
        for p in inspect.signature(cls.__init__).parameters.values()
        if p.kind is p.KEYWORD_ONLY
    ]
    return f"{cls.__module__}:{cls.__qualname__}", tags, ", ".join(params) or "-"


def run(args: argparse.Namespace) -> int:
    planners = registry.available_planners()
    if not planners:
        print(_NO_PLANNERS, file=sys.stderr)
        return 1
    described = {name: _describe_planner(cls) for name, cls in planners.items()}
    width = max(map(len, planners))
    path_width = max(len(path) for path, _, _ in described.values())
    for name, (path, tags, params) in described.items():
        print(f"{name:<{width}}  {path:<{path_width}}  tags: {tags}  parameters: {params}")
    return 0
