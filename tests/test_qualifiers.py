"""A diagnosis as MeSH headings plus qualifiers (services/vocab/qualifiers.py): every data row, and whole examples."""

from __future__ import annotations

import csv

import pytest

from services.vocab.mesh import vocabulary
from services.vocab.qualifiers import DATA, diagnosis, qualifiers

with open(DATA, encoding="utf-8", newline="") as fh:
    ROWS = list(csv.DictReader(fh))


def pairs(text):
    return {(q.name, q.value) for q in qualifiers(text)}


def phrase(row):
    cue = row["cue"]
    if row["kind"] == "biomarker":
        return f"{cue}-positive tumour", (row["value"], "positive")
    if row["kind"] == "status":
        return (f"HER2{cue} tumour" if cue in "+-" else f"HER2 {cue} tumour"), ("HER2", row["value"])
    if row["kind"] == "combined":
        name, value = row["value"].split(";")[0].split(":")
        return f"{cue} cancer", (name, value)
    return f"{cue} breast cancer", (row["kind"], row["value"])


@pytest.mark.parametrize("row", ROWS, ids=lambda r: f"{r['kind']}:{r['cue']}")
def test_qualifiers_row_is_read_in_a_phrase(row):
    assert row["source"]
    text, expected = phrase(row)
    assert expected in pairs(text)


@pytest.mark.parametrize(("text", "heading", "expected"), [
    ("HER2-positive metastatic breast cancer", "Breast Neoplasms", {("HER2", "positive"), ("extent", "metastatic")}),
    ("EGFR-mutant stage IV lung adenocarcinoma", "Adenocarcinoma of Lung", {("EGFR", "mutated"), ("stage", "4")}),
    ("relapsed refractory multiple myeloma after 3 lines", "Multiple Myeloma",
     {("course", "relapsed"), ("course", "refractory"), ("lines", "3")}),
    ("heart failure with preserved ejection fraction", "Heart Failure, Diastolic", set()),
    ("moderate-to-severe Crohn's disease", "Crohn Disease", {("severity", "moderate_to_severe")}),
    ("ER/PR positive, HER2 IHC 3+ breast cancer", "Breast Neoplasms",
     {("ER", "positive"), ("PR", "positive"), ("HER2", "ihc_3")}),
    ("locally advanced NSCLC, ALK rearranged, third-line", "Carcinoma, Non-Small-Cell Lung",
     {("ALK", "rearranged"), ("extent", "locally_advanced"), ("lines", "2")}),
    ("first relapse of B-ALL", "Precursor B-Cell Lymphoblastic Leukemia-Lymphoma", {("course", "first_relapse")}),
    ("stage IIIB colon cancer, KRAS wild-type, MSI-H", "Colonic Neoplasms",
     {("stage", "3B"), ("KRAS", "wild_type"), ("MSI", "high")}),
])
def test_qualifiers_a_diagnosis_is_its_heading_plus_facts(text, heading, expected):
    d = diagnosis(text)
    mesh = vocabulary()
    assert sorted(mesh.name(u) for u in d.headings) == [heading]
    assert {(q.name, q.value) for q in d.qualifiers} == expected


def test_qualifiers_short_cues_count_only_in_capitals():
    assert pairs("the patient met her goals; er, positive mood") == set()


def test_qualifiers_course_words_are_not_the_disease():
    mesh = vocabulary()
    assert sorted(mesh.name(u) for u in diagnosis("recurrent glioblastoma").headings) == ["Glioblastoma"]
    assert sorted(mesh.name(u) for u in diagnosis("Recurrence").headings) == ["Recurrence"]
