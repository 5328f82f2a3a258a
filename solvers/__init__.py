"""Numeric kernels: arrays in, arrays out; no Snapshot, no I/O."""
