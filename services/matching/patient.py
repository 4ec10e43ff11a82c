"""The patient's conditions as MeSH headings: from a clinical note (mentions with their context) or a typed
list."""

from __future__ import annotations

import csv
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from services.errors import BadInput
from services.matching.context import Assertion, Context, context
from services.vocab.mesh import DISEASES, Mesh, vocabulary

VOCAB_DIR = Path(__file__).resolve().parents[2] / "data" / "vocab"
GENERAL_PATH = VOCAB_DIR / "general_headings.csv"
_SENTENCE = re.compile(r".+?(?:[.;!?](?=\s|$)|\n|$)", re.S)  # a decimal point ends no sentence
_WORD = re.compile(r"[^\W_]+")


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


@cache
def note_roles() -> tuple[dict[str, int], tuple[tuple[tuple[str, ...], str], ...]]:
    """Each role's rank (data/vocab/note_roles.csv) and the cue words that give a sentence its role
    (note_role_cues.csv), longest cue first."""
    with open(VOCAB_DIR / "note_roles.csv", encoding="utf-8", newline="") as fh:
        ranks = {r["role"]: int(r["rank"]) for r in csv.DictReader(fh)}
    with open(VOCAB_DIR / "note_role_cues.csv", encoding="utf-8", newline="") as fh:
        cues = [(tuple(_WORD.findall(r["cue"].lower())), r["role"]) for r in csv.DictReader(fh)]
    unknown = {role for _, role in cues} - set(ranks)
    if unknown or not {"presenting", "finding"} <= set(ranks):
        raise BadInput(f"note_role_cues.csv: roles {sorted(unknown)} are not in note_roles.csv")
    return ranks, tuple(sorted(cues, key=lambda c: -len(c[0])))


def sentence_role(note: str, at: int) -> str:
    """The role of the sentence holding character `at`: presenting (the note's first sentence), else the best
    ranked role a cue in it gives (diagnosis, history), else finding."""
    ranks, cues = note_roles()
    spans = [m for m in _SENTENCE.finditer(note) if m.group().strip()]
    where = next((i for i, m in enumerate(spans) if m.start() <= at < m.end()), 0)
    if where == 0:
        return "presenting"
    words = _WORD.findall(spans[where].group().lower())
    found = {
        role for cue, role in cues if any(tuple(words[i:i + len(cue)]) == cue for i in range(len(words)))
    }
    return min(found, key=lambda r: ranks[r], default="finding")


@dataclass(frozen=True)
class Finding:
    """One condition named in the text: its heading, the words, what the text says about it and the role of
    its sentence (presenting, diagnosis, finding, history)."""

    ui: str
    text: str
    assertion: Assertion
    role: str = "presenting"


@dataclass(frozen=True)
class PatientConditions:
    """The headings the patient has (affirmed), and the findings set aside (negated, a relative's,
    hypothetical)."""

    headings: frozenset[str]
    findings: tuple[Finding, ...] = ()
    # each affirmed heading's best role rank (0 presenting or diagnosed … 2 history); empty for a typed list
    prominence: Mapping[str, int] = field(default_factory=dict, compare=False, hash=False)

    def set_aside(self) -> tuple[Finding, ...]:
        """The findings that are not the patient's own."""
        return tuple(f for f in self.findings if f.assertion != "affirmed")


def conditions_from_note(
    note: str, mesh: Mesh | None = None, ctx: Context | None = None
) -> PatientConditions:
    """Every disease, sign or symptom heading the note names, with its assertion and its sentence's role; the
    affirmed ones are the patient's (a heading both affirmed and negated somewhere counts as affirmed), except
    general processes, each with the best rank of the sentences that affirm it."""
    mesh = mesh or vocabulary()
    ctx = ctx or context()
    findings = tuple(
        Finding(m.ui, m.text, ctx.assertion(note, m.start, m.end), sentence_role(note, m.start))
        for m in mesh.mentions(note)
    )
    ranks = note_roles()[0]
    prominence: dict[str, int] = {}
    for f in findings:
        if f.assertion == "affirmed" and not is_general(mesh, f.ui):
            prominence[f.ui] = min(prominence.get(f.ui, ranks[f.role]), ranks[f.role])
    return PatientConditions(frozenset(prominence), findings, prominence)
