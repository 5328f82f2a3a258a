"""A real Flink session cluster on localhost for the tests, started from the apache-flink wheel.

``make flink`` (part of ``make test``) installs the wheel's scripts and jars into ``.flink/``
(``ALBIC_FLINK_HOME`` points elsewhere). :class:`FlinkCluster` writes a configuration of its own into
a temporary folder -- free ports, REST on localhost only, the adaptive scheduler with no cooldown,
metrics fetched every 500 ms, savepoints, logs, pid files and uploads all in that folder -- starts a
JobManager and a TaskManager (8 slots) with Flink's own ``jobmanager.sh`` / ``taskmanager.sh
start-foreground`` (they ``exec`` the JVM, so the process started is the JVM), compiles
``KeyedTraceJob.java`` with ``javac`` against Flink's jars meanwhile, and uploads it through the
REST API. :meth:`FlinkCluster.stop` ends both JVMs (TERM, then KILL), on success and on failure;
each JVM also gets the kernel's parent-death signal, so a test run killed outright takes them along.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
import uuid
import zipfile
from pathlib import Path
from typing import Any

from albic.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
JOB_SOURCE = Path(__file__).with_name("KeyedTraceJob.java")
ENTRY_CLASS = "KeyedTraceJob"
SLOTS = 8
START_TIMEOUT = 240.0
# How often a wait asks the REST API again: each answer takes milliseconds, and a test waits for
# the cluster, a job or a savepoint several times.
POLL_SECONDS = 0.2
_PR_SET_PDEATHSIG = 1


def flink_home() -> Path:
    return Path(os.environ.get("ALBIC_FLINK_HOME", ROOT / ".flink" / "pyflink"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def _die_with_parent() -> None:
    """In the child before exec: TERM when the test process dies (Linux prctl; kept across exec)."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except OSError:
        pass


def quick_jvm_options() -> str:
    """The JVM options of the tests' Spark JVMs (tests/spark-conf/spark-defaults.conf, which says
    why), for the test cluster's JVMs too: they also live for a few jobs."""
    text = (ROOT / "tests" / "spark-conf" / "spark-defaults.conf").read_text(encoding="utf-8")
    return re.search(r"^spark\.driver\.extraJavaOptions\s+(.+)$", text, flags=re.M).group(1).strip()


def java_options(home: Path) -> str:
    """The ``--add-opens`` line of the wheel's own config.yaml, which Flink needs on Java 17."""
    text = (home / "conf" / "config.yaml").read_text(encoding="utf-8")
    return re.search(r"^\s+all:\s*(.+)$", text, flags=re.M).group(1).strip()


def peak_rss_mb(pid: int) -> float | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    found = re.search(r"^VmHWM:\s+(\d+) kB", status, flags=re.M)
    return int(found.group(1)) / 1024 if found else None


class FlinkCluster:
    """One JobManager and one TaskManager on localhost; see the module docstring."""

    def __init__(self, folder: Path) -> None:
        self.home = flink_home()
        self.folder = folder
        self.rest_port = free_port()
        self.rest = f"http://localhost:{self.rest_port}"
        self.processes: dict[str, subprocess.Popen] = {}
        self.peaks: dict[str, float | None] = {}
        self.started = time.monotonic()
        self.stopped: float | None = None
        self.notes: list[str] = []  # figures the tests measured, printed with the harness's own
        self.start_seconds: float | None = None
        self.jar_id: str | None = None

    # -- starting and stopping ---------------------------------------------------------------

    def configure(self) -> Path:
        conf = self.folder / "conf"
        shutil.copytree(self.home / "conf", conf)
        settings = {
            "env.java.opts.all": f"{java_options(self.home)} {quick_jvm_options()}",
            "jobmanager.rpc.address": "localhost",
            "jobmanager.rpc.port": free_port(),
            "jobmanager.bind-host": "localhost",
            "jobmanager.memory.process.size": "768m",
            "taskmanager.bind-host": "localhost",
            "taskmanager.host": "localhost",
            "taskmanager.numberOfTaskSlots": SLOTS,
            "taskmanager.memory.process.size": "1024m",
            "rest.address": "localhost",
            "rest.bind-address": "localhost",
            "rest.port": self.rest_port,
            "metrics.fetcher.update-interval": 500,
            "jobmanager.scheduler": "adaptive",
            "jobmanager.adaptive-scheduler.submission.resource-stabilization-timeout": "1s",
            "jobmanager.adaptive-scheduler.executing.cooldown-after-rescaling": "0s",
            "jobmanager.adaptive-scheduler.executing.resource-stabilization-timeout": "1s",
            "state.savepoints.dir": (self.folder / "savepoints").as_uri(),
            "web.tmpdir": str(self.folder / "web"),
            "io.tmp.dirs": str(self.folder / "io"),
        }
        text = "".join(f"{key}: {json.dumps(value)}\n" for key, value in settings.items())
        (conf / "config.yaml").write_text(text, encoding="utf-8")
        return conf

    def start(self) -> None:
        if not (self.home / "bin" / "jobmanager.sh").is_file():
            raise RuntimeError(f"no Flink at {self.home}: run `make flink` (part of `make test`) first")
        conf = self.configure()
        env = {**os.environ, "FLINK_CONF_DIR": str(conf), "FLINK_LOG_DIR": str(self.folder / "log")}
        env["FLINK_PID_DIR"] = str(self.folder)
        for name, script in (("JobManager", "jobmanager.sh"), ("TaskManager", "taskmanager.sh")):
            with open(self.folder / f"{name}.out", "wb") as out:
                self.processes[name] = subprocess.Popen(
                    ["bash", str(self.home / "bin" / script), "start-foreground"],
                    env=env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    preexec_fn=_die_with_parent,
                )
        jar = self.compile_job()
        self.wait_for_slots()
        self.start_seconds = time.monotonic() - self.started
        self.jar_id = self.upload(jar)

    def wait_for_slots(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            for name, process in self.processes.items():
                if process.poll() is not None:
                    raise RuntimeError(
                        f"the Flink {name} exited ({process.returncode}): {self.log_tail(name)}"
                    )
            try:
                if self.get("/overview").get("slots-total") == SLOTS:
                    return
            except OSError:
                pass
            time.sleep(POLL_SECONDS)
        raise RuntimeError(
            f"Flink did not offer {SLOTS} slots within {START_TIMEOUT:g} s: {self.log_tail('JobManager')}"
        )

    def log_tail(self, name: str) -> str:
        path = self.folder / f"{name}.out"
        return path.read_text(errors="replace")[-2000:] if path.exists() else "(no output)"

    def stop(self) -> None:
        """End both JVMs (TERM, then KILL after 30 s), once; their peak memory is kept in ``peaks``."""
        if self.peaks:
            return
        for name, process in self.processes.items():
            self.peaks[name] = peak_rss_mb(process.pid)
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes.values():
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=30)
        self.stopped = time.monotonic()

    # -- the job -----------------------------------------------------------------------------

    def compile_job(self) -> Path:
        classes = self.folder / "classes"
        subprocess.run(
            ["javac", "-nowarn", "-cp", str(self.home / "lib" / "*"), "-d", str(classes), str(JOB_SOURCE)],
            check=True,
            capture_output=True,
        )
        jar = self.folder / "keyed-trace.jar"
        with zipfile.ZipFile(jar, "w") as archive:
            for path in sorted(classes.rglob("*.class")):
                archive.write(path, path.relative_to(classes).as_posix())
        return jar

    def upload(self, jar: Path) -> str:
        boundary = uuid.uuid4().hex
        body = (
            (
                f'--{boundary}\r\nContent-Disposition: form-data; name="jarfile"; filename="{jar.name}"\r\n'
                "Content-Type: application/java-archive\r\n\r\n"
            ).encode()
            + jar.read_bytes()
            + f"\r\n--{boundary}--\r\n".encode()
        )
        answer = self.call("POST", "/jars/upload", body, f"multipart/form-data; boundary={boundary}")
        return Path(answer["filename"]).name

    def program_args(
        self, csv: Path, columns: str, operator: str, max_parallelism: int, rate: float
    ) -> list[str]:
        return [str(csv), columns, operator, str(max_parallelism), f"{rate:g}"]

    def submit(self, args: list[str], parallelism: int) -> str:
        body = {"entryClass": ENTRY_CLASS, "programArgsList": args, "parallelism": parallelism}
        return self.call("POST", f"/jars/{self.jar_id}/run", json.dumps(body).encode())["jobid"]

    def cancel(self, job: str) -> None:
        """Cancel ``job`` if it still runs (a job already stopped is left as it is)."""
        if self.get(f"/jobs/{job}")["state"] == "RUNNING":
            self.call("PATCH", f"/jobs/{job}?mode=cancel")

    # -- REST --------------------------------------------------------------------------------

    def get(self, path: str) -> Any:
        return self.call("GET", path)

    def call(self, method: str, path: str, body: bytes | None = None, kind: str = "application/json") -> Any:
        request = urllib.request.Request(self.rest + path, data=body, method=method)
        if body is not None:
            request.add_header("Content-Type", kind)
        with urllib.request.urlopen(request, timeout=30) as answer:
            text = answer.read().decode()
        return json.loads(text) if text.strip() else {}

    def wait(self, condition, what: str, timeout: float = 180.0, every: float = POLL_SECONDS) -> Any:
        """Poll ``condition()`` until it returns something true; fail naming ``what``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = condition()
            if value:
                return value
            time.sleep(every)
        raise AssertionError(f"Flink: {what} not within {timeout:g} s")

    def keyed_vertex(self, job: str) -> dict[str, Any]:
        return next(v for v in self.get(f"/jobs/{job}")["vertices"] if not v["name"].startswith("Source"))

    def records_in(self, job: str) -> list[int | None]:
        """Each keyed subtask's numRecordsIn as Flink's REST API answers it (read without albic)."""
        vertex = self.keyed_vertex(job)
        wanted = ",".join(f"{i}.numRecordsIn" for i in range(vertex["parallelism"]))
        answer = self.get(f"/jobs/{job}/vertices/{vertex['id']}/metrics?get={wanted}")
        values = {m["id"]: int(float(m["value"])) for m in answer}
        return [values.get(f"{i}.numRecordsIn") for i in range(vertex["parallelism"])]

    def running_at(self, job: str, parallelism: int) -> bool:
        details = self.get(f"/jobs/{job}")
        keyed = [v for v in details["vertices"] if not v["name"].startswith("Source")]
        return details["state"] == "RUNNING" and all(
            v["parallelism"] == parallelism and v["tasks"]["RUNNING"] == parallelism for v in keyed
        )


def run_albic(capsys, *argv: str) -> tuple[int, str, str]:
    """``albic ARGV`` in this process: its exit code, standard output and standard error."""
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err
