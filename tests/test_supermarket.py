"""The supermarket simulation against a per-message reference and hand-computed queues."""
import math

import numpy as np
import pytest

from albic.errors import InvalidParameterError
from solvers.supermarket import StaticRouter, scaled_capacities, simulate


def reference(workers, service):
    """Lindley's recursion per worker, message by message, in plain Python."""
    free, finish = {}, []
    for t, w in enumerate(workers):
        start = max(float(t), free.get(w, 0.0))
        free[w] = start + service[w]
        finish.append(free[w])
    return finish


def test_latencies_queues_and_throughput_match_a_reference():
    rng = np.random.default_rng(0)
    workers = rng.choice(3, size=600, p=[0.6, 0.3, 0.1])  # worker 0 overloaded
    caps = scaled_capacities([1, 1, 1], 0.8)
    result = simulate(StaticRouter(workers), 600, [1, 1, 1], slot=100)
    finish = reference(workers.tolist(), (1 / caps).tolist())
    assert np.allclose(result.latency, np.array(finish) - np.arange(600))
    for k, end in enumerate(result.slot_end):
        pending = [sum(1 for t, w in enumerate(workers[: int(end)]) if w == j and finish[t] > end)
                   for j in range(3)]
        assert result.queue_length[k].tolist() == pending
    done = sum(1 for f in finish if f <= 600)
    assert math.isclose(result.throughput.sum() * 100, done)
    assert result.queue_length[-1, 0] > 50  # an overloaded worker's queue grows


def test_one_overloaded_worker_by_hand():
    # One worker at load 1.25 (capacity 0.8 msg/unit): message i finishes at 1.25 * (i + 1), so its
    # latency is 1.25 + 0.25 i and, at time 100, 80 are done and 20 wait.
    result = simulate(StaticRouter(np.zeros(100, dtype=int)), 100, [1.0], slot=100, load=1.0 / 0.8)
    assert np.allclose(result.latency, 1.25 + 0.25 * np.arange(100))
    assert result.queue_length.tolist() == [[20]]
    assert result.throughput.tolist() == [0.8]


def test_capacity_changes_apply_from_their_slot():
    workers = np.arange(400) % 2
    result = simulate(StaticRouter(workers), 400, [1, 1], slot=100, changes=[(200, [3, 1])])
    assert np.allclose(result.capacities[:2], scaled_capacities([1, 1], 0.8))
    assert np.allclose(result.capacities[2:], scaled_capacities([3, 1], 0.8))
    assert result.queue_length[-1, 1] > result.queue_length[1, 1]  # the weakened worker falls behind


class Recorder(StaticRouter):
    def __init__(self, workers):
        super().__init__(workers)
        self.reports = []

    def report(self, busy, idle):
        self.reports.append((busy.tolist(), idle.tolist()))


def test_reports_arrive_ack_delay_slots_late_with_busy_and_idle_workers():
    router = Recorder(np.zeros(500, dtype=int))  # everything to worker 0 of 2
    simulate(router, 500, [1, 1], slot=100, ack_delay=2)
    assert len(router.reports) == 3  # slots 0..2 reported by the end of slot 4
    assert router.reports[0] == ([0], [1])


def test_bad_arguments_are_named():
    with pytest.raises(InvalidParameterError, match="capacities must be finite numbers > 0"):
        simulate(StaticRouter(np.zeros(10, dtype=int)), 10, [1, 0], slot=5)
    with pytest.raises(InvalidParameterError, match="slot <= n_messages"):
        simulate(StaticRouter(np.zeros(10, dtype=int)), 10, [1], slot=50)
    with pytest.raises(InvalidParameterError, match="invalid worker ids"):
        simulate(StaticRouter(np.full(10, 3)), 10, [1, 1], slot=5)
