"""What save_matched_trials checks in a match against the trial's own record: that every criterion is one of
the trial's lines (or its registry limits), and that the verdict follows from the judged lines.

Lines are compared normalised (services.data.geo.fold: lower case, no accents, punctuation as spaces; a list
number or a cut-off ellipsis left out), so a criterion may quote a whole line or a part of one, but not words
of its own."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from services.assistant.careteam import FULL_CRITERIA
from services.data.geo import fold
from services.data.provenance import NOT_IN_COPY
from services.eligibility.match import OPEN_CRITERION_STATUSES, structured_criteria

MAX_SAVED_CRITERIA = 60  # services.assistant.arguments.Match.criteria holds at most this many
MAX_NAMED = 3  # lines named in one refusal
_LIST_NUMBER = re.compile(r"^\s*(?:[-*•]\s*|\(?\d{1,3}[.)]\s+|[a-z][.)]\s+)")
# Rows the app itself writes for a trial's registry fields (guided mode's rules,
# services.assistant.guided.judge).
_REGISTRY_ROWS = (
    "Any age",
    "Sex: any",
    "Accepts healthy volunteers",
    FULL_CRITERIA,
    f"Age limits: {NOT_IN_COPY}",
    f"Sex limits: {NOT_IN_COPY}",
)


def normalised(text: str) -> str:
    """A line as compared: no list number, no trailing ellipsis, folded."""
    return fold(_LIST_NUMBER.sub("", str(text)).rstrip().rstrip("…").rstrip("."))


def age_range(min_age: str | None, max_age: str | None) -> str:
    """A trial's registry age limits in words ("18 Years to no maximum")."""
    low = min_age if min_age and min_age.upper() != "N/A" else "no minimum"
    high = max_age if max_age and max_age.upper() != "N/A" else "no maximum"
    return f"{low} to {high}"


def ages_shown(info: Mapping[str, Any]) -> str:
    """The age limits as get_eligibility_criteria shows them: what our copy lacks is said, never read as no
    limit."""
    ages = age_range(info.get("min_age"), info.get("max_age"))
    if "ages" not in set(info.get("not_in_this_copy") or ()):
        return ages
    if info.get("min_age") is None and info.get("max_age") is None:
        return NOT_IN_COPY
    return (
        f"{ages} (the edges of its age groups; the exact limits are not in this copy — see "
        "ClinicalTrials.gov)"
    )


def sex_shown(info: Mapping[str, Any]) -> str | None:
    """The sex limit as get_eligibility_criteria shows it."""
    lacks = set(info.get("not_in_this_copy") or ())
    return info.get("sex") or (NOT_IN_COPY if "sex" in lacks else None)


def own_lines(info: Mapping[str, Any]) -> list[str]:
    """Every text a criterion of this trial may quote, normalised: its listed lines, its criteria text, and
    its registry limits as the tool shows them ("Ages: 18 Years to no maximum", "Sex: ALL") and as the rules
    write them ("Age 18 years or older")."""
    ages, sex = ages_shown(info), sex_shown(info) or "any"
    registry = [
        f"Ages: {ages}",
        f"Age: {ages}",
        f"Sex: {sex}",
        *_REGISTRY_ROWS,
        *(c.text for c in structured_criteria(info.get("min_age"), info.get("max_age"), info.get("sex"))),
    ]
    lines = [
        *(info.get("inclusion") or []),
        *(info.get("exclusion") or []),
        str(info.get("criteria_text") or ""),
    ]
    return [n for n in (normalised(t) for t in [*lines, *registry]) if n]


def _within(part: str, whole: str) -> bool:
    return bool(part) and f" {part} " in f" {whole} "


def quoted(text: str) -> str:
    """A criterion as compared: normalised, and a line cut with an ellipsis without its last (maybe cut) word.
    """
    words = normalised(text)
    return words.rsplit(" ", 1)[0] if str(text).rstrip().endswith("…") and " " in words else words


def foreign_criteria(criteria: Sequence[Mapping[str, Any]], info: Mapping[str, Any]) -> list[str]:
    """The criteria (as written) that are not the trial's own lines."""
    own = own_lines(info)
    return [
        str(c.get("criterion") or "")
        for c in criteria
        if not any(_within(quoted(str(c.get("criterion") or "")), line) for line in own)
    ]


def _quoted(lines: Sequence[str]) -> str:
    shown = "; ".join(f"“{line[:120]}”" for line in lines[:MAX_NAMED])
    return shown + (f" and {len(lines) - MAX_NAMED} more" if len(lines) > MAX_NAMED else "")


def unjudged_lines(criteria: Sequence[Mapping[str, Any]], info: Mapping[str, Any]) -> list[str]:
    """The trial's listed lines that no saved criterion quotes (when the list could hold them all)."""
    if len(criteria) >= MAX_SAVED_CRITERIA:
        return []
    judged = [quoted(str(c.get("criterion") or "")) for c in criteria]
    listed = [*(info.get("inclusion") or []), *(info.get("exclusion") or [])]
    return [
        line
        for line in listed
        if not any(_within(j, normalised(line)) or _within(normalised(line), j) for j in judged)
    ]


def verdict_problem(
    match: Mapping[str, Any], info: Mapping[str, Any] | None, *, criteria_missing: bool = False
) -> str | None:
    """Why the verdict does not follow from the judged lines (None when it does)."""
    verdict = match.get("verdict")
    statuses = {c.get("status") for c in match.get("criteria") or []}
    if verdict == "eligible" and not statuses & {"met", "not_met"}:
        return (
            "verdict 'eligible' with no criterion judged (none is 'met'); a trial can only be called "
            "eligible when its criteria were checked. Use 'uncertain'"
            + (" (its criteria text is missing from this copy)" if criteria_missing else "")
            + "."
        )
    if verdict in ("eligible", "uncertain") and "not_met" in statuses:
        return f"verdict '{verdict}' but a criterion is 'not_met'; use 'excluded' or fix the criterion."
    if verdict == "excluded" and "not_met" not in statuses:
        return "verdict 'excluded' needs at least one criterion marked 'not_met'."
    if verdict != "eligible":
        return None
    criteria = list(match.get("criteria") or [])
    open_lines = [
        str(c.get("criterion") or "") for c in criteria if c.get("status") in OPEN_CRITERION_STATUSES
    ]
    if open_lines:
        return (
            f"verdict 'eligible' but {len(open_lines)} judged line(s) are still open "
            f"({_quoted(open_lines)}); a trial is eligible only when every judged line is met. "
            "Use 'uncertain'."
        )
    if match.get("unknowns"):
        return (
            "verdict 'eligible' with unknowns still to settle; a trial with open questions is 'uncertain' "
            "(its fit cannot be 100 while something is unknown)."
        )
    missing = unjudged_lines(criteria, info) if info is not None else []
    if missing:
        return (
            f"verdict 'eligible' but {len(missing)} of the trial's own lines were not judged "
            f"({_quoted(missing)}); judge every line, or use 'uncertain'."
        )
    return None


def criteria_problem(match: Mapping[str, Any], info: Mapping[str, Any] | None) -> str | None:
    """Why the match's criteria cannot be saved: lines the trial does not have (None when all are its own)."""
    if info is None:
        return None
    foreign = foreign_criteria(list(match.get("criteria") or []), info)
    if not foreign:
        return None
    return (
        f"{len(foreign)} criterion text(s) are not lines of this trial ({_quoted(foreign)}). Quote each "
        "criterion as get_eligibility_criteria gives it (a whole line or a part of one); for the registry "
        "limits write 'Ages: <ages as given>' and 'Sex: <sex as given>'."
    )
