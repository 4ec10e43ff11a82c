"""`python -m services match --form FORM.json`: guided mode's search and matching for one patient form.

A thin adapter over the Assistant page's guided mode: the same GuidedAssistant, the same backend
(services.assistant.view_model.backend), the same three steps (submit_intake → run_search → run_matching) on a
fresh session, and the matches in the order of the page's trial cards. It uses only GuidedAssistant's public
methods, IntakeForm and AssistantSession, so the assistant's internals can change underneath it.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any

import pydantic

from services.errors import BadInput

MAX_FORM_BYTES = 64_000
LIST_FIELDS = ("biomarkers", "treatments", "trial_types", "preferred_phases", "other_conditions")


def register(sub: Any) -> None:
    """Add the `match` command."""
    p = sub.add_parser("match", help="guided mode's search and matching for one patient form",
                       description="Runs the Assistant page's guided mode (intake → search → matching) for one "
                                   "patient form on the database and prints the trials in the order the page "
                                   "shows them, with each one's verdict, fit, distance and criteria, and the "
                                   "searches that were run.")
    p.add_argument("--form", required=True, type=Path, metavar="FORM.json",
                   help="a JSON object with the guided form's fields (diagnosis, stage, subtype, biomarkers, "
                        "treatments, age, sex, location, travel_radius_miles, activity_level, trial_types, "
                        "preferred_phases, interventions_of_interest, other_conditions, notes), or an object "
                        "holding it under \"form\" (the adjudicated forms in tests/fixtures/guided_forms/)")
    p.add_argument("--json", action="store_true", help="print JSON: matches, searches, found, checked")
    p.set_defaults(handler=cmd_match)


def read_form(path: Path) -> Any:
    """The form in a JSON file (the guided form's fields, or an object holding them under "form")."""
    try:
        size = path.stat().st_size
        if size > MAX_FORM_BYTES:
            raise BadInput(f"{path} is {size:,} bytes; a patient form is far smaller (at most {MAX_FORM_BYTES:,}).")
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise BadInput(f"Cannot read {path}: {exc.strerror or exc}.") from exc
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadInput(f"{path} is not a JSON file: {exc}.") from exc
    if isinstance(data, dict) and isinstance(data.get("form"), dict):
        data = data["form"]
    return intake_form(data)


def intake_form(data: Any) -> Any:
    """A guided IntakeForm from a JSON object; list answers may be lists or the page's comma-separated text."""
    from services.assistant.guided import IntakeForm, split_items

    if not isinstance(data, Mapping):
        raise BadInput("The form must be a JSON object with the guided form's fields.")
    known = {f.name for f in fields(IntakeForm)}
    unknown = sorted(str(k) for k in data if k not in known)
    if unknown:
        raise BadInput(f"Unknown form field(s) {', '.join(unknown)}; the fields are {', '.join(sorted(known))}.")
    values = {k: (split_items(v) if k in LIST_FIELDS and isinstance(v, str) else v) for k, v in data.items()}
    try:
        return pydantic.TypeAdapter(IntakeForm).validate_python(values)
    except pydantic.ValidationError as exc:
        wrong = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:10])
        raise BadInput(f"The form has wrong values: {wrong}.") from exc


def verdict(match: Mapping[str, Any]) -> str:
    """The four-way verdict of one saved guided match: eligible | uncertain | excluded | not_relevant.

    Guided matching saves scoring.Verdict's value as the match's "verdict" (not relevant > excluded > uncertain >
    eligible, see services.eligibility.scoring), so the map is one-to-one; the fit band ("good match so far",
    "needs information", "unlikely") is a ranking aid and does not change the verdict. Anything else is an error,
    so a change in what the assistant saves shows up here instead of as a silently wrong benchmark.
    """
    from services.eligibility.scoring import Verdict

    value = str(match.get("verdict"))
    if value not in {v.value for v in Verdict}:
        raise ValueError(f"{match.get('nct_id')}: unknown match verdict {value!r}")
    return Verdict(value).value


def match_row(match: Mapping[str, Any]) -> dict[str, Any]:
    """One saved match as the command's output row."""
    return {
        "nct_id": match["nct_id"],
        "verdict": verdict(match),
        "fit_score": match.get("fit_score"),
        "within_reach": match.get("within_reach"),
        "miles": match.get("distance_miles"),
        "reason": match.get("summary") or "",
        "criteria": [{"kind": c.get("type"), "text": c.get("criterion"), "status": c.get("status"),
                      "reason": c.get("reason")} for c in match.get("criteria") or []],
    }


def run_match(form: Any) -> dict[str, Any]:
    """Guided mode's intake, search and matching for one IntakeForm on a fresh session, as the page runs them:
    matches in the page's card order, the searches run (with their counts), found and checked."""
    from services.assistant import AssistantSession
    from services.assistant import view_model as vm
    from services.assistant.guided import GuidedAssistant, GuidedError
    from services.assistant.handlers import search_facts

    session = AssistantSession()
    guide = GuidedAssistant(vm.backend())
    try:
        guide.submit_intake(session, form)
        guide.run_search(session)
        shown: list[str] = []
        if session.candidates:
            step = guide.run_matching(session)
            cards, _ = vm.cards_to_show(session, step.events)
            shown = [str(c["nct_id"]) for c in cards]
    except GuidedError as exc:
        raise BadInput(str(exc)) from exc
    facts = search_facts(session)
    matches = [match_row(m) for i in shown if (m := session.matched(i)) is not None]
    return {"place": facts["place"], "radius_miles": facts["radius_miles"], "searches": facts["searches"],
            "found": facts["found"], "checked": facts["checked"], "matches": matches}


def _text(data: dict[str, Any]) -> str:
    lines = [f"{s['strategy']} ({s['condition'] or ''}; {s['radius_miles'] or 'any'} mi): "
             f"{s['returned']} returned, {s['new']} new" for s in data["searches"]]
    lines.append(f"found {data['found']}, checked {data['checked']}")
    for m in data["matches"]:
        miles = f"{m['miles']:.0f} mi" if isinstance(m["miles"], int | float) else "distance unknown"
        lines.append(f"{m['nct_id']}  {m['verdict']:<12} fit {m['fit_score']}  {miles}")
    return "\n".join(lines)


def cmd_match(args: argparse.Namespace) -> int:
    """Print the guided matches for --form."""
    from services.cli import print_result

    print_result(run_match(read_form(args.form)), args.json, _text)
    return 0
