"""The planner registry: every planner class by name, from entry points and from this process.

Planners installed as packages register through the ``albic.planners`` entry-point group
(design section 4); :func:`albic.core.planner.register_planner` adds one at run time. The registry
stores classes and knows nothing of the model, so the model's own explanations can ask it what a
planner promises (:func:`is_exact`).

Example
-------
>>> "flux" in available_planners(), is_exact("ssm"), is_exact("flux")
(True, True, False)
"""

from __future__ import annotations

import warnings
from importlib.metadata import entry_points

from albic.base.errors import InvalidParameterError

__all__ = ["ENTRY_POINT_GROUP", "available_planners", "unregister_planner", "is_exact"]

ENTRY_POINT_GROUP = "albic.planners"

#: Planners registered at run time, by name (:func:`albic.core.planner.register_planner`).
REGISTERED: dict[str, type] = {}


# Entry points that failed to import, by name: one broken third-party package must not take the
# whole registry down, but asking for it by name must say why it is missing.
LOAD_ERRORS: dict[str, str] = {}


def unregister_planner(name: str) -> None:
    """Forget a planner registered with :func:`register_planner` (entry points stay)."""
    if name not in REGISTERED:
        raise InvalidParameterError(f"no planner named {name!r} was registered at run time")
    del REGISTERED[name]


def available_planners() -> dict[str, type]:
    """Every registered planner class by name, sorted by name.

    An entry point that fails to import is left out with a warning.
    """
    found: dict[str, type] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            found[ep.name] = ep.load()
        except Exception as err:  # a third-party import error of any kind
            message = f"{ep.value} failed to import: {type(err).__name__}: {err}"
            if LOAD_ERRORS.get(ep.name) != message:
                warnings.warn(f"albic planner {ep.name!r}: {message}", RuntimeWarning, stacklevel=2)
            LOAD_ERRORS[ep.name] = message
    found.update(REGISTERED)
    return dict(sorted(found.items()))


def is_exact(name: str) -> bool:
    """Whether the registered planner ``name`` proves its plans optimal (``tags().exact``); False
    for an unknown name or a planner that cannot be made without parameters."""
    cls = available_planners().get(name)
    try:
        return bool(cls is not None and cls().tags().exact)
    except Exception:  # a planner with required parameters: cannot tell
        return False
