"""The patient's report: self-contained printable HTML for the selected trials, and a PDF through headless
Chromium.

The first page says what our copy of the registry is and what the search could not see
(services.report.coverage); each selected trial then has one page (verdict, the lines that decide, what is
still open, a draft to the study team, services.report.trial), and the full criterion tables, study groups and
side effects follow in an appendix.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import date
from pathlib import Path
from typing import Any, TypedDict

import jinja2

from services import inert
from services.data import normalize
from services.errors import BadInput
from services.report.coverage import CopyCoverage, coverage_view
from services.report.pdf import OFFLINE_FLAGS, PdfFailed, find_chromium, render_pdf
from services.report.trial import contact_view, criterion_rows, side_effects, trial_view
from services.report.words import STANDARD_GLOSSARY, number, paragraphs, profile_rows, texts
from services.trials import (
    NCT_RE,
    AdverseEvents,
    ReportRequest,
    Site,
    TrialBackend,
    TrialDetails,
    describe_searches,
    nearest_site,
    plural,
)

__all__ = [
    "OFFLINE_FLAGS",
    "CopyCoverage",
    "PdfFailed",
    "ReportInputs",
    "contact_view",
    "criterion_rows",
    "find_chromium",
    "profile_rows",
    "render_pdf",
    "render_report",
    "search_view",
    "side_effects",
    "trial_inputs",
]

TEMPLATE_DIR = Path(__file__).parent.parent / "templates"
TEMPLATE_NAME = "report.html.j2"

DISCLAIMER = (
    "This report is not medical advice. It was put together by a computer program from what you told it and "
    "from the public ClinicalTrials.gov registry, and it can be wrong or out of date. Only a trial's study "
    "team can decide whether you can take part. Discuss every trial in it with your doctor before making any "
    "decision about your care."
)


def search_view(facts: Mapping[str, Any]) -> dict[str, Any]:
    """The "How we searched" section: travel limit, each search that ran with its counts, criteria coverage.
    """
    radius = facts.get("radius_miles")
    found = int(facts.get("found") or 0)
    missing = int(facts.get("without_criteria_text") or 0)
    return {
        "limit": (
            f"Up to {plural(round(radius), 'mile')} from {inert.text(facts.get('place')) or 'your place'}"
            if isinstance(radius, int | float)
            else "No travel limit"
        ),
        "searches": [line[:1].upper() + line[1:] for line in describe_searches(facts)],
        "found": number(found),
        "missing": number(missing),
        "with_text": number(found - missing),
        "checked": number(int(facts.get("checked") or 0)),
    }


def _glossary(given: Sequence[Mapping[str, str]], views: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """The assistant's glossary, then the standard terms this report uses that it did not define."""
    rows: list[tuple[str, str]] = []
    seen: set[str] = set()
    for entry in given:
        term, meaning = inert.text(entry.get("term")), inert.text(entry.get("meaning"))
        if term and meaning and term.lower() not in seen:
            rows.append((term, meaning))
            seen.add(term.lower())
    used = {
        "Eligibility criteria": any(t["criteria"] for t in views),
        "Fit score": any(t["fit_score"] is not None for t in views),
        "Phase": any(t["phases"] and t["phases"] != normalize.label("phase", "NA") for t in views),
        "Adverse event": any(t["side_effects"] and t["side_effects"]["has_results"] for t in views),
        "Placebo": any("placebo" in (a["kind"] + a["title"]).lower() for t in views for a in t["arms"]),
    }
    for term, meaning in STANDARD_GLOSSARY:
        if used[term] and term.lower() not in seen:
            rows.append((term, meaning))
    return rows


class ReportInputs(TypedDict):
    """What render_report needs besides the request, per NCT id (its keyword arguments)."""

    trial_details: dict[str, TrialDetails]
    adverse_events: dict[str, AdverseEvents]
    nearest_sites: dict[str, Site]


def trial_inputs(
    backend: TrialBackend,
    profile: Mapping[str, Any],
    matches: Iterable[Mapping[str, Any]],
    *,
    adverse_events: bool = True,
) -> ReportInputs:
    """Details, adverse events (unless the caller does not show them) and the nearest site of each saved
    match, as render_report's keyword arguments.

    The nearest site (services.trials.nearest_site: one that may take participants, else the closest closed
    one) is measured from the patient's saved latitude/longitude; without them it is left out and the saved
    match's own nearest-site sentence is shown instead.
    """
    lat, lon = profile.get("latitude"), profile.get("longitude")
    origin = (
        (float(lat), float(lon)) if isinstance(lat, int | float) and isinstance(lon, int | float) else None
    )
    details: dict[str, TrialDetails] = {}
    events: dict[str, AdverseEvents] = {}
    sites: dict[str, Site] = {}
    for match in matches:
        nct_id = str(match.get("nct_id") or "").strip().upper()
        if not NCT_RE.fullmatch(nct_id):
            continue
        found = backend.get_trial_details(nct_id)
        if found is not None:
            details[nct_id] = found
        reported = backend.get_adverse_events(nct_id) if adverse_events else None
        if reported is not None:
            events[nct_id] = reported
        if origin is not None:
            site = nearest_site(backend.get_trial_locations(nct_id, origin) or [])
            if site is not None:
                sites[nct_id] = site
    return {"trial_details": details, "adverse_events": events, "nearest_sites": sites}


MAX_CARE_GROUPS = 8
MAX_CARE_QUESTIONS = 12


def care_groups(care_team: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The care team's question groups as the template shows them (titles, notes and questions as plain text).
    """
    out = []
    for group in list(care_team.get("groups") or [])[:MAX_CARE_GROUPS]:
        questions = texts(list(group.get("questions") or [])[:MAX_CARE_QUESTIONS])
        title = inert.text(group.get("title"))
        if title and questions:
            out.append(
                {
                    "title": title,
                    "questions": questions,
                    "note": inert.text(group.get("note")),
                    "by_model": group.get("source") == "model",
                }
            )
    return out


def review_rows(flags: Any) -> list[tuple[str, str]]:
    """A trial's reviewer points as (label, text) rows; none when the reviewer had nothing to say."""
    return [
        (inert.text(f.get("label")), inert.text(f.get("text")))
        for f in list(flags or [])[:8]
        if isinstance(f, Mapping) and inert.text(f.get("text"))
    ]


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATE_DIR)),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render_report(
    request: ReportRequest,
    *,
    trial_details: Mapping[str, TrialDetails] | None = None,
    adverse_events: Mapping[str, AdverseEvents] | None = None,
    nearest_sites: Mapping[str, Site] | None = None,
    coverage: CopyCoverage | None = None,
    generated_on: date | None = None,
) -> str:
    """The report as one self-contained HTML page (inline CSS, no scripts, links only to ClinicalTrials.gov).

    coverage (DatabaseBackend.copy_coverage) feeds the first page's account of what our copy could not show;
    without it that box says only what the search found."""
    if not request.trials:
        raise BadInput("A report needs at least one selected trial.")
    details_by_id = {k.upper(): v for k, v in (trial_details or {}).items()}
    events_by_id = {k.upper(): v for k, v in (adverse_events or {}).items()}
    sites_by_id = {k.upper(): v for k, v in (nearest_sites or {}).items()}
    today = generated_on or date.today()
    views = []
    for i, match in enumerate(request.trials, start=1):
        nct_id = str(match.get("nct_id") or "").strip().upper()
        details, site = details_by_id.get(nct_id), sites_by_id.get(nct_id)
        view = trial_view(i, match, details, events_by_id.get(nct_id), site, today)
        view.update(contact_view(request.patient_profile, match, details, site))
        view["review"] = review_rows((request.care_team.get("review") or {}).get(nct_id))
        views.append(view)
    facts = dict(request.search_facts or {})
    groups = [(inert.text(topic), texts(qs)) for topic, qs in request.question_groups]
    team = care_groups(request.care_team)
    asked = " ".join(q for g in team for q in g["questions"]).lower()
    questions = texts(request.questions_for_doctor)
    context = {
        "generated_on": f"{today:%B} {today.day}, {today.year}",
        "summary": paragraphs(request.summary),
        "search": search_view(facts) if facts else None,
        "coverage": coverage_view(
            coverage, facts, request.trials, str(request.patient_profile.get("diagnosis") or "")
        ),
        "question_groups": [(t, qs) for t, qs in groups if t and qs],
        "profile": profile_rows(request.patient_profile, request.intake_answers),
        "trials": views,
        "care_groups": team,
        # With the care team's groups, the flat list adds only questions they do not already ask.
        "questions": [q for q in questions if q.lower() not in asked] if team else questions,
        "glossary": _glossary(request.glossary, views),
        "disclaimer": DISCLAIMER,
    }
    return _environment().get_template(TEMPLATE_NAME).render(**context)
