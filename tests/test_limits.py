"""Fair-use limits: sliding-window message limiter per session and the process-wide model-call gate."""

from __future__ import annotations

import threading
import time

import pytest

from services import limits
from services.errors import AssistantUnavailable


class Clock:
    """A hand-driven clock."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_limits_sliding_window_counts_per_key_and_frees_as_events_age():
    clock = Clock()
    lim = limits.SlidingWindowLimiter(3, 600, clock=clock)
    seen = []
    for t in (0, 100, 200, 300, 599, 600, 650, 700):
        clock.now = 1000.0 + t
        seen.append(lim.try_acquire("alice"))
    assert seen == [
        limits.LimitDecision(True, 2, 0.0),
        limits.LimitDecision(True, 1, 0.0),
        limits.LimitDecision(True, 0, 400.0),      # full: the event at t=0 frees at t=600
        limits.LimitDecision(False, 0, 300.0),
        limits.LimitDecision(False, 0, 1.0),
        limits.LimitDecision(True, 0, 100.0),      # t=0 aged out; t=100 is now the oldest
        limits.LimitDecision(False, 0, 50.0),
        limits.LimitDecision(True, 0, 100.0),
    ]
    # another session is not affected by alice's use
    assert lim.try_acquire("bob") == limits.LimitDecision(True, 2, 0.0)
    assert lim.check("alice") == limits.LimitDecision(False, 0, 100.0)


def test_limits_acquire_raises_a_clear_too_many_messages():
    clock = Clock()
    lim = limits.SlidingWindowLimiter(20, 600, clock=clock)
    for _ in range(20):
        lim.acquire("s")
    clock.now += 30
    with pytest.raises(limits.TooManyMessages) as info:
        lim.acquire("s")
    assert str(info.value) == ("You have sent 20 messages in the last 10 minutes, the most this server allows. "
                               "You can send the next one in 10 minutes.")
    assert info.value.retry_after_s == 570.0
    assert isinstance(info.value, AssistantUnavailable)
    clock.now += 560
    with pytest.raises(limits.TooManyMessages) as info:
        lim.acquire("s")
    assert str(info.value).endswith("You can send the next one in 10 seconds.")
    clock.now += 10
    assert lim.acquire("s").allowed is True


def test_limits_limiter_forgets_oldest_keys_beyond_its_bound():
    clock = Clock()
    lim = limits.SlidingWindowLimiter(1, 600, clock=clock, max_keys=3)
    for key in ("a", "b", "c", "d"):
        lim.try_acquire(key)
    # "a" was dropped to keep memory bounded, so it may send again; "d" may not
    assert [lim.check(k).allowed for k in ("a", "d")] == [True, False]


def test_limits_limiter_is_exact_under_threads():
    lim = limits.SlidingWindowLimiter(50, 600)
    allowed = []

    def worker() -> None:
        for _ in range(20):
            allowed.append(lim.try_acquire("shared").allowed)

    threads = [threading.Thread(target=worker) for _ in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert (allowed.count(True), allowed.count(False)) == (50, 150)


def test_limits_gate_caps_concurrent_calls():
    gate = limits.ConcurrencyGate(4, timeout_s=10)
    lock = threading.Lock()
    running = peak = 0

    def call() -> None:
        nonlocal running, peak
        with gate.slot():
            with lock:
                running += 1
                peak = max(peak, running)
            time.sleep(0.05)
            with lock:
                running -= 1

    threads = [threading.Thread(target=call) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert (peak, gate.in_use) == (4, 0)


def test_limits_gate_times_out_with_model_busy_and_frees_slots_on_error():
    gate = limits.ConcurrencyGate(1, timeout_s=0.2)
    release = threading.Event()
    holder_in = threading.Event()

    def hold() -> None:
        with gate.slot():
            holder_in.set()
            release.wait(5)

    t = threading.Thread(target=hold)
    t.start()
    holder_in.wait(5)
    started = time.perf_counter()
    with pytest.raises(limits.ModelBusy) as info:
        with gate.slot():
            pass
    waited = time.perf_counter() - started
    assert 0.15 < waited < 2
    assert str(info.value) == ("All 1 assistant slots of this server stayed busy for 1 second; "
                               "nothing was sent to the model.")
    release.set()
    t.join()
    with pytest.raises(RuntimeError), gate.slot():
        raise RuntimeError("model failed")
    assert gate.in_use == 0
    with gate.slot(timeout_s=0):
        assert gate.in_use == 1


def test_limits_configuration_from_environment():
    lim = limits.limiter_from_env({})
    gate = limits.gate_from_env({})
    assert (lim.limit, lim.window_s, gate.limit, gate.timeout_s) == (20, 600.0, 4, 30.0)
    lim = limits.limiter_from_env({"ASSISTANT_MESSAGE_LIMIT": "5", "ASSISTANT_MESSAGE_WINDOW_S": "60"})
    gate = limits.gate_from_env({"MODEL_CONCURRENCY": "2", "MODEL_WAIT_S": "3.5"})
    assert (lim.limit, lim.window_s, gate.limit, gate.timeout_s) == (5, 60.0, 2, 3.5)
    # bad values fall back to the defaults instead of disabling the limits
    lim = limits.limiter_from_env({"ASSISTANT_MESSAGE_LIMIT": "0", "ASSISTANT_MESSAGE_WINDOW_S": "soon"})
    gate = limits.gate_from_env({"MODEL_CONCURRENCY": "-1", "MODEL_WAIT_S": "nan"})
    assert (lim.limit, lim.window_s, gate.limit, gate.timeout_s) == (20, 600.0, 4, 30.0)


def test_limits_process_instances_are_shared():
    assert limits.message_limiter() is limits.message_limiter()
    assert limits.model_gate() is limits.model_gate()
