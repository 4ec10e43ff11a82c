"""The patient's conditions as MeSH headings: from a clinical note (mentions with their context) or a typed
list."""

from __future__ import annotations

import csv
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from services.matching.context import Assertion, Context, context
from services.vocab.mesh import DISEASES, Mesh, vocabulary

GENERAL_PATH = Path(__file__).resolve().parents[2] / "data" / "vocab" / "general_headings.csv"


@cache
def general_branches() -> tuple[tuple[str, int], ...]:
    """Tree branches whose headings name a process, not a condition, each with the most narrower headings such
    a heading may have (data/vocab/general_headings.csv)."""
    with open(GENERAL_PATH, encoding="utf-8", newline="") as fh:
        return tuple((r["tree_prefix"].strip() + ".", int(r["max_narrower"])) for r in csv.DictReader(fh))


def is_general(mesh: Mesh, ui: str) -> bool:
    """Whether every disease tree number of the heading lies in a general branch ("Disease", "Emergencies")
    and it has few kinds below it (Hemorrhage, with 55, is a finding)."""
    trees = [t for t in mesh.descriptors[ui].trees if t.startswith(DISEASES)]
    size = len(mesh.narrower(ui))
    return bool(trees) and all(
        any(t.startswith(p) and size <= most for p, most in general_branches()) for t in trees
    )


@dataclass(frozen=True)
class Finding:
    """One condition named in the text: its heading, the words, and what the text says about it."""

    ui: str
    text: str
    assertion: Assertion


@dataclass(frozen=True)
class PatientConditions:
    """The headings the patient has (affirmed), and the findings set aside (negated, a relative's,
    hypothetical)."""

    headings: frozenset[str]
    findings: tuple[Finding, ...] = ()

    def set_aside(self) -> tuple[Finding, ...]:
        """The findings that are not the patient's own."""
        return tuple(f for f in self.findings if f.assertion != "affirmed")


def conditions_from_note(
    note: str, mesh: Mesh | None = None, ctx: Context | None = None
) -> PatientConditions:
    """Every disease, sign or symptom heading the note names, with its assertion; the affirmed ones are the
    patient's (a heading both affirmed and negated somewhere counts as affirmed), except general processes."""
    mesh = mesh or vocabulary()
    ctx = ctx or context()
    findings = tuple(Finding(m.ui, m.text, ctx.assertion(note, m.start, m.end)) for m in mesh.mentions(note))
    affirmed = {f.ui for f in findings if f.assertion == "affirmed" and not is_general(mesh, f.ui)}
    return PatientConditions(frozenset(affirmed), findings)


def conditions_from_names(names: Iterable[str], mesh: Mesh | None = None) -> PatientConditions:
    """The headings of condition names typed one per field (a diagnosis, other conditions)."""
    mesh = mesh or vocabulary()
    return PatientConditions(frozenset(ui for name in names if name.strip() for ui in mesh.resolve(name)))
