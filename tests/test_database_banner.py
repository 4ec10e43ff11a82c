"""The database banner (services.ui.health.database_errors): what a visitor sees when the database is down."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from services import inert

# An error's text is the driver's or server's words (it can quote part of the connection URL): never Markdown.
MESSAGE = "connect to db:5432 failed: **pwd=hunter2** [x](http://evil.example) ![i](http://evil.example/i.png) <b>"

SCRIPT = f"""
import time
import streamlit as st
from services.errors import DatabaseUnavailable
from services.ui import health

st.session_state["db_auto_retry_at"] = time.monotonic()  # the banner's watcher does not ping a database here
with health.database_errors():
    raise DatabaseUnavailable({MESSAGE!r})
"""


def test_database_banner_shows_the_error_details_as_literal_text():
    at = AppTest.from_string(SCRIPT, default_timeout=60).run()
    assert not at.exception
    assert "The database is not reachable right now" in at.error[0].value
    details = [c.value for c in at.caption if c.value.startswith("Details")]
    # Before: "Details: {err}" rendered the message as Markdown (bold, a link, an image fetched from elsewhere).
    assert details == ["Details: " + inert.md_line(MESSAGE)]
