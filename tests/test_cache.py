"""The single-flight TTL cache and the cross-thread dashboard cache built on it."""

from __future__ import annotations

import threading
import time

import pytest

from services.cache import SingleFlightCache
from services.dashboard import stats
from services.dashboard.filters import Filters


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_cache_concurrent_callers_share_one_computation():
    cache: SingleFlightCache[int] = SingleFlightCache(60)
    calls = []
    gate = threading.Event()

    def compute() -> int:
        calls.append(1)
        gate.wait(5)
        return 42

    results: list[int] = []
    threads = [threading.Thread(target=lambda: results.append(cache.get_or_compute("k", compute)))
               for _ in range(12)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 10
    while not calls:  # one caller is computing; the others either wait for it (shared) or find its value (hits)
        assert time.monotonic() < deadline, "nobody started computing"
        time.sleep(0.005)
    gate.set()
    for t in threads:
        t.join()
    assert (results, len(calls)) == ([42] * 12, 1)
    got = cache.stats()
    assert (got.computations, got.entries, got.hits + got.shared) == (1, 1, 11)


def test_cache_other_keys_do_not_wait():
    cache: SingleFlightCache[str] = SingleFlightCache(60)
    slow_started = threading.Event()
    release = threading.Event()

    def slow() -> str:
        slow_started.set()
        release.wait(5)
        return "slow"

    t = threading.Thread(target=lambda: cache.get_or_compute("a", slow))
    t.start()
    slow_started.wait(5)
    started = time.perf_counter()
    assert cache.get_or_compute("b", lambda: "fast") == "fast"
    assert time.perf_counter() - started < 0.5
    release.set()
    t.join()


def test_cache_expires_evicts_and_skips_unkept_values_and_errors():
    clock = Clock()
    cache: SingleFlightCache[str] = SingleFlightCache(10, max_entries=2, clock=clock)
    assert cache.get_or_compute("a", lambda: "a1") == "a1"
    clock.now = 9.9
    assert cache.get_or_compute("a", lambda: "a2") == "a1"
    clock.now = 10.0
    assert cache.get_or_compute("a", lambda: "a3") == "a3"
    # not kept → computed again next time
    assert cache.get_or_compute("p", lambda: "partial", keep=lambda v: v != "partial") == "partial"
    assert cache.get_or_compute("p", lambda: "full", keep=lambda v: v != "partial") == "full"
    # errors propagate and are not cached
    with pytest.raises(ZeroDivisionError):
        cache.get_or_compute("e", lambda: str(1 / 0))
    assert cache.get_or_compute("e", lambda: "ok") == "ok"
    # at most 2 keys: "a" (least recently used) was dropped
    assert cache.stats().entries == 2
    assert cache.get_or_compute("a", lambda: "a4") == "a4"
    cache.clear()
    assert cache.get_or_compute("e", lambda: "after clear") == "after clear"


def test_cache_dashboard_is_computed_once_for_concurrent_users(db, monkeypatch):
    f = Filters(condition="asthma", status=())
    real = stats.dashboard
    calls = []

    def counted(filters, **kwargs):
        calls.append(filters)
        return real(filters, **kwargs)

    monkeypatch.setattr(stats, "dashboard", counted)
    monkeypatch.setattr(stats, "_dashboard_cache", SingleFlightCache(600))
    results = []
    threads = [threading.Thread(target=lambda: results.append(stats.cached_dashboard(f, db=db))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls == [f]
    assert len(results) == 8 and all(r is results[0] for r in results)
    assert results[0].as_dict() == real(f, db=db).as_dict()
    assert stats.dashboard_cache_stats().computations == 1


def test_cache_dashboard_with_failed_facets_is_not_kept(db, monkeypatch):
    f = Filters(condition="melanoma")
    monkeypatch.setattr(stats, "_dashboard_cache", SingleFlightCache(600))
    partial = stats.Dashboard(f, {}, [], {}, {"phase": "timed out"})
    monkeypatch.setattr(stats, "dashboard", lambda filters, **kw: partial)
    assert stats.cached_dashboard(f, db=db) is partial
    monkeypatch.setattr(stats, "dashboard", lambda filters, **kw: stats.Dashboard(f, {"trials": 1}, [], {}))
    assert stats.cached_dashboard(f, db=db).kpis == {"trials": 1}
