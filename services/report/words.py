"""The report's wording: statuses, profile fields and values, dates and numbers in words, record text as
written."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from services import inert
from services.eligibility.parser import unescape_markdown
from services.freshness import as_date
from services.trials import phase_words, plural

# Criterion statuses as the assistant saves them ("does the patient pass this line?"); the rules'
# label spellings are accepted too so a rule-built match renders the same way.
STATUS_VIEW: dict[str, tuple[str, str, str]] = {
    "met": ("Met", "met", "✓"),
    "not_met": ("Not met", "notmet", "✗"),
    "needs_discussion": ("Needs discussion", "discuss", "?"),
    "not_enough_information": ("Not enough information", "unknown", "?"),
    "not_applicable": ("Does not apply to you", "met", "–"),
}
STATUS_ALIASES = {"not_enough_info": "not_enough_information", "unknown": "not_enough_information"}
KIND_VIEW = {"inclusion": "Needed to join", "exclusion": "Keeps people out"}
ARM_TYPES = {
    "EXPERIMENTAL": "Gets the treatment being studied",
    "ACTIVE_COMPARATOR": "Gets an existing treatment, for comparison",
    "PLACEBO_COMPARATOR": "Gets a placebo (looks like the treatment but has no active medicine)",
    "SHAM_COMPARATOR": "Gets a sham (pretend) procedure, for comparison",
    "NO_INTERVENTION": "Gets no study treatment",
    "OTHER": "Other group",
}
UNKNOWN_KINDS = {"record": "Bring", "test": "Test that may be needed", "question": "Ask"}
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
# Coordinates, and the session's own bookkeeping kept with the answers: the transcript of the interview kept
# for the model (patient_said) and the dashboard filters the session started from (dashboard_*), which are not
# answers.
_HIDDEN_PROFILE_FIELDS = frozenset({"latitude", "longitude", "complete", "patient_said", "place_country"})
STANDARD_GLOSSARY: tuple[tuple[str, str], ...] = (
    (
        "Eligibility criteria",
        "The rules a trial uses to decide who can take part: things you need to have "
        "(inclusion criteria) and things that keep people out (exclusion criteria).",
    ),
    (
        "Fit score",
        "A 0-100 guide to how well a trial seems to match what you told us: 60 and above is a "
        '"good match so far" (at least half of its criteria checked, none against you), 20-59 "needs '
        'information", below 20 '
        '"unlikely" (something rules you out). It is not a decision; only the study team decides who can '
        'join.',
    ),
    (
        "Phase",
        "How far along a treatment's testing is. Phase 1 trials are small and check safety; phase 2 "
        "checks whether it works and finds the dose; phase 3 compares it with standard care in many people; "
        "phase 4 follows a treatment that is already approved.",
    ),
    (
        "Adverse event",
        "Any unwanted health problem that happened to someone during a trial, whether or not "
        'the treatment caused it. "Serious" ones led to a hospital stay, disability, or were '
        'life-threatening.',
    ),
    ("Placebo", "A look-alike treatment with no active medicine, used so results can be compared fairly."),
)


def texts(values: Iterable[Any]) -> list[str]:
    """Each value as plain text (inert.text), blank ones dropped."""
    return [t for t in (inert.text(v) for v in values) if t]


def record_text(value: Any) -> str:
    """A registry field as its authors wrote it: ClinicalTrials.gov stores text as Markdown, so "management
    \\[1\\]" and "\\>= 18" carry escapes a reader must not see; they go before display (the template still
    HTML-escapes)."""
    return inert.text(unescape_markdown(str(value))) if value is not None else ""


def record_texts(values: Iterable[Any]) -> list[str]:
    """record_text of each value, blank ones dropped."""
    return [t for t in (record_text(v) for v in values) if t]


def paragraphs(value: Any) -> list[str]:
    """Text split on blank lines, each paragraph with its whitespace collapsed."""
    if not value:
        return []
    return texts(re.split(r"\n\s*\n", str(value)))


def shorten(text: str, limit: int, *, at_sentence: bool = True) -> str:
    """Text cut to at most limit characters: at a sentence end when one is near, else at a word; with an
    ellipsis either way (a quote cut after a full stop must not read as the whole text)."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    sentence_end = cut.rfind(". ")
    if at_sentence and sentence_end > limit // 2:
        return cut[: sentence_end + 1] + " …"
    return cut.rsplit(" ", 1)[0].rstrip(",;:") + "…"


def year_month(value: Any) -> tuple[int, int] | None:
    """(year, month) of a date or a 'YYYY-MM[-DD]' text; None for anything else."""
    day = as_date(value)
    return (day.year, day.month) if day else None


def month_words(value: Any) -> str | None:
    """'2024-02' or '2024-02-15' (or a date) as 'February 2024'; other text unchanged."""
    if value is None or value == "":
        return None
    day = as_date(value)
    return f"{day:%B %Y}" if day else inert.text(value)


def months_between(start: Any, end: Any) -> int | None:
    a, b = year_month(start), year_month(end)
    if a is None or b is None:
        return None
    months = (b[0] - a[0]) * 12 + b[1] - a[1]
    return months if months >= 0 else None


def duration(months: int) -> str:
    if months < 24:
        return f"about {months} month{'s' if months != 1 else ''}"
    years = months / 12
    return f"about {years:.0f} years" if abs(years - round(years)) < 0.25 else f"about {years:.1f} years"


def number(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return ""
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
        return f"{int(value):,}"
    if isinstance(value, float):
        return f"{value:,.1f}"
    return inert.text(value)


def value_words(key: str, value: Any) -> str:
    """A profile value in words."""
    if value is None or value == "" or value == [] or value == ():
        return ""
    if key == "preferred_phases":
        return ", ".join(phase_words([v]) for v in value)
    if key == "travel_radius_miles" and isinstance(value, int | float):
        return f"Up to {plural(round(value), 'mile')}"  # whole miles, as the cards and the chat say it
    if key == "age":
        return f"{number(value)} years"
    if isinstance(value, bool):
        return "Yes" if value else "No"
    if isinstance(value, Mapping):
        return "; ".join(f"{label(k)}: {value_words(k, v)}" for k, v in value.items() if value_words(k, v))
    if isinstance(value, list | tuple):
        return ", ".join(value_words(key, v) for v in value if value_words(key, v))
    if isinstance(value, int | float):
        return number(value)
    text = inert.text(value)
    if key in ("sex", "trial_types"):
        return text[:1].upper() + text[1:].lower()
    return text


def label(key: str) -> str:
    known = dict(_PROFILE_FIELDS)
    if key in known:
        return known[key]
    words = str(key).replace("_", " ").strip()
    return words[:1].upper() + words[1:]


def profile_rows(profile: Mapping[str, Any], intake_answers: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(label, value) rows about the patient: profile fields in a fixed order, then anything else they told
    us."""
    merged: dict[str, Any] = dict(intake_answers)
    merged.update({k: v for k, v in profile.items() if v not in (None, "", [], ())})
    if "ecog" in merged and "activity_level" in merged:
        merged.pop("ecog")  # the activity sentence already says it in words
    known = {key for key, _ in _PROFILE_FIELDS} | _HIDDEN_PROFILE_FIELDS
    others = [
        (key, label(key)) for key in sorted(merged) if key not in known and not key.startswith("dashboard_")
    ]
    rows: list[tuple[str, str]] = []
    for key, title in [*_PROFILE_FIELDS, *others]:
        shown = value_words(key, merged.get(key))
        if shown:
            rows.append((title, shown))
    return rows
