"""One selected trial as the report shows it: checklist rows, side effects, study groups, nearest site,
contact."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from datetime import date
from enum import StrEnum
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

from services import contact, inert
from services.data import normalize
from services.data.provenance import copy_note
from services.eligibility.match import OPEN_CRITERION_STATUSES
from services.eligibility.parser import unescape_markdown
from services.eligibility.plain import _LAB_VALUE, _ORGAN_FUNCTION, topic_of
from services.eligibility.scoring import FitBand, Verdict
from services.errors import BadInput
from services.freshness import as_date, status_note
from services.report.words import (
    ARM_TYPES,
    KIND_VIEW,
    STATUS_ALIASES,
    STATUS_VIEW,
    UNKNOWN_KINDS,
    duration,
    label,
    month_words,
    months_between,
    number,
    paragraphs,
    record_text,
    record_texts,
    shorten,
    year_month,
)
from services.trials import (
    CRITERIA_MISSING,
    NCT_RE,
    ctgov_url,
    miles_words,
    phase_words,
    site_status_note,
    status_words,
)

E = TypeVar("E", bound=StrEnum)
MAX_SERIOUS_EVENTS = 5
MAX_OTHER_EVENTS = 8
MAX_REGISTRY_SUMMARY_CHARS = 700

# The registry's own age and sex limits, and the stand-ins for limits our copy lacks: the rules judge them, so
# they neither decide a verdict worth showing nor raise a question ("Age limits: not in this copy — see …").
_STRUCTURED = re.compile(r"(?:Age|Sex)\b|Any age$|Full eligibility criteria")
# Met lines that say nothing about the disease (consent, other studies, pregnancy rules): true of nearly
# everyone.
_TRIVIAL_TOPICS = frozenset({"Taking part", "Pregnancy and birth control"})
MAX_DECISIVE = 4
MAX_HEADING = 120
MAX_OPEN = 4


def _line(item: Mapping[str, Any], limit: int = 220) -> dict[str, str]:
    shown, css, mark = STATUS_VIEW.get(
        STATUS_ALIASES.get(str(item.get("status")), str(item.get("status"))),
        STATUS_VIEW["not_enough_information"],
    )
    text = inert.text(item.get("plain")) or record_text(item.get("criterion"))
    return {
        "text": shorten(text, limit, at_sentence=False),
        "status": shown,
        "css": css,
        "mark": mark,
        "kind": KIND_VIEW.get(str(item.get("type") or "inclusion"), ""),
        "reason": shorten(inert.text(item.get("reason")), 200, at_sentence=False),
    }


def structured(item: Mapping[str, Any]) -> bool:
    """Whether a criterion is the registry's age/sex limit or a stand-in for text our copy lacks."""
    return bool(_STRUCTURED.match(inert.text(item.get("criterion"))))


def decisive_lines(criteria: Iterable[Mapping[str, Any]]) -> dict[str, list[dict[str, str]]]:
    """The lines that decide: those against the patient, then met lines about the disease (not age, sex,
    consent or pregnancy rules), at most MAX_DECISIVE each."""
    items = [c for c in criteria if inert.text(c.get("criterion")) and not structured(c)]
    against = [_line(c) for c in items if c.get("status") == "not_met"]
    met = [
        _line(c, 160)
        for c in items
        if c.get("status") == "met" and topic_of(inert.text(c.get("criterion"))) not in _TRIVIAL_TOPICS
    ]
    return {"against": against[:MAX_DECISIVE], "for": met[: MAX_DECISIVE - 1]}


def open_lines(criteria: Iterable[Mapping[str, Any]]) -> tuple[list[dict[str, str]], int]:
    """The first MAX_OPEN lines still open (inclusion lines first, registry order within each) and how many
    more."""
    items = [
        c
        for c in criteria
        if c.get("status") in OPEN_CRITERION_STATUSES and inert.text(c.get("criterion")) and not structured(c)
    ]
    items.sort(key=lambda c: c.get("type") != "inclusion")
    return [_line(c, 150) for c in items[:MAX_OPEN]], max(0, len(items) - MAX_OPEN)


def criterion_rows(criteria: Iterable[Mapping[str, Any]]) -> list[dict[str, str]]:
    """Checklist rows: who the line is for, the plain wording, the original wording, status and reason."""
    rows = []
    for item in criteria:
        status = str(item.get("status") or "not_enough_information")
        status = STATUS_ALIASES.get(status, status)
        shown, css, mark = STATUS_VIEW.get(status, STATUS_VIEW["not_enough_information"])
        full = record_text(item.get("criterion"))
        plain = inert.text(item.get("plain")) or full
        kind = str(item.get("type") or item.get("kind") or "inclusion")
        rows.append(
            {
                "kind": KIND_VIEW.get(kind, label(kind)),
                "plain": plain,
                "original": shorten(full, 400)
                if full and full.lower().rstrip(". ") != plain.lower().rstrip(". ")
                else "",
                "status": shown,
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
            {
                "term": term[:1].upper() + term[1:],
                "organ_system": inert.text(event.get("organ_system")),
                "affected": 0,
                "at_risk": 0,
            },
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

    out: dict[str, Any] = {
        "has_results": True,
        "serious": top(True, MAX_SERIOUS_EVENTS),
        "other": top(False, MAX_OTHER_EVENTS),
    }
    if report.get("totals"):  # reported_event_totals, where the database has them
        out["totals"] = _event_totals(report["totals"])
    return out


_TOTAL_LABELS = (
    ("serious", "had at least one serious side effect"),
    ("other", "had at least one other side effect"),
    ("deaths", "died during the trial"),
)


def _event_totals(totals: Any) -> list[str]:
    """'12 of 340 people (4%) had at least one serious side effect' per kind the trial posted
    (reported_event_totals)."""
    by_type = {str(t.get("event_type")): t for t in totals if isinstance(t, Mapping)}
    lines = []
    for kind, text in _TOTAL_LABELS:
        t = by_type.get(kind)
        if t is None:
            continue
        affected, at_risk = int(t.get("subjects_affected") or 0), int(t.get("subjects_at_risk") or 0)
        share = f" ({100.0 * affected / at_risk:.0f}%)" if at_risk else ""
        lines.append(
            f"{affected:,} of {at_risk:,} people{share} {text}" if at_risk else f"{affected:,} people {text}"
        )
    return lines


def _arm_rows(details: Mapping[str, Any]) -> list[dict[str, str]]:
    rows = []
    for arm in details.get("arms") or []:
        kind = str(arm.get("group_type") or arm.get("type") or "").upper().replace(" ", "_")
        treatments = arm.get("interventions")
        if isinstance(treatments, list | tuple):
            treatments = ", ".join(
                inert.text(t.get("name") if isinstance(t, Mapping) else t) for t in treatments
            )
        rows.append(
            {
                "title": record_text(arm.get("title") or arm.get("label") or arm.get("name"))
                or "Study group",
                "kind": ARM_TYPES.get(kind, ""),
                "description": shorten(record_text(arm.get("description")), 400),
                "treatments": record_text(treatments),
            }
        )
    return rows


def _intervention_names(details: Mapping[str, Any]) -> list[str]:
    names = []
    for item in details.get("interventions") or []:
        if isinstance(item, Mapping):
            name = record_text(item.get("name"))
            kind = normalize.label("intervention_type", str(item["type"])) if item.get("type") else ""
            if name:
                names.append(f"{name} ({kind.lower()})" if kind else name)
        elif record_text(item):
            names.append(record_text(item))
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
    score = (
        max(0, min(100, int(score)))
        if isinstance(score, int | float) and not isinstance(score, bool)
        else None
    )
    criteria = criterion_rows(match.get("criteria") or [])
    counts = {
        css: sum(1 for c in criteria if c["css"] == css) for css in ("met", "notmet", "discuss", "unknown")
    }
    plain_summary = paragraphs(match.get("summary"))
    registry_summary = shorten(record_text(details.get("summary")), MAX_REGISTRY_SUMMARY_CHARS)
    start, end = details.get("start_date"), details.get("completion_date")
    months = months_between(start, end)
    began, ends, now = year_month(start), year_month(end), (today.year, today.month)
    started = began is not None and began <= now
    where, distance = _site_text(site, match.get("nearest_site"))
    # Records and tests to bring; the match's own questions are left out: the open lines and the care team's
    # questions (each worded for its line) say it better than "Does this describe me?".
    unknowns = [
        {"kind": UNKNOWN_KINDS[str(u.get("kind"))], "text": inert.text(u.get("text"))}
        for u in match.get("unknowns") or []
        if inert.text(u.get("text")) and str(u.get("kind")) in ("record", "test")
    ]
    opened, more = open_lines(match.get("criteria") or [])
    phases = phase_words(match.get("phases") or details.get("phases"))
    status_code = match.get("status") or details.get("status")
    title = record_text(details.get("title") or match.get("title"))  # the match may carry a shortened title
    stale = (
        status_note(
            status_code,
            primary_completion=details.get("primary_completion_date"),
            last_update=details.get("last_update_date"),
            today=today,
        )
        if details
        else inert.text(match.get("status_note")) or None
    )
    band = _member(FitBand, match.get("fit_band"))
    updated = as_date(details.get("last_update_date") or match.get("last_update_date"))
    as_of = (
        f"as of the registry's update of {updated:%B} {updated.day}, {updated.year}"
        if updated
        else "(our copy has no update date)"
        if details
        else ""
    )
    return {
        "number": index,
        "nct_id": nct_id,
        "anchor": f"trial-{nct_id}",
        "url": ctgov_url(nct_id),
        "title": title or nct_id,
        "heading": shorten(title, MAX_HEADING, at_sentence=False)
        or nct_id,  # one page per trial: the full title is
        # in the appendix and the references
        "short_title": shorten(title, 70, at_sentence=False),
        "official_title": record_text(details.get("official_title")),
        "status": status_words(status_code),
        "status_as_of": as_of if status_code else "",  # a status is only as fresh as the record's last update
        "phases": phases,
        "study_type": normalize.label("study_type", str(details["study_type"]))
        if details.get("study_type")
        else "",
        "sponsor": record_text(details.get("sponsor")),
        "conditions": record_texts(details.get("conditions") or []),
        "enrollment": number(details.get("enrollment")),
        "fit_score": score,
        "fit_band": band.display if band else "",
        "fit_explanation": inert.text(match.get("fit_explanation")),
        "distance_note": inert.text(match.get("distance_note")),
        "beyond_reach": match.get("within_reach")
        is False,  # the note may say instead that the distance is unknown
        "status_note": stale or "",
        "criteria_missing": match.get("criteria_text") == CRITERIA_MISSING,
        "verdict": verdict.display if verdict else "Not assessed",
        "verdict_class": verdict.value.replace("_", "") if verdict else "uncertain",  # the stylesheet's class
        "plain_summary": plain_summary,
        "registry_summary": registry_summary,
        "criteria": criteria,
        "counts": counts,
        "unknowns": unknowns,
        "decisive": decisive_lines(match.get("criteria") or []),
        "open": opened,
        "open_more": more,
        "what_to_expect": paragraphs(match.get("what_to_expect")),
        "arms": _arm_rows(details),
        "interventions": _intervention_names(details),
        "start": month_words(start),
        "start_verb": "started" if started else "starts",
        # The registry's end date is a plan until the trial is completed; a plan already past says so.
        "end_verb": "ended"
        if status_words(status_code) == "Completed" and (began is None or started)
        else "was planned to end"
        if ends is not None and ends < now
        else "is planned to end",
        "end": month_words(end),
        "duration": duration(months) if months is not None else "",
        "primary_outcomes": [
            shorten(o, 300) for o in record_texts((details.get("primary_outcomes") or [])[:4])
        ],
        "side_effects": side_effects(events),
        "site_where": where,
        "site_distance": distance,
        "has_details": bool(details),
        "copy_note": copy_note(details.get("not_in_this_copy") or ()) or "",
        "criteria_source": inert.text(details.get("criteria_source")),
    }


SELF_KNOWN_FILE = Path(__file__).resolve().parents[2] / "data" / "report" / "self_known.json"


@cache
def self_known() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """(fact, pattern) of each fact a patient knows or answers for themselves (data/report/self_known.json).
    """
    rows = json.loads(SELF_KNOWN_FILE.read_text(encoding="utf-8"))["cues"]
    return tuple((str(r["fact"]), re.compile(str(r["pattern"]), re.I)) for r in rows)


def patient_can_answer(line: str) -> bool:
    """Whether a criterion line is about something the patient knows (age, BMI, smoking, consent …) or a lab
    value their own results settle: such a line is not a question for the study team."""
    text = unescape_markdown(line)
    return (
        any(p.search(text) for _, p in self_known())
        or bool(_LAB_VALUE.search(text))
        or bool(_ORGAN_FUNCTION.search(text))
    )


def contact_view(
    profile: Mapping[str, Any],
    match: Mapping[str, Any],
    details: Mapping[str, Any] | None,
    site: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """Whom to write to about this trial and a draft message (contact_who, contact_ways, contact_source,
    message)."""
    details = details or {}
    nct_id = str(match.get("nct_id") or details.get("nct_id") or "").strip().upper()
    found = contact.choose_contact(nct_id, details.get("contacts") or [], (site or {}).get("facility"))
    open_ones = [
        c
        for c in match.get("criteria") or []
        if c.get("status") in OPEN_CRITERION_STATUSES
        and not structured(c)
        and not patient_can_answer(inert.text(c.get("criterion")))
    ]
    open_ones.sort(
        key=lambda c: c.get("type") != "inclusion"
    )  # stable: the registry's order within each kind
    asked = [inert.text(c.get("plain")) or record_text(c.get("criterion")) for c in open_ones]
    where, _ = _site_text(
        site, match.get("nearest_site")
    )  # the distance is worded for the reader of the report
    title = record_text(details.get("title") or match.get("title")) or nct_id
    message = contact.draft_message(
        profile, {"nct_id": nct_id, "title": title, "site_where": where}, found, asked
    )
    return {
        "contact_who": found.who,
        "contact_ways": list(found.ways),
        "contact_source": found.source,
        "message": message,
    }
