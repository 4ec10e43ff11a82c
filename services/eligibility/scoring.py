"""Turn per-criterion labels into a fit score, a trial verdict, a ranking and a checklist of what is still unknown.

Verdict, first rule that applies wins
    1. not relevant -- the trial's conditions do not match the patient's condition;
    2. excluded -- an inclusion criterion is NOT_MET or an exclusion criterion is MET;
    3. uncertain -- some criterion is NOT_ENOUGH_INFO or NEEDS_DISCUSSION (or none could be checked);
    4. eligible -- everything checked came out in the patient's favour.

Fit score (the README's "Fit score" paragraph says the same in plain words)
    Each criterion -- the listed ones plus the registry's age and sex limits -- is *in the patient's favour*
    (an inclusion met, an exclusion that does not apply, a line that does not concern them), *against* them
    (an inclusion not met, an exclusion that applies) or *open* (not enough information, needs discussion).
    Only *informative* lines count: lines about age or sex only (the registry's structured limits too),
    consent, willingness or capacity, and pregnancy, contraception or breast-feeding are shown but do not
    raise the score (:func:`line_class`, cue words in data/eligibility/fit_score.json).  With N informative
    criteria of which F are in the patient's favour and J were judged (in favour or against):

    * not relevant, or no criteria at all: no score (None);
    * excluded: ``round(19 * F / N)``, 0-19, band "Unlikely" (0 when no line is informative);
    * otherwise ``20 + round(80 * F / N)``, 20-100 (20 when no line is informative); at most 59 when fewer
      than half were judged (J < N / 2) or when a disease-defining line (diagnosis, stage, biomarker, line of
      therapy) is still open, and exactly 20 when the criteria text is missing from our copy (only age and sex
      could be read).  59 and below is the band "Needs information", 60 and above "Good match so far"
      (value "promising").

Ranking (:func:`rank_key`)
    By verdict (eligible, uncertain, excluded, not relevant), then trials whose nearest site is within the
    patient's travel limit before those of unknown distance before those beyond it, then by fit score, then by
    distance. So a trial within reach never ranks under one that is not unless its verdict is worse.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

from services.eligibility.labels import Label
from services.eligibility.parser import Criterion, CriterionKind
from services.eligibility.plain import patient_question
from services.eligibility.rules import Judgement
from services.eligibility.vocabulary import find_concepts
from services.inert import one_line

_CUES = json.loads((Path(__file__).resolve().parents[2] / "data" / "eligibility" / "fit_score.json").read_text("utf-8"))
_UNINFORMATIVE = tuple(re.compile(p, re.I) for p in _CUES["uninformative"].values())
_AGE_SEX_WORDS = re.compile(_CUES["age_sex_words"], re.I)
_AGE_SEX_CUE = re.compile(_CUES["age_sex_cue"], re.I)
_DISEASE = re.compile(_CUES["disease_defining"], re.I)

LineClass = Literal["uninformative", "disease", "other"]


def line_class(text: str, kind: CriterionKind = "exclusion") -> LineClass:
    """Whether a criterion counts in the fit score: "uninformative" (age or sex only, consent, pregnancy),
    "disease" (diagnosis, stage, biomarker, line of therapy, or an inclusion naming a condition) or "other"
    (counts; an empty text is "other")."""
    if any(p.search(text) for p in _UNINFORMATIVE):
        return "uninformative"
    if _AGE_SEX_CUE.search(text) and len(_AGE_SEX_WORDS.sub(" ", text).split()) <= 1:
        return "uninformative"
    named = kind == "inclusion" and any(not c.absent for c in find_concepts(text))
    return "disease" if named or _DISEASE.search(text) else "other"


@dataclass(frozen=True)
class CriterionResult:
    """One judged criterion: what kind it is, its label, its text and the reason for the label."""

    kind: CriterionKind
    label: Label
    text: str = ""
    reason: str = ""


def results_from(pairs: Iterable[tuple[Criterion, Judgement]]) -> list[CriterionResult]:
    """Criterion/judgement pairs (as ``model.judge_criteria`` returns them) as results for scoring."""
    return [CriterionResult(c.kind, j.label, c.full_text, j.reason) for c, j in pairs]


def is_favourable(label: Label, kind: CriterionKind) -> bool | None:
    """True when the label helps the patient in, False when it keeps them out, None when it says neither."""
    if label == Label.MET:
        return kind == "inclusion"
    if label == Label.NOT_MET:
        return kind == "exclusion"
    return None


def pass_status(label: Label, kind: CriterionKind) -> str:
    """The label as "does the patient pass this line?": met / not_met / open (a line that does not concern the
    patient counts as passed)."""
    if label == Label.NOT_APPLICABLE:
        return "met"
    favourable = is_favourable(label, kind)
    return "open" if favourable is None else "met" if favourable else "not_met"


class FitBand(StrEnum):
    """Where a fit score sits: its range says how much it can be trusted."""

    PROMISING = "promising"
    NEEDS_INFORMATION = "needs_information"
    UNLIKELY = "unlikely"

    @property
    def display(self) -> str:
        """Short wording for a card or report."""
        return {FitBand.PROMISING: "Good match so far", FitBand.NEEDS_INFORMATION: "Needs information",
                FitBand.UNLIKELY: "Unlikely"}[self]


EXCLUDED_MAX = 19
NEEDS_INFORMATION_MIN = 20
NEEDS_INFORMATION_MAX = 59


def band_of(score: int | None) -> FitBand | None:
    """The band a score falls in (None for no score)."""
    if score is None:
        return None
    if score <= EXCLUDED_MAX:
        return FitBand.UNLIKELY
    return FitBand.NEEDS_INFORMATION if score <= NEEDS_INFORMATION_MAX else FitBand.PROMISING


@dataclass(frozen=True)
class FitScore:
    """The 0-100 fit score (or None), its band, the counts behind it, and a plain sentence explaining it."""

    score: int | None
    band: FitBand | None
    favourable: int
    judged: int
    total: int
    explanation: str
    uninformative: int = 0  # lines shown but not counted (age, sex, consent, pregnancy)


def _round(x: float) -> int:
    return math.floor(x + 0.5)


def fit_from_statuses(statuses: Sequence[str], verdict: str, *, criteria_missing: bool = False,
                      classes: Sequence[LineClass] | None = None) -> FitScore:
    """The fit score from pass statuses (met / not_met / anything else = open) and the trial's verdict.

    This is the one definition of the score (see the module docstring); :func:`fit_score` feeds it labels and
    each line's :func:`line_class` (without ``classes`` every line counts and none is disease-defining).
    """
    kinds: Sequence[LineClass] = classes if classes is not None else ["other"] * len(statuses)
    counted = [st for st, k in zip(statuses, kinds, strict=True) if k != "uninformative"]
    skipped = len(statuses) - len(counted)
    disease_open = sum(1 for st, k in zip(statuses, kinds, strict=True)
                       if k == "disease" and st not in ("met", "not_met"))
    total = len(counted)
    favourable = counted.count("met")
    judged = favourable + counted.count("not_met")
    aside = (f" {skipped} line{'s' if skipped != 1 else ''} about age, sex, consent or pregnancy "
             f"{'are' if skipped != 1 else 'is'} shown but not counted.") if skipped else ""
    if verdict == Verdict.NOT_RELEVANT:
        return FitScore(None, None, favourable, judged, total,
                        "No score: this trial studies a different condition from yours.", skipped)
    if not statuses:
        return FitScore(None, None, 0, 0, 0, "No score: this trial lists no criteria we could read.")
    if verdict == Verdict.EXCLUDED:
        score = _round(EXCLUDED_MAX * favourable / total) if total else 0
        against = max(judged - favourable, 1)
        why = (f"At least one requirement rules you out ({against} of {total} counted criteria "
               f"{'is' if against == 1 else 'are'} against you), so the fit stays in the lowest band "
               f"(0–{EXCLUDED_MAX}).")
        return FitScore(score, band_of(score), favourable, judged, total, why + aside, skipped)
    if criteria_missing:
        score = NEEDS_INFORMATION_MIN
        why = ("Only the registry's age and sex limits could be checked: the trial's criteria text is missing from "
               f"our copy, so the fit stays at {score}, the bottom of the “needs information” band.")
        return FitScore(score, band_of(score), favourable, judged, total, why, skipped)
    if not total:
        why = (f"Only lines about age, sex, consent or pregnancy could be read, and they do not show whether the "
               f"trial suits you, so the fit stays at {NEEDS_INFORMATION_MIN}, the bottom of the “needs "
               "information” band.")
        return FitScore(NEEDS_INFORMATION_MIN, band_of(NEEDS_INFORMATION_MIN), 0, 0, 0, why, skipped)
    score = NEEDS_INFORMATION_MIN + _round((100 - NEEDS_INFORMATION_MIN) * favourable / total)
    open_count = total - judged
    why = f"{favourable} of the {total} criteria {'is' if favourable == 1 else 'are'} in your favour"
    if open_count:
        why += f"; {open_count} could not be checked yet"
    if judged * 2 < total:
        score = min(score, NEEDS_INFORMATION_MAX)
        why += (f". Fewer than half could be checked, so the fit stays in the “needs information” band "
                f"(at most {NEEDS_INFORMATION_MAX})")
    elif disease_open and score > NEEDS_INFORMATION_MAX:
        score = NEEDS_INFORMATION_MAX
        why += (f". {disease_open} line{'s' if disease_open != 1 else ''} about the disease itself (diagnosis, "
                "stage, biomarkers or earlier treatment) could not be checked, so the fit stays in the “needs "
                f"information” band (at most {NEEDS_INFORMATION_MAX})")
    return FitScore(score, band_of(score), favourable, judged, total, why + "." + aside, skipped)


def fit_score(results: Iterable[CriterionResult], verdict: str | None = None, *,
              criteria_missing: bool = False) -> FitScore:
    """The fit score of judged criteria (verdict: as :func:`trial_verdict` gives it for a matching condition)."""
    results = list(results)
    if verdict is None:
        verdict = trial_verdict(results, True).verdict
    return fit_from_statuses([pass_status(r.label, r.kind) for r in results], verdict,
                             criteria_missing=criteria_missing, classes=[line_class(r.text, r.kind) for r in results])


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
        quoted = f": “{one_line(first.text, 90)}”" if first.text else ""
        return TrialVerdict(Verdict.EXCLUDED, f"{what}{quoted}{more}.")
    open_items = [r for r in results if r.label in (Label.NOT_ENOUGH_INFO, Label.NEEDS_DISCUSSION)]
    if open_items:
        count = "1 criterion needs" if len(open_items) == 1 else f"{len(open_items)} criteria need"
        return TrialVerdict(Verdict.UNCERTAIN, f"{count} more information or a talk with your doctor.")
    if not any(r.label.is_known for r in results):
        return TrialVerdict(Verdict.UNCERTAIN, "None of this trial's criteria could be checked yet.")
    return TrialVerdict(Verdict.ELIGIBLE, "Every criterion we could check is in your favour.")


VERDICT_ORDER: dict[str, int] = {Verdict.ELIGIBLE: 0, Verdict.UNCERTAIN: 1, Verdict.EXCLUDED: 2, Verdict.NOT_RELEVANT: 3}


def within_reach(miles: float | None, radius_miles: float | None) -> bool | None:
    """True when the nearest site is within the travel limit (or there is no limit), False when beyond it,
    None when the distance is unknown."""
    if radius_miles is None:
        return True
    if miles is None:
        return None
    return float(miles) <= float(radius_miles)


def reach_note(miles: float | None, radius_miles: float | None) -> str:
    """A sentence about the nearest site and the travel limit, empty when there is nothing worth saying."""
    if radius_miles is None:
        return ""
    if miles is None:
        return "No site of this trial has a known location in our copy, so its distance is unknown."
    if float(miles) <= float(radius_miles):
        return ""
    if round(float(miles)) <= round(float(radius_miles)):  # rounded, both would read the same ("62 … 62 miles")
        return (f"Just beyond your travel limit: the nearest site is about {float(miles):,.0f} miles away, a little "
                "more than you said you can travel.")
    return (f"Beyond your travel limit: the nearest site is about {float(miles):,.0f} miles away; you said you "
            f"can travel {float(radius_miles):,.0f} miles.")


def rank_key(match: Mapping[str, Any]) -> tuple[int | float | str, ...]:
    """Sort key of a saved match: a trial about another condition last; a partial record (no criteria text, sites
    or condition headings) after every full one; then the verdict; then a broad trial (many unrelated conditions)
    after one about the patient's disease, and one about the diagnosis before one only about another of the
    patient's conditions; then within reach / unknown / beyond (unknown but only in other countries counts as
    beyond); then more of the patient's conditions and a closer heading; then fit (high first); then distance;
    then NCT id (see the module docstring). A match saved without these fields (the model's) ranks as a full,
    focused record about the diagnosis."""
    verdict = str(match.get("verdict"))
    reach = {True: 0, None: 1, False: 2}.get(match.get("within_reach"), 1)
    if reach == 1 and match.get("abroad"):
        reach = 2
    score = match.get("fit_score")
    miles = match.get("distance_miles")
    return (int(verdict == "not_relevant"), int(bool(match.get("partial"))),
            VERDICT_ORDER.get(verdict, len(VERDICT_ORDER)), int(bool(match.get("broad"))),
            int(match.get("about_diagnosis") is False), reach, -int(match.get("conditions_matched") or 0),
            -int(match.get("closeness") or 0), -(score if isinstance(score, int) else -1),
            float(miles) if isinstance(miles, int | float) else math.inf, str(match.get("nct_id")))


@dataclass(frozen=True)
class Checklist:
    """What to bring and what to ask, derived from the criteria that are still open.

    ``questions`` are phrased as a patient would ask them; ``topics`` gives each one's topic (same order).
    """

    records: tuple[str, ...]
    questions: tuple[str, ...]
    topics: tuple[str, ...] = ()


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
        r"\b(prior(?!\s+to\b)|previous(?:ly)?|received|treated|treatments?|therap(?:y|ies)|chemotherap\w*|"
        r"radiotherap\w*|radiation|surger(?:y|ies)|surgical|operations?|medications?|medicines?|drugs?|doses?|"
        r"lines? of|regimens?|vaccin\w*|transplant\w*)\b", re.I)),
    ("Lung function test results (spirometry)", re.compile(
        r"\b(FEV1|FVC|spirometr\w*|lung function|pulmonary function|DLCO)\b", re.I)),
)


def gap_checklist(results: Iterable[CriterionResult], limit: int = 12) -> Checklist:
    """Records to bring and the questions a patient would ask (services.eligibility.plain) for the criteria still
    labelled unknown or 'ask your doctor'; questions on one topic that say the same thing are asked once."""
    records: dict[str, None] = {}
    questions: dict[str, str] = {}
    for result in results:
        if result.label not in (Label.NOT_ENOUGH_INFO, Label.NEEDS_DISCUSSION) or not result.text.strip():
            continue
        for record, pattern in _RECORD_KINDS:
            if pattern.search(result.text):
                records[record] = None
        question = patient_question(result.text, result.kind)
        if question is not None:
            questions.setdefault(question.text, question.topic)
    asked = list(questions.items())[:limit]
    return Checklist(tuple(list(records)[:limit]), tuple(q for q, _ in asked), tuple(t for _, t in asked))
