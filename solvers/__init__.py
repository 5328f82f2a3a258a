"""Numeric kernels: arrays in, arrays out; no Snapshot, no I/O."""

# This folder is the package albic.solvers (pyproject.toml's package-dir). Imported by its bare
# name (from the repository's root, where the folder is on sys.path) its modules would load twice
# under two names, and caches keyed by the file (numba's) would name a module that does not exist.
if __name__ == "solvers":
    raise ImportError("the solvers are the package albic.solvers: import albic.solvers, not solvers")
