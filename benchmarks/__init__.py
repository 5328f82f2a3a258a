"""Benchmarks: `make bench` (or `python -m benchmarks`). Not part of the test run.

Every figure is printed next to a baseline measured in the same process, as a ratio, so results
from different machines or runs are compared by their ratios, never by absolute seconds.
"""
