"""Package namespaces whose names are imported on first use (PEP 562).

``import albic`` and the command line's start must not pay for numpy, the model or pandas before a
command needs them: a package lists its public names and where each lives, and the module that
defines a name is imported the first time the name is read.

Example
-------
>>> import types
>>> ns = types.ModuleType("ns")
>>> ns.__getattr__, ns.__dir__ = lazy_exports(ns.__dict__, {"sqrt": "math:sqrt", "math": "math"})
>>> ns.sqrt(4.0), ns.math.pi > 3, "math" in dir(ns), "sqrt" in ns.__dict__
(2.0, True, True, True)
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    namespace: dict[str, Any], where: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of a package whose public ``name`` is
    ``where[name]``: ``"module:attribute"`` as entry points write it, or ``"module"`` for a module
    itself. A name read once is kept in ``namespace``, so the import runs once."""

    def __getattr__(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {namespace['__name__']!r} has no attribute {name!r}")
        module_name, _, attribute = where[name].partition(":")
        module = importlib.import_module(module_name)
        value = getattr(module, attribute) if attribute else module
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(where))

    return __getattr__, __dir__
