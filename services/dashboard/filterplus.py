"""Issue 38's filters in both forms (SQL on `ctgov.studies s` and a mask over the in-process store), and the
records a filter cannot judge.

Kept apart from filters.py (which builds its FilterDefs from these functions) so that module stays within its
size; nothing here imports filters.py. Every function takes the filter value object as `f` (a
`filters.Filters`).

- Age group, as ClinicalTrials.gov defines it on the study's minimum and maximum age: child 0–17, adult
  18–64, older adult 65+. A study is open to a group when its age range overlaps the group's (no limit =
  open); the same rule as the "Age groups accepted" chart (sql/queries/facet_age_groups.sql, app.study_facets'
  g_* flags).
- Intervention type (any of the trial's interventions has one of the types) and facility name (any of its
  sites' names contains the text).
- MISSING: what each "cannot judge" filter leaves out (no start date, no enrollment, no phase, no listed site,
  no primary completion date) and the condition that lets those records in when the user asks to include them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from services.dashboard import condition
from services.data.normalize import canonical, sql_phase

AGE_GROUPS = ("CHILD", "ADULT", "OLDER_ADULT")
AGE_GROUP_LABELS = {"CHILD": "Child (0–17)", "ADULT": "Adult (18–64)", "OLDER_ADULT": "Older adult (65+)"}
AGE_GROUP_ALIASES = {
    "CHILD": "CHILD",
    "CHILDREN": "CHILD",
    "ADULT": "ADULT",
    "ADULTS": "ADULT",
    "OLDER_ADULT": "OLDER_ADULT",
    "OLDER_ADULTS": "OLDER_ADULT",
    "OLDER": "OLDER_ADULT",
    "SENIOR": "OLDER_ADULT",
}


def _group_ok(group: str, lo: str, hi: str) -> str:
    """SQL: a study with age limits lo/hi (years; NULL = no limit) is open to the group
    (facet_age_groups.sql)."""
    return {
        "CHILD": f"COALESCE({lo}, 0) < 18",
        "ADULT": f"COALESCE({lo}, 0) < 65 AND COALESCE({hi}, 200) >= 18",
        "OLDER_ADULT": f"COALESCE({hi}, 200) >= 65",
    }[group]


def age_group_sql(f: Any, params: dict[str, Any], years: Callable[[str], str]) -> str:
    """Open to any of the chosen age groups; `years` turns an AACT age text into years
    (filters.age_years_sql)."""
    lo, hi = years("e.minimum_age"), years("e.maximum_age")
    ok = " OR ".join(f"({_group_ok(g, lo, hi)})" for g in f.age_group)
    return f"NOT EXISTS (SELECT 1 FROM ctgov.eligibilities e WHERE e.nct_id = s.nct_id AND NOT ({ok}))"


def age_group_mask(store: Any, f: Any, db: Any) -> np.ndarray:
    out = np.zeros(store.n, dtype=bool)
    for group in f.age_group:
        out |= store.age_groups[AGE_GROUPS.index(group)]
    return out


def _sql_enum(col: str) -> str:
    """SQL: a registry enum in canonical form (normalize.canonical: upper case, other characters as `_`)."""
    return f"upper(regexp_replace(btrim({col}), '[^A-Za-z0-9/]+', '_', 'g'))"


def intervention_type_sql(f: Any, params: dict[str, Any]) -> str:
    params["intervention_type"] = list(f.intervention_type)
    return (
        "EXISTS (SELECT 1 FROM ctgov.interventions xt WHERE xt.nct_id = s.nct_id AND "
        f"{_sql_enum('xt.intervention_type')} = ANY(CAST(:intervention_type AS text[])))"
    )


def intervention_type_mask(store: Any, f: Any, db: Any) -> np.ndarray:
    rows, coded = store.lists["itype"]
    wanted = set(f.intervention_type)
    mask = np.zeros(store.n, dtype=bool)
    mask[rows[coded.lut(lambda v: canonical("intervention_type", v) in wanted)[coded.codes]]] = True
    return mask


def facility_select(f: Any, params: dict[str, Any]) -> str:
    """SELECT of the NCT ids with a site whose name contains the text (any case)."""
    params["facility"] = condition.like_contains(str(f.facility).lower())
    return "SELECT fn.nct_id FROM ctgov.facilities fn WHERE lower(fn.name) LIKE :facility"


def facility_sql(f: Any, params: dict[str, Any]) -> str:
    return f"s.nct_id IN ({facility_select(f, params)})"


# ---- what a filter cannot judge ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Missing:
    """Records one kind of filter cannot judge: which filters (field names), the words for them, and the SQL
    and mask of "this record has no value" (a mask given as a function of the store and database)."""

    key: str  # the value of the URL parameter include=…
    fields: tuple[str, ...]
    without: str  # "without a start date"
    names: str  # the filters, in words: "start year"
    sql: str
    mask: Callable[[Any, Any], np.ndarray]


def _no_completion(store: Any, db: Any) -> np.ndarray:
    return store.lookup(
        db, "SELECT s.nct_id FROM ctgov.studies s WHERE s.primary_completion_date IS NULL", {}
    )  # type: ignore[no-any-return]


MISSING: tuple[Missing, ...] = (
    Missing(
        "start",
        ("start_from", "start_to"),
        "without a start date",
        "start year",
        "s.start_date IS NULL",
        lambda store, db: np.isnan(store.start_year),
    ),
    Missing(
        "enrollment",
        ("enrollment_min", "enrollment_max"),
        "without an enrollment number",
        "enrollment",
        "s.enrollment IS NULL",
        lambda store, db: np.isnan(store.enrollment),
    ),
    Missing(
        "phase",
        ("phase",),
        "without a phase",
        "phase",
        f"{sql_phase('s.phase')} IS NULL",
        lambda store, db: store.phases.codes == store.phases.null,
    ),
    Missing(
        "sites",
        ("country", "state", "near"),
        "without any listed site",
        "place",
        "NOT EXISTS (SELECT 1 FROM ctgov.facilities fm WHERE fm.nct_id = s.nct_id)",
        lambda store, db: store.n_sites == 0,
    ),
    Missing(
        "completion",
        ("completion_from", "completion_to"),
        "without a primary completion date",
        "primary completion",
        "s.primary_completion_date IS NULL",
        _no_completion,
    ),
)
MISSING_BY_KEY = {m.key: m for m in MISSING}
MISSING_OF_FIELD = {name: m for m in MISSING for name in m.fields}


def active_missing(f: Any) -> list[Missing]:
    """The kinds of missing record the set filters leave out (or let in, when asked), in MISSING's order."""

    def is_set(name: str) -> bool:
        value = f.place() if name == "near" else getattr(f, name)
        return value is not None and value != () and value != ""

    return [m for m in MISSING if any(is_set(name) for name in m.fields)]
