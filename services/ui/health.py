"""The database as the pages see it: start it once (with live stages), and turn trouble into a banner that
recovers by itself."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator

import streamlit as st

from services import inert
from services.dashboard import stats
from services.data import runtime, startup
from services.errors import DatabaseBusy, DatabaseUnavailable, QueryTimeout, TrialLandscapeError
from services.ui.gate import require_access

_log = logging.getLogger(__name__)
WARM_START_WAIT_S = 600.0  # a first start loads the sample (about a minute); longer is a failure the pages show
ENGINE_MAP_WAIT_S = 1.0  # a start cache maps in a fraction of a second; a fetch or load goes on after this


@st.cache_resource(show_spinner="Connecting to the database…")
def _database_ready() -> str:
    db = runtime.get_db()
    threading.Thread(target=stats.warm_engine, args=(db,), name="facet-warm-up", daemon=True).start()
    return db.label


GEOCODER_QUIET_S = 8.0  # after a page's script ends, its browser still fetches the frontend's chunks from us


def warm_up_geocoder() -> None:
    """Load the offline gazetteer once per process in the background, once no page has started or ended for
    GEOCODER_QUIET_S seconds; called when a page has been drawn.

    Loading it holds the interpreter for about two seconds. Started with the database it slowed the first page of
    a fresh server by as much; started at the end of that page it still slowed the page's drawing by ~0.8 s (at
    575k, measured with `bench start`), because the browser goes on fetching Streamlit's and Plotly's scripts from
    this process for a few seconds. A place search before then loads it itself.
    """
    startup.page_activity()
    _start_geocoder_warm_up()


@st.cache_resource(show_spinner=False)
def _start_geocoder_warm_up() -> bool:
    threading.Thread(target=_warm_geocoder_when_quiet, name="geo-warm-up", daemon=True).start()
    return True


def _warm_geocoder_when_quiet() -> None:
    from services.data import geo

    startup.wait_until_quiet(GEOCODER_QUIET_S)
    geo.warm_up()


def warm_server() -> None:
    """At server start (app.py, a background thread): start the database as a page would (its progress is what a
    page arriving meanwhile shows), get its engine ready, and have the dashboard of the default filters — what a
    first visitor's Home and Explore show — from the in-process engine (as stored for this generation, without
    waiting for the engine; else from its arrays once mapped), so no visitor waits for them. Quiet on
    failure: the pages report it and retry."""
    try:
        startup.STARTER.start(runtime.get_db)
        startup.STARTER.wait(WARM_START_WAIT_S)
        if not runtime.ready():
            return
        db = runtime.get_db()
        # The engine gets ready in a thread of its own: it maps the start cache at once, or waits for a child's
        # fetch or load (seconds to a minute, SQL serving meanwhile).
        engine_ready = threading.Thread(target=stats.warm_engine, args=(db,), name="engine-warm-up", daemon=True)
        engine_ready.start()
        from services.dashboard import charts, facetstore  # noqa: F401 - the pages' chart code, imported here once
        from services.dashboard.filters import Filters

        if stats.engine(db)["mode"] != "memory":
            return
        if not stats.landing_stored(db):  # computed from the arrays when they map at once
            engine_ready.join(ENGINE_MAP_WAIT_S)
            if not facetstore.is_loaded(db):
                return
        stats.cached_dashboard(Filters(), db=db)  # the stored landing view, else from the arrays
    except Exception as err:  # noqa: BLE001 - a warm-up must never take the server down
        _log.warning("server warm-up stopped: %s", err)


def ensure_database() -> None:
    """Start/attach the database once per process; a failure shows a banner with a retry.

    While the start runs (seconds; about a minute on a first start, which loads the sample), the page shows its
    named stages with counts and a progress bar instead of a bare spinner.
    """
    require_access()
    startup.page_activity()  # the start's background work waits for the pages (startup.wait_until_quiet)
    with database_errors():
        if not runtime.ready():
            _watch_start()
        _database_ready()


START_POLL_S = 0.25


def _draw_start(stages: list[startup.Stage]) -> None:
    first = any(s.name.startswith("Creating the database") for s in stages)
    st.subheader("First start: creating the database and loading the shipped sample" if first
                 else "Getting the database ready")
    if first:
        st.caption("This happens once on this machine (about a minute; the stages and counts below are live). "
                   "Later starts skip it.")
    for s in stages:
        text = inert.md_line(s.describe())
        if s.finished is not None:
            st.markdown(f"✅ {text}")
        else:
            fraction = s.fraction
            st.progress(fraction if fraction is not None else 0.0,
                        text=f"⏳ {text}" + ("" if fraction is not None else f" ({s.seconds:.0f} s)"))


def _watch_start() -> None:
    # The start runs in one background thread per process; every session that arrives meanwhile watches it.
    startup.STARTER.start(runtime.get_db)
    box = st.empty()
    while not startup.STARTER.wait(START_POLL_S):
        with box.container():
            _draw_start(startup.PROGRESS.snapshot())
    box.empty()
    if startup.STARTER.error is not None:
        raise startup.STARTER.error


DB_RECHECK_S = 5.0


def _retry_database() -> None:
    _database_ready.clear()
    st.session_state["db_down_since"] = None


def _database_answers() -> bool:
    """One cheap ping of the trial database (False when it is still down or not started)."""
    try:
        return runtime.get_db().health().ok
    except TrialLandscapeError:
        return False


@st.fragment(run_every=DB_RECHECK_S)
def _watch_database() -> None:
    # Re-runs on its own every few seconds while the banner is up; reloads the page once the database
    # answers again, so nobody has to press Retry (at most one automatic reload per interval).
    last = st.session_state.get("db_auto_retry_at") or 0.0
    if time.monotonic() - last >= DB_RECHECK_S and _database_answers():
        st.session_state["db_auto_retry_at"] = time.monotonic()
        st.rerun(scope="app")
    st.caption(f"Checking again every {DB_RECHECK_S:.0f} seconds; the page comes back by itself.")


@contextlib.contextmanager
def database_errors() -> Iterator[None]:
    """Turn database trouble into a banner with a Retry button (never a traceback); recovers by itself."""
    try:
        yield
    except DatabaseUnavailable as err:
        if not st.session_state.get("db_down_since"):
            st.session_state["db_down_since"] = time.strftime("%H:%M:%S %Z")
        st.error(f"**The database is not reachable right now** (since {st.session_state['db_down_since']}). "
                 f"{err.hint}", icon="🔌")
        st.caption(f"Details: {inert.md_line(err)}")  # the driver's or server's words, shown literally
        st.button("Retry", type="primary", key="db_retry", on_click=_retry_database)
        _watch_database()
        st.stop()
    except DatabaseBusy as err:  # the database answers: never "not reachable"; the watcher reruns the page
        st.warning(f"**The database is busy, retrying…** {err.hint}", icon="⏳")
        _watch_database()
        st.stop()
    except QueryTimeout as err:
        st.warning(f"**That took too long.** {err.hint}", icon="⏱️")
        st.button("Try again", key="db_timeout_retry")
        st.stop()
    st.session_state["db_down_since"] = None
