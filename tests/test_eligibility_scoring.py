"""Tests for fit score, verdict and checklist (services/eligibility/scoring.py) and the label mapping."""

from __future__ import annotations

import re

import pytest

from services.eligibility.labels import BENCHMARK_LABELS, Label, to_benchmark
from services.eligibility.parser import Criterion
from services.eligibility.rules import Judgement
from services.eligibility.scoring import (
    NEEDS_INFORMATION_MAX,
    NEEDS_INFORMATION_MIN,
    Checklist,
    CriterionResult,
    FitBand,
    FitScore,
    TrialVerdict,
    Verdict,
    band_of,
    fit_from_statuses,
    fit_score,
    gap_checklist,
    is_favourable,
    line_class,
    rank_key,
    reach_note,
    results_from,
    trial_verdict,
    within_reach,
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


def test_eligibility_scoring_every_benchmark_label_is_one_of_ours() -> None:
    for kind, names in BENCHMARK_LABELS.items():
        assert sorted({to_benchmark(label, kind) for label in Label}) == sorted(names)


def test_eligibility_scoring_label_mapping_refuses_wrong_kind_or_label() -> None:
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


def test_eligibility_scoring_fit_score_counts_favourable_share_of_all_criteria() -> None:
    # 6 criteria, 4 judged in favour (NOT_APPLICABLE counts as passed), 2 open: 20 + 80 * 4/6 = 73.3 -> 73.
    results = [
        r(INC, Label.MET),
        r(INC, Label.MET),
        r(INC, Label.NOT_ENOUGH_INFO),
        r(EXC, Label.NOT_MET),
        r(EXC, Label.NOT_APPLICABLE),
        r(EXC, Label.NEEDS_DISCUSSION),
    ]
    assert fit_score(results) == FitScore(
        73, FitBand.PROMISING, 4, 4, 6, "4 of the 6 criteria are in your favour; 2 could not be checked yet."
    )


def test_eligibility_scoring_one_criterion_in_favour_is_said_in_the_singular() -> None:
    assert fit_score([r(INC, Label.MET), r(INC, Label.NOT_ENOUGH_INFO)]).explanation == (
        "1 of the 2 criteria is in your favour; 1 could not be checked yet.")


def test_eligibility_scoring_fewer_than_half_judged_stays_in_needs_information_band() -> None:
    # The case: 2 of 13 criteria checked, both in favour -> not 80 or 100, but the "needs information" band.
    results = [r(INC, Label.MET)] * 2 + [r(INC, Label.NOT_ENOUGH_INFO)] * 11
    fit = fit_score(results)
    assert (fit.score, fit.band, fit.judged, fit.total) == (32, FitBand.NEEDS_INFORMATION, 2, 13)
    assert "Fewer than half could be checked" in fit.explanation
    # Just under half judged must not round up into the next band: 20 + 80 * 49/99 = 59.6 -> capped at 59.
    almost = [r(INC, Label.MET)] * 49 + [r(INC, Label.NOT_ENOUGH_INFO)] * 50
    assert (fit_score(almost).score, fit_score(almost).band) == (59, FitBand.NEEDS_INFORMATION)
    half = [r(INC, Label.MET)] * 50 + [r(INC, Label.NOT_ENOUGH_INFO)] * 50
    assert (fit_score(half).score, fit_score(half).band) == (60, FitBand.PROMISING)
    assert band_of(NEEDS_INFORMATION_MAX) == FitBand.NEEDS_INFORMATION


@pytest.mark.parametrize("open_count", range(0, 12))
@pytest.mark.parametrize("met", range(0, 12))
def test_eligibility_scoring_fewer_than_half_judged_never_above_needs_information(met: int, open_count: int) -> None:
    results = [r(INC, Label.MET)] * met + [r(EXC, Label.NOT_ENOUGH_INFO)] * open_count
    if not results:
        return
    fit = fit_score(results)
    if met * 2 < met + open_count:
        assert fit.score is not None and fit.score <= NEEDS_INFORMATION_MAX
        assert fit.band == FitBand.NEEDS_INFORMATION


def test_eligibility_scoring_excluded_scores_below_every_non_excluded_trial() -> None:
    # Every mix of up to 6 criteria: each excluded trial's fit is below each eligible or uncertain trial's fit.
    import itertools

    labels = [Label.MET, Label.NOT_MET, Label.NOT_ENOUGH_INFO, Label.NOT_APPLICABLE]
    excluded: list[int] = []
    others: list[int] = []
    for n in range(1, 7):
        for combo in itertools.product(labels, repeat=n):
            results = [r(INC if i % 2 == 0 else EXC, label) for i, label in enumerate(combo)]
            verdict = trial_verdict(results, True).verdict
            fit = fit_score(results, verdict)
            assert fit.score is not None
            (excluded if verdict == Verdict.EXCLUDED else others).append(fit.score)
            assert (fit.band == FitBand.UNLIKELY) == (verdict == Verdict.EXCLUDED)
    assert excluded and others
    assert max(excluded) < min(others)
    # Even an excluded trial whose other 99 criteria are all in favour stays in the lowest band.
    nearly = [r(INC, Label.MET)] * 99 + [r(EXC, Label.MET, "Known HIV infection")]
    assert fit_score(nearly).score == 19 and fit_score(nearly).band == FitBand.UNLIKELY


def test_eligibility_scoring_missing_criteria_text_and_not_relevant() -> None:
    structured = [r(INC, Label.MET, "Age 18 years or older"), r(INC, Label.MET, "Sex: any"),
                  r(INC, Label.NOT_ENOUGH_INFO, "Full eligibility criteria")]
    fit = fit_score(structured, criteria_missing=True)
    assert (fit.score, fit.band) == (20, FitBand.NEEDS_INFORMATION)
    assert "missing from our copy" in fit.explanation
    # The registry's age and sex limits are shown but not counted: only the open line remains.
    assert fit_score(structured, Verdict.NOT_RELEVANT) == FitScore(
        None, None, 0, 0, 1, "No score: this trial studies a different condition from yours.", 2)
    assert fit_score([]) == FitScore(None, None, 0, 0, 0, "No score: this trial lists no criteria we could read.")


def test_eligibility_scoring_fit_from_statuses_matches_labels() -> None:
    results = [r(INC, Label.MET), r(EXC, Label.NOT_MET), r(INC, Label.NOT_ENOUGH_INFO), r(EXC, Label.MET)]
    statuses = ["met", "met", "not_enough_information", "not_met"]
    assert fit_from_statuses(statuses, "excluded") == fit_score(results)


def test_eligibility_scoring_all_favourable_is_100() -> None:
    assert fit_score([r(INC, Label.MET), r(EXC, Label.NOT_MET)]).score == 100


# --- Ranking -----------------------------------------------------------------------------------------


def test_eligibility_scoring_rank_puts_reachable_first_within_a_verdict() -> None:
    def m(nct: str, verdict: str, score: int | None, miles: float | None, radius: float | None = 200.0) -> dict:
        return {"nct_id": nct, "verdict": verdict, "fit_score": score, "distance_miles": miles,
                "within_reach": within_reach(miles, radius)}

    matches = [
        m("NCT00000001", "uncertain", 73, 1455.0),   # higher fit but far away
        m("NCT00000002", "uncertain", 32, 150.0),    # within reach: ranks first among the uncertain
        m("NCT00000003", "excluded", 19, 10.0),      # close, but ruled out: below every uncertain trial
        m("NCT00000004", "eligible", 100, 3000.0),   # better verdict wins over distance
        m("NCT00000005", "uncertain", 40, None),     # distance unknown: between reachable and beyond
        m("NCT00000006", "not_relevant", None, 5.0),
    ]
    ranked = [x["nct_id"] for x in sorted(matches, key=rank_key)]
    assert ranked == ["NCT00000004", "NCT00000002", "NCT00000005", "NCT00000001", "NCT00000003", "NCT00000006"]
    assert reach_note(1455.0, 200.0) == ("Beyond your travel limit: the nearest site is about 1,455 miles away; you "
                                         "said you can travel 200 miles.")
    assert reach_note(150.0, 200.0) == "" and reach_note(150.0, None) == ""
    assert within_reach(5000.0, None) is True


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
            "Are my recent blood test results within the trial's limits, and can I have copies to bring?",
            "Can my tumour be measured on scans the way trials need (RECIST)?",
            "Have I had any treatment this trial does not allow — “had an EGFR inhibitor before”?",
            "How would you rate my day-to-day activity on the ECOG scale doctors use for trials?",
            "Could I have anything this trial leaves out — “uncontrolled hypertension”?",
            "Does this describe me — “able to speak English”?",
        ),
        topics=("Tests and records to bring", "Tests and records to bring", "Treatments you have had",
                "Your daily activity", "Other health problems", "Other health problems"),
    )
    assert not any("criterion:" in q for q in gap_checklist(results).questions)


def test_eligibility_scoring_checklist_empty_when_all_known() -> None:
    checklist = gap_checklist([r(INC, Label.MET, "Age 18+"), r(EXC, Label.NOT_APPLICABLE, "Pregnancy")])
    assert checklist == Checklist((), (), ())


def test_eligibility_scoring_results_from_pairs() -> None:
    criterion = Criterion(1, "Age:", "inclusion", ("18 or older",))
    judgement = Judgement(Label.MET, "Age 40 years is within the range at least 18 years.", (0,))
    assert results_from([(criterion, judgement)]) == [
        CriterionResult("inclusion", Label.MET, "Age: 18 or older", "Age 40 years is within the range at least 18 years.")
    ]


def test_reach_note_never_gives_the_same_rounded_number_for_a_site_beyond_the_limit() -> None:
    # 62.4 miles is beyond a 62.137-mile (100 km) limit, but both round to 62: "62 miles away; you can travel 62".
    for miles, radius in ((62.4, 62.137), (62.7, 62.6), (200.3, 200.0)):
        note = reach_note(miles, radius)
        assert note.startswith("Just beyond your travel limit"), note
        numbers = re.findall(r"\d[\d,]*(?:\.\d+)?", note)
        assert len(set(numbers)) == len(numbers), note  # no number said twice as if it were both
    assert reach_note(1455.0, 200.0).endswith("you said you can travel 200 miles.")


# --- Only informative lines count (issue 37) -----------------------------------------------------------

TRIVIAL = [
    r(INC, Label.MET, "Age 18 years to 75 years"),
    r(INC, Label.MET, "Sex: male"),
    r(INC, Label.MET, "Male or female, aged 18 years or older"),
    r(INC, Label.MET, "Able to understand and willing to sign a written informed consent document"),
    r(EXC, Label.NOT_APPLICABLE, "Pregnant or breastfeeding women"),
    r(INC, Label.NOT_APPLICABLE, "Women of childbearing potential must agree to use effective contraception"),
    r(EXC, Label.NOT_MET, "Unable or unwilling to comply with study visits"),
]


@pytest.mark.parametrize(("text", "kind", "expected"), [
    ("Age ≥ 18 years", INC, "uninformative"),
    ("Sex: female", INC, "uninformative"),
    ("Signed informed consent", INC, "uninformative"),
    ("Negative serum pregnancy test within 7 days", INC, "uninformative"),
    ("Histologically confirmed stage IV non-small cell lung cancer", INC, "disease"),
    ("HER2-positive (IHC 3+) breast cancer", INC, "disease"),
    ("At least one prior line of systemic therapy", INC, "disease"),
    ("Type 2 diabetes diagnosed at least 6 months ago", INC, "disease"),
    ("Age ≥ 18 years with type 2 diabetes", INC, "disease"),
    ("eGFR < 30 mL/min/1.73m2", EXC, "other"),
    ("History of stroke", EXC, "other"),
])
def test_eligibility_scoring_line_class(text: str, kind: str, expected: str) -> None:
    assert line_class(text, kind) == expected  # type: ignore[arg-type]


def test_eligibility_scoring_only_trivial_lines_met_scores_in_lowest_non_excluded_band() -> None:
    results = TRIVIAL + [r(INC, Label.NOT_ENOUGH_INFO, "Histologically confirmed metastatic colorectal cancer"),
                         r(EXC, Label.NEEDS_DISCUSSION, "Prior treatment with an anti-EGFR antibody")]
    fit = fit_score(results)
    assert fit.band == FitBand.NEEDS_INFORMATION
    assert fit.score == NEEDS_INFORMATION_MIN
    assert (fit.favourable, fit.total, fit.uninformative) == (0, 2, len(TRIVIAL))
    assert "shown but not counted" in fit.explanation
    only = fit_score(TRIVIAL)  # nothing but age, sex, consent and pregnancy lines
    assert (only.score, only.band) == (NEEDS_INFORMATION_MIN, FitBand.NEEDS_INFORMATION)
    assert fit_score(TRIVIAL, Verdict.EXCLUDED).score == 0


def test_eligibility_scoring_open_disease_line_keeps_trial_out_of_good_match() -> None:
    judged = [r(EXC, Label.NOT_MET, f"History of {d}") for d in ("stroke", "epilepsy", "hepatitis B", "HIV")]
    disease_open = judged + [r(INC, Label.NOT_ENOUGH_INFO, "Stage III or IV melanoma")]
    fit = fit_score(TRIVIAL + disease_open)
    assert fit.score == NEEDS_INFORMATION_MAX and fit.band == FitBand.NEEDS_INFORMATION  # 20 + 80*4/5 = 84 before
    assert "about the disease itself" in fit.explanation
    settled = judged + [r(INC, Label.MET, "Stage III or IV melanoma")]
    assert fit_score(TRIVIAL + settled).band == FitBand.PROMISING
