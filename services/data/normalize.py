"""One spelling for AACT values old and new: API v2 enums as canonical, human labels for display.

AACT switched to ClinicalTrials.gov API v2 enums in mid-2024 (`PHASE1/PHASE2`,
`ACTIVE_NOT_RECRUITING`, `INDUSTRY`); older dumps say `Phase 1/Phase 2`, `Active, not
recruiting`, `Industry`. Python callers use the `canonical_*` functions; SQL uses the matching
`sql_*` expressions so filters and facets work on either spelling.
"""

from __future__ import annotations

import re

PHASES = ("EARLY_PHASE1", "PHASE1", "PHASE2", "PHASE3", "PHASE4", "NA")
OPEN_STATUSES = ("NOT_YET_RECRUITING", "RECRUITING", "ENROLLING_BY_INVITATION", "ACTIVE_NOT_RECRUITING", "AVAILABLE")
# A study's overall status; expanded-access records have statuses of their own.
STUDY_STATUSES = (
    "RECRUITING", "NOT_YET_RECRUITING", "ENROLLING_BY_INVITATION", "ACTIVE_NOT_RECRUITING", "COMPLETED",
    "SUSPENDED", "TERMINATED", "WITHDRAWN", "UNKNOWN",
)
EXPANDED_ACCESS_STATUSES = ("AVAILABLE", "NO_LONGER_AVAILABLE", "TEMPORARILY_NOT_AVAILABLE", "APPROVED_FOR_MARKETING",
                            "WITHHELD")
STATUSES = STUDY_STATUSES + EXPANDED_ACCESS_STATUSES
# OPEN_STATUSES is what the dashboard's default filter keeps; these tell a patient "you may be able to join".
ENROLLING_STATUSES = ("RECRUITING", "NOT_YET_RECRUITING", "ENROLLING_BY_INVITATION")
CLOSED_OUTCOMES = ("COMPLETED", "TERMINATED", "WITHDRAWN", "SUSPENDED")  # how a trial that stopped enrolling ended
STUDY_TYPES = ("INTERVENTIONAL", "OBSERVATIONAL", "EXPANDED_ACCESS")
FUNDER_CLASSES = ("INDUSTRY", "NIH", "FED", "OTHER_GOV", "INDIV", "NETWORK", "OTHER", "UNKNOWN", "AMBIG")
SEXES = ("ALL", "FEMALE", "MALE")

LABELS: dict[str, dict[str, str]] = {
    "phase": {"EARLY_PHASE1": "Early Phase 1", "PHASE1": "Phase 1", "PHASE2": "Phase 2", "PHASE3": "Phase 3",
              "PHASE4": "Phase 4", "NA": "Not applicable", "PHASE1/PHASE2": "Phase 1/Phase 2",
              "PHASE2/PHASE3": "Phase 2/Phase 3"},
    "status": {"RECRUITING": "Recruiting", "NOT_YET_RECRUITING": "Not yet recruiting",
               "ENROLLING_BY_INVITATION": "Enrolling by invitation", "ACTIVE_NOT_RECRUITING": "Active, not recruiting",
               "COMPLETED": "Completed", "SUSPENDED": "Suspended", "TERMINATED": "Terminated",
               "WITHDRAWN": "Withdrawn", "UNKNOWN": "Unknown status", "AVAILABLE": "Available",
               "NO_LONGER_AVAILABLE": "No longer available", "TEMPORARILY_NOT_AVAILABLE": "Temporarily not available",
               "APPROVED_FOR_MARKETING": "Approved for marketing", "WITHHELD": "Withheld"},
    "study_type": {"INTERVENTIONAL": "Interventional", "OBSERVATIONAL": "Observational",
                   "EXPANDED_ACCESS": "Expanded access"},
    "funder_class": {"INDUSTRY": "Industry", "NIH": "NIH", "FED": "U.S. federal", "OTHER_GOV": "Other government",
                     "INDIV": "Individual", "NETWORK": "Network", "OTHER": "Other (academic, hospital…)",
                     "UNKNOWN": "Unknown", "AMBIG": "Ambiguous"},
    "sex": {"ALL": "All sexes", "FEMALE": "Female only", "MALE": "Male only"},
    "intervention_type": {"DRUG": "Drug", "DEVICE": "Device", "BIOLOGICAL": "Biological", "PROCEDURE": "Procedure",
                          "RADIATION": "Radiation", "BEHAVIORAL": "Behavioral", "GENETIC": "Genetic",
                          "DIETARY_SUPPLEMENT": "Dietary supplement", "COMBINATION_PRODUCT": "Combination product",
                          "DIAGNOSTIC_TEST": "Diagnostic test", "OTHER": "Other"},
}

_SPECIAL = {
    "phase": {"N/A": "NA", "NOT APPLICABLE": "NA", "EARLY PHASE 1": "EARLY_PHASE1", "PHASE 0": "EARLY_PHASE1"},
    "status": {"UNKNOWN STATUS": "UNKNOWN"},
    "study_type": {"OBSERVATIONAL [PATIENT REGISTRY]": "OBSERVATIONAL"},
    "funder_class": {"U.S. FED": "FED", "US FED": "FED", "OTHER GOV": "OTHER_GOV"},
}


def _enumify(value: str) -> str:
    return re.sub(r"[^A-Z0-9/]+", "_", value.strip().upper()).strip("_")


def canonical(kind: str, value: str | None) -> str | None:
    """Any AACT spelling of a value → its API v2 enum (None stays None; unknown values are enum-cased)."""
    if value is None or not str(value).strip():
        return None
    text = str(value).strip()
    special = _SPECIAL.get(kind, {})
    if text.upper() in special:
        return special[text.upper()]
    if kind == "phase":
        parts = [p.strip() for p in re.split(r"[/|]", text) if p.strip()]
        return "/".join(canonical_phase_part(p) for p in parts)
    return _enumify(text)


def canonical_phase_part(part: str) -> str:
    """One phase ('Phase 2', 'PHASE2', 'Early Phase 1', 'N/A') → its enum."""
    upper = part.strip().upper()
    return _SPECIAL["phase"].get(upper, upper.replace(" ", ""))


def phase_list(value: str | None) -> tuple[str, ...]:
    """'Phase 1/Phase 2' or 'PHASE1/PHASE2' → ('PHASE1', 'PHASE2')."""
    canon = canonical("phase", value)
    return tuple(canon.split("/")) if canon else ()


def label(kind: str, value: str | None) -> str:
    """Human label for a canonical or legacy value ('ACTIVE_NOT_RECRUITING' → 'Active, not recruiting')."""
    if value is None or value == "":
        return "Not given"
    canon = canonical(kind, value) or ""
    known = LABELS.get(kind, {})
    if canon in known:
        return known[canon]
    if kind == "phase" and "/" in canon:
        return "/".join(known.get(p, p.title()) for p in canon.split("/"))
    return canon.replace("_", " ").capitalize()


# SQL expressions that put a column in canonical form on read (column names come from code, never users).
def _sql_enum(col: str, special: str) -> str:
    """SQL: the `special` WHEN … THEN … clause, else the column upper-cased, other characters as `_`."""
    return f"(CASE {special} ELSE upper(regexp_replace(btrim({col}), '[^A-Za-z0-9]+', '_', 'g')) END)"


def sql_status(col: str) -> str:
    """SQL: overall_status in canonical form."""
    return _sql_enum(col, f"WHEN upper({col}) = 'UNKNOWN STATUS' THEN 'UNKNOWN'")


def sql_phase(col: str) -> str:
    """SQL: phase in canonical form ('Phase 1/Phase 2' → 'PHASE1/PHASE2', 'N/A' → 'NA')."""
    return (f"(CASE WHEN {col} IS NULL OR btrim({col}) = '' THEN NULL "
            f"WHEN upper({col}) IN ('N/A', 'NOT APPLICABLE') THEN 'NA' "
            f"ELSE replace(replace(upper(replace({col}, ' ', '')), 'EARLYPHASE1', 'EARLY_PHASE1'), '|', '/') END)")


def sql_study_type(col: str) -> str:
    """SQL: study_type in canonical form."""
    return _sql_enum(col, f"WHEN upper({col}) LIKE 'OBSERVATIONAL%' THEN 'OBSERVATIONAL'")


def sql_funder_class(col: str) -> str:
    """SQL: agency_class in canonical form."""
    return _sql_enum(col, f"WHEN upper({col}) IN ('U.S. FED', 'US FED') THEN 'FED'")
