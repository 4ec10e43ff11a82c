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


@pytest.mark.parametrize(("text", "plain"), [
    # A strict lower bound on ECOG is the next grade up, not the grade written.
    ("ECOG performance status > 2",
     "Daily activity score (ECOG) of 3 or more (at best: in a bed or chair more than half the day)."),
    ("WHO performance status greater than 1",
     "Daily activity score (ECOG) of 2 or more (at best: up and about more than half the day and able to look after "
     "yourself, but not able to work)."),
    # An upper bound on Karnofsky is a ceiling, never "at least".
    ("KPS < 50", "Activity score (Karnofsky) below 50 (at best: needing a lot of help and frequent medical care)."),
    ("Karnofsky performance status of below 70%",
     "Activity score (Karnofsky) below 70 (at best: needing help now and then but managing most of your own needs)."),
    ("Karnofsky ≤ 70", "Activity score (Karnofsky) of at most 70 (at best: looking after yourself, though not able "
     "to work or do normal activity)."),
    # A bound written after the number, and a third grade in a list.
    ("ECOG performance status score of 2 or less",
     "Daily activity score (ECOG) of 0 to 2: from fully active to up and about more than half the day and able to "
     "look after yourself, but not able to work."),
    ("ECOG 2 or higher", "Daily activity score (ECOG) of 2 or more (at best: up and about more than half the day and "
     "able to look after yourself, but not able to work)."),
    ("Karnofsky 70 or less", "Activity score (Karnofsky) of at most 70 (at best: looking after yourself, though not "
     "able to work or do normal activity)."),
    ("Performance status WHO >2", "Daily activity score (ECOG) of 3 or more (at best: in a bed or chair more than "
     "half the day)."),
    ("WHO/ECOG PS of 0-1",
     "Daily activity score (ECOG) of 0 to 1: from fully active to able to do light work but not hard physical work."),
    ("WHO scores 0-2", "Daily activity score (ECOG) of 0 to 2: from fully active to up and about more than half the "
     "day and able to look after yourself, but not able to work."),
    ("ECOG 0, 1 or 2", "Daily activity score (ECOG) of 0 to 2: from fully active to up and about more than half the "
     "day and able to look after yourself, but not able to work."),
    # Karnofsky goes in steps of 10, so "more than 60" is 70 or better.
    ("Karnofsky performance status > 60%",
     "Activity score (Karnofsky) of more than 60: looking after yourself, though not able to work or do normal "
     "activity."),
])
def test_eligibility_plain_performance_bounds_keep_their_direction(text: str, plain: str) -> None:
    assert plain_criterion(text, "exclusion") == plain


@pytest.mark.parametrize("text", [
    "Who cannot satisfy sexual activity (more than 4 times) with proper sexual stimulation",
    "Subjects who have 2 or more lumbar disc herniations as assessed by MRI.",
    "Diagnosis of pulmonary hypertension WHO Groups 2, 3, 4, or 5",
    "WHO grade 2 glioma",
    # nor is an age the score
    "Karnofsky performance status (for patients >12 years of age) or Lansky Play score (for patients ≤12 years of age)",
])
def test_eligibility_plain_who_is_not_always_the_who_scale(text: str) -> None:
    """"who" the pronoun, and WHO groups or grades, are not a WHO performance status."""
    assert "activity score" not in plain_criterion(text, "exclusion")


@pytest.mark.parametrize(("text", "plain"), [
    ("Total bilirubin ≤ 1.5 x ULN (or ≤ 3 x ULN for patients with Gilbert's syndrome)",
     "Total bilirubin ≤ 1.5 x ULN (or ≤ 3 x ULN for patients with Gilbert's syndrome)"),
    ("AST or ALT > 2.5 x ULN (> 5 x ULN if liver metastases)", "AST or ALT > 2.5 x ULN (> 5 x ULN if liver metastases)"),
    ("Hemoglobin < 9 g/dL unless transfused", "Hemoglobin < 9 g/dL unless transfused."),
    ("Patients with cardiac disease (LVEF < 50%) or who have received > 450 mg/m2 of doxorubicin",
     "Cardiac disease (LVEF < 50%) or who have received > 450 mg/m2 of doxorubicin."),
    ("INR > 3 for patients using blood thinners (such as Coumadin)",
     "INR > 3 for patients using blood thinners (such as Coumadin)"),
])
def test_eligibility_plain_lab_line_with_more_than_limits_keeps_its_words(text: str, plain: str) -> None:
    """A line that says more than its lab limits (an exception, whom the limit is for, another condition) is not
    cut down to the limits alone."""
    assert plain_criterion(text, "exclusion") == plain


def test_eligibility_plain_lab_limits_keep_their_framing_out() -> None:
    assert plain_criterion("Adequate bone marrow function (ANC ≥ 1.5x109/L, platelets ≥100x109/L)", "inclusion") == (
        "Test results showing: neutrophils (white blood cells that fight infection) at least 1.5 × 10^9/L; platelets "
        "(blood cells that help clotting) at least 100 × 10^9/L.")
    assert plain_criterion("Patients with HbA1c greater than 10% at screening", "exclusion") == (
        "A test result showing: HbA1c (average blood sugar over 2–3 months) more than 10%.")


@pytest.mark.parametrize(("kind", "text", "plain"), [
    ("exclusion", "Life expectancy < 12 weeks", "Your doctor expects you to live less than 12 weeks."),
    ("exclusion", "Individuals with a life expectancy of less than 1 year", "Your doctor expects you to live less than 1 year."),
    ("inclusion", "Life expectancy ≤ 6 months", "Your doctor expects you to live at most 6 months."),
    ("inclusion", "Life expectancy of no more than 6 months", "Your doctor expects you to live at most 6 months."),
    ("inclusion", "Life expectancy of 6 months or less", "Your doctor expects you to live at most 6 months."),
    ("inclusion", "Life expectancy of not less than 12 weeks", "Your doctor expects you to live at least 12 weeks."),
    ("inclusion", "Life expectancy >= 3 months", "Your doctor expects you to live at least 3 months."),
])
def test_eligibility_plain_life_expectancy_keeps_its_bound(kind: str, text: str, plain: str) -> None:
    """An upper limit on life expectancy (hospice and palliative trials, or an exclusion) is not turned into a lower one."""
    assert plain_criterion(text, kind) == plain


def test_eligibility_plain_keeps_direction_of_exclusions() -> None:
    # An exclusion that names normal function describes what keeps people out, not that their organs work well.
    assert plain_criterion("Hepatic disease: GOT, GPT ≥ 3 X upper limit of normal Renal disease: blood creatinine "
                           "≥ 2.5mg/dl", "exclusion") == ("Hepatic disease: GOT, GPT ≥ 3 X upper limit of normal Renal "
                                                         "disease: blood creatinine ≥ 2.5mg/dl.")
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


@pytest.mark.parametrize(("kind", "text", "plain"), [
    # Each of these was "Being pregnant or breastfeeding." or the birth-control promise, whatever the line said.
    ("inclusion", "Not pregnant or breastfeeding", "Not pregnant or breastfeeding."),
    ("exclusion", "Nursing home residents", "Nursing home residents."),
    ("exclusion", "History of pregnancy-induced hypertension", "History of pregnancy-induced hypertension."),
    ("inclusion", "Pregnant women at 24-28 weeks of gestation with gestational diabetes",
     "Pregnant women at 24-28 weeks of gestation with gestational diabetes."),
    ("exclusion", "Pregnant woman", "Being pregnant."),
    ("exclusion", "Subjects who are breast-feeding", "Breastfeeding."),
    ("inclusion", "Mothers", "Mothers."),
    ("inclusion", "Pregnancy test must be negative", "If you could become pregnant: a negative pregnancy test before the start."),
    ("exclusion", "Positive pregnancy test", "If you could become pregnant: a positive pregnancy test before the start."),
    ("exclusion", "Use of hormonal contraceptives", "Use of hormonal contraceptives."),
    ("exclusion", "Women of childbearing potential", "Women of childbearing potential."),
    ("inclusion", "Postmenopausal or surgically sterilized women", "Postmenopausal or surgically sterilized women."),
    ("exclusion", "Women of childbearing potential unwilling to use adequate contraception",
     "If you or your partner could become pregnant: not agreeing to use reliable birth control during the trial."),
    ("exclusion", "Positive pregnancy test, or woman of child bearing potential not using highly effective methods of "
     "contraception", "Positive pregnancy test, or woman of child bearing potential not using highly effective methods "
     "of contraception."),
])
def test_eligibility_plain_pregnancy_lines_keep_what_they_say(kind: str, text: str, plain: str) -> None:
    """A line that mentions pregnancy or birth control is rewritten only when the rewrite says the same thing: not
    when it is negated, names something else (a nursing home, a pregnancy complication, hormonal contraceptives as
    a medicine) or adds conditions; and it names only what the line names (pregnancy, breastfeeding, or both)."""
    assert plain_criterion(text, kind) == plain


@pytest.mark.parametrize(("kind", "text"), [
    # Each of these was rewritten into a sentence that says something else.
    ("inclusion", "Patients unable to give informed consent themselves"),  # "You are willing and able to agree ..."
    ("inclusion", "Age 18 years or older and willing to sign consent"),  # the age was dropped
    ("exclusion", "Alcohol abuse within 3 months of informed consent"),  # "Not being able or willing to agree ..."
    ("inclusion", "Prior to randomization, patients must have a negative HIV test"),  # "Had to randomization, ..."
    ("inclusion", "Prior chemotherapy is allowed"),  # "Had chemotherapy is allowed before."
    ("inclusion", "Previous treatment with anti-PD-1 is not allowed"),  # "Had anti-PD-1 is not allowed before."
    ("inclusion", "Previously untreated metastatic NSCLC"),  # "Had untreated metastatic NSCLC before."
    ("inclusion", "No disease progression after first-line chemotherapy"),  # "The disease grew or came back ..."
    ("inclusion", "Not chemotherapy-naive"),  # "Never had not chemotherapy."
    ("inclusion", "Measurable disease per RECIST 1.1 is not required"),  # "A tumour that can be measured ..."
    ("inclusion", "Received at least one prior line of therapy but no more than three"),  # the upper bound was dropped
    ("inclusion", "ECOG 0-1 unless due to cancer pain"),  # the exception was dropped
    ("inclusion", "Life expectancy of more than 3 months unless in hospice"),
    ("inclusion", "No prior therapy except debulking surgery or biopsy"),
])
def test_eligibility_plain_negations_exceptions_and_bounds_are_not_lost(kind: str, text: str) -> None:
    """A short wording is used only when it says what the line says; otherwise the line keeps its own words."""
    assert plain_criterion(text, kind) == text + "."


def test_eligibility_plain_consent_and_visits_keep_their_short_wording() -> None:
    assert plain_criterion("Signed informed consent", "inclusion").startswith("You are willing and able to agree")
    assert plain_criterion("Unwillingness to comply with study procedures", "exclusion").startswith("Not being able")
    assert plain_criterion("No prior chemotherapy for metastatic disease", "inclusion") == (
        "Never had chemotherapy for metastatic disease.")
    assert plain_criterion("Prior chemotherapy", "exclusion") == "Had chemotherapy before."


@pytest.mark.parametrize(("text", "plain"), [
    ("Adequate renal function", "Blood tests showing that your kidneys work well enough."),
    ("Adequate hepatic and renal function", "Blood tests showing that your liver and kidneys work well enough."),
    ("Normal bone marrow function", "Blood tests showing that your bone marrow works well enough."),
    ("Adequate organ function", "Blood tests showing that your bone marrow, liver and kidneys work well enough."),
    ("Adequate bone marrow function as indicated by the following: ANC greater than 1500/µL",
     "Adequate bone marrow function as indicated by the following: ANC greater than 1500/µL."),
])
def test_eligibility_plain_organ_function_names_only_the_organs_of_the_line(text: str, plain: str) -> None:
    """It was 'your bone marrow, liver and kidneys' for any of them, and the limits written with it were dropped."""
    assert plain_criterion(text, "inclusion") == plain
