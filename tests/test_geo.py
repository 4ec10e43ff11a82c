"""Offline geocoder, site geocoding, distances, bounding boxes and country-name mapping (no database)."""

from __future__ import annotations

import gzip
import json
import math
import random
import statistics
from pathlib import Path

import pytest

from services.data import geo
from services.data.geo import GeocodeResult, Place
from services.errors import BadInput

DATA = Path(__file__).resolve().parent.parent / "data"
HINT = 'Type a city with its state or country (for example "Lompoc, California" or "Osaka, Japan"), or a US ZIP code.'

# Countries in the sample whose territory is too small for the 110m outlines: no shape to colour.
NO_OUTLINE_IN_110M = {"Antigua and Barbuda", "Hong Kong", "Singapore"}


def _sample_locations() -> list[dict]:
    with gzip.open(DATA / "ctgov_sample.jsonl.gz", "rt", encoding="utf-8") as fh:
        studies = [json.loads(line) for line in fh]
    return [
        location
        for study in studies
        for location in study["protocolSection"].get("contactsLocationsModule", {}).get("locations", []) or []
    ]


def _geojson_names(name: str) -> set[str]:
    with open(DATA / "geo" / name, encoding="utf-8") as fh:
        return {feature["properties"]["name"] for feature in json.load(fh)["features"]}


def _summary(place: Place | None) -> tuple | None:
    """Everything but the coordinates, which are compared with a tolerance."""
    if place is None:
        return None
    return (place.name, place.kind, place.country, place.state)


@pytest.mark.parametrize(
    ("text", "expected", "lat", "lon"),
    [
        (
            "Boston, MA",
            ("Boston, Massachusetts, United States", "city", "United States", "Massachusetts"),
            42.36,
            -71.06,
        ),
        (
            "Lompoc, California",
            ("Lompoc, California, United States", "city", "United States", "California"),
            34.64,
            -120.46,
        ),
        (
            "Lompoc, CA",
            ("Lompoc, California, United States", "city", "United States", "California"),
            34.64,
            -120.46,
        ),
        (
            "lompoc ca",
            ("Lompoc, California, United States", "city", "United States", "California"),
            34.64,
            -120.46,
        ),
        (
            "Houston, Texas",
            ("Houston, Texas, United States", "city", "United States", "Texas"),
            29.76,
            -95.37,
        ),
        ("Osaka, Japan", ("Osaka, Japan", "city", "Japan", None), 34.69, 135.50),
        ("Osaka, JP", ("Osaka, Japan", "city", "Japan", None), 34.69, 135.50),
        ("sao paulo", ("São Paulo, Brazil", "city", "Brazil", None), -23.55, -46.64),
        ("Zürich", ("Zürich, Switzerland", "city", "Switzerland", None), 47.37, 8.55),
        ("ZURICH, switzerland", ("Zürich, Switzerland", "city", "Switzerland", None), 47.37, 8.55),
        (
            "Saint Louis, MO",
            ("St. Louis, Missouri, United States", "city", "United States", "Missouri"),
            38.63,
            -90.20,
        ),
        ("Cologne", ("Köln, Germany", "city", "Germany", None), 50.93, 6.95),
        (
            "New York",
            ("New York City, New York, United States", "city", "United States", "New York"),
            40.71,
            -74.01,
        ),
        ("Tbilisi, Georgia", ("Tbilisi, Georgia", "city", "Georgia", None), 41.69, 44.83),
        (
            "Atlanta, Georgia",
            ("Atlanta, Georgia, United States", "city", "United States", "Georgia"),
            33.75,
            -84.39,
        ),
        ("Toronto, CA", ("Toronto, Canada", "city", "Canada", None), 43.71, -79.40),
        (
            "San Juan, Puerto Rico",
            ("San Juan, Puerto Rico", "city", "Puerto Rico", "Puerto Rico"),
            18.47,
            -66.11,
        ),
        (
            "93436",
            ("93436 (Lompoc, California, United States)", "zip", "United States", "California"),
            34.64,
            -120.46,
        ),
        (
            "02115-1234",
            ("02115 (Boston, Massachusetts, United States)", "zip", "United States", "Massachusetts"),
            42.34,
            -71.09,
        ),
        (
            "Boston, MA 02115",
            ("02115 (Boston, Massachusetts, United States)", "zip", "United States", "Massachusetts"),
            42.34,
            -71.09,
        ),
        ("75013 Paris", ("Paris, France", "city", "France", None), 48.85, 2.35),
        ("Hong Kong, China", ("Hong Kong", "city", "Hong Kong", None), 22.28, 114.17),
        ("Texas", ("Texas, United States", "state", "United States", "Texas"), 31.25, -97.94),
        ("Germany", ("Germany", "country", "Germany", None), 52.52, 13.41),
    ],
)
def test_geo_geocode_resolves_examples(text: str, expected: tuple, lat: float, lon: float) -> None:
    place = geo.geocode(text).place
    assert _summary(place) == expected
    assert place is not None
    assert (place.lat, place.lon) == pytest.approx((lat, lon), abs=0.05)


def test_geo_geocode_unambiguous_city_has_plain_message() -> None:
    result = geo.geocode("Lompoc, California")
    assert (result.query, result.alternatives, result.message) == (
        "Lompoc, California",
        (),
        "Using Lompoc, California, United States.",
    )
    assert result.place is not None and result.place.population == 44164


def test_geo_geocode_paris_prefers_the_most_populous_and_lists_texas() -> None:
    result = geo.geocode("Paris")
    assert _summary(result.place) == ("Paris, France", "city", "France", None)
    names = [p.name for p in result.alternatives]
    assert names[0] == "Paris, Texas, United States"
    assert len(names) == geo.MAX_ALTERNATIVES


def test_geo_geocode_springfield_is_ambiguous_and_says_so() -> None:
    result = geo.geocode("Springfield")
    assert _summary(result.place) == (
        "Springfield, Missouri, United States",
        "city",
        "United States",
        "Missouri",
    )
    assert [p.name for p in result.alternatives[:3]] == [
        "Springfield, Massachusetts, United States",
        "Springfield, Illinois, United States",
        "Springfield, Oregon, United States",
    ]
    assert "using Springfield, Missouri, United States, the most populous match" in result.message
    assert "Springfield, Illinois, United States" in result.message
    assert "Add a state or country" in result.message


def test_geo_geocode_state_narrows_an_ambiguous_name() -> None:
    result = geo.geocode("Springfield, IL")
    assert _summary(result.place) == (
        "Springfield, Illinois, United States",
        "city",
        "United States",
        "Illinois",
    )
    assert result.alternatives == ()


def test_geo_geocode_not_found_says_what_to_type() -> None:
    assert geo.geocode("Nowhereville") == GeocodeResult(
        "Nowhereville", None, (), f'Could not find "Nowhereville". {HINT}'
    )


def test_geo_geocode_name_outside_the_given_country_offers_the_others() -> None:
    result = geo.geocode("Paris, Germany")
    assert result.place is None
    assert result.alternatives[0].name == "Paris, France"
    assert result.message.startswith('No place called "Paris" in Germany.')


def test_geo_geocode_unknown_zip_is_reported() -> None:
    assert geo.geocode("00000") == GeocodeResult(
        "00000",
        None,
        (),
        "00000 is not a US ZIP code in the offline list. Check the digits, or type a city with its state or "
        'country (for example "Lompoc, California" or "Osaka, Japan"), or a US ZIP code.',
    )


@pytest.mark.parametrize("text", ["１０００１", "١٠٠٠١", "New York, NY １０００１"])
def test_geo_geocode_reads_a_zip_typed_in_other_digits(text) -> None:
    # A full-width ZIP (a Japanese keyboard) used to be "not a US ZIP code in the offline list. Check the digits".
    result = geo.geocode(text)
    assert (result.place.name if result.place else None, result.message) == (
        "10001 (New York, United States)", "Using US ZIP code 10001, which is in New York, United States.")


def test_geo_geocode_state_and_country_messages_say_which_point_is_used() -> None:
    texas = geo.geocode("Texas")
    assert texas.message.startswith("Texas is a US state; using the average position of its ZIP codes")
    germany = geo.geocode("Germany")
    assert germany.message.startswith(
        "Germany is a country or territory; using its capital, Berlin, as its point."
    )
    georgia = geo.geocode("Georgia")
    assert _summary(georgia.place) == ("Georgia, United States", "state", "United States", "Georgia")
    assert [p.name for p in georgia.alternatives] == ["Georgia"]


@pytest.mark.parametrize(
    ("text", "message_start"),
    [
        ("", "No place given."),
        ("   \t\n", "No place given."),
        ("!!! ???", "No place given."),
        ("x" * 10_000, "That text is too long to be a place name (10000 characters)."),
        ("'; DROP TABLE studies; --", 'Could not find "DROP TABLE studies".'),
        ("zzqx'); SELECT pg_sleep(10); --", 'Could not find "zzqx\'), SELECT pg_sleep(10)".'),
        ("%_\\", "No place given."),
        ("\x00\x07\x1b[31m", 'Could not find "[31m".'),
        ("🙂🙂🙂", "No place given."),
    ],
)
def test_geo_geocode_hostile_text_gives_a_clear_message(text: str, message_start: str) -> None:
    result = geo.geocode(text)
    assert (result.query, result.place, result.alternatives) == (text, None, ())
    assert result.message.startswith(message_start)
    assert result.message.endswith(HINT)


def test_geo_geocode_never_raises_on_random_text() -> None:
    rng = random.Random(20240917)
    alphabet = "abcdefghijklmnopqrstuvwxyz ,;-'.0123456789ÄÖÜßéçøł大阪Ж\u0301\u200b\x00"
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        result = geo.geocode(text)
        assert result.query == text
        assert result.message
        assert len(result.alternatives) <= geo.MAX_ALTERNATIVES


def test_geo_geocode_caches_results() -> None:
    assert geo.geocode("Houston, Texas") is geo.geocode("Houston, Texas")


@pytest.mark.parametrize(
    ("site", "lat", "lon"),
    [
        (("Phoenix", "Arizona", "85012", "United States"), 33.51, -112.07),
        (("Palo Alto", "California", "94304-1290", "United States"), 37.40, -122.15),
        (("Lompoc", "California", None, "United States"), 34.64, -120.46),
        (("Boston", "MA", "", "United States"), 42.36, -71.06),
        (("Solvang", "California", None, "United States"), 34.60, -120.14),
        # A ZIP from another state is a typo: the town and state decide.
        (("Glendale", "California", "37219", "United States"), 34.14, -118.26),
        (("San Juan", None, "00909", "Puerto Rico"), 18.44, -66.07),
        (("Osaka", None, "530-0001", "Japan"), 34.69, 135.50),
        (("München", None, "81377", "Germany"), 48.14, 11.58),
        (("Lyon Cedex 03", None, None, "France"), 45.75, 4.85),
        (("Saitama-shi", "Saitama", None, "Japan"), 35.91, 139.66),
        (("Seoul", None, None, "Korea, Republic of"), 37.57, 126.98),
        (("Seoul", None, None, "South Korea"), 37.57, 126.98),
        (("Abidjan", None, None, "Côte d’Ivoire"), 5.35, -4.00),
        (("Hong Kong", None, None, "China"), 22.28, 114.17),
    ],
)
def test_geo_geocode_site_finds_rows(site: tuple, lat: float, lon: float) -> None:
    point = geo.geocode_site(*site)
    assert point == pytest.approx((lat, lon), abs=0.05)


@pytest.mark.parametrize(
    "site",
    [
        ("Nowhereville", None, None, "France"),
        ("Paris", None, None, "Republic of"),
        (None, None, None, None),
        ("", "", "", ""),
        ("Springfield", None, None, "United States"),
        ("Springfield", "Atlantis", None, "United States"),
        (None, "Texas", None, "United States"),
        ("Nowhereville", "Texas", "7500123", "United States"),
    ],
)
def test_geo_geocode_site_returns_none_when_unknown(site: tuple) -> None:
    assert geo.geocode_site(*site) is None


def test_geo_geocode_site_agrees_with_registry_points_on_the_sample() -> None:
    """Most sites in the v2 sample carry ClinicalTrials.gov's own geoPoint: ours must land close to it."""
    errors = []
    found = 0
    locations = _sample_locations()
    for location in locations:
        point = geo.geocode_site(
            location.get("city"), location.get("state"), location.get("zip"), location.get("country")
        )
        if point is None:
            continue
        found += 1
        if location.get("geoPoint"):
            errors.append(
                geo.haversine_miles(*point, location["geoPoint"]["lat"], location["geoPoint"]["lon"])
            )
    assert found / len(locations) > 0.96
    assert statistics.median(errors) < 1.0
    assert sum(e < 25 for e in errors) / len(errors) > 0.95


def test_geo_haversine_matches_known_distances() -> None:
    boston, new_york = (42.3601, -71.0589), (40.7128, -74.0060)
    assert geo.haversine_miles(*boston, *new_york) == pytest.approx(190.2, abs=1.0)
    assert geo.haversine_km(*boston, *new_york) == pytest.approx(190.2 * geo.KM_PER_MILE, abs=1.5)
    assert geo.haversine_km(51.5074, -0.1278, 48.8566, 2.3522) == pytest.approx(
        343.5, abs=1.0
    )  # London-Paris
    assert geo.haversine_km(0, 0, 0, 180) == pytest.approx(math.pi * geo.EARTH_RADIUS_KM)
    assert geo.haversine_miles(*boston, *boston) == 0.0
    assert geo.KM_PER_MILE == 1.609344


def _destination(lat: float, lon: float, bearing: float, miles: float) -> tuple[float, float]:
    angle = miles / geo.EARTH_RADIUS_MILES
    phi, lmb = math.radians(lat), math.radians(lon)
    phi2 = math.asin(math.sin(phi) * math.cos(angle) + math.cos(phi) * math.sin(angle) * math.cos(bearing))
    lmb2 = lmb + math.atan2(
        math.sin(bearing) * math.sin(angle) * math.cos(phi), math.cos(angle) - math.sin(phi) * math.sin(phi2)
    )
    return math.degrees(phi2), (math.degrees(lmb2) + 540.0) % 360.0 - 180.0


def test_geo_bounding_box_never_excludes_a_point_within_the_radius() -> None:
    rng = random.Random(7)
    checked = 0
    for _ in range(3000):
        lat = rng.choice([rng.uniform(-89.99, 89.99), rng.uniform(80, 89.99), rng.uniform(-60, 60)])
        lon = rng.choice([rng.uniform(-180, 180), rng.uniform(175, 180), rng.uniform(-180, -175)])
        radius = rng.choice([rng.uniform(0.1, 50), rng.uniform(50, 500), rng.uniform(500, 4000)])
        min_lat, max_lat, min_lon, max_lon = geo.bounding_box(lat, lon, radius)
        for _ in range(10):
            # Half the points sit exactly on the circle, where rounding could push them out.
            miles = radius if rng.random() < 0.5 else rng.uniform(0, radius)
            plat, plon = _destination(lat, lon, rng.uniform(0, 2 * math.pi), miles)
            if geo.haversine_miles(lat, lon, plat, plon) > radius:
                continue
            assert min_lat <= plat <= max_lat, (lat, lon, radius, plat, plon)
            assert min_lon <= plon <= max_lon, (lat, lon, radius, plat, plon)
            checked += 1
    assert checked > 20_000


def test_geo_bounding_box_is_tight_away_from_poles_and_antimeridian() -> None:
    min_lat, max_lat, min_lon, max_lon = geo.bounding_box(42.36, -71.06, 100)
    assert (min_lat, max_lat, min_lon, max_lon) == pytest.approx(
        (40.913, 43.807, -73.019, -69.101), abs=0.002
    )


def test_geo_bounding_box_widens_at_poles_and_antimeridian() -> None:
    assert geo.bounding_box(89.5, 10.0, 100)[1:] == (90.0, -180.0, 180.0)
    near_dateline = geo.bounding_box(0.0, 179.9, 100)
    assert near_dateline[2:] == (-180.0, 180.0)
    assert geo.bounding_box(0.0, 0.0, 0.0)[0] == pytest.approx(0.0, abs=1e-6)


@pytest.mark.parametrize("radius", [-1.0, math.nan, math.inf])
def test_geo_bounding_box_rejects_bad_radius(radius: float) -> None:
    with pytest.raises(BadInput):
        geo.bounding_box(0.0, 0.0, radius)


def test_geo_every_sample_country_has_an_outline() -> None:
    outlines = _geojson_names("countries-110m.geojson")
    countries = {location["country"] for location in _sample_locations() if location.get("country")}
    missing = {country for country in countries if geo.natural_earth_name(country) not in outlines}
    assert missing == NO_OUTLINE_IN_110M
    # The exceptions must really be absent, so this list cannot hide a broken mapping.
    assert not {geo.natural_earth_name(c) for c in NO_OUTLINE_IN_110M} & outlines


def test_geo_natural_earth_table_points_at_real_outlines() -> None:
    outlines = _geojson_names("countries-110m.geojson")
    assert set(geo.AACT_TO_NATURAL_EARTH.values()) <= outlines
    # ClinicalTrials.gov lists neither as a country, so no registry spelling leads to them.
    assert outlines - set(geo.AACT_TO_NATURAL_EARTH.values()) == {"N. Cyprus", "Somaliland"}


@pytest.mark.parametrize(
    ("aact", "natural_earth"),
    [
        ("United States", "United States of America"),
        ("Korea, Republic of", "South Korea"),
        ("South Korea", "South Korea"),
        ("Russian Federation", "Russia"),
        ("Iran, Islamic Republic of", "Iran"),
        ("Czechia", "Czechia"),
        ("Czech Republic", "Czechia"),
        ("Taiwan", "Taiwan"),
        ("Viet Nam", "Vietnam"),
        ("Turkey", "Turkey"),
        ("Türkiye", "Turkey"),
        ("Turkey (Türkiye)", "Turkey"),
        ("Tanzania", "Tanzania"),
        ("Syrian Arab Republic", "Syria"),
        ("Moldova, Republic of", "Moldova"),
        ("Macedonia, The Former Yugoslav Republic of", "Macedonia"),
        ("North Macedonia", "Macedonia"),
        ("Congo, The Democratic Republic of the", "Dem. Rep. Congo"),
        ("Congo", "Congo"),
        ("Lao People's Democratic Republic", "Laos"),
        ("Côte D'Ivoire", "Côte d'Ivoire"),
        ("Côte d’Ivoire", "Côte d'Ivoire"),
        ("Bosnia and Herzegovina", "Bosnia and Herz."),
        ("Dominican Republic", "Dominican Rep."),
        ("Palestinian Territories, Occupied", "Palestine"),
        ("Swaziland", "eSwatini"),
        ("Puerto Rico", "Puerto Rico"),
        ("united kingdom", "United Kingdom"),
        ("  France ", "France"),
        ("Narnia", "Narnia"),
    ],
)
def test_geo_natural_earth_name_maps_aact_spellings(aact: str, natural_earth: str) -> None:
    assert geo.natural_earth_name(aact) == natural_earth


def test_geo_aact_country_name_gives_the_registry_spelling() -> None:
    spellings = [
        "South Korea",
        "Russia",
        "Turkey (Türkiye)",
        "USA",
        "cote d'ivoire",
        "Viet Nam",
        "Atlantis",
        "",
    ]
    assert [geo.aact_country_name(s) for s in spellings] == [
        "Korea, Republic of",
        "Russian Federation",
        "Turkey",
        "United States",
        "Côte D'Ivoire",
        "Vietnam",
        None,
        None,
    ]


def test_geo_us_states_cover_the_state_outlines() -> None:
    assert len(geo.US_STATE_CODES) == 52
    assert set(geo.US_STATE_CODES.values()) == _geojson_names("us-states.geojson")


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("MA", "Massachusetts"),
        ("ma", "Massachusetts"),
        ("Texas", "Texas"),
        ("district of columbia", "District of Columbia"),
        ("Washington DC", "District of Columbia"),
        ("PR", "Puerto Rico"),
        ("XX", None),
        ("", None),
        (None, None),
    ],
)
def test_geo_us_state_name_accepts_codes_and_names(text: str | None, name: str | None) -> None:
    assert geo.us_state_name(text) == name


def test_geo_us_territories_are_the_registry_spellings() -> None:
    assert geo.US_TERRITORIES == {
        "Puerto Rico",
        "Guam",
        "U.S. Virgin Islands",
        "Virgin Islands (U.S.)",
        "American Samoa",
        "Northern Mariana Islands",
    }
    assert all(geo.country_code(name) in {"PR", "GU", "VI", "AS", "MP"} for name in geo.US_TERRITORIES)


# ---- the gazetteer cache: built once in a child process, read back compactly ------------------------------
def test_gazetteer_tables_come_from_the_cache_file():
    import pickle

    geo.warm_up()
    path = geo.gazetteer_cache_path()
    assert path.exists() and path.parent.name == "cache"
    with path.open("rb") as fh:
        cached = pickle.load(fh)
    served = geo._gazetteer()
    assert (len(cached.by_name), len(cached.by_alternate), len(cached.zips)) == (
        len(served.by_name), len(served.by_alternate), len(served.zips))
    assert cached.zips["02115"] == served.zips["02115"]
    # The tables only site imports need are rebuilt on demand, never stored.
    assert cached._site_paths is None
    assert geo.geocode_site("Boston", "Massachusetts", None, "United States") is not None


@pytest.mark.parametrize("content", [b"not a pickle", None])
def test_a_damaged_gazetteer_cache_falls_back_to_building_here(tmp_path, monkeypatch, caplog, content):
    import pickle

    bad = tmp_path / "gazetteer.pickle"
    bad.write_bytes(content if content is not None else pickle.dumps({"something": "else"}))
    built = []

    class Stand(geo._Gazetteer):  # records that the in-process build ran, without its 5–20 s
        def __init__(self) -> None:
            built.append(True)

    monkeypatch.setattr(geo, "gazetteer_cache_path", lambda: bad)
    monkeypatch.setattr(geo, "_Gazetteer", Stand)
    with caplog.at_level("WARNING", logger="services.data.geo"):
        result = geo._load_gazetteer()
    assert isinstance(result, Stand) and built == [True]
    assert "gazetteer cache" in caplog.text
