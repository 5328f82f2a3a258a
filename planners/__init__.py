"""Planners: one module per planner family, each a subclass of albic.core.planner.Planner."""

# This folder is the package albic.planners (pyproject.toml's package-dir). Imported by its bare
# name (from the repository's root, where the folder is on sys.path) its modules would load twice
# under two names, and caches keyed by the file (numba's) would name a module that does not exist.
if __name__ == "planners":
    raise ImportError("the planners are the package albic.planners: import albic.planners, not planners")
