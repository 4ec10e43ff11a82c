"""Trial Landscape — home page (Home in the navigation of navigation.py): what is connected, what is in it, where to go."""

from pathlib import Path

import streamlit as st

from services.dashboard.dbinfo import database_info
from services.ui import health
from services.ui import state as ui_state

health.ensure_database()
filters = ui_state.page_setup("Home", "🧭", sidebar=False)

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
PAGES = [
    ("pages/1_Explore.py", "Explore — charts and funnel", "📊"),
    ("pages/7_Compare.py", "Compare — two landscapes side by side", "⚖️"),
    ("pages/2_Map.py", "Map — sites near a place", "🗺️"),
    ("pages/9_Sites.py", "Sites — where a trial could run", "🏥"),
    ("pages/8_Timeline.py", "Timeline — dates and planning benchmarks", "📅"),
    ("pages/3_Trials.py", "Trials — table, details, compare", "📋"),
    ("pages/4_Assistant.py", "Assistant — find trials for a patient", "💬"),
    ("pages/5_SQL.py", "SQL — read-only queries", "🧮"),
    ("pages/6_Data.py", "Data — tables, freshness, loading AACT", "🗄️"),
]
present = [p for p in PAGES if (Path(__file__).parent / p[0]).exists()]
for start in range(0, len(present), 3):
    for col, (path, text, icon) in zip(st.columns(3), present[start:start + 3], strict=False):
        col.page_link(path, label=text, icon=icon)

with st.expander("Row counts per table"):
    st.dataframe(
        [{"table": name, "rows": rows} for name, rows in info["tables"].items()],
        hide_index=True, width="stretch",
    )
ui_state.footer()
