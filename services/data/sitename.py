"""Which facility rows are the same site: the grouping key of a facility (name, city, US state, country), in Python
and SQL.

The rule (stated on the Sites page as SITE_RULE): accents folded (é → e), letters A–Z case-folded, apostrophes
dropped, "&" read as "and", every run of punctuation and whitespace one space, initials joined ("M.D." → "md"), the abbreviations "Univ",
"Hosp", "Ctr", "Cntr" and "Centre" written out ("University", "Hospital", "Center"), a leading "The" dropped;
the city is folded the same way ("St" read as "Saint"), the country as its one name per ISO code, folded
("Korea, Republic of" and "South Korea" alike). In the United States
the state is part of the key too, folded, a postal code read as its name ("OH" → "ohio"): cities of one name lie in
several states (Columbus, Georgia and Columbus, Ohio). Elsewhere states and provinces are spelled inconsistently and
are not read. Rows are one group when name, city, (US) state and country all agree, so a generic name ("Research
Site") is never merged across cities, and a numbered one ("Research Site 12") never with another number. A facility
without a name has no group.

`site_key` is the pure Python rule; sql/queries/site_keys.sql is the same rule in SQL (the test compares them on
every facility of the sample). The derived table app.site_groups holds each facility's group, rebuilt after every
import by `refresh_sql()` (sql/queries/refresh_site_groups.sql), and at start by `ensure_built` when it was built by
another version of the rule (RULE_DIGEST, stored in app.meta 'site_groups_rule').
"""

from __future__ import annotations

import csv
import hashlib
import re
import string
from functools import cache
from pathlib import Path

from services.data.db import Database, load_sql
from services.data.geo import US_STATE_CODES, country_renames
from services.data.startup import PROGRESS

SITE_RULE = ("Facility rows count as one site when their names match after folding case, accents, punctuation and "
             "“&”/“and”, writing out “Univ.”, “Hosp.”, “Ctr”/“Cntr”/“Centre”, dropping a sponsor's site code "
             "(“( Site 0154)”, “/ID# 127860”, “Site Number: 8400001”, a leading number), a department "
             "(“… Dept of Oncology”) and a leading “The”, "
             "and reading the reviewed spellings of data/sites/institution_aliases.csv as their institution "
             "(“M D Anderson Cancer Center”, Houston = University of Texas MD Anderson Cancer Center; "
             "“Cambridge University” = University of Cambridge; a campus named with its institution, "
             "“Cleveland Clinic - Main Campus”, shown under it) — and they "
             "are in the same city and country (one name per country: “Korea, Republic of” = South "
             "Korea), and in the United States the same state (a postal code such "
             "as “OH” counts as the state's name). Placeholder names (“Research Site”, “Site 001”: "
             "data/sites/placeholder_names.csv) name no institution and are not ranked.")
DATA_DIR = Path(__file__).resolve().parents[2] / "data" / "sites"

# Accented letters folded one to one, to lower case (SQL: translate() with the same two strings).
ACCENTED = "ÀÁÂÃÄÅàáâãäåÇçÈÉÊËèéêëÌÍÎÏìíîïÑñÒÓÔÕÖØòóôõöøÙÚÛÜùúûüÝýÿ"
PLAIN = "aaaaaaaaaaaacceeeeeeeeiiiiiiiinnoooooooooooouuuuuuuuyyy"
APOSTROPHES = "'’‘´`"
# Punctuation and whitespace (ASCII plus a few common typographic marks): a run of them becomes one space. Listed
# one by one, so PostgreSQL's and Python's regular expressions read the class the same whatever the locale.
SEPARATORS = r"""[-\t\n\v\f\r !"#$%()*+,./:;<=>?@\[\\\]^_{|}~“”–—·\u00a0]+"""
NAME_WORDS = (("univ", "university"), ("hosp", "hospital"), ("ctr", "center"), ("cntr", "center"),
              ("centre", "center"))
CITY_WORDS = (("st", "saint"),)
US = "united states"  # the folded country whose state is part of the key
# A sponsor's site code inside a name, on the space-padded key (the same regular expression in PostgreSQL).
SITE_CODE = " (site number|site no|site|id) [0-9]+(?= )"
LEADING_NUMBER = "^ [0-9]+(?= )"
DEPARTMENT = " (dept|department) of .*$"  # a department is its institution: "… Cancer Center Dept of Onc"
_SQL_SAFE = re.compile(r"[a-z0-9 ()|?+*^$\[\]-]*")  # what a data row may hold to be written into the SQL


def _rows(name: str) -> list[dict[str, str]]:
    with open(DATA_DIR / name, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


@cache
def placeholder_pattern() -> str:
    """The placeholder names (data/sites/placeholder_names.csv) as one regular expression on the padded name
    key, read alike by Python and PostgreSQL (spaces for word edges, no backslashes)."""
    patterns = [r["pattern"] for r in _rows("placeholder_names.csv")]
    if not all(_SQL_SAFE.fullmatch(p) for p in patterns):
        raise ValueError("placeholder_names.csv: a pattern holds a character the SQL twin cannot take")
    return "|".join(f"(?:{p})" for p in patterns)


@cache
def institution_aliases() -> dict[tuple[str, str], tuple[str, str]]:
    """(name key, folded city or "" for any) → (the institution's name key, its name), from the reviewed
    data/sites/institution_aliases.csv."""
    out: dict[tuple[str, str], tuple[str, str]] = {}
    for r in _rows("institution_aliases.csv"):
        key, city = r["name_key"].strip(), city_key(r["city"])
        if not (_SQL_SAFE.fullmatch(key) and _SQL_SAFE.fullmatch(city)) or key != _plain_key(key):
            raise ValueError(f"institution_aliases.csv: {key!r} is not a folded name key")
        out[(key, city)] = (_plain_key(r["institution"]), r["institution"])
    return out

# Single letters in a row are one word: "M D Anderson" (from "M.D. Anderson") reads as "MD Anderson".
INITIALS = "(?<= [a-z]) (?=[a-z] )"
_INITIALS = re.compile(INITIALS)
_FOLD = str.maketrans(ACCENTED + string.ascii_uppercase, PLAIN + string.ascii_lowercase, APOSTROPHES)
_SEPARATORS = re.compile(SEPARATORS)


def fold(text: str | None) -> str:
    """Accents, case, apostrophes, "&" and punctuation folded; single spaces, no ends ("" for none)."""
    if text is None:
        return ""
    out = text.translate(_FOLD).replace("&", " and ")
    return _SEPARATORS.sub(" ", out).strip(" ")


# US postal codes → state names, folded (SQL: the VALUES list of site_keys.sql; a test compares them).
_US_STATES = {fold(code): fold(name) for code, name in US_STATE_CODES.items()}


def _words(padded: str, words: tuple[tuple[str, str], ...]) -> str:
    for short, full in words:
        padded = padded.replace(f" {short} ", f" {full} ")
    return padded


def _padded(name: str | None) -> str:
    """The folded name with initials joined and abbreviations written out, padded with a space at each end."""
    return _words(_INITIALS.sub("", f" {fold(name)} "), NAME_WORDS)


def _plain_key(name: str | None) -> str:
    """The folded name with abbreviations written out, site codes and a leading "The" dropped (no aliases)."""
    padded = _padded(name)
    stripped = re.sub(DEPARTMENT, " ", re.sub(SITE_CODE, "", re.sub(LEADING_NUMBER, "", padded)))
    padded = stripped if stripped.strip(" ") else padded  # "Site 001" keeps its number (a placeholder)
    return re.sub(r"^ the ", " ", padded).strip(" ")


def name_key(name: str | None, city: str | None = None) -> str:
    """The facility name's key: folded, abbreviations written out, site codes and a leading "The" dropped, and
    a reviewed spelling read as its institution (institution_aliases.csv, in its city)."""
    key = _plain_key(name)
    aliases = institution_aliases()
    found = aliases.get((key, city_key(city))) or aliases.get((key, ""))
    return found[0] if found else key


def institution_name(name: str | None, city: str | None = None) -> str | None:
    """The institution's own name for a reviewed spelling ("M D Anderson Cancer Center", Houston → University
    of Texas MD Anderson Cancer Center); the name as written otherwise."""
    names = {key: shown for key, shown in institution_aliases().values()}
    return names.get(name_key(name, city), name)


def is_placeholder(name: str | None) -> bool:
    """True for a name that stands in for a site the sponsor does not name ("Research Site", "Site 001",
    "Novartis Investigative Site", "Local Institution"): such rows form no group and are never ranked."""
    return bool(re.search(placeholder_pattern(), _padded(name)))


def city_key(city: str | None) -> str:
    """The folded city ("St" read as "Saint")."""
    return _words(f" {fold(city)} ", CITY_WORDS).strip(" ")


@cache
def country_keys() -> dict[str, str]:
    """Folded country spelling → its country's one name, folded (geo.country_renames from
    data/geo/countries.csv: "korea republic of" → "south korea"), checked to hold what the SQL twin takes."""
    out = {fold(spelling): fold(name) for spelling, name in country_renames().items()}
    out = {k: v for k, v in out.items() if k != v}
    if not all(_SQL_SAFE.fullmatch(k) and _SQL_SAFE.fullmatch(v) for k, v in out.items()):
        raise ValueError("countries.csv: a folded country name holds a character the SQL twin cannot take")
    return out


def country_key(country: str | None) -> str:
    """The folded country, one per ISO code ("Korea, Republic of" and "South Korea" → "south korea")."""
    folded = fold(country)
    return country_keys().get(folded, folded)


def state_key(state: str | None, country: str | None) -> str:
    """The folded state of a facility in the United States, a postal code read as its name ("OH" → "ohio"); "" for
    one elsewhere (or without a state)."""
    if country_key(country) != US:
        return ""
    folded = fold(state)
    return _US_STATES.get(folded, folded)


def site_key(name: str | None, city: str | None, country: str | None, state: str | None = None) -> str | None:
    """The group of a facility row: folded name, city, state (United States only, when given) and country joined by
    " | " (None when it has no name)."""
    key = name_key(name, city)
    if not key or is_placeholder(name):
        return None
    state = state_key(state, country)
    return f"{key} | {city_key(city)} | " + (f"{state} | " if state else "") + country_key(country)


def is_generic(name: str | None) -> bool:
    """True for a name that names a sponsor's site rather than a place (is_placeholder)."""
    return is_placeholder(name)


def site_keys_sql() -> str:
    """sql/queries/site_keys.sql with the data it reads written in: the placeholder pattern and the alias rows
    (both checked to hold only folded letters, digits, spaces and regex marks, so no quote can end a literal).
    """
    aliases = ", ".join(f"('{k}', '{c}', '{v[0]}')" for (k, c), v in sorted(institution_aliases().items()))
    countries = ", ".join(f"('{k}', '{v}')" for k, v in sorted(country_keys().items()))
    return (load_sql("site_keys").replace("/*PLACEHOLDERS*/", f"'{placeholder_pattern()}'")
            .replace("/*ALIASES*/", aliases or "(NULL, NULL, NULL)")
            .replace("/*COUNTRIES*/", countries or "(NULL, NULL)"))


# The version of the rule that built app.site_groups: a digest of the SQL that builds it (the Python rule is its twin).
_RULE_SQL = site_keys_sql() + "\0" + load_sql("refresh_site_groups")
RULE_DIGEST = hashlib.sha256(_RULE_SQL.encode()).hexdigest()[:16]


def refresh_sql() -> str:
    """The script that rebuilds app.site_groups: every facility's key (site_keys.sql) into a temporary table, then
    refresh_site_groups.sql, then the rule's digest into app.meta 'site_groups_rule'. Runs after every import, in its
    transaction (services/data/loaders.AFTER_IMPORT)."""
    return ("DROP TABLE IF EXISTS pg_temp.site_keys;\n"
            f"CREATE TEMP TABLE site_keys AS\n{site_keys_sql()};\n"
            f"{load_sql('refresh_site_groups')}"
            f"INSERT INTO app.meta (key, value) VALUES ('site_groups_rule', '{RULE_DIGEST}') "
            "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()")


def ensure_built(db: Database) -> bool:
    """Build app.site_groups when the derived tables exist but it has never been built (a database imported before
    it existed) or was built by another version of the rule (RULE_DIGEST); True when it built it now. The rebuild
    moves 'facets_refreshed_at', so the in-process engine reloads its groups rather than map an older start cache."""
    missing = db.fetch_value(
        "SELECT to_regclass('app.site_groups') IS NOT NULL "
        "AND (NOT EXISTS (SELECT 1 FROM app.site_groups) OR (SELECT value FROM app.meta WHERE key = "
        "'site_groups_rule') IS DISTINCT FROM CAST(:rule AS text)) "
        "AND EXISTS (SELECT 1 FROM app.meta WHERE key = 'facets_refreshed_at') "
        "AND EXISTS (SELECT 1 FROM ctgov.facilities)", {"rule": RULE_DIGEST}, timeout_ms=60_000)
    if missing is not True:
        return False
    with PROGRESS.stage("Grouping the facilities for the Sites page"):
        db.execute_script(refresh_sql(), timeout_ms=3_600_000)
    return True
