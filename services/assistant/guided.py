"""Guided mode: the assistant's six phases driven by a form, fixed search strategies and rule-based eligibility.

Used when no API key is configured. It calls the same tools as the model with their typed arguments
(services.assistant.arguments, through ToolRegistry.call: no JSON on the way), so the same deduplication by
NCT id, condition check, phase rules and report apply, and scores criteria with services.eligibility (rules
+ scoring) instead of a model. Nothing here imports Streamlit.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, get_args

from services.assistant import arguments as a
from services.assistant import careteam
from services.assistant.arguments import ACTIVITY_LEVELS, MAX_SEARCH_PAGES, TRIAL_TYPES
from services.assistant.careteam import FULL_CRITERIA
from services.assistant.handlers import search_facts, truncate
from services.assistant.registry import ToolContext, ToolError
from services.assistant.session import AssistantSession
from services.assistant.tools import build_registry
from services.dashboard.filters import MAX_RADIUS_MILES
from services.data.normalize import PHASES, label
from services.data.provenance import FIELDS, NOT_IN_COPY, copy_note
from services.eligibility import driver_check
from services.eligibility.labels import Label
from services.eligibility.match import criterion_status, structured_criteria
from services.eligibility.parser import CriterionKind
from services.eligibility.patient import LabValue, PatientProfile, Sex
from services.eligibility.plain import plain_criterion
from services.eligibility.qualifier_check import check, patient_polarities
from services.eligibility.rules import evaluate
from services.eligibility.scoring import CriterionResult, gap_checklist, trial_verdict
from services.errors import BadInput
from services.matching.form import broader_names, form_conditions, ranking_fields, trial_relevance
from services.matching.relevance import Relevance
from services.trials import (
    CRITERIA_MISSING,
    DEFAULT_STATUSES,
    MAX_TRIALS,
    TrialBackend,
    miles_words,
    plural,
    search_sentence,
    site_status_note,
    status_code,
    within_words,
)

GUIDED_LABEL = "Guided mode (no API key)"
MAX_MATCHED = 20  # trials checked criterion by criterion (the cards show at most 20)
SEXES: tuple[str, ...] = get_args(Sex)
_MAX_LIST_ITEMS = 25
MAX_BROADER = 16  # broader headings searched, nearest level first, up to the top of the category
MAX_OTHER = 5  # other conditions searched
MAX_CRITERIA = 60  # criteria saved per match (services.assistant.arguments.Match)
_ENROLLING = (*DEFAULT_STATUSES, "ENROLLING_BY_INVITATION")  # statuses whose enrollment count is still a plan

StatusCallback = Callable[[str], None]


@dataclass(frozen=True)
class IntakeForm:
    """Every intake answer of the guided form (lists are already split into items)."""

    diagnosis: str
    stage: str = ""
    subtype: str = ""
    biomarkers: tuple[str, ...] = ()
    treatments: tuple[str, ...] = ()
    age: int | None = None
    sex: str | None = None
    location: str = ""
    travel_radius_miles: float | None = 100.0
    activity_level: str | None = None
    trial_types: tuple[str, ...] = ()
    preferred_phases: tuple[str, ...] = ()
    interventions_of_interest: str = ""
    other_conditions: tuple[str, ...] = ()
    notes: str = ""

    def problems(self) -> list[str]:
        """What must be fixed before the form can be used, one sentence each (empty when it is fine)."""
        out: list[str] = []
        if not self.diagnosis.strip():
            out.append("Please enter the diagnosis (the condition you are looking for trials for).")
        if len(self.diagnosis) > 200:
            out.append("The diagnosis is too long (at most 200 characters).")
        if self.age is None or not 0 <= self.age <= 120:
            out.append("Please enter an age between 0 and 120.")
        if self.sex not in SEXES:
            out.append("Please choose female or male (trials often limit who can join by sex).")
        if not self.location.strip():
            out.append("Please enter where you live: a city with its state or country, or a US ZIP code.")
        if self.travel_radius_miles is not None and not 1 <= self.travel_radius_miles <= MAX_RADIUS_MILES:
            out.append("The travel distance must be between 1 and 12,500 miles.")
        if self.activity_level is not None and self.activity_level not in ACTIVITY_LEVELS:
            out.append("Please choose one of the offered activity levels.")
        bad_types = [t for t in self.trial_types if t not in TRIAL_TYPES]
        if bad_types:
            out.append(f"Unknown kinds of treatment: {', '.join(bad_types)}.")
        bad_phases = [p for p in self.preferred_phases if p not in PHASES]
        if bad_phases:
            out.append(f"Unknown trial phases: {', '.join(bad_phases)}.")
        for name in ("biomarkers", "treatments", "other_conditions"):
            items = getattr(self, name)
            if len(items) > _MAX_LIST_ITEMS or any(len(i) > 150 for i in items):
                out.append(f"Too many or too long entries under {name.replace('_', ' ')} "
                           f"(at most {_MAX_LIST_ITEMS}, 150 characters each).")
        if len(self.stage) > 100 or len(self.subtype) > 150 or len(self.location) > 200:
            out.append("The stage, subtype or place is too long.")
        if len(self.interventions_of_interest) > 200 or len(self.notes) > 1500:
            out.append("The treatment of interest or the notes are too long.")
        return out

    def profile_fields(self) -> dict[str, Any]:
        """The answers as ProfileUpdate fields (without coordinates)."""
        fields: dict[str, Any] = {"diagnosis": self.diagnosis.strip(), "age": self.age, "sex": self.sex,
                                  "location": self.location.strip(), "travel_radius_miles": self.travel_radius_miles}
        for name in ("stage", "subtype", "notes"):
            if getattr(self, name).strip():
                fields[name] = getattr(self, name).strip()
        if self.activity_level:
            fields["activity_level"] = self.activity_level
        for name in ("biomarkers", "treatments", "other_conditions", "trial_types", "preferred_phases"):
            if getattr(self, name):
                fields[name] = list(getattr(self, name))
        return fields


def split_items(text: str | None) -> tuple[str, ...]:
    """A comma, semicolon or line separated answer as its items (blank ones dropped, repeats removed)."""
    items = [" ".join(part.split()) for part in re.split(r"[,;\n]", text or "")]
    return tuple(dict.fromkeys(i for i in items if i))


@dataclass
class StepResult:
    """What one guided step did: the assistant's message, UI events (same kinds as the model's) and statuses."""

    text: str
    events: list[dict[str, Any]] = field(default_factory=list)
    statuses: list[str] = field(default_factory=list)


class GuidedError(BadInput):
    """A guided step could not be done; the message says why in words for the patient."""


def _phase_words(phases: Sequence[str]) -> str:
    if not phases:
        return "No phase given"
    if list(phases) == ["NA"]:
        return "No drug phase (for example a device, behaviour or care study)"
    return " and ".join(label("phase", p) for p in phases)


def capped(criteria: list[dict[str, Any]], most: int) -> list[dict[str, Any]]:
    """At most `most` criteria in their order, every one not met among them (the verdict rests on those)."""
    keep = sorted(range(len(criteria)), key=lambda i: (criteria[i]["status"] != "not_met", i))[:most]
    return [criteria[i] for i in sorted(keep)]


def check_order(candidate: Mapping[str, Any], radius: float | None,
                judged: tuple[Relevance, Relevance] | None = None) -> tuple[int, ...]:
    """Sort key of a search hit for matching, from its MeSH relevance (judged: to all of the patient's
    conditions, to the diagnosis alone; None when the record is missing): about one of the patient's
    conditions first; then a located site within reach; about the diagnosis before only another condition; a
    full record about the disease before a broad or partial one; criteria text in our copy before none; then
    the nearest."""
    site = candidate.get("nearest_site") or {}
    miles = site.get("distance_miles")
    near = miles is not None and (radius is None or miles <= radius)
    every, own = judged if judged is not None else (None, None)
    relevant = every is None or every.relevant
    about = every is not None and not every.broad and every.matched > 0
    return (int(not relevant), int(not near), int(own is not None and not own.relevant), int(not about),
            int(candidate.get("criteria_text") == CRITERIA_MISSING), int(miles is None),
            round(float(miles)) if miles is not None else 1 << 30)


class GuidedAssistant:
    """Runs the guided phases for one session through the same tools the model uses."""

    def __init__(self, backend: TrialBackend, *, on_status: StatusCallback | None = None,
                 labs: Callable[[str], Sequence[LabValue]] | None = None) -> None:
        self.backend = backend
        self.registry = build_registry()
        self.on_status = on_status
        self.labs = labs  # session token -> the latest uploaded lab values (services/assistant/records.py)

    # ------------------------------------------------------------------ tool plumbing

    def _call(self, session: AssistantSession, name: str, args: a.Arguments,
              step: StepResult) -> dict[str, Any]:
        """One tool on its typed arguments; what the model would read as an error becomes a GuidedError."""
        ctx = ToolContext(session, self.backend)
        try:
            result = self.registry.call(name, args, ctx)
        except ToolError as exc:
            raise GuidedError(str(exc)) from exc
        finally:
            while not ctx.statuses.empty():
                self._status(step, ctx.statuses.get())
        step.events.extend(ctx.events)
        return result

    def _status(self, step: StepResult, message: str) -> None:
        step.statuses.append(message)
        if self.on_status is not None:
            self.on_status(message)

    @staticmethod
    def _say(session: AssistantSession, user_text: str, answer: str) -> None:
        """Add the step to the conversation as a user line and the assistant's answer (roles keep alternating)."""
        session.add_user([{"type": "text", "text": user_text}])
        session.messages.append({"role": "assistant", "content": [{"type": "text", "text": answer}]})
        session.touch()

    @staticmethod
    def start_over(session: AssistantSession) -> None:
        """Forget the profile, searches, matches, selection and report (the conversation text stays)."""
        session.patient_profile = {}
        session.intake_answers = {k: v for k, v in session.intake_answers.items() if k.startswith("dashboard_")}
        session.candidates = {}
        session.searches = []
        session.matched_trials = []
        session.selected_nct_ids = []
        session.report_html = None
        session.flags = dict.fromkeys(session.flags, False)
        session.phase = "intake"
        session.touch()

    # ------------------------------------------------------------------ phases

    def submit_intake(self, session: AssistantSession, form: IntakeForm) -> StepResult:
        """Check and save the intake answers, find the place, update the dashboard filters, move to search."""
        problems = form.problems()
        if problems:
            raise GuidedError(" ".join(problems))
        step = StepResult("")
        place = self.backend.geocode_location(form.location.strip())
        if place is None:
            raise GuidedError(f"Could not find the place “{form.location.strip()}”. Type a city with its state or "
                              "country (for example “Houston, TX”), or a US ZIP code.")
        self._status(step, place.get("note") or f"Using {place['name']}.")
        fields = form.profile_fields()
        fields.update({"latitude": place["latitude"], "longitude": place["longitude"], "complete": True})
        self.start_over(session)
        self._call(session, "save_patient_profile", a.ProfileUpdate(**fields), step)
        if place.get("country"):  # a trial of unknown distance running only in other countries ranks as far
            session.intake_answers["place_country"] = str(place["country"])
        wanted = form.interventions_of_interest.strip()
        if wanted:
            session.intake_answers["interventions_of_interest"] = wanted
        else:
            session.intake_answers.pop("interventions_of_interest", None)
        filters: dict[str, Any] = {"condition": form.diagnosis.strip(), "age": form.age, "sex": form.sex,
                                   "near": form.location.strip()}
        if form.travel_radius_miles is not None:
            filters.update({"radius": form.travel_radius_miles, "radius_unit": "mi"})
        if form.preferred_phases:
            filters["phase"] = list(form.preferred_phases)
        self._call(session, "emit_partial_filters", a.FilterChange(**filters), step)
        self._phase(session, "search", "guided intake form saved", step)
        distance = (f"{within_words(form.travel_radius_miles)} of" if form.travel_radius_miles is not None
                    else "at any distance from")
        step.text = (f"Thank you. I saved your answers: {form.diagnosis.strip()}, age {form.age}, {form.sex}, "
                     f"{distance} {place['name']}. Next I will search the trial database.")
        self._say(session, "Here are my answers to the intake form.", step.text)
        return step

    def _phase(self, session: AssistantSession, phase: str, reason: str, step: StepResult) -> None:
        self._call(session, "update_session_phase", a.PhaseChange(phase=phase, reason=reason), step)

    def strategies(self, session: AssistantSession) -> list[a.SearchQuery]:
        """The search calls for this patient, in order: exact (the diagnosis's MeSH headings and narrower
        ones), broader (every heading above them, a level at a time up to the top of the category), the other
        conditions, intervention (any distance, nearest first), phase (the search at any distance is added
        while running)."""
        p = session.patient_profile
        base: dict[str, Any] = {"latitude": p["latitude"], "longitude": p["longitude"], "age": p["age"],
                                "sex": p["sex"], "statuses": list(DEFAULT_STATUSES), "limit": MAX_TRIALS}
        radius = p.get("travel_radius_miles")
        near = dict(base, radius_miles=radius) if radius else dict(base)
        diagnosis = p["diagnosis"]
        conditions = form_conditions(diagnosis, p.get("other_conditions") or ())
        calls = [a.SearchQuery(strategy="exact", condition=diagnosis, **near)]
        # Up the MeSH tree, a level at a time (every parent heading, by name), never a word cut from the text.
        calls += [a.SearchQuery(strategy="broader", condition=name, **near)
                  for name in broader_names(conditions.diagnosis.headings)[:MAX_BROADER]]
        # The patient's other conditions are searched too: a trial for two of them ranks first.
        calls += [a.SearchQuery(strategy="other", condition=text, **near)
                  for text, headings in conditions.others[:MAX_OTHER] if headings]
        wanted = session.intake_answers.get("interventions_of_interest")
        if wanted:
            calls.append(a.SearchQuery(strategy="intervention", condition=diagnosis, intervention=wanted,
                                       **base))
        if p.get("preferred_phases"):
            phases = list(p["preferred_phases"])
            calls.append(a.SearchQuery(strategy="phase", condition=diagnosis, phases=phases, **near))
        return calls

    def run_search(self, session: AssistantSession) -> StepResult:
        """Run the search strategies (deduplicated by the tool), then every open trial for the diagnosis at any distance."""
        if not session.flags["intake_complete"]:
            raise GuidedError("Please fill in the intake form first.")
        step = StepResult("")
        session.phase = "search"
        calls = self.strategies(session)
        done: list[str] = []
        first_more = False
        for i, call in enumerate(calls, start=1):
            strategy = call.strategy.replace("_", " ")
            self._status(step, f"Search {i} of {len(calls)}: {strategy} ({call.condition or ''}"
                               f"{' + ' + call.intervention if call.intervention else ''})")
            result = self._call(session, "search_trials", call, step)
            first_more = first_more or (i == 1 and result["more_pages"])
            returned, new = result["returned"], result["new_this_session"]
            # within the travel limit, every page: a trial filed under a broad heading may be the 30th nearest
            while (call.radius_miles is not None and result["more_pages"]
                   and result["page"] < MAX_SEARCH_PAGES):
                call = call.model_copy(update={"page": result["page"] + 1})
                result = self._call(session, "search_trials", call, step)
                returned, new = returned + result["returned"], new + result["new_this_session"]
            done.append(f"{strategy} ({within_words(call.radius_miles)}): {plural(returned, 'trial')} ({new} "
                        "new)")
        # Every open trial for the diagnosis that admits the patient, at any distance, nearest first: the search
        # checks the condition before it limits, so page after page this is the whole list.
        radius = session.patient_profile.get("travel_radius_miles")
        anywhere = calls[0].model_dump(exclude_unset=True, exclude={"radius_miles", "strategy"})
        strategy, page, more = ("wider_radius", 1, True) if radius else ("exact", 2, first_more)
        found_far = new_far = 0
        if more:
            self._status(step, "Searching every open trial for your condition, at any distance.")
        while more and page <= MAX_SEARCH_PAGES:
            further = a.SearchQuery(strategy=strategy, page=page, **anywhere)
            result = self._call(session, "search_trials", further, step)
            found_far += result["returned"]
            new_far += result["new_this_session"]
            more, page = result["more_pages"], page + 1
        if found_far:
            done.append(f"{strategy.replace('_', ' ')} (at any distance): {plural(found_far, 'trial')} ({new_far} new)")
        found = len(session.candidates)
        lines = "\n".join(f"- {d}" for d in done)
        if not found:
            step.text = ("I could not find open trials for this condition in our copy of the registry, even without a "
                         f"distance limit. What I tried:\n{lines}\n\nYou can change the diagnosis wording or the "
                         "preferences in the form and search again.")
            self._say(session, "Please search for trials.", step.text)
            return step
        self._phase(session, "matching", "guided search done", step)
        first = list(session.candidates.values())[:3]
        named = "; ".join(f"{t['nct_id']} ({truncate(t.get('title') or '', 70)})" for t in first)
        missing = sum(1 for t in session.candidates.values() if t.get("criteria_text") == CRITERIA_MISSING)
        with_text = found - missing
        its = "its" if missing == 1 else "their"
        unchecked = (f"only {its} age and sex limits can be checked here ({its} full criteria are on "
                     f"ClinicalTrials.gov), so {'it stays' if missing == 1 else 'they stay'} in the “needs information” "
                     "band.")
        if not missing:
            coverage = (("It carries its" if found == 1 else f"All {found} carry their")
                        + " eligibility criteria text in our copy of the registry.")
        elif missing == found:
            coverage = (("It has no" if found == 1 else f"None of the {found} have")
                        + f" eligibility criteria text in our copy of the registry: {unchecked}")
        else:
            coverage = (f"{with_text} of the {found} {'carries its' if with_text == 1 else 'carry their'} eligibility "
                        "criteria text in our copy of the registry; for the other "
                        f"{'one' if missing == 1 else missing} {unchecked}")
        step.text = (f"I found {plural(found, 'different trial')} (duplicates across searches removed). What I tried:\n"
                     f"{lines}\n\n{coverage}\n\nThe first {'is' if found == 1 else 'ones are'} {named}. Next I will "
                     "check each one's eligibility criteria "
                     "against your answers.")
        self._say(session, "Please search for trials.", step.text)
        return step

    def run_matching(self, session: AssistantSession) -> StepResult:
        """Judge every criterion of the first MAX_MATCHED candidates with the rules, save the matches,
        show the cards."""
        if not session.candidates:
            raise GuidedError("There are no trials to check yet; run the search first.")
        step = StepResult("")
        session.phase = "matching"
        patient = self.patient(session)
        # Which trials to check first: about one of the patient's conditions by the trial's own MeSH headings
        # (services.matching.relevance), within reach, about the diagnosis, full records, nearest first.
        radius = session.patient_profile.get("travel_radius_miles")
        p = session.patient_profile
        every = form_conditions(p.get("diagnosis", ""), p.get("other_conditions") or ())
        own = form_conditions(p.get("diagnosis", ""))
        records = self.backend.get_matching_records(list(session.candidates))
        judged = {i: (trial_relevance(every, r), trial_relevance(own, r)) for i, r in records.items()}
        ordered = sorted(session.candidates,
                         key=lambda i: check_order(session.candidates[i], radius, judged.get(i)))
        ids = ordered[:MAX_MATCHED]
        matches = []
        for i, nct_id in enumerate(ids, start=1):
            self._status(step, f"Checking trial {i} of {len(ids)}: {nct_id}")
            matches.append(self._assess(session, nct_id, patient, step))
        self._call(session, "save_matched_trials", a.Matches(trials=matches), step)
        ranked = [m["nct_id"] for m in session.matched_trials]
        self._call(session, "emit_trial_cards", a.Cards(nct_ids=ranked[:20], selectable=True), step)
        self._phase(session, "selection", "guided matching done", step)
        counts = Counter(m["verdict"] for m in session.matched_trials)
        best = session.matched_trials[0]
        far = sum(1 for m in session.matched_trials if m.get("within_reach") is False)
        missing = sum(1 for m in session.matched_trials if m.get("criteria_text") == CRITERIA_MISSING)
        score = f"fit {best['fit_score']}/100" if best.get("fit_score") is not None else "no fit score"
        said = [plural(counts[v], one, many) for v, one, many in (
            ("eligible", "looks possible", "look possible"), ("uncertain", "needs more information", "need more information"),
            ("excluded", "seems to rule you out", "seem to rule you out"),
            ("not_relevant", "is about another condition", "are about another condition"))]
        step.text = (f"I checked {plural(len(matches), 'trial')} against their published criteria with fixed rules: "
                     f"{', '.join(said)}. "
                     + (f"{'It' if len(matches) == 1 else f'{missing} of them'} {'has' if missing == 1 else 'have'} "
                        f"no criteria text in our copy, so only {'its' if missing == 1 else 'their'} age and sex limits "
                        "were checked. " if missing else "")
                     + (f"{'It' if len(matches) == 1 else far} {'has' if far == 1 else 'have'} no site within your "
                        "travel limit" + (f"; {'it is' if far == 1 else 'they are'} listed after the trials within "
                                          "reach that have the same reading" if far < len(matches) else "") + ". "
                        if far else "")
                     + f"First in the list is {best['nct_id']} ({score}). Tick the trials you want in your "
                     "report below. Your doctor and the trial team make the real decision.")
        self._say(session, "Please check which trials I might be eligible for.", step.text)
        return step

    def patient(self, session: AssistantSession) -> PatientProfile:
        """The rule evaluator's view of the saved profile, with the latest uploaded lab values."""
        labs = tuple(self.labs(session.id)) if self.labs is not None else ()
        return PatientProfile.from_answers(session.patient_profile, labs)

    def _assess(self, session: AssistantSession, nct_id: str, patient: PatientProfile,
                step: StepResult) -> a.Match:
        # The backend's record, not the tool's: the tool shortens long criteria for the model, the rules read all.
        self._call(session, "get_eligibility_criteria", a.TrialId(nct_id=nct_id), step)
        info = self.backend.get_eligibility_criteria(nct_id) or {}
        details = self._call(session, "get_trial_details", a.TrialId(nct_id=nct_id), step)
        sites = self._call(session, "get_trial_locations", a.SitesQuery(nct_id=nct_id, limit=1), step)
        results, criteria = self.judge(info, patient)
        # Relevance from the trial's own MeSH headings against every condition the patient named.
        p = session.patient_profile
        record = self.backend.get_matching_records([nct_id]).get(nct_id)
        conditions = form_conditions(p.get("diagnosis", ""), p.get("other_conditions") or ())
        judged = trial_relevance(conditions, record) if record is not None else None
        about_diagnosis = (record is not None and
                           trial_relevance(form_conditions(p.get("diagnosis", "")), record).relevant)
        verdict = trial_verdict(results, judged.relevant if judged is not None else True)
        missing_text = not (info.get("inclusion") or info.get("exclusion"))
        checklist = gap_checklist([r for r in results if r.text != FULL_CRITERIA])
        unknowns = ([{"kind": "record", "text": truncate(r, 300)} for r in checklist.records]
                    + [{"kind": "question", "text": truncate(q, 300), "topic": t}
                       for q, t in zip(checklist.questions, checklist.topics, strict=True)])
        if missing_text:
            unknowns.insert(0, {"kind": "question", "topic": "Taking part",
                                "text": f"What are the full eligibility criteria of {nct_id}, and do I meet them? "
                                        "(They are on ClinicalTrials.gov; our copy does not have them.)"})
        nearest = (sites.get("sites") or [None])[0]
        nearest_text = ""
        miles = None
        if nearest:
            place = ", ".join(x for x in (nearest.get("facility"), nearest.get("city"), nearest.get("state"),
                                          nearest.get("country")) if x)
            miles = nearest.get("distance_miles")
            closed = site_status_note(nearest)  # only when no located site of the trial may take participants
            nearest_text = truncate(place + (f" — {miles_words(miles)} away" if miles is not None else "")
                                    + (f"; {closed}" if closed else ""), 300) or ""
        effects = self._side_effects(session, nct_id, details, step)
        summary_bits = [f"{_phase_words(details.get('phases') or [])}; {label('status', details.get('status')).lower()}.",
                        *([judged.reason] if judged is not None else []), verdict.reason]
        gap = copy_note(info.get("not_in_this_copy") or details.get("not_in_this_copy") or ())
        if gap:
            summary_bits.insert(0, gap)
        if effects:
            summary_bits.append(effects)
        return a.Match.model_validate({
            "nct_id": nct_id,
            "distance_miles": miles,
            "verdict": verdict.verdict.value,
            "summary": truncate(" ".join(summary_bits), 700),
            "criteria": capped(criteria, MAX_CRITERIA),
            "unknowns": unknowns[:20],
            "what_to_expect": truncate(self._what_to_expect(details), 900),
            "nearest_site": nearest_text,
            **(ranking_fields(judged, about_diagnosis, record, session.intake_answers.get("place_country"), miles)
               if judged is not None and record is not None else {}),
        })

    @staticmethod
    def judge(info: Mapping[str, Any], patient: PatientProfile) -> tuple[list[CriterionResult], list[dict[str, Any]]]:
        """Rule judgements for a trial's structured limits and every listed criterion, as scoring results and as
        save_matched_trials criteria."""
        results: list[CriterionResult] = []
        criteria: list[dict[str, Any]] = []

        def add(kind: CriterionKind, text: str, result_label: Label, reason: str, plain: str | None = None) -> None:
            results.append(CriterionResult(kind, result_label, text, reason))
            criteria.append({"type": kind, "criterion": truncate(text, 600), "status": criterion_status(result_label, kind),
                             "plain": plain or plain_criterion(text, kind), "reason": truncate(reason, 400)})

        structured = structured_criteria(info.get("min_age"), info.get("max_age"), info.get("sex"))
        lacks = set(info.get("not_in_this_copy") or ())  # our copy lacks these: unknown, never "any"
        for what, prefix, any_text, any_reason, any_plain in (
                ("ages", "Age", "Any age", "The trial sets no age limit.", "There is no age limit."),
                ("sex", "Sex", "Sex: any", "The trial takes people of any sex.", "People of any sex can join.")):
            if any(c.text.startswith(prefix) for c in structured):
                continue
            if what in lacks:
                add("inclusion", f"{prefix} limits: {NOT_IN_COPY}", Label.NOT_ENOUGH_INFO,
                    f"Our copy of this trial does not have its {FIELDS[what]}; check them on ClinicalTrials.gov.",
                    f"Check the {FIELDS[what]} on ClinicalTrials.gov.")
            else:
                add("inclusion", any_text, Label.MET, any_reason, any_plain)
        for criterion in structured:
            judgement = evaluate(criterion.text, criterion.kind, patient)
            if "ages" in lacks and criterion.text.startswith("Age") and judgement.label is Label.MET:
                # Only the age group's edges are known (a CSV copy): inside them the trial's own limits may still
                # rule the patient out; outside them they surely do.
                add(criterion.kind, criterion.text, Label.NOT_ENOUGH_INFO, "Our copy has only the trial's age groups, "
                    f"not its exact {FIELDS['ages']}; check them on ClinicalTrials.gov.",
                    f"Check the exact {FIELDS['ages']} on ClinicalTrials.gov.")
                continue
            add(criterion.kind, criterion.text, judgement.label, judgement.reason)
        if info.get("healthy_volunteers") is True and patient.conditions:
            add("inclusion", "Accepts healthy volunteers", Label.NEEDS_DISCUSSION,
                "The trial also takes healthy volunteers; ask whether your condition makes you a patient or a volunteer here.",
                "The trial also takes healthy people.")
        listed = [("inclusion", c) for c in info.get("inclusion") or []] + [("exclusion", c) for c in info.get("exclusion") or []]
        if not listed:
            add("inclusion", FULL_CRITERIA, Label.NOT_ENOUGH_INFO,
                "Our copy of the registry does not have this trial's criteria text; read them on ClinicalTrials.gov.",
                "Check the full list of who can join on ClinicalTrials.gov.")
        said = [*patient.conditions, *patient.biomarkers]
        own = patient_polarities(said)
        mine = driver_check.patient_drivers(said, patient.conditions)
        variants = driver_check.patient_variants(said)
        for kind, text in listed:
            # the rules know "an EGFR mutation", not which ones a class word ("sensitising") covers
            classed = driver_check.variant_check(text, kind, variants)  # type: ignore[arg-type]
            if classed is not None:
                add(kind, text, classed.label, classed.reason)  # type: ignore[arg-type]
                continue
            judgement = evaluate(text, kind, patient)  # type: ignore[arg-type]
            stated = check(text, kind, own)  # type: ignore[arg-type]
            # A line is met only when every result it names is the patient's: "HR+/HER2-" read as met for its
            # HR+ part is not met for a HER2-positive patient.
            clash = (stated is not None and kind == "inclusion" and judgement.label is Label.MET
                     and stated.label is Label.NOT_MET)
            decided = (stated or driver_check.check(text, kind, mine)  # type: ignore[arg-type]
                       if clash or not judgement.label.is_known else None)
            if decided is not None:
                add(kind, text, decided.label, decided.reason)  # type: ignore[arg-type]
            else:
                add(kind, text, judgement.label, judgement.reason)  # type: ignore[arg-type]
        return results, criteria

    def _side_effects(self, session: AssistantSession, nct_id: str, details: Mapping[str, Any], step: StepResult) -> str:
        if not details.get("has_results"):
            return ""
        report = self._call(session, "get_adverse_events", a.TrialId(nct_id=nct_id), step)
        if not report.get("has_results"):
            return ""
        common = [e for e in (report.get("other") or []) + (report.get("serious") or []) if e.get("percent")]
        common.sort(key=lambda e: -(e["percent"] or 0))
        if not common:
            return ""
        listed = ", ".join(f"{str(e['term']).lower()} ({e['percent']:g}%)" for e in common[:3])
        return f"Side effects reported most often in its results: {listed}."

    @staticmethod
    def _what_to_expect(details: Mapping[str, Any]) -> str:
        parts = []
        phases = details.get("phases") or []
        if phases == ["NA"]:
            parts.append("This study has no drug phase (it tests something like a device, a programme or a way of care).")
        elif phases:
            parts.append(f"This is a {_phase_words(phases)} study.")
        arms = details.get("arms") or []
        if arms:
            names = "; ".join(a.get("title") or "" for a in arms[:3] if a.get("title"))
            parts.append(f"It has {len(arms)} group{'s' if len(arms) != 1 else ''} of participants"
                         f"{': ' + names if names else ''}.")
        count = details.get("enrollment")
        kind = str(details.get("enrollment_type") or "").upper()
        if count and kind == "ACTUAL":
            parts.append(f"It enrolled {count:,} people.")
        elif count and not kind and details.get("status") and status_code(details.get("status")) not in _ENROLLING:
            # no type given and no longer enrolling: the number may be the plan or the final count
            parts.append(f"The registry gives its enrollment as {count:,} people.")
        elif count:
            parts.append(f"It plans to include about {count:,} people.")
        outcomes = details.get("primary_outcomes") or []
        if outcomes:
            parts.append(f"Its main measure: {truncate(outcomes[0], 200)}.")
        return " ".join(parts) or "The registry record does not describe the visits or procedures."

    def select(self, session: AssistantSession, nct_ids: Sequence[str]) -> StepResult:
        """Record the trials the patient ticked and move to the report phase."""
        problem = session.choose(nct_ids)
        if problem:
            raise GuidedError(problem)
        ids = session.selected_nct_ids
        step = StepResult("")
        self._phase(session, "report", "patient selected trials", step)
        step.text = f"Thank you. Your report will cover {', '.join(ids)}. Press “Write my report” when you are ready."
        self._say(session, f"I have chosen these trials for my report: {', '.join(ids)}.", step.text)
        return step

    def make_report(self, session: AssistantSession) -> StepResult:
        """Write the report for the selected trials (summary, questions and glossary made by rules)."""
        if not session.selected_nct_ids:
            raise GuidedError("Please choose at least one trial first.")
        step = StepResult("")
        if session.phase not in ("report", "followup"):
            self._phase(session, "report", "report requested", step)
        self._status(step, "Writing your report…")
        selected = [m for i in session.selected_nct_ids if (m := session.matched(i)) is not None]
        # The report tool groups the questions by who can answer them (services.assistant.careteam); the flat list
        # is the same questions' wording, which the report does not repeat.
        draft = a.ReportDraft(summary=self.report_summary(session),
                              questions_for_doctor=self.questions(session.patient_profile, selected),
                              glossary=[a.GlossaryEntry(**g) for g in self.glossary(session, selected)])
        self._call(session, "generate_report", draft, step)
        if session.phase != "followup":
            self._phase(session, "followup", "report written", step)
        step.text = ("Your report is ready: it covers the trials you chose, how each one's criteria compare with your "
                     "answers, what is still unknown, and questions for your doctor. It is a starting point for a talk "
                     "with your doctor, not a decision.")
        self._say(session, "Please write my report.", step.text)
        return step

    @staticmethod
    def report_summary(session: AssistantSession) -> str:
        """The report's opening paragraph, from the saved profile and the search and matching counts."""
        p = session.patient_profile
        details = ", ".join(x for x in (p.get("stage"), p.get("subtype")) if x)
        checked = len(session.matched_trials)
        text = (f"You are {p.get('age')} years old, {p.get('sex')}, with {p.get('diagnosis')}"
                f"{' (' + details + ')' if details else ''}. {search_sentence(search_facts(session), detailed=False)} We checked "
                f"{checked} of them against their published criteria with fixed rules (guided mode, no AI), and you "
                f"chose {len(session.selected_nct_ids)} for this report.")
        return truncate(text, 2000) or ""

    @staticmethod
    def questions(profile: Mapping[str, Any], selected: Sequence[Mapping[str, Any]]) -> list[str]:
        """The care team's questions as one short list (their wording only, repeats removed, at most 15)."""
        texts = [q.text for g in careteam.build(profile, selected).groups for q in g.questions]
        return [truncate(t, 300) or "" for t in dict.fromkeys(texts)][:15]

    @staticmethod
    def glossary(session: AssistantSession, selected: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
        """Terms from GLOSSARY that the report's text uses, plus the basics every report needs."""
        text = json.dumps([session.patient_profile, list(selected)], ensure_ascii=False).lower()
        entries = [{"term": term, "meaning": meaning} for term, (pattern, meaning) in GLOSSARY.items()
                   if re.search(pattern, text)]
        return entries[:30]


# term -> (regular expression that finds it in the report's text, meaning in plain words); the empty pattern
# matches every text: those terms are explained in every report.
GLOSSARY: dict[str, tuple[str, str]] = {
    "Clinical trial": ("", "A research study that tests a medicine, device or way of care in people."),
    "NCT number": ("", "The trial's ID on ClinicalTrials.gov, NCT followed by eight digits."),
    "Inclusion criteria": ("", "The things that must be true about you to join a trial."),
    "Exclusion criteria": ("", "The things that would keep you out of a trial."),
    "Fit score": ("", "A 0–100 guide to how well a trial matches what you told us: 60 and above is a “good match so far” (at "
                      "least half of its criteria checked, none against you), 20–59 “needs information”, below 20 "
                      "“unlikely” (something rules you out)."),
    "Phase 1": (r"\bphase ?1\b", "An early study that tests safety and dose in a small group of people."),
    "Phase 2": (r"\bphase ?2\b", "A study that checks whether a treatment works and what its side effects are."),
    "Phase 3": (r"\bphase ?3\b", "A large study that compares a new treatment with the usual one."),
    "Phase 4": (r"\bphase ?4\b", "A study of a treatment that is already approved, to learn more about it."),
    "Placebo": (r"placebo", "A dummy treatment with no active medicine, used for comparison."),
    "Randomized": (r"randomi[sz]", "People are put into the study's groups by chance, like a coin toss."),
    "ECOG performance status": (r"\becog\b|performance status", "A 0–5 scale doctors use for how active you are day to day; 0 is fully active."),
    "Biomarker": (r"\b(biomarker|egfr|alk|her2|pd-l1|kras|brca)", "A measurable sign in blood or tissue, such as a gene change, that can guide treatment."),
    "Metastatic": (r"metasta", "Cancer that has spread from where it started to other parts of the body."),
    "Adenocarcinoma": (r"adenocarcinoma", "A cancer that starts in gland cells, such as those lining the lungs or bowel."),
    "Non-small cell lung cancer": (r"non-small|nsclc", "The most common kind of lung cancer (NSCLC)."),
    "Chemotherapy": (r"chemotherap", "Medicines that kill fast-growing cells such as cancer cells."),
    "Immunotherapy": (r"immunotherap|pd-1|pd-l1|checkpoint", "Treatment that helps your immune system fight a disease."),
    "Radiation therapy": (r"radiation|radiotherap", "Treatment with high-energy rays aimed at a tumour."),
    "HbA1c": (r"\b(hba1c|a1c)\b|glycated", "A blood test that shows your average blood sugar over the last 2–3 months."),
    "Type 2 diabetes": (r"type 2 diabetes|\bt2dm?\b", "A long-term condition in which the body does not use insulin well, so blood sugar runs high."),
    "Insulin": (r"insulin", "A hormone that lowers blood sugar; also given as a medicine."),
    "BMI": (r"\bbmi\b|body mass index", "Body mass index: weight compared with height, used to describe body size."),
    "eGFR": (r"\bgfr\b|kidney function|creatinine clearance", "A blood-test estimate of how well your kidneys filter."),
    "Informed consent": (r"consent", "Agreeing to join after the trial team has explained the study and its risks."),
    "Adverse event": (r"side effect|adverse", "Any unwanted medical event during a trial, whether or not the treatment caused it."),
    "Contraception": (r"contracept|birth control", "Ways to prevent pregnancy; many trials require it."),
    "Washout period": (r"washout", "A time without certain medicines before starting a trial."),
}
