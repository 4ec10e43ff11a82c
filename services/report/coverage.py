"""The report's first page: what our copy of the registry is, what the search could not see, and what to do
when no trial in the report fits.

A patient reading "we found 43 trials" takes it for the registry. The shipped sample is a few per cent of it,
and a trial whose sites have no coordinates in our copy is invisible to every search limited by distance. The
numbers come from the database (`DatabaseBackend.copy_coverage`, sql/queries/report_copy_coverage.sql); only
the registry's own size is a fact from data/report/registry.json.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import date
from functools import cache
from pathlib import Path
from typing import Any, TypedDict

from services import inert
from services.freshness import as_date
from services.trials import plural

REGISTRY_FILE = Path(__file__).resolve().parents[2] / "data" / "report" / "registry.json"
# Verdicts that leave nothing to pursue (services.eligibility.scoring.Verdict values).
OFF_VERDICTS = {
    "not_relevant": "seem to be about another condition than yours",
    "excluded": "have a line that rules you out",
}


class CopyCoverage(TypedDict, total=False):
    """What the database says about itself and about the patient's condition (DatabaseBackend.copy_coverage).
    """

    studies: int
    newest_update: date | None
    oldest_update: date | None
    condition: str  # the search's condition, as the patient gave it
    matching: (
        int  # open trials in our copy for that condition (that take the patient's age and sex, when known)
    )
    for_patient: bool  # the count was limited to the patient's age and sex
    without_located_site: int  # of those, the ones with no site that has coordinates


@cache
def registry() -> dict[str, Any]:
    """The registry's size and the share of it above which our copy counts as the whole registry."""
    data: dict[str, Any] = json.loads(REGISTRY_FILE.read_text(encoding="utf-8"))
    return data


def _month(day: Any) -> str:
    found = as_date(day)
    return f"{found:%B %Y}" if found else ""


def copy_sentence(coverage: Mapping[str, Any]) -> str:
    """'This report searched a sample of 18,354 studies of about 575,000 in the registry (3%) …'."""
    studies = int(coverage.get("studies") or 0)
    whole = int(registry()["registry_studies"])
    newest, oldest = _month(coverage.get("newest_update")), _month(coverage.get("oldest_update"))
    dates = (
        f" Its records were last updated between {oldest} and {newest}; a trial's status or sites may have "
        "changed since."
        if newest and oldest and newest != oldest
        else f" Its newest record was updated in {newest}."
        if newest
        else ""
    )
    if studies >= whole * float(registry()["whole_registry_share"]):
        return (
            f"This report searched this app's copy of ClinicalTrials.gov: {studies:,} studies, about the "
            f"whole registry.{dates}"
        )
    share = 100.0 * studies / whole if whole else 0.0
    return (
        f"This report searched this app's copy of ClinicalTrials.gov, which is a sample: {studies:,} studies "
        f"of about {whole:,} in the registry ({share:.0f}%). A trial that is not in the sample could not be "
        f"found, however well it might fit you.{dates}"
    )


def unseen_sentence(coverage: Mapping[str, Any], facts: Mapping[str, Any]) -> str:
    """How many open trials for the patient's condition have no located site, and whether the searches saw
    them."""
    matching, hidden = int(coverage.get("matching") or 0), int(coverage.get("without_located_site") or 0)
    condition = inert.one_line(coverage.get("condition"), 120)
    if not condition or not matching:
        return ""
    head = f"Our copy has {plural(matching, 'open trial')} for “{condition}”" + (
        f" that take{'s' if matching == 1 else ''} someone of your age and sex"
        if coverage.get("for_patient")
        else ""
    )
    if not hidden:
        return f"{head}; every one of them has at least one site with a known location."
    searches = list(facts.get("searches") or [])
    anywhere = any(s.get("radius_miles") is None for s in searches)
    limited = [s for s in searches if s.get("radius_miles") is not None]
    them, far = ("it", "its distance is") if hidden == 1 else ("them", "their distances are")
    seen = (
        f"the search at any distance listed {them}, but {far} not known"
        if anywhere
        else f"none of the searches for this report could list {them}"
    )
    radius = facts.get("radius_miles")
    within = (
        f"A search within {plural(round(radius), 'mile')} cannot see {them}"
        if limited and isinstance(radius, int | float)
        else f"A search limited by distance cannot see {them}"
    )
    which = (
        "none of them has a"
        if hidden == matching and matching > 1
        else "it has no"
        if matching == 1
        else f"{hidden:,} of them {'has' if hidden == 1 else 'have'} no"
    )
    return (
        f"{head}, and {which} site with a known location in our copy (the registry may list sites our copy "
        f"lacks). {within}; {seen}. Look {them} up on ClinicalTrials.gov, which lists each trial's sites."
    )


def nothing_fits(trials: Sequence[Mapping[str, Any]], diagnosis: str, whole: int) -> dict[str, Any] | None:
    """When every trial in the report was judged off-condition or excluded: what was found, and what to do."""
    verdicts = [str(t.get("verdict") or "") for t in trials]
    if not verdicts or any(v not in OFF_VERDICTS for v in verdicts):
        return None
    parts = [
        f"{sum(1 for v in verdicts if v == key)} {words}"
        for key, words in OFF_VERDICTS.items()
        if key in verdicts
    ]
    everyone = "The trial" if len(verdicts) == 1 else f"All {len(verdicts)} trials"
    condition = inert.one_line(diagnosis, 120) or "your condition"
    return {
        "headline": f"{everyone} in this report {'looks' if len(verdicts) == 1 else 'look'} unlikely to fit "
                    "you.",
        "detail": f"By our reading of their records, {' and '.join(parts)}. This may be our mistake, and it "
        "may mean that our copy holds no better trial for you.",
        "steps": [
            f"Search ClinicalTrials.gov itself for “{condition}”: it has all of about {whole:,} studies, and "
            "trials added or updated since our copy was made.",
            "Ask your specialist which trials they know of, including ones at your own hospital.",
            "Check the diagnosis in your answers: a more exact name (type, stage, what it has already been "
            "treated with) finds different trials.",
        ],
    }


def coverage_view(
    coverage: Mapping[str, Any] | None,
    facts: Mapping[str, Any],
    trials: Sequence[Mapping[str, Any]],
    diagnosis: str,
) -> dict[str, Any]:
    """The first page's "What this report could and could not see" box and the nothing-fits notice."""
    whole = int(registry()["registry_studies"])
    return {
        "copy_text": copy_sentence(coverage) if coverage and coverage.get("studies") else "",
        "unseen_text": unseen_sentence(coverage, facts) if coverage else "",
        "nothing_fits": nothing_fits(trials, diagnosis, whole),
    }
