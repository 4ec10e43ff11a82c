"""Profile mode: the scope of a line (cohort headings, comparison groups), limits that are conditions or
changes, lines of therapy, consent in a profile, and the profile benchmark on the hand-judged forms."""

from __future__ import annotations

import argparse
import csv
import json
import re
from pathlib import Path

import pytest

from devtools.commands import bench_eligibility_cmd
from devtools.profile_benchmark import DEFAULT_DIR, load_cases, outcome, run_profile_benchmark
from services.eligibility.labels import Label
from services.eligibility.limit_context import LIMIT_CONTEXT_PATH, limit_role
from services.eligibility.measures import limits_in
from services.eligibility.parser import parse_criteria
from services.eligibility.patient import PatientProfile
from services.eligibility.rules import criterion_text_for, evaluate, patient_facts
from services.eligibility.scope import SCOPE_CUES_PATH, label_meaning, outside_scope
from services.eligibility.therapy_lines import therapy_lines
from services.errors import BadInput

BREAST = PatientProfile(
    age=54,
    sex="female",
    conditions=("HER2-positive metastatic breast cancer",),
    biomarkers=("HER2 positive (IHC 3+)", "ER positive"),
)
MYELOMA = PatientProfile(
    age=68,
    sex="male",
    conditions=("relapsed refractory multiple myeloma",),
    notes="Relapsed after three lines of therapy.",
)
KIDNEY = PatientProfile(
    age=64,
    sex="male",
    conditions=("type 2 diabetes", "chronic kidney disease stage 3b"),
    biomarkers=("eGFR 38 mL/min/1.73m2", "urine albumin-to-creatinine ratio 450 mg/g"),
    notes="BMI 32.",
)


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


# --- Data files: one test row each
# -----------------------------------------------------------------------------


@pytest.mark.parametrize("row", _rows(SCOPE_CUES_PATH), ids=lambda r: r["cue"])
def test_scope_cue_row_reads_its_example(row: dict[str, str]) -> None:
    assert label_meaning(row["example"]) == row["expected"]


@pytest.mark.parametrize("row", _rows(LIMIT_CONTEXT_PATH), ids=lambda r: r["cue"])
def test_limit_context_row_reads_its_example(row: dict[str, str]) -> None:
    text = row["example"]
    name_start = text.index(row["measure"])
    number = re.compile(r"\d").search(text, name_start + len(row["measure"]))
    assert number is not None
    # A cue after the limit is looked for where the limit ends.
    after = row["where"] == "after"
    end = next(c.span[1] for c in limits_in(text) if c.name_start == name_start) if after else None
    assert limit_role(text, name_start, number.start(), end) == row["expected"]


def test_a_plain_limit_has_no_context_role() -> None:
    text = "eGFR >= 45 mL/min/1.73 m2"
    assert limit_role(text, 0, 8) is None


# --- Scope
# ----------------------------------------------------------------------------------------------------


def test_cohort_heading_after_inclusion_criteria_becomes_the_section() -> None:
    parsed = parse_criteria(
        "Inclusion Criteria: Urothelial Bladder Cancer Expansion Cohort(s).\n\n"
        "1. Disease must be measurable by RECIST 1.1.\n2. Prior platinum chemotherapy.\n\n"
        "Inclusion Criteria: Dose Escalation\n\n1. Evidence of objective disease."
    )
    assert [c.section for c in parsed.inclusion] == ["Urothelial Bladder Cancer Expansion Cohort(s)"] * 2 + [
        "Dose Escalation"
    ]
    assert criterion_text_for(parsed.inclusion[0]).startswith(
        "Urothelial Bladder Cancer Expansion Cohort(s): "
    )


def test_a_cohort_for_another_disease_does_not_apply() -> None:
    judged = evaluate(
        "Urothelial Bladder Cancer Expansion Cohort(s): Disease must be measurable by RECIST 1.1.",
        "inclusion",
        BREAST,
    )
    assert judged.label is Label.NOT_APPLICABLE
    assert "urinary bladder neoplasms" in judged.reason


def test_a_cohort_for_the_opposite_biomarker_result_does_not_apply() -> None:
    label = "Metastatic Breast Cancer (HR+/HER2-) Exploratory Efficacy Cohort"
    assert (
        evaluate(f"{label}: Documented evidence of HER2- status.", "inclusion", BREAST).label
        is Label.NOT_APPLICABLE
    )
    assert (
        outside_scope("Metastatic Breast Cancer (HER2+) Exploratory Efficacy Cohorts", patient_facts(BREAST))
        is None
    )


def test_a_part_without_a_condition_leaves_the_line_to_the_rules() -> None:
    judged = evaluate("Dose Escalation: Male or female patients aged >= 18 years.", "inclusion", BREAST)
    assert judged.label is Label.MET


def test_comparison_and_healthy_groups_are_not_a_patients() -> None:
    facts = patient_facts(BREAST)
    assert outside_scope("Control patients with iatrogenic CAF", facts) is not None
    assert outside_scope("Healthy Volunteer Group", facts) is not None
    assert outside_scope("Control group with breast cancer", facts) is None


def test_misspelt_exclusion_heading_still_starts_the_exclusions() -> None:
    parsed = parse_criteria(
        "INCLUSION CRITERIA:\n\n* Adults\n\nEXCLUSION CRITIERIA:\n\n* Pregnant or breast feeding"
    )
    assert [c.text for c in parsed.exclusion] == ["Pregnant or breast feeding"]


def test_a_flat_list_of_exceptions_stays_with_its_line() -> None:
    parsed = parse_criteria(
        "Exclusion Criteria:\n\n* Other primary tumor with exception of:\n"
        "* Curatively treated non-melanomatous skin cancer\n"
        "* Known active hepatitis B or C infection."
    )
    assert [c.full_text for c in parsed.exclusion] == [
        "Other primary tumor with exception of: Curatively treated non-melanomatous skin cancer",
        "Known active hepatitis B or C infection.",
    ]


# --- Limits that are conditions or changes
# -------------------------------------------------------------------


def test_a_rule_for_another_kidney_function_does_not_apply() -> None:
    judged = evaluate(
        "for participants with screening eGFR >= 45 mL/min/1.73 m2, potassium must be >= 3.0 and "
        "<= 4.8 mmol/L at the Screening Visit",
        "inclusion",
        KIDNEY,
    )
    assert judged.label is Label.NOT_APPLICABLE


def test_a_condition_met_leaves_the_other_limit_open() -> None:
    judged = evaluate(
        "Serum potassium >= 3.0 and <= 4.8 mmol/L if eGFR >= 45 mL/min/1.73 m2; serum potassium "
        ">= 3.0 and <= 4.5 mmol/L if eGFR < 45 mL/min/1.73 m2",
        "inclusion",
        KIDNEY,
    )
    assert judged.label is not Label.NOT_MET


def test_a_change_in_a_value_is_not_the_patients_level() -> None:
    profile = PatientProfile(
        age=19, sex="male", conditions=("sickle cell disease",), biomarkers=("hemoglobin 7.9 g/dL",)
    )
    judged = evaluate("Total hemoglobin increase less than 1 g/dL while on hydroxyurea", "inclusion", profile)
    assert judged.label is not Label.NOT_MET


def test_a_comparison_word_with_its_symbol_in_brackets() -> None:
    # Read as ">= 27.0"; the reason quotes the line as the trial wrote it.
    line = "BMI greater than or equal to (>=) 27.0 kg/m2"
    assert [(lim.bounds, lim.written) for lim in limits_in(line)] == [((("≥", 27.0),), line)]
    assert (
        evaluate(
            "BMI greater than or equal to (≥) 27.0 kilogram per square metre (kg/m^2) at screening.",
            "inclusion",
            KIDNEY,
        ).label
        is Label.MET
    )
    assert (
        evaluate(
            "Albuminuria defined by Urine Albumin-to-Creatinine Ratio (UACR) greater than or equal (≥)100 "
            "and less than (<) 5000 milligram per gram (mg/g).",
            "inclusion",
            KIDNEY,
        ).label
        is Label.MET
    )


# --- Lines of therapy, ages, consent, men
# ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "truth"),
    [
        ("Received 1 to 2 prior lines of anti-myeloma therapy.", False),
        ("Participants received 1 to 3 prior lines of antimyeloma therapy.", True),
        ("At least one prior line of therapy", True),
        ("No more than 2 prior lines of treatment", False),
        ("Less than or equal to (<=2) prior lines of EGFR TKIs", None),
    ],
)
def test_lines_of_therapy_against_the_count_given(text: str, truth: bool | None) -> None:
    reading = therapy_lines(text, patient_facts(MYELOMA))
    if truth is None:
        assert reading is None
    else:
        assert reading is not None and reading.truth is truth


def test_lines_of_therapy_unknown_without_a_count() -> None:
    reading = therapy_lines("Received 1 to 2 prior lines of therapy.", patient_facts(BREAST))
    assert reading is not None and reading.truth is None


def test_ages_are_not_read_out_of_names_or_group_rules() -> None:
    child = PatientProfile(
        age=9,
        sex="male",
        conditions=("relapsed B-cell acute lymphoblastic leukemia",),
        biomarkers=("CD22 positive",),
    )
    assert (
        evaluate("Evidence of refractory or recurrent CD22+ leukemia or lymphoma", "inclusion", child).label
        is not Label.NOT_MET
    )
    two = evaluate(
        "Male and female subjects aged ≤ 30 years. First 2 enrolled subjects: age ≥ 18 and ≤ 30 years",
        "inclusion",
        child,
    )
    assert two.label is Label.NEEDS_DISCUSSION
    adult = PatientProfile(age=19, sex="male", conditions=("sickle cell disease",))
    assert (
        evaluate(
            "Pediatric patients less than 16 years of age must decline myeloablative bone marrow "
            "transplantation",
            "inclusion",
            adult,
        ).label
        is not Label.NOT_MET
    )


def test_consent_in_a_profile_is_for_the_trial_team() -> None:
    for text, kind in (
        ("Signed written informed consent.", "inclusion"),
        ("Unable or unwilling to comply with the study visits", "exclusion"),
    ):
        judged = evaluate(text, kind, BREAST)  # type: ignore[arg-type]
        assert judged.label is Label.NOT_ENOUGH_INFO
        assert "trial team" in judged.reason


def test_more_criteria_elsewhere_stay_open() -> None:
    assert (
        evaluate("Other protocol-defined Inclusion/Exclusion criteria apply.", "exclusion", MYELOMA).label
        is Label.NOT_ENOUGH_INFO
    )


def test_contraception_for_men_too_stays_open_for_a_man() -> None:
    judged = evaluate(
        "Subjects of childbearing or child-fathering potential must agree to use highly effective "
        "contraception",
        "inclusion",
        MYELOMA,
    )
    assert judged.label is Label.NOT_ENOUGH_INFO


def test_a_turn_to_an_allowance_keeps_the_rule_before_it() -> None:
    judged = evaluate(
        "Persisting toxicity related to prior therapy > Grade 1 NCI-CTCAE v5.0, however alopecia and "
        "sensory neuropathy ≤ Grade 2 is acceptable.",
        "exclusion",
        BREAST,
    )
    assert judged.label is not Label.NOT_APPLICABLE


def test_a_line_naming_only_the_patients_disease_is_met() -> None:
    cf = PatientProfile(age=24, sex="female", conditions=("cystic fibrosis",))
    assert evaluate("Diagnosed with cystic fibrosis", "inclusion", cf).label is Label.MET
    assert evaluate("Diagnosed with sickle cell disease", "inclusion", cf).label is not Label.MET


# --- The benchmark
# ----------------------------------------------------------------------------------------------


def test_outcome_of_each_kind_and_status() -> None:
    assert outcome("inclusion", "met") == outcome("exclusion", "not met") == "for"
    assert outcome("exclusion", "not_applicable") == "for"
    assert outcome("inclusion", "not_met") == outcome("exclusion", "met") == "against"
    assert (
        outcome("inclusion", "needs_discussion") == outcome("exclusion", "not enough information") == "open"
    )


def test_judged_forms_cover_twelve_forms_three_trials_each_with_reasons() -> None:
    cases = load_cases()
    assert len(cases) >= 12
    assert all(len(c["trials"]) == 3 for c in cases)
    assert sum(len(t["lines"]) for c in cases for t in c["trials"]) == 705


def test_a_judged_line_without_a_reason_is_refused(tmp_path: Path) -> None:
    doc = json.loads((DEFAULT_DIR / "crohns_new_york.json").read_text(encoding="utf-8"))
    doc["trials"][0]["lines"][0]["reason"] = ""
    (tmp_path / "one.json").write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(BadInput, match="without a reason"):
        load_cases(tmp_path)


def test_profile_mode_meets_its_acceptance_on_the_judged_forms() -> None:
    result = run_profile_benchmark()
    assert result["lines"] == 705
    assert result["accuracy"] >= 0.85
    assert result["wrong_against"] == []


def test_cli_profile_mode_prints_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "crohns.json").write_text(
        (DEFAULT_DIR / "crohns_new_york.json").read_text(encoding="utf-8"), encoding="utf-8"
    )
    args = argparse.Namespace(mode="profile", path=str(tmp_path), json=True)
    assert bench_eligibility_cmd.handle(args) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["mode"] == "profile" and printed["lines"] == 24
    assert printed["confusion"]["labels"] == ["for", "against", "open"]
