"""Trial Landscape — home page (Home in the navigation of navigation.py): what is connected, what is in it, where to go."""

import streamlit as st

from services.dashboard.dbinfo import database_info
from services.ui import health, pages
from services.ui import state as ui_state

health.ensure_database()
filters = ui_state.page_setup("Home", sidebar=False)

st.title("🧭 Trial Landscape")
st.markdown(
    "Explore the clinical-trial landscape of **ClinicalTrials.gov** (AACT schema): faceted statistics, "
    "site maps, trial details, a read-only SQL console, and an assistant that helps a patient find "
    "trials and prepare questions for their doctor. The filters in the sidebar of Explore, Compare, Map, Sites, "
    "Timeline, Trials and Assistant are shared by those pages."
)

with health.database_errors():
    info = ui_state.cached(database_info)

c1, c2, c3, c4 = st.columns(4)
c1.metric("Studies", f"{info['studies']:,}")
c2.metric("Trial sites", f"{info['sites']:,}")
c3.metric("Sites with coordinates", f"{info['sites_with_coordinates']:,}")
c4.metric("Newest update", info["freshness"] or "—")
st.caption(f"Connected to **{info['database']}** ({info['kind']}{', read-only' if info['read_only'] else ''}).")

st.subheader("Where to go")
targets = [page for page in pages.PAGES if page.title != "Home"]
for start in range(0, len(targets), 3):
    for col, page in zip(st.columns(3), targets[start:start + 3], strict=False):
        col.page_link(pages.st_page(page.title), label=f"{page.title} — {page.blurb}", icon=page.icon)

with st.expander("Row counts per table"):
    st.dataframe(
        [{"table": name, "rows": rows} for name, rows in info["tables"].items()],
        hide_index=True, width="stretch",
    )
ui_state.footer()
