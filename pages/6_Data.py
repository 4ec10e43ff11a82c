"""Data page: which database is connected, table row counts, freshness, and how to load full AACT."""

import streamlit as st

from services import ui_state
from services.dbinfo import database_info

ui_state.ensure_database()
ui_state.page_setup("Data", "🗄️")
st.title("🗄️ Data")

with ui_state.database_errors():
    info = ui_state.cached(database_info)

c1, c2, c3 = st.columns(3)
c1.metric("Studies", f"{info['studies']:,}")
c2.metric("Sites with coordinates", f"{info['sites_with_coordinates']:,}", help=f"of {info['sites']:,} sites")
c3.metric("Newest update posted", info["freshness"] or "—")
st.markdown(f"**Connected database:** {info['database']} — {info['kind']}"
            f"{' (read-only)' if info['read_only'] else ''}")
if info["kind"] == "embedded":
    st.info(ui_state.SAMPLE_NOTE, icon="ℹ️")

st.subheader("How the dashboard is computed")
eng = info["engine"]
if eng["mode"] == "direct":
    st.warning(f"**{eng['title']}.** {eng['text']}", icon="🐢")
else:
    st.markdown(f"**{eng['title']}.** {eng['text']}")

st.subheader("Tables (schema `ctgov`)")
st.dataframe(sorted(({"table": t, "rows": n} for t, n in info["tables"].items()), key=lambda r: (-r["rows"], r["table"])),
             hide_index=True, width="stretch",
             column_config={"rows": st.column_config.NumberColumn("rows", format="localized")})

st.subheader("Use the full registry")
st.markdown(
    """
The app reads any PostgreSQL database with AACT's `ctgov` schema. Three ways to get all ~575,000 studies:

1. **AACT cloud database** (read-only, free account at aact.ctti-clinicaltrials.org, at most 10 connections):
   `DATABASE_URL=postgresql://USER:PASSWORD@aact-db.ctti-clinicaltrials.org:5432/aact streamlit run app.py`
2. **AACT flat files** (the daily `YYYYMMDD_pipe-delimited-export.zip`, about 2 GB) into the embedded database:
   `python -m services import aact path/to/export.zip`
3. **AACT database copy** (`postgres_data.dmp`): restore it with `pg_restore` into your PostgreSQL, then point
   `DATABASE_URL` at it.

ClinicalTrials.gov downloads work too: `python -m services import ctgov-json ctg-studies.json` or
`python -m services import ctgov-csv ctg-studies.csv` (CSV site text is geocoded offline).
"""
)
ui_state.footer()
