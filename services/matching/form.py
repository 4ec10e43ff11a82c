"""The guided form's patient as MeSH headings, its search conditions, and a candidate trial's relevance.

Guided mode's search and matching read the diagnosis and the other conditions through the one vocabulary
(services/vocab): the diagnosis's headings (qualifiers such as "HER2-positive" or "metastatic" are facts, never part
of the searched condition), the headings one level up for the broader search (never a word cut from the text), and
every other condition the patient named, searched too.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from services.matching.relevance import Relevance, TrialRecord, reach_rank, relevance, trial_headings
from services.vocab.mesh import Mesh, vocabulary
from services.vocab.qualifiers import Diagnosis, diagnosis

GROUPING_PATH = Path(__file__).resolve().parents[2] / "data" / "vocab" / "grouping_headings.csv"


@cache
def grouping_trees() -> frozenset[str]:
    """Tree numbers of headings that only group others (data/vocab/grouping_headings.csv): never searched."""
    with open(GROUPING_PATH, encoding="utf-8", newline="") as fh:
        return frozenset(r["tree_number"].strip() for r in csv.DictReader(fh))


@dataclass(frozen=True)
class FormConditions:
    """The patient's conditions as headings: the diagnosis (with its qualifiers) and each other condition."""

    diagnosis: Diagnosis
    others: tuple[tuple[str, frozenset[str]], ...] = ()

    @property
    def headings(self) -> frozenset[str]:
        """Every heading the patient has."""
        return self.diagnosis.headings.union(*(h for _, h in self.others))


def form_conditions(diagnosis_text: str, other_conditions: Iterable[str] = ()) -> FormConditions:
    """The diagnosis and the other conditions of a form, read by MeSH."""
    mesh = vocabulary()
    others = tuple((text, mesh.resolve(text)) for text in other_conditions if text.strip())
    return FormConditions(diagnosis(diagnosis_text), others)


def broader_names(headings: Iterable[str], mesh: Mesh | None = None) -> list[str]:
    """Every disease heading above the given ones, up to the top of its category (every parent: MeSH is a
    polyhierarchy), nearest level first, by name; not headings that only group others ("Neoplasms by Site")
    nor ones that say how a disease behaves. A trial filed under a broader disease as a whole ("Leukemia" for
    a child with B-ALL, "Nervous System Diseases" for MS, "Neoplasms" for a solid-tumour basket) is about the
    patient too, however far up it is filed."""
    mesh = mesh or vocabulary()
    grouping = {u for t in grouping_trees() if (u := mesh.ui_of_tree(t))}
    seen = set(headings)
    out: list[str] = []
    level = set(headings)
    while level:  # a grouping heading is walked through (its parents are the next level) but never searched
        parents = {p for h in level for p in mesh.parents(h)
                   if mesh.in_category(p) and not mesh.is_attribute(p)}
        level = parents - seen
        seen |= level
        out += sorted(mesh.name(p) for p in level if p not in grouping)
    return out


def trial_relevance(conditions: FormConditions, record: TrialRecord, mesh: Mesh | None = None) -> Relevance:
    """Whether the trial is about one of the patient's conditions (services.matching.relevance)."""
    mesh = mesh or vocabulary()
    return relevance(mesh, conditions.headings, trial_headings(mesh, record))


def ranking_fields(judged: Relevance, about_diagnosis: bool, record: TrialRecord, patient_country: str | None,
                   miles: float | None) -> dict[str, bool | int]:
    """What a saved match carries for the ranking (services.eligibility.scoring.rank_key): whether the record is
    partial (no criteria text, sites or condition headings) or broad (many unrelated conditions), whether it is
    about the diagnosis itself (not only another condition of the patient's), how many of the patient's conditions
    it is about and how closely, and whether its distance is unknown while it runs only in other countries."""
    return {
        "partial": record.partial,
        "broad": judged.broad,
        "about_diagnosis": about_diagnosis,
        "conditions_matched": judged.matched,
        "closeness": judged.closeness,
        "abroad": miles is None and reach_rank(None, patient_country, record.countries) == 2,
    }
