"""Flink's own jar for the JVM comparison, fetched by the test suite itself; a running Flink cluster
for the tests that hold albic against a live job (``flink_cluster``, :mod:`flink_cluster`).

The Flink release is on the package index as ``apache-flink-libraries`` (PyFlink's jars). It is
installed into ``.flink`` by ``make flink`` for the test cluster, and the JVM comparison takes
``flink-dist`` from there. Where it is not (pytest run without make), the wheel is downloaded
without dependencies and without installing it -- PyFlink's py4j would clash with PySpark's in the
project's environment -- and only ``flink-dist`` is kept, in ``~/.cache/albic/flink-<version>/``
(``ALBIC_CACHE`` overrides ``~/.cache/albic``), so later runs start at once. The tests skip only
when the package index cannot be reached or there is no JDK.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from types import SimpleNamespace

import pytest
from flink_cluster import FlinkCluster, flink_home  # tests/engines is on sys.path (rootdir-less tests)

from albic.cli.main import main
from albic.stats.traces import flights

FLINK_VERSION = "2.3.0"
_MEMBER = f"pyflink/lib/flink-dist-{FLINK_VERSION}.jar"
# pip's messages when it cannot reach the index at all (no network), as opposed to other failures.
_UNREACHABLE = (
    "Could not find a version",
    "No matching distribution",
    "NewConnectionError",
    "Failed to establish a new connection",
    "Temporary failure in name resolution",
    "Network is unreachable",
    "ConnectTimeout",
    "ReadTimeout",
)


def flink_cache() -> Path:
    root = Path(os.environ.get("ALBIC_CACHE", Path.home() / ".cache" / "albic"))
    return root / f"flink-{FLINK_VERSION}"


def fetch_flink_dist() -> Path:
    """The flink-dist jar of the release ``make flink`` installed for the test cluster, or else the
    cached one, downloading the wheel once if needed."""
    installed = flink_home() / "lib" / Path(_MEMBER).name
    if installed.is_file():
        return installed
    target = flink_cache() / Path(_MEMBER).name
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--quiet",
                "--no-deps",
                "--only-binary=:all:",
                f"apache-flink-libraries=={FLINK_VERSION}",
                "-d",
                tmp,
            ],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            message = done.stderr.strip().splitlines()[-1:] or ["pip failed"]
            if any(s in done.stderr for s in _UNREACHABLE):
                pytest.skip(f"the package index is unreachable: {message[0]}")
            raise RuntimeError(f"pip download apache-flink-libraries failed: {done.stderr}")
        wheel = next(Path(tmp).glob("*.whl"))
        with zipfile.ZipFile(wheel) as archive, archive.open(_MEMBER) as src:
            partial = Path(tmp) / "flink-dist.jar"
            with open(partial, "wb") as dst:
                shutil.copyfileobj(src, dst)
        os.replace(partial, target)  # atomic: a crashed run leaves no half jar in the cache
    return target


@pytest.fixture(scope="session")
def flink_dist() -> Path:
    if shutil.which("java") is None or shutil.which("javac") is None:
        pytest.skip("no JDK (java and javac) on PATH")
    return fetch_flink_dist()


# The session's cluster, stopped right after the last test that uses it (not at the end of the whole
# run: the JVMs' memory is then free for the rest), and what it cost, printed at the end: the time
# to start, how long it ran, each JVM's peak resident memory.
_CLUSTERS: list[FlinkCluster] = []
_LAST_USER: list[pytest.Item] = []
_HARNESS: dict[str, str] = {}


def _stop(cluster: FlinkCluster) -> None:
    cluster.stop()
    peaks = ", ".join(f"{name} {mb:.0f} MB" for name, mb in cluster.peaks.items() if mb is not None)
    up = "did not start" if cluster.start_seconds is None else f"up in {cluster.start_seconds:.1f} s"
    _HARNESS["flink"] = (
        f"Flink cluster {up}, stopped after {cluster.stopped - cluster.started:.1f} s; "
        f"peak resident memory {peaks or 'not measured'}" + "".join(f"; {note}" for note in cluster.notes)
    )


@pytest.fixture(scope="session")
def flink_cluster(tmp_path_factory) -> FlinkCluster:
    """One Flink session cluster for every test that needs one; stopped after the last of them, or
    at the end of the session, pass or fail."""
    if shutil.which("java") is None or shutil.which("javac") is None:
        pytest.skip("no JDK (java and javac) on PATH")
    cluster = FlinkCluster(tmp_path_factory.mktemp("flink"))
    _CLUSTERS.append(cluster)
    try:
        cluster.start()
        yield cluster
    finally:
        _stop(cluster)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items) -> None:
    users = [item for item in items if "flink_cluster" in getattr(item, "fixturenames", ())]
    _LAST_USER[:] = users[-1:]
    # One cluster for all of them: in a parallel run they share one worker (--dist loadgroup),
    # which runs them in this order.
    for item in users:
        item.add_marker(pytest.mark.xdist_group("flink"))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    yield  # the item's own fixtures first (a module's jobs are cancelled while the cluster runs)
    if _LAST_USER and item is _LAST_USER[0]:
        for cluster in _CLUSTERS:
            _stop(cluster)


def pytest_terminal_summary(terminalreporter) -> None:
    for line in _HARNESS.values():
        terminalreporter.write_line(line)


FLIGHTS_SPEC = """timestamp = "time_hour"
hash = "flink"
max_parallelism = 32

[[operators]]
name = "tailnum"
keys = ["tailnum"]
"""


@pytest.fixture(scope="session")
def flink_flights(tmp_path_factory) -> SimpleNamespace:
    """A week of real flights as a CSV (time_hour, tailnum) and albic's statistics of it keyed by
    tailnum with Flink's hash at 32 key groups (one period a day): what the live Flink jobs read.
    ``events`` counts the events with a tail number (the others have no key)."""
    folder = tmp_path_factory.mktemp("flink-flights")
    events = flights.load_events(start="2013-01-01", days=7)
    csv = folder / "flights.csv"
    events[["time_hour", "tailnum"]].to_csv(csv, index=False, date_format="%Y-%m-%dT%H:%M:%SZ")
    (folder / "spec.toml").write_text(FLIGHTS_SPEC, encoding="utf-8")
    stats = folder / "stats"
    # Days on the trace's own clock: a UTC day would start at 19:00 of the evening before, which
    # the week does not hold (its first day would be partial).
    argv = ["stats", str(csv), "--spec", str(folder / "spec.toml"), "--engine", "pandas", "--period", "1d"]
    argv += ["--timezone", "America/New_York"]
    assert main([*argv, "--node-counts", "4", "--out", str(stats)]) == 0
    return SimpleNamespace(csv=csv, stats=stats, events=int(events["tailnum"].notna().sum()))
