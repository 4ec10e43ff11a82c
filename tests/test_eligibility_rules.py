"""Tests for the offline rule evaluator (services/eligibility/rules.py) on notes and profiles written here."""

from __future__ import annotations

import csv
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from services.eligibility.labels import Label
from services.eligibility.measures import WEIGHT_FLOOR_CSV, weight_floor
from services.eligibility.model import CombinedEvaluator, judge_criteria
from services.eligibility.parser import Criterion, parse_criteria
from services.eligibility.patient import PatientProfile, facts_from_note, split_note
from services.eligibility.rules import (
    CRITERIA_REFERENCES_CSV,
    GENERIC_WORDS_CSV,
    NOT_SEXUALLY_ACTIVE_CSV,
    SEX_ORGANS_CSV,
    AgeRange,
    Judgement,
    evaluate,
    parse_age_range,
)
from services.eligibility.vocabulary import DRUG_SYNONYMS_CSV, drug_synonyms
from services.errors import BadInput

NOTE = """0. A 67-year-old woman presents with shortness of breath and a productive cough.
1. She has type 2 diabetes and hypertension, and denies smoking.
2. There is no history of stroke or heart failure.
3. Her mother had breast cancer.
4. Her ECOG performance status is 1.
5. Temperature is 38.6 C.
6. The patient will provide informed consent, and will comply with the trial protocol without any practical issues."""

BOY = """0. An 8-year-old boy fell from his bike.
1. He is drowsy and vomited twice.
2. The patient will provide informed consent, and will comply with the trial protocol without any practical issues."""

PREGNANT = """0. A 27-year-old woman at 11 weeks gestation is found to have a hemoglobin of 9.0 g/dL.
1. She has no history of diabetes."""


def label(criterion: str, kind: str, patient: object) -> Label:
    return evaluate(criterion, kind, patient).label  # type: ignore[arg-type]


# --- Age --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Age 18–75 years", AgeRange(18, 75, high_whole_years=True)),
        ("≥ 18 years of age", AgeRange(18, None)),
        ("aged 40 to 80", AgeRange(40, 80, high_whole_years=True)),
        ("Patients over 18 years.", AgeRange(18, None, low_strict=True)),
        ("Younger than 18 years of age", AgeRange(None, 18, high_strict=True, high_whole_years=True)),
        ("65 years of age or older", AgeRange(65, None)),
        ("Age 18+", AgeRange(18, None)),
        ("Male Age 2 months to 20 years of age", AgeRange(2 / 12, 20, high_whole_years=True)),
        ("Adults", AgeRange(18, None)),
    ],
)
def test_eligibility_rules_parse_age_range(text: str, expected: AgeRange) -> None:
    assert parse_age_range(text)[0] == expected


@pytest.mark.parametrize(
    "text",
    [
        "At least 2 year history of episodic cluster headache",
        "Fever for more than 1 week",
        "Radiotherapy completed within the past 6 months to 5 years",
        "IIEF score between 6 and 25",
        "Pregnant, with gestational age <23 weeks",
    ],
)
def test_eligibility_rules_durations_are_not_ages(text: str) -> None:
    assert parse_age_range(text) == (None, [])


def test_eligibility_rules_age_inside_and_outside() -> None:
    assert evaluate("Age 18–75 years", "inclusion", NOTE) == Judgement(
        Label.MET, "Age 67 years is within the range 18 years to 75 years.", (0,)
    )
    assert evaluate("aged 70 to 80", "inclusion", NOTE) == Judgement(
        Label.NOT_MET, "Age 67 years is outside the range 70 years to 80 years.", (0,)
    )
    # An exclusion that only names an age the patient is outside of simply does not apply.
    assert evaluate("Younger than 18 years of age", "exclusion", NOTE).label == Label.NOT_MET


@pytest.mark.parametrize("text", [
    "Congenital long QT syndrome, family history of long QT syndrome, unexplained sudden death under 40 years of age in "
    "first-degree relatives or patients with any factors that increase the risk of QTc prolongation",
    "Family history of colorectal cancer before age 50",
    "Sudden cardiac death before the age of 35 in a close relative",
])
def test_eligibility_rules_an_age_of_the_relatives_is_not_the_patients(text: str) -> None:
    """A 62-year-old is not "outside the range under 40" of an exclusion about relatives who died young."""
    j = evaluate(text, "exclusion", PatientProfile(age=62, sex="male"))
    assert j.label == Label.NOT_ENOUGH_INFO and "Age 62" not in j.reason


def test_eligibility_rules_whole_years_at_upper_bound() -> None:
    seventeen_and_a_half = PatientProfile(age=17.5)
    assert label("Aged 1 to 17 years", "inclusion", seventeen_and_a_half) == Label.MET
    assert label("Under 17 years", "inclusion", seventeen_and_a_half) == Label.NOT_MET


def test_eligibility_rules_age_in_months_for_an_infant() -> None:
    infant = "0. A 6-month-old male infant has a urine output of less than 0.2 mL/kg/hr after surgery."
    assert facts_from_note(infant).age == 0.5
    assert label("Age 2 months to 20 years", "inclusion", infant) == Label.MET
    assert label("Age 1 to 5 years", "inclusion", infant) == Label.NOT_MET


def test_eligibility_rules_age_unknown_is_not_enough_information() -> None:
    assert label("Age 18-65 years", "inclusion", PatientProfile(sex="male")) == Label.NOT_ENOUGH_INFO


# --- Sex ---------------------------------------------------------------------------------------------


def test_eligibility_rules_sex() -> None:
    assert evaluate("Male patients", "inclusion", NOTE) == Judgement(
        Label.NOT_MET, "The criterion is about male patients and this patient is female.", (0,)
    )
    assert label("Male and female", "inclusion", NOTE) == Label.MET
    assert label("Both genders are eligible for study", "inclusion", BOY) == Label.MET
    assert label("Women aged 18 to 45", "inclusion", BOY) == Label.NOT_MET
    # An exclusion about a group the patient does not belong to does not apply to them.
    assert evaluate("Female subjects diagnosed with lupus, 12 years of age and older", "exclusion", BOY).label == (
        Label.NOT_APPLICABLE
    )


def test_eligibility_rules_sex_read_from_pronouns() -> None:
    facts = facts_from_note("0. A 10 year old child has a cough.\n1. His mother says he has had a fever.")
    assert (facts.sex, facts.age) == ("male", 10.0)


# --- Pregnancy -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "criterion",
    ["Pregnant or lactating women", "Pregnancy", "Women of childbearing potential not using contraception"],
)
def test_eligibility_rules_pregnancy_does_not_apply_to_men_or_older_women(criterion: str) -> None:
    assert evaluate(criterion, "exclusion", BOY) == Judgement(
        Label.NOT_APPLICABLE, "Pregnancy rules do not apply to a man.", (0,)
    )
    assert evaluate(criterion, "exclusion", NOTE) == Judgement(
        Label.NOT_APPLICABLE, "Pregnancy rules do not apply to a woman aged 67.", (0,)
    )


def test_eligibility_rules_pregnancy_unknown_for_a_young_woman() -> None:
    young = "0. A 26-year-old woman with bipolar disorder feels depressed."
    assert evaluate("Pregnant or breast feeding women", "exclusion", young) == Judgement(
        Label.NOT_ENOUGH_INFO, "Whether the patient is pregnant or could become pregnant is not known.", (0,)
    )


def test_eligibility_rules_pregnancy_known() -> None:
    assert label("Pregnancy", "exclusion", PREGNANT) == Label.MET
    assert evaluate("Pregnant, with gestational age <23 weeks", "inclusion", PREGNANT) == Judgement(
        Label.MET, "The patient is 11 weeks pregnant; the criterion asks for < 23 weeks.", (0,)
    )
    assert label("Pregnant, with gestational age <8 weeks", "inclusion", PREGNANT) == Label.NOT_MET
    assert label("Pregnant", "inclusion", BOY) == Label.NOT_MET
    assert label("Pregnant women", "exclusion", PatientProfile(sex="female", age=30, pregnant=False)) == (
        Label.NOT_MET
    )


@pytest.mark.parametrize(("note", "pregnant"), [
    # A negated word that qualifies something else says nothing against the pregnancy.
    ("A 25-year-old woman, 20 weeks pregnant, with no prenatal care.", True),
    ("A 30-year-old woman at 12 weeks gestation. She denies gestational diabetes.", True),
    ("A 28-year-old woman who is pregnant. No history of pregnancy complications.", True),
    ("A 30-year-old woman. Pregnancy test negative.", False),
    ("A 30-year-old woman who is not pregnant.", False),
])
def test_eligibility_rules_negated_pregnancy_detail_is_not_a_negated_pregnancy(note: str, pregnant: bool) -> None:
    assert facts_from_note(note).pregnant is pregnant
    assert label("Pregnant or breastfeeding women", "exclusion", note) == (Label.MET if pregnant else Label.NOT_MET)


def test_eligibility_rules_not_pregnant_settles_only_half_of_pregnant_or_breastfeeding() -> None:
    """"Pregnant or breastfeeding" is met by either; a patient who says only that she is not pregnant has not said
    whether she breastfeeds (it was 'not met: The patient is not pregnant.', even for a note saying she breastfeeds)."""
    profile = PatientProfile(sex="female", age=30, pregnant=False)
    open_reason = "The patient is not pregnant, but whether they are breastfeeding is not known."
    assert evaluate("Pregnant or breastfeeding women", "exclusion", profile) == Judgement(Label.NOT_ENOUGH_INFO,
                                                                                          open_reason)
    assert evaluate("Not pregnant or breastfeeding", "inclusion", profile) == Judgement(Label.NOT_ENOUGH_INFO,
                                                                                        open_reason)
    feeding = "0. A 30-year-old woman with asthma.\n1. She is not pregnant and is breastfeeding."
    said = "The patient is not pregnant and the note says the patient is breastfeeding."
    assert evaluate("Pregnancy or lactation", "exclusion", feeding) == Judgement(Label.MET, said, (1,))
    assert evaluate("Not pregnant or breastfeeding", "inclusion", feeding) == Judgement(Label.NOT_MET, said, (1,))
    # A complete case summary that does not mention breastfeeding is read as the patient not breastfeeding.
    silent = "0. A 30-year-old woman with asthma.\n1. She is not pregnant."
    assert evaluate("Pregnancy or lactation", "exclusion", silent) == Judgement(
        Label.NOT_MET, "The patient is not pregnant, and the note does not mention breastfeeding.", (1,))
    # Pregnancy alone is still settled by the pregnancy status.
    assert label("Pregnant women", "exclusion", profile) == Label.NOT_MET


def test_eligibility_rules_own_premature_birth_is_not_pregnancy() -> None:
    assert label("Premature birth (<36 weeks gestation)", "exclusion", BOY) == Label.NOT_MET


# --- Performance status -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("criterion", "kind", "expected"),
    [
        ("ECOG performance status 0-2", "inclusion", Label.MET),
        ("ECOG PS 0 or 1", "inclusion", Label.MET),
        ("ECOG performance status of 0", "inclusion", Label.NOT_MET),
        ("ECOG >= 2", "exclusion", Label.NOT_MET),
        ("ECOG > 0", "exclusion", Label.MET),
        ("Karnofsky performance status >= 70%", "inclusion", Label.MET),
        ("Karnofsky performance status >= 90%", "inclusion", Label.NOT_MET),
    ],
)
def test_eligibility_rules_performance_status(criterion: str, kind: str, expected: Label) -> None:
    assert label(criterion, kind, NOTE) == expected


def test_eligibility_rules_performance_status_unknown_stays_open_even_for_exclusions() -> None:
    judgement = evaluate("ECOG performance status >= 3", "exclusion", BOY)
    assert judgement.label == Label.NOT_ENOUGH_INFO
    assert "activity level" in judgement.reason


def test_eligibility_rules_karnofsky_in_note() -> None:
    note = "0. A 70-year-old man with lung cancer.\n1. His Karnofsky score is 60%."
    assert facts_from_note(note).ecog == 2
    assert label("ECOG 0-1", "inclusion", note) == Label.NOT_MET


# --- Named conditions, negation, consent ----------------------------------------------------------------


def test_eligibility_rules_condition_present() -> None:
    assert evaluate("Clinical diagnosis of hypertension", "inclusion", NOTE) == Judgement(
        Label.MET, "The note shows high blood pressure.", (1,)
    )
    assert evaluate("Patients with cough or shortness of breath", "inclusion", NOTE).label == Label.MET


def test_eligibility_rules_negated_in_note() -> None:
    assert evaluate("History of stroke", "exclusion", NOTE) == Judgement(
        Label.NOT_MET, "The note says there is no stroke.", (2,)
    )
    assert evaluate("Current smoker", "inclusion", NOTE) == Judgement(
        Label.NOT_MET, "The note says there is no smoking.", (1,)
    )
    assert label("Heart failure", "inclusion", NOTE) == Label.NOT_MET


def test_eligibility_rules_negation_forms() -> None:
    note = (
        "0. A 45-year-old man presents with chest pain.\n"
        "1. He denies diabetes.\n"
        "2. No history of seizures.\n"
        "3. He tested negative for hepatitis C.\n"
        "4. He is HIV negative."
    )
    for criterion in ("Diabetes", "Epilepsy", "Hepatitis C", "HIV infection"):
        assert label(criterion, "inclusion", note) == Label.NOT_MET, criterion
    assert label("Chest pain", "inclusion", note) == Label.MET


def test_eligibility_rules_family_history_is_not_the_patients_own() -> None:
    assert evaluate("History of breast cancer", "exclusion", NOTE) == Judgement(
        Label.NOT_MET, "The note does not mention breast cancer."
    )
    assert label("Family history of breast cancer", "inclusion", NOTE) == Label.NEEDS_DISCUSSION


def test_eligibility_rules_subtype_rules_out_sibling() -> None:
    assert evaluate("Type 1 diabetes", "exclusion", NOTE) == Judgement(
        Label.NOT_MET, "The note shows type 2 diabetes, not type 1 diabetes.", (1,)
    )


def test_eligibility_rules_non_smoker_requirement() -> None:
    smoker = "0. A 66-year-old woman has smoked 1 to 2 packs per day for 47 years."
    assert label("COPD, non smoker", "inclusion", smoker) == Label.NOT_MET
    assert label("Non-smokers", "inclusion", "0. A 50-year-old woman with asthma.") == Label.MET


def test_eligibility_rules_qualified_condition() -> None:
    # In a complete case summary, hypertension not described as uncontrolled does not trigger the exclusion.
    assert label("Uncontrolled hypertension", "exclusion", NOTE) == Label.NOT_MET
    # A profile is not a complete record: the doctor has to judge whether it is uncontrolled.
    profile = PatientProfile(age=67, sex="female", conditions=("hypertension",))
    assert label("Uncontrolled hypertension", "exclusion", profile) == Label.NEEDS_DISCUSSION


def test_eligibility_rules_unmentioned_exclusion_in_note_versus_profile() -> None:
    assert evaluate("Known HIV infection", "exclusion", NOTE).label == Label.NOT_MET
    profile = PatientProfile(age=67, sex="female", conditions=("hypertension",))
    assert evaluate("History of stroke", "exclusion", profile) == Judgement(
        Label.NOT_ENOUGH_INFO, "Your profile does not mention stroke."
    )


def test_eligibility_rules_inclusion_needs_positive_evidence() -> None:
    assert evaluate("Chronic kidney disease", "inclusion", NOTE) == Judgement(
        Label.NOT_ENOUGH_INFO, "The note does not mention kidney disease."
    )
    assert label("No prior myocardial infarction", "inclusion", NOTE) == Label.MET


def test_eligibility_rules_exception_clause_is_ignored() -> None:
    note = "0. A 60-year-old man had a basal cell carcinoma removed last year."
    assert label("History of malignancy, except basal cell carcinoma of the skin", "exclusion", note) == Label.NOT_MET
    assert label("History of malignancy", "exclusion", note) == Label.MET


def test_eligibility_rules_consent_and_compliance() -> None:
    assert evaluate("Able to give written informed consent", "inclusion", NOTE) == Judgement(
        Label.MET, "The note says the patient will give consent and follow the study plan.", (6,)
    )
    assert label("Inability to comply with study procedures", "exclusion", NOTE) == Label.NOT_MET
    assert label("Refusal to consent", "exclusion", NOTE) == Label.NOT_MET
    assert label("Subjects willing to participate in follow-up visits", "inclusion", NOTE) == Label.MET
    no_statement = "0. A 40-year-old man with asthma."
    assert label("Signed informed consent", "inclusion", no_statement) == Label.NOT_ENOUGH_INFO


def test_eligibility_rules_noncompliance_history_is_a_condition() -> None:
    note = "0. A 64-year-old woman with diabetes.\n1. She is not compliant with her diabetes medication."
    assert evaluate("History of non-compliance", "exclusion", note) == Judgement(
        Label.MET, "The note shows trouble following treatment plans.", (1,)
    )


def test_eligibility_rules_healthy_volunteers() -> None:
    assert label("Healthy volunteers", "inclusion", NOTE) == Label.NOT_MET
    assert label("Healthy volunteers", "inclusion", PatientProfile(healthy_volunteer=True)) == Label.MET
    assert label("Healthy volunteers", "inclusion", PatientProfile()) == Label.NOT_ENOUGH_INFO


def test_eligibility_rules_measurements() -> None:
    assert evaluate("Temperature above 38 C", "inclusion", NOTE) == Judgement(
        Label.MET, 'The note: Temperature 38.6 C (38.6 °C) is within the limit (body temperature > 38 °C, as '
        'written: "Temperature above 38 C").', (5,)
    )
    assert label("Haemoglobin < 90 g/L", "exclusion", PREGNANT) == Label.NOT_MET
    assert label("Hemoglobin >= 10 g/dL", "inclusion", PREGNANT) == Label.NOT_MET


def test_eligibility_rules_profile() -> None:
    profile = PatientProfile(
        age=58, sex="male", conditions=("type 2 diabetes", "COPD"), treatments=("metformin",), ecog=1
    )
    assert evaluate("Diabetes mellitus", "inclusion", profile) == Judgement(
        Label.MET, "Your profile shows diabetes.", ()
    )
    assert label("ECOG 0-1", "inclusion", profile) == Label.MET
    assert label("Pregnant or breastfeeding", "exclusion", profile) == Label.NOT_APPLICABLE
    assert label("Asthma", "exclusion", profile) == Label.NOT_ENOUGH_INFO


def test_eligibility_rules_contraception_line_names_the_profile_not_a_note() -> None:
    # A patient who answered questions wrote no note; the reason must not say "the note".
    line = "Women of childbearing potential must agree to use adequate contraception during the study"
    profile = PatientProfile(age=30, sex="female", conditions=("asthma",))
    assert evaluate(line, "inclusion", profile) == Judgement(
        Label.NOT_ENOUGH_INFO, "This line asks something of people of the patient's sex (such as agreeing to "
        "contraception) that your profile does not say."
    )
    assert evaluate(line, "inclusion", "0. A 30-year-old woman with asthma.").reason.endswith(
        "that the note does not say.")


def test_eligibility_rules_judge_criteria_asks_the_fallback_only_when_unsure() -> None:
    parsed = parse_criteria("Inclusion Criteria:\n* Age 18 or older\n* Kawasaki disease presentation")
    calls: list[str] = []

    def model(text: str, kind: str, patient: object) -> Judgement:
        calls.append(text)
        return Judgement(Label.NEEDS_DISCUSSION, "A model would say this.", source="model")

    results = judge_criteria(parsed.all, NOTE, CombinedEvaluator(model))
    assert [(c.number, j.label, j.source) for c, j in results] == [
        (1, Label.MET, "rules"),
        (2, Label.NEEDS_DISCUSSION, "model"),
    ]
    assert calls == ["Kawasaki disease presentation"]


def test_eligibility_rules_section_label_is_used() -> None:
    criterion = Criterion(1, "18 and over", "inclusion", section="Age")
    [(_, judgement)] = judge_criteria([criterion], NOTE)
    assert judgement.label == Label.MET


def test_eligibility_rules_bad_input() -> None:
    with pytest.raises(BadInput):
        evaluate("Age 18+", "maybe", NOTE)  # type: ignore[arg-type]
    with pytest.raises(BadInput):
        PatientProfile(sex="other")  # type: ignore[arg-type]
    assert evaluate("", "exclusion", NOTE).label == Label.NOT_MET
    assert evaluate(None, "inclusion", NOTE).label == Label.NOT_APPLICABLE


def test_eligibility_rules_split_note_numbers_plain_text() -> None:
    assert [(s.id, s.text) for s in split_note("A 40-year-old man. He has asthma.")] == [
        (0, "A 40-year-old man."),
        (1, "He has asthma."),
    ]


def test_eligibility_rules_mutually_exclusive_subtypes_when_neither_is_known() -> None:
    # Type 1 and type 2 diabetes rule each other out; with neither mentioned the answer stays open.
    assert evaluate("Type 1 diabetes", "inclusion", "0. A 30-year-old man with asthma.") == Judgement(
        Label.NOT_ENOUGH_INFO, "The note does not mention type 1 diabetes."
    )


def test_reason_naming_excepted_conditions_does_not_depend_on_the_hash_seed() -> None:
    """The conditions a criterion leaves out are named in the order written, the same in every process."""
    script = (
        "from services.eligibility.rules import evaluate, PatientProfile\n"
        "p = PatientProfile(age=70, sex='female', conditions=('breast cancer',))\n"
        "print(evaluate('No other prior malignancy is allowed except for the following: lobular carcinoma in-situ of "
        "the breast (LCIS), or any other cancer from which the patient has been disease-free for 5 years.', "
        "'exclusion', p).reason)\n"
    )
    reasons = {
        subprocess.run([sys.executable, "-c", script], env={**os.environ, "PYTHONHASHSEED": seed}, check=True,
                       capture_output=True, text=True, cwd=Path(__file__).resolve().parents[1], timeout=120).stdout
        for seed in ("0", "1")  # two seeds that ordered a set of these names differently
    }
    assert len(reasons) == 1 and "which this criterion leaves out" in reasons.pop()


def test_eligibility_rules_a_long_exception_is_judged_quickly() -> None:
    """The exception clause is blanked out before the list is cut into items; the run of blanks it leaves must not
    be rescanned from every position in it (a 7,000-character line took about 14 s per judgement)."""
    line = "Any cancer except " + "basal cell carcinoma, " * 320
    for kind in ("inclusion", "exclusion"):
        started = time.perf_counter()
        evaluate(line, kind, "0. A 50-year-old man with hypertension.")  # type: ignore[arg-type]
        assert time.perf_counter() - started < 3.0


def test_eligibility_rules_an_over_long_line_is_left_open_at_once() -> None:
    """A trial record is untrusted: a line longer than any real criterion is not read (reading it took minutes),
    and it is said so; the model is not asked about it either."""
    line = "History of heart failure, diabetes, or stroke within 6 months, " * 800  # 50,400 characters
    asked: list[str] = []

    def model(text: str, kind: str, patient: object) -> Judgement:
        asked.append(text)
        return Judgement(Label.MET, "model")

    for kind in ("inclusion", "exclusion"):
        started = time.perf_counter()
        judged = CombinedEvaluator(model)(line, kind, NOTE)  # type: ignore[arg-type]
        assert time.perf_counter() - started < 3.0
        assert judged == Judgement(Label.NOT_ENOUGH_INFO, "This line is 50,400 characters long, more than the 8,000 "
                                   "this app reads in one criterion, so it was not checked. Read it on the trial's "
                                   "record or ask the trial team.")
    assert asked == []
    # A line of ordinary length is still judged (and the model asked when the rules leave it open).
    assert evaluate("History of stroke", "exclusion", NOTE).label == Label.NOT_MET


def test_eligibility_rules_a_cancer_on_record_is_not_a_metastatic_one() -> None:
    """"Metastatic" was read as just "cancer", so any cancer met it: 'Metastatic breast cancer' was met by a profile
    saying 'breast cancer'.  Whether it has spread is now a detail the record must say."""
    profile = PatientProfile(age=55, sex="female", conditions=("breast cancer",))
    assert evaluate("Metastatic breast cancer", "inclusion", profile) == Judgement(
        Label.NEEDS_DISCUSSION, "Your profile shows cancer and breast cancer, but not whether the details in the "
        "criterion (metastatic) apply.")
    assert label("Metastatic disease", "exclusion", profile) == Label.NEEDS_DISCUSSION
    assert label("Metastatic disease", "exclusion", "0. A 55-year-old woman with breast cancer.") == Label.NOT_MET
    spread = PatientProfile(age=55, sex="female", conditions=("metastatic breast cancer",))
    assert label("Metastatic breast cancer", "inclusion", spread) == Label.MET
    assert label("Metastatic breast cancer", "inclusion", "0. A woman with breast cancer and liver metastases.") == (
        Label.MET)


@pytest.mark.parametrize(("text", "expected"), [
    ("Children under 12", AgeRange(None, 12, high_strict=True, high_whole_years=True)),
    ("Children under 6 months", AgeRange(None, 0.5, high_strict=True)),
    ("Infants under 2 years", AgeRange(None, 2, high_strict=True, high_whole_years=True)),
    ("Children under 40 kg", AgeRange(None, 18, high_strict=True)),  # a weight, not an age: the group's own range
    ("Adults with more than 2 prior lines", AgeRange(18, None)),
])
def test_eligibility_rules_a_limit_written_after_an_age_group_is_the_limit(text: str, expected: AgeRange) -> None:
    """'Children under 12' was read as 'under 18' (what "children" alone means), and the reason showed 18, a number
    the trial never wrote."""
    assert parse_age_range(text)[0] == expected
    if expected.high == 12:
        assert evaluate(text, "exclusion", PatientProfile(age=14)) == Judgement(
            Label.NOT_MET, "Age 14 years is outside the range under 12 years.")


@pytest.mark.parametrize(("criterion", "kind", "ecog", "expected"), [
    ("ECOG 2 or more", "exclusion", 3, Label.MET),  # was read as exactly 2: "not met"
    ("ECOG performance status 2 or higher", "exclusion", 1, Label.NOT_MET),
    ("ECOG 1 or less", "inclusion", 0, Label.MET),  # was read as exactly 1: "not met"
    ("Karnofsky 60 or less", "exclusion", 3, Label.MET),  # was read as "Karnofsky >= 60"
    ("Karnofsky 60 or less", "inclusion", 0, Label.NOT_MET),
    ("Karnofsky performance status of 70% or more", "inclusion", 1, Label.MET),
])
def test_eligibility_rules_performance_bound_written_after_the_number(criterion: str, kind: str, ecog: int,
                                                                      expected: Label) -> None:
    assert label(criterion, kind, PatientProfile(ecog=ecog)) == expected


def test_eligibility_rules_one_item_of_an_exclusion_list_that_does_not_hold_settles_nothing() -> None:
    """'ECOG >= 2 or heart failure' keeps out a patient with heart failure at ECOG 1; it was 'not met' because the
    ECOG item failed (and the condition named after it was taken as part of the ECOG wording)."""
    heart = PatientProfile(age=55, sex="female", conditions=("heart failure",), ecog=1)
    assert evaluate("ECOG >= 2 or heart failure", "exclusion", heart) == Judgement(
        Label.MET, "Your profile shows heart failure.")
    assert label("ECOG >= 2 or heart failure", "exclusion", "0. A 55-year-old woman with heart failure. ECOG 1.") == (
        Label.MET)
    # With the condition unknown the line stays open for a profile; a complete case summary that does not
    # mention it settles it.
    asthma = PatientProfile(age=55, sex="female", conditions=("asthma",), ecog=1)
    assert evaluate("ECOG >= 2 or heart failure", "exclusion", asthma) == Judgement(
        Label.NOT_ENOUGH_INFO, "Your profile does not mention heart failure.")
    assert label("ECOG >= 2 or heart failure", "exclusion", "0. A 55-year-old woman with asthma. ECOG 1.") == (
        Label.NOT_MET)
    assert label("ECOG 0-1 or Karnofsky >= 70", "inclusion", asthma) == Label.MET


def test_eligibility_rules_a_cancer_subtype_must_be_on_record() -> None:
    """The vocabulary spells 'squamous NSCLC' and 'adenocarcinoma of the lung' as NSCLC itself, so any NSCLC met
    them, and a squamous cancer met 'Adenocarcinoma of the lung'. The record must now say the subtype."""
    nsclc = PatientProfile(conditions=("non-small cell lung cancer",))
    assert evaluate("Squamous NSCLC", "inclusion", nsclc) == Judgement(
        Label.NEEDS_DISCUSSION, "Your profile shows non-small cell lung cancer, but not whether the details in the "
        "criterion (squamous) apply.")
    assert label("Adenocarcinoma of the lung", "inclusion", PatientProfile(conditions=("squamous cell carcinoma of the "
                                                                                     "lung",))) == Label.NEEDS_DISCUSSION
    assert label("Squamous NSCLC", "inclusion", PatientProfile(conditions=("squamous cell carcinoma of the lung",))) == (
        Label.MET)
    adeno = "0. A 62-year-old man with metastatic lung adenocarcinoma."
    assert label("Non-squamous non-small cell lung cancer", "inclusion", adeno) == Label.MET  # adenocarcinoma is
    assert label("NSCLC", "inclusion", nsclc) == Label.MET


@pytest.mark.parametrize(("condition", "criterion"), [
    ("nodular melanoma", "Nodular melanoma"),  # "No" of "Nodular" was read as "no"
    ("nocturnal asthma", "Nocturnal asthma"),
    ("non-squamous NSCLC", "Non-squamous NSCLC"),  # a "non-" on a qualifier negates nothing
])
def test_eligibility_rules_a_word_starting_with_no_is_not_a_negation(condition: str, criterion: str) -> None:
    """These inclusions were 'not met: Your profile shows ...' for the very condition they name."""
    assert label(criterion, "inclusion", PatientProfile(conditions=(condition,))) == Label.MET


def test_eligibility_rules_none_of_and_no_still_negate() -> None:
    assert label("No asthma", "inclusion", PatientProfile(conditions=("asthma",))) == Label.NOT_MET
    assert label("Non-smoker", "inclusion", PatientProfile(conditions=("smoker",))) == Label.NOT_MET


_GENERIC_ROWS = list(csv.DictReader(GENERIC_WORDS_CSV.open(encoding="utf-8")))


@pytest.mark.parametrize("row", _GENERIC_ROWS, ids=[r["word"] for r in _GENERIC_ROWS])
def test_generic_words_csv_row_is_not_read_as_a_detail(row: dict[str, str]) -> None:
    # Each row's example line holds its word, which asks nothing a note has to repeat.
    assert re.search(rf"\b{row['word']}\b", row["example"], re.I) and row["source"].strip()
    note = f"0. A 60-year-old patient comes to clinic.\n1. {row['note']}"
    assert evaluate(row["example"], row["kind"], note).label == Label(row["expected"])


_REFERENCE_ROWS = list(csv.DictReader(CRITERIA_REFERENCES_CSV.open(encoding="utf-8")))


@pytest.mark.parametrize("row", _REFERENCE_ROWS, ids=[r["example"][:40] for r in _REFERENCE_ROWS])
def test_criteria_references_csv_row_is_read_as_a_line_about_the_criteria(row: dict[str, str]) -> None:
    note = "0. A 45-year-old man has had diarrhea for two days.\n1. He takes no medicines."
    assert re.search(row["cue"], row["example"], re.I) and row["source"].strip()
    assert row["means"] in ("other_criteria", "no_criteria")
    assert evaluate(row["example"], row["kind"], note).label == Label(row["expected"])


def test_meeting_diagnostic_criteria_is_not_a_reference_to_the_trials_criteria() -> None:
    note = "0. A 45-year-old man has had diarrhea for two days.\n1. He takes no medicines."
    assert evaluate("Meeting criteria for severe depression", "exclusion", note).label == Label.NOT_MET
    label = evaluate("Does not meet criteria for severe depression", "inclusion", note).label
    assert label != Label.NOT_ENOUGH_INFO


_INACTIVE_ROWS = list(csv.DictReader(NOT_SEXUALLY_ACTIVE_CSV.open(encoding="utf-8")))


@pytest.mark.parametrize("row", _INACTIVE_ROWS, ids=[r["cue"][:30] for r in _INACTIVE_ROWS])
def test_not_sexually_active_csv_row_sets_contraception_lines_aside(row: dict[str, str]) -> None:
    assert re.search(row["cue"], row["example_note"], re.I) and row["source"].strip()
    note = "0. A 19-year-old woman comes for a check-up."
    told = f"{note}\n1. {row['example_note']}"
    assert evaluate(row["example"], row["kind"], told).label == Label(row["expected"])
    # Without the sentence the line stays open: the note does not say whether she uses contraception.
    assert evaluate(row["example"], row["kind"], note).label == Label.NOT_ENOUGH_INFO


_FLOOR_ROWS = list(csv.DictReader(WEIGHT_FLOOR_CSV.open(encoding="utf-8")))


@pytest.mark.parametrize("row", _FLOOR_ROWS, ids=[r["age_months"] for r in _FLOOR_ROWS])
def test_weight_floor_csv_row_settles_a_lower_weight_limit(row: dict[str, str]) -> None:
    months, kg = int(row["age_months"]), float(row["kg"])
    assert row["source"].strip() and weight_floor(months / 12) == kg
    age = f"{months}-month-old" if months < 24 else f"{months // 12}-year-old"
    note = f"0. A {age} girl is brought to clinic with a cough."
    below, above = f"{kg - 0.5:g}", f"{kg + 1:g}"
    assert evaluate(f"Weight ≥ {below} kg", "inclusion", note).label == Label.MET
    assert evaluate(f"Body weight < {below} kg", "exclusion", note).label == Label.NOT_MET
    # A limit above the floor, or one the floor would settle against the patient, stays open.
    assert evaluate(f"Weight ≥ {above} kg", "inclusion", note).label == Label.NOT_ENOUGH_INFO
    assert evaluate(f"Weight ≤ {below} kg", "inclusion", note).label == Label.NOT_ENOUGH_INFO


_ORGAN_ROWS = list(csv.DictReader(SEX_ORGANS_CSV.open(encoding="utf-8")))


@pytest.mark.parametrize("row", _ORGAN_ROWS, ids=[r["organ"] for r in _ORGAN_ROWS])
def test_sex_organs_csv_row_is_met_only_when_the_record_keeps_the_organ(row: dict[str, str]) -> None:
    assert row["source"].strip() and row["organ"] in row["example"]
    own, other = ("woman", "man") if row["sex"] == "female" else ("man", "woman")
    note = f"0. A 45-year-old {own} comes to clinic for a check-up."
    assert evaluate(row["example"], "inclusion", note).label == Label.MET
    removed = row["removed_by"].split("|")[0]
    assert evaluate(row["example"], "inclusion", f"{note}\n1. A {removed} was done in 2010.").label == (
        Label.NEEDS_DISCUSSION)
    # Never counted against the other sex: the wording may be chosen to include transgender people.
    other_note = f"0. A 45-year-old {other} comes to clinic for a check-up."
    assert evaluate(row["example"], "inclusion", other_note).label == Label.NEEDS_DISCUSSION


@pytest.mark.parametrize(
    ("line", "note_sentence"),
    [
        ("Maintenance hemodialysis after kidney transplant failure", "His kidney transplant failed in 2015."),
        ("Patients undergoing surgery for colon cancer", "He has colon cancer."),
        ("Patients scheduled for elective surgery", "He has colon cancer."),
    ],
)
def test_a_procedure_a_complete_note_omits_is_not_met_for_any_reason(line: str, note_sentence: str) -> None:
    # The words saying why or after what ("after kidney transplant failure") are not the procedure itself:
    # a note naming them but not the procedure shows the patient is not going through it.
    note = f"0. A 60-year-old man comes to clinic.\n1. {note_sentence}"
    assert evaluate(line, "inclusion", note).label == Label.NOT_MET


@pytest.mark.parametrize("line", ["Hypersensitivity to penicillin or cephalosporins",
                                  "Known allergy to cephalosporins, penicillin or carbapenems",
                                  "Allergic to penicillin and/or cephalosporins"])
def test_an_allergy_to_one_drug_of_a_list_meets_the_exclusion(line: str) -> None:
    """What a reaction is to is a list of which one is enough: a note's allergy to one of them applies, an
    allergy to something else does not."""
    note = "0. A 45-year-old man comes for a check-up.\n1. He is allergic to {}."
    assert evaluate(line, "exclusion", note.format("penicillin")).label == Label.MET
    assert evaluate(line, "exclusion", note.format("sulfa drugs")).label == Label.NOT_MET


_SYNONYM_ROWS = list(csv.DictReader(DRUG_SYNONYMS_CSV.open(encoding="utf-8")))


@pytest.mark.parametrize("row", _SYNONYM_ROWS, ids=[r["name"] for r in _SYNONYM_ROWS])
def test_drug_synonym_row_shows_the_drug_it_names(row: dict[str, str]) -> None:
    """Another name of the same drug in the note meets a line naming the drug."""
    assert row["source"].strip() and drug_synonyms()[row["name"].lower()] == row["same_as"].lower()
    note = f"0. A 60-year-old man with cancer.\n1. {row['example_note']}"
    assert evaluate(row["example_criterion"], "exclusion", note).label == Label.MET


@pytest.mark.parametrize(("line", "label"), [("Prior treatment with T-DM1", Label.NOT_MET),
                                             ("Prior treatment with trastuzumab emtansine", Label.NOT_MET),
                                             ("Prior paclitaxel", Label.NOT_MET),
                                             ("Prior treatment with trastuzumab", Label.MET),
                                             ("Prior anti-HER2 therapy", Label.MET),
                                             ("Prior docetaxel", Label.MET)])
def test_a_drug_named_by_name_is_not_shown_by_another_drug_of_its_class(line: str, label: Label) -> None:
    """Trastuzumab and pertuzumab show HER2-targeted therapy, not T-DM1; docetaxel shows a taxane, not
    paclitaxel. A line naming the class, or the drug the note names, is met."""
    note = ("0. A 58-year-old woman with metastatic HER2-positive breast cancer.\n1. She previously received "
            "trastuzumab and pertuzumab with docetaxel.")
    assert evaluate(line, "exclusion", note).label == label
