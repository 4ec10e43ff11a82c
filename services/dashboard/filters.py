"""The one filter model: an immutable, hashable value shared by every page, the assistant, the CLI and the URL.

`Filters.from_query()` reads URL parameters (dropping bad ones with a notice), `to_query()`
writes them back (the share link and the cache key), and `where_sql()` turns a filter into a
SQL condition on `ctgov.studies s` with bound parameters only.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, cast
from urllib.parse import quote, urlencode

import numpy as np

from services.dashboard import boolquery, condition, filterplus, textsearch
from services.data import geo, studymesh
from services.data.normalize import (
    FUNDER_CLASSES,
    LABELS,
    OPEN_STATUSES,
    PHASES,
    STATUSES,
    STUDY_TYPES,
    canonical,
    canonical_phase_part,
    sql_funder_class,
    sql_phase,
    sql_status,
    sql_study_type,
)
from services.inert import one_line
from services.vocab import areas as area_vocab

MAX_TEXT = 200  # longest free-text filter value we accept (a condition name is far shorter)
MAX_VALUES = 50  # most values in one multi-valued filter
MAX_RADIUS_MILES = 12_500.0
DEFAULT_RADIUS = 100.0
MAX_UNKNOWN_NOTICES = 10  # unknown parameters named one by one: a link may hold hundreds (Streamlit reads 999)

STATE_VALUES = tuple(sorted(set(geo.US_STATE_CODES.values())))

# URL parameter → field name; the order is the order of the share link.
PARAMS: dict[str, str] = {
    "condition": "condition", "intervention": "intervention", "status": "status", "phase": "phase",
    "type": "study_type", "funder": "funder_class", "sponsor": "sponsor", "country": "country", "state": "state",
    "near": "near", "radius": "radius", "unit": "unit", "age": "age", "sex": "sex", "healthy": "healthy_volunteers",
    "start_from": "start_from", "start_to": "start_to", "enroll_min": "enrollment_min", "enroll_max": "enrollment_max",
    "results": "has_results", "fda": "fda_regulated",
    # issue 38, MeSH terms: therapeutic area, free text over titles, summaries, keywords and outcomes
    "therapeutic_area": "area", "text": "text", "narrower": "narrower",
    # Issue 38: more filters, and the records a filter cannot judge let in on request
    # (services/dashboard/filterplus.py)
    "posted_from": "posted_from", "posted_to": "posted_to", "updated_from": "updated_from",
    "updated_to": "updated_to", "completion_from": "completion_from", "completion_to": "completion_to",
    "age_group": "age_group", "intervention_type": "intervention_type", "facility": "facility",
    "include": "include_missing",
}
FIELD_PARAM = {v: k for k, v in PARAMS.items()}


@dataclass(frozen=True)
class Filters:
    """Every filter of SPEC §4. Tuples and scalars only, so it hashes (the cache key)."""

    condition: str | None = None
    intervention: str | None = None
    status: tuple[str, ...] = OPEN_STATUSES  # () = any status
    phase: tuple[str, ...] = ()
    study_type: tuple[str, ...] = ()
    funder_class: tuple[str, ...] = ()
    sponsor: str | None = None
    country: tuple[str, ...] = ()
    state: tuple[str, ...] = ()
    near: str | None = None
    radius: float = DEFAULT_RADIUS  # MAX_RADIUS_MILES (half the Earth round) reaches every located site
    unit: str = "mi"
    age: float | None = None
    sex: str | None = None  # the patient's sex: FEMALE or MALE
    healthy_volunteers: bool | None = None
    start_from: int | None = None
    start_to: int | None = None
    enrollment_min: int | None = None
    enrollment_max: int | None = None
    has_results: bool | None = None
    fda_regulated: bool | None = None  # an FDA-regulated drug or device (unknown in the registry: neither)
    # issue 38, MeSH terms: therapeutic areas (data/mesh/therapeutic_areas.csv) and the free-text search
    area: tuple[str, ...] = ()
    text: str | None = None
    narrower: bool = True  # the condition's narrower MeSH headings included (False: the named headings alone)
    posted_from: int | None = None  # first posted on ClinicalTrials.gov, year range
    posted_to: int | None = None
    updated_from: int | None = None  # last update posted, year range
    updated_to: int | None = None
    completion_from: int | None = None  # primary completion (actual or anticipated), year range
    completion_to: int | None = None
    age_group: tuple[str, ...] = ()  # CHILD, ADULT, OLDER_ADULT (filterplus.AGE_GROUPS): open to any of them
    intervention_type: tuple[str, ...] = ()  # DRUG, DEVICE, … (normalize.LABELS["intervention_type"])
    facility: str | None = None  # a site's name contains this text
    # filterplus.MISSING keys: let in the records those filters cannot judge
    include_missing: tuple[str, ...] = ()
    # The place `near` names, already found (the assistant's geocoded place, the patient's coordinates): used
    # as it is instead of looking the name up again. Not a URL parameter: a link carries the name.
    origin: geo.Place | None = None

    # ---- URL round trip ---------------------------------------------------------------
    @classmethod
    def from_query(cls, params: Mapping[str, Any]) -> tuple[Filters, list[str]]:
        """Read URL parameters; return the filters and notices for what was dropped and why.

        Values may be strings or lists of strings (repeated parameters). Never raises. After parsing, the
        cross-field checks (a place that cannot be found, inverted ranges) fix what they find, with notices.
        """
        f, notices = cls.parsed(params)
        if f.near:
            found = geo.geocode(f.near)
            if found.place is None:
                notices.append(f"Could not find the place “{one_line(f.near, 40)}”: {found.message} "
                               f"The other filters still apply.")
                f = replace(f, near=None)
        if f.radius > max_radius(f.unit):
            notices.append(f"Ignored radius: the radius must be more than 0 and at most "
                           f"{math.floor(max_radius(f.unit)):,} {f.unit}; using {_num(DEFAULT_RADIUS)} {f.unit}.")
            f = replace(f, radius=DEFAULT_RADIUS)
        if f.start_from is not None and f.start_to is not None and f.start_from > f.start_to:
            notices.append("Start years were reversed; swapped them.")
            f = replace(f, start_from=f.start_to, start_to=f.start_from)
        for lo, hi, what in (("posted_from", "posted_to", "First-posted years"),
                             ("updated_from", "updated_to", "Last-update years"),
                             ("completion_from", "completion_to", "Primary completion years")):
            a, b = getattr(f, lo), getattr(f, hi)
            if a is not None and b is not None and a > b:
                notices.append(f"{what} were reversed; swapped them.")
                f = replace(f, **{lo: b, hi: a})
        if f.enrollment_min is not None and f.enrollment_max is not None and f.enrollment_min > f.enrollment_max:
            notices.append("Enrollment range was reversed; swapped it.")
            f = replace(f, enrollment_min=f.enrollment_max, enrollment_max=f.enrollment_min)
        return f, notices

    @classmethod
    def parsed(cls, params: Mapping[str, Any]) -> tuple[Filters, list[str]]:
        """from_query without the cross-field checks (no place look-up): for describing filters checked before."""
        notices: list[str] = []
        unknown: list[str] = []
        values: dict[str, Any] = {}
        for key, raw in params.items():
            key_s = str(key)
            name = PARAMS.get(key_s)
            if name is None:
                if not is_view_param(key_s):
                    unknown.append(key_s)
                continue
            items = [str(v) for v in (raw if isinstance(raw, (list, tuple)) else [raw])]
            try:
                values[name] = _PARSERS[name](items)
            except ValueError as err:
                notices.append(f"Ignored {key_s}: {err}")
        return cls(**values), unknown_notices(unknown) + notices

    def to_query(self) -> dict[str, list[str]]:
        """URL parameters for this filter (defaults left out); repeated keys for multiple values."""
        out: dict[str, list[str]] = {}
        default = Filters()
        for fld in fields(self):
            if fld.name not in FIELD_PARAM:  # the found place: the link carries its name
                continue
            value = getattr(self, fld.name)
            if value == getattr(default, fld.name):
                continue
            key = FIELD_PARAM[fld.name]
            if fld.name == "status" and value == ():
                out[key] = ["ANY"]
            elif isinstance(value, tuple):
                out[key] = list(value)
            elif isinstance(value, bool):
                out[key] = ["yes" if value else "no"]
            elif isinstance(value, float):
                out[key] = [_num(value)]
            else:
                out[key] = [str(value)]
        if "near" not in out:
            out.pop("radius", None)
            out.pop("unit", None)
        return out

    def query_string(self) -> str:
        """`condition=…&phase=PHASE2&near=Boston%2C%20MA&radius=100` (stable order; spaces as %20, not +)."""
        return urlencode([(k, v) for k, vs in self.to_query().items() for v in vs], quote_via=quote)

    def with_value(self, name: str, value: Any) -> Filters:
        """A copy with one field changed; multi-valued fields add the value if missing."""
        current = getattr(self, name)
        if isinstance(current, tuple) and not isinstance(value, tuple):
            if name == "status" and current == OPEN_STATUSES:
                current = ()
            changed: Any = current if value in current else (*current, value)
            return replace(self, **{name: changed})
        return replace(self, **{name: cast(Any, value)})

    # ---- derived values ---------------------------------------------------------------
    def radius_miles(self) -> float:
        return self.radius / geo.KM_PER_MILE if self.unit == "km" else self.radius

    def place(self) -> geo.Place | None:
        """The typed place when one was given, else the place `near` names (None without either)."""
        if self.origin is not None:
            return self.origin
        return geo.geocode(self.near).place if self.near else None

    @classmethod
    def at(cls, lat: float, lon: float, name: str | None = None, **values: Any) -> Filters:
        """Filters around a point already found (a geocoded place, the patient's coordinates); `name` says
        what it is in words (default: the coordinates)."""
        label = name or f"{lat:.4f}, {lon:.4f}"
        point = geo.Place(label, float(lat), float(lon), "point", "", None, None)
        return cls(near=label, origin=point, **values)

    def is_default(self) -> bool:
        return self == Filters()

    def describe(self) -> list[str]:
        """Plain-language lines for what is set (for captions, reports and the assistant)."""
        from services.data.normalize import label

        lines = []
        if self.condition:
            lines.append(f"Condition: {self.condition}")
        if self.intervention:
            lines.append(f"Intervention: {self.intervention}")
        lines.append("Status: any" if not self.status else
                     # The default keeps active trials that no longer recruit: "open to enrolment" said too much.
                     "Status: open or still running" if self.status == OPEN_STATUSES else
                     "Status: " + ", ".join(label("status", s) for s in self.status))
        for name, title in (("phase", "Phase"), ("study_type", "Study type"), ("funder_class", "Funder")):
            if getattr(self, name):
                lines.append(f"{title}: " + ", ".join(label(name, v) for v in getattr(self, name)))
        if self.sponsor:
            lines.append(f"Lead sponsor: {self.sponsor}")
        if self.country:
            lines.append("Country: " + ", ".join(self.country))
        if self.state:
            lines.append("US state: " + ", ".join(self.state))
        if self.near:
            lines.append(f"Within {_num(self.radius)} {self.unit} of {self.near}")
        if self.age is not None:
            lines.append(f"Age: {_num(self.age)}")
        if self.sex:
            lines.append(f"Sex: {self.sex.lower()}")
        if self.healthy_volunteers is not None:
            lines.append("Accepts healthy volunteers" if self.healthy_volunteers else "Patients only")
        if self.start_from or self.start_to:
            lines.append(f"Start year: {self.start_from or '…'}–{self.start_to or '…'}")
        if self.enrollment_min is not None or self.enrollment_max is not None:
            upper = "…" if self.enrollment_max is None else self.enrollment_max  # a cap of 0 is a cap
            lines.append(f"Enrollment: {self.enrollment_min or 0}–{upper}")
        if self.has_results is not None:
            lines.append("Has results" if self.has_results else "No results posted")
        if self.fda_regulated is not None:
            lines.append("FDA-regulated drug or device" if self.fda_regulated else "Not FDA-regulated")
        if self.area:
            lines.append("Therapeutic area: " + ", ".join(self.area))
        if self.text:
            lines.append(f"Text: {self.text}")
        if self.condition and not self.narrower:
            lines.append("Condition: the named MeSH headings only (narrower ones left out)")
        for lo, hi, title in (("posted_from", "posted_to", "First posted"), ("updated_from", "updated_to",
                              "Last update"), ("completion_from", "completion_to", "Primary completion")):
            if getattr(self, lo) is not None or getattr(self, hi) is not None:
                lines.append(f"{title}: {getattr(self, lo) or '…'}–{getattr(self, hi) or '…'}")
        if self.age_group:
            lines.append("Age group: " + ", ".join(filterplus.AGE_GROUP_LABELS[g] for g in self.age_group))
        if self.intervention_type:
            lines.append("Intervention type: " + ", ".join(label("intervention_type", v)
                                                           for v in self.intervention_type))
        if self.facility:
            lines.append(f"Facility name: {self.facility}")
        lines.extend(f"Including trials {filterplus.MISSING_BY_KEY[k].without}" for k in self.include_missing
                     if filterplus.MISSING_BY_KEY[k] in filterplus.active_missing(self))
        return lines


# Parameters that describe the view rather than the filters (map mode, Trials sort/page/selection, the trial or
# comparison shown, the SQL text; "sql.<name>" are the SQL query's parameters): not filters, so not "unknown".
VIEW_PARAMS = frozenset({"nct", "page", "tab", "session", "compare", "view", "map", "colour", "area", "tiles",
                         "sort", "desc", "rows", "sel", "sql", "bars", "colour_by", "group_by", "rank", "from"})
SQL_PARAM_PREFIX = "sql."
COMPARE_PARAM_PREFIX = "b."  # the Compare page's filter set B (services/dashboard/compare.py reads them)


def is_view_param(key: str) -> bool:
    """Whether a URL parameter belongs to the view (kept beside the filters, never reported as unknown)."""
    return key in VIEW_PARAMS or key.startswith((SQL_PARAM_PREFIX, COMPARE_PARAM_PREFIX))


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


# ---- parameter parsers (each raises ValueError with a reason a person understands) --------
def _one(items: Sequence[str]) -> str:
    values = [i for i in items if i.strip()]
    if not values:
        raise ValueError("it was empty.")
    return values[-1].strip()


def _text(items: Sequence[str]) -> str:
    value = " ".join(_one(items).split())
    if len(value) > MAX_TEXT:
        raise ValueError(f"it is longer than {MAX_TEXT} characters.")
    if any(ord(c) < 32 for c in value):
        raise ValueError("it contains control characters.")
    return value


def _multi(allowed: Iterable[str], kind: str) -> Any:
    allowed_set = tuple(allowed)

    def parse(items: Sequence[str]) -> tuple[str, ...]:
        out: list[str] = []
        bad: list[str] = []
        for item in items:
            for part in item.split(","):
                part = part.strip()
                if not part:
                    continue
                canon = canonical_phase_part(part) if kind == "phase" else canonical(kind, part)
                if canon in allowed_set:
                    if canon not in out:
                        out.append(canon)
                elif part not in bad:  # each ignored value named once
                    bad.append(part)
        if bad:
            raise ValueError(f"unknown value(s) {', '.join(one_line(b, 20) for b in bad[:5])}; "
                             f"allowed: {', '.join(allowed_set)}.")
        if len(out) > MAX_VALUES:
            raise ValueError(f"more than {MAX_VALUES} values.")
        return tuple(out)
    return parse


def _status(items: Sequence[str]) -> tuple[str, ...]:
    if any(i.strip().upper() in ("ANY", "ALL") for i in items):
        return ()
    parsed: tuple[str, ...] = _multi(STATUSES, "status")(items)
    if not parsed:
        raise ValueError("it was empty.")
    return parsed


def _names(items: Sequence[str]) -> tuple[str, ...]:
    out: list[str] = []
    for item in items:
        value = " ".join(item.split())
        if not value:
            continue
        if len(value) > MAX_TEXT or any(ord(c) < 32 for c in value):
            raise ValueError("a value is too long or contains control characters.")
        if value not in out:
            out.append(value)
    if len(out) > MAX_VALUES:
        raise ValueError(f"more than {MAX_VALUES} values.")
    if not out:
        raise ValueError("it was empty.")
    return tuple(out)


def _countries(items: Sequence[str]) -> tuple[str, ...]:
    """Country names, each as its one name per ISO code ("Korea, Republic of" → "South Korea")."""
    return tuple(dict.fromkeys(geo.country_display(n) for n in _names(items)))


def _states(items: Sequence[str]) -> tuple[str, ...]:
    out: list[str] = []
    for item in _names(items):
        name = geo.us_state_name(item)
        if name is None:
            raise ValueError(f"“{one_line(item, 20)}” is not a US state (use a name like Texas or a code like TX).")
        if name not in out:
            out.append(name)
    return tuple(out)


def _float(items: Sequence[str]) -> float:
    raw = _one(items)
    try:
        return float(raw)
    except ValueError as err:
        raise ValueError(f"“{one_line(raw, 20)}” is not a number.") from err


def _number(lo: float, hi: float, what: str) -> Any:
    def parse(items: Sequence[str]) -> float:
        value = _float(items)
        if math.isnan(value) or math.isinf(value) or not (lo <= value <= hi):
            raise ValueError(f"{what} must be between {_num(lo)} and {_num(hi)}.")
        return value
    return parse


def _integer(lo: int, hi: int, what: str) -> Any:
    def parse(items: Sequence[str]) -> int:
        value = _number(lo, hi, what)(items)
        if not float(value).is_integer():
            raise ValueError(f"{what} must be a whole number.")
        return int(value)
    return parse


def _radius(items: Sequence[str]) -> float:
    # The upper bound depends on the unit, which may come later in the URL: from_query() checks it.
    value = _float(items)
    if math.isinf(value):  # e.g. 1e400, beyond what a number can hold: "more than 0" would not say why
        raise ValueError(f"“{one_line(_one(items), 20)}” is not a finite number; give a distance such as "
                         f"{_num(DEFAULT_RADIUS)} (at most {math.floor(max_radius('mi')):,} mi or "
                         f"{math.floor(max_radius('km')):,} km).")
    if math.isnan(value) or value <= 0:
        raise ValueError("the radius must be a number more than 0.")
    return value


def unknown_notices(keys: Sequence[str]) -> list[str]:
    """A notice for each of the first MAX_UNKNOWN_NOTICES unknown parameters, then one that counts the rest."""
    notices = [f"Ignored unknown parameter “{one_line(k, 40)}”." for k in keys[:MAX_UNKNOWN_NOTICES]]
    if len(keys) > MAX_UNKNOWN_NOTICES:
        notices.append(f"Ignored {len(keys) - MAX_UNKNOWN_NOTICES:,} more unknown parameters.")
    return notices


def max_radius(unit: str) -> float:
    """The largest radius in `unit` (half the way round the Earth: beyond it every place is inside)."""
    return MAX_RADIUS_MILES * geo.KM_PER_MILE if unit == "km" else MAX_RADIUS_MILES


def _unit(items: Sequence[str]) -> str:
    value = _one(items).lower()
    aliases = {"mi": "mi", "mile": "mi", "miles": "mi", "km": "km", "kilometres": "km", "kilometers": "km"}
    if value not in aliases:
        raise ValueError("the unit must be mi or km.")
    return aliases[value]


def _sex(items: Sequence[str]) -> str | None:
    value = _one(items).upper()
    if value in ("ALL", "ANY"):
        return None
    aliases = {"F": "FEMALE", "FEMALE": "FEMALE", "WOMAN": "FEMALE", "M": "MALE", "MALE": "MALE", "MAN": "MALE"}
    if value not in aliases:
        raise ValueError("sex must be female or male.")
    return aliases[value]


def _areas(items: Sequence[str]) -> tuple[str, ...]:
    out: list[str] = []
    for item in _names(items):
        area = area_vocab.by_name(item)
        if area is None:
            raise ValueError(f"“{one_line(item, 30)}” is not a therapeutic area (allowed: "
                             f"{', '.join(area_vocab.names()[:6])}, …).")
        if area.name not in out:
            out.append(area.name)
    return tuple(out)


def _choices(aliases: Mapping[str, str], what: str) -> Any:
    """Parser of several values from a fixed list (any case; `aliases` maps upper-case words to values)."""
    def parse(items: Sequence[str]) -> tuple[str, ...]:
        out: list[str] = []
        for part in (p.strip() for item in items for p in item.split(",")):
            if not part:
                continue
            value = aliases.get(part.upper().replace(" ", "_").replace("-", "_"))
            if value is None:
                raise ValueError(f"unknown {what} “{one_line(part, 20)}”; allowed: "
                                 f"{', '.join(dict.fromkeys(aliases.values()))}.")
            if value not in out:
                out.append(value)
        if not out:
            raise ValueError("it was empty.")
        return tuple(out)
    return parse


def _bool(items: Sequence[str]) -> bool:
    value = _one(items).lower()
    if value in ("yes", "true", "1", "y"):
        return True
    if value in ("no", "false", "0", "n"):
        return False
    raise ValueError("use yes or no.")


_PARSERS: dict[str, Any] = {
    "condition": _text, "intervention": _text, "sponsor": _text, "near": _text,
    "status": _status, "phase": _multi(PHASES, "phase"), "study_type": _multi(STUDY_TYPES, "study_type"),
    "funder_class": _multi(FUNDER_CLASSES, "funder_class"), "country": _countries, "state": _states,
    "radius": _radius, "unit": _unit, "age": _number(0, 120, "age"), "sex": _sex, "healthy_volunteers": _bool,
    "start_from": _integer(1900, 2100, "the start year"), "start_to": _integer(1900, 2100, "the start year"),
    "enrollment_min": _integer(0, 100_000_000, "enrollment"), "enrollment_max": _integer(0, 100_000_000, "enrollment"),
    "has_results": _bool, "fda_regulated": _bool,
    "area": _areas, "text": _text, "narrower": _bool,
    **dict.fromkeys(("posted_from", "posted_to", "updated_from", "updated_to", "completion_from",
                     "completion_to"),
                    _integer(1900, 2100, "the year")),
    "age_group": _choices(filterplus.AGE_GROUP_ALIASES, "age group"),
    "intervention_type": _multi(LABELS["intervention_type"], "intervention_type"),
    "facility": _text,
    "include_missing": _choices({m.key.upper(): m.key for m in filterplus.MISSING}, "include"),
}


# ---- SQL translation ------------------------------------------------------------------------
@dataclass
class SqlParts:
    """A WHERE condition on `ctgov.studies s` and its bound parameters."""

    clauses: list[str] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)

    def add(self, clause: str, **params: Any) -> None:
        self.clauses.append(clause)
        self.params.update(params)

    def sql(self) -> str:
        return " AND ".join(f"({c})" for c in self.clauses) if self.clauses else "TRUE"


def _word_match(column: str, tokens: list[str], prefix: str, params: dict[str, Any]) -> str:
    parts = []
    for i, tok in enumerate(tokens):
        name = f"{prefix}{i}"
        params[name] = condition.pg_word_pattern(condition.fold(tok))  # any written form
        parts.append(f"{column} ~ :{name}")
    return " AND ".join(parts)


def condition_sql(text: str, params: dict[str, Any], prefix: str = "cond",
                  narrower: bool = True) -> str | None:
    """SQL (on s.nct_id) for a condition search: the studies carrying one of its MeSH descriptors or a narrower one
    (app.study_mesh when this database has it, else the base tables), or, for a text naming no heading, the
    condition names with every typed word (services/dashboard/condition.py)."""
    sub = condition.select_sql(text, params, stored=studymesh.stored(), prefix=prefix, narrower=narrower)
    return None if sub is None else f"s.nct_id IN ({sub})"


def age_years_sql(col: str) -> str:
    """SQL: an AACT age text ('18 Years', '6 Months', 'N/A') in years; NULL means no limit."""
    return (f"(CASE WHEN {col} ~ '^\\s*[0-9]+(\\.[0-9]+)?\\s*[A-Za-z]' THEN "
            f"substring({col} from '^\\s*([0-9]+(?:\\.[0-9]+)?)')::numeric * "
            f"(CASE WHEN lower({col}) LIKE '%year%' THEN 1.0 WHEN lower({col}) LIKE '%month%' THEN 1.0/12 "
            f"WHEN lower({col}) LIKE '%week%' THEN 7.0/365.25 WHEN lower({col}) LIKE '%day%' THEN 1.0/365.25 "
            f"WHEN lower({col}) LIKE '%hour%' THEN 1.0/8766 WHEN lower({col}) LIKE '%minute%' THEN 1.0/525960 "
            f"ELSE NULL END) END)")


def near_sql(place: geo.Place, radius_miles: float, params: dict[str, Any], alias: str = "f") -> str:
    """SQL on a facilities alias: inside the bounding box, then exact great-circle distance."""
    min_lat, max_lat, min_lon, max_lon = geo.bounding_box(place.lat, place.lon, radius_miles)
    params.update({"near_lat": place.lat, "near_lon": place.lon, "near_r": radius_miles,
                   "near_min_lat": min_lat, "near_max_lat": max_lat, "near_min_lon": min_lon, "near_max_lon": max_lon})
    return (f"{alias}.latitude BETWEEN :near_min_lat AND :near_max_lat "
            f"AND {alias}.longitude BETWEEN :near_min_lon AND :near_max_lon "
            f"AND {distance_sql(alias)} <= :near_r")


def distance_sql(alias: str = "f") -> str:
    """SQL: great-circle distance in miles from (:near_lat, :near_lon) to a facility."""
    return (f"(2 * {geo.EARTH_RADIUS_MILES!r} * asin(least(1, sqrt("
            f"power(sin(radians(({alias}.latitude::float8 - :near_lat) / 2)), 2) + "
            f"cos(radians(:near_lat)) * cos(radians({alias}.latitude::float8)) * "
            f"power(sin(radians(({alias}.longitude::float8 - :near_lon) / 2)), 2)))))")


# The funnel's stages after "base" (every other filter), each the filters it adds: the place stage is every
# place filter (countries, US states, a radius), so a country alone is a named stage, not "Place (not set)".
FUNNEL_STAGES: dict[str, tuple[str, ...]] = {
    "condition": ("condition",), "status": ("status",), "age": ("age",),
                                             "sex": ("sex",), "place": ("country", "state", "near")}
FUNNEL_FIELDS = tuple(name for names in FUNNEL_STAGES.values() for name in names)


def where_sql(f: Filters) -> SqlParts:
    """SQL condition on `ctgov.studies s` for every set filter."""
    p = SqlParts()
    p.clauses.extend(filter_clauses(f, p.params).values())
    return p


# ---- what each filter means ---------------------------------------------------------------------------------
# One definition per filter: when it is set, its SQL condition on `ctgov.studies s` (the SQL engine, the funnel,
# every query over the CTE m) and its boolean mask over the in-process store (services/dashboard/facetstore.py, which the
# mask reads through `store`). Both forms must select exactly the same studies; tests/test_stats_modes.py and
# tests/test_facetstore.py compare them filter by filter. Adding a filter: a field on Filters, one FilterDef here.
Sql = Callable[["Filters", dict[str, Any]], str]
Mask = Callable[[Any, "Filters", Any], np.ndarray]  # (store, filters, database) → one bool per study


@dataclass(frozen=True)
class FilterDef:
    """One filter's meaning, in both forms."""

    name: str
    is_set: Callable[[Filters], bool]
    sql: Sql
    mask: Mask


def _in_database(select: Callable[[Filters, dict[str, Any]], str | None]) -> Mask:
    """A mask the database decides: the studies returned by the SELECT of NCT ids that `select` builds."""
    def mask(store: Any, f: Filters, db: Any) -> np.ndarray:
        params: dict[str, Any] = {}
        return store.lookup(db, select(f, params), params)  # type: ignore[no-any-return]
    return mask


def _condition_sql(f: Filters, params: dict[str, Any]) -> str:
    return condition_sql(str(f.condition), params, narrower=f.narrower) or "FALSE"


def _intervention_sql(f: Filters, params: dict[str, Any]) -> str:
    sub = intervention_ids_sql(str(f.intervention), params)
    return f"s.nct_id IN ({sub})" if sub else "FALSE"


def _status_sql(f: Filters, params: dict[str, Any]) -> str:
    params["status"] = list(f.status)
    return f"{sql_status('s.overall_status')} = ANY(CAST(:status AS text[]))"


def _phase_sql(f: Filters, params: dict[str, Any]) -> str:
    params["phase"] = list(f.phase)
    return f"string_to_array({sql_phase('s.phase')}, '/') && CAST(:phase AS text[])"


def _phase_mask(store: Any, f: Filters, db: Any) -> np.ndarray:
    wanted = set(f.phase)
    return store.phases.lut(lambda v: bool(wanted & set(v.split("/"))))[store.phases.codes]  # type: ignore[no-any-return]


def _study_type_sql(f: Filters, params: dict[str, Any]) -> str:
    params["study_type"] = list(f.study_type)
    return f"{sql_study_type('s.study_type')} = ANY(CAST(:study_type AS text[]))"


def _funder_sql(f: Filters, params: dict[str, Any]) -> str:
    params["funder_class"] = list(f.funder_class)
    return ("EXISTS (SELECT 1 FROM ctgov.sponsors sp WHERE sp.nct_id = s.nct_id AND sp.lead_or_collaborator = 'lead' "
            f"AND {sql_funder_class('sp.agency_class')} = ANY(CAST(:funder_class AS text[])))")


def _funder_mask(store: Any, f: Filters, db: Any) -> np.ndarray:
    has_lead = store.lead_sponsor.codes != store.lead_sponsor.null
    return store.funder_class.among(f.funder_class) & has_lead  # type: ignore[no-any-return]


def _sponsor_sql(f: Filters, params: dict[str, Any]) -> str:
    params["sponsor"] = condition.like_contains(str(f.sponsor).lower())
    return ("EXISTS (SELECT 1 FROM ctgov.sponsors sp WHERE sp.nct_id = s.nct_id "
            "AND sp.lead_or_collaborator = 'lead' AND lower(sp.name) LIKE :sponsor)")


def _sponsor_mask(store: Any, f: Filters, db: Any) -> np.ndarray:
    needle = str(f.sponsor).lower()
    return store.lead_lower.lut(lambda v: needle in v)[store.lead_lower.codes]  # type: ignore[no-any-return]


def _country_sql(f: Filters, params: dict[str, Any]) -> str:
    params["country"] = geo.country_spellings(f.country)  # one country per ISO code, every era's spelling
    return ("EXISTS (SELECT 1 FROM ctgov.countries co WHERE co.nct_id = s.nct_id "
            "AND co.removed IS NOT TRUE AND co.name = ANY(CAST(:country AS text[])))")


def _state_sql(f: Filters, params: dict[str, Any]) -> str:
    params["state"] = list(f.state)
    return ("EXISTS (SELECT 1 FROM ctgov.facilities fs WHERE fs.nct_id = s.nct_id "
            "AND fs.country = 'United States' AND fs.state = ANY(CAST(:state AS text[])))")


def _near_sql(f: Filters, params: dict[str, Any]) -> str:
    place = cast(geo.Place, f.place())
    return f"s.nct_id IN (SELECT f.nct_id FROM ctgov.facilities f WHERE {near_sql(place, f.radius_miles(), params)})"


def near_mask(store: Any, place: geo.Place, radius_miles: float) -> np.ndarray:
    """Mask over the in-process store: the studies with a site within the radius of the place."""
    sites, _ = store.near_sites(place, radius_miles)
    mask = np.zeros(store.n, dtype=bool)
    mask[store.site_row[sites]] = True
    return mask


def _age_sql(f: Filters, params: dict[str, Any]) -> str:
    params["age"] = float(cast(float, f.age))
    lo, hi = age_years_sql("e.minimum_age"), age_years_sql("e.maximum_age")
    return ("NOT EXISTS (SELECT 1 FROM ctgov.eligibilities e WHERE e.nct_id = s.nct_id AND "
            f"(CAST(:age AS float8) < {lo} OR CAST(:age AS float8) >= {hi} + "
            f"(CASE WHEN lower(e.maximum_age) LIKE '%year%' THEN 1 ELSE 0 END)))")


def _age_mask(store: Any, f: Filters, db: Any) -> np.ndarray:
    age = float(cast(float, f.age))
    with np.errstate(invalid="ignore"):
        return ~((age < store.age_lo) | (age >= store.age_hi))  # type: ignore[no-any-return]


def _sex_sql(f: Filters, params: dict[str, Any]) -> str:
    params["sex"] = f.sex
    return ("NOT EXISTS (SELECT 1 FROM ctgov.eligibilities e WHERE e.nct_id = s.nct_id AND "
            "upper(e.gender) IN ('FEMALE', 'MALE') AND upper(e.gender) <> CAST(:sex AS text))")


def _sex_mask(store: Any, f: Filters, db: Any) -> np.ndarray:
    sex = f.sex
    return ~store.gender_upper.lut(lambda v: v in ("FEMALE", "MALE") and v != sex)[store.gender_upper.codes]  # type: ignore[no-any-return]


def _healthy_sql(f: Filters, params: dict[str, Any]) -> str:
    params["healthy"] = f.healthy_volunteers
    return ("EXISTS (SELECT 1 FROM ctgov.eligibilities e WHERE e.nct_id = s.nct_id "
            "AND e.healthy_volunteers = CAST(:healthy AS boolean))")


def _bound(field_name: str, param: str, sql_col: str, store_col: str, op: str) -> tuple[Sql, Mask]:
    """SQL and mask of a bound on a number column (start year, enrollment): NULL never passes."""
    def sql(f: Filters, params: dict[str, Any]) -> str:
        params[param] = getattr(f, field_name)
        return f"{sql_col} {op} CAST(:{param} AS int)"

    def mask(store: Any, f: Filters, db: Any) -> np.ndarray:
        bound = getattr(f, field_name)
        values = getattr(store, store_col)
        with np.errstate(invalid="ignore"):
            return (values >= bound) if op == ">=" else (values <= bound)  # type: ignore[no-any-return]
    return sql, mask


def _results_sql(f: Filters, params: dict[str, Any]) -> str:
    params["has_results"] = f.has_results
    return f"({HAS_RESULTS_SQL}) = CAST(:has_results AS boolean)"


def _fda_sql(f: Filters, params: dict[str, Any]) -> str:
    """The registry's two FDA flags: yes = either is true; no = neither is true and at least one is given."""
    params["fda"] = f.fda_regulated
    return ("((coalesce(s.is_fda_regulated_drug, false) OR coalesce(s.is_fda_regulated_device, false)) = "
            "CAST(:fda AS boolean) AND (s.is_fda_regulated_drug IS NOT NULL OR s.is_fda_regulated_device IS NOT NULL))")


_start_from = _bound("start_from", "start_from", "extract(year FROM s.start_date)", "start_year", ">=")
_start_to = _bound("start_to", "start_to", "extract(year FROM s.start_date)", "start_year", "<=")
_enroll_min = _bound("enrollment_min", "enroll_min", "s.enrollment", "enrollment", ">=")
_enroll_max = _bound("enrollment_max", "enroll_max", "s.enrollment", "enrollment", "<=")

FILTER_DEFS: tuple[FilterDef, ...] = (
    FilterDef("condition", lambda f: bool(f.condition), _condition_sql,
              _in_database(lambda f, p: condition_terms_sql(str(f.condition), p, narrower=f.narrower))),
    FilterDef("intervention", lambda f: bool(f.intervention), _intervention_sql,
              _in_database(lambda f, p: intervention_ids_sql(str(f.intervention), p))),
    FilterDef("status", lambda f: bool(f.status), _status_sql,
              lambda store, f, db: store.status.among(f.status)),
    FilterDef("phase", lambda f: bool(f.phase), _phase_sql, _phase_mask),
    FilterDef("study_type", lambda f: bool(f.study_type), _study_type_sql,
              lambda store, f, db: store.study_type.among(f.study_type)),
    FilterDef("funder_class", lambda f: bool(f.funder_class), _funder_sql, _funder_mask),
    FilterDef("sponsor", lambda f: bool(f.sponsor), _sponsor_sql, _sponsor_mask),
    FilterDef("country", lambda f: bool(f.country), _country_sql,
              lambda store, f, db: store.any_in_list("country", tuple(geo.country_spellings(f.country)))),
    FilterDef("state", lambda f: bool(f.state), _state_sql, lambda store, f, db: store.any_in_list("state", f.state)),
    FilterDef("near", lambda f: f.place() is not None, _near_sql,
              lambda store, f, db: near_mask(store, cast(geo.Place, f.place()), f.radius_miles())),
    FilterDef("age", lambda f: f.age is not None, _age_sql, _age_mask),
    FilterDef("sex", lambda f: bool(f.sex), _sex_sql, _sex_mask),
    FilterDef("healthy_volunteers", lambda f: f.healthy_volunteers is not None, _healthy_sql,
              lambda store, f, db: store.healthy == (1 if f.healthy_volunteers else 0)),
    FilterDef("start_from", lambda f: f.start_from is not None, *_start_from),
    FilterDef("start_to", lambda f: f.start_to is not None, *_start_to),
    FilterDef("enrollment_min", lambda f: f.enrollment_min is not None, *_enroll_min),
    FilterDef("enrollment_max", lambda f: f.enrollment_max is not None, *_enroll_max),
    FilterDef("has_results", lambda f: f.has_results is not None, _results_sql,
              lambda store, f, db: store.has_results == f.has_results),
    FilterDef("fda_regulated", lambda f: f.fda_regulated is not None, _fda_sql,
              _in_database(lambda f, p: f"SELECT s.nct_id FROM ctgov.studies s WHERE {_fda_sql(f, p)}")),
    # issue 38, MeSH terms: both decided in the database, so the two engines run the same SELECT
    FilterDef("area", lambda f: bool(f.area), lambda f, p: f"s.nct_id IN ({area_ids_sql(f.area, p)})",
              _in_database(lambda f, p: area_ids_sql(f.area, p, stored=True))),
    FilterDef("text", lambda f: bool(f.text), lambda f, p: textsearch.where_sql(str(f.text), p) or "FALSE",
              _in_database(lambda f, p: textsearch.ids_sql(str(f.text), p))),
)


# ---- issue 38: more filters (services/dashboard/filterplus.py) ---------------------------------------------
def _year_def(name: str, column: str, op: str) -> FilterDef:
    """A year bound on a date column of ctgov.studies; the database decides the mask (no store column)."""
    sql, _ = _bound(name, name, f"extract(year FROM s.{column})", "", op)
    return FilterDef(name, lambda f: getattr(f, name) is not None, sql,
                     _in_database(lambda f, p: f"SELECT s.nct_id FROM ctgov.studies s WHERE {sql(f, p)}"))


FILTER_DEFS += (
    _year_def("posted_from", "study_first_posted_date", ">="),
    _year_def("posted_to", "study_first_posted_date", "<="),
    _year_def("updated_from", "last_update_posted_date", ">="),
    _year_def("updated_to", "last_update_posted_date", "<="),
    _year_def("completion_from", "primary_completion_date", ">="),
    _year_def("completion_to", "primary_completion_date", "<="),
    FilterDef("age_group", lambda f: bool(f.age_group),
              lambda f, p: filterplus.age_group_sql(f, p, age_years_sql), filterplus.age_group_mask),
    FilterDef("intervention_type", lambda f: bool(f.intervention_type), filterplus.intervention_type_sql,
              filterplus.intervention_type_mask),
    FilterDef("facility", lambda f: bool(f.facility), filterplus.facility_sql,
              _in_database(filterplus.facility_select)),
)


def _or_missing(d: FilterDef) -> FilterDef:
    """The filter, letting in the records it cannot judge when `include=` asks for them (filterplus.MISSING).
    """
    missing = filterplus.MISSING_OF_FIELD.get(d.name)
    if missing is None:
        return d
    key, none_sql, none_mask = missing.key, missing.sql, missing.mask

    def sql(f: Filters, params: dict[str, Any]) -> str:
        clause = d.sql(f, params)
        return f"({clause}) OR ({none_sql})" if key in f.include_missing else clause

    def mask(store: Any, f: Filters, db: Any) -> np.ndarray:
        found = d.mask(store, f, db)
        return found | none_mask(store, db) if key in f.include_missing else found
    return FilterDef(d.name, d.is_set, sql, mask)


FILTER_DEFS = tuple(_or_missing(d) for d in FILTER_DEFS)


def filter_clauses(f: Filters, params: dict[str, Any]) -> dict[str, str]:
    """One SQL clause per set filter (name → clause); parameters are added to `params`."""
    return {d.name: d.sql(f, params) for d in FILTER_DEFS if d.is_set(f)}


HAS_RESULTS_SQL = ("s.results_first_posted_date IS NOT NULL OR EXISTS (SELECT 1 FROM ctgov.calculated_values cv "
                   "WHERE cv.nct_id = s.nct_id AND cv.were_results_reported)")


def intervention_ids_sql(text: str, params: dict[str, Any]) -> str | None:
    """SELECT of the NCT ids whose intervention names or MeSH terms have every word of a term, the terms
    combined by AND / OR / NOT (services/dashboard/boolquery.py). None: no word."""
    if not boolquery.is_compound(text):
        return _intervention_term_sql(text, params, "iv_")
    return boolquery.ids_sql(boolquery.parse(text), params,
                             lambda t, p, pre: _intervention_term_sql(t.text, p, pre + "_"),
                             "iv", "SELECT st.nct_id FROM ctgov.studies st")


def _intervention_term_sql(text: str, params: dict[str, Any], prefix: str) -> str | None:
    tokens = list(dict.fromkeys(condition.words(text)))[:condition.MAX_WORDS]
    if not tokens:
        return None
    m1 = _word_match("lower(x.name)", tokens, prefix, params)
    m2 = _word_match("x.downcase_mesh_term", tokens, prefix, params)
    return (f"SELECT x.nct_id FROM ctgov.interventions x WHERE {m1} "
            f"UNION SELECT x.nct_id FROM ctgov.browse_interventions x WHERE {m2}")


def condition_terms_sql(text: str, params: dict[str, Any], narrower: bool = True) -> str | None:
    """SELECT of the NCT ids the condition search finds, for the in-process engine (which runs only on a database
    with the derived tables, app.study_mesh among them). None when the text selects nothing."""
    return condition.select_sql(text, params, stored=True, narrower=narrower)


def area_ids_sql(names: Sequence[str], params: dict[str, Any], *, stored: bool | None = None) -> str:
    """SELECT of the NCT ids in any of the therapeutic areas (condition.area_select_sql)."""
    return condition.area_select_sql(names, params, stored=studymesh.stored() if stored is None else stored)
