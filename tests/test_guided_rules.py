"""The general rules guided matching gained for issue 36: a cancer's site and histology axes, oncogenic
drivers that exclude each other, grouping headings the broader search walks through, and the
prostate/prostatic fold."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from services.eligibility import driver_check
from services.eligibility.labels import Label
from services.matching import axes, umbrella
from services.matching.form import broader_names, form_conditions, grouping_trees
from services.matching.relevance import TrialRecord, relevance, trial_headings
from services.vocab.mesh import Mesh, vocabulary

VOCAB = Path(__file__).resolve().parents[1] / "data" / "vocab"


@pytest.fixture(scope="module")
def mesh() -> Mesh:
    return vocabulary()


def _ui(mesh: Mesh, name: str) -> str:
    return mesh.by_name[name.lower()]


def _rows(name: str) -> list[dict[str, str]]:
    with open(VOCAB / name, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.parametrize(
    ("row", "inside", "outside"),
    [
        ({"axis": "site"}, "Lung Neoplasms", "Adenocarcinoma"),
        ({"axis": "histology"}, "Adenocarcinoma", "Lung Neoplasms"),
    ],
)
def test_neoplasm_axes_row_places_headings_on_its_axis(
    mesh: Mesh, row: dict[str, str], inside: str, outside: str
) -> None:
    assert {r["axis"] for r in _rows("neoplasm_axes.csv")} == {"site", "histology"}
    assert all(r["source"] for r in _rows("neoplasm_axes.csv"))
    assert axes.on_axis(mesh, _ui(mesh, inside), row["axis"])
    assert not axes.on_axis(mesh, _ui(mesh, outside), row["axis"])


def test_foreign_histology_sets_aside_a_tissue_type_of_another_organ(mesh: Mesh) -> None:
    lung = [_ui(mesh, "Adenocarcinoma of Lung")]
    gastric = {_ui(mesh, "Stomach Neoplasms"), _ui(mesh, "Adenocarcinoma")}
    assert axes.foreign_histology(mesh, lung, gastric) == {_ui(mesh, "Adenocarcinoma")}
    # a trial naming the patient's organ too, or no organ at all, keeps its histology heading
    assert axes.foreign_histology(mesh, lung, gastric | {_ui(mesh, "Lung Neoplasms")}) == frozenset()
    assert axes.foreign_histology(mesh, lung, {_ui(mesh, "Adenocarcinoma")}) == frozenset()
    # a cancer without a site (leukaemia) is never judged by site
    assert (
        axes.foreign_histology(
            mesh,
            [_ui(mesh, "Precursor B-Cell Lymphoblastic Leukemia-Lymphoma")],
            {_ui(mesh, "Stomach Neoplasms"), _ui(mesh, "Leukemia")},
        )
        == frozenset()
    )


def test_relevance_gastric_adenocarcinoma_is_not_about_lung_adenocarcinoma(mesh: Mesh) -> None:
    lung = [_ui(mesh, "Adenocarcinoma of Lung")]
    gastric = TrialRecord(
        "NCT00000001", conditions=("HER2-positive Gastric Cancer", "Gastroesophageal Junction Adenocarcinoma")
    )
    judged = relevance(mesh, lung, trial_headings(mesh, gastric))
    assert not judged.relevant and "Stomach Neoplasms" in judged.reason
    lung_trial = TrialRecord("NCT00000002", conditions=("Lung Adenocarcinoma",))
    assert relevance(mesh, lung, trial_headings(mesh, lung_trial)).relevant


@pytest.mark.parametrize(
    "row", [r for r in _rows("oncogenic_drivers.csv") if r["kind"] == "driver"], ids=lambda r: r["cue"]
)
def test_driver_row_names_its_driver(row: dict[str, str]) -> None:
    assert row["source"] and row["disease"]
    assert driver_check.named_drivers(f"NSCLC with {row['cue']} mutation") == {row["value"]: row["disease"]}
    assert driver_check.named_drivers(f"no {row['cue']} mutation") == {}


@pytest.mark.parametrize(
    "row", [r for r in _rows("oncogenic_drivers.csv") if r["kind"] == "alteration"], ids=lambda r: r["cue"]
)
def test_driver_alteration_row_is_read_after_a_gene(row: dict[str, str]) -> None:
    assert row["source"]
    assert set(driver_check.named_drivers(f"Documented KRAS G12C {row['cue']}")) == {"KRAS"}
    assert set(driver_check.named_drivers(f"EGFR-{row['cue']} tumour")) == {"EGFR"}


def test_driver_check_another_driver_is_not_met_the_same_or_an_alternative_is_left_alone() -> None:
    mine = driver_check.patient_drivers(
        ["EGFR-mutant stage IV lung adenocarcinoma", "ALK negative"],
        ["EGFR-mutant stage IV lung adenocarcinoma"],
    )
    assert set(mine) == {"EGFR"}  # "ALK negative" names no altered driver
    decided = driver_check.check("Must have disease with evidence of KRAS G12C mutation.", "inclusion", mine)
    assert decided is not None and decided.label is Label.NOT_MET and "KRAS" in decided.reason
    assert driver_check.check("NSCLC with EGFR, ALK or KRAS mutation", "inclusion", mine) is None
    assert driver_check.check("Known KRAS G12C mutation", "exclusion", mine) is None
    assert driver_check.check("Prior KRAS G12C inhibitor", "inclusion", mine) is None
    # drivers count only in the disease they are exclusive in
    assert driver_check.patient_drivers(["EGFR mutation"], ["breast cancer"]) == {}


@pytest.mark.parametrize("row", _rows("grouping_headings.csv"), ids=lambda r: r["tree_number"])
def test_grouping_heading_row_is_walked_through_not_searched(mesh: Mesh, row: dict[str, str]) -> None:
    ui = mesh.ui_of_tree(row["tree_number"])
    assert row["why"] and ui is not None and mesh.name(ui) == row["name"]
    assert row["tree_number"] in grouping_trees()
    below = sorted(u for u in mesh.narrower(ui) if u != ui and mesh.depth(u) >= 3)[0]
    assert row["name"] not in broader_names([below], mesh)


def test_broader_search_reaches_the_top_of_the_category(mesh: Mesh) -> None:
    lung = broader_names(form_conditions("lung adenocarcinoma").diagnosis.headings, mesh)
    assert lung.index("Adenocarcinoma") < lung.index("Lung Neoplasms") < lung.index("Neoplasms")
    assert lung[-1] == "Neoplasms"
    ms = broader_names(form_conditions("relapsing-remitting multiple sclerosis").diagnosis.headings, mesh)
    assert ms[0] == "Multiple Sclerosis" and "Nervous System Diseases" in ms


def test_castration_resistant_prostate_cancer_has_its_own_heading(mesh: Mesh) -> None:
    crpc = form_conditions("metastatic castration-resistant prostate cancer").diagnosis.headings
    assert [mesh.name(u) for u in crpc] == ["Prostatic Neoplasms, Castration-Resistant"]
    assert [mesh.name(u) for u in mesh.resolve("prostate cancer")] == ["Prostatic Neoplasms"]


def _headings(mesh: Mesh, *names: str) -> frozenset[str]:
    return frozenset(_ui(mesh, n) for n in names)


def test_umbrella_of_one_other_disease_is_set_aside(mesh: Mesh) -> None:
    hf = _headings(mesh, "Heart Failure, Systolic")
    af = _headings(mesh, "Cardiovascular Diseases", "Atrial Fibrillation")
    assert umbrella.set_aside(mesh, hf, af) == _headings(mesh, "Cardiovascular Diseases")
    lung = TrialRecord(
        "NCT00000003", mesh_list=("Neoplasms", "Lung Neoplasms", "Carcinoma, Non-Small-Cell Lung")
    )
    judged = relevance(mesh, _headings(mesh, "Prostatic Neoplasms"), trial_headings(mesh, lung))
    assert not judged.relevant and "Lung Neoplasms" in judged.reason
    # a heart failure trial that also names AF keeps its heart failure heading (only the umbrella goes)
    assert umbrella.set_aside(mesh, hf, af | _headings(mesh, "Heart Failure")) == _headings(
        mesh, "Cardiovascular Diseases"
    )
    assert (
        umbrella.set_aside(mesh, hf, _headings(mesh, "Heart Failure", "Atrial Fibrillation")) == frozenset()
    )


def test_umbrella_of_several_diseases_is_a_basket(mesh: Mesh) -> None:
    ms = _headings(mesh, "Multiple Sclerosis, Relapsing-Remitting")
    neuro = _headings(mesh, "Nervous System Diseases", "Stroke", "Amyotrophic Lateral Sclerosis", "Dementia")
    assert umbrella.set_aside(mesh, ms, neuro) == frozenset()


@pytest.mark.parametrize("row", _rows("open_condition_cues.csv"), ids=lambda r: r["cue"])
def test_open_condition_cue_row_keeps_its_umbrella(mesh: Mesh, row: dict[str, str]) -> None:
    name = f"{row['cue'].title()} Solid Tumors"
    assert row["source"] and umbrella.open_headings(mesh, [name]) == _headings(mesh, "Neoplasms")
    trial = TrialRecord("NCT00000004", conditions=("Cholangiocarcinoma", name))
    assert relevance(mesh, _headings(mesh, "Adenocarcinoma of Lung"), trial_headings(mesh, trial)).relevant
    closed = TrialRecord("NCT00000005", conditions=("Cholangiocarcinoma", "Solid Tumors"))
    assert not relevance(
        mesh, _headings(mesh, "Adenocarcinoma of Lung"), trial_headings(mesh, closed)
    ).relevant


def test_guided_capped_criteria_keep_every_one_not_met() -> None:
    from services.assistant.guided import capped

    criteria = [{"status": "met", "n": i} for i in range(5)] + [{"status": "not_met", "n": 5}]
    assert [c["n"] for c in capped(criteria, 3)] == [0, 1, 5]
    assert capped(criteria, 10) == criteria


def test_umbrella_right_above_the_patient_is_the_disease_itself(mesh: Mesh) -> None:
    rrms = _headings(mesh, "Multiple Sclerosis, Relapsing-Remitting")
    ms = _headings(mesh, "Multiple Sclerosis", "Multiple Sclerosis, Chronic Progressive")
    assert umbrella.set_aside(mesh, rrms, ms) == frozenset()
