"""The statistics runs whose datasets are kept as goldens (tests/test_stats_golden.py).

The goldens in ``expected/`` were written by albic's statistics job as it was before the layered
layout (commit 4825c98), run from that checkout with this folder as the working directory, so the
manifests' "trace" is the same relative text wherever the test runs. The goldens of user and
flink_hash follow the load mapping 4:8, given explicitly (an events file's default is a fixed
cluster)::

    cd tests/data/stats_golden && python cases.py OLD_ALBIC_CHECKOUT
"""
import os
import shutil
import subprocess
import sys

EVENTS = "input/events.csv"
CASES = {
    "user": [EVENTS, "--spec", "input/topology.toml", "--key-groups", "16", "--node-counts", "4:8"],
    "user_oslo": [EVENTS, "--spec", "input/topology.toml", "--key-groups", "8", "--period", "30min",
                  "--timezone", "Europe/Oslo", "--node-counts", "2:6", "--scale", "2"],
    "user_counts": [EVENTS, "--spec", "input/topology.toml", "--key-groups", "8", "--node-counts", "input/counts.csv"],
    "flink_hash": [EVENTS, "--spec", "input/flink.toml", "--node-counts", "4:8"],
    "flights": ["flights", "--days", "1", "--start", "2013-11-27", "--key-groups", "16"],
}

if __name__ == "__main__":
    shutil.rmtree("expected", ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": sys.argv[1]}
    for name, argv in CASES.items():
        subprocess.run([sys.executable, "-m", "albic", "stats", *argv, "--engine", "pandas",
                        "--out", f"expected/{name}"], env=env, check=True)
