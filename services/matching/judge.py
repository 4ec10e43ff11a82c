"""One trial judged for one patient: relevance from MeSH, then the eligibility rules on its criteria (reused
as they are: services/eligibility), and the key the list is ordered by."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from services.eligibility.match import structured_criteria
from services.eligibility.parser import parse_criteria
from services.eligibility.rules import Patient, evaluate, patient_facts
from services.eligibility.scoring import Verdict, fit_score, results_from, trial_verdict
from services.matching.relevance import (
    Relevance,
    TrialRecord,
    rank_key,
    reach_rank,
    relevance,
    trial_headings,
)
from services.vocab.mesh import Mesh


@dataclass(frozen=True)
class TrialCase:
    """A trial record with what the eligibility rules read (as sql/queries/matching_trials.sql returns
    them)."""

    record: TrialRecord
    criteria: str | None = None
    minimum_age: str | None = None
    maximum_age: str | None = None
    gender: str | None = None

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> TrialCase:
        """From one row of matching_trials.sql."""
        criteria = row.get("criteria")
        inclusion = tuple(c.full_text for c in parse_criteria(criteria).inclusion) if criteria else ()
        partial = not (criteria or "").strip() or not row.get("site_count") or not row.get("mesh_list")
        record = TrialRecord(
            nct_id=str(row["nct_id"]),
            title=str(row.get("official_title") or row.get("brief_title") or ""),
            conditions=tuple(row.get("conditions") or ()),
            mesh_list=tuple(row.get("mesh_list") or ()),
            mesh_ancestors=tuple(row.get("mesh_ancestors") or ()),
            countries=tuple(row.get("countries") or ()),
            inclusion=inclusion,
            keywords=tuple(row.get("keywords") or ()),
            partial=partial,
        )
        return cls(record, criteria, row.get("minimum_age"), row.get("maximum_age"), row.get("gender"))


@dataclass(frozen=True)
class Judged:
    """A trial's verdict for one patient: eligible | uncertain | excluded | not_relevant, with reasons."""

    nct_id: str
    verdict: str
    reason: str
    relevance: Relevance
    fit_score: int | None
    key: tuple[Any, ...]


def judge(
    mesh: Mesh,
    patient: Patient,
    headings: Iterable[str],
    case: TrialCase,
    *,
    within_reach: bool | None = None,
    patient_country: str | None = None,
    miles: float | None = None,
    prominence: Mapping[str, int] | None = None,
) -> Judged:
    """Relevance first (a trial about another condition is not_relevant whatever its criteria say), then every
    criterion by the rules (a note is read as a complete record: what it does not mention is absent). With a
    note's `prominence` (heading → role rank), a trial about the presenting problem ranks before one about a
    comorbidity."""
    judged = relevance(mesh, headings, trial_headings(mesh, case.record))
    facts = patient_facts(patient)
    criteria = [
        *structured_criteria(case.minimum_age, case.maximum_age, case.gender),
        *parse_criteria(case.criteria).all,
    ]
    pairs = [(c, evaluate(c.full_text, c.kind, facts)) for c in criteria]
    results = results_from(pairs)
    verdict = trial_verdict(results, judged.relevant)
    fit = fit_score(results, verdict.verdict, criteria_missing=not (case.criteria or "").strip())
    reason = judged.reason if verdict.verdict == Verdict.NOT_RELEVANT else f"{judged.reason} {verdict.reason}"
    reach = reach_rank(within_reach, patient_country, case.record.countries)
    key = rank_key(
        verdict.verdict.value,
        judged,
        partial=case.record.partial,
        reach=reach,
        prominence=min((prominence.get(u, 0) for u in judged.about), default=0) if prominence else 0,
        fit_score=fit.score,
        miles=miles,
        nct_id=case.record.nct_id,
    )
    return Judged(case.record.nct_id, verdict.verdict.value, reason, judged, fit.score, key)
