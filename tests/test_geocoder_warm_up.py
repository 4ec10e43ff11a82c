"""The gazetteer's background load waits until no page has been drawn for a while (services.ui.health)."""

from __future__ import annotations

import threading
import time


def test_gazetteer_loads_once_after_the_pages_have_been_quiet(monkeypatch):
    from services.data import geo
    from services.ui import health

    loads: list[float] = []
    loaded = threading.Event()
    started = []
    waiter = health._warm_geocoder_when_quiet

    def fake_load() -> None:
        loads.append(time.monotonic())
        loaded.set()

    def counted_waiter() -> None:
        started.append(1)
        waiter()

    monkeypatch.setattr(geo, "warm_up", fake_load)
    monkeypatch.setattr(health, "_warm_geocoder_when_quiet", counted_waiter)
    monkeypatch.setattr(health, "GEOCODER_QUIET_S", 0.3)
    health._start_geocoder_warm_up.clear()  # a fresh process: no warm-up started yet
    try:
        drawn = []
        for _ in range(5):  # five pages drawn in a row: one background load, after the last of them
            drawn.append(time.monotonic())  # just before the page's end is noted
            health.warm_up_geocoder()
        assert loaded.wait(30)
        before = [t for t in drawn if t <= loads[0]]
        assert before and loads[0] - max(before) >= 0.3  # no page was drawn in the quiet span before the load
        health.warm_up_geocoder()  # a later page starts no second load
        assert len(started) == 1 and len(loads) == 1
    finally:
        health._start_geocoder_warm_up.clear()
