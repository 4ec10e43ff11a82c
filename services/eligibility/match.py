"""A saved-match record (the shape save_matched_trials stores and the report reads) built from judged criteria.

Two conventions meet here.  A :class:`~services.eligibility.labels.Label` answers "is what the line
describes true of the patient?", so an exclusion that is MET keeps the patient out.  A saved match's
criterion ``status`` answers "does the patient pass this line?", so that same exclusion is ``not_met``.
:func:`criterion_status` is the one place that turns one into the other.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from services.eligibility.labels import Label
from services.eligibility.parser import Criterion, CriterionKind
from services.eligibility.plain import plain_criterion
from services.eligibility.rules import Judgement
from services.eligibility.scoring import fit_score, gap_checklist, pass_status, results_from, trial_verdict

# The saved statuses of a line that is still open: neither passed nor failed, to settle with the care team.
OPEN_CRITERION_STATUSES = frozenset({"needs_discussion", "not_enough_information"})


def criterion_status(label: Label | str, kind: CriterionKind) -> str:
    """The saved-match status for a label: met / not_met / needs_discussion / not_enough_information."""
    label = Label(label)
    if label == Label.NEEDS_DISCUSSION:
        return "needs_discussion"
    if label == Label.NOT_ENOUGH_INFO:
        return "not_enough_information"
    return pass_status(label, kind)  # a line that cannot concern the patient does not stand in their way


def structured_criteria(min_age: str | None, max_age: str | None, sex: str | None) -> list[Criterion]:
    """The registry's structured age and sex limits ("18 Years", "FEMALE") as inclusion criteria the rules can judge.

    They are numbered 0: they come from the record's fields, not from its criteria list.
    """
    def age(text: str | None) -> str | None:
        if text is None or text.strip().upper() in ("", "N/A", "NA"):
            return None
        return " ".join(text.split()).lower()

    low, high = age(min_age), age(max_age)
    out: list[Criterion] = []
    if low and high:
        out.append(Criterion(0, f"Age {low} to {high}", "inclusion"))
    elif low:
        out.append(Criterion(0, f"Age {low} or older", "inclusion"))
    elif high:
        out.append(Criterion(0, f"Age {high} or younger", "inclusion"))
    if sex and sex.strip().upper() in ("FEMALE", "MALE"):
        out.append(Criterion(0, f"Sex: {sex.strip().lower()}", "inclusion"))
    return out


def match_record(
    nct_id: str,
    pairs: Iterable[tuple[Criterion, Judgement]],
    *,
    condition_matches: bool = True,
    title: str | None = None,
    status: str | None = None,
    phases: Sequence[str] = (),
    summary: str | None = None,
    what_to_expect: str | None = None,
    nearest_site: str | None = None,
) -> dict[str, Any]:
    """The match for one trial: fit score, verdict, per-criterion statuses and the unknowns checklist.

    Without a summary, the verdict's reason and the fit score's explanation stand in for one.  The fit
    score is None when no criterion could be checked.
    """
    pairs = list(pairs)
    results = results_from(pairs)
    verdict = trial_verdict(results, condition_matches)
    fit = fit_score(results, verdict.verdict)
    checklist = gap_checklist(results)
    record: dict[str, Any] = {
        "nct_id": nct_id,
        "title": title,
        "status": status,
        "phases": list(phases),
        "fit_score": fit.score,
        "fit_band": fit.band.value if fit.band else None,
        "fit_explanation": fit.explanation,
        "verdict": verdict.verdict.value,
        "summary": summary if summary else f"{verdict.reason} {fit.explanation}",
        "criteria": [
            {
                "type": criterion.kind,
                "criterion": criterion.full_text,
                "status": criterion_status(judgement.label, criterion.kind),
                "plain": plain_criterion(criterion.full_text, criterion.kind),
                "reason": judgement.reason,
            }
            for criterion, judgement in pairs
        ],
        "unknowns": [{"kind": "record", "text": r} for r in checklist.records]
        + [{"kind": "question", "text": q, "topic": t}
           for q, t in zip(checklist.questions, checklist.topics, strict=True)],
    }
    if what_to_expect:
        record["what_to_expect"] = what_to_expect
    if nearest_site:
        record["nearest_site"] = nearest_site
    return record
