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
the executors running the same Python as the driver, and on a master on this machine a driver
with a quarter of its memory (:func:`local_driver_memory`), as it runs every task.

Spark as a user runs it:

- **Quiet.** Unless ``verbose=True`` (the CLI's ``--verbose``), everything the JVM prints (its
  start-up warnings, Spark's log) goes to :func:`spark_log_path` instead of the terminal, so a job
  prints albic's lines only; failures reach the user as one line anyway (below), which names the
  log. (Under spark-submit the JVM is already running: only Spark's log level can be lowered.)
- **One-line failures, fast.** A ``spark://`` master is probed (TCP, :data:`CONNECT_TIMEOUT`
  seconds per host) before the JVM starts: an unreachable master is a
  :class:`SparkUnavailableError` naming it and the cause within seconds, instead of Spark's
  minute of retries and hundreds of lines of Java traces. :func:`spark_errors` turns a failing job
  into a :class:`SparkJobError` with the master and the first line of the cause.
- **spark-submit.** Under ``spark-submit`` (see :mod:`albic.cli.submit`) the master and settings
  that spark-submit set are kept: albic only adds its defaults for settings not already given, and
  a ``--master`` that differs from spark-submit's is refused rather than silently overriding it.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from albic.base.errors import AlbicError, SparkJobError, SparkUnavailableError
from albic.base.extras import require

if TYPE_CHECKING:  # pragma: no cover
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

__all__ = [
    "DEFAULT_MASTER",
    "CONNECT_TIMEOUT",
    "spark_session",
    "submitted_master",
    "is_local",
    "check_master_reachable",
    "spark_errors",
    "spark_log_path",
    "task_slots",
    "local_driver_memory",
    "driver_threads",
    "error_cause",
    "SparkUnavailableError",
    "SparkJobError",
]

DEFAULT_MASTER = "local[*]"
#: Seconds to wait for a TCP connection to a ``spark://`` master before calling it unreachable.
CONNECT_TIMEOUT = 5.0

_DEFAULTS = {
    "spark.ui.enabled": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.shuffle.partitions": "8",
    "spark.default.parallelism": "8",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    # The driver only plans and collects on a cluster; on this machine see local_driver_memory.
    "spark.driver.memory": "2g",
    "spark.ui.showConsoleProgress": "false",  # albic draws its own bar (albic.base.progress)
    # Otherwise every pyspark function records its Python call site for error messages, in
    # several JVM round trips each: ~0.6 s of a small stats job's few hundred column expressions.
    # albic reports a failing job as one line anyway (spark_errors).
    "spark.python.sql.dataFrameDebugging.enabled": "false",
}


def local_driver_memory(available: int | None = None) -> str:
    """``spark.driver.memory`` for a master on this machine, whose driver JVM runs every task:
    a quarter of the memory this process may use (``available`` bytes; default
    :func:`_machine_memory`), the heap the JVM itself takes by default where Spark would give it
    1g; at least 2g, at most 31g (above 32g the JVM's object pointers double in size). With 2g
    the aggregations of a large job spill to disk, or fail: the statistics of the flights year
    at 30x spilled and ran 3-4x slower than with 6g, and a hand-written job ran out of memory.

    >>> local_driver_memory(24 << 30), local_driver_memory(4 << 30), local_driver_memory(512 << 30)
    ('6144m', '2048m', '31744m')
    """
    quarter = (available if available is not None else _machine_memory()) // 4 >> 20
    return f"{min(max(quarter, 2048), 31 * 1024)}m"


def _machine_memory() -> int:
    """The bytes of memory this process may use: the machine's, or its control group's limit
    when lower (a container)."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") if hasattr(os, "sysconf") else 8 << 30
    for limit in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(limit).read_text().strip()
        except OSError:
            continue
        if text.isdigit():
            total = min(total, int(text))
    return total


def is_local(master: str) -> bool:
    """Whether ``master`` runs everything on this machine (``local``, ``local[4]``, ...)."""
    return master == "local" or master.startswith("local[") or master.startswith("local-cluster[")


_LOCAL = re.compile(r"local(?:\[(\d+|\*)(?:,\s*\d+)?\])?")
_LOCAL_CLUSTER = re.compile(r"local-cluster\[\s*(\d+)\s*,\s*(\d+)\s*,\s*\d+\s*\]")


def _local_cores(master: str) -> int | None:
    """The cores a master on this machine runs tasks on: ``N`` of ``local[N]`` (or ``local[N,
    retries]``), the machine's for ``local[*]``, 1 for ``local``, executors x cores of
    ``local-cluster[E, C, MB]``; ``None`` for any other master."""
    local = _LOCAL.fullmatch(master)
    if local is not None:
        return 1 if local.group(1) is None else _cpus() if local.group(1) == "*" else int(local.group(1))
    cluster = _LOCAL_CLUSTER.fullmatch(master)
    return None if cluster is None else int(cluster.group(1)) * int(cluster.group(2))


def _cpus() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def task_slots(sc: SparkContext) -> int:
    """How many tasks the cluster runs at once: the cores of a master on this machine
    (:func:`_local_cores`), else Spark's default parallelism (the executors' cores) -- divided by
    ``spark.task.cpus``.

    >>> class Context:
    ...     master, defaultParallelism, cpus = "local[3]", 8, "1"
    ...     def getConf(self):
    ...         return {"spark.task.cpus": self.cpus}
    >>> cluster = type("Cluster", (Context,), {"master": "spark://h:7077", "defaultParallelism": 16})
    >>> on_this_machine = type("Two", (Context,), {"master": "local-cluster[2, 1, 1024]"})
    >>> task_slots(Context()), task_slots(cluster()), task_slots(type("Big", (cluster,), {"cpus": "4"})())
    (3, 16, 4)
    >>> task_slots(on_this_machine())
    2
    """
    cores = _local_cores(str(sc.master))
    if cores is None:
        cores = int(sc.defaultParallelism)
    return max(1, cores // max(1, int(sc.getConf().get("spark.task.cpus", "1"))))


def driver_threads(sc: SparkContext) -> int:
    """Threads for value iteration on the driver: the cores a ``local[N]`` master was given (its
    tasks and the driver share them), else ``spark.driver.cores`` when set, else this machine's."""
    local = _LOCAL.fullmatch(str(sc.master))
    if local is not None:
        return max(1, _local_cores(str(sc.master)) or 1)
    return max(1, int(sc.getConf().get("spark.driver.cores", "0") or 0) or _cpus())


def check_master_reachable(master: str, timeout: float = CONNECT_TIMEOUT) -> None:
    """For a ``spark://host:port[,host2:port2]`` master, fail in one line unless some host accepts
    a TCP connection within ``timeout`` seconds; other masters are not probed.

    >>> check_master_reachable("local[2]")           # nothing to probe
    >>> check_master_reachable("spark://nohost")     # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    albic.base.errors.SparkUnavailableError: Spark master 'spark://nohost': expected spark://HOST:PORT...
    """
    if not master.startswith("spark://"):
        return
    causes = []
    for address in master[len("spark://") :].split(","):
        host, sep, port = address.rpartition(":")
        if not sep or not host or not port.isdigit():
            raise SparkUnavailableError(
                f"Spark master {master!r}: expected spark://HOST:PORT (e.g. spark://10.0.0.5:7077)"
            )
        try:
            with socket.create_connection((host, int(port)), timeout=timeout):
                return
        except socket.gaierror:
            causes.append(f"cannot resolve host {host!r}")
        except TimeoutError:
            causes.append(f"no answer from {host}:{port} within {timeout:g} s")
        except OSError as err:
            causes.append(f"{host}:{port}: {err.strerror or err}")
    raise SparkUnavailableError(
        f"cannot reach the Spark master {master}: {'; '.join(causes)} (is the master running, and "
        "is the URL the one its web UI shows?)"
    )


def submitted_master() -> str | None:
    """The master ``spark-submit`` set when this process runs under it (else ``None``)."""
    if "PYSPARK_GATEWAY_PORT" not in os.environ:  # set by spark-submit for the Python driver
        return None
    from pyspark import SparkConf, SparkContext

    SparkContext._ensure_initialized()  # connects to spark-submit's JVM; its settings load below
    return SparkConf().get("spark.master", None)


def spark_session(
    master: str | None = None,
    app_name: str = "albic",
    *,
    config: Mapping[str, str] | None = None,
    verbose: bool = False,
) -> SparkSession:
    """A Spark session on ``master`` (default: spark-submit's master, else ``local[*]``) with
    albic's settings; Spark's own log only when ``verbose``.

    ``config`` overrides or adds Spark settings. Spark keeps one session per process: if one is
    already running on another master, this raises instead of silently using the wrong cluster.
    """
    if master is not None:
        check_master_reachable(master)
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        raise SparkUnavailableError(
            "Spark needs Java 17 (or newer): no 'java' on PATH and JAVA_HOME is not set"
        )
    SparkSession = require("pyspark.sql", "the Spark jobs").SparkSession
    # Executors must run this interpreter (the one with albic installed), not whatever is on PATH.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)

    active = SparkSession.getActiveSession()
    if active is not None:
        running = active.sparkContext.master
        if master is not None and running != master:
            raise SparkUnavailableError(
                f"a Spark session on master {running!r} is already running in this process; "
                f"stop it before starting one on {master!r}"
            )
        return active
    submitted = submitted_master()
    if submitted is not None and master is not None and master != submitted:
        raise SparkUnavailableError(
            f"parameter master {master} differs from the master spark-submit set ({submitted}); give the "
            "master to spark-submit only"
        )
    builder = SparkSession.builder.appName(app_name)
    if submitted is None:
        builder = builder.master(master or DEFAULT_MASTER)
    given = _submitted_settings() if submitted is not None else {}
    defaults = dict(_DEFAULTS)
    if submitted is None and is_local(master or DEFAULT_MASTER):
        defaults["spark.driver.memory"] = local_driver_memory()
    for key, value in {**defaults, **dict(config or {})}.items():
        if key not in given:  # never override what spark-submit was told
            builder = builder.config(key, value)
    with spark_errors(master or submitted or DEFAULT_MASTER):
        with contextlib.nullcontext() if verbose or submitted else _jvm_output_to_log():
            spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN" if verbose else "ERROR")
    return spark


def spark_log_path() -> Path:
    """Where a quiet session's JVM writes its output (one file per user, overwritten by the next
    session)."""
    import tempfile

    return Path(tempfile.gettempdir()) / f"albic-spark-{os.getuid() if hasattr(os, 'getuid') else 'user'}.log"


@contextlib.contextmanager
def _jvm_output_to_log() -> Iterator[None]:
    """While the JVM starts, point file descriptor 2 at :func:`spark_log_path`: the JVM inherits it
    for its whole life (its warnings, log4j's console, the Python workers it forks), this process
    gets its own stderr back at once."""
    sys.stderr.flush()
    try:
        log = open(spark_log_path(), "w", encoding="utf-8")
        saved = os.dup(2)
    except OSError:  # no writable temp folder or no fd 2: stay verbose rather than fail
        yield
        return
    try:
        os.dup2(log.fileno(), 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        log.close()


def _submitted_settings() -> dict[str, str]:
    from pyspark import SparkConf

    return dict(SparkConf().getAll())


def error_cause(err: BaseException) -> str:
    """The first informative line of a Spark/Py4J error (the Java exception's own message)."""
    java = getattr(err, "java_exception", None)
    text = ""
    if java is not None:
        try:
            root = java
            while root.getCause() is not None:
                root = root.getCause()
            text = str(root.toString())
        except Exception:  # the JVM may be gone already
            text = ""
    text = text or str(err) or type(err).__name__
    lines = [line.strip().lstrip(":").strip() for line in text.splitlines()]
    lines = [line for line in lines if line]
    first = next((line for line in lines if not line.startswith(("An error occurred", "at "))), "")
    return (first or (lines[0] if lines else type(err).__name__))[:300]


@contextlib.contextmanager
def spark_errors(master: str) -> Iterator[None]:
    """Turn a failing Spark call into one :class:`SparkJobError` line naming ``master`` and the
    cause (albic's own errors pass through unchanged)."""
    try:
        yield
    except AlbicError:
        raise
    except Exception as err:
        from py4j.protocol import Py4JError

        try:
            from pyspark.errors import PySparkException
        except ImportError:  # pragma: no cover
            PySparkException = ()  # type: ignore[assignment]
        if isinstance(err, (Py4JError, PySparkException)) or type(err).__module__.startswith(
            ("pyspark", "py4j")
        ):
            raise SparkJobError(
                f"Spark job on master {master} failed: {error_cause(err)} (Spark's log: {spark_log_path()})"
            ) from None
        raise
