"""Flink's own jar for the JVM comparison, fetched by the test suite itself.

The Flink release is on the package index as ``apache-flink-libraries`` (PyFlink's jars). It is
downloaded without dependencies and without installing it -- PyFlink's py4j would clash with
PySpark's in the project's environment -- and only ``flink-dist`` is kept, in
``~/.cache/albic/flink-<version>/`` (``ALBIC_CACHE`` overrides ``~/.cache/albic``), so later runs
start at once. The tests skip only when the package index cannot be reached or there is no JDK.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest

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
    """The cached flink-dist jar, downloading the wheel once if needed."""
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
