"""Spark sessions for albic's batch jobs: ``local[*]`` by default, any master URL otherwise.

Example
-------
>>> from albic.spark.session import spark_session
>>> spark = spark_session("local[2]")          # doctest: +SKIP
>>> spark.range(3).count()                      # doctest: +SKIP
3

Every job takes a ``master`` argument (the CLI's ``--master``) and gets its session here, so the
settings that matter for albic are in one place: UTC timestamps (statistics periods must not move
with the machine's time zone), no web UI (a job on a shared machine must not grab a port), few shuffle
partitions (the traces are small; Spark's default of 200 tasks per shuffle is pure overhead here),
and the executors running the same Python as the driver.
"""
from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

from albic.errors import AlbicError

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

__all__ = ["DEFAULT_MASTER", "spark_session", "SparkUnavailableError"]

DEFAULT_MASTER = "local[*]"

_DEFAULTS = {
    "spark.ui.enabled": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.shuffle.partitions": "8",
    "spark.default.parallelism": "8",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.driver.memory": "2g",
}


class SparkUnavailableError(AlbicError, RuntimeError):
    """Spark cannot start here (no Java, or pyspark missing)."""


def spark_session(
    master: str | None = None,
    app_name: str = "albic",
    *,
    config: Mapping[str, str] | None = None,
) -> SparkSession:
    """A Spark session on ``master`` (default ``local[*]``) with albic's settings.

    ``config`` overrides or adds Spark settings. Spark keeps one session per process: if one is
    already running on another master, this raises instead of silently using the wrong cluster.
    """
    master = master or DEFAULT_MASTER
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        raise SparkUnavailableError(
            "Spark needs Java 17 (or newer): no 'java' on PATH and JAVA_HOME is not set"
        )
    try:
        from pyspark.sql import SparkSession
    except ImportError as err:  # pragma: no cover - pyspark is a dependency
        raise SparkUnavailableError(f"pyspark is not importable: {err}") from None
    # Executors must run this interpreter (the one with albic installed), not whatever is on PATH.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)

    active = SparkSession.getActiveSession()
    if active is not None:
        running = active.sparkContext.master
        if running != master:
            raise SparkUnavailableError(
                f"a Spark session on master {running!r} is already running in this process; "
                f"stop it before starting one on {master!r}"
            )
        return active
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in {**_DEFAULTS, **dict(config or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark
