"""Eligibility rules judging lab limits from uploaded lab values: the latest value, unit conversion, ULN limits."""

from __future__ import annotations

import pytest

from services.assistant.guided import GuidedAssistant
from services.assistant.session import AssistantSession
from services.eligibility.labels import Label
from services.eligibility.patient import LabValue, PatientProfile
from services.eligibility.rules import evaluate
from tests.memory_backend import MemoryBackend

LABS = (
    LabValue("creatinine", 1.9, "mg/dL", "2026-01-15", "csv", "Creatinine"),
    LabValue("creatinine", 1.1, "mg/dL", "2026-10-02", "csv", "Creatinine"),
    LabValue("hemoglobin", 10.5, "g/dL", "2026-09-30", "apple-health", "Haemoglobin"),
    LabValue("platelets", 250.0, "×10^9/L", "2026-09-30", "csv", "Platelets"),
    LabValue("anc", 1.2, "×10^9/L", "2026-09-30", "csv", "ANC"),
    LabValue("bilirubin", 0.8, "mg/dL", "2026-09-30", "csv", "Total bilirubin"),
    LabValue("hba1c", 7.0, "%", "2026-09-01", "csv", "HbA1c"),
)
PATIENT = PatientProfile(age=62, sex="male", conditions=("non-small cell lung cancer",), labs=LABS)


@pytest.mark.parametrize(("kind", "criterion", "label", "reason"), [
    ("inclusion", "Creatinine ≤ 1.5 mg/dL", Label.MET,
     "Your creatinine of 1.1 mg/dL on 2026-10-02 is within the limit of ≤ 1.5 mg/dL."),
    ("inclusion", "Serum creatinine <= 133 µmol/L", Label.MET,
     "Your creatinine of 1.1 mg/dL on 2026-10-02 (97.2 µmol/L) is within the limit of ≤ 133 µmol/L."),
    ("inclusion", "Serum creatinine ≤ 88 umol/L", Label.NOT_MET,
     "Your creatinine of 1.1 mg/dL on 2026-10-02 (97.2 umol/L) is outside the limit of ≤ 88 umol/L."),
    ("exclusion", "Serum creatinine > 2.0 mg/dL", Label.NOT_MET,
     "Your creatinine of 1.1 mg/dL on 2026-10-02 is not in the range this exclusion describes: > 2 mg/dL."),
    ("inclusion", "creatinine ≤ 1.5", Label.MET,
     "Your creatinine of 1.1 mg/dL on 2026-10-02 is within the limit of ≤ 1.5 (no unit read with the limit; taken as "
     "mg/dL)."),
    ("inclusion", "Hemoglobin ≥ 9.0 g/dL", Label.MET,
     "Your haemoglobin of 10.5 g/dL on 2026-09-30 is within the limit of ≥ 9 g/dL."),
    ("inclusion", "Hemoglobin ≥ 110 g/L", Label.NOT_MET,
     "Your haemoglobin of 10.5 g/dL on 2026-09-30 (105 g/L) is outside the limit of ≥ 110 g/L."),
    ("inclusion", "Platelets ≥ 100,000/mm3", Label.MET,
     "Your platelet count of 250 ×10^9/L on 2026-09-30 (250,000 /mm3) is within the limit of ≥ 100,000 /mm3."),
    ("inclusion", "HbA1c >= 7.5% and <= 10%", Label.NOT_MET,
     "Your HbA1c of 7 % on 2026-09-01 is outside the limit of ≥ 7.5 and ≤ 10 %."),
    ("inclusion", "HbA1c ≤ 64 mmol/mol", Label.MET,
     "Your HbA1c of 7 % on 2026-09-01 (53 mmol/mol) is within the limit of ≤ 64 mmol/mol."),
    ("inclusion", "Absolute neutrophil count (ANC) ≥ 1500/µL", Label.NOT_MET,
     "Your absolute neutrophil count of 1.2 ×10^9/L on 2026-09-30 (1,200 /µL) is outside the limit of "
     "≥ 1,500 /µL."),
    ("inclusion", "Total bilirubin ≤ 1.5 × ULN", Label.NOT_ENOUGH_INFO,
     "The trial's limit (Total bilirubin <= 1.5 × ULN) is a multiple of the upper limit of normal at its "
     "own laboratory, which is not known here, so your profile's uploaded total bilirubin of 0.8 mg/dL on "
     "2026-09-30 cannot be checked against it. Ask the trial team."),
    ("inclusion", "Serum creatinine less than 1.5 times the upper normal limit", Label.NOT_ENOUGH_INFO,
     "The trial's limit (Serum creatinine less than 1.5 times the upper normal limit) is a multiple of "
     "the upper limit of normal at its own laboratory, which is not known here, so your profile's uploaded "
     "serum creatinine of 1.1 mg/dL on 2026-10-02 cannot be checked against it. Ask the trial team."),
    ("inclusion", "Serum creatinine <=1.25 times of the upper limit of normal value", Label.NOT_ENOUGH_INFO, None),
    ("inclusion", "Creatinine ≤ 1.5 ULN", Label.NOT_ENOUGH_INFO, None),
    ("inclusion", "AST and ALT ≤ 2.5 x ULN", Label.NOT_ENOUGH_INFO,
     "The trial asks for AST and ALT <= 2.5 x ULN; your profile gives no AST value."),
    ("inclusion", "Adequate organ function: ANC ≥ 1.5 x 10^9/L, platelets ≥ 100 x 10^9/L, creatinine ≤ 1.5 mg/dL",
     Label.NOT_MET, "Your absolute neutrophil count of 1.2 ×10^9/L on 2026-09-30 is outside the limit of ≥ 1.5 x 10^9/L."),
])
def test_health_rules_judge_lab_limits_from_the_latest_upload(kind: str, criterion: str, label: Label,
                                                               reason: str | None) -> None:
    judgement = evaluate(criterion, kind, PATIENT)  # type: ignore[arg-type]

    assert judgement.label == label
    if reason is not None:
        assert judgement.reason == reason


def test_health_rules_without_uploads_are_unchanged() -> None:
    bare = PatientProfile(age=62, sex="male", conditions=("non-small cell lung cancer",))
    judgement = evaluate("Creatinine ≤ 1.5 mg/dL", "inclusion", bare)
    # Creatinine is a row of measures.csv, read like bilirubin and ALT: the reason names the missing value.
    assert (judgement.label, judgement.reason) == (
        Label.NOT_ENOUGH_INFO,
        "The trial asks for Creatinine <= 1.5 mg/dL; your profile gives no serum creatinine value.",
    )
    # A note still reads its own values, and an upload does not reach a note.
    note = "0. A 62-year-old man with lung cancer.\n1. Hemoglobin 8.1 g/dL."
    assert evaluate("Hemoglobin ≥ 9.0 g/dL", "inclusion", note).label == Label.NOT_MET


def test_health_rules_reach_the_guided_check() -> None:
    session = AssistantSession()
    session.patient_profile = {"diagnosis": "non-small cell lung cancer", "age": 62, "sex": "male"}
    asked: list[str] = []

    def labs(token: str) -> tuple[LabValue, ...]:
        asked.append(token)
        return LABS

    helper = GuidedAssistant(MemoryBackend(), labs=labs)
    patient = helper.patient(session)
    assert asked == [session.id] and patient.labs == LABS
    _, criteria = helper.judge({"inclusion": ["Serum creatinine ≤ 1.5 mg/dL"], "exclusion": []}, patient)
    [lab] = [c for c in criteria if c["criterion"] == "Serum creatinine ≤ 1.5 mg/dL"]
    assert lab["status"] == "met"
    assert lab["reason"] == "Your creatinine of 1.1 mg/dL on 2026-10-02 is within the limit of ≤ 1.5 mg/dL."
    assert GuidedAssistant(MemoryBackend()).patient(session).labs == ()


WELL = PatientProfile(age=62, sex="male", conditions=("non-small cell lung cancer",), labs=(
    LabValue("hemoglobin", 13.1, "g/dL", "2026-10-03", "apple-health", "Hemoglobin"),
    LabValue("anc", 3.2, "×10^9/L", "2026-10-02", "csv", "ANC"),
    LabValue("platelets", 210.0, "×10^9/L", "2026-10-02", "csv", "Platelets"),
    LabValue("creatinine", 0.9, "mg/dL", "2026-10-02", "apple-health", "Creatinine")))
MARROW = ("Inadequate bone marrow reserve as demonstrated by any of the following: Absolute neutrophil count "
          "<1.5 × 10^9/L; Platelet count <100 × 10^9/L; Haemoglobin <90 g/L")


def test_health_rules_an_exclusion_list_is_not_settled_by_the_values_known_when_others_are_missing() -> None:
    """Any one limit of an exclusion list keeps people out: three values inside their limits and one limit with
    no value (ALT, relative to the lab's upper limit of normal) leave it open, naming what was checked."""
    j = evaluate(MARROW + "; Alanine transferase >2.5 times the upper limit of normal (ULN)", "exclusion", WELL)
    assert j.label == Label.NOT_ENOUGH_INFO
    assert ("Your haemoglobin of 13.1 g/dL on 2026-10-03 (131 g/L) is not in the range this exclusion "
            "describes: < 90 g/L.") in j.reason
    assert "Your absolute neutrophil count of 3.2 ×10^9/L on 2026-10-02" in j.reason
    assert j.reason.endswith("your profile gives no ALT value.")


def test_health_rules_every_limit_of_a_list_checked_names_each_value() -> None:
    out = evaluate(MARROW, "exclusion", WELL)
    assert out.label == Label.NOT_MET
    # in the order the line names them
    assert [s.split(" of ")[0] for s in out.reason.split("Your ")[1:]] == ["absolute neutrophil count",
                                                                           "platelet count", "haemoglobin"]
    inclusion = evaluate("Adequate organ function: ANC ≥ 1.5 × 10^9/L, platelets ≥ 100 × 10^9/L, haemoglobin ≥ 9 "
                         "g/dL, creatinine ≤ 1.5 mg/dL", "inclusion", WELL)
    assert inclusion.label == Label.MET  # the four limits are the whole line
    assert inclusion.reason.count("Your ") == 4 and "creatinine of 0.9 mg/dL on 2026-10-02" in inclusion.reason
    low = PatientProfile(age=62, sex="male", labs=(LabValue("platelets", 80.0, "×10^9/L", "2026-10-02"),))
    # One value inside an excluded range decides, whatever the other limits say or lack.
    for labs in (low.labs, low.labs + WELL.labs[:2]):
        out = evaluate(MARROW, "exclusion", PatientProfile(age=62, sex="male", labs=labs))
        assert (out.label, out.reason) == (Label.MET, "Your platelet count of 80 ×10^9/L on 2026-10-02 is in the range "
                                                      "this exclusion describes: < 100 × 10^9/L.")
