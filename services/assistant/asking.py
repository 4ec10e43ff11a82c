"""The care team's question about one open criterion, worded from data/report/questions.json.

A question names what the line is about (a test, a gene, a scale) and what the patient told the role (their
diagnosis, treatments, other conditions), so two lines rarely get the same words. The wording is data: by the
kind of criterion (careteam.category_of) and whether it is an inclusion or an exclusion line, the first
template whose slots are all known. Lines the rules judge themselves (age and sex limits) get no question.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from services.eligibility.parser import unescape_markdown
from services.eligibility.plain import _LAB_VALUE
from services.inert import one_line, text

QUESTIONS_FILE = Path(__file__).resolve().parents[2] / "data" / "report" / "questions.json"
_TERM = re.compile(r"\b[A-Z][A-Za-z]*[A-Z0-9][A-Za-z0-9-]*\b")  # CD19, KMT2A, GVHD, HbA1c, QTc, RECIST
_SCALES = (
    ("Lansky", re.compile(r"\blansky\b", re.I), 0, 16),
    ("Karnofsky", re.compile(r"\bkarnofsky|\bKPS\b", re.I), 16, 200),
    ("ECOG", re.compile(r"\bECOG\b|\bZubrod\b|WHO performance", re.I), 0, 200),
)


@cache
def wording() -> dict[str, Any]:
    """The templates and the stop-list of terms (data/report/questions.json)."""
    data: dict[str, Any] = json.loads(QUESTIONS_FILE.read_text(encoding="utf-8"))
    return data


def _listed(profile: Mapping[str, Any], *keys: str) -> str:
    values: list[str] = []
    for key in keys:
        value = profile.get(key)
        values += (
            [text(v) for v in value] if isinstance(value, list | tuple) else [text(value)] if value else []
        )
    values = [v for v in values if v]
    if not values:
        return ""
    shown = values[:3] + ([f"{len(values) - 3} more"] if len(values) > 3 else [])
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]


def _age(profile: Mapping[str, Any]) -> float | None:
    age = profile.get("age")
    return float(age) if isinstance(age, int | float) and not isinstance(age, bool) else None


def _scale(line: str, age: float | None) -> str:
    """The activity scale the line names that fits the patient's age (Lansky under 16), else the first it
    names."""
    named = [(name, low, high) for name, pattern, low, high in _SCALES if pattern.search(line)]
    fitting = [name for name, low, high in named if age is not None and low <= age < high]
    return (fitting or [name for name, _, _ in named] or [""])[0]


def _person(profile: Mapping[str, Any]) -> str:
    sex, age = text(profile.get("sex")).lower(), _age(profile)
    child = age is not None and age < 18
    return {"male": "boy" if child else "man", "female": "girl" if child else "woman"}.get(sex, "")


def slots(line: str, profile: Mapping[str, Any]) -> dict[str, str]:
    """What a template may name: from the line (term, analyte, lab, scale) and from the patient (the rest)."""
    clean = " ".join(unescape_markdown(line).split())
    stop = set(wording()["term_stopwords"])
    terms = [t for t in _TERM.findall(clean) if t.upper() not in stop]
    lab = _LAB_VALUE.search(clean)
    return {
        "term": terms[0] if terms else "",
        "analyte": lab.group("name") if lab else "",
        "lab": one_line(lab.group(0), 80) if lab else "",
        "scale": _scale(clean, _age(profile)),
        "diagnosis": one_line(profile.get("diagnosis"), 80),
        "my_treatments": _listed(profile, "treatments"),
        "my_conditions": _listed(profile, "other_conditions"),
        "my_medicines": _listed(profile, "medicines", "medications"),
        "person": _person(profile),
    }


def question(category: str, kind: str, line: str, profile: Mapping[str, Any]) -> str | None:
    """The question for one open line (None for a kind without templates)."""
    kinds = wording()["templates"].get(category) or {}
    templates = kinds.get("exclusion" if kind == "exclusion" else "inclusion") or []
    known = slots(line, profile)
    for template in templates:
        needed = [name for _, name, _, _ in string.Formatter().parse(template["text"]) if name]
        if all(known.get(name) for name in needed):
            return str(template["text"]).format(**known)
    return None
