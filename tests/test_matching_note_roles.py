"""Where a note names a condition (data/vocab/note_roles.csv, note_role_cues.csv): one test row each, and the
ranking it feeds (a trial about the presenting problem before one about a comorbidity)."""

from __future__ import annotations

import csv

import pytest

from services.matching.patient import VOCAB_DIR, conditions_from_note, note_roles, sentence_role
from services.matching.relevance import TrialRecord, rank_key, relevance, trial_headings
from services.vocab.mesh import Mesh, vocabulary

OPENING = "A 50-year-old patient comes for a visit. "


@pytest.fixture(scope="module")
def mesh() -> Mesh:
    return vocabulary()


def _rows(name: str) -> list[dict[str, str]]:
    with open(VOCAB_DIR / name, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.parametrize("row", _rows("note_role_cues.csv"), ids=lambda r: r["cue"])
def test_note_role_cue_row_gives_its_sentence_the_role(mesh: Mesh, row: dict[str, str]) -> None:
    note = OPENING + row["example"]
    at = note.lower().index(row["target"].lower())
    assert sentence_role(note, at) == row["role"]
    assert sentence_role(note, 0) == "presenting"
    found = conditions_from_note(note, mesh)
    named = mesh.resolve(row["target"])
    assert named and all(found.prominence[u] == note_roles()[0][row["role"]] for u in named)


def test_note_role_rows_rank_presenting_first_and_history_last() -> None:
    ranks = note_roles()[0]
    assert {r["role"] for r in _rows("note_roles.csv")} == set(ranks)
    assert ranks["presenting"] == ranks["diagnosis"] < ranks["finding"] < ranks["history"]


def test_note_role_without_a_cue_is_a_finding() -> None:
    note = OPENING + "On examination there is a goiter."
    assert sentence_role(note, note.index("goiter")) == "finding"
    assert sentence_role(OPENING + "A creatinine of 1.5 mg/dl and edema.", len(OPENING) + 30) == "finding"


def test_rank_trial_about_the_presenting_problem_before_a_comorbidity(mesh: Mesh) -> None:
    note = "A 60-year-old man comes with chronic cough. Medical history is significant for hypertension."
    found = conditions_from_note(note, mesh)
    keys = []
    for heading in ("Chronic Cough", "Hypertension"):
        record = TrialRecord(heading, mesh_list=(heading,))
        judged = relevance(mesh, found.headings, trial_headings(mesh, record))
        assert judged.relevant
        prominence = min(found.prominence[u] for u in judged.about)
        fit = 10 if heading == "Chronic Cough" else 90  # the comorbidity fits better; still after
        keys.append(rank_key("uncertain", judged, prominence=prominence, fit_score=fit))
    assert keys[0] < keys[1]
