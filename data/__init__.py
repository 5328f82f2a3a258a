"""Small real-trace extracts shipped with albic (see README.md in this folder)."""
