"""Run albic's Spark commands under ``spark-submit``.

``spark-submit`` runs a Python *file*, not a console script (given the ``albic`` script it fails
with "Failed to get main class"). This module is that file: run through spark-submit it is the
``albic`` command line; run with plain Python it prints its own path, for the command below::

    spark-submit --master spark://HOST:7077 "$(python -m albic.cli.submit)" \\
        stats events.parquet --spec topology.toml --out /shared/stats

The master (and every other setting) given to spark-submit is kept: albic adds its defaults only
for settings spark-submit was not given, and refuses a ``--master`` that differs from
spark-submit's. On a cluster the input trace and ``--out`` must be on a file system every node
reads (HDFS, NFS, S3, ...); a path in this machine's temporary folder is refused.

Example
-------
>>> import subprocess, sys
>>> path = subprocess.run([sys.executable, "-m", "albic.cli.submit"], capture_output=True,
...                       text=True).stdout.strip()
>>> path.endswith("submit.py")
True
"""

from __future__ import annotations

import os
import sys

from albic.cli.main import main as albic_main


def main() -> int:
    if "PYSPARK_GATEWAY_PORT" not in os.environ:  # not under spark-submit: print the path to give it
        print(os.path.abspath(__file__))
        return 0

    return albic_main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
