"""Fixtures shared by every test folder.

``user_trace``: a trace albic was not built for, parcel deliveries (events CSV + TOML spec) made up
here. Shared by the command-line tests on the pandas engine (tests/test_user_trace.py) and on Spark
(tests/spark/test_user_trace_spark.py): couriers hand parcels to delivery zones over six hours,
with a few very busy couriers and zones (a skew every balancer has to deal with), the first two
hours quiet, the last ones busy.

``flink_trace``: user sessions keyed by a string, with a spec choosing Flink's hash
(``hash = "flink"``, ``max_parallelism = 32``), named as the README's Flink block names them
(``trace.csv``, ``flink_topology.toml``). Shared by the round trip on pandas
(tests/engines/test_flink_round_trip.py), on Spark (tests/spark/test_flink_hash_spark.py) and the
README's Flink commands (tests/engines/test_readme_engines.py).

``spark``: one Spark session (``local[2]``) for every test that needs one, in any folder: starting
a JVM costs seconds, and Spark keeps one session per process, so a test that let ``albic stats``
start its default ``local[*]`` session would make every later ``local[2]`` request fail.

``SPARK_CONF_DIR``: tests/spark-conf (unless already set), the JVM settings of every Spark JVM a
test starts (why: tests/spark-conf/spark-defaults.conf).

``written_files_follow_their_schemas`` (automatic, for the whole run): every snapshot and plan file
albic writes in this process (:mod:`albic.io.documents`, which every writer of these files goes
through: ``write_snapshot``, ``write_plan``, ``albic plan --out``, ``albic kafka import``, ...) is
validated against its shipped JSON Schema (:mod:`albic.io.schemas`); the run fails at its end
listing any file that did not follow it.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

# Before any JVM starts: every Spark JVM of the run, and the commands the tests run as
# subprocesses, read it.
os.environ.setdefault("SPARK_CONF_DIR", str(Path(__file__).resolve().parent / "spark-conf"))

SPEC = """
timestamp = "scanned_at"

[[operators]]
name = "courier"
keys = ["courier_id"]
cost = 2.0
bytes_per_key = 512

[[operators]]
name = "zone"
keys = ["zone", "depot"]

[[edges]]
src = "courier"
dst = "zone"
"""

HOURS = 6


def write_trace(folder: Path, *, seed: int = 7) -> tuple[Path, Path]:
    """``(events.csv, spec.toml)`` in ``folder``; deterministic under ``seed``."""
    rng = np.random.default_rng(seed)
    rows = []
    for hour in range(HOURS):
        count = 60 + 50 * hour  # the day gets busier
        seconds = np.sort(rng.integers(0, 3600, count))
        couriers = rng.zipf(1.6, count) % 40
        zones = rng.zipf(1.4, count) % 25
        depots = rng.integers(0, 3, count)
        for s, c, z, d in zip(seconds, couriers, zones, depots):
            stamp = pd.Timestamp("2026-03-02T06:00:00Z") + pd.Timedelta(hours=hour, seconds=int(s))
            rows.append((stamp.strftime("%Y-%m-%dT%H:%M:%SZ"), f"c{c:02d}", f"z{z}", f"d{d}"))
    events = pd.DataFrame(rows, columns=["scanned_at", "courier_id", "zone", "depot"])
    events.loc[::17, "zone"] = ""  # some scans without a zone: they reach only the courier operator
    events_path, spec_path = folder / "scans.csv", folder / "deliveries.toml"
    events.to_csv(events_path, index=False)
    spec_path.write_text(SPEC, encoding="utf-8")
    return events_path, spec_path


#: The hourly period labels of the trace.
PERIODS = [f"2026-03-02T{6 + h:02d}:00" for h in range(HOURS)]


@pytest.fixture(scope="session")
def user_trace(tmp_path_factory) -> tuple[Path, Path]:
    """``(events.csv, spec.toml)`` of the parcel-delivery trace (see the module docstring)."""
    return write_trace(tmp_path_factory.mktemp("user-trace"))


@pytest.fixture(scope="session")
def user_trace_periods() -> list[str]:
    return list(PERIODS)


@pytest.fixture(scope="session")
def user_stats(user_trace, tmp_path_factory) -> Path:
    """The statistics of the parcel trace (pandas engine, 8 key groups per operator, 2 to 4
    nodes), written once for the tests that only read them."""
    from albic.cli.main import main

    events, spec = user_trace
    out = tmp_path_factory.mktemp("user-stats") / "stats"
    argv = ["stats", events, "--spec", spec, "--out", out, "--engine", "pandas", "--key-groups", "8"]
    assert main([str(a) for a in [*argv, "--nodes", "2:4"]]) == 0
    return out


FLINK_SPEC = """
hash = "flink"
max_parallelism = 32
timestamp = "ts"

[[operators]]
name = "sessions"
keys = ["user"]
"""


def write_flink_trace(folder: Path, *, seed: int = 4) -> tuple[Path, Path, pd.DataFrame]:
    """``(trace.csv, flink_topology.toml, events)`` in ``folder``: 2,000 events over two hours,
    users drawn Zipf-skewed, non-ASCII keys included (Java hashes UTF-16 code units)."""
    rng = np.random.default_rng(seed)
    users = [f"user-{i}" for i in range(80)] + ["Zoë", "\U0001f600"]
    weights = rng.zipf(1.6, size=len(users)).astype(float)
    picked = rng.choice(len(users), size=2000, p=weights / weights.sum())
    events = pd.DataFrame(
        {
            "ts": pd.Timestamp("2024-01-01") + pd.to_timedelta(np.sort(rng.integers(0, 7200, 2000)), "s"),
            "user": [users[i] for i in picked],
        }
    )
    trace, spec = folder / "trace.csv", folder / "flink_topology.toml"
    events.to_csv(trace, index=False)
    spec.write_text(FLINK_SPEC, encoding="utf-8")
    return trace, spec, events


@pytest.fixture()
def flink_trace(tmp_path) -> tuple[Path, Path, pd.DataFrame]:
    """``(trace.csv, flink_topology.toml, events)`` in the test's ``tmp_path`` (see the module
    docstring)."""
    return write_flink_trace(tmp_path)


@pytest.fixture(scope="session")
def flink_trace_once(tmp_path_factory) -> tuple[Path, Path, pd.DataFrame]:
    """The same trace written once, for tests that only read it."""
    return write_flink_trace(tmp_path_factory.mktemp("flink-trace"))


def pytest_configure(config) -> None:
    # albic.planners and albic.solvers live in top-level folders that an editable install maps
    # to its own checkout: this checkout's tests run under another's install (a git worktree
    # beside the main one) would test that checkout's planners without a word.
    import albic
    import albic.planners
    import albic.solvers

    root = Path(__file__).resolve().parents[1]
    for package in (albic, albic.planners, albic.solvers):
        found = Path(package.__file__).resolve().parents[1]
        if found != root:
            raise pytest.UsageError(
                f"the tests of {root} import {package.__name__} from {found}: this Python's albic "
                f"is installed from another checkout; run 'make test' here (its own environment) "
                f"or 'pip install -e {root}'"
            )


def _uses_the_spark_session(item) -> bool:
    params = getattr(getattr(item, "callspec", None), "params", {})
    return "spark" in getattr(item, "fixturenames", ()) or params.get("engine") == "spark"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items) -> None:
    # One worker runs every test of the shared session (--dist loadgroup): a second JVM would
    # warm up its JIT and Python workers all over again (~20 CPU seconds on two cores). Tests
    # already in a group (the Flink cluster's) keep theirs. First among the hooks: xdist's own
    # reads the groups into the test ids, and a group added after it is ignored.
    # A notebook's tests share one execution (a module fixture: a minute or more): one worker
    # runs them all, or each worker would execute the notebook again.
    for item in items:
        if _uses_the_spark_session(item) and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group("spark"))
        elif Path(item.path).parent.name == "notebooks" and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(f"notebook-{Path(item.path).stem}"))
        _check_timing_is_written_out(item)


@functools.cache
def _spells_out_timing(path: Path) -> bool:
    return "mark.timing" in path.read_text()


def _check_timing_is_written_out(item) -> None:
    """make test runs the timing tests from the files that spell out ``mark.timing`` (collecting
    all the others again takes seconds); a test marked some other way would run in neither run."""
    if item.get_closest_marker("timing") is not None and not _spells_out_timing(Path(item.path)):
        raise pytest.UsageError(
            f"{item.nodeid} is marked timing, but its file does not spell out `mark.timing`: "
            "make test would skip it"
        )


@pytest.fixture(scope="session")
def _spark_session():
    from albic.spark.session import spark_session

    session = spark_session("local[2]", "albic-tests")
    yield session
    session.stop()


@pytest.fixture
def spark(_spark_session, request):
    """The shared Spark session (local[2]). A test that reaches it without naming it (through
    ``request.getfixturevalue``) is not in the "spark" group, and in a parallel run would start
    a second JVM on another worker: it fails here instead."""
    if getattr(request.config.option, "loadgroup", False) and not request.node.nodeid.endswith("@spark"):
        pytest.fail(
            f"{request.node.nodeid} uses the shared Spark session without naming it: add `spark` "
            "to its arguments or @pytest.mark.usefixtures('spark'), so it runs in the 'spark' group"
        )
    return _spark_session


@pytest.fixture(scope="session", autouse=True)
def written_files_follow_their_schemas():
    import json

    import jsonschema

    import albic.io.documents as documents
    from albic.io.schemas import SCHEMAS, schema

    validators = {SCHEMAS[name]: jsonschema.Draft202012Validator(schema(name)) for name in SCHEMAS}
    write = documents.atomic_write_text
    broken: list[str] = []
    checked = {name: 0 for name in validators}

    def validated(path, text):
        document = json.loads(text)
        validator = validators[document["schema"]]
        checked[document["schema"]] += 1
        for error in validator.iter_errors(document):
            broken.append(f"{path}: {'/'.join(map(str, error.absolute_path))}: {error.message}")
        return write(path, text)

    documents.atomic_write_text = validated
    yield checked
    documents.atomic_write_text = write
    assert not broken, "files albic wrote break their JSON Schema:\n" + "\n".join(broken[:20])


@pytest.fixture(scope="session")
def demo_snapshots(tmp_path_factory) -> list:
    """The demo's statistics (a week of flights from 2013-11-24, 32 key groups per operator,
    hourly), computed with the pandas engine: 168 snapshots, the placement of each period as the
    statistics give it."""
    from albic.cli.main import main
    from albic.io import read_snapshots

    out = tmp_path_factory.mktemp("demo-stats") / "stats"
    args = ["stats", "flights", "--start", "2013-11-24", "--days", "7", "--key-groups", "32"]
    assert main([*args, "--engine", "pandas", "--out", str(out)]) == 0
    return list(read_snapshots(out))
