"""Data page: which database is connected, table row counts, freshness, and how to load full AACT."""

import streamlit as st

from services.dashboard.dbinfo import database_info
from services.ui import health
from services.ui import state as ui_state

health.ensure_database()
ui_state.page_setup("Data", sidebar=False)
st.title("🗄️ Data")

with health.database_errors():
    info = ui_state.cached(database_info)

c1, c2, c3, c4 = st.columns(4)
c1.metric("Studies", f"{info['studies']:,}")
c2.metric("Full records", f"{info['full_records']:,}",
          help="the source carried every field (ClinicalTrials.gov API v2 records, AACT)")
c3.metric("Sites with coordinates", f"{info['sites_with_coordinates']:,}", help=f"of {info['sites']:,} sites")
c4.metric("Newest update posted", info["freshness"] or "—")
if info["records_tracked"] and info["partial_records"]:
    st.markdown(
        f"**{info['partial_records']:,} partial records** come from ClinicalTrials.gov site CSV downloads, which "
        f"never carry eligibility criteria text and often no summary, ages, sex, sites or phase. Pages say "
        f"\"not in this copy — see ClinicalTrials.gov\" for such a field, never \"not given\". "
        f"{info['partial_with_criteria_added']:,} of them have criteria text added from another public copy; "
        f"their trial page names that source and its date.")
elif not info["records_tracked"]:
    st.caption("This database does not record which fields each study's source carried; every record counts as full.")
st.markdown(f"**Connected database:** {info['database']} — {info['kind']}"
            f"{' (read-only)' if info['read_only'] else ''}")
if info["kind"] == "embedded":
    st.info(ui_state.SAMPLE_NOTE, icon="ℹ️")
    st.markdown(
        "**What the shipped sample is.** ClinicalTrials.gov public data that others committed to public "
        "repositories (`data/PROVENANCE.md`, `data/sample-v2/PROVENANCE.md`), with personal contact data removed. "
        "The older part (API v2 records and CSV rows, snapshots 2023-06 … 2026-04) follows its authors' topic "
        "queries, so it is biased towards diabetes, lung cancer, urology, Alzheimer's and blood cancers. The newer "
        "part is mostly one unfiltered pull of the registry (October 2025; snapshots 2025-07 … 2026-08), close to "
        "a random slice. Statuses of older snapshots may be out of date.")

st.subheader("How the dashboard is computed")
eng = info["engine"]
if eng["mode"] == "sql":
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
st.caption("Conditions are read with Medical Subject Headings 2024, courtesy of the U.S. National Library of "
           "Medicine (data/mesh/PROVENANCE.md: the files as published, plus the project's small tables for what "
           "they lack).")
ui_state.footer()
