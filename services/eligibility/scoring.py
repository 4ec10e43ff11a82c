"""Turn per-criterion labels into a fit score, a trial verdict and a checklist of what is still unknown.

Fit score
    ``round(favourable / evaluable * 100)`` (halves round up), where

    * *evaluable* criteria are those labelled MET or NOT_MET -- criteria labelled NOT_ENOUGH_INFO,
      NEEDS_DISCUSSION or NOT_APPLICABLE are left out of both counts;
    * a criterion is *favourable* when it helps the patient in: an inclusion criterion that is MET,
      or an exclusion criterion that is NOT_MET (the exclusion does not apply).

    With no evaluable criteria there is no score (``None``) and a sentence says why.

Verdict, first rule that applies wins
    1. not relevant -- the trial's conditions do not match the patient's condition;
    2. excluded -- an inclusion criterion is NOT_MET or an exclusion criterion is MET;
    3. uncertain -- some criterion is NOT_ENOUGH_INFO or NEEDS_DISCUSSION (or none could be checked);
    4. eligible -- everything checked came out in the patient's favour.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from services.eligibility.labels import Label
from services.eligibility.parser import Criterion, CriterionKind
from services.eligibility.rules import Judgement


@dataclass(frozen=True)
class CriterionResult:
    """One judged criterion: what kind it is, its label, its text and the reason for the label."""

    kind: CriterionKind
    label: Label
    text: str = ""
    reason: str = ""


def results_from(pairs: Iterable[tuple[Criterion, Judgement]]) -> list[CriterionResult]:
    """Criterion/judgement pairs (as ``rules.evaluate_criteria`` returns them) as results for scoring."""
    return [CriterionResult(c.kind, j.label, c.full_text, j.reason) for c, j in pairs]


def is_favourable(label: Label, kind: CriterionKind) -> bool | None:
    """True when the label helps the patient in, False when it keeps them out, None when it says neither."""
    if label == Label.MET:
        return kind == "inclusion"
    if label == Label.NOT_MET:
        return kind == "exclusion"
    return None


@dataclass(frozen=True)
class FitScore:
    """The 0-100 fit score (or None), the counts behind it, and a plain sentence explaining it."""

    score: int | None
    favourable: int
    evaluable: int
    explanation: str


def fit_score(results: Iterable[CriterionResult]) -> FitScore:
    """Share of the checkable criteria that came out in the patient's favour, as a whole number 0-100."""
    results = list(results)
    evaluable = [r for r in results if r.label.is_known]
    favourable = sum(1 for r in evaluable if is_favourable(r.label, r.kind))
    if not evaluable:
        if not results:
            why = "No score: this trial lists no criteria we could read."
        else:
            why = (
                f"No score: none of the {len(results)} criteria could be checked against what we know yet, "
                "so they are listed as questions instead."
            )
        return FitScore(None, 0, 0, why)
    score = math.floor(favourable * 100 / len(evaluable) + 0.5)
    unknown = len(results) - len(evaluable)
    tail = f" {unknown} other criteria could not be checked and do not count." if unknown else ""
    return FitScore(
        score,
        favourable,
        len(evaluable),
        f"{favourable} of the {len(evaluable)} criteria we could check are in your favour.{tail}",
    )


class Verdict(StrEnum):
    """The trial-level outcome for one patient."""

    ELIGIBLE = "eligible"
    EXCLUDED = "excluded"
    UNCERTAIN = "uncertain"
    NOT_RELEVANT = "not_relevant"

    @property
    def display(self) -> str:
        """Short wording for a trial card."""
        return {
            Verdict.ELIGIBLE: "Looks eligible",
            Verdict.EXCLUDED: "Likely not eligible",
            Verdict.UNCERTAIN: "Needs more information",
            Verdict.NOT_RELEVANT: "Not for your condition",
        }[self]


@dataclass(frozen=True)
class TrialVerdict:
    """A verdict and the plain sentence that explains it."""

    verdict: Verdict
    reason: str


def _short(text: str, limit: int = 90) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def trial_verdict(results: Iterable[CriterionResult], condition_matches: bool) -> TrialVerdict:
    """Verdict with precedence not relevant > excluded > uncertain > eligible (see the module docstring)."""
    results = list(results)
    if not condition_matches:
        return TrialVerdict(Verdict.NOT_RELEVANT, "This trial studies a different condition from yours.")
    blocking = [r for r in results if is_favourable(r.label, r.kind) is False]
    if blocking:
        first = blocking[0]
        what = "An inclusion requirement is not met" if first.kind == "inclusion" else "An exclusion applies"
        more = f" (and {len(blocking) - 1} more)" if len(blocking) > 1 else ""
        quoted = f": “{_short(first.text)}”" if first.text else ""
        return TrialVerdict(Verdict.EXCLUDED, f"{what}{quoted}{more}.")
    open_items = [r for r in results if r.label in (Label.NOT_ENOUGH_INFO, Label.NEEDS_DISCUSSION)]
    if open_items:
        count = "1 criterion needs" if len(open_items) == 1 else f"{len(open_items)} criteria need"
        return TrialVerdict(Verdict.UNCERTAIN, f"{count} more information or a talk with your doctor.")
    if not any(r.label.is_known for r in results):
        return TrialVerdict(Verdict.UNCERTAIN, "None of this trial's criteria could be checked yet.")
    return TrialVerdict(Verdict.ELIGIBLE, "Every criterion we could check is in your favour.")


@dataclass(frozen=True)
class Checklist:
    """What to bring and what to ask, derived from the criteria that are still open."""

    records: tuple[str, ...]
    questions: tuple[str, ...]

    @property
    def empty(self) -> bool:
        """True when nothing is left to find out."""
        return not self.records and not self.questions


# Kinds of record a criterion's wording points to, in the order they are listed.
_RECORD_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("Recent lab results (blood and urine tests)", re.compile(
        r"\b(labs?|laborator\w*|blood tests?|h(?:a)?emoglobin|hgb|platelets?|neutrophils?|leukocytes?|wbc|anc|"
        r"creatinine|bilirubin|ALT|AST|ULN|e?GFR|clearance|HbA1c|glucose|INR|PTT|albumin|serum|plasma|urine|"
        r"potassium|sodium|cholesterol|LDL|HDL|triglycerides?|TSH|PSA|testosterone|counts?|titers?)\b", re.I)),
    ("Scan and imaging reports (CT, MRI, X-ray, ultrasound)", re.compile(
        r"\b(CT|MRI|PET|scans?|x-?rays?|imaging|ultrasound|sonograph\w*|radiograph\w*|radiolog\w*|mammogra\w*|"
        r"angiogra\w*|DEXA|bone density|measurable (?:disease|lesions?)|RECIST|lesions?)\b", re.I)),
    ("Heart test results (ECG, echocardiogram)", re.compile(
        r"\b(ECG|EKG|electrocardiogra\w*|echocardiogra\w*|LVEF|ejection fraction|QTc?|MUGA|holter|telemetry)\b",
        re.I)),
    ("Pathology and tumour test reports (biopsy, biomarkers, stage)", re.compile(
        r"\b(histolog\w*|patholog\w*|biops\w*|cytolog\w*|mutations?|EGFR|ALK|ROS1|HER-?2|PD-?L1|BRCA\d?|KRAS|"
        r"biomarkers?|genetic|genotyp\w*|receptor|stage|staging|grade|Gleason|TNM|metasta\w*)\b", re.I)),
    ("Treatment history (medicines, surgery, radiation, with dates)", re.compile(
        r"\b(prior|previous(?:ly)?|received|treated|treatments?|therap(?:y|ies)|chemotherap\w*|radiotherap\w*|"
        r"radiation|surger(?:y|ies)|surgical|operations?|medications?|medicines?|drugs?|doses?|lines? of|"
        r"regimens?|vaccin\w*|transplant\w*)\b", re.I)),
    ("Lung function test results (spirometry)", re.compile(
        r"\b(FEV1|FVC|spirometr\w*|lung function|pulmonary function|DLCO)\b", re.I)),
)
_ACTIVITY = re.compile(r"\b(ECOG|Karnofsky|Karnovsky|KPS|Lansky|performance status|Zubrod)\b", re.I)
_PREGNANCY = re.compile(r"\b(pregnan\w*|contracept\w*|child[- ]?bearing|breast[- ]?feed\w*|lactat\w*|birth control)\b", re.I)


def gap_checklist(results: Iterable[CriterionResult], limit: int = 12) -> Checklist:
    """Records to bring and questions to ask for the criteria still labelled unknown or 'ask your doctor'."""
    records: dict[str, None] = {}
    questions: dict[str, None] = {}
    for result in results:
        if result.label not in (Label.NOT_ENOUGH_INFO, Label.NEEDS_DISCUSSION) or not result.text.strip():
            continue
        text = result.text
        matched = False
        for record, pattern in _RECORD_KINDS:
            if pattern.search(text):
                records[record] = None
                matched = True
        if _ACTIVITY.search(text):
            questions["How would my doctor rate my daily activity level (ECOG performance status)?"] = None
            matched = True
        if _PREGNANCY.search(text):
            questions["Does the trial's pregnancy or birth-control requirement apply to me?"] = None
            matched = True
        if result.label == Label.NEEDS_DISCUSSION or not matched:
            questions[f"Do I meet this {result.kind} criterion: “{_short(text)}”?"] = None
    return Checklist(tuple(list(records)[:limit]), tuple(list(questions)[:limit]))
