"""The server's warm-up (services.ui.health.warm_server): the first visitor's dashboard is ready without waiting for
the engine when its landing view is stored."""

from __future__ import annotations

import threading

import pytest

from services.dashboard import engine, facetstore, stats
from services.dashboard.filters import Filters
from services.data import runtime


def test_the_stored_landing_view_is_ready_before_the_engine(db, monkeypatch):
    from services.ui import health

    if stats.engine(db)["mode"] != "memory":
        pytest.skip("the SQL engine stores no landing view")
    # An earlier test of this process may have left a server's engine (it answers by SQL while its store reloads)
    # and then rebuilt the derived tables (a new generation): start from the store of the current generation.
    engine.forget(db)
    facetstore.forget()
    stats.dashboard(Filters(), db=db)  # computed and stored for this generation, as a first server does
    assert stats.landing_stored(db)
    engine_ready = threading.Event()
    monkeypatch.setattr(stats, "warm_engine", lambda _db: engine_ready.wait(120))  # an engine slow to get ready
    monkeypatch.setattr(health, "ENGINE_MAP_WAIT_S", 3600.0)
    # The warm-up starts runtime's database: make it this one, ready, whatever an earlier test (runtime.reset()) left.
    monkeypatch.setitem(runtime._state, "main", db)
    stats.clear_cache()
    start = stats.dashboard_cache_stats()  # the counters run for the life of the process
    try:
        warm = threading.Thread(target=health.warm_server, daemon=True)
        warm.start()
        warm.join(timeout=60)  # not the hour the engine could take
        assert not warm.is_alive() and not engine_ready.is_set()
        before = stats.dashboard_cache_stats()
        assert before.computations == start.computations + 1, (  # what a warm-up that stopped early saw
            start, before, runtime.ready(), runtime.get_db() is db, stats.engine(db)["mode"], stats.landing_stored(db))
        stats.cached_dashboard(Filters(), db=db)  # the first visitor's Explore
        after = stats.dashboard_cache_stats()
        assert (after.hits, after.computations) == (before.hits + 1, before.computations)
    finally:
        engine_ready.set()
