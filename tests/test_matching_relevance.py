"""Trial relevance from MeSH headings, the ranking key, and the patient's conditions read from a note."""

from __future__ import annotations

import pytest

from services.matching.patient import conditions_from_note
from services.matching.relevance import (
    TrialRecord,
    rank_key,
    reach_rank,
    relevance,
    trial_headings,
)
from services.vocab.mesh import Mesh, vocabulary


@pytest.fixture(scope="module")
def mesh() -> Mesh:
    return vocabulary()


def _ui(mesh: Mesh, name: str) -> str:
    return mesh.by_name[name.lower()]


def _judge(mesh: Mesh, patient: list[str], **trial: object) -> tuple[bool, str, bool]:
    record = TrialRecord("NCT00000000", **trial)  # type: ignore[arg-type]
    judged = relevance(mesh, [_ui(mesh, p) for p in patient], trial_headings(mesh, record))
    return judged.relevant, judged.reason, judged.broad


def test_relevance_excluding_x_excludes_x_and_keeps_the_rest(mesh: Mesh) -> None:
    relevant, reason, _ = _judge(mesh, ["Breast Neoplasms"], conditions=("Solid Tumors, Excluding Breast",))
    assert not relevant and "excludes Breast Neoplasms" in reason
    assert _judge(mesh, ["Lung Neoplasms"], conditions=("Solid Tumors, Excluding Breast",))[0]
    assert not _judge(mesh, ["Melanoma"], conditions=("Cancers other than melanoma",))[0]


def test_relevance_non_x_in_a_name_or_title_excludes_x(mesh: Mesh) -> None:
    assert not _judge(mesh, ["Small Cell Lung Carcinoma"], conditions=("Non-Small Cell Lung Cancer",))[0]
    assert _judge(mesh, ["Carcinoma, Non-Small-Cell Lung"], conditions=("Non-Small Cell Lung Cancer",))[0]
    assert not _judge(
        mesh,
        ["Diabetes Mellitus, Type 2"],
        conditions=("Chronic Kidney Disease",),
        title="Kidney function in non-diabetic adults",
    )[0]


def test_relevance_follows_the_tree_both_ways(mesh: Mesh) -> None:
    assert _judge(mesh, ["Heart Failure, Systolic"], mesh_list=("Heart Failure",))[
        0
    ]  # the trial's is broader
    assert _judge(mesh, ["Diabetes Mellitus"], mesh_list=("Diabetes Mellitus, Type 2",))[
        0
    ]  # the trial's narrower
    # a condition name resolves like a mesh-list row (partial records have names only)
    assert _judge(mesh, ["Breast Neoplasms"], conditions=("HER2-positive metastatic breast cancer",))[0]


def test_relevance_an_ancestor_row_does_not_make_a_sibling_relevant(mesh: Mesh) -> None:
    relevant, reason, _ = _judge(
        mesh,
        ["Breast Neoplasms"],
        mesh_list=("Lung Neoplasms",),
        mesh_ancestors=("Neoplasms", "Neoplasms by Site"),
    )
    assert not relevant and reason == "This trial studies Lung Neoplasms; your condition is Breast Neoplasms."


def test_relevance_unrelated_trial_names_both_conditions(mesh: Mesh) -> None:
    relevant, reason, _ = _judge(mesh, ["Heart Failure, Systolic"], mesh_list=("Stroke",))
    assert not relevant
    assert reason == "This trial studies Stroke; your condition is Heart Failure, Systolic."


def test_relevance_finding_required_by_inclusion_criteria(mesh: Mesh) -> None:
    gerd = {"mesh_list": ("Gastroesophageal Reflux",)}
    assert _judge(mesh, ["Heartburn"], inclusion=("Heartburn at least 2 days a week",), **gerd)[0]
    assert not _judge(mesh, ["Heartburn"], inclusion=("No heartburn in the last month",), **gerd)[0]


BROAD = ("Heart Failure", "Arthritis, Rheumatoid", "Asthma", "Epilepsy", "Psoriasis", "Glaucoma")


def test_relevance_many_unrelated_conditions_is_broad_and_ranks_below(mesh: Mesh) -> None:
    relevant, _, broad = _judge(mesh, ["Heart Failure, Systolic"], mesh_list=BROAD)
    assert relevant and broad
    assert not _judge(mesh, ["Heart Failure, Systolic"], mesh_list=BROAD[:3])[2]
    registry = relevance(
        mesh,
        [_ui(mesh, "Heart Failure, Systolic")],
        trial_headings(mesh, TrialRecord("NCT1", mesh_list=BROAD)),
    )
    focused = relevance(
        mesh,
        [_ui(mesh, "Heart Failure, Systolic")],
        trial_headings(mesh, TrialRecord("NCT2", mesh_list=("Heart Failure",))),
    )
    # same verdict: the focused trial leads even beyond reach and with a lower fit
    assert rank_key("uncertain", focused, reach=2, fit_score=30) < rank_key(
        "uncertain", registry, reach=0, fit_score=90
    )
    assert rank_key("uncertain", focused, partial=True) > rank_key(
        "uncertain", focused, partial=False, reach=2
    )
    assert rank_key("eligible", registry) < rank_key("uncertain", focused)  # the verdict comes first


def test_reach_rank_foreign_trial_of_unknown_distance_is_far() -> None:
    assert reach_rank(None, "United States", ("Japan",)) == 2
    assert reach_rank(None, "United States", ("Japan", "United States")) == 1
    assert reach_rank(None, None, ("Japan",)) == 1
    assert reach_rank(True, "United States", ("Japan",)) == 0


def test_conditions_from_note_sets_aside_negated_family_and_general(mesh: Mesh) -> None:
    note = (
        "A 60-year-old man with heart failure. He denies diabetes. Family history of breast cancer. "
        "Brought to the emergency department."
    )
    found = conditions_from_note(note, mesh)
    names = {mesh.name(u) for u in found.headings}
    assert "Heart Failure" in names
    assert not names & {"Diabetes Mellitus", "Breast Neoplasms", "Emergencies"}
    assert {(mesh.name(f.ui), f.assertion) for f in found.set_aside()} >= {
        ("Diabetes Mellitus", "negated"),
        ("Breast Neoplasms", "family"),
    }


@pytest.mark.parametrize(
    ("name", "general"),
    [
        ("Disease", True),
        ("Emergencies", True),
        ("Hypertrophy", True),  # one per branch of general_headings.csv
        ("Hemorrhage", False),  # a process with many kinds below it is a finding
        ("Heart Failure", False),
    ],
)
def test_general_headings_do_not_stand_for_a_condition(mesh: Mesh, name: str, general: bool) -> None:
    from services.matching.patient import is_general

    assert is_general(mesh, _ui(mesh, name)) is general


def test_relevance_title_and_keywords_are_weaker_evidence(mesh: Mesh) -> None:
    assert _judge(mesh, ["Heartburn"], conditions=("Healthy",), title="Antacid for occasional heartburn")[0]
    assert _judge(mesh, ["Heartburn"], conditions=("Healthy",), keywords=("heartburn",))[0]
    relevant, reason, _ = _judge(mesh, ["Heartburn"], mesh_list=("Asthma",), title="Asthma in adults")
    assert not relevant and "Asthma" in reason


def test_rank_unknown_relevance_below_a_trial_about_the_disease(mesh: Mesh) -> None:
    patient = [_ui(mesh, "Heart Failure")]
    unknown = relevance(mesh, patient, trial_headings(mesh, TrialRecord("NCT1", conditions=("Healthy",))))
    about = relevance(mesh, patient, trial_headings(mesh, TrialRecord("NCT2", mesh_list=("Heart Failure",))))
    assert unknown.relevant and not unknown.matched  # not called not relevant without evidence
    assert rank_key("uncertain", about, reach=2) < rank_key("uncertain", unknown, reach=0, fit_score=100)


def test_relevance_title_naming_a_narrower_heading_is_about_the_patient(mesh: Mesh) -> None:
    # the trial files itself under its outcome (Chronic Pain); its title names the kind of hernia
    trial = {"mesh_list": ("Chronic Pain",), "title": "Mesh fixation in inguinal hernia surgery"}
    assert _judge(mesh, ["Hernia"], **trial)[0]
    assert not _judge(mesh, ["Hernia, Hiatal"], **trial)[0]  # a sibling is not named
