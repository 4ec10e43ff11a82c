"""Therapeutic areas: MeSH 2024's disease categories under the names researchers use
(data/mesh/therapeutic_areas.csv).

An area is a MeSH tree number (a category such as C04 Neoplasms, or one heading such as Rare Diseases) and
everything below it; a study is in an area when one of its MeSH descriptors (app.study_mesh: its MeSH headings
and its resolved condition names) lies there, so one study may be in several areas. The everyday names in
`typed_names` ("oncology", "cardiology") are read as the area's heading when typed as a condition: "oncology"
= Neoplasms and everything under it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from services.vocab import mesh as mesh_vocab

FILE = "therapeutic_areas.csv"


@dataclass(frozen=True)
class Area:
    """One therapeutic area: its name, the MeSH tree number it is, that heading, the names that say it, a
    source."""

    name: str
    tree_number: str
    heading: str
    typed_names: tuple[str, ...]
    source: str

    def root(self) -> str:
        """The descriptor at the area's tree number."""
        m = mesh_vocab.vocabulary()
        ui = m.ui_of_tree(self.tree_number)
        if ui is None:  # a category heading: top_headings.csv gives it its tree number
            raise LookupError(f"no MeSH descriptor at {self.tree_number}")
        return ui

    def descriptors(self) -> frozenset[str]:
        """The area's heading and every narrower descriptor."""
        return mesh_vocab.vocabulary().narrower(self.root())


@cache
def areas() -> tuple[Area, ...]:
    """Every area, in the file's order."""
    return tuple(
        Area(
            r["area"],
            r["tree_number"],
            r["heading"],
            tuple(t.strip() for t in r["typed_names"].split(";") if t.strip()),
            r["source"],
        )
        for r in mesh_vocab.read_csv(FILE)
    )


def names() -> tuple[str, ...]:
    """The area names (the filter's allowed values)."""
    return tuple(a.name for a in areas())


def by_name(name: str) -> Area | None:
    """The area of a name, case folded."""
    return next((a for a in areas() if a.name.lower() == name.strip().lower()), None)


@cache
def _typed() -> dict[tuple[str, ...], Area]:
    m = mesh_vocab.vocabulary()
    out: dict[tuple[str, ...], Area] = {}
    for a in areas():
        for t in (a.name, *a.typed_names):
            out.setdefault(m.words(t), a)
    return out


def named_by(text: str) -> Area | None:
    """The area a typed condition names as a whole ("Oncology", "cardiology", "rare diseases"), else None."""
    words = mesh_vocab.vocabulary().words(text)
    return _typed().get(words) if words else None
