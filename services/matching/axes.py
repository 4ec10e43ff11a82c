"""A cancer heading's two axes in MeSH: the site it starts in and its tissue type (histology).

MeSH files a cancer under both (Adenocarcinoma of Lung lies under Lung Neoplasms and under Adenocarcinoma). A
histology-only heading ("Adenocarcinoma", "Carcinoma") is about many organs, so when a trial's own site
headings all name other organs than the patient's ("Stomach Neoplasms" for a lung cancer), its histology
heading says the tissue type of *that* cancer, not that the trial is about the patient's: such headings are
set aside before relevance is judged. The tree prefixes of each axis are data (data/vocab/neoplasm_axes.csv).
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from functools import cache
from pathlib import Path

from services.vocab.mesh import Mesh

AXES_PATH = Path(__file__).resolve().parents[2] / "data" / "vocab" / "neoplasm_axes.csv"


@cache
def axes() -> dict[str, tuple[str, ...]]:
    """Each axis ("site", "histology") with its tree prefixes (data/vocab/neoplasm_axes.csv)."""
    out: dict[str, list[str]] = {}
    with open(AXES_PATH, encoding="utf-8", newline="") as fh:
        for row in csv.DictReader(fh):
            out.setdefault(row["axis"].strip(), []).append(row["tree_prefix"].strip() + ".")
    return {k: tuple(v) for k, v in out.items()}


def on_axis(mesh: Mesh, ui: str, axis: str) -> bool:
    """Whether one of the heading's tree numbers lies on the axis."""
    return any(t.startswith(axes()[axis]) for t in mesh.descriptors[ui].trees)


def histology_only(mesh: Mesh, ui: str) -> bool:
    """A tissue-type heading with no site ("Adenocarcinoma"; not "Adenocarcinoma of Lung")."""
    return on_axis(mesh, ui, "histology") and not on_axis(mesh, ui, "site")


def foreign_histology(mesh: Mesh, patient: Iterable[str], trial: Iterable[str]) -> frozenset[str]:
    """The trial's histology-only headings that say nothing about the patient: the patient's cancer has a
    site, the trial names sites too, and none of them is, contains or lies in one of the patient's."""
    own = frozenset(trial)
    patient_sites = [p for p in patient if on_axis(mesh, p, "site")]
    trial_sites = [t for t in own if on_axis(mesh, t, "site")]
    if not patient_sites or not trial_sites:
        return frozenset()
    if any(mesh.related(t, p) for t in trial_sites for p in patient_sites):
        return frozenset()
    return frozenset(t for t in own if histology_only(mesh, t))
