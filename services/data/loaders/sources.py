"""Per-study provenance rows for app.study_sources, and criteria text filled into partial (CSV) records."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from services.data.loaders.coerce import unstorable
from services.data.loaders.common import NCT_RE, parse_api_date
from services.data.loaders.ctgov_json import iter_lines, json_objects
from services.errors import BadInput

TABLE = "app.study_sources"
COLUMNS = ("nct_id", "source_kind", "source_name", "lacks", "criteria_source", "criteria_format", "criteria_as_of")

# A site CSV download carries a field only when its column was exported (the column set differs per download).
CSV_FIELD_COLUMNS: dict[str, str] = {
    "summary": "Brief Summary", "sex": "Sex", "phase": "Phases", "enrollment": "Enrollment",
    "sites": "Locations", "start_date": "Start Date", "completion_date": "Completion Date",
    "primary_completion_date": "Primary Completion Date", "last_update": "Last Update Posted",
    "sponsor": "Sponsor", "funder_type": "Funder Type", "study_type": "Study Type", "design": "Study Design",
    "conditions": "Conditions", "interventions": "Interventions", "outcomes": "Primary Outcome Measures",
}
# Never part of a site CSV download, whatever columns were chosen. Its "Age" column holds only the age groups
# (child 0-17, adult 18-64, older adult 65+): the loader stores a group's edges, but the trial's own limits
# are not there.
CSV_NEVER = ("ages", "criteria", "description", "healthy_volunteers", "keywords", "mesh_terms", "official_title")


# The ctgov table that carries each field a source may lack (services/data/provenance.py FIELDS): an AACT
# export that carries the table fills the field in our copy.
FIELD_TABLES: dict[str, str] = {
    "criteria": "eligibilities", "ages": "eligibilities", "sex": "eligibilities",
    "healthy_volunteers": "eligibilities",
    "summary": "brief_summaries", "description": "detailed_descriptions", "sites": "facilities",
    "conditions": "conditions", "interventions": "interventions", "outcomes": "design_outcomes",
    "keywords": "keywords", "mesh_terms": "browse_conditions", "sponsor": "sponsors",
    "funder_type": "sponsors",
    "design": "designs", "phase": "studies", "enrollment": "studies", "start_date": "studies",
    "completion_date": "studies", "primary_completion_date": "studies", "last_update": "studies",
    "study_type": "studies", "official_title": "studies",
}


def filled_by(tables: Iterable[str]) -> list[str]:
    """The fields a source carrying these tables fills."""
    carried = set(tables)
    return sorted(field for field, table in FIELD_TABLES.items() if table in carried)


def csv_lacks(row: dict[str, str]) -> list[str]:
    """Fields a CSV row's source did not carry (a column present but empty means the registry gives none)."""
    missing = [field for field, column in CSV_FIELD_COLUMNS.items() if column not in row]
    return sorted([*CSV_NEVER, *missing])


def source_row(nct_id: str, kind: str, name: str | None, lacks: list[str]) -> tuple[Any, ...]:
    """One app.study_sources row in COLUMNS order (no criteria fill yet)."""
    return (nct_id, kind, name, lacks, None, None, None)


@dataclass(frozen=True)
class Fill:
    """Criteria text (and perhaps a summary) for a partial record, with its source and date."""

    nct_id: str
    criteria: str
    source: str
    criteria_format: str | None
    as_of: date | None
    summary: str | None


_AS_OF = re.compile(r"^\d{4}(-\d{2}(-\d{2})?)?$")


def _as_of(value: Any) -> date | None:
    if not isinstance(value, str) or not _AS_OF.match(value.strip()):
        return None
    return parse_api_date(value.strip())


def read_fills(path: Path) -> Iterator[tuple[int, Fill]]:
    """Yield (line, fill) from a criteria-fill JSON-lines file; BadInput names file and line."""
    for line_no, row in json_objects(path, iter_lines(path), "an object with nct_id, eligibility_criteria, source"):
        nct, text, source = row.get("nct_id"), row.get("eligibility_criteria"), row.get("source")
        if not isinstance(nct, str) or not NCT_RE.match(nct):
            raise BadInput(f"{path}: line {line_no}: missing or malformed nct_id.")
        if not isinstance(text, str) or not text.strip():
            raise BadInput(f"{path}: line {line_no}: {nct} has no eligibility_criteria text.")
        if not isinstance(source, str) or not source.strip():
            raise BadInput(f"{path}: line {line_no}: {nct} does not name its source.")
        summary = row.get("brief_summary")
        fmt = row.get("criteria_format")
        for name in ("eligibility_criteria", "source", "brief_summary", "criteria_format"):
            value = row.get(name)
            if isinstance(value, str) and (what := unstorable(value)):
                raise BadInput(f"{path}: line {line_no}: {nct}'s {name} holds {what}, which PostgreSQL cannot "
                               "store; nothing was imported.")
        yield line_no, Fill(nct, text, source.strip(), fmt if isinstance(fmt, str) and fmt else None,
                            _as_of(row.get("as_of")), summary if isinstance(summary, str) and summary.strip() else None)
