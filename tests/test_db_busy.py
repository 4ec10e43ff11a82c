"""A pool full of page queries is busy, not down: pages say so and retry; readiness asks on its own connection."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from streamlit.testing.v1 import AppTest

from services import readiness
from services.data import db as dbmod
from services.data import runtime
from services.errors import DatabaseBusy, TrialLandscapeError

HOLD_SQL = "SELECT pg_sleep(60) /* test_db_busy holder */"


def _wait_for(condition, timeout_s: float = 30.0) -> None:  # noqa: ANN001
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)


@pytest.fixture()
def full_pool(db, monkeypatch: pytest.MonkeyPatch) -> Iterator[dbmod.Database]:  # noqa: ANN001
    """A Database whose only pooled connection is held by a long query (cancelled at the end)."""
    monkeypatch.setattr(dbmod, "POOL_WAIT_S", 0.5)
    small = dbmod.Database(db.url, pool_size=1)
    outcome: list[BaseException] = []

    def hold() -> None:
        try:
            small.fetch_rows(HOLD_SQL, timeout_ms=60_000)
        except TrialLandscapeError as err:
            outcome.append(err)

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    active = "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%test_db_busy holder%' " \
             "AND pid <> pg_backend_pid()"
    _wait_for(lambda: db.fetch_value(active) == 1)
    try:
        yield small
    finally:
        db.fetch_value("SELECT count(pg_cancel_backend(pid)) FROM pg_stat_activity "
                       "WHERE query LIKE '%test_db_busy holder%' AND pid <> pg_backend_pid()")
        holder.join(30)
        small.close()
    assert outcome, "the holder's query was meant to be cancelled"


def test_db_busy_exhausted_pool_says_busy_while_the_database_answers(full_pool: dbmod.Database,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    started = time.monotonic()
    with pytest.raises(DatabaseBusy, match=r"busy: none of this app's 1 connections came free within 0.5 s "
                                           r"\(TimeoutError\), though the database answers") as caught:
        full_pool.fetch_rows("SELECT 1")
    assert "not reachable" not in str(caught.value) + caught.value.hint
    assert time.monotonic() - started < 10
    with pytest.raises(DatabaseBusy):  # a dashboard's concurrent queries: all busy, so the page is told busy
        full_pool.fetch_many({"a": ("SELECT 1", None), "b": ("SELECT 2", None)})

    health = full_pool.health()  # the probe's own connection, outside the full pool
    assert health.ok and health.latency_ms < 5_000
    monkeypatch.setattr(runtime, "get_db", lambda: full_pool)
    verdict = readiness.check()
    assert verdict["ready"] is True and "error" not in verdict


def test_db_busy_many_pages_at_once_share_one_ping(full_pool: dbmod.Database, monkeypatch: pytest.MonkeyPatch) -> None:
    # 20 pages waiting on a full pool at once each asked "busy or down?" on the probe's one connection; queued past
    # its wait, the later ones read a database that answers as down ("not reachable"). They share one ping now.
    monkeypatch.setattr(dbmod, "PROBE_WAIT_S", 0.001)
    errors: list[BaseException] = []

    def page() -> None:
        try:
            full_pool.fetch_rows("SELECT 1")
        except TrialLandscapeError as err:
            errors.append(err)

    pages = [threading.Thread(target=page) for _ in range(12)]
    for t in pages:
        t.start()
    for t in pages:
        t.join(30)
    assert len(errors) == 12 and all(isinstance(e, DatabaseBusy) for e in errors), {str(e)[:80] for e in errors}


def test_db_busy_pool_of_a_stopped_server_is_still_down(monkeypatch: pytest.MonkeyPatch) -> None:
    from services.errors import DatabaseUnavailable

    bad = dbmod.Database("postgresql://nobody@127.0.0.1:9/none")
    try:
        with pytest.raises(DatabaseUnavailable, match="not reachable"):
            bad.fetch_rows("SELECT 1")
        assert not bad.health().ok
    finally:
        bad.close()


BANNER = """
import time
import streamlit as st
from services.errors import DatabaseBusy
from services.ui import health

st.session_state["db_auto_retry_at"] = time.monotonic()  # the watcher does not ping a database here
with health.database_errors():
    raise DatabaseBusy("The database is busy: none of this app's 5 connections came free within 20 s.")
"""


def test_db_busy_banner_says_busy_and_retrying_never_not_reachable() -> None:
    at = AppTest.from_string(BANNER, default_timeout=60).run()
    assert not at.exception and not at.error
    assert [w.value for w in at.warning] == [
        "**The database is busy, retrying…** Many people are using the app at once; the page tries again by "
        "itself in a few seconds."]
    assert any("the page comes back by itself" in c.value for c in at.caption)
