"""Whether a trial is about the patient's condition, from the trial's own MeSH headings; and the ranking key.

Pure functions over a :class:`TrialRecord` (what sql/queries/matching_trials.sql returns) and the patient's
headings, shared by guided mode and `python -m services bench matching`.

- A trial's headings are its `browse_conditions` mesh-list rows plus its condition names resolved by MeSH
  (partial records have names only); its mesh-ancestor rows count only as the broader headings they are.
- A trial is *not relevant* only when none of its headings equals, contains or is contained in one of the
  patient's headings (through the tree, polyhierarchy included); the reason names both.
- "Excluding X", "except X", "other than X" and "non-X" in a condition name or the title exclude X: a patient
  whose heading lies under X is not for this trial.
- A trial whose headings fall in many unrelated branches (a registry, a basket trial) is *broad*: still
  relevant, but it never outranks a trial about the patient's disease with the same verdict.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

from services.eligibility.scoring import VERDICT_ORDER
from services.matching.context import context
from services.matching.umbrella import open_headings, set_aside
from services.vocab.mesh import Mesh

BROAD_MIN_BRANCHES = 5  # unrelated second-level tree branches that make a trial broad (a registry, a basket)
TOO_GENERAL_NARROWER = 400  # a patient heading with more narrower headings than this only matches as itself
_EXCLUDING = re.compile(
    r"\b(?:excluding|except(?:\s+for)?|other\s+than|not\s+including)\s+(?P<x>[^,;()]+)", re.I
)
_NON = re.compile(r"\bnon[- ](?P<x>[^\W\d_][\w-]*(?:\s+[\w-]+){0,6})", re.I)
_HEAD_WORD = re.compile(r"([^\W\d_]+)\W*$")


@dataclass(frozen=True)
class TrialRecord:
    """The fields relevance and ranking read from a trial (names as registered; countries not removed)."""

    nct_id: str
    title: str = ""
    conditions: tuple[str, ...] = ()
    mesh_list: tuple[str, ...] = ()
    mesh_ancestors: tuple[str, ...] = ()
    countries: tuple[str, ...] = ()
    inclusion: tuple[str, ...] = ()  # the inclusion criteria, one per item
    keywords: tuple[str, ...] = ()
    partial: bool = False  # the record lacks criteria text, sites or condition headings


@dataclass(frozen=True)
class TrialHeadings:
    """A trial's own headings, the broader ones ClinicalTrials.gov lists, what it excludes, and whether it is
    broad."""

    own: frozenset[str]
    ancestors: frozenset[str] = frozenset()
    named: frozenset[str] = frozenset()  # what its inclusion criteria require or its title and keywords name
    excluded: frozenset[str] = frozenset()
    broad: bool = False
    opened: frozenset[str] = frozenset()  # headings of names such as "Other Solid Tumors" (umbrella.py)


@dataclass(frozen=True)
class Relevance:
    """The judgement: relevant or not, one sentence why, the broad flag, and how closely it matched (0 =
    not)."""

    relevant: bool
    reason: str
    broad: bool = False
    matched: int = 0  # patient headings the trial is about
    closeness: int = (
        0  # 3 the same heading, 2 the trial's is narrower, 1 broader or only through its ancestors
    )
    about: frozenset[str] = frozenset()  # the patient headings the trial is about


def _excluded_phrase(mesh: Mesh, phrase: str, heads: Sequence[str]) -> frozenset[str]:
    """The headings an excluded phrase names: its longest leading whole term, else the phrase with a head word
    of the trial's names ("Excluding Breast" in "Solid Tumors, Excluding Breast" → breast tumors)."""
    words = phrase.split()
    for n in range(len(words), 0, -1):
        found = mesh.lookup(" ".join(words[:n]))
        if found:
            return found
    for head in heads:
        found = mesh.lookup(f"{phrase.strip()} {head}")
        if found:
            return found
    return frozenset()


def _exclusions(mesh: Mesh, texts: Sequence[str]) -> tuple[frozenset[str], list[str]]:
    """What the texts exclude, and each text with its exclusion phrases removed."""
    heads = [
        m.group(1)
        for t in texts
        if (m := _HEAD_WORD.search(_EXCLUDING.split(t)[0].strip() or "x")) and len(m.group(1)) > 2
    ]
    excluded: set[str] = set()
    kept: list[str] = []
    for text in texts:
        for m in _EXCLUDING.finditer(text):
            excluded |= _excluded_phrase(mesh, m.group("x"), heads)
        for m in _NON.finditer(text):
            excluded |= _excluded_phrase(mesh, m.group("x").replace("-", " "), ())
        kept.append(_EXCLUDING.sub(" ", text))
    return frozenset(excluded), kept


def _branches(mesh: Mesh, uis: Iterable[str]) -> int:
    """How many of the headings lie in second-level tree branches no other counted heading shares."""
    seen: set[str] = set()
    count = 0
    for ui in sorted(uis):
        prefixes = {".".join(t.split(".")[:2]) for t in mesh.descriptors[ui].trees}
        if prefixes and not prefixes & seen:
            count += 1
        seen |= prefixes
    return count


@lru_cache(maxsize=4096)
def trial_headings(mesh: Mesh, trial: TrialRecord) -> TrialHeadings:
    """The trial's headings from its mesh-list rows and its condition names; exclusions from names and
    title."""
    excluded, names = _exclusions(mesh, [*trial.conditions, trial.title])
    own = {mesh.by_name[n.lower()] for n in trial.mesh_list if n.lower() in mesh.by_name}
    for name in names[:-1]:  # the title names what the trial studies only as weaker evidence (`named`)
        own |= mesh.resolve(name)
    own -= {u for x in excluded for u in mesh.narrower(x)}
    ancestors = frozenset(mesh.by_name[n.lower()] for n in trial.mesh_ancestors if n.lower() in mesh.by_name)
    ctx = context()
    named = {
        m.ui
        for item in [*trial.inclusion, names[-1]]
        for m in mesh.mentions(item)
        if ctx.assertion(item, m.start, m.end) == "affirmed"
    }
    named |= {u for k in trial.keywords for u in mesh.lookup(k)}
    return TrialHeadings(
        frozenset(own),
        ancestors=ancestors,
        named=frozenset(named - set(excluded)),
        excluded=excluded,
        broad=_branches(mesh, own) >= BROAD_MIN_BRANCHES,
        opened=open_headings(mesh, names[:-1]),
    )


def _names(mesh: Mesh, uis: Iterable[str], limit: int = 3) -> str:
    """The most specific headings first, at most `limit`, as "A, B and C"."""
    picked = sorted(set(uis), key=lambda u: (-mesh.depth(u), mesh.name(u)))[:limit]
    names = [mesh.name(u) for u in picked]
    if not names:
        return "no condition we recognise"
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _closeness(mesh: Mesh, patient: str, trial: TrialHeadings) -> int:
    """3 the trial's own heading; 2 a narrower one of its own; 1 a broader one of its own, or the heading or
    a narrower one named by its title, keywords or inclusion criteria ("Inguinal Hernia Repair": hernia)."""
    if patient in trial.own:
        return 3
    narrower = frozenset() if len(mesh.narrower(patient)) > TOO_GENERAL_NARROWER else mesh.narrower(patient)
    if narrower & (trial.own | trial.ancestors):
        return 2
    named = patient in trial.named or bool(narrower & trial.named)
    if named or any(patient in mesh.narrower(t) for t in trial.own):
        return 1
    return 0


def relevance(mesh: Mesh, patient_headings: Iterable[str], trial: TrialHeadings) -> Relevance:
    """Relevant unless none of the trial's headings equals, contains or is contained in the patient's;
    excluded when a patient heading lies under what the trial excludes. Without headings on either side:
    relevant (unknown)."""
    patient = frozenset(patient_headings)
    if not patient:
        return Relevance(True, "We could not tell your condition from what you wrote.", trial.broad)
    barred = {p for p in patient if any(p in mesh.narrower(x) for x in trial.excluded)}
    if barred:
        return Relevance(
            False,
            f"This trial excludes {_names(mesh, trial.excluded)}; your condition is {_names(mesh, barred)}.",
            trial.broad,
        )
    if not trial.own and not trial.named:
        return Relevance(True, "This trial's record names no condition we recognise.", trial.broad)
    foreign = set_aside(mesh, patient, trial.own, trial.opened)  # another disease's umbrella (umbrella.py)
    if foreign:
        trial = replace(trial, own=trial.own - foreign, named=trial.named - foreign)
    close = {p: c for p in patient if (c := _closeness(mesh, p, trial))}
    if not close:
        return Relevance(
            False,
            f"This trial studies {_names(mesh, trial.own or trial.named)}; your condition is "
            f"{_names(mesh, patient)}.",
            trial.broad,
        )
    about = [t for t in trial.own if any(mesh.related(t, p) for p in close)] or list(trial.own) or list(close)
    broad = " It lists many other conditions too." if trial.broad else ""
    return Relevance(
        True,
        f"This trial studies {_names(mesh, about)}; your condition is {_names(mesh, close)}.{broad}",
        trial.broad,
        len(close),
        max(close.values()),
        frozenset(close),
    )


def reach_rank(within_reach: bool | None, patient_country: str | None, countries: Sequence[str]) -> int:
    """0 within reach, 1 distance unknown, 2 beyond reach — or unknown but only in countries other than the
    patient's (a Japan-only trial for a Chicago patient is far, not unknown)."""
    if within_reach is True:
        return 0
    if within_reach is False:
        return 2
    known = {c.strip().lower() for c in countries if c.strip()}
    if patient_country and known and patient_country.strip().lower() not in known:
        return 2
    return 1


def rank_key(
    verdict: str,
    judged: Relevance,
    *,
    partial: bool = False,
    reach: int = 1,
    prominence: int = 0,
    fit_score: int | None = None,
    miles: float | None = None,
    nct_id: str = "",
) -> tuple[float | int | str, ...]:
    """Sort key: verdict; then full records about the patient's disease before broad trials, partial records
    and trials whose relevance is unknown; then reach; then how prominent the matched condition is in a note
    (0 presenting or diagnosed, 1 a finding, 2 history: services.matching.patient); then more of the patient's
    conditions and a closer heading; then fit; then distance; then id."""
    about = not (judged.broad or partial or judged.matched == 0)
    return (
        VERDICT_ORDER.get(verdict, len(VERDICT_ORDER)),
        int(not about),
        reach,
        prominence,
        -judged.matched,
        -judged.closeness,
        -(fit_score if fit_score is not None else -1),
        miles if miles is not None else math.inf,
        nct_id,
    )
