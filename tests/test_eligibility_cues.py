"""Cue words as data (data/eligibility/*_cues.csv): one test row each, and the loader's checks."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from services.eligibility import cues
from services.eligibility.measures import STATE_CUES
from services.eligibility.patient import PatientProfile
from services.eligibility.rules import (
    _REACTION_TO,
    AGE_GROUP_CUES,
    CONSENT_CUES,
    CONTRACEPTION_CUES,
    CURRENT_TREATMENT_CUES,
    PERFORMANCE_SCALES,
    PREGNANCY_CUES,
    REACTION_CUES,
    SEX_CUES,
    STRUCTURE_CUES,
    UNKNOWABLE_CUES,
    _consent_reading,
    evaluate,
    parse_age_range,
    patient_facts,
)

# A note that says the patient consents and will follow the plan: a consent line then reads as met or not
# met.
CONSENTING = patient_facts("A 45-year-old woman. The patient will provide informed consent and will comply "
                           "with the trial protocol without any practical issues.")
READINGS = {True: "consents", False: "refuses", None: "open"}


def _reading(text: str) -> str:
    found = _consent_reading(text, CONSENTING, [])
    return "none" if found is None else READINGS[found.truth]


@pytest.mark.parametrize("row", CONSENT_CUES.rows(), ids=lambda r: r.cue)
def test_consent_cue_row_reads_its_example(row: cues.CueRow) -> None:
    assert re.search(rf"\b{cues.cue_pattern(row.cue)}\b", row.example, re.I), "the example must hold its cue"
    assert _reading(row.example) == row.checks["expected"]


def test_consent_cues_every_role_has_a_cue() -> None:
    for role in CONSENT_CUES.roles:
        assert CONSENT_CUES.words(role)


def test_cue_pattern_reads_endings_and_any_space() -> None:
    pattern = re.compile(rf"\b{cues.cue_pattern('agree* to take part')}\b", re.I)
    assert pattern.search("Parents agreeing to\n take part")
    assert not pattern.search("agree to take partial doses")
    assert cues.cue_pattern("can't") == re.escape("can't")


@pytest.mark.parametrize("line", ["consent,consent,ICH E6,,consents",  # no example
                                  "consent,consent,ICH E6,Signed consent,",  # no expectation
                                  "consent,wish,ICH E6,Signed consent,consents"])  # an unknown role
def test_cue_rows_refuse_a_row_without_example_or_with_an_unknown_role(tmp_path: Path, line: str) -> None:
    path = tmp_path / "cues.csv"
    path.write_text("cue,roles,source,example,expected\n" + line + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="rows without a cue, source, example or expectation"):
        cues.rows(path, CONSENT_CUES.roles)


WOMAN_35 = PatientProfile(age=35, sex="female")
MAN_62 = PatientProfile(age=62, sex="male")


@pytest.mark.parametrize("row", PREGNANCY_CUES.rows(), ids=lambda r: r.cue)
def test_pregnancy_cue_row_reads_its_example(row: cues.CueRow) -> None:
    assert re.search(rf"\b{cues.cue_pattern(row.cue)}", row.example, re.I), "the example must hold its cue"
    kind = row.checks["kind"]
    assert kind in ("inclusion", "exclusion")
    assert evaluate(row.example, kind, WOMAN_35).label.value == row.checks["woman_35"]
    assert evaluate(row.example, kind, MAN_62).label.value == row.checks["man_62"]


@pytest.mark.parametrize("line", ["Requires skilled nursing facility care following hospitalization",
                                  "Residing in a skilled nursing facility", "Residents of a nursing home"])
@pytest.mark.parametrize("kind", ["inclusion", "exclusion"])
def test_a_nursing_place_is_never_read_as_breastfeeding(line: str, kind: str) -> None:
    for patient in (WOMAN_35, MAN_62):
        assert "pregnan" not in evaluate(line, kind, patient).reason.lower()
        assert "breastfeeding" not in evaluate(line, kind, patient).reason.lower()


CRITERION_AND_NOTE_FILES = (STRUCTURE_CUES, STATE_CUES)


@pytest.mark.parametrize(("file", "row"),
                         [pytest.param(file, row, id=f"{row.roles[0]}-{row.cue}")
                          for file in CRITERION_AND_NOTE_FILES for row in file.rows()])
def test_criterion_and_note_cue_row_reads_its_example(file: cues.CueFile, row: cues.CueRow) -> None:
    assert file.compile(row.roles[0]).search(row.example)
    assert row.example in (row.checks["criterion"], row.checks["note"])
    judgement = evaluate(row.checks["criterion"], row.checks["kind"], row.checks["note"])
    assert judgement.label.value == row.checks["expected"]
    assert row.checks["reason_has"] in judgement.reason


def test_without_its_cue_a_structure_example_reads_otherwise() -> None:
    """The controls of the rows above: the same lines without the cue word."""
    bcc = ("A 60-year-old man with hypertension and basal cell carcinoma of the skin removed last year. "
           "No diabetes.")
    assert evaluate("History of cancer and basal cell carcinoma", "exclusion", bcc).label.value == "met"
    assert evaluate("Diabetes, hypertension", "inclusion", bcc).label.value == "not_met"
    plain = evaluate("Other malignancy", "exclusion", "A 55-year-old woman with breast cancer.")
    assert "says there is no other cancer" not in plain.reason


@pytest.mark.parametrize("row", SEX_CUES.rows(), ids=lambda r: f"{r.roles[0]}:{r.cue}")
def test_sex_cue_row_reads_its_example(row: cues.CueRow) -> None:
    assert re.search(rf"\b{cues.cue_pattern(row.cue)}\b", row.example, re.I), "the example must hold its cue"
    kind = row.checks["kind"]
    assert evaluate(row.example, kind, WOMAN_35).label.value == row.checks["woman_35"]
    assert evaluate(row.example, kind, MAN_62).label.value == row.checks["man_62"]


def test_a_sex_word_inside_another_word_is_no_sex_cue() -> None:
    # "Human", "women's health" and "mentioned": whole words only
    for line in ("Human volunteers", "Mentioned in the protocol", "Omen"):
        assert evaluate(line, "inclusion", MAN_62).label.value != "not_met"
        assert evaluate(line, "inclusion", WOMAN_35).label.value != "not_met"


@pytest.mark.parametrize("row", AGE_GROUP_CUES.rows(), ids=lambda r: f"{r.roles[0]}:{r.cue}")
def test_age_group_row_reads_its_example(row: cues.CueRow) -> None:
    assert re.search(rf"\b{cues.cue_pattern(row.cue)}\b", row.example, re.I), "the example must hold its cue"
    found, _ = parse_age_range(row.example)
    if "not_group" in row.roles:
        assert found is None
        return
    assert found is not None
    assert (found.low, found.high, found.high_strict) == (
        None if row.checks["min_years"] == "none" else float(row.checks["min_years"]),
        None if row.checks["max_years"] == "none" else float(row.checks["max_years"]),
        row.checks["upper"] == "below",
    )
    for age, column in ((9, "child_9"), (40, "adult_40"), (70, "older_70")):
        patient = PatientProfile(age=age, sex="male")
        assert evaluate(row.example, "inclusion", patient).label.value == row.checks[column], column


@pytest.mark.parametrize("row", CONTRACEPTION_CUES.rows(), ids=lambda r: f"{r.roles[0]}:{r.cue}")
def test_contraception_cue_row_reads_its_example(row: cues.CueRow) -> None:
    """An effective method in a note meets a line asking for contraception; a line asking for contraception
    does not concern a woman who is not sexually active. Without the sentence the line stays open."""
    assert re.search(rf"\b{cues.cue_pattern(row.cue)}", row.example, re.I), "the example must hold its cue"
    note = "0. A 25-year-old woman comes for a check-up."
    said = row.example if "effective" in row.roles else "She is not sexually active."
    criterion, kind = row.checks["criterion"], row.checks["kind"]
    assert evaluate(criterion, kind, f"{note}\n1. {said}").label.value == row.checks["expected"]
    assert evaluate(criterion, kind, note).label.value == "not_enough_info"


@pytest.mark.parametrize("row", UNKNOWABLE_CUES.rows(), ids=lambda r: r.cue)
def test_unknowable_cue_row_leaves_its_example_to_the_trial_team(row: cues.CueRow) -> None:
    assert re.search(rf"\b{cues.cue_pattern(row.cue)}", row.example, re.I), "the example must hold its cue"
    note = "0. A 45-year-old man with type 2 diabetes comes for a check-up."
    judged = evaluate(row.example, row.checks["kind"], note)
    assert judged.label.value == row.checks["expected"] and "the trial team checks it" in judged.reason


@pytest.mark.parametrize("row", REACTION_CUES.rows(), ids=lambda r: f"{r.roles[0]}:{r.cue}")
def test_reaction_cue_row_reads_its_example(row: cues.CueRow) -> None:
    """The reaction is read from its word to the word that opens what it is to."""
    found = _REACTION_TO.search(row.example)
    assert found is not None
    words = found.group(0).split()
    cue_word = words[0] if "reaction" in row.roles else words[-1]
    assert re.fullmatch(cues.cue_pattern(row.cue), cue_word, re.I)
    assert words[-1].lower() == row.checks["reaction_ends_with"]


@pytest.mark.parametrize("row", CURRENT_TREATMENT_CUES.rows(), ids=lambda r: f"{r.roles[0]}:{r.cue}")
def test_current_treatment_cue_row_reads_its_example(row: cues.CueRow) -> None:
    """A procedure the patient would be going through, which a full case summary does not mention, is not
    met; a reason ("due to kidney injury") or a schedule word the note does say is not the procedure."""
    assert re.search(rf"\b{cues.cue_pattern(row.cue)}\b", row.example, re.I), "the example must hold its cue"
    note = "0. A 45-year-old man with type 2 diabetes comes for a check-up.\n1. He takes metformin."
    if row.checks["note_adds"] != "none":
        note += f"\n2. {row.checks['note_adds']}"
    judged = evaluate(row.example, row.checks["kind"], note)
    assert judged.label.value == row.checks["expected"] and "full case summary" in judged.reason


@pytest.mark.parametrize("row", PERFORMANCE_SCALES.rows(), ids=lambda r: r.cue)
def test_performance_scale_row_reads_its_example(row: cues.CueRow) -> None:
    """Each scale's name is read with its grades and compared with a patient of ECOG 1 (Karnofsky 70-80)."""
    assert re.search(rf"\b{cues.cue_pattern(row.cue)}\b", row.example, re.I), "the example must hold its cue"
    note = "0. A 60-year-old man with lung cancer, ECOG performance status 1."
    judged = evaluate(row.example, "inclusion", note)
    assert judged.label.value == row.checks["ecog_1"] and "ECOG performance status 1" in judged.reason
