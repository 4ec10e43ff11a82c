"""What our copy of a study lacks: the source's coverage per record, and the words pages use for it.

The importers write one row per study into `app.study_sources` (sql/schema/040_app_study_sources.sql):
the kind of source, the fields it did not carry, and where criteria text added later came from. Pages,
cards, the report, exports and the assistant's tools turn (value, field, provenance) into display text
here, so "the registry gives none" and "our copy does not have it" are never confused. A database
without that table (a read-only AACT) counts every record as full.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from typing import Any

import pandas as pd

from services.data.db import Database, load_sql
from services.errors import TrialLandscapeError

NOT_IN_COPY = "not in this copy — see ClinicalTrials.gov"

# Fields a source may not carry, with the words a page uses for them.
FIELDS: dict[str, str] = {
    "criteria": "eligibility criteria text",
    "summary": "summary",
    "description": "detailed description",
    "ages": "age limits",
    "sex": "sex",
    "healthy_volunteers": "whether healthy volunteers may take part",
    "phase": "phase",
    "enrollment": "enrollment",
    "sites": "sites",
    "start_date": "start date",
    "completion_date": "completion date",
    "primary_completion_date": "primary completion date",
    "last_update": "last update date",
    "sponsor": "sponsor",
    "funder_type": "funder type",
    "study_type": "study type",
    "design": "design",
    "conditions": "conditions",
    "interventions": "interventions",
    "outcomes": "outcome measures",
    "keywords": "keywords",
    "mesh_terms": "MeSH terms",
    "official_title": "official title",
}


@dataclass(frozen=True)
class Provenance:
    """Which fields one study's source did not carry (none: a full record, or one we know nothing about) and
    where its criteria text came from; the source itself is in app.study_sources."""

    nct_id: str
    lacks: frozenset[str] = frozenset()
    criteria_source: str | None = None
    criteria_format: str | None = None
    criteria_as_of: date | None = None

    @property
    def partial(self) -> bool:
        return bool(self.lacks)

    def lacks_field(self, field: str) -> bool:
        return field in self.lacks

    @property
    def registry_url(self) -> str:
        return f"https://clinicaltrials.gov/study/{self.nct_id}"


def _empty(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, float) and value != value:  # NaN from a DataFrame
        return True
    if isinstance(value, str | list | tuple | set | frozenset | dict):
        return not (value.strip() if isinstance(value, str) else value)
    return False


def describe(value: Any, field: str, prov: Provenance | None, absent: str) -> str:
    """Display text for one field: the value; 'not in this copy …' when our source lacked it; else `absent`.

    `absent` is what the registry's own silence means for that field ("Any age", "Not given").
    """
    if prov is not None and prov.lacks_field(field) and _empty(value):
        return NOT_IN_COPY
    if _empty(value):
        return absent
    return str(value)


def lacking(prov: Provenance | None) -> list[str]:
    """The fields our copy of this study lacks, in FIELDS order."""
    if prov is None:
        return []
    return [f for f in FIELDS if f in prov.lacks]


def missing_note(prov: Provenance | None) -> str | None:
    """One sentence naming what our copy lacks (None when nothing is missing)."""
    names = [FIELDS[f] for f in lacking(prov)]
    if not names or prov is None:
        return None
    if len(names) > 8:  # the fields a patient needs first, then a count
        first = [FIELDS[f] for f in PATIENT_FIELDS if FIELDS[f] in names][:6]
        rest = len(names) - len(first)
        names = [*first, f"{rest} other field{'s' if rest != 1 else ''}"]
    return (f"Our copy of this study lacks its {_join(names)}: the source we loaded it from did not carry "
            f"{'them' if len(names) > 1 else 'it'}, which does not mean the registry lacks "
            f"{'them' if len(names) > 1 else 'it'} — see ClinicalTrials.gov ({prov.registry_url}).")


# What a patient-facing surface (card, report, export, tools) names first when our copy lacks it.
PATIENT_FIELDS: tuple[str, ...] = ("criteria", "ages", "sex", "healthy_volunteers", "summary", "sites", "phase",
                                   "enrollment")


def copy_note(lacks: Iterable[str]) -> str | None:
    """'Not in this copy — see ClinicalTrials.gov: its eligibility criteria text, age limits and sex …' (or None)."""
    missing = set(lacks)
    names = [FIELDS[f] for f in PATIENT_FIELDS if f in missing]
    if not names:
        return None
    return (f"Not in this copy — see ClinicalTrials.gov: {_join(names)} (the download we loaded this study from "
            f"did not carry {'them' if len(names) > 1 else 'it'}; the registry may well have "
            f"{'them' if len(names) > 1 else 'it'}).")


def tool_fields(prov: Provenance | None) -> dict[str, Any]:
    """What the assistant's tools add to a trial's record: the fields our copy lacks and where criteria came from."""
    if prov is None:
        return {}
    out: dict[str, Any] = {}
    if prov.lacks:
        out["not_in_this_copy"] = lacking(prov)
        out["copy_note"] = copy_note(prov.lacks)
    origin = criteria_origin(prov)
    if origin:
        out["criteria_source"] = origin
    return out


def annotate_export(df: pd.DataFrame, db: Database | None = None) -> pd.DataFrame:
    """Export rows plus `not_in_this_copy` (fields the source lacked) and `criteria_source` per trial."""
    from services.data import runtime

    if df.empty or "nct_id" not in df:
        return df
    provs = fetch(db or runtime.get_db(), [str(n) for n in df["nct_id"]])
    out = df.copy()
    missing = [lacking(provs.get(str(n))) for n in out["nct_id"]]
    out["not_in_this_copy"] = [f"{'; '.join(FIELDS[f] for f in fields)} — see ClinicalTrials.gov"
                               if fields else "" for fields in missing]
    out["criteria_source"] = [criteria_origin(provs.get(str(n))) or "" for n in out["nct_id"]]
    return out


def criteria_origin(prov: Provenance | None) -> str | None:
    """Where criteria text added to a partial record came from and how old it is."""
    if prov is None or not prov.criteria_source:
        return None
    fmt = {"v2": "API v2 text", "v2_text_flattened": "API v2 text, copied into a table",
           "legacy_xml_textblock": "older plain-text layout", "reconstructed_inc_exc": "rebuilt from "
           "inclusion/exclusion lists", "trialgpt_processed": "lower-cased, bullets removed"}.get(
               prov.criteria_format or "", prov.criteria_format or "")
    when = f", as of {prov.criteria_as_of.isoformat()}" if prov.criteria_as_of else ", date unknown"
    return (f"Criteria text added from {prov.criteria_source}"
            f"{f' ({fmt})' if fmt else ''}{when}; the registry's current text may differ.")


def _join(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


_present: dict[str, bool] = {}
_present_lock = threading.Lock()


def available(db: Database) -> bool:
    """Whether this database holds app.study_sources (checked once per database)."""
    with _present_lock:
        if _present.get(db.label):
            return True
    try:
        ok = bool(db.fetch_value(load_sql("study_sources_exists")))
    except TrialLandscapeError:
        ok = False
    with _present_lock:
        _present[db.label] = ok
    return ok


def _row(r: dict[str, Any]) -> Provenance:
    return Provenance(str(r["nct_id"]), frozenset(r.get("lacks") or ()), r.get("criteria_source"),
                      r.get("criteria_format"), r.get("criteria_as_of"))


def fetch(db: Database, nct_ids: list[str] | tuple[str, ...]) -> dict[str, Provenance]:
    """Provenance of each study (a study without a row, or a database without the table, is full)."""
    ids = [n for n in dict.fromkeys(nct_ids) if n]
    out = {n: Provenance(n) for n in ids}
    if not ids or not available(db):
        return out
    for r in db.fetch_rows(load_sql("study_sources"), {"ids": ids}):
        out[str(r["nct_id"])] = _row(r)
    return out


def lookup(db: Database, nct_id: str) -> Provenance:
    """One study's provenance."""
    return fetch(db, [nct_id]).get(nct_id, Provenance(nct_id))


@dataclass(frozen=True)
class RecordCounts:
    """Full and partial records in the database, for the Data page and `db info`."""

    studies: int
    full: int
    partial: int
    criteria_added: int
    tracked: bool  # False: no app.study_sources here, every record counts as full


def record_counts(db: Database) -> RecordCounts:
    """How many records are full, partial, and partial with criteria text added from another source."""
    if not available(db):
        n = int(db.fetch_value("SELECT count(*) FROM ctgov.studies") or 0)
        return RecordCounts(n, n, 0, 0, False)
    row = db.fetch_rows(load_sql("study_sources_counts"))[0]
    studies, partial = int(row["studies"]), int(row["partial"])
    return RecordCounts(studies, studies - partial, partial, int(row["criteria_added"]), True)
