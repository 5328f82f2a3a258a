"""The supermarket simulation against a per-message reference and hand-computed queues."""

import math

import numpy as np
import pytest

from albic.solvers.supermarket import StaticRouter, scaled_capacities, simulate


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
        pending = [
            sum(1 for t, w in enumerate(workers[: int(end)]) if w == j and finish[t] > end) for j in range(3)
        ]
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


def test_of_two_changes_in_one_slot_the_later_holds():
    workers = np.arange(400) % 2
    changes = [(200, [3, 1]), (250, [1, 3]), (100, [2, 2])]
    result = simulate(StaticRouter(workers), 400, [1, 1], slot=100, changes=changes)
    assert np.allclose(result.capacities[1], scaled_capacities([2, 2], 0.8))
    assert np.allclose(result.capacities[2:], scaled_capacities([1, 3], 0.8))


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


def bounded_reference(workers, service, bound, drop):
    """Message by message in plain Python: the source emits at most one message per unit of time
    (never before its arrival); a worker holds at most `bound` unfinished messages; a full one
    makes the source wait for its oldest message to finish, or loses the message."""
    finishes = {w: [] for w in set(workers)}
    clock, emits, latencies = -1.0, [], []
    for t, w in enumerate(workers):
        emit = max(float(t), clock + 1.0)
        unfinished = [f for f in finishes[w] if f > emit]
        if len(unfinished) >= bound:
            if drop:
                clock = emit
                emits.append(emit)
                latencies.append(math.nan)
                continue
            emit = sorted(unfinished)[-bound]  # then exactly bound - 1 are left
        start = max(emit, max(finishes[w], default=0.0))
        finishes[w].append(start + service[w])
        clock = emit
        emits.append(emit)
        latencies.append(start + service[w] - emit)
    return np.array(emits), np.array(latencies)


@pytest.mark.parametrize("overflow", ["block", "drop"])
def test_bounded_queues_match_a_reference(overflow):
    rng = np.random.default_rng(3)
    workers = rng.choice(3, size=900, p=[0.6, 0.3, 0.1])  # worker 0 overloaded (0.6 > 1/3 / 0.8)
    result = simulate(StaticRouter(workers), 900, [1, 1, 1], slot=100, queue_bound=5, overflow=overflow)
    service = (1 / scaled_capacities([1, 1, 1], 0.8)).tolist()
    emits, latencies = bounded_reference(workers.tolist(), service, 5, overflow == "drop")
    assert np.allclose(result.emitted, emits)
    assert np.allclose(result.latency, latencies, equal_nan=True)
    assert result.queue_length.max() <= 5
    assert np.nanmax(result.latency) <= 5 * max(service) + 1e-9  # a bounded queue bounds latency
    if overflow == "drop":
        assert result.dropped.sum() == np.isnan(latencies).sum() > 100
        assert result.emitted[-1] == 899.0  # nobody waits
    else:
        assert not result.dropped.any() and result.emitted[-1] > 1000  # the source fell behind
        # throughput: worker 0 (capacity 1/2.4 per unit) gets 60% of the messages, so the source is
        # held to about (1/2.4) / 0.6 = 0.69 messages per unit of time
        assert result.overall_throughput() == pytest.approx((1 / 2.4) / 0.6, rel=0.05)


def test_a_large_bound_is_the_unbounded_model():
    workers = np.random.default_rng(0).choice(2, size=500)
    free = simulate(StaticRouter(workers), 500, [1, 1], slot=100)
    bounded = simulate(StaticRouter(workers), 500, [1, 1], slot=100, queue_bound=500)
    assert np.allclose(free.latency, bounded.latency) and np.array_equal(
        free.queue_length, bounded.queue_length
    )
    assert np.allclose(free.throughput, bounded.throughput)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="capacities must be finite numbers > 0"):
        simulate(StaticRouter(np.zeros(10, dtype=int)), 10, [1, 0], slot=5)
    with pytest.raises(ValueError, match="slot <= n_messages"):
        simulate(StaticRouter(np.zeros(10, dtype=int)), 10, [1], slot=50)
    with pytest.raises(ValueError, match="invalid worker ids"):
        simulate(StaticRouter(np.full(10, 3)), 10, [1, 1], slot=5)
    with pytest.raises(ValueError, match="queue_bound must be an int >= 1 or None, got 0"):
        simulate(StaticRouter(np.zeros(10, dtype=int)), 10, [1], slot=5, queue_bound=0)
    with pytest.raises(ValueError, match="overflow must be 'block' or 'drop', got 'spill'"):
        simulate(StaticRouter(np.zeros(10, dtype=int)), 10, [1], slot=5, queue_bound=3, overflow="spill")
