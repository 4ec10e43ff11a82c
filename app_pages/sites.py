"""Sites page: where could a trial run? The facilities with the most matching trials, as a table and on a map."""

import streamlit as st

from services import inert
from services.dashboard import export, feasibility, mapdeck, sitemap
from services.data import geo, sitename
from services.ui import health, pages
from services.ui import state as ui_state

f = pages.start_filtered_page("Sites", "Sites: where could such a trial run?")
st.caption("**How sites are grouped.** " + sitename.SITE_RULE)

c1, c2 = st.columns([2, 3])
ui_state.view_widget("sites_from", "from", "", str.strip)
if f.near:
    c2.text_input("Distances from", value=f.near, disabled=True, key="sites_from_filter",
                  help="The sidebar's place (Place → Near) is set, so distances are measured from it.")
    typed = ""
else:
    typed = c2.text_input("Distances from", key="sites_from", max_chars=200, placeholder="e.g. Boston, MA or 02115",
                          help="A city with its state or country, or a US ZIP, resolved offline as the sidebar's "
                               "“Near” is. Leave empty for no distances.").strip()
ui_state.set_view_param("from", typed, "")
place = f.place()
if place is None and typed:
    found = geo.geocode(typed)
    place = found.place
    if place is None:
        c2.warning(inert.md_line(found.message), icon="📍")
orders = list(feasibility.ORDER_LABELS) if place is not None else ["trials", "recruiting"]
ui_state.view_widget("sites_rank", "rank", "trials", lambda v: v if v in feasibility.ORDER_LABELS else None)
if st.session_state["sites_rank"] not in orders:
    st.session_state["sites_rank"] = "trials"
order = c1.radio("Rank by", orders, format_func=feasibility.ORDER_LABELS.get, horizontal=True, key="sites_rank")
ui_state.set_view_param("rank", order, "trials")

with health.database_errors():
    table = ui_state.cached(feasibility.site_table, f, place, order)

rows, totals = table.rows, table.totals
if rows.empty:
    st.info("No site of a matching trial has a facility name, or no trial matches these filters. Remove a filter "
            "in the sidebar (or press **Reset filters**) to widen the view.", icon="🔎")
else:
    where = f" Distances from **{inert.md_line(place.name)}** (nearest site of the group)." if place else ""
    area = feasibility.area_text(f)
    area = f" {inert.md_line(area)}" if area else ""
    st.caption(f"{totals['groups']:,} sites (facility groups) from {totals['sites']:,} named facility rows of the "
               f"matching trials{area}; showing the first {len(rows):,}, ranked by "
               f"{feasibility.ORDER_LABELS[table.order].lower()}."
               + (f" {totals['unnamed']:,} facility row{'s' if totals['unnamed'] != 1 else ''} without a name "
                  "or with a placeholder name (“Research Site”) "
                  f"{'are' if totals['unnamed'] != 1 else 'is'} not listed." if totals["unnamed"] else "")
               + where)
    # The generic-name flag beside the name: a "Research Site" row may be several hospitals of that city.
    shown = rows.drop(columns=["lat", "lon", "site_id"])
    shown = shown[["rank", "facility", "generic", *[c for c in shown.columns if c not in ("rank", "facility", "generic")]]]
    if table.place is None:
        shown = shown.drop(columns=["distance"])
    if not table.has_investigators:
        shown = shown.drop(columns=["investigators"])
    st.dataframe(
        shown, hide_index=True, width="stretch", key="sites_table",
        column_config={
            "rank": st.column_config.NumberColumn("#", width="small"),
            "facility": st.column_config.TextColumn("Facility", width="large",
                                                    help="Named as the group's first facility row (lowest AACT id)."),
            "city": "City", "state": "State", "country": "Country",
            "trials": st.column_config.NumberColumn("Matching trials", help="Matching trials with a site here."),
            "recruiting": st.column_config.NumberColumn(
                "Recruiting now", help="Matching trials for which a site here recruits now: the site's own status "
                                       "where AACT has one, else the trial's."),
            "distance": st.column_config.NumberColumn(f"Distance ({f.unit})", format="%.1f"),
            "phases": st.column_config.TextColumn("Phases (trials)", width="medium"),
            "sponsors": st.column_config.TextColumn("Lead sponsors (trials)", width="large"),
            "investigators": st.column_config.TextColumn("Investigators (trials)", width="large"),
            "generic": st.column_config.CheckboxColumn(
                "Generic name", help="A sponsor's name for a site (“Research Site”), not a hospital's: the group "
                                     "may hold several facilities of that city."),
        },
    )
    e1, e2, _ = st.columns([1, 1, 4])
    for col, fmt in ((e1, "csv"), (e2, "json")):
        col.download_button(f"Download {fmt.upper()}", key=f"sites_{fmt}", mime=export.FORMATS[fmt],
                            file_name=export.file_name("sites", fmt), on_click="ignore", icon="⬇️",
                            data=lambda fmt=fmt: export.to_bytes(feasibility.export_frame(table), fmt))

if not table.has_investigators:
    st.caption("Investigators: AACT's `facility_investigators` table is empty in this database, so no investigator "
               "can be listed per site. " + ("`overall_officials` has rows, but those name each trial's officials "
                                            "with an affiliation, not a site." if table.has_officials
                                            else "`overall_officials` is empty too."))

if not rows.empty:
    st.subheader("On the map")
    deck = mapdeck.shared_deck(("sites", f, place, order),
                               lambda: mapdeck.group_deck(rows, place, f.unit))
    st.pydeck_chart(deck, height=mapdeck.MAP_HEIGHT, key="sites_deck")
    st.markdown(sitemap.legend_html(
        [("A site recruits now", sitemap.status_colour("RECRUITING"), None),
         ("None recruiting", sitemap.status_colour("COMPLETED"), None)],
        "Sites (dot area: matching trials)"), unsafe_allow_html=True)
    missing = int(rows["lat"].isna().sum())
    if missing:
        st.caption(f"{missing:,} of the listed sites have no coordinates and are not drawn.")
ui_state.footer()
