"""The MeSH 2024 condition vocabulary (services/vocab/mesh.py) and its project tables, one test row each."""

from __future__ import annotations

import csv

import pytest

from services.vocab.mesh import DATA_DIR, vocabulary


@pytest.fixture(scope="module")
def mesh():
    return vocabulary()


def names(mesh, uis):
    return sorted(mesh.name(u) for u in uis)


@pytest.mark.parametrize(("typed", "heading"), [
    ("breast cancer", "Breast Neoplasms"),
    ("Breast Neoplasms", "Breast Neoplasms"),
    ("mammary cancer", "Breast Neoplasms"),
    ("heart attack", "Myocardial Infarction"),
    ("T2D", "Diabetes Mellitus, Type 2"),
    ("NIDDM", "Diabetes Mellitus, Type 2"),
    ("type II diabetes", "Diabetes Mellitus, Type 2"),
    ("Alzheimer's Disease", "Alzheimer Disease"),
    ("alzheimers disease", "Alzheimer Disease"),
    ("Early Alzheimer´s Disease", "Alzheimer Disease"),  # an acute accent as the apostrophe
    ("Alzheimer’s disease", "Alzheimer Disease"),
    ("heart failure with preserved ejection fraction", "Heart Failure, Diastolic"),
    ("HFpEF", "Heart Failure, Diastolic"),
    ("leukaemia", "Leukemia"),
    ("HER2-positive metastatic breast cancer", "Breast Neoplasms"),
    ("EGFR-mutant stage IV lung adenocarcinoma", "Adenocarcinoma of Lung"),
    ("relapsed refractory multiple myeloma after 3 lines", "Multiple Myeloma"),
    ("moderate-to-severe Crohn's disease", "Crohn Disease"),
    ("relapsed B-cell ALL", "Precursor B-Cell Lymphoblastic Leukemia-Lymphoma"),
    ("ALL", "Precursor Cell Lymphoblastic Leukemia-Lymphoma"),
])
def test_mesh_resolves_a_condition_text_to_its_heading(mesh, typed, heading):
    assert names(mesh, mesh.resolve(typed)) == [heading]


def test_mesh_tree_orders_broader_and_narrower_headings(mesh):
    lung = mesh.by_name["lung neoplasms"]
    nsclc = mesh.by_name["carcinoma, non-small-cell lung"]
    adeno = mesh.by_name["adenocarcinoma of lung"]
    assert nsclc in mesh.narrower(lung) and adeno in mesh.narrower(lung)
    assert adeno in mesh.narrower(nsclc) and nsclc in mesh.broader(adeno)  # extra_parents.csv (WHO 2021)
    assert nsclc in mesh.parents(adeno)
    assert lung in mesh.broader(adeno) and mesh.related(adeno, lung) and not mesh.related(
        adeno, mesh.by_name["breast neoplasms"])
    assert mesh.by_name["neoplasms"] in mesh.broader(lung)  # the top heading from top_headings.csv


def test_mesh_polyhierarchy_keeps_every_parent(mesh):
    pre_b = mesh.by_name["precursor b-cell lymphoblastic leukemia-lymphoma"]
    assert {"Neoplasms", "Hemic and Lymphatic Diseases", "Immune System Diseases"} <= set(
        names(mesh, mesh.broader(pre_b)))


def test_mesh_an_abbreviation_counts_only_in_capitals_and_an_ambiguous_one_only_as_a_whole_name(mesh):
    assert mesh.mentions("smoker with copd") == [] and mesh.resolve("copd") == mesh.resolve("COPD")
    assert names(mesh, mesh.resolve("Smoker with COPD")) == ["Pulmonary Disease, Chronic Obstructive"]
    assert mesh.resolve("all patients with MS") == frozenset()
    assert names(mesh, mesh.resolve("MS")) == ["Multiple Sclerosis"]


def test_mesh_running_text_gives_the_longest_term_with_its_place(mesh):
    text = "History of type 2 diabetes and chronic kidney disease; no heart failure."
    found = [(m.text, mesh.name(m.ui)) for m in mesh.mentions(text)]
    assert found == [("type 2 diabetes", "Diabetes Mellitus, Type 2"),
                     ("chronic kidney disease", "Renal Insufficiency, Chronic"),
                     ("heart failure", "Heart Failure")]


def read(name):
    with open(DATA_DIR / name, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.parametrize("row", read("project_terms.csv"), ids=lambda r: r["term"])
def test_mesh_project_term_row_means_its_descriptor(mesh, row):
    assert row["source"]
    assert names(mesh, mesh.resolve(row["term"])) == [row["descriptor"]]


@pytest.mark.parametrize("row", read("top_headings.csv"), ids=lambda r: r["tree_number"])
def test_mesh_top_heading_row_holds_the_headings_of_its_tree(mesh, row):
    below = mesh.narrower(row["descriptor_ui"])
    linked = set(mesh.expand(mesh.extra_parents))  # reached through extra_parents.csv, whatever MeSH files it under
    assert len(below) > 1 and all(mesh.in_category(u, (row["tree_number"],)) for u in below - linked)


@pytest.mark.parametrize("row", read("spellings.csv"), ids=lambda r: r["written"])
def test_mesh_spelling_row_folds_to_the_american_form(mesh, row):
    assert mesh.words(row["written"]) == mesh.words(row["as_mesh"])


@pytest.mark.parametrize("row", read("extra_parents.csv"), ids=lambda r: r["descriptor"])
def test_mesh_extra_parent_row_links_the_descriptor_under_its_parent(mesh, row):
    child, parent = mesh.by_name[row["descriptor"].lower()], mesh.by_name[row["parent"].lower()]
    assert row["source"] and child in mesh.narrower(parent) and parent in mesh.broader(child)
    assert not any(t.startswith(p + ".") for t in mesh.descriptors[child].trees
                   for p in mesh.descriptors[parent].trees)  # MeSH itself lacks the link, or the row is not needed


@pytest.mark.parametrize("row", read("eponym_heads.csv"), ids=lambda r: r["head"])
def test_mesh_eponym_head_row_lets_the_possessive_alone_name_the_descriptor(mesh, row):
    assert row["source"]
    assert names(mesh, mesh.resolve(row["example"])) == [row["descriptor"]]
    found = {m.ui for m in mesh.mentions(f"History of {row['example']} since 2015")}
    assert names(mesh, found) == [row["descriptor"]]


def test_mesh_an_eponym_alone_is_its_disease_as_a_whole_name_but_needs_the_possessive_in_running_text(mesh):
    assert mesh.resolve("Alzheimer") == mesh.resolve("alzheimers") == mesh.resolve("Alzheimer's Disease")
    assert mesh.mentions("Seen by Dr Parkinson today") == []  # a surname in running text names no disease
    assert names(mesh, {m.ui for m in mesh.mentions("Mother had Parkinson's.")}) == ["Parkinson Disease"]


@pytest.mark.parametrize("typed", [
    "Kaposi's",  # Kaposi's sarcoma and Kaposi's disease (xeroderma pigmentosum): MeSH gives two
    "Addison's",  # Addison's disease and Addison's anemia
    "Cushing's",  # Cushing's syndrome and Cushing's disease
])
def test_mesh_an_eponym_with_several_meanings_or_no_possessive_names_nothing(mesh, typed):
    assert mesh.resolve(typed) == frozenset()
