"""The driver/task exchange of albic.spark.exchange without Spark: threads play the tasks of a
barrier stage, so a failed task and the restart of the whole stage, a stranger on the port, and a
job that ends before its tasks connect can each be staged exactly."""

from __future__ import annotations

import socket
import threading

import numpy as np
import pytest

from albic.base.errors import AlbicError
from albic.spark.exchange import DriverExchange, ExchangeUnavailable

CHUNKS = [np.arange(0, 3), np.arange(3, 5), np.arange(5, 9), np.arange(9, 10), np.arange(10, 14)]
VALUES = np.linspace(-1.0, 2.0, 14)


def doubled(held, values):
    """What a task answers: its rows' values, doubled (rows in the order it took its chunks)."""
    rows = np.concatenate(held) if held else np.empty(0, dtype=int)
    return 2.0 * values[rows]


def run_tasks(task, tasks):
    """One attempt of a stage: ``tasks`` threads, each running ``task`` for its index."""
    threads = [threading.Thread(target=lambda i=i: list(task([i]))) for i in range(tasks)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def gathered(parts, size):
    new = np.full(size, np.nan)
    rows = np.concatenate([r for r, _ in parts])
    assert sorted(rows.tolist()) == list(range(size))  # every row answered, exactly once
    for r, v in parts:
        new[r] = v
    return new


@pytest.mark.parametrize("tasks", [1, 2, 3, 7])
def test_every_row_is_answered_once_whatever_the_task_count(tasks):
    """Seven tasks for five chunks: two of them hold nothing and answer with no values."""
    with DriverExchange(CHUNKS, tasks=tasks, host="127.0.0.1") as exchange:
        task = exchange.task(prepare=lambda rows: rows, step=doubled)
        exchange.start(lambda: run_tasks(task, tasks))
        for scale in (1.0, -3.0, 0.5):  # three iterations over the same connections
            parts = exchange.sweep(scale * VALUES)
            assert len(parts) == tasks
            np.testing.assert_array_equal(gathered(parts, 14), 2.0 * scale * VALUES)


def test_a_failed_task_restarts_the_stage_and_the_sweep_is_repeated():
    """In the stage's first attempt task 1 fails answering the first sweep (every task answers,
    even one that holds no chunk); like Spark, the job then runs a new attempt of the whole stage.
    The driver forgets what it dealt, deals the chunks again, and the sweep returns every row's
    value once."""
    attempts, failures = [], []
    with DriverExchange(CHUNKS, tasks=2, host="127.0.0.1") as exchange:

        def step(held, values):
            if len(attempts) == 1 and threading.current_thread().name == "t1":
                raise RuntimeError("executor lost")
            return doubled(held, values)

        task = exchange.task(prepare=lambda rows: rows, step=step)

        def run(i):
            try:
                list(task([i]))
            except RuntimeError as exc:
                failures.append(str(exc))

        def stage():
            for attempt in range(2):
                attempts.append(attempt)
                threads = [threading.Thread(target=run, args=(i,), name=f"t{i}") for i in range(2)]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join()

        exchange.start(stage)
        np.testing.assert_array_equal(gathered(exchange.sweep(VALUES), 14), 2.0 * VALUES)
        np.testing.assert_array_equal(gathered(exchange.sweep(-VALUES), 14), -2.0 * VALUES)
    assert attempts == [0, 1] and failures == ["executor lost"]


def test_a_connection_without_the_token_is_closed_unread():
    with DriverExchange(CHUNKS, tasks=2, host="127.0.0.1") as exchange:
        stranger = socket.create_connection(exchange.address)
        stranger.sendall(b"x" * 32 + (0).to_bytes(4, "little"))
        task = exchange.task(prepare=lambda rows: rows, step=doubled)
        exchange.start(lambda: run_tasks(task, 2))
        np.testing.assert_array_equal(gathered(exchange.sweep(VALUES), 14), 2.0 * VALUES)
        stranger.settimeout(5)
        assert stranger.recv(1) == b""  # closed by the driver, never dealt a chunk
        stranger.close()


def test_a_job_that_ends_before_its_tasks_connect_says_why():
    def job():
        raise RuntimeError("An error occurred\nConnectionError: albic: cannot connect to the driver")

    with DriverExchange(CHUNKS, tasks=2, host="127.0.0.1") as exchange:
        exchange.start(job)
        with pytest.raises(
            ExchangeUnavailable, match="before every task had connected.*albic: cannot connect"
        ):
            exchange.sweep(VALUES)


def test_a_job_that_fails_after_connecting_raises_its_own_error():
    with DriverExchange(CHUNKS, tasks=1, host="127.0.0.1") as exchange:

        def step(held, values):
            raise ValueError("numbers went wrong")

        task = exchange.task(prepare=lambda rows: rows, step=step)
        failure = []

        def job():
            try:
                list(task([0]))
            except ValueError as exc:
                failure.append(exc)
                raise

        exchange.start(job)
        with pytest.raises(ValueError, match="numbers went wrong"):
            exchange.sweep(VALUES)
    assert failure


def test_a_job_that_ends_quietly_while_the_driver_waits_is_an_error():
    with DriverExchange(CHUNKS, tasks=1, host="127.0.0.1") as exchange:
        task = exchange.task(prepare=lambda rows: rows, step=doubled)

        def job():
            conn = socket.create_connection(exchange.address)
            conn.sendall(task.keywords["token"] + (0).to_bytes(4, "little"))
            conn.close()  # ... and goes away without asking for work

        exchange.start(job)
        with pytest.raises(AlbicError, match="the Spark job ended while the driver waited for the tasks"):
            exchange.sweep(VALUES)


def test_an_unusable_port_is_said_in_one_line():
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        with pytest.raises(ExchangeUnavailable, match=f"cannot listen on 127.0.0.1:{port}"):
            DriverExchange(CHUNKS, tasks=1, host="127.0.0.1", port=port, bind="127.0.0.1")
