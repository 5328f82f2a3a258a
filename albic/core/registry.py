"""The planner registry: planner names from entry points and from this process, classes on demand.

Planners installed as packages register through the ``albic.planners`` entry-point group
(design section 4); :func:`albic.core.planner.register_planner` adds one at run time. Naming the
planners imports none of them (:func:`planner_names` reads the entry points' metadata), and
:func:`planner_class` imports the one module that defines the planner asked for: planning with
``flux`` never loads OR-Tools. :func:`available_planners` imports them all, for the commands that
describe every planner (``albic planners``). The registry stores classes and knows nothing of the
model, so the model's own explanations can ask it what a planner promises (:func:`is_exact`).

Example
-------
>>> "flux" in planner_names(), planner_class("flux").__name__, is_exact("ssm"), is_exact("flux")
(True, 'FluxPlanner', True, False)
"""

from __future__ import annotations

import functools
import warnings
from importlib.metadata import EntryPoint, entry_points

from albic.base.errors import InvalidParameterError

__all__ = [
    "ENTRY_POINT_GROUP",
    "available_planners",
    "planner_names",
    "planner_class",
    "planner_source",
    "unregister_planner",
    "is_exact",
    "planner_tag",
]

ENTRY_POINT_GROUP = "albic.planners"

#: Planners registered at run time, by name (:func:`albic.core.planner.register_planner`).
REGISTERED: dict[str, type] = {}


# Entry points that failed to import, by name: one broken third-party package must not take the
# whole registry down, but asking for it by name must say why it is missing.
LOAD_ERRORS: dict[str, str] = {}


@functools.cache
def _entry_points() -> dict[str, EntryPoint]:
    """The installed planners' entry points by name (read once: installing a package while a
    process runs does not add planners to it)."""
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def planner_names() -> list[str]:
    """Every registered planner's name, sorted, without importing any planner module."""
    return sorted(set(_entry_points()) | set(REGISTERED))


def planner_source(name: str) -> str | None:
    """Where planner ``name`` is defined (``package.module:Class``) without importing it, or
    None for a name nobody registered."""
    if name in REGISTERED:
        cls = REGISTERED[name]
        return f"{cls.__module__}:{cls.__qualname__}"
    ep = _entry_points().get(name)
    return None if ep is None else ep.value


def planner_class(name: str) -> type | None:
    """The class of planner ``name``, importing its module only; None for a name nobody
    registered or an entry point that fails to import (the reason is kept in ``LOAD_ERRORS`` and
    warned about once)."""
    if name in REGISTERED:
        return REGISTERED[name]
    ep = _entry_points().get(name)
    if ep is None:
        return None
    try:
        return ep.load()
    except Exception as err:  # a third-party import error of any kind
        message = f"{ep.value} failed to import: {type(err).__name__}: {err}"
        if LOAD_ERRORS.get(name) != message:
            warnings.warn(f"albic planner {name!r}: {message}", RuntimeWarning, stacklevel=3)
        LOAD_ERRORS[name] = message
        return None


def unregister_planner(name: str) -> None:
    """Forget a planner registered with :func:`register_planner` (entry points stay)."""
    if name not in REGISTERED:
        raise InvalidParameterError(f"no planner named {name!r} was registered at run time")
    del REGISTERED[name]


def available_planners() -> dict[str, type]:
    """Every registered planner class by name, sorted by name; this imports every planner module
    (use :func:`planner_names` for the names alone).

    An entry point that fails to import is left out with a warning.
    """
    classes = {name: planner_class(name) for name in planner_names()}
    return {name: cls for name, cls in classes.items() if cls is not None}


def is_exact(name: str) -> bool:
    """Whether the registered planner ``name`` proves its plans optimal (``tags().exact``); False
    for an unknown name or a planner that cannot be made without parameters."""
    return planner_tag(name, "exact", unknown=False)


def planner_tag(name: str, tag: str, *, unknown: bool) -> bool:
    """The tag ``tag`` of registered planner ``name`` (:class:`albic.core.planner.PlannerTags`),
    or ``unknown`` for a name the registry lacks or a planner that cannot be made without
    parameters (what a plan read from a file gets told of its planner)."""
    cls = planner_class(name)
    try:
        return bool(getattr(cls().tags(), tag)) if cls is not None else unknown
    except Exception:  # a planner with required parameters: cannot tell
        return unknown
