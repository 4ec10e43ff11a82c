"""Variant classes of an oncogenic driver (issue 37): which named alterations a line's "sensitising EGFR
mutations" covers, each row of data/vocab/driver_variants.csv tested, and guided mode's verdicts on real
lines."""

from __future__ import annotations

import csv
import re

import pytest

from services.assistant.guided import GuidedAssistant
from services.eligibility import driver_check
from services.eligibility.labels import Label
from services.eligibility.patient import PatientProfile

with open(driver_check.VARIANTS, encoding="utf-8", newline="") as _fh:
    ROWS = list(csv.DictReader(_fh))
CLASS_WORD = {r["classes"]: r["cue"] for r in reversed(ROWS) if r["kind"] == "class"}  # one word per class
EXON19 = driver_check.patient_variants(["EGFR exon 19 deletion"])


def _rows(kind: str) -> list[dict[str, str]]:
    return [r for r in ROWS if r["kind"] == kind]


def _label(line: str, kind: str, patient: str) -> Label | None:
    mine = driver_check.patient_variants([patient])
    decided = driver_check.variant_check(line, kind, mine)  # type: ignore[arg-type]
    return decided.label if decided else None


def test_variant_rows_have_a_source_and_known_kinds() -> None:
    assert {r["kind"] for r in ROWS} == {"class", "variant", "refuse", "joins"}
    assert all(r["source"] and r["example"] for r in ROWS)
    named = {
        c
        for r in _rows("variant")
        for col in ("classes", "not_classes", "typically_not")
        for c in r[col].split(";")
        if c
    }
    assert named <= set(CLASS_WORD)  # every class a variant names has a word in the table


@pytest.mark.parametrize("row", _rows("class"), ids=lambda r: r["cue"])
def test_class_row_word_is_read_before_and_after_the_gene(row: dict[str, str]) -> None:
    inside = next(r["cue"] for r in _rows("variant") if row["classes"] in r["classes"].split(";"))
    for line in (
        f"Absence of {row['cue']} EGFR mutations",
        f"No EGFR {row['cue']} mutation",
        f"EGFR mutations that are {row['cue']} are excluded",
    ):
        kind = "exclusion" if "excluded" in line else "inclusion"
        want = Label.MET if kind == "exclusion" else Label.NOT_MET
        assert _label(line.replace(" are excluded", ""), kind, f"EGFR {inside}") is want, line
    assert (
        _label(row["example"], "inclusion", "EGFR T790M") is Label.NEEDS_DISCUSSION
    )  # a class T790M lacks


@pytest.mark.parametrize("row", _rows("variant"), ids=lambda r: r["cue"])
def test_variant_row_is_read_in_the_patients_words_and_settles_its_classes(row: dict[str, str]) -> None:
    assert [v.cue for v in driver_check.patient_variants([row["example"]])[row["gene"]]] == [row["cue"]]
    assert driver_check.patient_variants([f"HER2 {row['cue']}"]).get(row["gene"]) is None  # another gene's
    assert driver_check.patient_variants([f"no {row['gene']} {row['cue']}"]) == {}
    mine = row["example"]
    for c in filter(None, row["classes"].split(";")):  # surely in: an absence line is not met
        assert _label(f"Absence of {CLASS_WORD[c]} EGFR mutations", "inclusion", mine) is Label.NOT_MET
    for c in filter(None, row["not_classes"].split(";")):  # surely out: settled either way
        assert _label(f"Documented {CLASS_WORD[c]} EGFR mutation", "inclusion", mine) is Label.NOT_MET
        assert _label(f"Known {CLASS_WORD[c]} EGFR mutation", "exclusion", mine) is Label.NOT_MET
        assert (
            _label(f"Absence of {CLASS_WORD[c]} EGFR mutations", "inclusion", mine)
            is Label.NEEDS_DISCUSSION
        )
    for c in filter(None, row["typically_not"].split(";")):  # usually out: never against the patient
        assert (
            _label(f"Documented {CLASS_WORD[c]} EGFR mutation", "inclusion", mine) is Label.NEEDS_DISCUSSION
        )
        assert _label(f"Known {CLASS_WORD[c]} EGFR mutation", "exclusion", mine) is Label.NOT_MET
    if not row["classes"]:  # a line listing her variant itself counts it, whatever the table says
        line = f"Absence of sensitizing EGFR mutations (including exon 19 deletion and {row['cue']})"
        assert _label(line, "inclusion", mine) is Label.NOT_MET


@pytest.mark.parametrize("row", _rows("refuse") + _rows("joins"), ids=lambda r: f"{r['kind']}:{r['cue']}")
def test_refuse_and_joins_rows_leave_the_line_to_the_rules(row: dict[str, str]) -> None:
    table = driver_check.variant_table()
    pattern = table.refuse if row["kind"] == "refuse" else table.joins
    assert [m.group().lower() for m in pattern.finditer(row["example"])] == [row["cue"]]
    without = re.sub(rf"\b{re.escape(row['cue'])}\b", " ", row["example"], flags=re.I)
    for kind in ("inclusion", "exclusion"):
        assert driver_check.variant_check(row["example"], kind, EXON19) is None  # type: ignore[arg-type]
    assert any(driver_check.variant_check(without, k, EXON19) for k in ("inclusion", "exclusion"))


def test_variant_check_leaves_a_gene_named_twice_and_another_gene_alone() -> None:
    assert (
        driver_check.variant_check("EGFR wild-type, or EGFR mutation after a TKI", "inclusion", EXON19)
        is None
    )
    assert driver_check.variant_check("Activating KRAS mutation", "inclusion", EXON19) is None
    # a class word before another gene is that gene's: "activating KRAS mutation, EGFR mutation" asks any EGFR
    assert _label(
        "No activating KRAS mutation, no EGFR mutation", "inclusion", "EGFR exon 20 insertion"
    ) is (Label.NOT_MET)


@pytest.mark.parametrize(
    ("biomarkers", "line", "label"),
    # NCT06357533 and NCT06627647 (shipped sample), and the same lines for a wild-type or an exon 20 patient
    [
        (
            ("EGFR exon 19 deletion", "PD-L1 50%"),
            "Absence of sensitising EGFR mutations, and ALK and ROS1 "
            "rearrangements, and absence of documented local test result for any other known genomic "
            "alteration for which there are locally approved and available targeted first-line therapies.",
            Label.NOT_MET,
        ),
        (
            ("EGFR exon 19 deletion",),
            "Absence of sensitizing EGFR mutations (including, but not limited to, exon "
            "19 deletion and exon 21 L858R, exon 21 L861Q, exon 18 G719X, and exon 20 S768I mutations) and "
            "ALK and "
            "ROS1 rearrangements.",
            Label.NOT_MET,
        ),
        (("EGFR L858R",), "Tumour must be EGFR wild-type", Label.NOT_MET),
        (
            ("EGFR wild-type", "ALK negative", "ROS1 negative"),
            "Absence of sensitizing EGFR mutations and ALK and ROS1 rearrangements.",
            Label.MET,
        ),
        (("EGFR negative",), "Absence of sensitising EGFR mutations.", Label.MET),
        (
            ("EGFR negative",),
            "Absence of sensitizing EGFR mutations and ALK and ROS1 rearrangements.",
            Label.NOT_ENOUGH_INFO,
        ),
        (
            ("EGFR exon 20 insertion",),
            "Absence of sensitizing EGFR mutations and ALK and ROS1 rearrangements.",
            Label.NEEDS_DISCUSSION,
        ),
    ],
)
def test_guided_judges_an_absence_line_from_the_patients_variant(
    biomarkers: tuple[str, ...], line: str, label: Label
) -> None:
    patient = PatientProfile.from_answers(
        {
            "diagnosis": "non-small cell lung cancer",
            "stage": "IV",
            "age": 62,
            "sex": "male",
            "biomarkers": list(biomarkers),
        }
    )
    results, _ = GuidedAssistant.judge({"inclusion": [line], "exclusion": []}, patient)
    assert results[-1].label is label, results[-1].reason


def test_variant_check_a_line_about_another_named_variant_is_left_to_the_rules() -> None:
    for line in ("Patients without EGFR T790M mutation", "No EGFR exon 20 insertion", "EGFR wild-type"):
        want = None if "wild" not in line else Label.NOT_MET
        decided = driver_check.variant_check(line, "inclusion", EXON19)
        assert (decided.label if decided else None) is want, line
