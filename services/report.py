"""The patient's report: self-contained printable HTML for the selected trials, and a PDF through headless Chromium."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from datetime import date
from enum import StrEnum
from pathlib import Path
from typing import Any, TypedDict, TypeVar

import jinja2

from services import contact, inert
from services.data import normalize
from services.data.provenance import copy_note
from services.eligibility.match import OPEN_CRITERION_STATUSES
from services.eligibility.scoring import FitBand, Verdict
from services.errors import BadInput, TrialLandscapeError
from services.freshness import as_date, status_note
from services.trials import (
    CRITERIA_MISSING,
    NCT_RE,
    AdverseEvents,
    ReportRequest,
    Site,
    TrialBackend,
    TrialDetails,
    ctgov_url,
    describe_searches,
    miles_words,
    nearest_site,
    phase_words,
    plural,
    site_status_note,
    status_words,
)

E = TypeVar("E", bound=StrEnum)

TEMPLATE_DIR = Path(__file__).parent / "templates"
TEMPLATE_NAME = "report.html.j2"
# Chromium reaches Google on its own (network time, component updates, safe browsing, metrics) unless told not to;
# the report is a local file and needs nothing from outside, so every host name fails to resolve as well.
OFFLINE_FLAGS = (
    "--disable-domain-reliability", "--disable-client-side-phishing-detection", "--metrics-recording-only",
    "--disable-breakpad", "--no-pings", "--disable-crash-reporter", "--safebrowsing-disable-auto-update",
    "--disable-features=NetworkTimeServiceQuerying,OptimizationHints,MediaRouter,Translate,"
    "AutofillServerCommunication,CertificateTransparencyComponentUpdater",
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE localhost",
)
CHROMIUM_PATHS = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")
PDF_TIMEOUT_SECONDS = 60.0
MAX_SERIOUS_EVENTS = 5
MAX_OTHER_EVENTS = 8
MAX_REGISTRY_SUMMARY_CHARS = 700

DISCLAIMER = (
    "This report is not medical advice. It was put together by a computer program from what you told it and "
    "from the public ClinicalTrials.gov registry, and it can be wrong or out of date. Only a trial's study team "
    "can decide whether you can take part. Discuss every trial in it with your doctor before making any decision "
    "about your care."
)


class PdfFailed(TrialLandscapeError):
    """Chromium was found but did not produce a PDF (crashed, timed out or wrote nothing usable)."""

    hint = "Open the HTML report in a browser and use Print → Save as PDF instead."


# --- Wording ---------------------------------------------------------------------------------------

# Criterion statuses as the assistant saves them ("does the patient pass this line?"); the rules'
# label spellings are accepted too so a rule-built match renders the same way.
_STATUS_VIEW: dict[str, tuple[str, str, str]] = {
    "met": ("Met", "met", "✓"),
    "not_met": ("Not met", "notmet", "✗"),
    "needs_discussion": ("Needs discussion", "discuss", "?"),
    "not_enough_information": ("Not enough information", "unknown", "?"),
    "not_applicable": ("Does not apply to you", "met", "–"),
}
_STATUS_ALIASES = {"not_enough_info": "not_enough_information", "unknown": "not_enough_information"}
_KIND_VIEW = {"inclusion": "Needed to join", "exclusion": "Keeps people out"}
_ARM_TYPES = {
    "EXPERIMENTAL": "Gets the treatment being studied",
    "ACTIVE_COMPARATOR": "Gets an existing treatment, for comparison",
    "PLACEBO_COMPARATOR": "Gets a placebo (looks like the treatment but has no active medicine)",
    "SHAM_COMPARATOR": "Gets a sham (pretend) procedure, for comparison",
    "NO_INTERVENTION": "Gets no study treatment",
    "OTHER": "Other group",
}
_UNKNOWN_KINDS = {"record": "Bring", "test": "Test that may be needed", "question": "Ask"}
_PROFILE_FIELDS: tuple[tuple[str, str], ...] = (
    ("diagnosis", "Diagnosis"),
    ("stage", "Stage"),
    ("subtype", "Type or subtype"),
    ("biomarkers", "Test results and markers"),
    ("treatments", "Treatments so far"),
    ("other_conditions", "Other health conditions"),
    ("age", "Age"),
    ("sex", "Sex"),
    ("location", "Where you live"),
    ("travel_radius_miles", "How far you would travel"),
    ("activity_level", "Daily activity"),
    ("ecog", "Activity score (ECOG)"),
    ("preferred_phases", "Trial phases you prefer"),
    ("trial_types", "Kinds of trial you are open to"),
    ("preferences", "Other preferences"),
    ("notes", "Notes"),
)
# Coordinates, and the session's own bookkeeping kept with the answers: the transcript of the interview kept for the
# model (patient_said) and the dashboard filters the session started from (dashboard_*), which are not answers.
_HIDDEN_PROFILE_FIELDS = frozenset({"latitude", "longitude", "complete", "patient_said"})
_STANDARD_GLOSSARY: tuple[tuple[str, str], ...] = (
    ("Eligibility criteria", "The rules a trial uses to decide who can take part: things you need to have "
     "(inclusion criteria) and things that keep people out (exclusion criteria)."),
    ("Fit score", "A 0-100 guide to how well a trial seems to match what you told us: 60 and above is a "
     "\"good match so far\" (at least half of its criteria checked, none against you), 20-59 \"needs information\", below 20 "
     "\"unlikely\" (something rules you out). It is not a decision; only the study team decides who can join."),
    ("Phase", "How far along a treatment's testing is. Phase 1 trials are small and check safety; phase 2 "
     "checks whether it works and finds the dose; phase 3 compares it with standard care in many people; "
     "phase 4 follows a treatment that is already approved."),
    ("Adverse event", "Any unwanted health problem that happened to someone during a trial, whether or not "
     "the treatment caused it. \"Serious\" ones led to a hospital stay, disability, or were life-threatening."),
    ("Placebo", "A look-alike treatment with no active medicine, used so results can be compared fairly."),
)


def _texts(values: Iterable[Any]) -> list[str]:
    """Each value as plain text (inert.text), blank ones dropped."""
    return [t for t in (inert.text(v) for v in values) if t]


def _paragraphs(value: Any) -> list[str]:
    """Text split on blank lines, each paragraph with its whitespace collapsed."""
    if not value:
        return []
    return _texts(re.split(r"\n\s*\n", str(value)))


def _shorten(text: str, limit: int, *, at_sentence: bool = True) -> str:
    """Text cut to at most limit characters: at a sentence end when one is near, else at a word; with an ellipsis
    either way (a quote cut after a full stop must not read as the whole text)."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    sentence_end = cut.rfind(". ")
    if at_sentence and sentence_end > limit // 2:
        return cut[: sentence_end + 1] + " …"
    return cut.rsplit(" ", 1)[0].rstrip(",;:") + "…"


def _year_month(value: Any) -> tuple[int, int] | None:
    """(year, month) of a date or a 'YYYY-MM[-DD]' text; None for anything else."""
    day = as_date(value)
    return (day.year, day.month) if day else None


def _month_words(value: Any) -> str | None:
    """'2024-02' or '2024-02-15' (or a date) as 'February 2024'; other text unchanged."""
    if value is None or value == "":
        return None
    day = as_date(value)
    return f"{day:%B %Y}" if day else inert.text(value)


def _months_between(start: Any, end: Any) -> int | None:
    a, b = _year_month(start), _year_month(end)
    if a is None or b is None:
        return None
    months = (b[0] - a[0]) * 12 + b[1] - a[1]
    return months if months >= 0 else None


def _duration(months: int) -> str:
    if months < 24:
        return f"about {months} month{'s' if months != 1 else ''}"
    years = months / 12
    return f"about {years:.0f} years" if abs(years - round(years)) < 0.25 else f"about {years:.1f} years"


def _number(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return ""
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
        return f"{int(value):,}"
    if isinstance(value, float):
        return f"{value:,.1f}"
    return inert.text(value)


def _value(key: str, value: Any) -> str:
    """A profile value in words."""
    if value is None or value == "" or value == [] or value == ():
        return ""
    if key == "preferred_phases":
        return ", ".join(phase_words([v]) for v in value)
    if key == "travel_radius_miles" and isinstance(value, int | float):
        return f"Up to {plural(round(value), 'mile')}"  # whole miles, as the cards and the chat say it
    if key == "age":
        return f"{_number(value)} years"
    if isinstance(value, bool):
        return "Yes" if value else "No"
    if isinstance(value, Mapping):
        return "; ".join(f"{_label(k)}: {_value(k, v)}" for k, v in value.items() if _value(k, v))
    if isinstance(value, list | tuple):
        return ", ".join(_value(key, v) for v in value if _value(key, v))
    if isinstance(value, int | float):
        return _number(value)
    text = inert.text(value)
    if key in ("sex", "trial_types"):
        return text[:1].upper() + text[1:].lower()
    return text


def _label(key: str) -> str:
    known = dict(_PROFILE_FIELDS)
    if key in known:
        return known[key]
    words = str(key).replace("_", " ").strip()
    return words[:1].upper() + words[1:]


# --- Building the view ---------------------------------------------------------------------------


def profile_rows(profile: Mapping[str, Any], intake_answers: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(label, value) rows about the patient: profile fields in a fixed order, then anything else they told us."""
    merged: dict[str, Any] = dict(intake_answers)
    merged.update({k: v for k, v in profile.items() if v not in (None, "", [], ())})
    if "ecog" in merged and "activity_level" in merged:
        merged.pop("ecog")  # the activity sentence already says it in words
    known = {key for key, _ in _PROFILE_FIELDS} | _HIDDEN_PROFILE_FIELDS
    others = [(key, _label(key)) for key in sorted(merged) if key not in known and not key.startswith("dashboard_")]
    rows: list[tuple[str, str]] = []
    for key, title in [*_PROFILE_FIELDS, *others]:
        shown = _value(key, merged.get(key))
        if shown:
            rows.append((title, shown))
    return rows


def criterion_rows(criteria: Iterable[Mapping[str, Any]]) -> list[dict[str, str]]:
    """Checklist rows: who the line is for, the plain wording, the original wording, status and reason."""
    rows = []
    for item in criteria:
        status = str(item.get("status") or "not_enough_information")
        status = _STATUS_ALIASES.get(status, status)
        label, css, mark = _STATUS_VIEW.get(status, _STATUS_VIEW["not_enough_information"])
        full = inert.text(item.get("criterion"))
        plain = inert.text(item.get("plain")) or full
        kind = str(item.get("type") or item.get("kind") or "inclusion")
        rows.append(
            {
                "kind": _KIND_VIEW.get(kind, _label(kind)),
                "plain": plain,
                "original": _shorten(full, 400) if full and full.lower().rstrip(". ") != plain.lower().rstrip(". ")
                else "",
                "status": label,
                "css": css,
                "mark": mark,
                "reason": inert.text(item.get("reason")),
            }
        )
    return rows


def side_effects(report: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Top adverse event terms by people affected, serious and other, summed over the trial's groups."""
    if report is None:
        return None
    if not report.get("has_results"):
        return {"has_results": False, "serious": [], "other": []}
    totals: dict[tuple[bool, str], dict[str, Any]] = {}
    for event in report.get("events") or []:
        term = inert.text(event.get("term"))
        if not term:
            continue
        serious = bool(event.get("serious"))
        row = totals.setdefault(
            (serious, term.lower()),
            {"term": term[:1].upper() + term[1:], "organ_system": inert.text(event.get("organ_system")),
             "affected": 0, "at_risk": 0},
        )
        row["affected"] += int(event.get("subjects_affected") or 0)
        row["at_risk"] += int(event.get("subjects_at_risk") or 0)

    def top(serious: bool, limit: int) -> list[dict[str, Any]]:
        rows = [dict(r) for (s, _), r in totals.items() if s is serious and r["affected"] > 0]
        rows.sort(key=lambda r: (-r["affected"], r["term"].lower()))
        for r in rows:
            r["percent"] = f"{100.0 * r['affected'] / r['at_risk']:.0f}%" if r["at_risk"] else ""
            r["people"] = f"{r['affected']:,} of {r['at_risk']:,}" if r["at_risk"] else f"{r['affected']:,}"
        return rows[:limit]

    out: dict[str, Any] = {"has_results": True, "serious": top(True, MAX_SERIOUS_EVENTS),
                           "other": top(False, MAX_OTHER_EVENTS)}
    if report.get("totals"):  # reported_event_totals, where the database has them
        out["totals"] = _event_totals(report["totals"])
    return out


_TOTAL_LABELS = (("serious", "had at least one serious side effect"), ("other", "had at least one other side effect"),
                 ("deaths", "died during the trial"))


def _event_totals(totals: Any) -> list[str]:
    """'12 of 340 people (4%) had at least one serious side effect' per kind the trial posted (reported_event_totals)."""
    by_type = {str(t.get("event_type")): t for t in totals if isinstance(t, Mapping)}
    lines = []
    for kind, text in _TOTAL_LABELS:
        t = by_type.get(kind)
        if t is None:
            continue
        affected, at_risk = int(t.get("subjects_affected") or 0), int(t.get("subjects_at_risk") or 0)
        share = f" ({100.0 * affected / at_risk:.0f}%)" if at_risk else ""
        lines.append(f"{affected:,} of {at_risk:,} people{share} {text}" if at_risk else f"{affected:,} people {text}")
    return lines


def _arm_rows(details: Mapping[str, Any]) -> list[dict[str, str]]:
    rows = []
    for arm in details.get("arms") or []:
        kind = str(arm.get("group_type") or arm.get("type") or "").upper().replace(" ", "_")
        treatments = arm.get("interventions")
        if isinstance(treatments, list | tuple):
            treatments = ", ".join(inert.text(t.get("name") if isinstance(t, Mapping) else t) for t in treatments)
        rows.append(
            {
                "title": inert.text(arm.get("title") or arm.get("label") or arm.get("name")) or "Study group",
                "kind": _ARM_TYPES.get(kind, ""),
                "description": _shorten(inert.text(arm.get("description")), 400),
                "treatments": inert.text(treatments),
            }
        )
    return rows


def _intervention_names(details: Mapping[str, Any]) -> list[str]:
    names = []
    for item in details.get("interventions") or []:
        if isinstance(item, Mapping):
            name = inert.text(item.get("name"))
            kind = normalize.label("intervention_type", str(item["type"])) if item.get("type") else ""
            if name:
                names.append(f"{name} ({kind.lower()})" if kind else name)
        elif inert.text(item):
            names.append(inert.text(item))
    return list(dict.fromkeys(names))


def _site_text(site: Mapping[str, Any] | None, fallback: Any) -> tuple[str, str]:
    """(where, distance) of the nearest site; from the site record, else the saved match's sentence."""
    if site:
        place = ", ".join(p for p in (inert.text(site.get(k)) for k in ("city", "state", "country")) if p)
        where = " — ".join(p for p in (inert.text(site.get("facility")), place) if p)
        miles = site.get("distance_miles")
        distance = f"{miles_words(miles)} from you" if isinstance(miles, int | float) else ""
        closed = site_status_note(site)  # named only when no site of the trial may take participants
        return where, "; ".join(p for p in (distance, closed) if p)
    if isinstance(fallback, Mapping):
        return _site_text(fallback, None)
    return inert.text(fallback), ""


def _member(kind: type[E], value: Any) -> E | None:
    """The member of a string enum whose value this is; None for anything else (missing, misspelt)."""
    try:
        return kind(str(value))
    except ValueError:
        return None


def trial_view(
    index: int,
    match: Mapping[str, Any],
    details: Mapping[str, Any] | None,
    events: Mapping[str, Any] | None,
    site: Mapping[str, Any] | None,
    today: date,
) -> dict[str, Any]:
    """Everything the template shows for one selected trial."""
    nct_id = str(match.get("nct_id") or "").strip().upper()
    if not NCT_RE.fullmatch(nct_id):
        raise BadInput(f"report trial {index}: {match.get('nct_id')!r} is not an NCT id")
    details = details or {}
    verdict = _member(Verdict, match.get("verdict"))
    score = match.get("fit_score")
    score = max(0, min(100, int(score))) if isinstance(score, int | float) and not isinstance(score, bool) else None
    criteria = criterion_rows(match.get("criteria") or [])
    counts = {css: sum(1 for c in criteria if c["css"] == css) for css in ("met", "notmet", "discuss", "unknown")}
    plain_summary = _paragraphs(match.get("summary"))
    registry_summary = _shorten(inert.text(details.get("summary")), MAX_REGISTRY_SUMMARY_CHARS)
    start, end = details.get("start_date"), details.get("completion_date")
    months = _months_between(start, end)
    began, ends, now = _year_month(start), _year_month(end), (today.year, today.month)
    started = began is not None and began <= now
    where, distance = _site_text(site, match.get("nearest_site"))
    unknowns = [
        {"kind": _UNKNOWN_KINDS.get(str(u.get("kind")), "Find out"), "text": inert.text(u.get("text"))}
        for u in match.get("unknowns") or []
        if inert.text(u.get("text"))
    ]
    phases = phase_words(match.get("phases") or details.get("phases"))
    status_code = match.get("status") or details.get("status")
    title = inert.text(match.get("title") or details.get("title"))
    stale = (status_note(status_code, primary_completion=details.get("primary_completion_date"),
                         last_update=details.get("last_update_date"), today=today)
             if details else inert.text(match.get("status_note")) or None)
    band = _member(FitBand, match.get("fit_band"))
    updated = as_date(details.get("last_update_date") or match.get("last_update_date"))
    as_of = (f"as of the registry's update of {updated:%B} {updated.day}, {updated.year}" if updated
             else "(our copy has no update date)" if details else "")
    return {
        "number": index,
        "nct_id": nct_id,
        "anchor": f"trial-{nct_id}",
        "url": ctgov_url(nct_id),
        "title": title or nct_id,
        "short_title": _shorten(title, 70, at_sentence=False),
        "official_title": inert.text(details.get("official_title")),
        "status": status_words(status_code),
        "status_as_of": as_of if status_code else "",  # a status is only as fresh as the record's last update
        "phases": phases,
        "study_type": normalize.label("study_type", str(details["study_type"])) if details.get("study_type") else "",
        "sponsor": inert.text(details.get("sponsor")),
        "conditions": _texts(details.get("conditions") or []),
        "enrollment": _number(details.get("enrollment")),
        "fit_score": score,
        "fit_band": band.display if band else "",
        "fit_explanation": inert.text(match.get("fit_explanation")),
        "distance_note": inert.text(match.get("distance_note")),
        "beyond_reach": match.get("within_reach") is False,  # the note may say instead that the distance is unknown
        "status_note": stale or "",
        "criteria_missing": match.get("criteria_text") == CRITERIA_MISSING,
        "verdict": verdict.display if verdict else "Not assessed",
        "verdict_class": verdict.value.replace("_", "") if verdict else "uncertain",  # the stylesheet's class
        "plain_summary": plain_summary,
        "registry_summary": registry_summary,
        "criteria": criteria,
        "counts": counts,
        "unknowns": unknowns,
        "what_to_expect": _paragraphs(match.get("what_to_expect")),
        "arms": _arm_rows(details),
        "interventions": _intervention_names(details),
        "start": _month_words(start),
        "start_verb": "started" if started else "starts",
        # The registry's end date is a plan until the trial is completed; a plan already past says so.
        "end_verb": "ended" if status_words(status_code) == "Completed" and (began is None or started)
        else "was planned to end" if ends is not None and ends < now else "is planned to end",
        "end": _month_words(end),
        "duration": _duration(months) if months is not None else "",
        "primary_outcomes": [_shorten(o, 300) for o in _texts((details.get("primary_outcomes") or [])[:4])],
        "side_effects": side_effects(events),
        "site_where": where,
        "site_distance": distance,
        "has_details": bool(details),
        "copy_note": copy_note(details.get("not_in_this_copy") or ()) or "",
        "criteria_source": inert.text(details.get("criteria_source")),
    }


def contact_view(profile: Mapping[str, Any], match: Mapping[str, Any], details: Mapping[str, Any] | None,
                 site: Mapping[str, Any] | None) -> dict[str, Any]:
    """Whom to write to about this trial and a draft message (contact_who, contact_ways, contact_source, message)."""
    details = details or {}
    nct_id = str(match.get("nct_id") or details.get("nct_id") or "").strip().upper()
    found = contact.choose_contact(nct_id, details.get("contacts") or [], (site or {}).get("facility"))
    open_ones = [c for c in match.get("criteria") or [] if c.get("status") in OPEN_CRITERION_STATUSES]
    open_ones.sort(key=lambda c: c.get("type") != "inclusion")  # stable: the registry's order within each kind
    asked = [inert.text(c.get("plain") or c.get("criterion")) for c in open_ones]
    where, _ = _site_text(site, match.get("nearest_site"))  # the distance is worded for the reader of the report
    title = inert.text(details.get("title") or match.get("title")) or nct_id
    message = contact.draft_message(profile, {"nct_id": nct_id, "title": title, "site_where": where}, found, asked)
    return {"contact_who": found.who, "contact_ways": list(found.ways), "contact_source": found.source,
            "message": message}


def search_view(facts: Mapping[str, Any]) -> dict[str, Any]:
    """The "How we searched" section: travel limit, each search that ran with its counts, criteria coverage."""
    radius = facts.get("radius_miles")
    found = int(facts.get("found") or 0)
    missing = int(facts.get("without_criteria_text") or 0)
    return {
        "limit": (f"Up to {plural(round(radius), 'mile')} from {inert.text(facts.get('place')) or 'your place'}"
                  if isinstance(radius, int | float) else "No travel limit"),
        "searches": [line[:1].upper() + line[1:] for line in describe_searches(facts)],
        "found": _number(found),
        "missing": _number(missing),
        "with_text": _number(found - missing),
        "checked": _number(int(facts.get("checked") or 0)),
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
    for term, meaning in _STANDARD_GLOSSARY:
        if used[term] and term.lower() not in seen:
            rows.append((term, meaning))
    return rows


class ReportInputs(TypedDict):
    """What render_report needs besides the request, per NCT id (its keyword arguments)."""

    trial_details: dict[str, TrialDetails]
    adverse_events: dict[str, AdverseEvents]
    nearest_sites: dict[str, Site]


def trial_inputs(backend: TrialBackend, profile: Mapping[str, Any], matches: Iterable[Mapping[str, Any]], *,
                 adverse_events: bool = True) -> ReportInputs:
    """Details, adverse events (unless the caller does not show them) and the nearest site of each saved match,
    as render_report's keyword arguments.

    The nearest site (services.trials.nearest_site: one that may take participants, else the closest closed one)
    is measured from the patient's saved latitude/longitude; without them it is left out and the saved match's own
    nearest-site sentence is shown instead.
    """
    lat, lon = profile.get("latitude"), profile.get("longitude")
    origin = (float(lat), float(lon)) if isinstance(lat, int | float) and isinstance(lon, int | float) else None
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
    """The care team's question groups as the template shows them (titles, notes and questions as plain text)."""
    out = []
    for group in list(care_team.get("groups") or [])[:MAX_CARE_GROUPS]:
        questions = _texts(list(group.get("questions") or [])[:MAX_CARE_QUESTIONS])
        title = inert.text(group.get("title"))
        if title and questions:
            out.append({"title": title, "questions": questions, "note": inert.text(group.get("note")),
                        "by_model": group.get("source") == "model"})
    return out


def review_rows(flags: Any) -> list[tuple[str, str]]:
    """A trial's reviewer points as (label, text) rows; none when the reviewer had nothing to say."""
    return [(inert.text(f.get("label")), inert.text(f.get("text"))) for f in list(flags or [])[:8]
            if isinstance(f, Mapping) and inert.text(f.get("text"))]


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
    generated_on: date | None = None,
) -> str:
    """The report as one self-contained HTML page (inline CSS, no scripts, links only to ClinicalTrials.gov)."""
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
    groups = [(inert.text(topic), _texts(qs)) for topic, qs in request.question_groups]
    team = care_groups(request.care_team)
    asked = " ".join(q for g in team for q in g["questions"]).lower()
    questions = _texts(request.questions_for_doctor)
    context = {
        "generated_on": f"{today:%B} {today.day}, {today.year}",
        "summary": _paragraphs(request.summary),
        "search": search_view(facts) if facts else None,
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


# --- PDF -----------------------------------------------------------------------------------------


def find_chromium() -> str | None:
    """Path of a Chromium/Chrome binary (CHROMIUM_PATH overrides), or None when there is none."""
    configured = os.environ.get("CHROMIUM_PATH", "").strip()
    candidates = [configured] if configured else [*CHROMIUM_PATHS, shutil.which("chromium") or ""]
    for path in candidates:
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def render_pdf(html: str, *, timeout: float = PDF_TIMEOUT_SECONDS, chromium: str | None = None) -> bytes | None:
    """The HTML printed to PDF by headless Chromium; None when no Chromium is installed; PdfFailed when it fails."""
    binary = chromium or find_chromium()
    if binary is None:
        return None
    with tempfile.TemporaryDirectory(prefix="trial-report-") as tmp:
        folder = Path(tmp)
        page = folder / "report.html"
        page.write_text(html, encoding="utf-8")
        target = folder / "report.pdf"
        command = [
            binary,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-default-apps",
            "--disable-extensions",
            "--no-first-run",
            "--no-default-browser-check",
            *OFFLINE_FLAGS,
            "--no-pdf-header-footer",
            f"--user-data-dir={folder / 'profile'}",
            f"--print-to-pdf={target}",
            page.as_uri(),
        ]
        process = subprocess.Popen(
            command,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its own process group, so a timeout ends Chromium's helpers too
            env={**os.environ, "HOME": str(folder)},
        )
        try:
            _, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            raise PdfFailed(f"Chromium did not finish the PDF within {timeout:g} seconds.") from None
        data = target.read_bytes() if target.is_file() else b""
        if not data.startswith(b"%PDF"):
            tail = stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
            raise PdfFailed(
                f"Chromium exited with code {process.returncode} without writing a PDF"
                + (f": {' / '.join(tail)}" if tail else ".")
            )
        return data
