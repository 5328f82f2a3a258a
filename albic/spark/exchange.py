"""Iterations inside one Spark job: the tasks keep their rows, the driver sends them the current
values and gathers the new ones over a socket (PMC's value iteration, design section 7).

Why: value iteration as one Spark job per iteration pays Spark's fixed cost of a job (launch, the
Python worker round trip, the result: ~0.1 s here) at every iteration, on one core and on two
alike. On the benchmark's 5,873 states that fixed cost was as large as the work, and two cores were
barely faster than one (1.30x). Here all iterations are one *barrier* stage: each task connects to
a server in the driver, takes *chunks* of rows from it one at a time and builds them
(``prepare``) until none are left -- so a task whose core is shared, or that started late, simply
takes fewer -- then answers every vector of values with its rows' new values (``step`` of its
chunks, in the order it took them) until it is told to stop. Per iteration only the values
travel (47 KB for 5,873 states), in about a millisecond.

Protocol (integers little-endian, values float64)::

    task -> driver   HELLO: 32-byte token, uint32 task index
    task -> driver   b"W" (work, please)
    driver -> task   b"C", uint32 chunk index              or b"N" (no chunks left)
    driver -> task   b"V", uint64 count, count values      or b"S" (stop)
    task -> driver   uint64 count, count values            (its rows' new values)

A connection that does not present the run's token is closed unread. A barrier stage starts its
tasks together (Spark refuses one that needs more slots than the cluster has) and restarts them
together when one fails: the driver then forgets every chunk it handed out, waits for the new set
of tasks and repeats the iteration, which is a deterministic function of the values (each row's
new value is computed alone, whichever task holds it). If the job ends before every task has
connected -- executors that cannot reach the driver, a cluster that does not run barrier stages
(dynamic allocation) -- :meth:`DriverExchange.sweep` raises :class:`ExchangeUnavailable`, so the
caller can fall back to one Spark job per iteration.

Addresses: the driver listens on every interface (``spark.driver.bindAddress`` when set) on the port
``spark.albic.exchange.port`` (default: a free one) and tells the tasks to connect to
``spark.albic.exchange.host`` (default ``spark.driver.host``): set both (``--conf``) on a cluster
whose firewall admits only known ports, or where executors know the driver by another name.

This module is what the Python workers import (with numpy and :mod:`albic.spark.pmc_tasks`):
nothing heavier, so a worker starts in a fraction of the time ``albic.spark.precompute`` (pandas)
would take.
"""

from __future__ import annotations

import functools
import hmac
import secrets
import select
import socket
import struct
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from albic.base.errors import AlbicError

__all__ = ["DriverExchange", "ExchangeUnavailable", "serve", "HOST_CONF", "PORT_CONF"]

HOST_CONF = "spark.albic.exchange.host"
PORT_CONF = "spark.albic.exchange.port"
TOKEN_BYTES = 32
CONNECT_SECONDS = 30.0  # a task's wait for the driver's server before it gives up
HELLO_SECONDS = 10.0  # the driver's wait for a HELLO after accepting a connection
POLL_SECONDS = 0.2  # how often the driver looks at the job while it waits for the tasks
STOP_SECONDS = 30.0  # the driver's wait for the job to end once the tasks are told to stop
_COUNT = struct.Struct("<Q")
_INDEX = struct.Struct("<I")
_VALUES = np.dtype("<f8")


def _nothing() -> None:
    pass


def _reason(error: BaseException | None) -> str | None:
    """The line of a job's error that says why (a Spark error's first line only names the call)."""
    lines = [line.strip() for line in str(error or "").splitlines() if line.strip()]
    ours = [line[line.index("albic:") :] for line in lines if "albic:" in line]
    theirs = [line.split("Exception:", 1)[1].strip() for line in lines if "Exception:" in line]
    return next(iter(ours + theirs + lines), None)


class ExchangeUnavailable(AlbicError):
    """The job ended before every task had connected to the driver: run one job per iteration."""


def _receive(conn: socket.socket, size: int) -> bytes:
    """Exactly ``size`` bytes; ``EOFError`` when the other side closed first."""
    buffer = bytearray(size)
    view, got = memoryview(buffer), 0
    while got < size:
        read = conn.recv_into(view[got:])
        if not read:
            raise EOFError("connection closed")
        got += read
    return bytes(buffer)


def _values_frame(values: np.ndarray) -> bytes:
    values = np.ascontiguousarray(values, dtype=_VALUES)
    return _COUNT.pack(values.size) + values.tobytes()


def _read_values(conn: socket.socket) -> np.ndarray:
    (count,) = _COUNT.unpack(_receive(conn, _COUNT.size))
    return np.frombuffer(_receive(conn, count * _VALUES.itemsize), dtype=_VALUES).astype(float)


def serve(
    partition: Iterable[int],
    *,
    address: tuple[str, int],
    token: bytes,
    chunks: Sequence[Any],
    prepare: Callable[[Any], Any],
    step: Callable[[list[Any], np.ndarray], np.ndarray],
) -> Iterator[Any]:
    """A task's side (``rdd.barrier().mapPartitions(partial(serve, ...))``) for the partition's
    task index: connect to the driver, ``prepare(chunks[k])`` for every chunk ``k`` the driver
    hands it, then answer each vector of values with ``step(prepared, values)`` -- the new values
    of all its chunks' rows, in the order it took them -- until the driver says stop or closes.

    Connecting comes first, so an executor that cannot reach the driver fails at once, not after
    building its rows. Yields nothing: the results travel over the socket.
    """
    for index in partition:
        try:
            conn = socket.create_connection(address, timeout=CONNECT_SECONDS)
        except OSError as exc:
            raise ConnectionError(
                f"albic: this Spark task cannot connect to the driver at {address[0]}:{address[1]} "
                f"({exc}); the executors must reach the driver there (set {HOST_CONF} and "
                f"{PORT_CONF}), or run with one Spark job per iteration (exchange='jobs')"
            ) from exc
        with conn:
            conn.settimeout(None)
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn.sendall(token + _INDEX.pack(int(index)))
            try:
                _answer_values(conn, _take_chunks(conn, chunks, prepare), step)
            except EOFError:
                pass  # the driver is gone (done, interrupted, or restarting the stage)
    return iter(())


def _take_chunks(conn: socket.socket, chunks: Sequence[Any], prepare: Callable[[Any], Any]) -> list[Any]:
    held = []
    while True:
        conn.sendall(b"W")
        if _receive(conn, 1) != b"C":
            return held
        (k,) = _INDEX.unpack(_receive(conn, _INDEX.size))
        held.append(prepare(chunks[k]))


def _answer_values(
    conn: socket.socket, held: list[Any], step: Callable[[list[Any], np.ndarray], np.ndarray]
) -> None:
    while _receive(conn, 1) == b"V":
        conn.sendall(_values_frame(step(held, _read_values(conn))))


class DriverExchange:
    """The driver's side: a server for the ``tasks`` tasks of one job, which share ``chunks``
    (arrays of row indices) between them.

    :meth:`task` is what each task runs; :meth:`start` runs ``job`` (which submits the barrier
    stage and returns when it ends) in a thread; :meth:`sweep` sends the values to every task and
    returns ``[(rows a task holds, their new values)]``; :meth:`close` tells the tasks to stop and
    waits for the job (and cancels it if it does not end).

    Two threads stand in for a Spark job's two tasks here:

    >>> chunks = [np.array([0, 1]), np.array([2]), np.array([3])]
    >>> exchange = DriverExchange(chunks, tasks=2, host="127.0.0.1")
    >>> def step(held, values):  # a task's answer: its rows' values doubled (it may hold none)
    ...     return np.array([2 * values[row] for rows in held for row in rows])
    >>> task = exchange.task(prepare=lambda rows: rows, step=step)
    >>> def job():  # on Spark: sc.parallelize(range(2), 2).barrier().mapPartitions(task).collect()
    ...     tasks = [threading.Thread(target=lambda i=i: list(task([i]))) for i in range(2)]
    ...     _ = [t.start() for t in tasks], [t.join() for t in tasks]
    >>> exchange.start(job)
    >>> parts = exchange.sweep(np.array([1.0, 2.0, 3.0, 4.0]))
    >>> new = np.empty(4)
    >>> for rows, values in parts:
    ...     new[rows] = values
    >>> new.tolist(), sorted(len(rows) for rows, _ in parts) in ([1, 3], [2, 2], [0, 4])
    ([2.0, 4.0, 6.0, 8.0], True)
    >>> exchange.close()
    """

    def __init__(
        self, chunks: Sequence[np.ndarray], *, tasks: int, host: str, port: int = 0, bind: str = ""
    ) -> None:
        if tasks < 1:
            raise AlbicError(f"an exchange needs at least one task, got {tasks}")
        self.chunks = [np.asarray(c) for c in chunks]
        self.tasks = tasks
        self._token = secrets.token_hex(TOKEN_BYTES // 2).encode()
        try:
            self._server = socket.create_server((bind, port))
        except OSError as exc:
            raise ExchangeUnavailable(
                f"the driver cannot listen on {bind or '*'}:{port} ({exc}; see {PORT_CONF})"
            ) from exc
        self.address = (host, int(self._server.getsockname()[1]))
        self._conns: dict[int, socket.socket] = {}
        self._held: dict[int, list[int]] = {}  # the chunks each task took, in order
        self._ready: set[int] = set()  # the tasks told that no chunks are left
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self._connected_once = False
        self._cancel: Callable[[], None] = _nothing

    def task(
        self, prepare: Callable[[Any], Any], step: Callable[[list[Any], np.ndarray], np.ndarray]
    ) -> Callable[[Iterable[int]], Iterator[Any]]:
        """What each task runs: :func:`serve` bound to this server's address, token and chunks."""
        return functools.partial(
            serve, address=self.address, token=self._token, chunks=self.chunks, prepare=prepare, step=step
        )

    def start(
        self,
        job: Callable[[], Any],
        *,
        cancel: Callable[[], None] = _nothing,
        thread: type[threading.Thread] = threading.Thread,
    ) -> None:
        """Run ``job`` in a ``thread`` (PySpark's ``InheritableThread`` for a Spark job)."""

        def run() -> None:
            try:
                job()
            except BaseException as exc:  # handed to the driver's thread by _check_job
                self._error = exc

        self._cancel = cancel
        self._thread = thread(target=run, name="albic-exchange-job", daemon=True)
        self._thread.start()

    def sweep(self, values: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        """Every task's rows and their new values for ``values``. When a task's connection breaks
        (Spark restarts a failed barrier stage whole), waits for the new tasks and asks again."""
        frame = b"V" + _values_frame(values)
        while True:
            self._hand_out_chunks()
            try:
                for conn in self._conns.values():
                    conn.sendall(frame)
                return [(rows, self._answer(t, rows.size)) for t, rows in self._rows_of_tasks()]
            except (OSError, EOFError):
                self._restart()

    def close(self, abort: bool = False) -> None:
        """Tell the tasks to stop, close the server, and wait for the job to end (``abort``:
        cancel it first, as after an error or Ctrl-C, where a task may be deep in its ``prepare``)."""
        if abort and self._thread is not None and self._thread.is_alive():
            self._cancel()
        for conn in self._conns.values():
            try:
                conn.sendall(b"S")
            except OSError:
                pass  # that task is gone already
        self._restart()
        self._server.close()
        if self._thread is None:
            return
        self._thread.join(STOP_SECONDS)
        if self._thread.is_alive():
            self._cancel()
            self._thread.join(STOP_SECONDS)

    def __enter__(self) -> DriverExchange:
        return self

    def __exit__(self, kind: object, *exc: object) -> None:
        self.close(abort=kind is not None)

    def _rows_of_tasks(self) -> list[tuple[int, np.ndarray]]:
        """Each task's rows, in the order it took its chunks (the order of its answers)."""
        empty = np.empty(0, dtype=np.int64)
        return [
            (task, np.concatenate([empty, *(self.chunks[k] for k in self._held[task])]))
            for task in sorted(self._conns)
        ]

    def _answer(self, task: int, expected: int) -> np.ndarray:
        conn = self._conns[task]
        self._wait_readable([conn], f"task {task}'s values")
        values = _read_values(conn)
        if values.size != expected:
            raise AlbicError(f"task {task} answered {values.size} values for its {expected} rows")
        return values

    def _hand_out_chunks(self) -> None:
        """Accept the tasks and hand out the chunks until every task has been told none are left."""
        while len(self._ready) < self.tasks:
            readable = self._wait_readable([self._server, *self._conns.values()], "the tasks")
            if self._server in readable:
                self._accept()
            for task, conn in list(self._conns.items()):
                if conn not in readable:
                    continue
                try:
                    if _receive(conn, 1) != b"W":
                        raise EOFError("unexpected message")
                    k = self._next_chunk()
                    if k is None:
                        conn.sendall(b"N")
                        self._ready.add(task)
                    else:
                        self._held[task].append(k)
                        conn.sendall(b"C" + _INDEX.pack(k))
                except (OSError, EOFError):
                    self._restart()  # a task failed: Spark restarts the whole stage
                    break

    def _next_chunk(self) -> int | None:
        taken = {k for held in self._held.values() for k in held}
        return next((k for k in range(len(self.chunks)) if k not in taken), None)

    def _accept(self) -> None:
        conn, _ = self._server.accept()
        try:
            conn.settimeout(HELLO_SECONDS)
            hello = _receive(conn, TOKEN_BYTES + _INDEX.size)
            conn.settimeout(None)
        except (OSError, EOFError):
            conn.close()
            return
        (task,) = _INDEX.unpack(hello[TOKEN_BYTES:])
        if not hmac.compare_digest(hello[:TOKEN_BYTES], self._token) or task >= self.tasks:
            conn.close()  # not one of this run's tasks
            return
        if task in self._conns:  # a restarted stage's task: the old set is gone
            self._restart()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._conns[task] = conn
        self._held[task] = []
        self._connected_once |= len(self._conns) == self.tasks

    def _restart(self) -> None:
        for conn in self._conns.values():
            conn.close()
        self._conns.clear()
        self._held.clear()
        self._ready.clear()

    def _wait_readable(self, socks: list[socket.socket], what: str) -> list[socket.socket]:
        while True:
            readable = select.select(socks, [], [], POLL_SECONDS)[0]
            if readable:
                return readable
            self._check_job(what)

    def _check_job(self, what: str) -> None:
        """Raise when the job has ended while the driver waits for ``what``."""
        if self._thread is None or self._thread.is_alive():
            return
        error = self._error
        if not self._connected_once:
            reason = _reason(error)
            raise ExchangeUnavailable(
                "the Spark job ended before every task had connected to the driver"
                + (f": {reason}" if reason else "")
            ) from error
        if error is not None:
            raise error
        raise AlbicError(f"the Spark job ended while the driver waited for {what}")
