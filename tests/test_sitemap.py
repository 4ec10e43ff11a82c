"""Tests for the map data (services/dashboard/sitemap.py), the deck builders (services/dashboard/mapdeck.py) and the Map page."""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from services.dashboard import mapdeck, sitemap
from services.dashboard.filters import Filters
from services.data import geo

PROJECT = Path(__file__).resolve().parent.parent
BOSTON = Filters(near="Boston, MA", radius=100, status=())
EARTH_MILES = 6371.0088 / 1.609344  # mean Earth radius (IUGG), in statute miles


def _miles(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    """Great-circle distance written out here, independent of services.data.geo."""
    p1, p2 = math.radians(lat1), math.radians(lat2)
    a = (math.sin((p2 - p1) / 2) ** 2
         + math.cos(p1) * math.cos(p2) * math.sin(math.radians(lon2 - lon1) / 2) ** 2)
    return 2 * EARTH_MILES * math.asin(min(1.0, math.sqrt(a)))


def _located_sites(db, raw_v2, raw_csv) -> list[tuple[str, float, float]]:
    """(nct_id, lat, lon) of every site with coordinates: raw geoPoints for v2 studies, loader rows for CSV ones."""
    sites = []
    for study in raw_v2:
        nct = study["protocolSection"]["identificationModule"]["nctId"]
        for loc in study["protocolSection"].get("contactsLocationsModule", {}).get("locations", []):
            point = loc.get("geoPoint")
            if point and point.get("lat") is not None and point.get("lon") is not None:
                sites.append((nct, float(point["lat"]), float(point["lon"])))
    csv_ids = [row["NCT Number"] for row in raw_csv]
    rows = db.fetch_rows("SELECT nct_id, latitude::float8 AS lat, longitude::float8 AS lon FROM ctgov.facilities "
                         "WHERE nct_id = ANY(CAST(:ids AS text[])) AND latitude IS NOT NULL", {"ids": csv_ids})
    sites.extend((r["nct_id"], r["lat"], r["lon"]) for r in rows)
    return sites


def test_sitemap_sites_near_boston_match_an_independent_haversine(db, raw_v2, raw_csv):
    place = geo.geocode("Boston, MA").place
    distances = [(nct, _miles(place.lat, place.lon, lat, lon)) for nct, lat, lon in _located_sites(db, raw_v2, raw_csv)]
    # No site sits on the boundary, so rounding of stored coordinates cannot flip the answer.
    assert not [d for _, d in distances if abs(d - 100) < 0.01]
    expected = {nct for nct, d in distances if d <= 100}
    assert len(expected) > 100  # the sample has hundreds of trials around Boston

    data = sitemap.map_data(BOSTON, db=db)
    assert not data.summary.aggregated
    assert set(data.points["nct_id"]) == expected
    assert data.summary.trials_located == len(expected)
    assert data.summary.located == sum(1 for _, d in distances if d <= 100)
    assert (data.points["miles"] <= 100).all()

    from services.dashboard.search import count_trials, matching_trials

    assert count_trials(BOSTON, db=db) == len(expected)
    rows = matching_trials(BOSTON, limit=10_000, db=db)
    assert set(rows["nct_id"]) == expected


def test_sitemap_nearest_sites_are_sorted_and_their_distances_match(db, raw_v2, raw_csv):
    place = geo.geocode("Boston, MA").place
    all_d = sorted(d for _, lat, lon in _located_sites(db, raw_v2, raw_csv)
                   if (d := _miles(place.lat, place.lon, lat, lon)) <= 100)
    data = sitemap.map_data(BOSTON, db=db)
    near = data.nearest
    assert len(near) == min(sitemap.NEAREST_LIMIT, len(all_d))
    assert list(near["miles"]) == sorted(near["miles"])
    for lat, lon, miles in zip(near["lat"], near["lon"], near["miles"], strict=True):
        assert miles == pytest.approx(_miles(place.lat, place.lon, lat, lon), abs=1e-6)
    # The nearest N are the N smallest distances of all sites in the radius.
    assert list(near["miles"]) == pytest.approx(all_d[: len(near)], abs=1e-6)

    table = sitemap.nearest_table(near, "mi")
    assert list(table.columns) == ["distance", "facility", "city", "state", "country", "status", "nct_id", "title"]
    assert list(table["distance"]) == [round(m, 1) for m in near["miles"]]
    assert list(table["nct_id"]) == list(near["nct_id"])
    km = sitemap.nearest_table(near, "km")
    assert list(km["distance"]) == [round(m * 1.609344, 1) for m in near["miles"]]


def test_sitemap_tooltips_give_the_distance_in_the_filter_s_unit(db):
    # With the unit set to km, every tooltip said "… 1.2 mi away" over the number of miles.
    for unit, factor in (("km", geo.KM_PER_MILE), ("mi", 1.0)):
        data = sitemap.map_data(Filters(near="Boston, MA", radius=150 if unit == "km" else 90, unit=unit, status=()),
                                db=db)
        for frame in (data.points, data.nearest):
            assert len(frame) > 10
            assert [s.rsplit(" · ", 1)[1] for s in frame["t_sub"]] == [f"{m * factor:,.1f} {unit} away"
                                                                       for m in frame["miles"]]


def test_sitemap_groups_sites_into_cells_above_the_point_limit(db):
    f = Filters(status=())
    data = sitemap.map_data(f, point_limit=800, db=db)
    total = db.fetch_value("SELECT count(*) FROM ctgov.facilities WHERE latitude IS NOT NULL")
    s = data.summary
    assert s.aggregated and s.located == total
    assert int(data.points["weight"].sum()) == total  # every site is in exactly one cell
    assert s.shown == len(data.points) <= 800
    assert s.cell_degrees in sitemap.GRID_STEPS
    # The chosen step is the finest one whose cells fit.
    finer = [step for step in sitemap.GRID_STEPS if step < s.cell_degrees]
    for step in finer:
        cells = db.fetch_value("SELECT count(DISTINCT (floor(latitude::float8 / :c), floor(longitude::float8 / :c))) "
                               "FROM ctgov.facilities WHERE latitude IS NOT NULL", {"c": step})
        assert cells > 800
    text = sitemap.describe_shown(s)
    assert f"{total:,} sites" in text and f"{s.shown:,} grid cells of {s.cell_degrees:g}°" in text
    assert "more than 800 sites" in text

    small = sitemap.map_data(Filters(country=("Japan",)), db=db)
    assert not small.summary.aggregated
    assert small.summary.shown == small.summary.located == len(small.points)
    assert sitemap.describe_shown(small.summary).startswith(f"Showing all {small.summary.located:,} sites")


def test_sitemap_site_filters_keep_sites_inside_the_area(db):
    f = Filters(country=("Japan",), status=())
    inside = sitemap.map_data(f, only_in_area=True, db=db)
    everywhere = sitemap.map_data(f, only_in_area=False, point_limit=100_000, db=db)
    assert set(inside.points["country"]) == {"Japan"}
    assert set(inside.points["nct_id"]) <= set(everywhere.points["nct_id"])
    expected_all = db.fetch_value(
        "SELECT count(*) FROM ctgov.facilities WHERE latitude IS NOT NULL AND nct_id IN "
        "(SELECT nct_id FROM ctgov.countries WHERE name = 'Japan' AND removed IS NOT TRUE)")
    assert everywhere.summary.located == expected_all
    assert len(set(everywhere.points["country"])) > 1


def test_sitemap_country_and_state_values_count_sites_and_trials(db):
    data = sitemap.map_data(Filters(status=()), db=db)
    direct = db.fetch_rows("SELECT count(*) AS sites, count(DISTINCT nct_id) AS trials FROM ctgov.facilities "
                           "WHERE country = 'United States'")[0]
    us = data.countries.set_index("name").loc["United States of America"]
    assert (int(us["sites"]), int(us["trials"])) == (direct["sites"], direct["trials"])
    ma = db.fetch_rows("SELECT count(*) AS sites, count(DISTINCT nct_id) AS trials FROM ctgov.facilities "
                       "WHERE country = 'United States' AND state = 'Massachusetts'")[0]
    row = data.states.set_index("name").loc["Massachusetts"]
    assert (int(row["sites"]), int(row["trials"])) == (ma["sites"], ma["trials"])
    assert list(data.countries["trials"]) == sorted(data.countries["trials"], reverse=True)


def test_sitemap_country_values_merge_aact_spellings_under_one_outline():
    df = pd.DataFrame({"country": ["Korea, Republic of", "South Korea", "Japan"], "sites": [3, 4, 5],
                       "trials": [1, 2, 5]})
    out = sitemap.country_values(df)
    assert out.to_dict("records") == [
        {"name": "Japan", "aact_names": "Japan", "sites": 5, "trials": 5},
        {"name": "South Korea", "aact_names": "Korea, Republic of; South Korea", "sites": 7, "trials": 3},
    ]
    states = sitemap.state_values(pd.DataFrame({"state": ["MA", "Massachusetts", "Nowhere"], "sites": [1, 2, 9],
                                                "trials": [1, 1, 9]}))
    assert states.to_dict("records") == [{"name": "Massachusetts", "sites": 3, "trials": 2}]


def test_sitemap_ring_polygon_is_closed_at_the_radius():
    ring = sitemap.ring_polygon(42.36, -71.06, 100, vertices=64)
    assert len(ring) == 65 and ring[0] == pytest.approx(ring[-1])
    for lon, lat in ring:
        assert _miles(42.36, -71.06, lat, lon) == pytest.approx(100, rel=1e-9)
    # Near the antimeridian the longitudes stay continuous instead of jumping across the map.
    ring = sitemap.ring_polygon(-17.7, 179.5, 300)
    lons = [p[0] for p in ring]
    assert max(abs(a - b) for a, b in zip(lons, lons[1:], strict=False)) < 10
    with pytest.raises(ValueError):
        sitemap.ring_polygon(0, 0, 10, vertices=2)


def test_sitemap_log_scale_colours_and_ticks():
    assert sitemap.log_colour(1, 1000) == sitemap.RAMP[0]
    assert sitemap.log_colour(1000, 1000) == sitemap.RAMP[-1]
    assert sitemap.log_colour(0, 1000) == sitemap.RAMP[0]
    # 10**0.75 of 1000 is three quarters of the way: exactly the fourth ramp stop.
    assert sitemap.log_colour(10 ** 2.25, 1000) == sitemap.RAMP[3]
    greens = [sitemap.log_colour(v, 5000)[1] for v in (1, 10, 100, 1000, 5000)]
    assert greens == sorted(greens, reverse=True)  # darker (less green) as values grow
    assert sitemap.log_ticks(1234) == [1, 10, 100, 1000, 1234]
    assert sitemap.log_ticks(100) == [1, 10, 100]
    assert sitemap.log_ticks(0) == []
    assert sitemap.log_colour(1, 1) == sitemap.RAMP[-1]


def test_sitemap_status_colours_and_legend_accept_any_spelling():
    assert sitemap.status_colour("Active, not recruiting") == sitemap.STATUS_COLOURS["ACTIVE_NOT_RECRUITING"]
    assert sitemap.status_colour(None) == sitemap.OTHER_COLOUR
    pts = pd.DataFrame({"status": ["COMPLETED", "RECRUITING", "RECRUITING", "WEIRD"], "weight": [1, 2, 3, 4]})
    assert sitemap.status_legend(pts) == [
        ("Recruiting", sitemap.STATUS_COLOURS["RECRUITING"], 5),
        ("Completed", sitemap.STATUS_COLOURS["COMPLETED"], 1),
        ("Weird", sitemap.OTHER_COLOUR, 4),
    ]
    html = sitemap.legend_html([("A <b>", (1, 2, 3), 7)], "Title & more")
    assert "A &lt;b&gt; (7)" in html and "Title &amp; more" in html and "rgb(1,2,3)" in html


def test_sitemap_site_rows_use_site_status_then_trial_status():
    df = pd.DataFrame({
        "site_id": [1, 2], "nct_id": ["NCT00000001", "NCT00000002"], "facility": ["Clinic A", None],
        "city": ["Boston", "Lyon"], "state": ["Massachusetts", None], "country": ["United States", "France"],
        "lat": [42.0, 45.0], "lon": [-71.0, 4.8], "site_status": ["RECRUITING", None],
        "trial_status": ["ACTIVE_NOT_RECRUITING", "Completed"], "title": ["T" * 200, "Short"], "miles": [1.25, None],
    })
    out = sitemap.shape_sites(df)
    assert list(out["status"]) == ["RECRUITING", "COMPLETED"]
    assert list(out["status_from"]) == ["site", "trial"]
    assert list(out["t_title"]) == ["Clinic A", "Unnamed site"]
    assert list(out["t_sub"]) == ["Boston, Massachusetts, United States · 1.2 mi away", "Lyon, France"]
    assert list(out["t_l1"]) == ["NCT00000001 · Recruiting", "NCT00000002 · Completed (trial status)"]
    assert len(out["t_l2"][0]) == sitemap.TITLE_CHARS and out["t_l2"][0].endswith("…")


def test_sitemap_choropleth_features_carry_value_colour_and_tooltip():
    values = pd.DataFrame({"name": ["Japan", "France", "Atlantis"], "aact_names": ["Japan", "France", "Atlantis"],
                           "sites": [100, 10, 5], "trials": [10, 1, 5]})
    gj = sitemap.choropleth_geojson(values, "countries", "sites")
    props = {f["properties"]["name"]: f["properties"] for f in gj["features"]}
    assert set(props) == {"Japan", "France"}
    assert props["Japan"]["fill"] == [*sitemap.RAMP[-1], 210]
    assert props["France"]["fill"] == [*sitemap.log_colour(10, 100), 210]
    assert props["Japan"]["t_sub"] == "10 trials · 100 sites"
    assert sitemap.unmatched_names(values, "countries") == ["Atlantis"]
    with pytest.raises(ValueError):
        sitemap.choropleth_geojson(values, "countries", "patients")


def _deck_json(deck) -> dict:
    return json.loads(deck.to_json())


def test_mapdeck_layers_for_a_place_draw_outlines_under_sites_and_pin_on_top(db):
    data = sitemap.map_data(BOSTON, db=db)
    spec = _deck_json(mapdeck.build_deck(data, "sites"))
    assert [layer["id"] for layer in spec["layers"]] == [
        "sea", "countries-outline", "states-outline", "radius-ring", "sites", "place-pin", "place-label"]
    assert spec.get("mapStyle") == mapdeck.EMPTY_MAP_STYLE and spec.get("mapProvider") is None  # nothing fetched
    sites = spec["layers"][4]
    assert len(sites["data"]) == len(data.points)
    assert sites["radiusUnits"] == "pixels"
    assert {"t_title", "t_sub", "t_l1", "t_l2"} <= set(sites["data"][0])
    assert spec["initialViewState"]["latitude"] == pytest.approx(data.place.lat)
    ring = spec["layers"][3]["data"][0]["polygon"]
    assert _miles(data.place.lat, data.place.lon, ring[0][1], ring[0][0]) == pytest.approx(100, rel=1e-9)

    both = _deck_json(mapdeck.build_deck(data, "sites+density"))
    assert [layer["@@type"] for layer in both["layers"]][4:6] == ["HeatmapLayer", "ScatterplotLayer"]
    tiles = _deck_json(mapdeck.build_deck(data, "sites", tiles=True))
    assert "cartocdn" in tiles["mapStyle"] and "sea" not in [layer["id"] for layer in tiles["layers"]]
    with pytest.raises(ValueError):
        mapdeck.build_deck(data, "globe")


def test_mapdeck_choropleth_and_grid_layers(db):
    data = sitemap.map_data(Filters(status=()), point_limit=500, db=db)
    spec = _deck_json(mapdeck.build_deck(data, "states", metric="sites"))
    choro = next(layer for layer in spec["layers"] if layer["id"] == "choropleth-states")
    names = {f["properties"]["name"] for f in choro["data"]["features"]}
    assert "Massachusetts" in names and choro["pickable"] is True
    grid = _deck_json(mapdeck.build_deck(data, "sites"))["layers"][-1]
    assert grid["getRadius"] == "@@=r"
    radii = [row["r"] for row in grid["data"]]
    assert max(radii) <= 18.0 and min(radii) >= 2.0


def test_mapdeck_json_is_pydecks_own_json_written_compactly(db):
    data = sitemap.map_data(BOSTON, db=db)
    for mode in mapdeck.MODES:
        reference = mapdeck.pdk.Deck.to_json(mapdeck.build_deck(data, mode))  # pydeck's indented JSON
        deck = mapdeck.build_deck(data, mode)
        text = deck.to_json()
        assert json.loads(text) == json.loads(reference), mode
        assert "\n" not in text and len(text) < len(reference) * 0.8
        assert deck.to_json() is text  # written once per shared deck


# ---- the page --------------------------------------------------------------------------------------
def _map_page(**params: str) -> AppTest:
    at = AppTest.from_file(str(PROJECT / "app_pages/map.py"), default_timeout=120)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, at.exception
    return at


def test_map_page_draws_sites_with_a_legend_and_says_what_is_shown(db):
    at = _map_page(status="ANY")
    spec = json.loads(at.get("deck_gl_json_chart")[0].proto.json)
    ids = [layer["id"] for layer in spec["layers"]]
    assert ids[:3] == ["sea", "countries-outline", "states-outline"] and ids[-1] == "sites"
    data = sitemap.map_data(Filters(status=()), db=db)
    assert any(c.value == sitemap.describe_shown(data.summary) for c in at.caption)
    assert any("Most common status per cell" in m.value for m in at.markdown)
    assert any("Set a place in the sidebar" in i.value for i in at.info)


def test_map_page_near_boston_lists_the_nearest_sites(db):
    at = _map_page(near="Boston, MA", radius="100", status="ANY")
    table = at.dataframe[0].value
    expected = sitemap.nearest_table(sitemap.map_data(BOSTON, db=db).nearest, "mi")
    assert list(table["distance"]) == list(expected["distance"])
    assert list(table["nct_id"]) == ["Trials?nct=" + n for n in expected["nct_id"]]
    spec = json.loads(at.get("deck_gl_json_chart")[0].proto.json)
    assert "radius-ring" in [layer["id"] for layer in spec["layers"]]


def test_map_page_choropleth_mode_has_a_log_legend(db):
    at = AppTest.from_file(str(PROJECT / "app_pages/map.py"), default_timeout=120).run()
    at.radio(key="map_mode").set_value("countries").run()
    assert not at.exception, at.exception
    spec = json.loads(at.get("deck_gl_json_chart")[0].proto.json)
    assert "choropleth-countries" in [layer["id"] for layer in spec["layers"]]
    assert any("Number of trials (log scale)" in m.value for m in at.markdown)
    data = sitemap.map_data(Filters(), db=db)
    assert any(c.value == sitemap.describe_choropleth(data, "countries", "trials") for c in at.caption)
    assert sitemap.describe_choropleth(data, "states", "sites").startswith(
        "Colour: number of sites per US state in the United States on a log scale")


def test_map_page_shares_its_map_data_across_sessions_and_leaves_it_unchanged(db, monkeypatch):
    from services.ui import state as ui_state

    first = _map_page(near="Boston, MA", radius="100", status="ANY")
    f = first.session_state["filters"]
    data = ui_state.cached(sitemap.map_data, f, True)  # the object the page drew, from the shared cache
    before = (data.points.copy(deep=True), data.nearest.copy(deep=True), data.countries.copy(deep=True),
              data.states.copy(deep=True))
    computed: list[object] = []
    original = sitemap.map_data

    @functools.wraps(original)
    def counted(*args, **kwargs):
        computed.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(sitemap, "map_data", counted)  # same name, so the same cache key
    for mode in mapdeck.MODES:
        first.radio(key="map_mode").set_value(mode).run()
        assert not first.exception, (mode, first.exception)
    second = _map_page(near="Boston, MA", radius="100", status="ANY")  # another visitor, same view
    assert computed == []  # no new computation, no copy
    assert ui_state.cached(sitemap.map_data, f, True) is data
    for frame, old in zip((data.points, data.nearest, data.countries, data.states), before, strict=True):
        pd.testing.assert_frame_equal(frame, old)  # drawing every mode changed nothing in the shared result
    assert list(second.dataframe[0].value["distance"]) == list(sitemap.nearest_table(data.nearest, "mi")["distance"])


def test_map_page_unknown_place_says_so_and_keeps_other_filters(db):
    at = _map_page(near="Xqzzyvillez Nowhere", condition="diabetes")
    warnings = " ".join(w.value for w in at.warning)
    assert "Could not find the place" in warnings and "Xqzzyvillez" in warnings
    f = at.session_state["filters"]
    assert f.condition == "diabetes" and f.near is None
    data = sitemap.map_data(Filters(condition="diabetes"), db=db)
    assert any(c.value == sitemap.describe_shown(data.summary) for c in at.caption)


# ---- a real browser, no internet ---------------------------------------------------------------------------
CHROMIUM = "/usr/bin/chromium"


@pytest.mark.browser
@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is missing (apt-get install -y chromium)")
def test_map_page_in_chromium_draws_sites_over_outlines_offline(db):
    import io
    import os
    import subprocess
    import sys
    import time

    from PIL import Image
    from playwright.sync_api import sync_playwright

    from devtools.commands.bench_load_cmd import free_port
    from devtools.loadtest import http_get

    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port), "--server.address",
         "127.0.0.1", "--server.headless", "true"], cwd=PROJECT, env=dict(os.environ),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                http_get(f"http://127.0.0.1:{port}/_stcore/health", timeout_s=2)
                break
            except OSError:
                assert time.monotonic() < deadline, "streamlit did not start"
                time.sleep(0.3)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=[
                "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--no-first-run"])
            page = browser.new_page(viewport={"width": 1400, "height": 1200})
            page.set_default_timeout(90_000)
            page.goto(f"http://127.0.0.1:{port}/Map?near=Boston%2C%20MA&radius=100&status=ANY")
            chart = page.locator('[data-testid="stDeckGlJsonChart"]')
            chart.wait_for()
            page.get_by_text("Nearest sites", exact=True).wait_for()
            # deck.gl draws some frames after the element appears: look again until the picture holds
            # everything it should (or the deadline passes and the assertion below names what is missing).
            deadline = time.monotonic() + 60
            while True:
                image = Image.open(io.BytesIO(chart.screenshot())).convert("RGB")
                if _drawn(_colour_counts(image)) or time.monotonic() > deadline:
                    break
                page.wait_for_timeout(250)
            assert page.locator('[data-testid="stException"]').count() == 0
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
    counts = _colour_counts(image)
    sea, land, total = counts["sea"], counts["land"], counts["total"]
    assert sea > total * 0.05 and land > total * 0.05, (sea, land, total)
    assert counts["outline"] > 200 and counts["green"] > 30 and counts["ring"] > 200, counts


def _colour_counts(image) -> dict[str, int]:  # noqa: ANN001 - a PIL image
    """Pixels of each colour the offline map should show."""
    raw = image.tobytes()
    pixels = [(raw[i], raw[i + 1], raw[i + 2]) for i in range(0, len(raw), 3)]
    return {
        "sea": sum(1 for r, g, b in pixels if b > r + 10 and b > 200 and r > 180),
        "land": sum(1 for r, g, b in pixels if r > 225 and g > 215 and b > 205 and r >= b + 4),
        "outline": sum(1 for r, g, b in pixels if 120 < r < 200 and abs(r - g) < 12 and abs(g - b) < 12),
        "green": sum(1 for r, g, b in pixels if g > r + 50 and g > b + 30),  # recruiting sites
        "ring": sum(1 for r, g, b in pixels if r > 150 and g < 90 and b < 100),  # ring, pin, terminated sites
        "total": len(pixels),
    }


def _drawn(counts: dict[str, int]) -> bool:
    total = counts["total"]
    return (counts["sea"] > total * 0.05 and counts["land"] > total * 0.05 and counts["outline"] > 200
            and counts["green"] > 30 and counts["ring"] > 200)


def test_every_offline_deck_names_an_inline_style_so_nothing_is_fetched(db):
    """The Map without tiles and the assistant's trial-card map: an inline empty style, never a URL (given no
    style, Streamlit's map would fetch a street-map style from the internet)."""
    from services.assistant import view_model

    points = pd.DataFrame({"nct_id": ["NCT00000001"], "lat": [42.36], "lon": [-71.06], "distance": [1.0],
                           "facility": ["A"], "city": ["Boston"], "country": ["United States"]})
    data = sitemap.map_data(Filters(condition="diabetes", status=("ANY",)), db=db)
    decks = [view_model.cards_deck(points, (42.36, -71.06), 50), view_model.cards_deck(points.head(0), None, None),
             *(mapdeck.build_deck(data, mode, "trials", tiles=False) for mode in ("sites", "countries", "states"))]
    for deck in decks:
        assert json.loads(deck.to_json())["mapStyle"] == mapdeck.EMPTY_MAP_STYLE


def test_sitemap_sentences_say_one_site_and_one_trial_in_the_singular():
    # "Showing all 1 sites of 1 trials." was said for a filter matching one trial with one site.
    one = sitemap.MapSummary(sites=1, located=1, trials=1, trials_located=1, aggregated=False, cell_degrees=None,
                             shown=1)
    assert sitemap.describe_shown(one) == "Showing all 1 site of 1 trial."
    two = sitemap.MapSummary(sites=3, located=2, trials=2, trials_located=1, aggregated=True, cell_degrees=0.5,
                             shown=1, point_limit=1)
    assert sitemap.describe_shown(two) == (
        "2 sites of 1 trial are grouped into 1 grid cell of 0.5° (more than 1 site would slow the browser); each "
        "cell's size follows its number of sites. 1 site has no coordinates and is not drawn.")
    unlocated = sitemap.MapSummary(sites=1, located=0, trials=1, trials_located=0, aggregated=False,
                                   cell_degrees=None, shown=0)
    assert sitemap.describe_shown(unlocated).startswith("No site of the 1 matching trial has coordinates")
    values = pd.DataFrame({"name": ["Japan"], "aact_names": ["Japan"], "sites": [1], "trials": [1]})
    data = sitemap.MapData(Filters(), True, one, pd.DataFrame(), pd.DataFrame(), values, values.iloc[:0], None, None)
    assert sitemap.describe_choropleth(data, "countries", "trials") == (
        "Colour: number of trials per country on a log scale, from 1 site of 1 matching trial (a trial with sites "
        "in several places counts in each).")


def test_mapdeck_a_deck_drawn_before_an_import_is_not_shown_after_it(db, monkeypatch):
    """Decks are shared for ten minutes, keyed like the map data they draw: by database and data generation. After
    an import (a new generation) the same view is drawn again, not the deck of the old data."""
    import pydeck as pdk

    generation = ["before"]
    monkeypatch.setattr(mapdeck.stats, "data_generation", lambda db=None: generation[0])
    builds: list[pdk.Deck] = []

    def build() -> pdk.Deck:
        builds.append(pdk.Deck(layers=[]))
        return builds[-1]

    key = ("generation test", Filters.from_query({"country": "France"})[0])
    first = mapdeck.shared_deck(key, build)
    assert mapdeck.shared_deck(key, build) is first and len(builds) == 1
    generation[0] = "after"
    assert mapdeck.shared_deck(key, build) is builds[1] is not first
