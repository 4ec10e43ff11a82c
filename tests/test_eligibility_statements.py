"""General statements about criteria language the rule evaluator must get right (issue 13, item 2).

Each case is a sentence type, not a trial: negation over lists, biomarker status words, drug classes,
performance-status spellings, measurable disease, life expectancy, organ function, sex-scoped and
permissive sentences, nested lists.
"""

from __future__ import annotations

import json

import pytest

from services.eligibility.labels import Label
from services.eligibility.parser import parse_criteria
from services.eligibility.patient import ecog_in, facts_from_note
from services.eligibility.rules import PatientProfile, evaluate
from services.eligibility.vocabulary import (
    THERAPY_CLASSES_PATH,
    concept_index,
    find_concepts,
    therapy_class_data,
)

NSCLC_NOTE = (
    "A 62-year-old man with stage IV adenocarcinoma of the lung. EGFR wild-type, ALK negative, PD-L1 80%. "
    "He received carboplatin, pemetrexed and pembrolizumab; last dose 5 weeks ago. "
    "Eastern Cooperative Oncology Group performance status is 1. CT shows a 3.4 cm right upper lobe mass. "
    "HIV, hepatitis B and C tests negative. Blood counts, liver and kidney function are normal. "
    "Estimated life expectancy is more than 6 months. No brain metastases."
)
NAIVE_NOTE = (
    "A 58-year-old woman with newly diagnosed metastatic breast cancer, HER2-negative. She has not received "
    "any chemotherapy, immunotherapy or radiotherapy. WHO performance status 0."
)


def _label(text: str, kind: str, note: str = NSCLC_NOTE) -> Label:
    return evaluate(text, kind, note).label  # type: ignore[arg-type]


# --- Negation over lists and coordinations -----------------------------------------------------------


@pytest.mark.parametrize(
    "criterion",
    ["Known HIV infection", "Active hepatitis B", "Hepatitis C infection", "HIV, HBV or HCV infection"],
)
def test_negative_test_list_covers_every_item(criterion: str) -> None:
    judgement = evaluate(criterion, "exclusion", NSCLC_NOTE)
    assert judgement.label == Label.NOT_MET
    assert "shows" not in judgement.reason  # the reason never claims the note shows an infection


@pytest.mark.parametrize(
    ("note", "negated"),
    [
        ("HIV, hepatitis B and C tests negative.", True),
        ("Negative for HIV, HBV, and HCV.", True),
        ("Serologies: HIV, HBV and HCV negative.", True),
        ("He has diabetes, and HIV testing was negative.", True),
        ("He has HIV infection.", False),
    ],
)
def test_negation_scope_over_lists(note: str, negated: bool) -> None:
    facts = facts_from_note(note)
    label = evaluate("HIV infection", "exclusion", facts).label
    assert label == (Label.NOT_MET if negated else Label.MET)


def test_negation_does_not_leak_to_a_new_predicate() -> None:
    # "not in any other study" must not negate "will give consent".
    facts = facts_from_note("She is not in any other study and will give written informed consent.")
    assert facts.consent


# --- Biomarker status words --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("criterion", "kind", "expected"),
    [
        ("Known activating EGFR mutation", "exclusion", Label.NOT_MET),
        ("EGFR sensitizing mutation (exon 19 deletion or L858R)", "inclusion", Label.NOT_MET),
        ("EGFR wild-type", "inclusion", Label.MET),
        ("Patients must not have EGFR mutations or ALK rearrangement", "inclusion", Label.MET),
        ("Patient with wild type EGFR and ALK", "inclusion", Label.MET),
        ("PD-L1 tumour proportion score >= 50%", "inclusion", Label.MET),
        ("PD-L1 expression < 1%", "inclusion", Label.NOT_MET),
    ],
)
def test_biomarker_status_words(criterion: str, kind: str, expected: Label) -> None:
    assert _label(criterion, kind) == expected


@pytest.mark.parametrize(
    ("result", "criterion", "expected"),
    [
        # A result written as a bound is a range of values, not the number in it.
        ("PD-L1 <1%", "PD-L1 tumour proportion score >= 1%", Label.NOT_MET),
        ("PD-L1 TPS < 1%", "PD-L1 expression < 1%", Label.MET),
        ("PD-L1 less than 50%", "PD-L1 TPS >= 50%", Label.NOT_MET),
        ("PD-L1 >50%", "PD-L1 TPS > 50%", Label.MET),
        ("PD-L1 at least 50%", "PD-L1 TPS >= 50%", Label.MET),
        ("PD-L1 TPS 1-49%", "PD-L1 TPS >= 1%", Label.MET),
        ("PD-L1 TPS 1-49%", "PD-L1 TPS >= 50%", Label.NOT_MET),
        # A bound that straddles the limit does not decide it.
        ("PD-L1 >10%", "PD-L1 TPS >= 50%", Label.NOT_ENOUGH_INFO),
        ("PD-L1 TPS 1-49%", "PD-L1 TPS >= 20%", Label.NOT_ENOUGH_INFO),
        # A plain value is read as before.
        ("PD-L1 50%", "PD-L1 TPS > 50%", Label.NOT_MET),
        ("PD-L1 negative", "PD-L1 expression < 1%", Label.MET),
    ],
)
def test_pd_l1_result_written_as_a_bound(result: str, criterion: str, expected: Label) -> None:
    patient = PatientProfile(age=60, sex="male", conditions=("non-small cell lung cancer",),
                             biomarkers=(result,))
    assert evaluate(criterion, "inclusion", patient).label == expected


def test_a_test_is_not_a_result() -> None:
    assert not [m for m in find_concepts("Tumour sample available for EGFR T790M central testing") if m.key == "egfr"]


@pytest.mark.parametrize(
    ("text", "absent"),
    [("EGFR wild-type", True), ("EGFR exon 19 deletion", False), ("ALK negative", True), ("HER2-negative", True),
     ("HER2-positive", False), ("ER-positive", False), ("KRAS G12C", False), ("BRAF wild-type", True)],
)
def test_biomarker_spelling_carries_status(text: str, absent: bool) -> None:
    matches = find_concepts(text)
    assert matches and matches[0].absent is absent


# --- Drug and therapy classes (data file) --------------------------------------------------------------


def test_therapy_classes_ship_as_data_with_a_source() -> None:
    data = therapy_class_data()
    assert THERAPY_CLASSES_PATH.name == "therapy_classes.json"
    assert "ATC" in data["source"]
    keys = {c["key"] for c in data["classes"]}
    for key in ("platinum", "taxane", "pd1_inhibitor", "pdl1_inhibitor", "ctla4_inhibitor", "egfr_tki",
                "alk_inhibitor", "hormone_therapy", "radiotherapy", "surgery"):
        assert key in keys and key in concept_index()
    with THERAPY_CLASSES_PATH.open(encoding="utf-8") as handle:
        json.load(handle)  # valid JSON


@pytest.mark.parametrize(
    ("drug", "cls"),
    [("carboplatin", "platinum"), ("cisplatin", "platinum"), ("pembrolizumab", "pd1_inhibitor"),
     ("durvalumab", "pdl1_inhibitor"), ("ipilimumab", "ctla4_inhibitor"), ("osimertinib", "egfr_tki"),
     ("alectinib", "alk_inhibitor"), ("letrozole", "aromatase_inhibitor"), ("docetaxel", "taxane")],
)
def test_drug_names_map_to_their_class(drug: str, cls: str) -> None:
    assert [m.key for m in find_concepts(f"treated with {drug}")] == [cls]


@pytest.mark.parametrize(
    ("criterion", "kind", "note", "expected"),
    [
        ("Previously treated with platinum-based chemotherapy", "inclusion", NSCLC_NOTE, Label.MET),
        ("Prior treatment with an anti-PD-1 or anti-PD-L1 antibody", "exclusion", NSCLC_NOTE, Label.MET),
        ("Immunotherapy-naive", "inclusion", NSCLC_NOTE, Label.NOT_MET),
        ("Immunotherapy-naive", "inclusion", NAIVE_NOTE, Label.MET),
        ("Prior treatment with an EGFR TKI", "exclusion", NSCLC_NOTE, Label.NOT_MET),
        ("No prior systemic chemotherapy", "inclusion", NAIVE_NOTE, Label.MET),
    ],
)
def test_prior_therapy_criteria_use_drug_classes(criterion: str, kind: str, note: str, expected: Label) -> None:
    assert _label(criterion, kind, note) == expected


def test_adjuvant_treatment_is_not_treatment_for_advanced_disease() -> None:
    note = "Metastatic breast cancer. She had adjuvant doxorubicin and paclitaxel 8 years ago."
    assert _label("No prior chemotherapy for metastatic breast cancer", "inclusion", note) == Label.MET
    assert _label("Prior chemotherapy", "exclusion", note) == Label.MET


# --- Performance status in every spelling --------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "grade"),
    [("ECOG 1", 1), ("Eastern Cooperative Oncology Group (ECOG) performance status of one.", 1), ("WHO PS 0", 0),
     ("Zubrod score 2", 2), ("performance status 2", 2), ("Karnofsky 80%", 1), ("KPS of 90", 0),
     ("She is fully active.", 0), ("He is a man who was 5 years old", None),
     ("Biopsy showed a WHO grade 2 astrocytoma.", None), ("WHO performance status grade 1", 1)],
)
def test_performance_status_spellings(text: str, grade: int | None) -> None:
    assert ecog_in(text) == grade


@pytest.mark.parametrize(
    ("criterion", "expected"),
    [("Eastern Cooperative Oncology Group (ECOG) performance status of 0 or 1", Label.MET),
     ("ECOG performance status <= 1", Label.MET), ("ECOG 0", Label.NOT_MET),
     ("Karnofsky performance status >= 70%", Label.MET), ("WHO performance status 0-2", Label.MET),
     # "who" is a pronoun, not the WHO scale: the grades are the ones after "ECOG".
     ("Patients who had 2 prior regimens and ECOG performance status 0-1", Label.MET)],
)
def test_performance_status_criteria(criterion: str, expected: Label) -> None:
    assert _label(criterion, "inclusion") == expected


def test_karnofsky_word_operators() -> None:
    assert _label("Karnofsky score of below 60", "exclusion") == Label.NOT_MET


# --- Measurable disease, life expectancy, organ function -------------------------------------------------


def test_measurable_disease_from_lesion_size() -> None:
    assert _label("Measurable disease per RECIST 1.1", "inclusion") == Label.MET
    assert _label("At least one measurable lesion per RECIST v1.1", "inclusion", NAIVE_NOTE) == Label.NOT_ENOUGH_INFO
    # A measurable lesion named as the target of something else is not a measurable-disease criterion.
    assert _label("Radiotherapy to a measurable lesion within 2 months", "exclusion") != Label.MET


def test_life_expectancy_bounds() -> None:
    assert _label("Life expectancy of at least 12 weeks", "inclusion") == Label.MET
    # "more than 6 months" says nothing against "at least 1 year".
    assert _label("Estimated survival time is at least 1 year", "inclusion") == Label.NOT_ENOUGH_INFO
    # and the reason says the note gives one that does not settle it, not that the note gives none.
    reason = evaluate("Estimated survival time is at least 1 year", "inclusion", NSCLC_NOTE).reason
    assert "more than 6 months, which does not settle" in reason
    assert _label("Life expectancy >= 3 months", "inclusion", NAIVE_NOTE) == Label.NOT_ENOUGH_INFO


@pytest.mark.parametrize(
    ("said", "criterion", "expected"),
    [
        # The note's bound is read the way the criterion's is: "no more than" is at most, "not less than" at least.
        ("Life expectancy of no more than 6 months.", "Life expectancy of at least 12 weeks", Label.NOT_ENOUGH_INFO),
        ("Life expectancy of no more than 6 months.", "Life expectancy <= 6 months", Label.MET),
        ("Her life expectancy is not less than 3 months.", "Life expectancy < 3 months", Label.NOT_MET),
        ("Her life expectancy is not less than 3 months.", "Life expectancy of at least 12 weeks", Label.MET),
        # and a bound written as a symbol is a bound, not the number in it.
        ("Life expectancy ≥ 6 months.", "Life expectancy ≤ 6 months", Label.NOT_ENOUGH_INFO),
        ("Life expectancy ≤ 2 months.", "Life expectancy ≥ 3 months", Label.NOT_MET),
        ("Life expectancy of about 2 years.", "Life expectancy < 3 months", Label.NOT_MET),
    ],
)
def test_life_expectancy_bound_in_the_note(said: str, criterion: str, expected: Label) -> None:
    assert _label(criterion, "inclusion", f"A 60-year-old man with lung cancer. {said}") == expected


@pytest.mark.parametrize(
    ("criterion", "kind", "expected"),
    [("Adequate organ function", "inclusion", Label.MET),
     ("Adequate bone marrow, hepatic and renal function", "inclusion", Label.MET),
     ("Absolute neutrophil count >= 1.5 x 10^9/L", "inclusion", Label.MET),
     ("Creatinine clearance >= 50 mL/min", "inclusion", Label.MET),
     ("Total bilirubin > 1.5 x ULN", "exclusion", Label.NOT_MET),
     ("Inadequate organ function", "exclusion", Label.NOT_MET),
     ("Hepatic: No hepatic failure", "inclusion", Label.MET)],
)
def test_organ_function_stated_normal(criterion: str, kind: str, expected: Label) -> None:
    assert _label(criterion, kind) == expected


def test_unreported_lab_limit_is_unknown() -> None:
    assert _label("Serum albumin >= 28 g/L", "inclusion") == Label.NOT_ENOUGH_INFO


# --- Sex-scoped, permissive and conditional sentences ----------------------------------------------------


@pytest.mark.parametrize(
    "criterion",
    [
        "A female participant is eligible to participate if she is not pregnant, not breastfeeding, and at least one "
        "of the following conditions applies: Not a woman of childbearing potential (WOCBP) OR a WOCBP who agrees to "
        "follow the contraceptive guidance",
        "Women of childbearing potential must have a negative pregnancy test within 7 days",
        "Female subjects have a negative urine or serum pregnancy test.",
        "Women under 50 years old would be considered postmenopausal if amenorrheic for 12 months",
    ],
)
def test_sentences_for_women_do_not_rule_out_a_man(criterion: str) -> None:
    label = _label(criterion, "inclusion")
    assert label in (Label.NOT_APPLICABLE, Label.MET, Label.NOT_ENOUGH_INFO)
    assert label != Label.NOT_MET


def test_rule_for_men_applies_to_a_man() -> None:
    label = _label("A male participant must agree to use contraception during the treatment period", "inclusion")
    assert label == Label.NOT_ENOUGH_INFO


def test_a_woman_only_trial_still_rules_out_a_man() -> None:
    profile = PatientProfile(age=60, sex="male")
    assert evaluate("Female patients aged 18 or older", "inclusion", profile).label == Label.NOT_MET


@pytest.mark.parametrize(
    "criterion",
    ["Patients with treated, stable brain metastases may be included.", "Prior adjuvant chemotherapy is "
                                                                        "allowed."],
)
def test_permissive_sentences_are_not_requirements(criterion: str) -> None:
    assert _label(criterion, "inclusion") == Label.NOT_APPLICABLE
    assert _label(criterion, "exclusion") == Label.NOT_APPLICABLE


def test_more_criteria_elsewhere_are_an_open_question() -> None:
    # More criteria exist than the record lists: the trial team checks them, so the line is open, not "no
    # rule".
    for kind in ("inclusion", "exclusion"):
        line = "Other protocol-defined inclusion/exclusion criteria may apply"
        assert _label(line, kind) == Label.NOT_ENOUGH_INFO


def test_rules_for_a_group_the_patient_is_not_in() -> None:
    text = "For patients with evidence of chronic hepatitis B virus infection, the HBV viral load must be undetectable"
    assert _label(text, "inclusion") == Label.NOT_APPLICABLE
    assert _label("At least 4 weeks since prior radiotherapy and recovered", "inclusion", NAIVE_NOTE) == Label.NOT_APPLICABLE


def test_time_limits_are_read_next_to_their_condition() -> None:
    note = "Karen is 72 and was hospitalized for cryptogenic stroke two weeks ago."
    assert _label("Stroke within the previous 3 months", "inclusion", note) == Label.MET
    assert _label("Stroke within the previous 7 days", "inclusion", note) == Label.NOT_MET
    assert _label("Fever for more than one week", "inclusion", "He has had fever for 2 days.") == Label.NOT_MET


def test_other_malignancy_needs_a_second_cancer() -> None:
    assert _label("Other active malignancy within 3 years", "exclusion") == Label.NOT_MET
    note = "Stage IV NSCLC. He also has prostate cancer diagnosed 6 months ago."
    assert _label("Other malignancy within 3 years", "exclusion", note) == Label.MET


def test_small_cell_is_not_non_small_cell() -> None:
    assert _label("Small cell lung cancer", "exclusion") == Label.NOT_MET
    assert _label("Non-small cell lung cancer", "inclusion") == Label.MET


# --- Nested numbered lists -----------------------------------------------------------------------------


def test_nested_numbered_list_under_an_announcement_is_separate_criteria() -> None:
    text = (
        "Inclusion Criteria:\n\n* Patients are eligible to be included in the study only if they meet all of the "
        "following criteria:\n\n  1. Histologically confirmed NSCLC\n  2. ECOG 0-1\n  3. Age 18 or older\n\n"
        "Exclusion Criteria:\n\n* Patients will be excluded if they meet any of the following criteria:\n\n"
        "  1. Brain metastases\n  2. Pregnancy\n"
    )
    parsed = parse_criteria(text)
    assert [c.text for c in parsed.inclusion] == ["Histologically confirmed NSCLC", "ECOG 0-1", "Age 18 or older"]
    assert [c.text for c in parsed.exclusion] == ["Brain metastases", "Pregnancy"]


def test_at_least_one_of_the_following_stays_one_criterion() -> None:
    text = "Inclusion Criteria:\n\n* At least one of the following:\n\n  1. Prior surgery\n  2. Prior radiotherapy\n"
    parsed = parse_criteria(text)
    assert len(parsed.inclusion) == 1


@pytest.mark.parametrize(
    ("criterion", "biomarkers", "said"),
    [
        ("PD-L1 TPS >= 50%", ("PD-L1 60%",), "Your profile gives PD-L1 expression of 60%"),
        ("PD-L1 TPS >= 50%", (), "Your profile does not give a PD-L1 expression result"),
        ("Life expectancy of at least 12 weeks", (), "Your profile does not state a life expectancy"),
        ("Measurable disease per RECIST 1.1", (), "Your profile does not say whether there is measurable disease"),
    ],
)
def test_reasons_for_a_profile_name_the_profile_not_a_note(criterion: str, biomarkers: tuple[str, ...],
                                                            said: str) -> None:
    """A patient who answered questions (no note) is told what their profile says; a note's wording stays."""
    profile = PatientProfile(age=60, sex="male", conditions=("non-small cell lung cancer",),
                             biomarkers=biomarkers)
    reason = evaluate(criterion, "inclusion", profile).reason
    assert said in reason and "The note" not in reason
    note = "1. A 60-year-old man with non-small cell lung cancer." + (f" 2. {biomarkers[0]}." if biomarkers else "")
    assert said.replace("Your profile", "The note") in evaluate(criterion, "inclusion", note).reason


@pytest.mark.parametrize(
    ("result", "criterion", "expected"),
    [
        # Both limits count: 60% is above "< 50%" however the first limit reads.
        ("PD-L1 60%", "PD-L1 TPS >= 1% and < 50%", Label.NOT_MET),
        ("PD-L1 60%", "PD-L1 TPS ≥1% to <50%", Label.NOT_MET),
        ("PD-L1 20%", "PD-L1 TPS >= 1% and < 50%", Label.MET),
        ("PD-L1 60%", "PD-L1 TPS 1-49%", Label.NOT_MET),
        ("PD-L1 60%", "PD-L1 expression between 1% and 49%", Label.NOT_MET),
        ("PD-L1 20%", "PD-L1 expression between 1% and 49%", Label.MET),
        ("PD-L1 0%", "Any PD-L1 expression (0 to 100%)", Label.MET),
        # Either stretch will do.
        ("PD-L1 60%", "PD-L1 < 1% or ≥ 50%", Label.MET),
        ("PD-L1 negative", "PD-L1 < 1% or ≥ 50%", Label.MET),
        ("PD-L1 20%", "PD-L1 < 1% or ≥ 50%", Label.NOT_MET),
        ("PD-L1 40-60%", "PD-L1 TPS >= 1% and < 50%", Label.NOT_ENOUGH_INFO),
    ],
)
def test_pd_l1_criterion_with_two_limits_or_a_range(result: str, criterion: str, expected: Label) -> None:
    patient = PatientProfile(age=60, sex="male", conditions=("non-small cell lung cancer",),
                             biomarkers=(result,))
    assert evaluate(criterion, "inclusion", patient).label == expected
