"""What each of the assistant's tools does: data tools through the TrialBackend, session and UI tools on the session.

A handler gets its tool's arguments as their typed model (services.assistant.arguments), checked by the
registry for the model's calls and built directly by guided mode.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from datetime import date
from typing import Any, TypeVar

from services.assistant import arguments as a
from services.assistant import careteam, match_check
from services.assistant.arguments import (
    ACTIVITY_LEVELS,
    MAX_SITES,
)
from services.assistant.grounding import cited_ids
from services.assistant.registry import ToolContext, ToolError
from services.assistant.session import AssistantSession
from services.dashboard import condition as condition_model
from services.data import geo
from services.data.provenance import NOT_IN_COPY
from services.eligibility.scoring import fit_from_statuses, rank_key, reach_note, within_reach
from services.freshness import status_note
from services.llm import count_usage
from services.trials import (
    CRITERIA_MISSING,
    MAX_TRIALS,
    NCT_RE,
    ReportRequest,
    Site,
    ctgov_url,
    site_may_enroll,
)

MAX_TITLE = 120
MAX_INTERVENTIONS = 3
MAX_CONTACTS = 10  # of one trial's details; full AACT lists hundreds of site contacts for some trials
MAX_CRITERIA_LINES = 40  # of each kind, in one eligibility tool result
CRITERIA_MISSING_NOTE = (
    "Our copy of this registry record has no eligibility criteria text (it came from a download that leaves it "
    "out); the registry itself has it at ClinicalTrials.gov. Only the age and sex limits can be checked here: mark "
    "every other requirement 'not_enough_information' and never call the trial 'eligible'."
)
SAME_PLACE_MILES = 2.0  # a point this close to the patient's place is that place
REQUIRED_FOR_COMPLETE = ("diagnosis", "age", "sex", "location")

T = TypeVar("T")


# --------------------------------------------------------------------------------------------
# Compact results.


def truncate(text: str | None, limit: int) -> str | None:
    """Text cut to limit characters with an ellipsis; None stays None."""
    if text is None or len(text) <= limit:
        return text
    return text[: limit - 1].rstrip() + "…"


def _capped(out: dict[str, Any], key: str, items: Sequence[Any], limit: int,
            each: Callable[[Any], Any] = lambda item: item) -> None:
    """out[key]: the first limit items (each one through `each`); out["more_<key>"]: how many were left out, if any."""
    out[key] = [each(item) for item in items[:limit]]
    if len(items) > limit:
        out[f"more_{key}"] = len(items) - limit


def compact_trial(trial: Mapping[str, Any], today: date | None = None) -> dict[str, Any]:
    """A search hit trimmed for the model: short title, at most 3 interventions, no search-only fields; says when
    the criteria text is missing from our copy and when an open status may be out of date."""
    out: dict[str, Any] = {
        "nct_id": trial["nct_id"],
        "title": truncate(trial.get("title") or "", MAX_TITLE),
        "status": trial.get("status"),
        "phases": list(trial.get("phases") or []),
        "conditions": [truncate(c, 80) for c in list(trial.get("conditions") or [])[:5]],
        "sponsor": truncate(trial.get("sponsor"), 80),
        "enrollment": trial.get("enrollment"),
        "start_date": trial.get("start_date"),
        "ages": match_check.age_range(trial.get("min_age"), trial.get("max_age")),
        "sex": trial.get("sex"),
        "site_count": trial.get("site_count"),
        "nearest_site": trial.get("nearest_site"),
    }
    _capped(out, "interventions", list(trial.get("interventions") or []), MAX_INTERVENTIONS, lambda i: truncate(i, 80))
    if trial.get("has_criteria") is False:
        out["criteria_text"] = CRITERIA_MISSING
    stale = status_note(trial.get("status"), primary_completion=trial.get("primary_completion_date"),
                        last_update=trial.get("last_update_date"), today=today)
    if stale:
        out["status_note"] = stale
    return out


def nearest_sites(sites: list[Site], limit: int) -> list[Site]:
    """At most limit sites: the located ones that may take participants (services.trials.site_may_enroll) by
    distance, then the located ones whose own status is closed, then those of unknown distance; so the first is
    services.trials.nearest_site."""
    return sorted(sites, key=lambda s: (s.get("distance_miles") is None, not site_may_enroll(s.get("status")),
                                        s.get("distance_miles") or 0.0))[:limit]


def condition_matches(condition_text: str, trial: Mapping[str, Any]) -> bool:
    """Whether a trial is about the condition under the one condition model (services.dashboard.condition): one of its
    condition names, MeSH terms or keywords matches, exactly as the search's SQL decides."""
    others = [*(trial.get("mesh_terms") or []), *(trial.get("keywords") or [])]
    return condition_model.expand(condition_text).matches_trial((str(t) for t in trial.get("conditions") or []),
                                                                (str(t) for t in others))


def _nct_arg(nct_id: str) -> str:
    value = str(nct_id).strip().upper()
    if not NCT_RE.fullmatch(value):
        raise ToolError(f"'{nct_id}' is not an NCT id; it must look like NCT followed by 8 digits.")
    return value


def _found(nct_id: str, value: T | None) -> T:
    """The backend's answer for nct_id; a tool error when it has no such trial."""
    if value is None:
        raise ToolError(f"No trial {nct_id} in the database. Check the id against your search results.")
    return value


# --------------------------------------------------------------------------------------------
# Data tools (through TrialBackend).


def _check_place(args: a.DashboardQuery) -> None:
    if args.given("latitude") != args.given("longitude"):
        raise ToolError("Give latitude and longitude together (geocode_location turns a place into both).")
    if args.given("radius_miles") and not args.given("latitude"):
        raise ToolError(
            "radius_miles needs latitude and longitude; call geocode_location for the place first."
        )


def search_trials(args: a.SearchQuery, ctx: ToolContext) -> dict[str, Any]:
    condition, intervention = args.condition, args.intervention
    if not condition and not intervention:
        raise ToolError("Give a condition, an intervention, or both.")
    _check_place(args)
    # The condition is checked inside the search (the SQL of the one condition model), before the limit, so a
    # page is a full page of trials about the condition.
    limit = min(args.limit, MAX_TRIALS)
    page_no = args.page
    offset = (page_no - 1) * limit
    page = ctx.backend.search_trials(args.filters(), limit=limit, offset=offset)
    matching = page.get("matching", page["total"])
    found = list(page["trials"])[:limit]
    compact = [compact_trial(t, ctx.today) for t in found]
    strategy = args.strategy
    with ctx.lock:
        new = 0
        for trial, full in zip(compact, found, strict=True):
            known = ctx.session.candidates.get(trial["nct_id"])
            if known is None:
                new += 1
                # our copy's last update stays with the candidate (not in the model's compact view) for the card
                ctx.session.candidates[trial["nct_id"]] = dict(trial, strategies=[strategy],
                                                               last_update_date=full.get("last_update_date"))
            elif strategy not in known["strategies"]:
                known["strategies"].append(strategy)
        total_candidates = len(ctx.session.candidates)
        entry: dict[str, Any] = {
            "strategy": strategy, "condition": condition, "intervention": intervention,
            "radius_miles": args.radius_miles if args.given("latitude") else None,
            "phases": list(args.phases or []), "total_matching": matching,
            "returned": len(compact),
            "new": new, "without_criteria_text": sum(1 for t in compact if t.get("criteria_text") == CRITERIA_MISSING),
        }
        last = ctx.session.searches[-1] if ctx.session.searches else None
        same = ("strategy", "condition", "intervention", "radius_miles", "phases")
        if page_no > 1 and last is not None and all(last.get(k) == entry[k] for k in same):
            for k in ("returned", "new", "without_criteria_text"):  # a further page of the same search
                last[k] = int(last.get(k) or 0) + int(entry[k])
        else:
            ctx.session.searches.append(entry)
    result: dict[str, Any] = {
        "strategy": strategy,
        "total_matching": matching,
        "returned": len(compact),
        "page": page_no,
        "more_pages": offset + len(compact) < page["total"],
        "new_this_session": new,
        "unique_candidates_so_far": total_candidates,
        "trials": compact,
    }
    if matching != page["total"]:  # the relevance gate left weak matches out
        result["past_relevance_gate"] = page["total"]
    return result


def get_trial_details(args: a.TrialId, ctx: ToolContext) -> dict[str, Any]:
    nct_id = _nct_arg(args.nct_id)
    details = _found(nct_id, ctx.backend.get_trial_details(nct_id))
    out: dict[str, Any] = dict(details)
    out["title"] = truncate(details.get("title"), MAX_TITLE)
    out["official_title"] = truncate(details.get("official_title"), 300)
    out["summary"] = truncate(details.get("summary"), 2000)
    _capped(out, "interventions", list(details.get("interventions") or []), MAX_INTERVENTIONS)
    out["arms"] = [
        {k: (truncate(v, 300) if isinstance(v, str) else v) for k, v in arm.items()}
        for arm in list(details.get("arms") or [])[:6]
    ]
    out["primary_outcomes"] = [truncate(o, 200) for o in list(details.get("primary_outcomes") or [])[:5]]
    out["collaborators"] = list(details.get("collaborators") or [])[:5]
    contacts = list(details.get("contacts") or [])
    if contacts:  # central contacts come first, so they are among those kept
        _capped(out, "contacts", contacts, MAX_CONTACTS, lambda c: {k: truncate(v, 200) for k, v in c.items()})
    out["url"] = ctgov_url(nct_id)
    return out


def get_eligibility_criteria(args: a.TrialId, ctx: ToolContext) -> dict[str, Any]:
    nct_id = _nct_arg(args.nct_id)
    info = _found(nct_id, ctx.backend.get_eligibility_criteria(nct_id))
    lacks = set(info.get("not_in_this_copy") or ())  # our copy lacks these: say so, never "no limit"
    out: dict[str, Any] = {
        "nct_id": nct_id,
        "ages": match_check.ages_shown(info),
        "sex": match_check.sex_shown(info),
        "healthy_volunteers": NOT_IN_COPY if info.get("healthy_volunteers") is None and "healthy_volunteers" in lacks
        else info.get("healthy_volunteers"),
    }
    for kind, lines in (("inclusion", info.get("inclusion") or []), ("exclusion", info.get("exclusion") or [])):
        # more_<kind> is said, so the model does not judge a list it has not seen whole
        _capped(out, kind, lines, MAX_CRITERIA_LINES, lambda c: truncate(c, 500))
    if not out["inclusion"] and not out["exclusion"]:
        text = (info.get("criteria_text") or "").strip()
        if text:
            out["criteria_text"] = truncate(text, 6000)
        else:
            out["criteria_text"] = CRITERIA_MISSING
            out["note"] = CRITERIA_MISSING_NOTE
    out.update({k: info[k] for k in ("not_in_this_copy", "copy_note", "criteria_source") if info.get(k)})  # type: ignore[literal-required]
    return out


def get_trial_locations(args: a.SitesQuery, ctx: ToolContext) -> dict[str, Any]:
    nct_id = _nct_arg(args.nct_id)
    if args.given("latitude") != args.given("longitude"):
        raise ToolError("Give latitude and longitude together, or neither.")
    origin = None
    if args.latitude is not None and args.longitude is not None:
        origin = (args.latitude, args.longitude)
    profile = ctx.session.patient_profile
    if origin is None and {"latitude", "longitude"} <= profile.keys():
        origin = (profile["latitude"], profile["longitude"])
    sites = _found(nct_id, ctx.backend.get_trial_locations(nct_id, origin))
    return {
        "nct_id": nct_id,
        "total_sites": len(sites),
        "measured_from": list(origin) if origin else None,
        "sites": nearest_sites(sites, min(args.limit, MAX_SITES)),
    }


def get_adverse_events(args: a.TrialId, ctx: ToolContext) -> dict[str, Any]:
    nct_id = _nct_arg(args.nct_id)
    report = _found(nct_id, ctx.backend.get_adverse_events(nct_id))
    if not report["has_results"]:
        return {"nct_id": nct_id, "has_results": False, "note": "This trial has not posted results."}

    def top(serious: bool) -> list[dict[str, Any]]:
        events = [e for e in report["events"] if bool(e.get("serious")) is serious]
        events.sort(key=lambda e: -(e.get("subjects_affected") or 0))
        rows = []
        for e in events[:10]:
            at_risk = e.get("subjects_at_risk") or 0
            affected = e.get("subjects_affected") or 0
            rows.append(
                {
                    "term": e.get("term"),
                    "organ_system": e.get("organ_system"),
                    "subjects_affected": affected,
                    "subjects_at_risk": at_risk,
                    "percent": round(100.0 * affected / at_risk, 1) if at_risk else None,
                }
            )
        return rows

    return {"nct_id": nct_id, "has_results": True, "serious": top(True), "other": top(False)}


def geocode_location(args: a.PlaceQuery, ctx: ToolContext) -> dict[str, Any]:
    place = ctx.backend.geocode_location(args.place)
    if place is None:
        raise ToolError(
            f"Could not find '{args.place}'. Ask for a city with its state or country, or a US ZIP code."
        )
    return dict(place)


def get_dashboard_stats(args: a.DashboardQuery, ctx: ToolContext) -> dict[str, Any]:
    _check_place(args)
    return dict(ctx.backend.get_dashboard_stats(args.filters(_place_name(ctx.session, args))))


def _place_name(session: AssistantSession, args: a.DashboardQuery) -> str | None:
    """The patient's place in words when the call's point is that place (the model may round coordinates)."""
    p = session.patient_profile
    if args.latitude is None or args.longitude is None or not {"latitude", "longitude"} <= p.keys():
        return None
    miles = geo.haversine_miles(args.latitude, args.longitude, float(p["latitude"]), float(p["longitude"]))
    return p.get("location") if miles <= SAME_PLACE_MILES else None


def search_facts(session: AssistantSession) -> dict[str, Any]:
    """What the session's searches really did: the travel limit, each search in order with its distance and counts,
    the trials found, how many of them lack criteria text in our copy, and how many were checked."""
    found = list(session.candidates.values())
    return {
        "radius_miles": _radius(session),
        "place": session.patient_profile.get("location"),
        "searches": [dict(s) for s in session.searches],
        "found": len(found),
        "without_criteria_text": sum(1 for t in found if t.get("criteria_text") == CRITERIA_MISSING),
        "checked": len(session.matched_trials),
    }


def _count_call(ctx: ToolContext, reply: Mapping[str, Any]) -> None:
    with ctx.lock:
        ctx.session.usage.add(count_usage(reply).as_dict(), calls=1)


def generate_report(args: a.ReportDraft, ctx: ToolContext) -> dict[str, Any]:
    session = ctx.session
    with ctx.lock:
        if not session.selected_nct_ids:
            raise ToolError(
                "The patient has not chosen any trials yet. Show the trial cards and wait for their choice."
            )
        # The report prints these texts as they are, so a trial they name must be one this session looked up.
        groups = args.question_groups or []
        texts = [args.summary, *args.questions_for_doctor,
                 *(t for g in args.glossary for t in (g.term, g.meaning)),
                 *(t for g in groups for t in (g.topic, *g.questions))]
        unknown = [i for i in cited_ids("\n".join(texts)) if i not in session.seen_nct_ids]
        if unknown:
            raise ToolError(f"The report text mentions {', '.join(unknown)}, which did not come from any search or "
                            "lookup in this session; look it up first or leave it out.")
        trials = []
        for nct_id in session.selected_nct_ids:
            match = session.matched(nct_id)
            if match is None:
                raise ToolError(
                    f"{nct_id} was selected but has no saved match; score it with save_matched_trials first."
                )
            trials.append(dict(match))
        profile = dict(session.patient_profile)
    # Questions by who can answer them: one short model call per role in Claude mode, rules in guided mode.
    if ctx.model is not None:
        ctx.status("Preparing questions for each of the people who can answer them (your specialist, radiology, "
                   "the lab, your family doctor, the trial team)…")
    team = careteam.build(profile, trials, client=ctx.model, model=session.settings.model,
                          on_reply=lambda reply: _count_call(ctx, reply))
    with ctx.lock:
        request = ReportRequest(
            session_id=session.id,
            patient_profile=dict(session.patient_profile),
            intake_answers=dict(session.intake_answers),
            trials=tuple(trials),
            summary=args.summary,
            questions_for_doctor=tuple(args.questions_for_doctor),
            glossary=tuple(g.model_dump() for g in args.glossary),
            question_groups=tuple((g.topic, tuple(g.questions)) for g in groups),
            search_facts=search_facts(session),
            care_team=team.as_report(),
        )
    output = ctx.backend.generate_report(request)
    with ctx.lock:
        session.report_html = output["html"]
        session.flags["report_complete"] = True
    ids = [t["nct_id"] for t in request.trials]
    ctx.emit({"type": "report_ready", "trials": ids})
    return {"report": "ready", "trials": ids, "characters": len(output["html"])}


# --------------------------------------------------------------------------------------------
# Session and UI tools.

def save_patient_profile(args: a.ProfileUpdate, ctx: ToolContext) -> dict[str, Any]:
    session = ctx.session
    fields = args.fields()
    if "activity_level" in fields and "ecog" not in fields:
        fields["ecog"] = ACTIVITY_LEVELS[fields["activity_level"]]
    with ctx.lock:
        session.patient_profile.update(fields)
        if session.phase == "intake":
            session.intake_answers.update(fields)
        missing = [k for k in REQUIRED_FOR_COMPLETE if k not in session.patient_profile]
        if args.complete:
            if missing:
                raise ToolError(
                    f"Saved, but the profile cannot be marked complete: still missing {', '.join(missing)}. "
                    "Ask the patient for these first."
                )
            session.flags["intake_complete"] = True
        return {
            "saved": sorted(fields),
            "complete": session.flags["intake_complete"],
            "still_missing": missing,
        }


def update_session_phase(args: a.PhaseChange, ctx: ToolContext) -> dict[str, Any]:
    session = ctx.session
    target = args.phase
    with ctx.lock:
        previous = session.phase
        if target == previous:
            return {"phase": target, "changed": False}
        blocker = _phase_blocker(session, target)
        if blocker:
            raise ToolError(f"Cannot move to {target} yet: {blocker}")
        if target == "matching":
            session.flags["search_complete"] = True
        elif target == "selection":
            session.flags["matching_complete"] = True
        session.phase = target
    ctx.emit({"type": "phase", "phase": target, "previous": previous})
    return {"phase": target, "previous": previous, "changed": True}


def _phase_blocker(session: AssistantSession, target: str) -> str | None:
    if (
        target in ("search", "matching", "selection", "report", "followup")
        and not session.flags["intake_complete"]
    ):
        return "the patient profile is not complete; save it with save_patient_profile(complete=true) first."
    if target == "matching" and not session.candidates:
        return "no trials have been found yet; run search_trials first."
    if target == "selection" and not session.matched_trials:
        return "no trials have been scored yet; save them with save_matched_trials first."
    if target == "report" and not session.selected_nct_ids:
        return "the patient has not chosen any trials. Show the trial cards and wait for their choice."
    if target == "followup" and session.report_html is None:
        return "there is no report yet; call generate_report first."
    return None


def _nearest_miles(match: Mapping[str, Any], candidate: Mapping[str, Any]) -> float | None:
    if isinstance(match.get("distance_miles"), int | float):
        return float(match["distance_miles"])
    site = candidate.get("nearest_site")
    miles = site.get("distance_miles") if isinstance(site, Mapping) else None
    return float(miles) if isinstance(miles, int | float) else None


def _radius(session: AssistantSession) -> float | None:
    radius = session.patient_profile.get("travel_radius_miles")
    return float(radius) if isinstance(radius, int | float) else None


def score_match(session: AssistantSession, match: dict[str, Any]) -> dict[str, Any]:
    """The match with the app's own fit score, band and explanation (from its criteria statuses and verdict), and
    its distance against the patient's travel limit and its status freshness (from the search result)."""
    candidate = session.candidates.get(match["nct_id"], {})
    missing = candidate.get("criteria_text") == CRITERIA_MISSING
    fit = fit_from_statuses([c["status"] for c in match["criteria"]], match["verdict"], criteria_missing=missing)
    miles = _nearest_miles(match, candidate)
    radius = _radius(session)
    scored = dict(match, fit_score=fit.score, fit_band=fit.band.value if fit.band else None,
                  fit_explanation=fit.explanation, distance_miles=miles, within_reach=within_reach(miles, radius),
                  distance_note=reach_note(miles, radius))
    if missing:
        scored["criteria_text"] = CRITERIA_MISSING
    if candidate.get("status_note"):
        scored["status_note"] = candidate["status_note"]
    return scored


def save_matched_trials(args: a.Matches, ctx: ToolContext) -> dict[str, Any]:
    session = ctx.session
    problems: list[str] = []
    checked: list[dict[str, Any]] = []
    with ctx.lock:
        for i, raw in enumerate(args.trials):
            match = raw.model_dump(exclude_unset=True)
            try:
                match["nct_id"] = _nct_arg(raw.nct_id)
            except ToolError as exc:
                problems.append(f"trials[{i}]: {exc}")
                continue
            nct_id = match["nct_id"]
            if nct_id not in session.seen_nct_ids:
                problems.append(
                    f"trials[{i}]: {nct_id} did not come from any search or lookup in this session."
                )
                continue
            # The cards and the report print the match's texts as they are, so an id they name must be one this
            # session looked up (or one the trial's own criteria, quoted in the match, name).
            quoted = set(cited_ids("\n".join(str(c.get("criterion") or "") for c in match["criteria"])))
            invented = [i for i in cited_ids(json.dumps(match, ensure_ascii=False))
                        if i not in session.seen_nct_ids and i not in quoted]
            if invented:
                problems.append(f"trials[{i}]: its texts mention {', '.join(invented)}, which did not come from any "
                                "search or lookup in this session; look them up first or leave them out.")
                continue
            info = ctx.backend.get_eligibility_criteria(nct_id)  # the trial's own lines, as rules read them
            missing = session.candidates.get(nct_id, {}).get("criteria_text") == CRITERIA_MISSING
            problem = (match_check.criteria_problem(match, info)
                       or match_check.verdict_problem(match, info, criteria_missing=missing))
            if problem:
                problems.append(f"trials[{i}]: {problem}")
                continue
            candidate = session.candidates.get(nct_id, {})
            match.setdefault("title", candidate.get("title"))
            match.setdefault("status", candidate.get("status"))
            match.setdefault("phases", candidate.get("phases", []))
            checked.append(score_match(session, match))
        if problems:
            raise ToolError("Nothing saved; fix these and send the whole list again: " + " | ".join(problems))
        by_id = {m["nct_id"]: m for m in session.matched_trials}
        by_id.update({m["nct_id"]: m for m in checked})
        session.matched_trials = sorted(by_id.values(), key=rank_key)
        ranking = [[m["nct_id"], m["fit_score"], m["verdict"], m.get("fit_band"), m.get("within_reach")]
                   for m in session.matched_trials]
    return {"saved": [m["nct_id"] for m in checked], "total_matched": len(ranking),
            "ranking_columns": ["nct_id", "fit_score", "verdict", "fit_band", "within_travel_limit"],
            "ranking": ranking,
            "note": "Fit scores are computed by the app from the criteria statuses; the ranking puts trials within "
                    "the patient's travel limit first within each verdict. Show the cards in this order."}


def trial_card(session: AssistantSession, nct_id: str) -> dict[str, Any] | None:
    """The card the page shows for one trial: from its saved match, else from search results."""
    match = session.matched(nct_id)
    candidate = session.candidates.get(nct_id)
    if match is None and candidate is None:
        return None
    saved = match or {}
    base = candidate or {}
    return {
        "nct_id": nct_id,
        "title": saved.get("title") or base.get("title"),
        "status": saved.get("status") or base.get("status"),
        "phases": saved.get("phases") or base.get("phases", []),
        "fit_score": saved.get("fit_score"),
        "verdict": saved.get("verdict"),
        "summary": saved.get("summary"),
        "nearest_site": saved.get("nearest_site") or base.get("nearest_site"),
        "url": ctgov_url(nct_id),
        "fit_band": saved.get("fit_band"),
        "fit_explanation": saved.get("fit_explanation"),
        "distance_note": saved.get("distance_note"),
        "within_reach": saved.get("within_reach"),
        "status_note": saved.get("status_note") or base.get("status_note"),
        "criteria_text": saved.get("criteria_text") or base.get("criteria_text"),
        "last_update_date": base.get("last_update_date"),
    }


def emit_trial_cards(args: a.Cards, ctx: ToolContext) -> dict[str, Any]:
    ids = [_nct_arg(i) for i in args.nct_ids]
    with ctx.lock:
        cards = [trial_card(ctx.session, i) for i in ids]
    unknown = [i for i, card in zip(ids, cards, strict=True) if card is None]
    if unknown:
        raise ToolError(f"No search result or saved match for {', '.join(unknown)}.")
    selectable = args.selectable
    ctx.emit({"type": "trial_cards", "selectable": selectable, "trials": cards})
    return {"shown": ids, "selectable": selectable}


def emit_widget(args: a.Widget, ctx: ToolContext) -> dict[str, Any]:
    options = list(ACTIVITY_LEVELS) if args.field == "activity_level" else list(args.options or [])
    if len(options) < 2:
        raise ToolError("A widget needs at least two options.")
    if len(set(options)) != len(options):
        raise ToolError("Widget options must be different from each other.")
    with ctx.lock:
        widget_id = f"w{len(ctx.session.widgets) + 1}"
        widget = {
            "widget_id": widget_id,
            "field": args.field,
            "question": args.question,
            "widget_type": args.widget_type,
            "options": options,
            "allow_other": args.allow_other,
        }
        ctx.session.widgets[widget_id] = widget
    ctx.emit({"type": "widget", **widget})
    return {
        "widget_id": widget_id,
        "shown": True,
        "note": "Wait for the patient's answer before asking anything else.",
    }


def emit_status(args: a.StatusMessage, ctx: ToolContext) -> dict[str, Any]:
    ctx.status(args.message)
    return {"shown": True}


def emit_partial_filters(args: a.FilterChange, ctx: ToolContext) -> dict[str, Any]:
    changed = args.model_dump(exclude_unset=True)
    if not changed:
        raise ToolError("Pass at least one filter value.")
    with ctx.lock:
        ctx.session.filters.update(changed)
        filters = dict(ctx.session.filters)
    ctx.emit({"type": "filters", "filters": filters})
    return {"filters": filters}
