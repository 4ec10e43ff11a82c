"""Plain-language rewrites of common criterion forms and patient-phrased, topic-grouped doctor questions."""

from __future__ import annotations

import pytest

from services.eligibility.plain import TOPICS, patient_question, plain_criterion, topic_of


@pytest.mark.parametrize(("kind", "text", "plain"), [
    ("inclusion", "Age ≥18 years", "Aged 18 or older."),
    ("inclusion", "Men and women aged 18 to 75 years", "Aged 18 to 75."),
    ("inclusion", "Age 18 years to 40 years", "Aged 18 to 40."),
    ("exclusion", "Younger than 21 years of age", "Younger than 21."),
    ("inclusion", "Sex: female", "Women only."),
    ("inclusion", "Eastern Cooperative Oncology Group (ECOG) performance status of 0-1.",
     "Daily activity score (ECOG) of 0 to 1: from fully active to able to do light work but not hard physical work."),
    ("inclusion", "ECOG performance status ≤ 1",
     "Daily activity score (ECOG) of 0 to 1: from fully active to able to do light work but not hard physical work."),
    ("inclusion", "Karnofsky performance status ≥ 70%",
     "Activity score (Karnofsky) of at least 70: looking after yourself, though not able to work or do normal "
     "activity."),
    ("inclusion", "Hemoglobin ≥ 9 g/dL", "A test result showing: haemoglobin (red blood cells) at least 9 g/dL."),
    ("inclusion", "HbA1c between 7.0% and 10.5%",
     "A test result showing: HbA1c (average blood sugar over 2–3 months) between 7.0% and 10.5%."),
    ("inclusion", "Total bilirubin ≤ 1.5 x ULN",
     "A test result showing: bilirubin (a liver blood test) at most 1.5 times the upper limit of normal."),
    ("exclusion", "Prior treatment with a PD-1 or PD-L1 inhibitor", "Had a PD-1 or PD-L1 inhibitor before."),
    ("inclusion", "Immunotherapy-naive", "Never had immunotherapy."),
    ("inclusion", "Received at least one prior line of systemic therapy",
     "Already had at least 1 earlier treatment for this disease."),
    ("exclusion", "Pregnant or lactating women", "Being pregnant or breastfeeding."),
    ("inclusion", "Women of childbearing potential must agree to use highly effective contraception",
     "If you or your partner could become pregnant: you agree to use reliable birth control during the trial (and "
     "for a while after, as the study team will explain)."),
    ("inclusion", "Able to understand and willing to sign a written informed consent document",
     "You are willing and able to agree in writing to take part, after the study has been explained to you."),
    ("exclusion", "Any other condition which, in the opinion of the investigator, would make the patient unsuitable",
     "Any other health problem or situation that the study doctor thinks would make the trial unsafe for you or get "
     "in the way of the study."),
    ("inclusion", "Life expectancy of at least 12 weeks", "Your doctor expects you to live at least 12 weeks."),
    ("inclusion", "Histologically or cytologically confirmed non-small cell lung cancer",
     "Non-small cell lung cancer, confirmed by a lab test of tissue or cells (biopsy)."),
    ("exclusion", "Patients with symptomatic brain metastases", "Symptomatic brain metastases."),
])
def test_eligibility_plain_common_forms(kind: str, text: str, plain: str) -> None:
    assert plain_criterion(text, kind) == plain  # type: ignore[arg-type]


def test_eligibility_plain_keeps_direction_of_exclusions() -> None:
    assert plain_criterion("Not able to comply with study visits", "exclusion").startswith("Not being able")
    assert plain_criterion("Unable to give informed consent", "exclusion").startswith("Not being able")


def test_eligibility_plain_questions_are_a_patients_not_mechanical() -> None:
    assert patient_question("Prisoners", "exclusion") is None  # not something to ask a doctor
    assert patient_question("Age ≥ 18 years", "inclusion") is None  # the rules judge ages
    ecog = patient_question("ECOG 0-1", "inclusion")
    assert ecog is not None and ecog.topic == "Your daily activity"
    prior = patient_question("Prior treatment with a PD-1 inhibitor", "exclusion")
    assert prior is not None and prior.topic == "Treatments you have had"
    assert prior.text == "Have I had any treatment this trial does not allow — “had a PD-1 inhibitor before”?"
    labs = patient_question("Platelets ≥ 100,000/mm3", "inclusion")
    assert labs is not None and labs.topic == "Tests and records to bring"
    for q in (ecog, prior, labs):
        assert "criterion" not in q.text and q.text.endswith("?")


@pytest.mark.parametrize("text", ["", "   \n\n  ", ".", "- •", "**", "\\*"])
def test_eligibility_plain_question_of_an_empty_line_is_none(text: str) -> None:
    """A criterion line with no words (a record's stray bullet or blank line) asks nothing and does not fail."""
    for kind in ("inclusion", "exclusion"):
        assert patient_question(text, kind) is None


def test_eligibility_plain_topics_are_known() -> None:
    assert all(topic_of(t) in TOPICS for t in ("Prisoners", "ECOG 0-1", "Pregnant", "HbA1c ≥ 7%", "EGFR mutation"))
