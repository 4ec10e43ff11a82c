"""ClinicalTrials.gov site CSV downloads → AACT ctgov rows; site text is geocoded offline.

Accepts the CSV itself (`ctg-studies.csv`, optionally gzipped) or JSON lines holding one CSV
row per line with the original column names (the shipped sample's form).
"""

from __future__ import annotations

import csv
import itertools
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from services.data.loaders.common import NCT_RE, Batch, calculated_values, downcase, parse_api_date
from services.data.loaders.ctgov_json import iter_lines, json_objects
from services.errors import BadInput

KNOWN_COLUMNS = frozenset({
    "NCT Number", "Study Title", "Study URL", "Acronym", "Study Status", "Brief Summary", "Study Results",
    "Conditions", "Interventions", "Primary Outcome Measures", "Secondary Outcome Measures",
    "Other Outcome Measures", "Sponsor", "Collaborators", "Sex", "Age", "Phases", "Enrollment", "Funder Type",
    "Study Type", "Study Design", "Other IDs", "Start Date", "Primary Completion Date", "Completion Date",
    "First Posted", "Results First Posted", "Last Update Posted", "Locations", "Study Documents", "_source",
})
REQUIRED_COLUMNS = ("NCT Number", "Study Title", "Study Status")

# Standard age groups of ClinicalTrials.gov: child 0–17, adult 18–64, older adult 65+.
_STD_MIN = (("CHILD", None), ("ADULT", "18 Years"), ("OLDER_ADULT", "65 Years"))
_STD_MAX = (("OLDER_ADULT", None), ("ADULT", "64 Years"), ("CHILD", "17 Years"))
_ZIPLIKE = re.compile(r"\d")


def read_rows(path: Path) -> Iterator[tuple[int, dict[str, str]]]:
    """Yield (line number, row) from a site CSV or CSV-as-JSON-lines file; BadInput names file and line."""
    lines = iter_lines(path)
    first_line = next(((n, t) for n, t in lines if t.strip()), None)
    if first_line is None:
        raise BadInput(f"{path}: the file is empty.")
    if first_line[1].lstrip().startswith("{"):
        header_checked = False
        for line_no, row in json_objects(path, [first_line, *lines], "an object of CSV columns"):
            if not header_checked:
                _check_columns(path, line_no, row.keys())
                header_checked = True
            yield line_no, {k: ("" if v is None else str(v)) for k, v in row.items()}
        return
    # read line by line as the rows are used, never the whole file at once
    reader = csv.DictReader(itertools.chain([first_line[1]], (t for _, t in lines)))
    _check_columns(path, first_line[0], reader.fieldnames or [])
    try:
        for row in reader:
            if None in row:
                raise BadInput(f"{path}: line {reader.line_num}: more fields than the header has.")
            yield reader.line_num, {k: (v or "") for k, v in row.items()}
    except csv.Error as err:
        raise BadInput(f"{path}: line {reader.line_num}: unreadable CSV ({err}).") from err


def _check_columns(path: Path, line_no: int, columns: Any) -> None:
    cols = set(columns)
    missing = [c for c in REQUIRED_COLUMNS if c not in cols]
    if missing:
        raise BadInput(f"{path}: line {line_no}: missing column(s) {', '.join(missing)} — this does not look like a "
                       f"ClinicalTrials.gov CSV download (expected columns such as 'NCT Number', 'Study Status').")
    unknown = sorted(cols - KNOWN_COLUMNS)
    if unknown:
        raise BadInput(f"{path}: line {line_no}: unknown column(s) {', '.join(unknown)}; "
                       f"expected ClinicalTrials.gov CSV column names.")


def _split(value: str) -> list[str]:
    return [p.strip() for p in value.split("|") if p.strip()] if value else []


_COUNTRY_TAIL = re.compile(r"^(the |republic|islamic|democratic|united republic|province|federated|plurinational|"
                           r"bolivarian|former|people)", re.IGNORECASE)


def parse_location(text: str) -> tuple[dict[str, str | None], tuple[float, float] | None]:
    """'Facility, City, State, Zip, Country' (facility may itself hold commas) → parts and a geocoded point.

    The state is optional and the facility may contain commas, so each plausible reading is
    geocoded and the first that resolves wins; otherwise the simplest reading is kept unlocated.
    """
    from services.data.geo import country_code, geocode_site, us_state_name

    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts:
        return {"name": None, "city": None, "state": None, "zip": None, "country": None}, None
    country: str | None = parts.pop()
    # "Korea, Republic of", "Iran, Islamic Republic of": the country itself holds a comma. A tail that is a
    # country on its own ("Democratic Republic of the Congo") is not joined to the city before it.
    if parts and country and _COUNTRY_TAIL.match(country) and country_code(country) is None:
        country = f"{parts.pop()}, {country}"
    # Some rows end with a facility or city instead of a country ("Ochsner Medical Center"): keep it as text.
    if country and country_code(country) is None:
        parts.append(country)
        country = None
    zip_code = parts.pop() if parts and _ZIPLIKE.search(parts[-1]) and len(parts[-1]) <= 12 else None
    readings: list[tuple[str | None, str | None, list[str]]] = []
    if parts and country == "United States" and us_state_name(parts[-1]):
        readings.append((parts[-2] if len(parts) >= 2 else None, us_state_name(parts[-1]), parts[:-2]))
    if len(parts) >= 3:
        readings.append((parts[-2], parts[-1], parts[:-2]))
    if parts:
        readings.append((parts[-1], None, parts[:-1]))
    if len(parts) >= 2:
        readings.append((None, parts[-1], parts[:-1]))
    for city, state, rest in readings:
        point = geocode_site(city, state, zip_code, country)
        if point is not None:
            return {"name": ", ".join(rest) or None, "city": city, "state": state, "zip": zip_code,
                    "country": country}, point
    if country is None:  # no country and nothing found: it is a facility's name, not a place
        return {"name": ", ".join(parts) or None, "city": None, "state": None, "zip": zip_code, "country": None}, None
    city, state, rest = readings[0] if readings else (None, None, [])
    return {"name": ", ".join(rest) or None, "city": city, "state": state, "zip": zip_code, "country": country}, None


def _design(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in _split(text):
        key, _, value = part.partition(":")
        out[key.strip().lower()] = value.strip()
    return out


def row_to_rows(row: dict[str, str], batch: Batch, ids: dict[str, Iterator[int]]) -> str:
    """Append one CSV row's study to the batch; return its NCT id."""
    nct = row.get("NCT Number", "").strip()
    if not NCT_RE.match(nct):
        raise ValueError(f"missing or malformed NCT Number ({nct!r})")
    g = row.get
    phases = _split(g("Phases", ""))
    enrollment = g("Enrollment", "").strip()
    first_posted = parse_api_date(g("First Posted", ""))
    start = parse_api_date(g("Start Date", ""))
    pc = parse_api_date(g("Primary Completion Date", ""))
    results_posted = parse_api_date(g("Results First Posted", ""))
    design = _design(g("Study Design", ""))
    masking = design.get("masking", "")
    batch.add("studies", {
        "nct_id": nct, "brief_title": g("Study Title") or None, "acronym": g("Acronym") or None,
        "overall_status": g("Study Status") or None, "phase": "/".join(phases) or None,
        "enrollment": int(float(enrollment)) if enrollment.replace(".", "", 1).isdigit() else None,
        "study_type": g("Study Type") or None,
        "start_month_year": g("Start Date") or None, "start_date": start,
        "primary_completion_month_year": g("Primary Completion Date") or None, "primary_completion_date": pc,
        "completion_month_year": g("Completion Date") or None, "completion_date": parse_api_date(g("Completion Date", "")),
        "study_first_posted_date": first_posted, "results_first_posted_date": results_posted,
        "last_update_posted_date": parse_api_date(g("Last Update Posted", "")),
        "source": g("Sponsor") or None,
    })
    for name in _split(g("Conditions", "")):
        batch.add("conditions", {"nct_id": nct, "name": name, "downcase_name": downcase(name)})
    for item in _split(g("Interventions", "")):
        itype, sep, name = item.partition(":")
        batch.add("interventions", {"id": next(ids["interventions"]), "nct_id": nct,
                                    "intervention_type": itype.strip() if sep else None,
                                    "name": name.strip() if sep else item})
    if design:
        batch.add("designs", {
            "nct_id": nct, "allocation": design.get("allocation"), "intervention_model": design.get("intervention model"),
            "observational_model": design.get("observational model"), "primary_purpose": design.get("primary purpose"),
            "time_perspective": design.get("time perspective"), "masking": masking.split(" ")[0] or None,
        })
    std = {a.strip() for a in g("Age", "").split(",") if a.strip()}
    min_age = (next((v for k, v in _STD_MIN if k in std), None) or "N/A") if std else None
    max_age = (next((v for k, v in _STD_MAX if k in std), None) or "N/A") if std else None
    if std or g("Sex"):
        batch.add("eligibilities", {"nct_id": nct, "gender": g("Sex") or None, "minimum_age": min_age,
                                    "maximum_age": max_age, "adult": "ADULT" in std, "child": "CHILD" in std,
                                    "older_adult": "OLDER_ADULT" in std})
    countries: list[str] = []
    for loc in _split(g("Locations", "")):
        parts, point = parse_location(loc)
        countries.append(parts["country"] or "")
        batch.add("facilities", {"nct_id": nct, **parts,
                                 "latitude": round(point[0], 6) if point else None,
                                 "longitude": round(point[1], 6) if point else None})
    for country in sorted({c for c in countries if c}):
        batch.add("countries", {"nct_id": nct, "name": country, "removed": False})
    if g("Sponsor"):
        batch.add("sponsors", {"nct_id": nct, "agency_class": g("Funder Type") or None,
                               "lead_or_collaborator": "lead", "name": g("Sponsor")})
    for collab in _split(g("Collaborators", "")):
        batch.add("sponsors", {"nct_id": nct, "agency_class": None, "lead_or_collaborator": "collaborator",
                               "name": collab})
    if g("Brief Summary"):
        batch.add("brief_summaries", {"nct_id": nct, "description": g("Brief Summary")})
    counts = []
    for col, otype in (("Primary Outcome Measures", "primary"), ("Secondary Outcome Measures", "secondary"),
                       ("Other Outcome Measures", "other")):
        items = _split(g(col, ""))
        counts.append(len(items))
        for measure in items:
            batch.add("design_outcomes", {"nct_id": nct, "outcome_type": otype, "measure": measure})
    for i, other in enumerate(_split(g("Other IDs", ""))):
        batch.add("id_information", {"nct_id": nct, "id_source": "org_study_id" if i == 0 else "secondary_id",
                                     "id_value": other})
    batch.add("calculated_values", calculated_values(
        nct, facilities_countries=countries, sae_subjects=None, nsae_subjects=None,
        first_submitted=first_posted, start=start, start_type=None, primary_completion=pc,
        primary_completion_type=None, results_submitted=None,
        were_results_reported=g("Study Results", "").upper() == "YES", minimum_age=min_age, maximum_age=max_age,
        outcome_counts=(counts[0], counts[1], counts[2]),
    ))
    batch.nct_ids.append(nct)
    return nct
