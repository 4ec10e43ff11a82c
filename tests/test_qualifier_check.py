"""A criterion's biomarker, extent and course words against the patient's own (services/eligibility/qualifier_check)."""

from __future__ import annotations

import pytest

from services.eligibility.labels import Label
from services.eligibility.qualifier_check import check, patient_polarities

HER2_POSITIVE = patient_polarities(["HER2-positive metastatic breast cancer", "ER-negative"])


def test_qualifier_check_reads_the_patient_once_per_name():
    assert HER2_POSITIVE == {"HER2": "+", "ER": "-", "extent": "advanced"}
    assert "HER2" not in patient_polarities(["HER2-positive", "HER2-negative"])  # said both ways: unknown


@pytest.mark.parametrize(("text", "kind", "label"), [
    ("Documented estrogen receptor-positive (ER+), HER2-negative (HER2-) tumor", "inclusion", Label.NOT_MET),
    ("Histologically or cytologically documented HR-positive, HER2-negative breast cancer", "inclusion",
     Label.NOT_MET),
    ("HER2-positive breast cancer (IHC 3+ or ISH amplified)", "inclusion", Label.MET),  # one of them is enough
    ("Centrally confirmed HER2-positive breast cancer", "inclusion", Label.MET),
    ("Known HER2-positive disease", "exclusion", Label.MET),
    ("ER-positive disease", "exclusion", Label.NOT_MET),
    ("Metastatic breast cancer", "inclusion", Label.MET),
    ("Localized breast cancer", "inclusion", Label.NOT_MET),
    ("No HER2-positive disease", "inclusion", None),
    ("Patients without HER2 amplification", "inclusion", None),
    ("HER2-negative unless previously treated with trastuzumab", "inclusion", None),
    # an "or" that joins no two results ("primary or metastatic" sample) does not make HER2- one of two
    # choices;
    # a later sentence's "with or without" does not turn the first one
    ("Histologically confirmed HR+/ HER2- breast cancer from the most recent tumour sample (primary or "
     "metastatic) per the ASCO/CAP guideline. To fulfil the requirement of HR+ disease, a breast cancer must "
     "express ER with or without co-expression of progesterone receptor.", "inclusion", Label.NOT_MET),
    ("HER2-positive or HER2-low metastatic breast cancer", "inclusion", Label.MET),
    # a biomarker result deep in the line still names the disease
    ("Histologically confirmed Stage II or III unilateral or bilateral primary invasive TNBC or hormone "
     "receptor-low/HER2-negative breast cancer", "inclusion", Label.NOT_MET),
    ("Measurable disease per RECIST 1.1", "inclusion", None),
])
def test_qualifier_check_decides_only_plain_lines(text, kind, label):
    decided = check(text, kind, HER2_POSITIVE)
    assert (decided.label if decided else None) == label
    if decided is not None:
        assert "you said" in decided.reason


def test_qualifier_check_names_both_sides():
    decided = check("Documented evidence of HER2- status.", "inclusion", HER2_POSITIVE)
    assert decided is not None
    assert decided.reason == "The trial asks for HER2-negative; you said HER2-positive."


def test_qualifier_check_course_words_exclude_each_other():
    relapsed = patient_polarities(["relapsed B-cell ALL"])
    assert check("Newly diagnosed acute lymphoblastic leukaemia", "inclusion", relapsed).label is Label.NOT_MET
    assert check("Relapsed acute lymphoblastic leukaemia", "inclusion", relapsed).label is Label.MET


def test_qualifier_check_reads_a_result_before_the_genes_it_is_in():
    egfr = patient_polarities(["EGFR-mutant stage IV lung adenocarcinoma"])
    assert check("Have known changes in the EGFR or ALK genes.", "exclusion", egfr).label is Label.MET
    assert check("Driver mutation or alteration in genes such as epidermal growth factor receptor (EGFR), "
                 "anaplastic lymphoma kinase (ALK)", "exclusion", egfr).label is Label.MET
    assert check("EGFR mutation or ALK rearrangement", "inclusion", egfr).label is Label.MET
    assert check("KRAS G12C mutation", "inclusion", egfr) is None  # another gene: the rules decide
