"""Shared pieces of the loaders: the columns we fill per table, AACT's derived values, a batch type."""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass, field
from datetime import date
from typing import Any

# Columns each loader fills, per ctgov table (id columns come from the table's sequence, except
# where rows reference each other: interventions and design_groups carry explicit ids).
COLUMNS: dict[str, tuple[str, ...]] = {
    "studies": (
        "nct_id", "study_first_submitted_date", "results_first_submitted_date", "last_update_submitted_date",
        "study_first_submitted_qc_date", "study_first_posted_date", "study_first_posted_date_type",
        "results_first_submitted_qc_date", "results_first_posted_date", "results_first_posted_date_type",
        "last_update_submitted_qc_date", "last_update_posted_date", "last_update_posted_date_type",
        "start_month_year", "start_date_type", "start_date", "verification_month_year", "verification_date",
        "completion_month_year", "completion_date_type", "completion_date", "primary_completion_month_year",
        "primary_completion_date_type", "primary_completion_date", "target_duration", "study_type", "acronym",
        "baseline_population", "brief_title", "official_title", "overall_status", "last_known_status", "phase",
        "enrollment", "enrollment_type", "source", "limitations_and_caveats", "number_of_arms", "number_of_groups",
        "why_stopped", "has_expanded_access", "has_dmc", "is_fda_regulated_drug", "is_fda_regulated_device",
        "is_unapproved_device", "is_ppsd", "is_us_export", "biospec_retention", "biospec_description",
        "ipd_time_frame", "ipd_access_criteria", "ipd_url", "plan_to_share_ipd", "plan_to_share_ipd_description",
        "source_class", "delayed_posting", "fdaaa801_violation", "patient_registry",
    ),
    "conditions": ("nct_id", "name", "downcase_name"),
    "keywords": ("nct_id", "name", "downcase_name"),
    "browse_conditions": ("nct_id", "mesh_term", "downcase_mesh_term", "mesh_type"),
    "browse_interventions": ("nct_id", "mesh_term", "downcase_mesh_term", "mesh_type"),
    "interventions": ("id", "nct_id", "intervention_type", "name", "description"),
    "intervention_other_names": ("nct_id", "intervention_id", "name"),
    "design_groups": ("id", "nct_id", "group_type", "title", "description"),
    "design_group_interventions": ("nct_id", "design_group_id", "intervention_id"),
    "designs": (
        "nct_id", "allocation", "intervention_model", "observational_model", "primary_purpose", "time_perspective",
        "masking", "masking_description", "intervention_model_description", "subject_masked", "caregiver_masked",
        "investigator_masked", "outcomes_assessor_masked",
    ),
    "eligibilities": (
        "nct_id", "sampling_method", "gender", "minimum_age", "maximum_age", "healthy_volunteers", "population",
        "criteria", "gender_description", "gender_based", "adult", "child", "older_adult",
    ),
    "facilities": ("nct_id", "status", "name", "city", "state", "zip", "country", "latitude", "longitude"),
    "countries": ("nct_id", "name", "removed"),
    "sponsors": ("nct_id", "agency_class", "lead_or_collaborator", "name"),
    "calculated_values": (
        "nct_id", "number_of_facilities", "number_of_nsae_subjects", "number_of_sae_subjects",
        "registered_in_calendar_year", "actual_duration", "were_results_reported", "months_to_report_results",
        "has_us_facility", "has_single_facility", "minimum_age_num", "maximum_age_num", "minimum_age_unit",
        "maximum_age_unit", "number_of_primary_outcomes_to_measure", "number_of_secondary_outcomes_to_measure",
        "number_of_other_outcomes_to_measure",
    ),
    "brief_summaries": ("nct_id", "description"),
    "detailed_descriptions": ("nct_id", "description"),
    "design_outcomes": ("nct_id", "outcome_type", "measure", "time_frame", "population", "description"),
    "outcomes": ("nct_id", "outcome_type", "title", "description", "time_frame", "population", "units",
                 "dispersion_type", "param_type"),
    "result_groups": ("nct_id", "ctgov_group_code", "result_type", "title", "description"),
    "reported_events": (
        "nct_id", "ctgov_group_code", "time_frame", "event_type", "default_vocab", "default_assessment",
        "subjects_affected", "subjects_at_risk", "description", "event_count", "organ_system",
        "adverse_event_term", "frequency_threshold", "vocab", "assessment",
    ),
    "id_information": ("nct_id", "id_source", "id_value", "id_type", "id_type_description", "id_link"),
}

# Every ctgov table a study's rows live in (studies last for deletes is not needed: no FKs).
STUDY_TABLES: tuple[str, ...] = tuple(COLUMNS)

US_TERRITORY_COUNTRIES = frozenset({
    "United States", "Puerto Rico", "Guam", "U.S. Virgin Islands", "Virgin Islands (U.S.)",
    "American Samoa", "Northern Mariana Islands", "United States Minor Outlying Islands",
})

NCT_RE = re.compile(r"^NCT\d{8}$")


@dataclass
class Batch:
    """Rows for many studies, table → list of tuples in COLUMNS order."""

    rows: dict[str, list[tuple[Any, ...]]] = field(default_factory=lambda: {t: [] for t in COLUMNS})
    nct_ids: list[str] = field(default_factory=list)

    def add(self, table: str, values: dict[str, Any]) -> None:
        cols = COLUMNS[table]
        unknown = set(values) - set(cols)
        if unknown:
            raise KeyError(f"{table}: unknown columns {sorted(unknown)}")
        self.rows[table].append(tuple(values.get(c) for c in cols))

    def counts(self) -> dict[str, int]:
        return {t: len(r) for t, r in self.rows.items()}


def parse_api_date(value: str | None) -> date | None:
    """API date string → date, as AACT does: YYYY-MM → last day of month, YYYY → Dec 31."""
    if not value:
        return None
    value = value.strip()
    try:
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
            return date.fromisoformat(value)
        if re.fullmatch(r"\d{4}-\d{2}", value):
            y, m = int(value[:4]), int(value[5:7])
            return date(y, m, calendar.monthrange(y, m)[1])
        if re.fullmatch(r"\d{4}", value):
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
    unit = m.group(2).lower()
    if unit.endswith("s"):
        unit = unit[:-1]
    return int(float(m.group(1))), unit


def months_between(start: date | None, end: date | None) -> int | None:
    """AACT's month arithmetic: (end - start) days / 30, rounded down."""
    if start is None or end is None:
        return None
    return (end - start).days // 30


def downcase(value: str | None) -> str | None:
    return value.lower() if value is not None else None


def calculated_values(nct_id: str, *, facilities_countries: list[str], sae_subjects: int | None,
                      nsae_subjects: int | None, first_submitted: date | None, start: date | None,
                      start_type: str | None, primary_completion: date | None, primary_completion_type: str | None,
                      results_submitted: date | None, were_results_reported: bool, minimum_age: str | None,
                      maximum_age: str | None, outcome_counts: tuple[int, int, int]) -> dict[str, Any]:
    """One calculated_values row by AACT's rules (app/models/calculated_value.rb)."""
    n_fac = len(facilities_countries)
    estimated = {"ESTIMATED", "ANTICIPATED", "Anticipated", "Estimated"}
    duration = None
    if start_type not in estimated and primary_completion_type not in estimated:
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
        "has_us_facility": (any(c in US_TERRITORY_COUNTRIES for c in facilities_countries) if n_fac else None),
        "has_single_facility": n_fac == 1,
        "minimum_age_num": min_num,
        "maximum_age_num": max_num,
        "minimum_age_unit": min_unit,
        "maximum_age_unit": max_unit,
        "number_of_primary_outcomes_to_measure": outcome_counts[0],
        "number_of_secondary_outcomes_to_measure": outcome_counts[1],
        "number_of_other_outcomes_to_measure": outcome_counts[2],
    }
