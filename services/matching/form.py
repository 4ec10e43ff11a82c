"""The guided form's patient as MeSH headings, its search conditions, and a candidate trial's relevance.

Guided mode's search and matching read the diagnosis and the other conditions through the one vocabulary
(services/vocab): the diagnosis's headings (qualifiers such as "HER2-positive" or "metastatic" are facts, never part
of the searched condition), the headings one level up for the broader search (never a word cut from the text), and
every other condition the patient named, searched too.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from services.matching.relevance import Relevance, TrialRecord, reach_rank, relevance, trial_headings
from services.vocab.mesh import Mesh, vocabulary
from services.vocab.qualifiers import Diagnosis, diagnosis

BROADER_MIN_DEPTH = 3  # going up stops above grouping headings such as "Neoplasms by Site" (C04.588)
BROADER_LEVELS = 2  # levels up the tree the broader search goes


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


def broader_names(headings: Iterable[str], mesh: Mesh | None = None, levels: int = BROADER_LEVELS) -> list[str]:
    """The disease headings up to `levels` levels above the given ones (every parent: MeSH is a polyhierarchy),
    nearest level first, by name; not grouping headings at the top of a tree ("Neoplasms by Site") nor ones that
    say how a disease behaves. Two levels, so a trial filed under the broader disease as a whole ("Lung Cancer"
    for an NSCLC patient, two levels up) is found too."""
    mesh = mesh or vocabulary()
    seen = set(headings)
    out: list[str] = []
    level = set(headings)
    for _ in range(levels):
        parents: set[str] = set()
        for h in level:
            for tree in mesh.descriptors[h].trees:
                up = tree.rsplit(".", 1)[0] if "." in tree else ""
                parent = mesh.ui_of_tree(up) if up.count(".") + 1 >= BROADER_MIN_DEPTH else None
                if parent and mesh.in_category(parent) and not mesh.is_attribute(parent):
                    parents.add(parent)
            parents |= mesh.extra_parents.get(h, set())
        level = parents - seen
        seen |= level
        out += sorted(mesh.name(p) for p in level)
    return out


def trial_relevance(conditions: FormConditions, record: TrialRecord, mesh: Mesh | None = None) -> Relevance:
    """Whether the trial is about one of the patient's conditions (services.matching.relevance)."""
    mesh = mesh or vocabulary()
    return relevance(mesh, conditions.headings, trial_headings(mesh, record))


def record_of(nct_id: str, *, title: str, conditions: Sequence[str], mesh_list: Sequence[str],
              mesh_ancestors: Sequence[str], keywords: Sequence[str], inclusion: Sequence[str],
              countries: Sequence[str], partial: bool) -> TrialRecord:
    """A TrialRecord from the fields a backend gives."""
    return TrialRecord(nct_id=nct_id, title=title, conditions=tuple(conditions), mesh_list=tuple(mesh_list),
                       mesh_ancestors=tuple(mesh_ancestors), countries=tuple(countries),
                       inclusion=tuple(inclusion), keywords=tuple(keywords), partial=partial)


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
