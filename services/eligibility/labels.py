"""Per-criterion labels, their plain-language wording, and the one mapping to TrialGPT's labels."""

from __future__ import annotations

from enum import StrEnum

from services.eligibility.parser import CriterionKind
from services.errors import BadInput


class Label(StrEnum):
    """How one criterion stands for one patient."""

    MET = "met"
    NOT_MET = "not_met"
    NEEDS_DISCUSSION = "needs_discussion"
    NOT_ENOUGH_INFO = "not_enough_info"
    NOT_APPLICABLE = "not_applicable"

    @property
    def display(self) -> str:
        """Short wording for a patient-facing checklist."""
        return _DISPLAY[self]

    @property
    def is_known(self) -> bool:
        """True when the label says yes or no (met / not met), the only labels a fit score counts."""
        return self in (Label.MET, Label.NOT_MET)


_DISPLAY = {
    Label.MET: "Met",
    Label.NOT_MET: "Not met",
    Label.NEEDS_DISCUSSION: "Ask your doctor",
    Label.NOT_ENOUGH_INFO: "Not enough information",
    Label.NOT_APPLICABLE: "Does not apply to you",
}

# TrialGPT (Jin et al.) labels.  For an exclusion criterion "met" means the exclusion applies,
# which TrialGPT calls "excluded"; "not met" is "not excluded".
# The labels that say neither yes nor no are spelled the same for both kinds.
_OPEN_BENCHMARK = {
    Label.NEEDS_DISCUSSION: "not enough information",
    Label.NOT_ENOUGH_INFO: "not enough information",
    Label.NOT_APPLICABLE: "not applicable",
}
_TO_BENCHMARK: dict[CriterionKind, dict[Label, str]] = {
    "inclusion": {Label.MET: "included", Label.NOT_MET: "not included", **_OPEN_BENCHMARK},
    "exclusion": {Label.MET: "excluded", Label.NOT_MET: "not excluded", **_OPEN_BENCHMARK},
}
BENCHMARK_LABELS: dict[CriterionKind, tuple[str, ...]] = {
    kind: tuple(dict.fromkeys(names.values())) for kind, names in _TO_BENCHMARK.items()
}


def check_kind(kind: str) -> CriterionKind:
    """The kind itself when it is "inclusion" or "exclusion"; BadInput otherwise."""
    if kind not in ("inclusion", "exclusion"):
        raise BadInput(f"criterion kind must be 'inclusion' or 'exclusion', not {kind!r}")
    return kind  # type: ignore[return-value]


def to_benchmark(label: Label | str, kind: CriterionKind | str) -> str:
    """Our label for a criterion of this kind, spelled the way the TrialGPT benchmark spells it."""
    return _TO_BENCHMARK[check_kind(kind)][Label(label)]


