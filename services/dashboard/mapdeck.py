"""Deck construction for the Map page: pure functions from map data to pydeck layers and decks (no Streamlit)."""

from __future__ import annotations

import json
import math
import urllib.parse
from collections.abc import Callable, Hashable
from typing import Any

import pandas as pd
import pydeck as pdk
from pydeck.bindings import json_tools

from services import inert
from services.cache import SingleFlightCache
from services.dashboard import sitemap, stats
from services.data import runtime
from services.trials import plural

# Every pickable layer's objects carry these four fields, so one tooltip template serves them all. They hold plain
# text: Streamlit's map escapes each value it fills into the HTML.
TOOLTIP = {
    "html": "<b>{t_title}</b><br/>{t_sub}<br/>{t_l1}<br/><i>{t_l2}</i>",
    "style": {"fontSize": "12px", "maxWidth": "360px", "whiteSpace": "normal"},
}
MODES = ("sites", "density", "sites+density", "countries", "states")
MODE_LABELS = {
    "sites": "Sites", "density": "Density", "sites+density": "Sites + density",
    "countries": "Countries (choropleth)", "states": "US states (choropleth)",
}
LAND = [246, 243, 236]
SEA = [223, 234, 242]
OUTLINE = [150, 150, 150]
STATE_OUTLINE = [175, 175, 175]
RING = [200, 30, 45]
# Starts at a clear orange (a pale yellow first step vanished on the light outlines), ends dark red.
DENSITY_RANGE = [[254, 178, 76], [253, 141, 60], [252, 78, 42], [227, 26, 28], [189, 0, 38], [128, 0, 38]]
# A basemap style with nothing in it, inline as a data: URL (the browser reads it without any network).
EMPTY_MAP_STYLE = "data:application/json," + urllib.parse.quote(json.dumps({"version": 8, "sources": {}, "layers": []}))
TILE_STYLE = "light"  # pydeck's Carto light style; used only when the user turns tiles on
MAP_HEIGHT = 560
VIEW_PIXELS = 480  # the part of the map height a place's ring should span


def outline_layers(states: bool = True) -> list[pdk.Layer]:
    """Sea, country outlines filled as land (and US-state borders) under everything else; never pickable."""
    # Wider than one world so the sea also fills the canvas when the whole world is narrower than the map.
    sea = [[-540.0, -85.0], [540.0, -85.0], [540.0, 85.0], [-540.0, 85.0], [-540.0, -85.0]]
    layers = [pdk.Layer("SolidPolygonLayer", [{"polygon": sea}], id="sea", get_polygon="polygon",
                        get_fill_color=SEA, pickable=False), pdk.Layer(
        "GeoJsonLayer", sitemap.outlines("countries"), id="countries-outline", stroked=True, filled=True,
        get_fill_color=LAND, get_line_color=OUTLINE, line_width_min_pixels=0.6, pickable=False,
    )]
    if states:
        layers.append(pdk.Layer(
            "GeoJsonLayer", sitemap.outlines("states"), id="states-outline", stroked=True, filled=False,
            get_line_color=STATE_OUTLINE, line_width_min_pixels=0.4, pickable=False,
        ))
    return layers


def _records(points: pd.DataFrame) -> list[dict[str, Any]]:
    cols = ["lat", "lon", "color", "weight", "t_title", "t_sub", "t_l1", "t_l2"]
    present = [c for c in cols if c in points]
    return points[present].to_dict("records") if len(points) else []


def site_layer(points: pd.DataFrame, aggregated: bool) -> pdk.Layer:
    """Sites as dots coloured by status; grid cells as dots whose area follows their number of sites."""
    data = _records(points)
    if aggregated:
        for row in data:
            row["r"] = min(18.0, 2.0 + 0.9 * math.sqrt(float(row["weight"])))
        radius: Any = "r"
    else:
        radius = 4
    return pdk.Layer(
        "ScatterplotLayer", data, id="sites", get_position=["lon", "lat"], get_fill_color="color",
        get_radius=radius, radius_units="'pixels'", radius_min_pixels=2, radius_max_pixels=40,
        stroked=True, get_line_color=[255, 255, 255], line_width_min_pixels=0.5, opacity=0.85, pickable=True,
        auto_highlight=True,
    )


def density_layer(points: pd.DataFrame) -> pdk.Layer:
    """A heatmap of site density (grid cells weigh as many sites as they hold)."""
    return pdk.Layer(
        "HeatmapLayer", _records(points), id="density", get_position=["lon", "lat"], get_weight="weight",
        radius_pixels=40, intensity=1.5, threshold=0.03, color_range=DENSITY_RANGE, aggregation="'SUM'",
        opacity=0.9, pickable=False,
    )


def choropleth_layer(values: pd.DataFrame, level: str, metric: str = "trials") -> pdk.Layer:
    """Countries or US states filled by their number of trials or sites on a log scale."""
    return pdk.Layer(
        "GeoJsonLayer", sitemap.choropleth_geojson(values, level, metric), id=f"choropleth-{level}",
        stroked=True, filled=True, get_fill_color="properties.fill", get_line_color=[90, 90, 90],
        line_width_min_pixels=0.6, pickable=True, auto_highlight=True,
    )


def pin_layers(name: str, lat: float, lon: float, radius_miles: float | None, unit: str = "mi") -> list[pdk.Layer]:
    """The filter's place as a pin and a label (drawn above the sites); without a radius, the place distances are
    measured from."""
    if radius_miles is None:
        sub = "Distances are measured from here"
    else:
        sub = f"Search radius {radius_miles * sitemap.geo.per_mile(unit):,.0f} {unit}"
    tip = {"t_title": name, "t_sub": sub, "t_l1": "", "t_l2": ""}
    return [
        pdk.Layer("ScatterplotLayer", [{"lat": lat, "lon": lon, **tip}], id="place-pin",
                  get_position=["lon", "lat"], get_fill_color=[*RING, 255], get_line_color=[255, 255, 255],
                  get_radius=8, radius_units="'pixels'", stroked=True, line_width_min_pixels=2, pickable=True),
        pdk.Layer("TextLayer", [{"lat": lat, "lon": lon, "text": name, **tip}], id="place-label",
                  get_position=["lon", "lat"], get_text="text", get_size=13, get_color=[60, 20, 20],
                  get_pixel_offset=[0, -18], get_alignment_baseline="'bottom'", pickable=False,
                  background=True, get_background_color=[255, 255, 255, 200],
                  font_family="'Source Sans Pro, Helvetica, Arial, sans-serif'", font_weight=600),
    ]


def ring_layer(lat: float, lon: float, radius_miles: float) -> pdk.Layer:
    """The search radius as a thin red ring with a faint fill."""
    return pdk.Layer("PolygonLayer", [{"polygon": sitemap.ring_polygon(lat, lon, radius_miles)}], id="radius-ring",
                     get_polygon="polygon", filled=True, get_fill_color=[*RING, 18], stroked=True,
                     get_line_color=[*RING, 220], line_width_min_pixels=2, pickable=False)


def view_for_place(lat: float, lon: float, radius_miles: float) -> pdk.ViewState:
    """A view centred on a place, zoomed so its radius ring fills most of the map's height."""
    miles_per_px_z0 = 2 * math.pi * sitemap.geo.EARTH_RADIUS_MILES * max(math.cos(math.radians(lat)), 0.05) / 512
    zoom = math.log2(miles_per_px_z0 * VIEW_PIXELS / max(2 * radius_miles, 0.1))
    return pdk.ViewState(latitude=lat, longitude=lon, zoom=max(0.5, min(13.0, zoom)), pitch=0, bearing=0)


def view_for_points(points: pd.DataFrame) -> pdk.ViewState:
    """A view holding the middle 96% of the points (the whole world when there are none)."""
    if points.empty:
        return pdk.ViewState(latitude=25, longitude=10, zoom=0.8)
    lats, lons = points["lat"].astype(float), points["lon"].astype(float)
    lo_lat, hi_lat = float(lats.quantile(0.02)), float(lats.quantile(0.98))
    lo_lon, hi_lon = float(lons.quantile(0.02)), float(lons.quantile(0.98))
    span = max(hi_lon - lo_lon, (hi_lat - lo_lat) * 1.6, 0.05)
    zoom = math.log2(360 / span) + 0.4
    return pdk.ViewState(latitude=(lo_lat + hi_lat) / 2, longitude=(lo_lon + hi_lon) / 2,
                         zoom=max(0.6, min(12.0, zoom)), pitch=0, bearing=0)


def build_deck(data: sitemap.MapData, mode: str = "sites", metric: str = "trials", tiles: bool = False) -> pdk.Deck:
    """The whole map for a mode: outlines, the chosen layers, the place and ring, and a view that fits."""
    if mode not in MODES:
        raise ValueError(f"unknown map mode {mode!r}")
    layers: list[pdk.Layer] = [] if tiles else outline_layers(states=mode != "countries")
    if mode == "countries":
        layers.append(choropleth_layer(data.countries, "countries", metric))
    elif mode == "states":
        layers.append(choropleth_layer(data.states, "states", metric))
    place = data.place if data.radius_miles is not None else None
    if place is not None and data.radius_miles is not None:
        layers.append(ring_layer(place.lat, place.lon, data.radius_miles))
    if mode in ("density", "sites+density"):
        layers.append(density_layer(data.points))
    if mode in ("sites", "sites+density"):
        layers.append(site_layer(data.points, data.summary.aggregated))
    unit = data.filters.unit
    if place is not None and data.radius_miles is not None:
        layers.extend(pin_layers(place.name, place.lat, place.lon, data.radius_miles, unit))
        view = view_for_place(place.lat, place.lon, data.radius_miles)
    elif mode == "states":
        view = pdk.ViewState(latitude=38.5, longitude=-96.5, zoom=2.9)
    elif mode == "countries":
        view = pdk.ViewState(latitude=25, longitude=10, zoom=0.8)
    else:
        view = view_for_points(data.points)
    if tiles:
        return SharedDeck(layers=layers, initial_view_state=view, tooltip=TOOLTIP, map_style=TILE_STYLE)
    # No basemap: the shipped outlines are the map, so it reads the same with no internet.
    return offline_deck(layers, view, SharedDeck)


def offline_deck(layers: list[pdk.Layer], view: pdk.ViewState, kind: type[pdk.Deck] = pdk.Deck) -> pdk.Deck:
    """A deck with no basemap that fetches nothing from the internet: given no style at all, Streamlit's map
    fetches a street-map style (an outside request, and an error offline); an empty inline style prevents it."""
    deck = kind(layers=layers, initial_view_state=view, tooltip=TOOLTIP, map_style=None, map_provider=None)
    deck.map_style = EMPTY_MAP_STYLE
    return deck


def deck_json(deck: pdk.Deck) -> str:
    """The deck's JSON as pydeck writes it (same keys, sorted), but compact.

    pydeck indents its JSON, which makes Python fall back from its C encoder to the pure-Python one: for a map of
    ~5,000 sites that is 3.7 MB written in ~0.7 s, against 1.6 MB in ~0.1 s here — and every Map render hashes and
    sends those bytes.
    """
    return json.dumps(deck, sort_keys=True, default=json_tools.default_serialize, separators=(",", ":"))


class SharedDeck(pdk.Deck):  # type: ignore[misc]
    """A Deck whose JSON is written once (compact, see deck_json): the same deck is shown to every visitor with the
    same view (see shared_deck). Do not change it after use."""

    def to_json(self) -> str:
        """The deck's JSON, computed on the first call."""
        cached = self.__dict__.get("_shared_json")
        if cached is None:
            cached = deck_json(self)
            self.__dict__["_shared_json"] = cached
        return str(cached)


DECK_CACHE_TTL_S = 600
_deck_cache: SingleFlightCache[pdk.Deck] = SingleFlightCache(DECK_CACHE_TTL_S, max_entries=64)


def shared_deck(key: Hashable, build: Callable[[], pdk.Deck]) -> pdk.Deck:
    """The deck for a view key (filters, area switch, mode, metric, tiles), built once per ten minutes for all
    visitors — the same lifetime as the cached map data it is drawn from. Like that data, it is kept per database
    and data generation, so a deck drawn before an import is not shown after it."""
    db = runtime.get_db()
    return _deck_cache.get_or_compute((db.url, stats.data_generation(db), key), build)


# ---- the Sites page ----------------------------------------------------------------------------------
def group_points(rows: pd.DataFrame, unit: str = "mi") -> pd.DataFrame:
    """The Sites table's facility groups with a position → map points: green when a site recruits for a matching
    trial now, grey otherwise; the dot's area follows the number of matching trials; tooltip lines."""
    located = rows.dropna(subset=["lat", "lon"])
    recruiting = list(sitemap.status_colour("RECRUITING"))
    other = list(sitemap.status_colour("COMPLETED"))
    out = pd.DataFrame({
        "lat": located["lat"].astype(float), "lon": located["lon"].astype(float),
        "color": [recruiting if int(r) > 0 else other for r in located["recruiting"]],
        "r": [min(22.0, 3.0 + 1.6 * math.sqrt(float(t))) for t in located["trials"]],
        "t_title": [f"#{int(k)} {inert.text(n) or 'Unnamed site'}" for k, n in zip(located["rank"], located["facility"],
                                                                                   strict=True)],
        "t_sub": [sitemap._where(c, s, k) + (f" · {d:,.1f} {unit} away" if d is not None and d == d else "")
                  for c, s, k, d in zip(located["city"], located["state"], located["country"], located["distance"],
                                        strict=True)],
        "t_l1": [f"{plural(int(t), 'matching trial')} · {int(r):,} recruiting now"
                 for t, r in zip(located["trials"], located["recruiting"], strict=True)],
        "t_l2": [inert.one_line(p, sitemap.TITLE_CHARS) for p in located["sponsors"]],
    })
    return out.reset_index(drop=True)


def group_deck(rows: pd.DataFrame, place: sitemap.geo.Place | None, unit: str = "mi") -> pdk.Deck:
    """The Sites page's map: outlines, one dot per facility group, the place distances are measured from."""
    points = group_points(rows, unit)
    layers = outline_layers(states=True)
    layers.append(pdk.Layer(
        "ScatterplotLayer", points.to_dict("records") if len(points) else [], id="site-groups",
        get_position=["lon", "lat"], get_fill_color="color", get_radius="r", radius_units="'pixels'",
        stroked=True, get_line_color=[255, 255, 255], line_width_min_pixels=0.7, opacity=0.85, pickable=True,
        auto_highlight=True))
    if place is not None:
        layers.extend(pin_layers(place.name, place.lat, place.lon, None, unit))
    return offline_deck(layers, view_for_points(points))
