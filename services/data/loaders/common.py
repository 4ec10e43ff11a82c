"""Shared pieces of the loaders: the columns we fill per table, AACT's derived values, a batch type."""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from services.data.loaders.aact_schema import TABLES as AACT_TABLES
from services.data.loaders.coerce import coerce_row

# Columns each loader fills, per ctgov table: all of AACT's columns (services/data/loaders/aact_schema.py) but the
# timestamps. Ids come from the tables' sequences; tables whose rows others reference carry local ids the
# importer swaps for sequence ids (REFERENCES below).
ID_TABLES: frozenset[str] = frozenset({"interventions", "design_groups", "facilities", "outcomes", "result_groups",
                                       "outcome_analyses", "study_references"})
COLUMNS: dict[str, tuple[str, ...]] = {
    table: tuple(c for c, pg_type in cols if pg_type != "timestamp" and (c != "id" or table in ID_TABLES))
    for table, cols in AACT_TABLES.items()
}

# Tables whose rows carry local ids (ID_TABLES) → the (table, column) pairs that point at them.
REFERENCES: dict[str, tuple[tuple[str, str], ...]] = {
    "interventions": (("intervention_other_names", "intervention_id"),
                      ("design_group_interventions", "intervention_id")),
    "design_groups": (("design_group_interventions", "design_group_id"),),
    "facilities": (("facility_contacts", "facility_id"), ("facility_investigators", "facility_id")),
    "outcomes": (("result_groups", "outcome_id"), ("outcome_measurements", "outcome_id"),
                 ("outcome_counts", "outcome_id"), ("outcome_analyses", "outcome_id")),
    "result_groups": tuple((t, "result_group_id") for t in (
        "baseline_counts", "baseline_measurements", "drop_withdrawals", "milestones", "reported_events",
        "outcome_measurements", "outcome_counts", "outcome_analysis_groups")),
    "outcome_analyses": (("outcome_analysis_groups", "outcome_analysis_id"),),
    "study_references": (("retractions", "reference_id"),),
}
assert set(REFERENCES) == ID_TABLES

# Every ctgov table a study's rows live in (studies last for deletes is not needed: no FKs).
STUDY_TABLES: tuple[str, ...] = tuple(COLUMNS)

# AACT's list (app/models/facility.rb) plus the name ClinicalTrials.gov uses for the minor islands.
US_TERRITORY_COUNTRIES = frozenset({
    "United States", "Guam", "Puerto Rico", "U.S. Virgin Islands", "Virgin Islands (U.S.)",
    "Northern Mariana Islands", "American Samoa", "Midway Atoll", "Palmyra Atoll", "Baker Island",
    "Howland Island", "Jarvis Island", "Johnston Atoll", "Kingman Reef", "Wake Island", "Navassa Island",
    "Serranilla Bank", "Bajo Nuevo Bank", "United States Minor Outlying Islands",
})

NCT_RE = re.compile(r"^NCT\d{8}$")


@dataclass
class Batch:
    """Rows for many studies, table → list of tuples in COLUMNS order."""

    rows: dict[str, list[tuple[Any, ...]]] = field(default_factory=lambda: {t: [] for t in COLUMNS})
    nct_ids: list[str] = field(default_factory=list)

    def add(self, table: str, values: dict[str, Any]) -> None:
        """Append one row; values of the wrong type are coerced or raise coerce.FieldError."""
        cols = COLUMNS[table]
        unknown = set(values) - set(cols)
        if unknown:
            raise KeyError(f"{table}: unknown columns {sorted(unknown)}")
        self.rows[table].append(coerce_row(table, cols, values))

    def mark(self) -> tuple[dict[str, int], int]:
        """Where the batch stands now (for rollback of one study's rows)."""
        return {t: len(r) for t, r in self.rows.items()}, len(self.nct_ids)

    def rollback(self, mark: tuple[dict[str, int], int]) -> None:
        """Drop every row added since `mark`."""
        lengths, n_ids = mark
        for table, rows in self.rows.items():
            del rows[lengths.get(table, 0):]
        del self.nct_ids[n_ids:]


def parse_api_date(value: str | None) -> date | None:
    """API date string → date, as AACT does: YYYY-MM → last day of month, YYYY → Dec 31. Digits other than ASCII
    (the registry writes none) give None in every form, not a date in some."""
    if not value:
        return None
    value = value.strip()
    try:
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", value, re.ASCII):
            return date.fromisoformat(value)
        if re.fullmatch(r"\d{4}-\d{2}", value, re.ASCII):
            y, m = int(value[:4]), int(value[5:7])
            return date(y, m, calendar.monthrange(y, m)[1])
        if re.fullmatch(r"\d{4}", value, re.ASCII):
            return date(int(value), 12, 31)
    except ValueError:
        return None
    return None


_AGE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]+)\s*$")


def age_parts(age: str | None) -> tuple[int | None, str | None]:
    """'18 Years' → (18, 'year'); 'N/A'/None → (None, None) (we store NULL, not AACT's 0/'n/a')."""
    if not age:
        return None, None
    m = _AGE_RE.match(age)
    if not m:
        return None, None
    return int(float(m.group(1))), m.group(2).lower().removesuffix("s")


def months_between(start: date | None, end: date | None) -> int | None:
    """AACT's month arithmetic: ((end - start) in days / 30).to_i, i.e. truncated toward zero."""
    if start is None or end is None:
        return None
    return int((end - start).days / 30)


def downcase(value: Any) -> Any:
    """Text lower-cased (AACT's downcase_* columns); anything else as it is."""
    return value.lower() if isinstance(value, str) else value


def calculated_values(nct_id: str, *, facilities_countries: list[str], sae_subjects: int | None,
                      nsae_subjects: int | None, first_submitted: date | None, start: date | None,
                      start_type: str | None, primary_completion: date | None, primary_completion_type: str | None,
                      results_submitted: date | None, were_results_reported: bool, minimum_age: str | None,
                      maximum_age: str | None, outcome_counts: tuple[int, int, int]) -> dict[str, Any]:
    """One calculated_values row by AACT's rules (app/models/calculated_value.rb)."""
    n_fac = len(facilities_countries)
    duration = None
    if start_type != "ESTIMATED" and primary_completion_type != "ESTIMATED":
        duration = months_between(start, primary_completion)
    min_num, min_unit = age_parts(minimum_age)
    max_num, max_unit = age_parts(maximum_age)
    return {
        "nct_id": nct_id,
        "number_of_facilities": n_fac,
        "number_of_nsae_subjects": nsae_subjects,
        "number_of_sae_subjects": sae_subjects,
        "registered_in_calendar_year": first_submitted.year if first_submitted else None,
        "actual_duration": duration,
        "were_results_reported": were_results_reported,
        "months_to_report_results": months_between(primary_completion, results_submitted),
        # AACT sets both only for studies with sites (NULL otherwise).
        "has_us_facility": (any(c in US_TERRITORY_COUNTRIES for c in facilities_countries) if n_fac else None),
        "has_single_facility": n_fac == 1 if n_fac else None,
        "minimum_age_num": min_num,
        "maximum_age_num": max_num,
        "minimum_age_unit": min_unit,
        "maximum_age_unit": max_unit,
        # A count of design outcomes by type, NULL (not 0) when the study lists none of that type.
        "number_of_primary_outcomes_to_measure": outcome_counts[0] or None,
        "number_of_secondary_outcomes_to_measure": outcome_counts[1] or None,
        "number_of_other_outcomes_to_measure": outcome_counts[2] or None,
    }
