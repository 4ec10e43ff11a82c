"""Map page: sites of the matching trials (points, density or choropleth), the place with its radius, nearest sites."""

import streamlit as st

from services import inert
from services.dashboard import mapdeck, sitemap
from services.ui import health
from services.ui import morefilters as ui_more
from services.ui import state as ui_state

health.ensure_database()
f = ui_state.page_setup("Map")
st.title("🗺️ Map of trial sites")
with health.database_errors():
    ui_more.left_out_notes(f, "map")

c1, c2, c3 = st.columns([3, 1.2, 1.6])
# The map's mode and layers live in the URL (and the share link), so a link reopens exactly this map.
ui_state.view_widget("map_mode", "map", mapdeck.MODES[0], lambda v: v if v in mapdeck.MODES else None)
mode = c1.radio("Show", mapdeck.MODES, format_func=mapdeck.MODE_LABELS.get, horizontal=True, key="map_mode")
ui_state.set_view_param("map", mode, mapdeck.MODES[0])
metric = ui_state.view_memory("colour", "trials")
if mode in ("countries", "states"):
    ui_state.view_widget("map_metric", "colour", "trials", lambda v: v if v in ("trials", "sites") else None)
    metric = c2.radio("Colour by", ["trials", "sites"], horizontal=True, key="map_metric",
                      format_func=lambda m: "Number of trials" if m == "trials" else "Number of sites")
ui_state.set_view_param("colour", metric, "trials")
has_area = bool(f.near or f.country or f.state)
ui_state.view_widget("map_only_area", "area", True, ui_state.parse_flag)
only_in_area = c3.toggle("Only sites in the area", key="map_only_area", disabled=not has_area,
                         help="On: only the sites inside the place, country or state filters. Off: every site "
                              "of the matching trials, wherever it is.")
ui_state.set_view_param("area", only_in_area, True, ui_state.dump_flag)
ui_state.view_widget("map_tiles", "tiles", False, ui_state.parse_flag)
tiles = c3.toggle("Street map tiles", key="map_tiles",
                  help="Draws a street basemap from the internet. Leave off when offline: the shipped "
                       "country and state outlines are the map then.")
ui_state.set_view_param("tiles", tiles, False, ui_state.dump_flag)

with health.database_errors():
    data = ui_state.cached(sitemap.map_data, f, only_in_area)

if data.place is not None and data.radius_miles is not None:
    st.caption(f"📍 **{inert.md_line(data.place.name)}** — sites within {f.radius:g} {f.unit} "
               f"({data.place.lat:.4f}, {data.place.lon:.4f}).")
if mode in ("countries", "states"):
    st.caption(sitemap.describe_choropleth(data, mode, metric))
else:
    st.caption(sitemap.describe_shown(data.summary))
for name, message in data.errors.items():
    st.warning(f"The {name} values could not be loaded: {inert.md_line(message)}", icon="⚠️")

# One deck (and its JSON) per view for every visitor: building and serialising thousands of sites costs ~1 s.
deck = mapdeck.shared_deck((f, only_in_area, mode, metric, tiles),
                           lambda: mapdeck.build_deck(data, mode, metric, tiles))
st.pydeck_chart(deck, height=mapdeck.MAP_HEIGHT, key="map_deck")

if mode in ("sites", "sites+density"):
    what = "Most common status per cell" if data.summary.aggregated else "Site status"
    st.markdown(sitemap.legend_html(sitemap.status_legend(data.points),
                                    f"{what} (the trial's status where the site gives none)"),
                unsafe_allow_html=True)
if mode in ("density", "sites+density"):
    st.caption("Density: warmer colours where more sites are close together.")
if mode in ("countries", "states"):
    values = data.countries if mode == "countries" else data.states
    noun = "trials" if metric == "trials" else "sites"
    st.markdown(sitemap.legend_html(sitemap.choropleth_legend(values, metric),
                                    f"Number of {noun} (log scale)"), unsafe_allow_html=True)
    missing = sitemap.unmatched_names(values, mode)
    if missing:
        st.caption("No outline at this map scale for: " + inert.md_line(", ".join(missing[:30]))
                   + (f" and {len(missing) - 30} more" if len(missing) > 30 else "") + ".")
    with st.expander(f"Values per {'country' if mode == 'countries' else 'US state'} ({len(values):,})"):
        st.dataframe(values, hide_index=True, width="stretch")

st.subheader("Nearest sites")
if data.place is None:
    st.info("Set a place in the sidebar (**Place → Near**, e.g. “Boston, MA” or a US ZIP) to see the nearest "
            "sites with their distances and a radius ring on the map.", icon="📍")
else:
    table = sitemap.nearest_table(data.nearest, f.unit)
    if table.empty:
        st.warning(f"No site of the matching trials lies within {f.radius:g} {f.unit} of {inert.md_line(data.place.name)}. "
                   "Widen the radius or relax other filters.", icon="🔍")
    else:
        shown = f"the nearest {len(table):,}" if len(table) < data.summary.located else f"all {len(table):,}"
        st.caption(f"Showing {shown} of {data.summary.located:,} sites with coordinates, nearest first. "
                   "The NCT id opens the trial's details.")
        table = table.assign(nct_id=["Trials?nct=" + n for n in table["nct_id"]])
        st.dataframe(
            table, hide_index=True, width="stretch",
            column_config={
                "distance": st.column_config.NumberColumn(f"Distance ({f.unit})", format="%.1f"),
                "facility": "Facility", "city": "City", "state": "State", "country": "Country",
                "status": "Status",
                "nct_id": st.column_config.LinkColumn("Trial", display_text=r"nct=(NCT\d+)"),
                "title": st.column_config.TextColumn("Title", width="large"),
            },
        )
ui_state.footer()
