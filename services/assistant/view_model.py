"""Shaping for the Assistant page: phase steps, cards, the site map, usage, filter changes (no Streamlit here)."""

from __future__ import annotations

import base64
import hashlib
import html
import itertools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
import pydeck as pdk

from services import inert, limits
from services.assistant.backend import DatabaseBackend
from services.assistant.handlers import trial_card
from services.assistant.session import CONVERSATION_PHASES, AssistantSession
from services.assistant.trimming import message_size, policy_for
from services.dashboard import mapdeck, sitemap
from services.dashboard.filters import Filters
from services.data import geo
from services.data.normalize import label
from services.eligibility.scoring import FitBand, Verdict
from services.limits import ConcurrencyGate
from services.llm import LLMClient
from services.trials import CRITERIA_MISSING, TrialBackend, ctgov_url, miles_words, plural, site_status_note

PHASE_TITLES: dict[str, str] = {
    "intake": "About you", "search": "Search", "matching": "Check eligibility", "selection": "Choose trials",
    "report": "Report", "followup": "Follow-up",
}
_VERDICT_COLOURS = {Verdict.ELIGIBLE: "#1a7f37", Verdict.UNCERTAIN: "#9a6700", Verdict.EXCLUDED: "#cf222e",
                    Verdict.NOT_RELEVANT: "#6e7781"}
# The card's words for a verdict are the report's (Verdict.display), so the two cannot drift apart.
VERDICT_TEXT: dict[str, tuple[str, str]] = {v.value: (v.display, colour) for v, colour in _VERDICT_COLOURS.items()}
BAND_TEXT: dict[str, str] = {band.value: band.display for band in FitBand}
CRITERIA_NOTE = ("The eligibility criteria text is missing from this app's copy of the registry; only the age and sex "
                 "limits were checked. The full list is on ClinicalTrials.gov.")
CHARS_PER_TOKEN = 4  # a rough size of a token in English text, for the context estimate only
MAP_SITE_CAP = 3_000
_FILTER_KEYS = ("condition", "intervention", "age", "sex", "near", "radius", "radius_unit", "phase", "status")


@dataclass(frozen=True)
class PhaseStep:
    """One step of the six-step indicator."""

    number: int
    phase: str
    title: str
    state: str  # "done" | "current" | "todo"


def phase_steps(session: AssistantSession) -> list[PhaseStep]:
    """The six phases with done / current / to-do states (a phase is done once the conversation moved past it)."""
    current = CONVERSATION_PHASES.index(session.phase)
    return [PhaseStep(i + 1, phase, PHASE_TITLES[phase],
                      "current" if i == current else "done" if i < current else "todo")
            for i, phase in enumerate(CONVERSATION_PHASES)]


def phase_html(steps: Sequence[PhaseStep]) -> str:
    """The indicator as a row of numbered pills (inline styles, safe text)."""
    colours = {"done": ("#dafbe1", "#1a7f37"), "current": ("#0969da", "#ffffff"), "todo": ("#f6f8fa", "#57606a")}
    pills = []
    for step in steps:
        bg, fg = colours[step.state]
        mark = "✓ " if step.state == "done" else f"{step.number}. "
        weight = 700 if step.state == "current" else 500
        pills.append(f'<span style="background:{bg};color:{fg};border-radius:14px;padding:4px 11px;margin:2px 4px 2px 0;'
                     f'display:inline-block;font-size:0.9rem;font-weight:{weight};border:1px solid #d0d7de">'
                     f"{mark}{html.escape(step.title)}</span>")
    return '<div class="phase-steps" aria-label="Assistant progress">' + "".join(pills) + "</div>"


def filter_changes(values: Mapping[str, Any]) -> dict[str, Any]:
    """Dashboard filter fields (for ui_state.update_filters) from the assistant's filter values."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        if key not in _FILTER_KEYS or value in (None, "", [], ()):
            continue
        if key in ("condition", "intervention", "near"):
            out[key] = " ".join(str(value).split())[:200]
        elif key in ("age", "radius"):
            out[key] = float(value)
        elif key == "sex":
            out["sex"] = str(value).upper() if str(value).upper() in ("FEMALE", "MALE") else None
        elif key == "radius_unit":
            out["unit"] = "km" if value == "km" else "mi"
        elif key in ("phase", "status"):
            out[key] = tuple(value)
    return out


def dashboard_seed(f: Filters) -> dict[str, Any]:
    """What the dashboard filters can tell the assistant about the patient (for session.seed_from_dashboard)."""
    seed: dict[str, Any] = {"condition": f.condition, "age": int(f.age) if f.age is not None else None,
                            "sex": f.sex.lower() if f.sex else None,  # the assistant's spelling
                            "near": f.near}
    if f.near:
        seed["radius"] = f.radius
        seed["radius_unit"] = f.unit
    return {k: v for k, v in seed.items() if v not in (None, "")}


def form_defaults(session: AssistantSession, f: Filters) -> dict[str, Any]:
    """Starting values for the guided intake form: the saved profile, else the dashboard seed or filters."""
    p = session.patient_profile
    seeded = {k.removeprefix("dashboard_"): v for k, v in session.intake_answers.items() if k.startswith("dashboard_")}
    sex = p.get("sex") or (str(seeded.get("sex") or f.sex or "").lower() or None)
    if "travel_radius_miles" in p:  # the patient's own answer, in miles
        radius = p["travel_radius_miles"]
    elif "radius" in seeded or f.near:  # the dashboard's radius, in its unit; the form asks in whole miles
        radius = float(seeded["radius"] if "radius" in seeded else f.radius)
        if (seeded.get("radius_unit", "mi") if "radius" in seeded else f.unit) == "km":
            radius /= geo.KM_PER_MILE
        radius = max(1.0, float(round(radius)))
    else:
        radius = 100.0
    return {
        "diagnosis": p.get("diagnosis") or seeded.get("condition") or f.condition or "",
        "stage": p.get("stage", ""),
        "subtype": p.get("subtype", ""),
        "biomarkers": ", ".join(p.get("biomarkers") or []),
        "treatments": ", ".join(p.get("treatments") or []),
        "age": p.get("age", seeded.get("age", int(f.age) if f.age is not None else None)),
        "sex": sex if sex in ("female", "male") else None,
        "location": p.get("location") or seeded.get("near") or f.near or "",
        "travel_radius_miles": float(radius) if radius is not None else None,
        "activity_level": p.get("activity_level"),
        "trial_types": list(p.get("trial_types") or []),
        "preferred_phases": list(p.get("preferred_phases") or []),
        "interventions_of_interest": session.intake_answers.get("interventions_of_interest", ""),
        "other_conditions": ", ".join(p.get("other_conditions") or []),
        "notes": p.get("notes", ""),
    }


def display_log(session: AssistantSession) -> list[tuple[str, str]]:
    """The visible conversation with one bubble per speaker turn (a turn's texts around tool calls joined)."""
    return [(role, "\n\n".join(entry.text for entry in turn))
            for role, turn in itertools.groupby(session.chat_log(), key=lambda entry: entry.role)]


def compact_number(n: int) -> str:
    """1234 → "1.2k", 2500000 → "2.5M" (for narrow metrics)."""
    for size, suffix in ((1_000_000, "M"), (1_000, "k")):
        if n >= size:
            return f"{n / size:.1f}".rstrip("0").rstrip(".") + suffix
    return str(n)


def open_widget(session: AssistantSession) -> dict[str, Any] | None:
    """The newest choice widget that has no answer yet (the one the page shows), if any."""
    waiting = [w for w in session.widgets.values() if "answer" not in w]
    return waiting[-1] if waiting else None


def cards_to_show(session: AssistantSession, events: Iterable[Mapping[str, Any]] = ()) -> tuple[list[dict[str, Any]], bool]:
    """The trial cards for the page and whether they can be ticked: the newest trial_cards event of this turn,
    else every scored trial while the patient is choosing (so cards come back after a reload or a restart)."""
    latest = [e for e in events if e.get("type") == "trial_cards"]
    if latest:
        event = latest[-1]
        return [dict(c) for c in event["trials"]], bool(event.get("selectable", True))
    if session.matched_trials and session.phase in ("matching", "selection"):
        cards = [trial_card(session, m["nct_id"]) for m in session.matched_trials]
        return [c for c in cards if c is not None], True
    return [], False


def card_view(card: Mapping[str, Any]) -> dict[str, Any]:
    """Display strings for one trial card."""
    verdict = card.get("verdict")
    words, colour = VERDICT_TEXT.get(str(verdict), ("Not assessed yet", "#6e7781"))
    phases = card.get("phases") or []
    nearest = card.get("nearest_site")
    if isinstance(nearest, Mapping):
        place = ", ".join(str(nearest.get(k)) for k in ("facility", "city", "state") if nearest.get(k))
        miles = nearest.get("distance_miles")
        closed = site_status_note(nearest)
        nearest = place + (f" — {miles_words(miles)} away" if isinstance(miles, int | float) else "") + (
            f"; {closed}" if closed else "")
    return {
        "nct_id": card["nct_id"],
        "title": card.get("title") or card["nct_id"],
        "url": card.get("url") or ctgov_url(card["nct_id"]),
        "fit": card.get("fit_score"),
        "verdict": words,
        "colour": colour,
        "status": label("status", card.get("status")) if card.get("status") else "",
        "status_code": card.get("status"),
        "last_update": card.get("last_update_date"),
        "phases": ("No drug phase" if list(phases) == ["NA"] else ", ".join(label("phase", p) for p in phases))
        if phases else "No phase given",
        "summary": card.get("summary") or "",
        "nearest": nearest or "",
        "band": BAND_TEXT.get(str(card.get("fit_band")), ""),
        "fit_explanation": card.get("fit_explanation") or "",
        "status_note": card.get("status_note") or "",
        "distance_note": card.get("distance_note") or "",
        "criteria_note": CRITERIA_NOTE if card.get("criteria_text") == CRITERIA_MISSING else "",
    }


def card_link(card: Mapping[str, Any]) -> str:
    """The card's title as Markdown: literal text, linked to the trial on ClinicalTrials.gov (never elsewhere)."""
    nct = str(card.get("nct_id") or "")
    title = str(card.get("title") or nct)
    try:
        return inert.ctgov_link(nct, title)
    except ValueError:
        return inert.md_line(title)


def badge_html(text: str, colour: str) -> str:
    """A small coloured label."""
    return (f'<span style="background:{colour};color:#fff;border-radius:10px;padding:2px 9px;font-size:0.8rem;'
            f'font-weight:600">{html.escape(text)}</span>')


def site_points(backend: TrialBackend, nct_ids: Sequence[str],
                origin: tuple[float, float] | None) -> pd.DataFrame:
    """Located sites of the given trials as map points (lat, lon, colour, tooltip lines), nearest first."""
    rows: list[dict[str, Any]] = []
    for nct_id in nct_ids:
        for site in backend.get_trial_locations(nct_id, origin) or []:
            lat, lon = site.get("latitude"), site.get("longitude")
            if lat is None or lon is None:
                continue
            miles = site.get("distance_miles")
            rows.append({
                "lat": float(lat), "lon": float(lon), "nct_id": nct_id,
                "color": [*sitemap.status_colour(site.get("status") or "RECRUITING"), 220], "weight": 1,
                "t_title": nct_id,
                "t_sub": ", ".join(x for x in (site.get("facility"), site.get("city"), site.get("state")) if x),
                "t_l1": site.get("country") or "",
                "t_l2": f"{miles_words(miles)} away" if isinstance(miles, int | float) else "",
                "distance": miles if isinstance(miles, int | float) else float("inf"),
            })
    frame = pd.DataFrame(rows, columns=["lat", "lon", "nct_id", "color", "weight", "t_title", "t_sub", "t_l1", "t_l2",
                                        "distance"])
    return frame.sort_values("distance", kind="stable").head(MAP_SITE_CAP).reset_index(drop=True)


def cards_deck(points: pd.DataFrame, origin: tuple[float, float] | None, radius_miles: float | None,
               place_name: str = "You") -> pdk.Deck:
    """A small offline map: shipped outlines, the trials' sites, the patient's place and travel radius."""
    layers: list[pdk.Layer] = mapdeck.outline_layers(states=True)
    if origin is not None and radius_miles:
        layers.append(mapdeck.ring_layer(origin[0], origin[1], float(radius_miles)))
    if len(points):
        layers.append(mapdeck.site_layer(points, aggregated=False))
    if origin is not None:
        layers.extend(mapdeck.pin_layers(place_name, origin[0], origin[1], float(radius_miles or 0)))
    return mapdeck.offline_deck(layers, cards_view(points, origin, radius_miles))


def cards_view(points: pd.DataFrame, origin: tuple[float, float] | None, radius_miles: float | None) -> pdk.ViewState:
    """A view holding the patient's place with its travel ring and each trial's nearest site."""
    if origin is None:
        return mapdeck.view_for_points(points)
    ring = float(radius_miles or 50.0)
    south, north, west, east = geo.bounding_box(origin[0], origin[1], ring)
    frame = pd.DataFrame({"lat": [south, north, origin[0], origin[0]], "lon": [origin[1], origin[1], west, east]})
    if len(points):
        nearest = points.sort_values("distance", kind="stable").groupby("nct_id", sort=False).head(1)
        frame = pd.concat([frame, nearest[["lat", "lon"]]], ignore_index=True)
    lo_lat, hi_lat = float(frame["lat"].min()), float(frame["lat"].max())
    lo_lon, hi_lon = float(frame["lon"].min()), float(frame["lon"].max())
    span = max(hi_lon - lo_lon, (hi_lat - lo_lat) * 1.6, 0.05) * 1.15  # a margin so edge points stay inside
    zoom = max(0.6, min(11.0, math.log2(360 / span) + 0.4))
    return pdk.ViewState(latitude=(lo_lat + hi_lat) / 2, longitude=(lo_lon + hi_lon) / 2, zoom=zoom, pitch=0, bearing=0)


@dataclass(frozen=True)
class Usage:
    """Token counts and the size of the conversation the next model call would send."""

    model_calls: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    context_tokens: int
    trim_at_tokens: int
    trimming: bool


def usage(session: AssistantSession) -> Usage:
    """Running totals plus an estimate of the history's size against the trimming threshold."""
    chars = sum(message_size(m) for m in session.messages)
    policy = policy_for(session.phase, session.flags["intake_complete"])
    u = session.usage
    return Usage(u.model_calls, u.input_tokens, u.output_tokens, u.cache_read_input_tokens,
                 chars // CHARS_PER_TOKEN, policy.max_chars // CHARS_PER_TOKEN, session.settings.trimming)


def profile_lines(session: AssistantSession) -> list[str]:
    """The saved profile in plain lines for the side panel."""
    p = session.patient_profile
    lines = []
    for key, title in (("diagnosis", "Diagnosis"), ("stage", "Stage"), ("subtype", "Subtype"), ("age", "Age"),
                       ("sex", "Sex"), ("location", "Place"), ("travel_radius_miles", "Travel up to"),
                       ("ecog", "ECOG"), ("biomarkers", "Biomarkers"), ("treatments", "Treatments"),
                       ("preferred_phases", "Preferred phases")):
        value = p.get(key)
        if value in (None, "", []):
            continue
        if isinstance(value, list):
            value = ", ".join(label("phase", v) if key == "preferred_phases" else str(v) for v in value)
        elif key == "travel_radius_miles" and isinstance(value, int | float):
            value = plural(round(value), "mile")  # whole miles, as the cards and the report say it
        lines.append(f"{title}: {value:g}" if isinstance(value, float) else f"{title}: {value}")
    return lines


class GatedModel:
    """A model client whose calls each hold a slot of the process-wide concurrency gate (services.limits)."""

    def __init__(self, llm: Any, gate: ConcurrencyGate) -> None:
        self.llm = llm
        self.gate = gate

    def create(self, **params: Any) -> dict[str, Any]:
        """One non-streaming call inside a gate slot."""
        with self.gate.slot():
            return self.llm.create(**params)

    def stream(self, *, on_text: Callable[[str], None] | None = None, **params: Any) -> dict[str, Any]:
        """One streaming call inside a gate slot."""
        with self.gate.slot():
            return self.llm.stream(on_text=on_text, **params)


def gated_model() -> GatedModel:
    """The Messages API client, each call holding a slot of the process-wide model gate (AssistantUnavailable
    without an API key)."""
    return GatedModel(LLMClient(), limits.model_gate())


def backend() -> DatabaseBackend:
    """The database backend of the assistant's tools (a call carries the patient's place as coordinates: a
    backend remembers nothing between calls, so any one serves every session)."""
    return DatabaseBackend()


def report_digest(report_html: str) -> str:
    """A short fingerprint of a report, so a PDF made from it is offered only while the report is unchanged."""
    return hashlib.sha256(report_html.encode()).hexdigest()[:12]


def report_frame_url(report_html: str) -> str:
    """The report as a data: URL for an iframe: its own opaque origin, so nothing in it can reach the app's page."""
    return "data:text/html;charset=utf-8;base64," + base64.b64encode(report_html.encode("utf-8")).decode("ascii")


def contact_drafts(session: AssistantSession) -> list[dict[str, Any]]:
    """For each trial in the report: whom to write to and a draft message (the report's own words; nothing is sent)."""
    from services import report

    matches = [m for i in session.selected_nct_ids if (m := session.matched(i)) is not None]
    inputs = report.trial_inputs(backend(), session.patient_profile, matches, adverse_events=False)
    out = []
    for match in matches:
        nct_id = str(match["nct_id"]).upper()
        view = report.contact_view(session.patient_profile, match, inputs["trial_details"].get(nct_id),
                                   inputs["nearest_sites"].get(nct_id))
        out.append({"nct_id": nct_id, "title": str(match.get("title") or nct_id), **view})
    return out
