"""Tests for fit score, verdict and checklist (services/eligibility/scoring.py) and the label mapping."""

from __future__ import annotations

import pytest

from services.eligibility.labels import BENCHMARK_LABELS, Label, from_benchmark, to_benchmark
from services.eligibility.parser import Criterion
from services.eligibility.rules import Judgement
from services.eligibility.scoring import (
    Checklist,
    CriterionResult,
    FitScore,
    TrialVerdict,
    Verdict,
    fit_score,
    gap_checklist,
    is_favourable,
    results_from,
    trial_verdict,
)
from services.errors import BadInput

INC, EXC = "inclusion", "exclusion"


def r(kind: str, label: Label, text: str = "") -> CriterionResult:
    return CriterionResult(kind, label, text)  # type: ignore[arg-type]


# --- Label mapping ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("label", "kind", "benchmark"),
    [
        (Label.MET, INC, "included"),
        (Label.NOT_MET, INC, "not included"),
        (Label.NOT_ENOUGH_INFO, INC, "not enough information"),
        (Label.NEEDS_DISCUSSION, INC, "not enough information"),
        (Label.NOT_APPLICABLE, INC, "not applicable"),
        (Label.MET, EXC, "excluded"),
        (Label.NOT_MET, EXC, "not excluded"),
        (Label.NOT_ENOUGH_INFO, EXC, "not enough information"),
        (Label.NEEDS_DISCUSSION, EXC, "not enough information"),
        (Label.NOT_APPLICABLE, EXC, "not applicable"),
    ],
)
def test_eligibility_scoring_label_to_benchmark(label: Label, kind: str, benchmark: str) -> None:
    assert to_benchmark(label, kind) == benchmark


def test_eligibility_scoring_label_round_trip() -> None:
    for kind, names in BENCHMARK_LABELS.items():
        assert [to_benchmark(from_benchmark(name, kind), kind) for name in names] == list(names)
    assert from_benchmark("excluded", EXC) == Label.MET
    assert from_benchmark(" Not Excluded ", EXC) == Label.NOT_MET
    assert from_benchmark("not enough information", INC) == Label.NOT_ENOUGH_INFO


def test_eligibility_scoring_label_mapping_refuses_wrong_kind_or_label() -> None:
    with pytest.raises(BadInput, match="not a TrialGPT label for an inclusion criterion"):
        from_benchmark("excluded", INC)
    with pytest.raises(BadInput):
        to_benchmark(Label.MET, "both")


def test_eligibility_scoring_label_display() -> None:
    assert [label.display for label in Label] == [
        "Met", "Not met", "Ask your doctor", "Not enough information", "Does not apply to you"
    ]


# --- Fit score --------------------------------------------------------------------------------------


def test_eligibility_scoring_favourable_means_helps_the_patient_in() -> None:
    assert [is_favourable(label, INC) for label in Label] == [True, False, None, None, None]
    assert [is_favourable(label, EXC) for label in Label] == [False, True, None, None, None]


def test_eligibility_scoring_fit_score_counts_only_evaluable() -> None:
    results = [
        r(INC, Label.MET),
        r(INC, Label.MET),
        r(INC, Label.NOT_ENOUGH_INFO),
        r(EXC, Label.NOT_MET),
        r(EXC, Label.MET),
        r(EXC, Label.NOT_APPLICABLE),
        r(EXC, Label.NEEDS_DISCUSSION),
    ]
    assert fit_score(results) == FitScore(
        75, 3, 4, "3 of the 4 criteria we could check are in your favour. 3 other criteria could not be checked "
        "and do not count."
    )


def test_eligibility_scoring_fit_score_rounds_halves_up() -> None:
    # 1 of 8 = 12.5 -> 13 (Python's round() would give 12).
    results = [r(INC, Label.MET)] + [r(INC, Label.NOT_MET)] * 7
    assert fit_score(results).score == 13
    assert fit_score([r(INC, Label.MET), r(EXC, Label.NOT_MET), r(INC, Label.NOT_MET)]).score == 67


def test_eligibility_scoring_no_evaluable_criteria() -> None:
    assert fit_score([r(INC, Label.NOT_ENOUGH_INFO), r(EXC, Label.NOT_APPLICABLE)]) == FitScore(
        None, 0, 0, "No score: none of the 2 criteria could be checked against what we know yet, so they are "
        "listed as questions instead."
    )
    assert fit_score([]) == FitScore(None, 0, 0, "No score: this trial lists no criteria we could read.")


def test_eligibility_scoring_all_favourable_is_100() -> None:
    assert fit_score([r(INC, Label.MET), r(EXC, Label.NOT_MET)]).score == 100


# --- Verdict ----------------------------------------------------------------------------------------


def test_eligibility_scoring_verdict_precedence() -> None:
    excluded = [r(INC, Label.MET), r(EXC, Label.MET, "Pregnancy"), r(INC, Label.NOT_ENOUGH_INFO)]
    assert trial_verdict(excluded, condition_matches=False) == TrialVerdict(
        Verdict.NOT_RELEVANT, "This trial studies a different condition from yours."
    )
    assert trial_verdict(excluded, condition_matches=True) == TrialVerdict(
        Verdict.EXCLUDED, "An exclusion applies: “Pregnancy”."
    )
    uncertain = [r(INC, Label.MET), r(EXC, Label.NOT_MET), r(INC, Label.NEEDS_DISCUSSION)]
    assert trial_verdict(uncertain, True) == TrialVerdict(
        Verdict.UNCERTAIN, "1 criterion needs more information or a talk with your doctor."
    )
    eligible = [r(INC, Label.MET), r(EXC, Label.NOT_MET), r(EXC, Label.NOT_APPLICABLE)]
    assert trial_verdict(eligible, True) == TrialVerdict(
        Verdict.ELIGIBLE, "Every criterion we could check is in your favour."
    )


def test_eligibility_scoring_exclusion_met_excludes() -> None:
    results = [r(INC, Label.MET, "Age 18 or older"), r(EXC, Label.MET, "Known HIV infection")]
    assert trial_verdict(results, True) == TrialVerdict(Verdict.EXCLUDED, "An exclusion applies: “Known HIV infection”.")


def test_eligibility_scoring_inclusion_not_met_excludes_and_counts_the_rest() -> None:
    results = [r(INC, Label.NOT_MET, "Age 18-40"), r(INC, Label.NOT_MET, "Women only"), r(EXC, Label.NOT_MET)]
    assert trial_verdict(results, True) == TrialVerdict(
        Verdict.EXCLUDED, "An inclusion requirement is not met: “Age 18-40” (and 1 more)."
    )


def test_eligibility_scoring_not_applicable_does_not_block() -> None:
    results = [r(INC, Label.MET), r(EXC, Label.NOT_APPLICABLE, "Pregnancy")]
    assert trial_verdict(results, True).verdict == Verdict.ELIGIBLE
    assert fit_score(results).score == 100


def test_eligibility_scoring_all_unknown_is_uncertain() -> None:
    results = [r(INC, Label.NOT_ENOUGH_INFO), r(EXC, Label.NOT_ENOUGH_INFO)]
    assert trial_verdict(results, True).verdict == Verdict.UNCERTAIN
    assert trial_verdict([], True) == TrialVerdict(Verdict.UNCERTAIN, "None of this trial's criteria could be checked yet.")


# --- Checklist ---------------------------------------------------------------------------------------


def test_eligibility_scoring_checklist_from_unknown_criteria() -> None:
    results = [
        r(INC, Label.NOT_ENOUGH_INFO, "Adequate renal function (creatinine clearance >= 60 mL/min)"),
        r(INC, Label.NOT_ENOUGH_INFO, "Measurable disease on CT or MRI per RECIST 1.1"),
        r(EXC, Label.NOT_ENOUGH_INFO, "Prior treatment with an EGFR inhibitor"),
        r(INC, Label.NOT_ENOUGH_INFO, "ECOG performance status 0-1"),
        r(EXC, Label.NEEDS_DISCUSSION, "Uncontrolled hypertension"),
        r(INC, Label.NOT_ENOUGH_INFO, "Able to speak English"),
        r(INC, Label.MET, "Platelets >= 100,000/mm3"),  # known: nothing to bring for it
    ]
    assert gap_checklist(results) == Checklist(
        records=(
            "Recent lab results (blood and urine tests)",
            "Scan and imaging reports (CT, MRI, X-ray, ultrasound)",
            "Pathology and tumour test reports (biopsy, biomarkers, stage)",
            "Treatment history (medicines, surgery, radiation, with dates)",
        ),
        questions=(
            "How would my doctor rate my daily activity level (ECOG performance status)?",
            "Do I meet this exclusion criterion: “Uncontrolled hypertension”?",
            "Do I meet this inclusion criterion: “Able to speak English”?",
        ),
    )


def test_eligibility_scoring_checklist_empty_when_all_known() -> None:
    checklist = gap_checklist([r(INC, Label.MET, "Age 18+"), r(EXC, Label.NOT_APPLICABLE, "Pregnancy")])
    assert checklist == Checklist((), ())
    assert checklist.empty


def test_eligibility_scoring_results_from_pairs() -> None:
    criterion = Criterion(1, "Age:", "inclusion", ("18 or older",))
    judgement = Judgement(Label.MET, "Age 40 years is within the range at least 18 years.", (0,))
    assert results_from([(criterion, judgement)]) == [
        CriterionResult("inclusion", Label.MET, "Age: 18 or older", "Age 40 years is within the range at least 18 years.")
    ]
