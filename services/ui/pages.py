"""The app's pages, declared once: file, title, icon, URL path and what Home says of each.

navigation.py builds the navigation from this table, Home links to the same `st.Page` objects, and each page's
`page_setup(title)` takes its browser title and icon from here. URL paths are the ones the numbered files had
(`/Explore`, `/Map`, …), so old links and bookmarks keep working. The files live in app_pages/, not pages/:
a pages/ folder would make a fresh server answer its first deep link in Streamlit's older folder mode.
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st
from streamlit.navigation.page import StreamlitPage

from services.dashboard.filters import Filters


@dataclass(frozen=True)
class PageSpec:
    """One page of the app."""

    title: str
    path: str
    icon: str
    url_path: str
    blurb: str  # Home's link text after the title


PAGES: tuple[PageSpec, ...] = (
    PageSpec("Home", "home.py", "🧭", "", "what is connected, what is in it, where to go"),
    PageSpec("Explore", "app_pages/explore.py", "📊", "Explore", "charts and funnel"),
    PageSpec("Compare", "app_pages/compare.py", "⚖️", "Compare", "two landscapes side by side"),
    PageSpec("Map", "app_pages/map.py", "🗺️", "Map", "sites near a place"),
    PageSpec("Sites", "app_pages/sites.py", "🏥", "Sites", "where a trial could run"),
    PageSpec("Timeline", "app_pages/timeline.py", "📅", "Timeline", "dates and planning benchmarks"),
    PageSpec("Trials", "app_pages/trials.py", "📋", "Trials", "table, details, compare"),
    PageSpec("Assistant", "app_pages/assistant.py", "💬", "Assistant", "find trials for a patient"),
    PageSpec("SQL", "app_pages/sql.py", "🧮", "SQL", "read-only queries"),
    PageSpec("Data", "app_pages/data.py", "🗄️", "Data", "tables, freshness, loading AACT"),
)
BY_TITLE = {page.title: page for page in PAGES}


def spec(title: str) -> PageSpec:
    """The page called `title` (KeyError for an unknown page: a typo in a page file)."""
    return BY_TITLE[title]


def st_page(title: str) -> StreamlitPage:
    """The page as Streamlit's page object (for the navigation, page links and switches)."""
    page = spec(title)
    if page.title == "Home":
        return st.Page(page.path, title=page.title, icon=page.icon, default=True)
    return st.Page(page.path, title=page.title, icon=page.icon, url_path=page.url_path)


def start_filtered_page(title: str, heading: str, *, caption_end: str = "") -> Filters:
    """The opening of a page over the filters (Explore, Sites, Timeline): the database, page_setup, the title
    with the page's icon, the filters in words (then `caption_end`) and what each set filter leaves out, with
    "include them" (the checkboxes' keys start with the page's title in lower case). Returns the filters."""
    from services import inert
    from services.ui import health, morefilters, state

    health.ensure_database()
    f = state.page_setup(title)
    st.title(f"{spec(title).icon} {heading}")
    st.caption("Filters: " + " · ".join(inert.md_line(line) for line in f.describe()) + "." + caption_end)
    with health.database_errors():
        morefilters.left_out_notes(f, title.lower())
    return f
