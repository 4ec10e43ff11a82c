"""When a trial's general heading is only the umbrella of the one other disease it names.

ClinicalTrials.gov's indexers and sponsors often file a trial under a specific disease *and* a general heading
above it ("Atrial Fibrillation" with "Cardiovascular Diseases"; "Non-Small-Cell Lung" with "Neoplasms"). The
general heading also lies above the patient's disease (Heart Failure, prostate cancer), but here it stands for
the disease the trial names, not for every disease under it. So a general heading two or more levels above one
of the patient's headings (the one right above is the disease itself: Multiple Sclerosis for
relapsing-remitting MS) is set aside when the trial's other headings under it are all one disease (related to
one heading) unrelated to the patient's. It stays when they span several unrelated diseases (a basket:
"neurological disorders" with stroke, ALS and dementia) or when a condition name opens it ("Other Solid
Tumors", "Any Tumor Type": cue words in data/vocab/open_condition_cues.csv). Histology headings of another
organ's cancer go first (services.matching.axes).
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from functools import cache
from pathlib import Path

from services.matching.axes import foreign_histology
from services.vocab.mesh import Mesh

CUES_PATH = Path(__file__).resolve().parents[2] / "data" / "vocab" / "open_condition_cues.csv"


@cache
def open_cues() -> frozenset[str]:
    """The first words that open a condition name to every kind (data/vocab/open_condition_cues.csv)."""
    with open(CUES_PATH, encoding="utf-8", newline="") as fh:
        return frozenset(r["cue"].strip().lower() for r in csv.DictReader(fh))


def open_headings(mesh: Mesh, names: Iterable[str]) -> frozenset[str]:
    """The headings of condition names that begin with an opening word ("Other Solid Tumors" → Neoplasms)."""
    return frozenset(
        u
        for n in names
        if n.split()[:1] and n.split()[0].lower().strip(",:") in open_cues()
        for u in mesh.resolve(n)
    )


def _one_disease(mesh: Mesh, uis: list[str]) -> bool:
    return any(all(mesh.related(h, t) for t in uis) for h in uis)


def set_aside(
    mesh: Mesh, patient: frozenset[str], own: frozenset[str], opened: frozenset[str] = frozenset()
) -> frozenset[str]:
    """The trial's headings that say nothing about the patient: another organ's histology, and general
    headings above the patient's that are only the umbrella of the one other disease the trial names."""
    out = set(foreign_histology(mesh, patient, own))
    kept = own - out
    for u in kept - opened:
        if not any(p != u and u in mesh.broader(p) for p in patient) or any(
            u in mesh.parents(p) for p in patient
        ):
            continue  # not above the patient's disease, or right above it: the disease itself (MS for RRMS)
        under = [
            t
            for t in kept
            if t != u
            and t in mesh.narrower(u)
            and not mesh.is_attribute(t)
            and not any(mesh.related(t, p) for p in patient)
        ]
        if under and _one_disease(mesh, under):
            out.add(u)
    return frozenset(out)
