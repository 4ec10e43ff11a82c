"""Lab and measure cut-offs (data/eligibility/measures.csv, services/eligibility/measures.py) against the patient's
own value, on lines written here and on every matching line of the shipped sample."""

from __future__ import annotations

import csv
import re

import pytest

from services.eligibility.labels import Label
from services.eligibility.measures import MEASURES_CSV, ckd_stages, judge, limits_in, measure_rows
from services.eligibility.patient import LabValue, PatientProfile, facts_from_profile
from services.eligibility.rules import evaluate
from tests.eligibility_sample import sample_lines

CSV_ROWS = list(csv.DictReader(MEASURES_CSV.open(encoding="utf-8")))


@pytest.mark.parametrize("row", CSV_ROWS, ids=[r["key"] for r in CSV_ROWS])
def test_measures_csv_row_reads_its_example(row: dict[str, str]) -> None:
    limits = limits_in(row["example"])
    assert [lim.row.key for lim in limits] == [row["key"]]
    facts = facts_from_profile(PatientProfile(conditions=(row["example_value"],)))
    truth, reason, _ = judge(limits[0], facts, row["example_kind"])
    assert {"yes": True, "no": False, "open": None}[row["example_met"]] is truth, reason
    assert row["source"].strip()


def test_measures_csv_rows_are_unique_and_ranges_sane() -> None:
    keys = [r.key for r in measure_rows()]
    assert len(keys) == len(set(keys))
    assert all(r.low < r.high and r.units for r in measure_rows())


def test_hba1c_in_mmol_per_mol_is_converted() -> None:
    # mmol/mol = 10.929 x (% - 2.15): 58 and 86 mmol/mol are 7.5% and 10.0%.
    (limit,) = limits_in("HbA1c 58-86 mmol/mol")
    assert [round(b, 1) for _, b in limit.bounds] == [7.5, 10.0]
    woman = PatientProfile(age=55, sex="female", conditions=("type 2 diabetes", "HbA1c 8.1%"))
    assert evaluate("HbA1c 7.5–10.0% (58–86 mmol/mol)", "inclusion", woman).label == Label.MET
    assert evaluate("HbA1c 64 mmol/mol or higher", "inclusion", woman).label == Label.MET
    assert evaluate("HbA1c > 70 mmol/mol", "inclusion", woman).label == Label.NOT_MET


def test_bmi_read_in_every_spelling() -> None:
    man = PatientProfile(age=50, sex="male", notes="BMI 31")
    for line in ("BMI ≥ 23.0", "BMI ≥ 23.0 kg/m2", "Body mass index (BMI) of 18.5 to 35 kg/m2", "BMI >= 23"):
        assert evaluate(line, "inclusion", man).label == Label.MET, line
    assert evaluate("BMI > 35 kg/m²", "exclusion", man).label == Label.NOT_MET


@pytest.mark.parametrize(
    ("line", "key", "bounds"),
    [
        (
            "HbA1c greater than or equal 7.5 and lesser than or equal to 11%",
            "hba1c",
            [("≥", 7.5), ("≤", 11.0)],
        ),
        ("BMI >/= 18 and </= 35 kg/m2, inclusive", "bmi", [("≥", 18.0), ("≤", 35.0)]),
        ("BMI 20~35 kg/m2", "bmi", [("≥", 20.0), ("≤", 35.0)]),
        ("absolute neutrophil count of >/= 1,500/mm^3", "anc", [("≥", 1.5)]),
        ("Platelets = 125,000 - 500,000/mm3", "platelets", [("≥", 125.0), ("≤", 500.0)]),
    ],
)
def test_comparison_spellings(line: str, key: str, bounds: list[tuple[str, float]]) -> None:
    (limit,) = limits_in(line)
    assert limit.row.key == key and list(limit.bounds) == bounds


def test_one_limit_for_two_enzymes_reads_both() -> None:
    assert [lim.row.key for lim in limits_in("ALT and AST <= 2.5 x ULN")] == ["alt", "ast"]


@pytest.mark.parametrize(
    "line",
    [
        "ALT ≤ 3 × ULN",
        "Creatinine ≤ 1.5 ULN",
        "Serum creatinine less than 1.5 times the upper normal limit",
        "Serum creatinine <=1.25 times of the upper limit of normal value",
        "Total bilirubin ≤ 1.5 times the institutional upper limit of the normal range",
        "Alanine transferase >2.5 times the upper limit of normal (ULN)",
    ],
)
def test_uln_spellings_are_read_as_a_multiple_of_uln(line: str) -> None:
    (limit,) = limits_in(line)
    assert limit.uln


def test_a_number_without_a_unit_is_read_in_the_unit_its_size_fits() -> None:
    creatinine = next(row for row in measure_rows() if row.key == "creatinine")
    assert (creatinine.unit_read(1.5, ""), creatinine.unit_read(133, ""), creatinine.unit_read(9999, "")) == (
        "", "umol/l", None)
    assert creatinine.to_standard(133, "") == pytest.approx(1.5, abs=0.01)


def test_unknown_value_is_left_open() -> None:
    man = PatientProfile(age=62, sex="male", conditions=("type 2 diabetes",))
    for kind, line in (
        ("exclusion", "eGFR < 30 mL/min/1.73m2"),
        ("inclusion", "Platelets ≥ 100 x 10^9/L"),
        ("inclusion", "LVEF ≥ 50%"),
    ):
        assert evaluate(line, kind, man).label in (Label.NOT_ENOUGH_INFO, Label.NEEDS_DISCUSSION), line


def test_uln_limit_needs_a_value_in_uln() -> None:
    lab = PatientProfile(labs=(LabValue("alt", 40.0, "U/L", "2026-11-01"),))
    assert evaluate("ALT ≤ 3 × ULN", "inclusion", lab).label != Label.NOT_MET
    assert evaluate("ALT ≤ 3 × ULN", "inclusion", PatientProfile(notes="ALT 4 x ULN")).label == Label.NOT_MET


@pytest.mark.parametrize("stage", [1, 2, 3, 4, 5])
def test_ckd_stage_row_is_read_as_its_egfr_range(stage: int) -> None:
    low, high = ckd_stages()[stage]
    inside = (low + min(high, 120)) / 2
    for value, expected in ((inside, True), (high + 1 if high < 200 else low - 1, False)):
        facts = facts_from_profile(PatientProfile(conditions=(f"eGFR {value:g}",)))
        (limit,) = limits_in(f"CKD stage {stage}")
        assert judge(limit, facts, "exclusion")[0] is expected, (stage, value)


KIDNEY = PatientProfile(
    age=62, sex="male", conditions=("type 2 diabetes", "chronic kidney disease", "eGFR 42")
)


@pytest.mark.parametrize(
    ("kind", "line", "label"),
    [
        ("exclusion", "eGFR < 30", Label.NOT_MET),
        ("exclusion", "End-stage renal disease (eGFR < 15)", Label.NOT_MET),
        ("exclusion", "Renal impairment, defined as GFR <40 ml/min", Label.NOT_MET),
        ("exclusion", "Renal insufficiency (creatinine clearance < 30 mL/min)", Label.NOT_MET),
        ("exclusion", "eGFR < 60 mL/min/1.73 m²", Label.MET),
        ("inclusion", "Creatinine clearance ≥ 30 mL/min", Label.MET),
        ("inclusion", "eGFR ≥ 45 mL/min/1.73m2", Label.NOT_MET),
    ],
)
def test_kidney_cut_offs_use_the_typed_egfr(kind: str, line: str, label: Label) -> None:
    judgement = evaluate(line, kind, KIDNEY)  # type: ignore[arg-type]
    assert judgement.label == label, judgement.reason
    assert "42" in judgement.reason and "shows kidney disease" not in judgement.reason


def test_creatinine_clearance_reason_says_it_is_read_as_egfr() -> None:
    reason = evaluate("Creatinine clearance ≥ 30 mL/min", "inclusion", KIDNEY).reason
    assert "same kidney-function measure" in reason


# --- Over the shipped sample ---------------------------------------------------------------------------------

_KIDNEY_WORDS = r"\b(?:e?GFR|glomerular filtration|creatinine clearance|CrCl|CLcr)\b"
# Independent of the engine: the measure, a comparison and a number in mL/min.
_CUT_OFF = re.compile(
    r"(?:e?GFR|glomerular filtration rate|creatinine clearance|CrCl|CLcr)\)?[^.;0-9]{0,25}?"
    r"(<=|>=|<|>|≤|≥|less than|below|under|greater than|above|more than|at least)\s*(\d{2,3})\s*ml",
    re.I,
)
# Lines scoped to an age group or sex, or giving a formula, are about other things too (tested elsewhere).
_SCOPED = re.compile(
    r"years? old|\baged?\b|\bfemales?\b|\bwom[ae]n\b|\bmales?\b|\bchildren\b|formula|equation", re.I
)


@pytest.mark.parametrize(
    "patient",
    [
        PatientProfile(age=62, sex="male", conditions=("chronic kidney disease", "eGFR 42")),
        PatientProfile(
            age=62,
            sex="male",
            conditions=("chronic kidney disease",),
            labs=(LabValue("egfr", 42.0, "mL/min/1.73m2", "2026-11-01"),),
        ),
    ],
    ids=["typed", "uploaded"],
)
def test_sample_kidney_cut_offs_follow_egfr_42(patient: PatientProfile) -> None:
    wrong = []
    checked = 0
    for nct, kind, line in sample_lines(_KIDNEY_WORDS):
        cut = _CUT_OFF.search(line)
        if cut is None or _SCOPED.search(line):
            continue
        checked += 1
        below = cut.group(1).lower() in ("<", "<=", "≤", "less than", "below", "under")
        holds = 42 < float(cut.group(2)) if below else 42 > float(cut.group(2))
        judgement = evaluate(line, kind, patient)
        if (kind == "exclusion" and judgement.label == (Label.NOT_MET if holds else Label.MET)) or (
            kind == "inclusion" and judgement.label == (Label.NOT_MET if holds else Label.MET)
        ):
            wrong.append((nct, kind, line[:120], judgement.label.value, judgement.reason[:120]))
    assert checked > 50
    assert not wrong, wrong[:10]


_NOTE_WITH_CREATININE = (
    "0. A 70-year-old man comes to clinic with ankle swelling.\n"
    "1. His serum creatinine is 1.3 mg/dL and his blood pressure is 150/90 mm Hg."
)


@pytest.mark.parametrize(
    ("line", "kind", "expected"),
    [
        ("Serum creatinine > 2 mg/dL", "exclusion", Label.NOT_MET),
        ("serum creatinine ≥ 177 µmol/L", "exclusion", Label.NOT_MET),
        ("Creatinine > 1.0 mg/dL", "exclusion", Label.MET),
        ("Serum creatinine ≤ 1.5 mg/dL", "inclusion", Label.MET),
    ],
)
def test_note_creatinine_is_compared_with_the_cut_off(line: str, kind: str, expected: Label) -> None:
    assert evaluate(line, kind, _NOTE_WITH_CREATININE).label == expected  # type: ignore[arg-type]


def test_creatinine_inside_a_longer_measure_name_is_that_measure() -> None:
    assert [lim.row.key for lim in limits_in("Creatinine clearance < 30")] == ["egfr"]
    assert [lim.row.key for lim in limits_in("albumin creatinine ratio > 30 mg/g")] == ["uacr"]


def test_bounds_joined_by_or_facing_apart_mean_outside_a_range() -> None:
    # "BMI < 18.5 or > 30" excludes the very thin and the obese: either bound is enough (sample lines).
    obese = PatientProfile(age=40, sex="male", notes="BMI 31")
    normal = PatientProfile(age=40, sex="male", notes="BMI 24")
    for line in ("BMI < 18.5 or >30 kg/m2", "Body mass index above 30 or below 18", "BMI<18or >29"):
        assert evaluate(line, "exclusion", obese).label == Label.MET, line
        assert evaluate(line, "exclusion", normal).label == Label.NOT_MET, line
    (limit,) = limits_in("platelet count <100,000 cells/mm3 or >700,000 cells/mm3")
    assert limit.either and limit.shown() == "< 100 or > 700"


def test_a_second_bound_facing_the_same_way_is_another_way_to_qualify() -> None:
    # Meeting only the conditional bound ("> 75,000 if bone marrow involvement") is not known to be enough.
    line = "Platelet count > 100,000/uL or > 75,000/uL if bone marrow (BM) involvement or splenomegaly"
    for value, label in (("platelets 150", Label.MET), ("platelets 95", Label.NOT_ENOUGH_INFO),
                         ("platelets 60", Label.NOT_MET)):
        patient = PatientProfile(age=60, sex="female", notes=value)
        assert evaluate(line, "inclusion", patient).label == label, value
    # The same limit in two units is one bound: "≥ 1,500/mm3 or ≥ 1.5 x 10^9/L".
    two_units = ("Absolute neutrophil count (ANC) greater than or equal to 1,500/mm3 or greater than "
                 "or equal to 1.5 x 10^9/L")
    assert evaluate(two_units, "inclusion", PatientProfile(age=60, notes="ANC 1.2")).label == Label.NOT_MET


@pytest.mark.parametrize(
    ("line", "bounds"),
    [
        ("LDL-C no less than 1.4 mmol/L", [("≥", 54.1)]),
        ("HbA1c no greater than 11.0%", [("≤", 11.0)]),
        ("BMI not less than 18.0 kg/m²", [("≥", 18.0)]),
        ("BMI is more than 18.5 kg/m^2 , no more than 29.9 kg/m^2", [(">", 18.5), ("≤", 29.9)]),
    ],
)
def test_no_less_and_no_more_than_are_at_least_and_at_most(line: str, bounds: list[tuple[str, float]]
                                                            ) -> None:
    (limit,) = limits_in(line)
    assert [(op, round(b, 1)) for op, b in limit.bounds] == bounds
    assert limit.written == " ".join(line.split()).rstrip(".")  # quoted as the trial wrote it


@pytest.mark.parametrize(
    "line",
    [
        "LDL or plasma apheresis <2 months prior to randomization",
        "Received a transfusion (platelets or red blood cells) =< 4 weeks prior to registration",
        "raised LDL-C level, for at least 3 months",
    ],
)
def test_a_number_followed_by_a_time_word_is_a_duration_not_a_level(line: str) -> None:
    assert limits_in(line) == []


def test_ferritin_and_ldl_are_read_from_the_patients_own_words_with_units() -> None:
    man = PatientProfile(age=60, sex="male", notes="Ferritin 40 ng/mL. LDL 160 mg/dL.")
    assert evaluate("Serum ferritin ≥50 μg/L at screening", "inclusion", man).label == Label.NOT_MET
    assert evaluate("Ferritin > 800 ng/ml", "exclusion", man).label == Label.NOT_MET
    assert evaluate("LDL-C ≥ 4.1 mmol/L", "inclusion", man).label == Label.MET  # 160 mg/dL is 4.14 mmol/L
    assert evaluate("LDL-C ≥ 4.2 mmol/L", "inclusion", man).label == Label.NOT_MET
    in_mmol = PatientProfile(age=60, notes="LDL 3.1 mmol/L")
    assert evaluate("LDL-C < 130 mg/dL", "inclusion", in_mmol).label == Label.MET
    uploaded = PatientProfile(age=60, labs=(LabValue("ldl", 3.1, "mmol/L", "2026-01-01"),))
    judged = evaluate("Fasting LDL-C between 130 mg/dL and 220 mg/dL", "inclusion", uploaded)
    assert judged.label == Label.NOT_MET, judged.reason
    assert "3.1 mmol/L on 2026-01-01 (120 mg/dL)" in judged.reason, judged.reason


LIMIT_GROUP_ROWS = list(csv.DictReader(MEASURES_CSV.with_name("limit_groups.csv").open(encoding="utf-8")))


@pytest.mark.parametrize("row", LIMIT_GROUP_ROWS, ids=[r["word"] for r in LIMIT_GROUP_ROWS])
def test_limit_groups_row_reads_its_example(row: dict[str, str]) -> None:
    (limit, *_) = limits_in(row["example"])
    assert limit.sex == row["expected"] == row["sex"]
    assert row["source"].strip()


def test_a_limit_for_the_other_sex_does_not_judge_the_patient() -> None:
    line = "Hb<12g/dl for males and <11g/dl for females"
    woman = PatientProfile(age=40, sex="female", notes="Hemoglobin 11.5 g/dL")
    man = PatientProfile(age=40, sex="male", notes="Hemoglobin 11.5 g/dL")
    unknown = PatientProfile(age=40, notes="Hemoglobin 11.5 g/dL")
    assert evaluate(line, "exclusion", man).label == Label.MET  # 11.5 < 12: the men's limit excludes him
    assert evaluate(line, "exclusion", woman).label == Label.NOT_ENOUGH_INFO  # her limit (< 11) is not read
    judged = evaluate(line, "exclusion", unknown)
    assert judged.label == Label.NOT_ENOUGH_INFO and "is for men" in judged.reason, judged.reason
    by_sex = "Hemoglobin: women: > / = 11.5 g/dL; men > / = 12.5 g/dL"
    assert evaluate(by_sex, "inclusion", woman).label == Label.MET


@pytest.mark.parametrize(
    ("line", "key", "bounds"),
    [
        ("Fever ≥101.5oF", "temperature", [("≥", 38.6)]),  # no unit read; above 45 it can only be °F
        ("Oral temperature less than 95°F or more than 98.6°F", "temperature", [("<", 35.0), (">", 37.0)]),
        ("weigh at least 110 pounds", "weight", [("≥", 49.9)]),
        ("Body weight < 1500g or > 10 kg", "weight", [("<", 1.5), (">", 10.0)]),
        ("Body mass index >35 kg m-2", "bmi", [(">", 35.0)]),
        ("BMI of 23.0 to 45.0 kilograms per meter squared (kg/m²)", "bmi", [("≥", 23.0), ("≤", 45.0)]),
        ("Hemoglobin must be ≥8 grams per deciliter (g/dL).", "hemoglobin", [("≥", 8.0)]),
        ("Hemoglobin <9 g / dL", "hemoglobin", [("<", 9.0)]),
    ],
)
def test_temperature_weight_and_spaced_units(line: str, key: str, bounds: list[tuple[str, float]]) -> None:
    (limit,) = limits_in(line)
    assert (limit.row.key, [(op, round(b, 1)) for op, b in limit.bounds]) == (key, bounds)


def test_a_weight_without_a_unit_is_not_read() -> None:
    # kg or lb: "less than 6 feet tall and over 230 lbs" must not become a weight under 6 kg
    assert limits_in("Weight > 50") == []
    assert limits_in("Combined height and weight that is either less than 6 feet tall") == []


def test_a_note_without_fever_and_the_least_weight_for_age_settle_limits_without_a_value() -> None:
    afebrile = PatientProfile(age=40, sex="female", notes="A 40-year-old woman with a cough. No fever.")
    judged = evaluate("Body temperature ≥ 38.0 °C", "exclusion", afebrile)
    assert judged.label == Label.NOT_MET and "no fever" in judged.reason, judged.reason
    adult = PatientProfile(age=50, sex="male", conditions=("heart failure",))
    judged = evaluate("Subjects who weigh less than 7 kg", "exclusion", adult)
    assert judged.label == Label.NOT_MET and "WHO growth standards" in judged.reason, judged.reason
    heavy = evaluate("Body weight ≥ 80 kg", "inclusion", adult)
    assert heavy.label == Label.NOT_ENOUGH_INFO  # a limit above the floor is not settled by it


@pytest.mark.parametrize(
    "line",
    [
        "Birth weight < 1500 g",
        "Weight loss of more than 5 kg within the past 6 months",
        "Significant change in body weight (3 kg or more) in the past 3 months",
        "Stable weight over the last 5 months (body weight changes>5kg)",
    ],
)
def test_birth_weight_and_weight_changes_are_not_the_patients_weight(line: str) -> None:
    child = PatientProfile(age=9, sex="male", notes="9 year old boy, weight 28 kg")
    assert evaluate(line, "exclusion", child).label != Label.MET
    assert evaluate(line, "inclusion", child).label not in (Label.MET, Label.NOT_MET)


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ("Morbid obesity defined as a BMI more than 40 or a weight of more than 45 kg (100 lbs.) over "
         "ideal body weight", "exclusion"),
        ("Clinically significant vital signs (reference value range: body temperature (axillary temperature)"
         "<=37.2℃)", "exclusion"),
    ],
)
def test_a_weight_over_the_ideal_and_a_normal_range_are_not_the_patients_level(line: str, kind: str
                                                                          ) -> None:
    # 70 kg is "more than 45 kg" and 37.1 °C is "<= 37.2", yet neither says the line applies to the patient.
    patient = PatientProfile(age=30, sex="male", notes="Weight 70 kg. Temperature 37.1 C.")
    assert evaluate(line, kind, patient).label == Label.NOT_ENOUGH_INFO  # type: ignore[arg-type]


def test_a_converted_value_on_the_limit_is_on_it() -> None:
    normal = PatientProfile(age=45, sex="female", notes="T 98.6 F, blood pressure 118/76.")
    fever = "Fever (axillary temperature > 37ºC or equivalent)"
    assert evaluate(fever, "exclusion", normal).label == Label.NOT_MET


def test_blood_pressure_read_from_a_pair_and_each_bound_kept_to_its_name() -> None:
    patient = PatientProfile(age=60, sex="male", notes="BP 150/95 mmHg.")
    assert evaluate("Systolic blood pressure > 160 mmHg", "exclusion", patient).label == Label.NOT_MET
    assert evaluate("Diastolic blood pressure > 90 mmHg", "exclusion", patient).label == Label.MET
    # a bound after "or" or after a closing bracket belongs to the next name; a pair limit is not one bound
    for line in ("BP >160 mm Hg systolic or >95 mm Hg diastolic",
                 "hypertension [>140 systolic and/or >90 diastolic], hypotension [<90/60]",
                 "DBP(diastolic blood pressure) is less than 90/50mmHg",
                 "systolic dysfunction (LVEF < 55%)"):
        assert [lim.row.key for lim in limits_in(line)] in ([], ["lvef"]), line
    # the pulmonary artery's systolic pressure is not the blood pressure (limit_context.csv, "other")
    assert evaluate("Pulmonary artery systolic pressure > 60 mmHg", "exclusion", patient).label == (
        Label.NOT_ENOUGH_INFO)
    # names joined before one limit share it
    assert [lim.row.key for lim in limits_in("AST and ALT ≤ 2.5 x ULN")] == ["ast", "alt"]


@pytest.mark.parametrize(
    ("line", "label"),
    [
        ("The subject's systolic blood pressure is outside the range of 90-140 mmHg", Label.NOT_ENOUGH_INFO),
        ("Blood pressure (BP) outside the limits considered safe: systolic BP (SBP) 90 - 140 mmHg",
         Label.NOT_ENOUGH_INFO),
    ],
)
def test_a_normal_range_in_an_exclusion_does_not_exclude_a_normal_value(line: str, label: Label) -> None:
    normal = PatientProfile(age=45, sex="female", notes="Blood pressure 118/76.")
    assert evaluate(line, "exclusion", normal).label == label


@pytest.mark.parametrize(
    ("line", "label"),
    [
        ("No severe anemia (Hb < 10 g/dL)", Label.NOT_MET),  # 9.5 is below 10: the anemia the line denies
        ("Without severe anemia (hemoglobin < 8 g/dL)", Label.MET),
        ("No uncontrolled hypertension (diastolic greater than 110 mm Hg)", Label.MET),
    ],
)
def test_a_bracket_defining_what_the_line_denies_is_judged_the_other_way(line: str, label: Label) -> None:
    patient = PatientProfile(age=60, sex="male", conditions=("hemoglobin 9.5 g/dL",), notes="BP 150/95")
    judged = evaluate(line, "inclusion", patient)
    assert judged.label == label and "opposite" in judged.reason, judged.reason


COMPARISON_WORDS_CSV = MEASURES_CSV.with_name("comparison_words.csv")
COMPARISON_WORD_ROWS = list(csv.DictReader(COMPARISON_WORDS_CSV.open(encoding="utf-8")))


@pytest.mark.parametrize("row", COMPARISON_WORD_ROWS, ids=[r["words"] for r in COMPARISON_WORD_ROWS])
def test_comparison_words_row_reads_its_example(row: dict[str, str]) -> None:
    (limit,) = limits_in(row["example"])
    assert limit.bounds[0][0] == {">=": "≥", "<=": "≤", "<": "<", ">": ">"}[row["symbol"]]
    assert row["source"].strip()


def test_bmi_in_kilograms_per_meter_square_and_a_fetal_weight() -> None:
    line = "Body mass index (BMI) less than or equal to (<=) 35 kilogram per meter square (kg/m^2)"
    assert [(lim.row.key, lim.bounds) for lim in limits_in(line)] == [("bmi", (("≤", 35.0),))]
    child = PatientProfile(age=9, sex="male", notes="9 year old boy, weight 28 kg")
    assert evaluate("Fetal macrosomia with a weight greater than 4Kg", "inclusion", child).label != Label.MET
