"""Which facility rows are the same site: the grouping key of a facility (name, city, US state, country), in Python
and SQL.

The rule (stated on the Sites page as SITE_RULE): accents folded (é → e), letters A–Z case-folded, apostrophes
dropped, "&" read as "and", every run of punctuation and whitespace one space, initials joined ("M.D." → "md"), the abbreviations "Univ",
"Hosp", "Ctr", "Cntr" and "Centre" written out ("University", "Hospital", "Center"), a leading "The" dropped;
the city is folded the same way ("St" read as "Saint"), the country as AACT spells it, folded. In the United States
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

import hashlib
import re
import string

from services.data.db import Database, load_sql
from services.data.geo import US_STATE_CODES
from services.data.startup import PROGRESS

SITE_RULE = ("Facility rows count as one site when their names match after folding case, accents, punctuation and "
             "“&”/“and”, writing out “Univ.”, “Hosp.”, “Ctr”/“Cntr”/“Centre” and dropping a leading “The” — "
             "and they are in the same city and country, and in the United States the same state (a postal code "
             "such as “OH” counts as the state's name). So a generic name such as “Research Site” is one row per "
             "city (and US state), and a numbered one (“Research Site 12”) stays apart from other numbers.")

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
# Names that say "a site of this sponsor" rather than which hospital: flagged on the page (may be several places).
GENERIC = re.compile(r"\b(research|investigative|investigational|investigator|clinical|study|trial|local) "
                     r"(site|sites|institution)\b|^site( \d+)?$")

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


def name_key(name: str | None) -> str:
    """The folded facility name with abbreviations written out and a leading "The" dropped."""
    padded = _words(_INITIALS.sub("", f" {fold(name)} "), NAME_WORDS)
    return re.sub(r"^ the ", " ", padded).strip(" ")


def city_key(city: str | None) -> str:
    """The folded city ("St" read as "Saint")."""
    return _words(f" {fold(city)} ", CITY_WORDS).strip(" ")


def state_key(state: str | None, country: str | None) -> str:
    """The folded state of a facility in the United States, a postal code read as its name ("OH" → "ohio"); "" for
    one elsewhere (or without a state)."""
    if fold(country) != US:
        return ""
    folded = fold(state)
    return _US_STATES.get(folded, folded)


def site_key(name: str | None, city: str | None, country: str | None, state: str | None = None) -> str | None:
    """The group of a facility row: folded name, city, state (United States only, when given) and country joined by
    " | " (None when it has no name)."""
    key = name_key(name)
    if not key:
        return None
    state = state_key(state, country)
    return f"{key} | {city_key(city)} | " + (f"{state} | " if state else "") + fold(country)


def is_generic(name: str | None) -> bool:
    """True for a name that names a sponsor's site rather than a place ("Research Site", "Novartis Investigative
    Site", "Local Institution")."""
    return bool(GENERIC.search(name_key(name)))


# The version of the rule that built app.site_groups: a digest of the SQL that builds it (the Python rule is its twin).
RULE_DIGEST = hashlib.sha256((load_sql("site_keys") + "\0" + load_sql("refresh_site_groups")).encode()).hexdigest()[:16]


def refresh_sql() -> str:
    """The script that rebuilds app.site_groups: every facility's key (site_keys.sql) into a temporary table, then
    refresh_site_groups.sql, then the rule's digest into app.meta 'site_groups_rule'. Runs after every import, in its
    transaction (services/data/loaders.AFTER_IMPORT)."""
    return ("DROP TABLE IF EXISTS pg_temp.site_keys;\n"
            f"CREATE TEMP TABLE site_keys AS\n{load_sql('site_keys')};\n"
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
