"""Tests for services/eligibility/parser.py on real registry texts (tests/fixtures/eligibility)."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.eligibility.parser import Criterion, ParsedCriteria, parse_criteria, unescape_markdown

FIXTURES = Path(__file__).parent / "fixtures" / "eligibility"


def load(nct_id: str) -> ParsedCriteria:
    return parse_criteria((FIXTURES / f"{nct_id}.txt").read_text(encoding="utf-8"))


# Counts read off each text by hand; the comment says how each was counted.
HAND_COUNTED = [
    # "Inclusion Criteria: The person who meet all ..." (the rest of the heading line is a preamble, not a
    # criterion); items 1-6, item 6 holds four risk-category sub-bullets. "Exclusion Criteria: ..." items 1-21;
    # the two footnotes (*1, *2) are indented under item 21 and stay with it.
    ("NCT05923281", 6, 21, False),
    # No headings at all: four bullets, all counted as inclusion.
    ("NCT00033839", 4, 0, True),
    # "INCLUSION CRITERIA" / "EXCLUSION CRITERIA" in capitals over unbulleted paragraphs: 2 and 4 paragraphs.
    ("NCT00042536", 2, 4, False),
    # Numbered 1-9 (item 7 has three nested numbered items) and 1-19 (item 19 has three nested items).
    ("NCT04207047", 9, 19, False),
    # "Inclusion:" with two bullets, "Exclusion:" with one.
    ("NCT02560883", 2, 1, False),
    # "* Inclusion Criteria:" written as a bullet is still a heading; three bullets each side.
    ("NCT05161130", 3, 3, False),
    # "Main Inclusion Criteria:" two bullets; "Main Exclusion Criteria:" six bullets.
    ("NCT01937871", 2, 6, False),
    # "Inclusion Criteria :" (space before the colon) six bullets; "Exclusion Criteria:" three.
    ("NCT02782533", 6, 3, False),
    # One run-on line: "Inclusion Criteria:- a- b- c. Exclusion Criteria:- d- e- f- g" -> 3 and 4 items.
    ("NCT00665340", 3, 4, False),
    # One run-on line with " - " separators: five inclusion items, one exclusion item.
    ("NCT01892319", 5, 1, False),
    # "Exclusion criteria were as follows:"; its first bullet only announces the list ("... were excluded
    # from the study:"), leaving 11 real exclusion bullets; 4 inclusion bullets.
    ("NCT02413099", 4, 11, False),
    # PDQ layout (DISEASE/PATIENT CHARACTERISTICS, PRIOR CONCURRENT THERAPY) with no inclusion/exclusion
    # headings: 18 bullets once the six "Not specified" and one "See Disease Characteristics" placeholders go.
    ("NCT00057759", 18, 0, True),
    # "Exclusion Criteria:1." then 20 bullets that repeat escaped numbers ("* 2\\. ..."); 5 inclusion bullets.
    ("NCT01958125", 5, 20, False),
    # 17 and 12 bullets under "INCLUSION CRITERIA:" / "EXCLUSION CRITERIA:".
    ("NCT01105130", 17, 12, False),
    # "Nil" under both headings: nothing to list.
    ("NCT01100827", 0, 0, False),
]


@pytest.mark.parametrize(("nct_id", "n_inclusion", "n_exclusion", "unsplit"), HAND_COUNTED)
def test_eligibility_parser_counts_match_hand_count(nct_id: str, n_inclusion: int, n_exclusion: int, unsplit: bool) -> None:
    parsed = load(nct_id)
    assert (len(parsed.inclusion), len(parsed.exclusion), parsed.unsplit) == (n_inclusion, n_exclusion, unsplit)


def test_eligibility_parser_nct05923281_whole_structure() -> None:
    parsed = load("NCT05923281")
    assert parsed.inclusion[0] == Criterion(
        1, "Patients had to be age 18 years or older at written informed consent", "inclusion"
    )
    assert parsed.inclusion[2].text == (
        "Patients who have laboratory records with fasting serum TG <= 150 mg/dL (<=175 mg/dL when not fasting) "
        "within 6 months prior to consent."
    )
    assert parsed.inclusion[5].children == (
        "Low risk for primary prevention: LDL-C >=160 mg/dL",
        "Intermediate risk for primary prevention: LDL-C >=140 mg/dL",
        "High risk for primary prevention: LDL-C>=120 mg/dL",
        "Secondary prevention: LDL-C>=120 mg/dL",
    )
    assert parsed.exclusion[1].text == (
        "Patients with type 1 diabetes and uncontrolled diabetes [HbA1c(NGSP) >= 10.0 % at Screening]"
    )
    assert [c.number for c in parsed.exclusion] == list(range(1, 22))
    assert parsed.exclusion[16].text.endswith("pregnant women*2 who do not use specific contraceptive methods*1")
    assert len(parsed.exclusion[20].children) == 2
    assert parsed.ignored == (
        "The person who meet all the following criteria the object to the clinical trial",
        "The person who meet any of the following criteria will be excluded from the study.",
    )


def test_eligibility_parser_nested_items_stay_with_their_parent() -> None:
    parsed = load("NCT03318939")  # "Key Inclusion Criteria:" with cohort sub-bullets
    assert [c.text for c in parsed.inclusion] == [
        "Participant must be willing and capable of giving written Informed Consent, adhering to dosing and visit "
        "schedules, and meeting all study requirements",
        "Participant has histologically or cytologically confirmed locally advanced or metastatic non-small cell "
        "lung cancer (NSCLC) that is not amenable to treatment with curative intent",
        "Prior treatment status:",
        "Specific mutations:",
        "Participant has adequate organ function at Baseline",
    ]
    assert len(parsed.inclusion[2].children) == 5
    assert parsed.inclusion[3].children[0] == "Cohort 1 and 3: Documented EGFR exon 20 insertion mutation"
    assert parsed.inclusion[3].full_text.startswith("Specific mutations: Cohort 1 and 3: Documented EGFR")
    assert len(parsed.exclusion) == 4


def test_eligibility_parser_non_inclusion_is_exclusion_and_dropout_is_dropped() -> None:
    parsed = load("NCT02472431")
    assert (len(parsed.inclusion), len(parsed.exclusion)) == (5, 18)
    assert parsed.exclusion[0].text.startswith("Contraindications to the local anesthesia")
    assert parsed.exclusion[-1].text == "Patients with hypogonadism"
    assert parsed.ignored == (
        "Direct indications on immediate initiation of treatment with drugs that have proven effect on erectile "
        "function",
    )


def test_eligibility_parser_section_labels_without_headings() -> None:
    parsed = load("NCT06490887")  # "DDD patients:" and other group labels, no inclusion/exclusion heading
    assert parsed.unsplit is True
    assert parsed.notice is not None and "no 'Inclusion' or 'Exclusion' headings" in parsed.notice
    assert [(c.section, c.text) for c in parsed.inclusion[:2]] == [
        ("DDD patients", "Signature of the Informed Consent for the study"),
        ("DDD patients", "Age 30-60 years (included)"),
    ]
    assert parsed.inclusion[-1] == Criterion(
        11, "Presence of HIV, HBV, HCV or TP infection", "inclusion", (), "All enrolled subjects"
    )


def test_eligibility_parser_pdq_labels_become_sections() -> None:
    parsed = load("NCT00057759")
    assert [(c.section, c.text) for c in parsed.inclusion[4:7]] == [
        ("Age", "18 and over"),
        ("Performance status", "Zubrod 0-2"),
        ("Cardiovascular", "No myocardial infarction within the past year"),
    ]
    assert parsed.ignored.count("Not specified") == 6


def test_eligibility_parser_subheadings_inside_inclusion_keep_the_kind() -> None:
    parsed = load("NCT02724163")  # several "Inclusion criteria for participation in R3." style headings
    assert len(parsed.exclusion) == 8
    assert parsed.exclusion[-1].text == "Pregnant or lactating females."
    texts = [c.text for c in parsed.inclusion]
    assert not any(t.lower().startswith("inclusion criteria") for t in texts)
    assert texts.count("Patient meets the inclusion criteria for trial entry") == 3


def test_eligibility_parser_unheaded_numbered_list_is_unsplit() -> None:
    parsed = load("NCT01194648")
    assert (len(parsed.inclusion), len(parsed.exclusion), parsed.unsplit) == (7, 0, True)
    assert parsed.inclusion[3].text == "Serum PSA </=20ng/ml"
    assert len(parsed.inclusion[1].children) == 4


def test_eligibility_parser_eligibility_heading_is_neutral() -> None:
    parsed = load("NCT02782117")  # "Major Eligibility Criteria:" only
    assert (len(parsed.inclusion), parsed.unsplit, parsed.inclusion[0].section) == (7, True, None)
    assert parsed.inclusion[0].text == "Age 4 to <8 years (phase 1) or age 4 to <13 years (phase 2)"


def test_eligibility_parser_paragraph_without_bullets() -> None:
    parsed = load("NCT00007696")
    assert parsed == ParsedCriteria(
        (Criterion(1, "Veterans between the ages of 45 and 64.", "inclusion"),), (), unsplit=False
    )


@pytest.mark.parametrize(
    "nct_id",
    ["NCT04691388", "NCT05086315", "NCT02856893", "NCT02724163", "NCT06490887", "NCT03318939"],
)
def test_eligibility_parser_messy_texts_keep_every_line_somewhere(nct_id: str) -> None:
    """Every non-heading word of the source ends up in a criterion, a child, a section label or `ignored`."""
    source = (FIXTURES / f"{nct_id}.txt").read_text(encoding="utf-8")
    parsed = parse_criteria(source)
    kept = " ".join(
        [c.full_text for c in parsed.all] + [c.section or "" for c in parsed.all] + list(parsed.ignored)
    ).lower()
    words = {w.strip(".,;:()[]*\\") for w in unescape_markdown(source).lower().split()}
    words = {w for w in words if len(w) > 5 and w.isalpha() and w not in {"inclusion", "exclusion", "criteria"}}
    missing = sorted(w for w in words if w not in kept)
    assert missing == []


def test_eligibility_parser_all_fixtures_have_numbered_criteria() -> None:
    files = sorted(FIXTURES.glob("NCT*.txt"))
    assert len(files) >= 20
    for file in files:
        parsed = parse_criteria(file.read_text(encoding="utf-8"))
        for group in (parsed.inclusion, parsed.exclusion):
            assert [c.number for c in group] == list(range(1, len(group) + 1)), file.name
        assert all(c.text and "\\" not in c.text for c in parsed.all), file.name


def test_eligibility_parser_legacy_indented_plain_text() -> None:
    text = """
        Inclusion Criteria:

          -  Histologically confirmed adenocarcinoma of the prostate, with a sentence that
             wraps onto a second line

          -  PSA < 20 ng/mL

               -  measured within 30 days

        Exclusion Criteria:

          -  Prior pelvic radiotherapy
    """
    assert parse_criteria(text) == ParsedCriteria(
        inclusion=(
            Criterion(1, "Histologically confirmed adenocarcinoma of the prostate, with a sentence that wraps onto "
                      "a second line", "inclusion"),
            Criterion(2, "PSA < 20 ng/mL", "inclusion", ("measured within 30 days",)),
        ),
        exclusion=(Criterion(1, "Prior pelvic radiotherapy", "exclusion"),),
        unsplit=False,
    )


def test_eligibility_parser_patients_must_without_headings() -> None:
    text = "Patients must meet all of the following:\n\n* Age 18 or older\n* No diabetes"
    assert parse_criteria(text) == ParsedCriteria(
        inclusion=(Criterion(1, "Age 18 or older", "inclusion"), Criterion(2, "No diabetes", "inclusion")),
        exclusion=(),
        unsplit=True,
        ignored=("Patients must meet all of the following",),
    )


def test_eligibility_parser_heading_variants() -> None:
    text = (
        "Inclusion criteria for patients with COPD:\n- FEV1 \\< 80%\n- Age \\>= 40\n\n"
        "Key Exclusion Criteria\n- Asthma\n\nEXCLUSION CRITERIA:\n1. Pregnancy"
    )
    parsed = parse_criteria(text)
    assert [c.text for c in parsed.inclusion] == ["FEV1 < 80%", "Age >= 40"]
    assert [c.text for c in parsed.exclusion] == ["Asthma", "Pregnancy"]
    assert parsed.unsplit is False


def test_eligibility_parser_wrapped_sentence_in_markdown() -> None:
    text = "Inclusion Criteria:\n\n* Adults with type 2 diabetes who have\nbeen treated with metformin\n* BMI \\> 30"
    assert [c.text for c in parse_criteria(text).inclusion] == [
        "Adults with type 2 diabetes who have been treated with metformin",
        "BMI > 30",
    ]


@pytest.mark.parametrize("text", [None, "", "   \n\n  "])
def test_eligibility_parser_empty_text(text: str | None) -> None:
    assert parse_criteria(text) == ParsedCriteria((), (), unsplit=False)
    assert parse_criteria(text).notice is None


def test_eligibility_parser_unescapes_markdown() -> None:
    assert unescape_markdown(r"TG \<= 150, LDL \>=160, note\*1, \[IUD\], 1\. item") == (
        "TG <= 150, LDL >=160, note*1, [IUD], 1. item"
    )
