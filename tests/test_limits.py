"""Fair-use limits: sliding-window message limiter per session and the process-wide model-call gate."""

from __future__ import annotations

import threading
import time

import pytest

from services import limits, settings
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
    assert lim.try_acquire("alice") == limits.LimitDecision(False, 0, 100.0)  # refused: nothing counted


def test_limits_refusal_says_when_to_send_again():
    clock = Clock()
    lim = limits.SlidingWindowLimiter(20, 600, clock=clock)
    for _ in range(20):
        assert lim.try_acquire("s").allowed
    clock.now += 30
    refused = lim.try_acquire("s")
    assert refused.message(lim.limit, lim.window_s) == (
        "You have sent 20 messages in the last 10 minutes, the most this server allows. "
        "You can send the next one in 10 minutes.")
    assert refused.retry_after_s == 570.0
    clock.now += 560
    assert lim.try_acquire("s").message(lim.limit, lim.window_s).endswith("You can send the next one in 10 seconds.")
    clock.now += 10
    assert lim.try_acquire("s").allowed is True


def test_limits_limiter_forgets_oldest_keys_beyond_its_bound():
    clock = Clock()
    lim = limits.SlidingWindowLimiter(1, 600, clock=clock, max_keys=3)
    for key in ("a", "b", "c", "d"):
        lim.try_acquire(key)
    # "a" was dropped to keep memory bounded, so it may send again; "d" may not
    assert [lim.try_acquire(k).allowed for k in ("a", "d")] == [True, False]


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
    assert isinstance(info.value, AssistantUnavailable)  # the assistant page shows it as such
    release.set()
    t.join()
    with pytest.raises(RuntimeError), gate.slot():
        raise RuntimeError("model failed")
    assert gate.in_use == 0
    with gate.slot(timeout_s=0):
        assert gate.in_use == 1


def test_limits_configuration_from_settings():
    lim = limits.shared_limiter_from(settings.read({}), dict)
    gate = limits.gate_from(settings.read({}))
    assert (lim.limit, lim.per_network, lim.window_s, gate.limit, gate.timeout_s) == (20, 60, 600.0, 4, 30.0)
    lim = limits.shared_limiter_from(
        settings.read({"ASSISTANT_MESSAGE_LIMIT": "5", "ASSISTANT_MESSAGE_WINDOW_S": "60"}), dict)
    gate = limits.gate_from(settings.read({"MODEL_CONCURRENCY": "2", "MODEL_WAIT_S": "3.5"}))
    assert (lim.limit, lim.per_network, lim.window_s, gate.limit, gate.timeout_s) == (5, 15, 60.0, 2, 3.5)
    # bad values are refused with their names (they used to fall back to the defaults silently)
    for bad in ({"ASSISTANT_MESSAGE_LIMIT": "0"}, {"ASSISTANT_MESSAGE_WINDOW_S": "soon"},
                {"MODEL_CONCURRENCY": "-1"}, {"MODEL_WAIT_S": "nan"}):
        with pytest.raises(settings.SettingsError, match=f"^{next(iter(bad))}="):
            settings.read(bad)


def test_limits_process_instances_are_shared(monkeypatch):
    monkeypatch.setattr(limits, "_visitor_limiter", None)  # built from this test's environment, dropped after it
    assert limits.visitor_limiter() is limits.visitor_limiter()
    assert limits.model_gate() is limits.model_gate()


# ---- limits shared through PostgreSQL -------------------------------------------------------------
VISITOR = limits.Visitor.from_values("browser token A", "192.0.2.10")

_CHILD = """
import json, sys
from services import limits, settings
from services.data.db import Database
db = Database(sys.argv[1])
lim = limits.SharedLimiter(lambda: db, "test_message", 3, 5, 100, 600)
visitor = limits.Visitor.from_values(sys.argv[2], sys.argv[3])
print(json.dumps([lim.try_acquire(visitor).allowed for _ in range(int(sys.argv[4]))]))
db.close()
"""


def _child(db, browser: str, network: str, tries: int) -> list[bool]:
    import json
    import subprocess
    import sys
    from pathlib import Path

    out = subprocess.run([sys.executable, "-c", _CHILD, db.url, browser, network, str(tries)], check=True,
                         capture_output=True, text=True, timeout=120, cwd=Path(__file__).resolve().parent.parent)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture()
def shared(db):
    db.execute("DELETE FROM app.limit_events WHERE kind = 'test_message'")
    yield limits.SharedLimiter(lambda: db, "test_message", per_browser=3, per_network=5, global_limit=100,
                               window_s=600)
    db.execute("DELETE FROM app.limit_events WHERE kind = 'test_message'")


def test_limits_shared_between_two_processes(db, shared):
    started = time.monotonic()
    assert [shared.try_acquire(VISITOR).allowed for _ in range(2)] == [True, True]
    # another app process on the same database sees the two and allows only one more
    assert _child(db, "browser token A", "192.0.2.10", 2) == [True, False]
    refused = shared.try_acquire(VISITOR)
    assert (refused.allowed, refused.blocker, refused.remaining) == (False, "b", 0)
    # the oldest counted message expires 600 s after it was sent (however long the child took to start)
    assert 600 - (time.monotonic() - started) - 1 < refused.retry_after_s <= 600
    assert shared.message(refused).startswith("You have sent 3 messages in the last 10 minutes")


def test_limits_network_and_global_caps_hold_for_fresh_browsers(db, shared):
    # a new cookie (fresh browser) per message from one address: the network cap stops it at 5
    got = [shared.try_acquire(limits.Visitor.from_values(f"fresh {i}", "192.0.2.99")) for i in range(7)]
    assert [d.allowed for d in got] == [True] * 5 + [False] * 2
    assert got[-1].blocker == "n" and "came from your network" in shared.message(got[-1])
    # the global cap counts everyone
    tiny = limits.SharedLimiter(lambda: db, "test_message", per_browser=3, per_network=5, global_limit=6,
                                window_s=600)
    last = tiny.try_acquire(limits.Visitor.from_values("someone else", "198.51.100.2"))
    assert (last.allowed, tiny.try_acquire(limits.Visitor.from_values("and another", "198.51.100.3")).blocker) == (
        True, "g")


def test_limits_window_frees_old_events(db, shared):
    assert [shared.try_acquire(VISITOR).allowed for _ in range(4)] == [True, True, True, False]
    db.execute("UPDATE app.limit_events SET at = at - interval '601 seconds' WHERE kind = 'test_message'")
    assert shared.try_acquire(VISITOR).allowed


def test_limits_fall_back_to_the_process_when_the_database_fails(db):
    from services.errors import DatabaseUnavailable

    def broken():
        raise DatabaseUnavailable("down for the test")

    lim = limits.SharedLimiter(broken, "test_message", per_browser=2, per_network=5, global_limit=100,
                               window_s=600)
    assert [lim.try_acquire(VISITOR).allowed for _ in range(3)] == [True, True, False]


def test_limits_new_session_does_not_reset_the_message_limit(db, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from tests.conftest import PROJECT
    from tests.fake_anthropic import FakeAnthropic

    db.execute("DELETE FROM app.limit_events WHERE kind = 'assistant_message'")
    monkeypatch.setenv("ASSISTANT_MESSAGE_LIMIT", "1")
    monkeypatch.setattr(limits, "_visitor_limiter", None)
    with FakeAnthropic() as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-not-real")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        server.add_text("Hello. Which condition are you looking into?")
        server.add_text("A second answer that must not be reached.")
        at = AppTest.from_file(str(PROJECT / "app_pages" / "assistant.py"), default_timeout=120).run()
        at.chat_input(key="asst_chat").set_value("hello").run()
        assert not at.exception and not at.error
        next(b for b in at.button if b.key == "asst_new").click()
        at.run()
        at.chat_input(key="asst_chat").set_value("hello again").run()
        assert [e.value for e in at.error][:1] and "You have sent 1 messages" in at.error[0].value
    db.execute("DELETE FROM app.limit_events WHERE kind = 'assistant_message'")
    monkeypatch.setattr(limits, "_visitor_limiter", None)
