"""A first message from the patient to a trial's team: whom to write to, and a draft to copy, edit and send.

The app sends nothing. It picks the registry's contact for the trial — its central contact when the record has one,
else a contact at the site nearest the patient, else "through ClinicalTrials.gov" (the trial's page lists how to
reach the team) — and drafts a short, plain message from the patient's saved answers and the questions the trial's
criteria left open. The shipped sample has every contact name, e-mail and phone removed, so with it the answer is
always ClinicalTrials.gov; a full AACT database carries the registry's contacts and they are used as they are.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from services.inert import one_line, text
from services.trials import ctgov_url

MAX_QUESTIONS = 4
MAX_CHARS = 2000


@dataclass(frozen=True)
class Contact:
    """Whom to write to and how."""

    who: str  # "Dr A. Smith (the trial's central contact)", "the study team at X", "the study team"
    ways: tuple[str, ...]  # "e-mail: …", "phone: …", or the ClinicalTrials.gov page
    source: str  # where this came from, in words
    name: str = ""  # the person's name when the registry gives one (the draft greets them by it)


def _ways(row: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(f"{way}: {text(row[key])}" for key, way in (("email", "e-mail"), ("phone", "phone"))
                 if text(row.get(key)))


def choose_contact(nct_id: str, contacts: Sequence[Mapping[str, Any]], nearest_facility: str | None) -> Contact:
    """The central contact (primary first), else a contact at the nearest site, else ClinicalTrials.gov."""
    central = [c for c in contacts if c.get("kind") == "central" and _ways(c)]
    if central:
        c = central[0]
        name = text(c.get("name"))
        return Contact(f"{name} (the trial's central contact)" if name else "the trial's central contact",
                       _ways(c), "the trial's central contact in the registry", name)
    wanted = (nearest_facility or "").strip().lower()
    at_site = [c for c in contacts if c.get("kind") == "site" and _ways(c) and wanted
               and text(c.get("facility")).strip().lower() == wanted]
    if at_site:
        c = at_site[0]
        name = text(c.get("name"))
        place = text(c.get("facility"))
        return Contact(f"{name} at {place}" if name else f"the study team at {place}", _ways(c),
                       "the contact of the site nearest to you in the registry", name)
    return Contact("the study team", (f"the contacts on the trial's ClinicalTrials.gov page: {ctgov_url(nct_id)}",),
                   "no contact in our copy of the registry")


ADULT_AGE = 18  # younger patients' parents write for them


def _child(profile: Mapping[str, Any]) -> str | None:
    """'son', 'daughter' or 'child' when the patient is under ADULT_AGE (a parent writes), else None."""
    age = profile.get("age")
    if not isinstance(age, int | float) or isinstance(age, bool) or age >= ADULT_AGE:
        return None
    return {"female": "daughter", "male": "son"}.get(text(profile.get("sex")).lower(), "child")


def _patient_line(profile: Mapping[str, Any]) -> str:
    """'I am a 62-year-old man with non-small cell lung cancer (stage IV), living near Boston, MA.', or for a
    child 'I am writing about my 9-year-old son, who has … We live near Houston, TX.'"""
    age, sex = profile.get("age"), text(profile.get("sex")).lower()
    child = _child(profile)
    diagnosis = text(profile.get("diagnosis"))
    detail = ", ".join(x for x in (text(profile.get("stage")), text(profile.get("subtype"))) if x)
    illness = f"{diagnosis}" + (f" ({detail})" if detail else "") if diagnosis else ""
    place = text(profile.get("location"))
    if child:
        sentence = f"I am writing about my {age:g}-year-old {child}"
        sentence += f", who has {illness}" if illness else ""
        return sentence + "." + (f" We live near {place}." if place else "")
    person = {"female": "woman", "male": "man"}.get(sex, "person")
    if isinstance(age, int | float) and not isinstance(age, bool):
        sentence = f"I am a {age:g}-year-old {person}"
    else:
        sentence = f"I am a {person}" if person != "person" else "I am writing about myself"
    if illness:
        sentence += f" with {illness}"
    if place:
        sentence += f", living near {place}"
    return sentence + "."


def draft_message(profile: Mapping[str, Any], trial: Mapping[str, Any], contact: Contact,
                  questions: Sequence[str] = ()) -> str:
    """The draft, plain text. trial: nct_id, title, and optionally site_where (the nearest site in words);
    questions: the criteria (in words) the patient could not judge, first ones first."""
    nct_id = text(trial.get("nct_id"))
    title = text(trial.get("title")) or nct_id
    asked = [one_line(q, 220) for q in (text(q) for q in questions) if q][:MAX_QUESTIONS]
    child = _child(profile)
    who = {"son": "he", "daughter": "she", "child": "they"}.get(child or "", "I")
    lines = [f"Dear {contact.name or 'study team'},", "",
             f"{_patient_line(profile)} I found your trial {nct_id}, “{title}”, on ClinicalTrials.gov and would like "
             f"to know whether {who} could take part."]
    if asked:
        lines += ["", f"From the published criteria I could not tell whether these apply to "
                      f"{'my ' + child if child else 'me'}:"] + [f"- {q}" for q in asked]
    site = text(trial.get("site_where"))
    lines += ["", (f"Is the site nearest to {'us' if child else 'me'} ({site}) taking new participants, and "
                   "what would the next steps be?" if site else
                   f"Which site could {who} join, and what would the next steps be?"),
              "", "Thank you for your time.", "", "[your name and how to reach you]"]
    body = "\n".join(lines)
    return body if len(body) <= MAX_CHARS else body[:MAX_CHARS - 1] + "…"
