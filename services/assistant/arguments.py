"""The arguments of the assistant's tools as typed models: pydantic checks a call, and the model's JSON
schema is what the tool declares to Claude, so the two cannot drift. Guided mode builds the same models."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, WithJsonSchema
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue, SkipJsonSchema

from services.assistant.session import CONVERSATION_PHASES
from services.dashboard.filters import MAX_RADIUS_MILES, Filters
from services.data import geo
from services.data.normalize import PHASES, STUDY_STATUSES
from services.eligibility.patient import Sex
from services.eligibility.scoring import Verdict
from services.trials import DEFAULT_STATUSES, MAX_TRIALS

MAX_SEARCH_PAGES = 20  # pages of one search a caller may ask for (20 × 15 trials)
MAX_SITES = 10
# ECOG performance status in words a patient recognises; the widget for activity level uses exactly these.
ACTIVITY_LEVELS: dict[str, int] = {
    "Fully active, no limits on what I can do": 0,
    "I can't do hard physical work, but I can do light work or housework": 1,
    "I look after myself but can't work; I'm up and about more than half the day": 2,
    "I can only partly look after myself; in a bed or chair more than half the day": 3,
    "I need help with all self-care and am mostly in a bed or chair": 4,
}
TRIAL_TYPES = ("drug", "biological", "device", "procedure", "radiation", "behavioral", "other")
CRITERION_STATUSES = ("met", "not_met", "needs_discussion", "not_enough_information")
INTAKE_FIELDS = (
    "diagnosis", "stage", "subtype", "biomarkers", "treatments", "age", "sex", "location",
    "travel_radius", "activity_level", "trial_types", "phases", "preferences", "other",
)  # fmt: skip
VERDICTS = tuple(v.value for v in Verdict)
STRATEGIES = ("exact", "broader", "intervention", "wider_radius", "phase", "other")
SEX_CODES = {"female": "FEMALE", "male": "MALE"}  # the patient's Sex as the registry (and Filters) spell it


def allowed(values: Sequence[str]) -> AfterValidator:
    """A check that a text is one of values, with a message naming them."""
    choices = tuple(values)

    def check(value: str) -> str:
        if value not in choices:
            raise ValueError(f"must be one of {', '.join(choices)}")
        return value

    return AfterValidator(check)


def enum(values: Sequence[str]) -> WithJsonSchema:
    """The schema the model reads for a text that must be one of values."""
    return WithJsonSchema({"type": "string", "enum": list(values)})


Text80 = Annotated[str, Field(max_length=80)]
Text100 = Annotated[str, Field(max_length=100)]
Text120 = Annotated[str, Field(max_length=120)]
Text150 = Annotated[str, Field(max_length=150)]
Text200 = Annotated[str, Field(max_length=200)]
Text300 = Annotated[str, Field(max_length=300)]
Text400 = Annotated[str, Field(max_length=400)]
Nct = Annotated[str, Field(max_length=20, description="ClinicalTrials.gov id, e.g. NCT01234567")]
Latitude = Annotated[float, Field(ge=-90, le=90)]
Longitude = Annotated[float, Field(ge=-180, le=180)]
Phase = Annotated[str, allowed(PHASES), enum(PHASES)]
Phases = Annotated[list[Phase], Field(max_length=6)]
Statuses = Annotated[list[Annotated[str, allowed(STUDY_STATUSES), enum(STUDY_STATUSES)]], Field(max_length=9)]
Age = Annotated[int, Field(ge=0, le=120)]
ActivityLevel = Annotated[str, allowed(ACTIVITY_LEVELS), enum(list(ACTIVITY_LEVELS))]
TrialType = Annotated[str, allowed(TRIAL_TYPES), enum(TRIAL_TYPES)]
Radius = Annotated[float, Field(ge=1, le=MAX_RADIUS_MILES)]


class ToolSchema(GenerateJsonSchema):
    """The JSON schema the model reads, a sixth shorter: no per-field titles (the property names say them) and
    no `default: null` (a field left out is simply not given)."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def default_schema(self, schema: Any) -> JsonSchemaValue:
        out = super().default_schema(schema)
        if out.get("default", 0) is None:
            out.pop("default")
        return out


class Arguments(BaseModel):
    """One tool call's arguments: JSON types exactly (no '5' for 5), finite numbers, no unknown fields.
    A field left out is None (SkipJsonSchema keeps null out of the schema the model reads)."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, frozen=True)

    @classmethod
    def tool_schema(cls) -> dict[str, Any]:
        """The model's JSON schema as the tool declares it (ToolSchema)."""
        return cls.model_json_schema(schema_generator=ToolSchema)

    def given(self, name: str) -> bool:
        """Whether the call set this field."""
        return getattr(self, name) is not None


class DashboardQuery(Arguments):
    """The filters of a search or a stats request (the dashboard's Filters, with the place as coordinates)."""

    condition: Text200 | SkipJsonSchema[None] = None
    intervention: Text200 | SkipJsonSchema[None] = None
    latitude: Latitude | SkipJsonSchema[None] = None
    longitude: Longitude | SkipJsonSchema[None] = None
    radius_miles: Radius | SkipJsonSchema[None] = None
    phases: Phases | SkipJsonSchema[None] = None
    statuses: Statuses | SkipJsonSchema[None] = None
    age: Age | SkipJsonSchema[None] = None
    sex: Sex | SkipJsonSchema[None] = None
    country: Text100 | SkipJsonSchema[None] = None

    def filters(self, place_name: str | None = None) -> Filters:
        """The dashboard's Filters this call asks for: the coordinates as a typed place (named place_name
        when they are the patient's), no radius meaning any distance; unless told, recruiting and not yet
        recruiting trials."""
        values: dict[str, Any] = {
            "condition": self.condition or None, "intervention": self.intervention or None,
            "status": tuple(self.statuses or DEFAULT_STATUSES), "phase": tuple(self.phases or ()),
            "country": (geo.aact_country_name(self.country) or self.country.strip(),) if self.country else (),
            "age": float(self.age) if self.age is not None else None,
            "sex": SEX_CODES[self.sex] if self.sex else None,
        }
        if self.latitude is None or self.longitude is None:
            return Filters(**values)
        radius = self.radius_miles if self.radius_miles is not None else MAX_RADIUS_MILES
        return Filters.at(self.latitude, self.longitude, place_name, radius=radius, unit="mi", **values)


class SearchQuery(DashboardQuery):
    """A search_trials call."""

    strategy: Annotated[str, allowed(STRATEGIES), enum(STRATEGIES), Field(
        description="Which search strategy this call is (for the summary and deduplication).")]
    limit: Annotated[int, Field(ge=1, le=MAX_TRIALS)] = MAX_TRIALS
    page: Annotated[int, Field(ge=1, le=MAX_SEARCH_PAGES, description="1 = the first results; 2 = the next "
                               "ones (same limit), and so on.")] = 1


class TrialId(Arguments):
    """One trial."""

    nct_id: Nct


class SitesQuery(TrialId):
    """A trial's sites, measured from a point (default: the patient's place)."""

    latitude: Latitude | SkipJsonSchema[None] = None
    longitude: Longitude | SkipJsonSchema[None] = None
    limit: Annotated[int, Field(ge=1, le=MAX_SITES)] = MAX_SITES


class PlaceQuery(Arguments):
    """A place to geocode."""

    place: Text200


class ProfileUpdate(Arguments):
    """What the interview learned about the patient (merged into the saved profile)."""

    diagnosis: Text200 | SkipJsonSchema[None] = None
    stage: Text100 | SkipJsonSchema[None] = None
    subtype: Text150 | SkipJsonSchema[None] = None
    biomarkers: Annotated[list[Text120], Field(max_length=25)] | SkipJsonSchema[None] = None
    treatments: Annotated[list[Text200], Field(max_length=25)] | SkipJsonSchema[None] = None
    age: Age | SkipJsonSchema[None] = None
    sex: Sex | SkipJsonSchema[None] = None
    location: Text200 | SkipJsonSchema[None] = None
    latitude: Latitude | SkipJsonSchema[None] = None
    longitude: Longitude | SkipJsonSchema[None] = None
    travel_radius_miles: Radius | None = None
    activity_level: ActivityLevel | SkipJsonSchema[None] = None
    ecog: Annotated[int, Field(ge=0, le=4)] | SkipJsonSchema[None] = None
    preferred_phases: Phases | SkipJsonSchema[None] = None
    trial_types: Annotated[list[TrialType], Field(max_length=7)] | SkipJsonSchema[None] = None
    other_conditions: Annotated[list[Text150], Field(max_length=20)] | SkipJsonSchema[None] = None
    notes: Annotated[str, Field(max_length=1500)] | SkipJsonSchema[None] = None
    complete: bool | SkipJsonSchema[None] = None

    def fields(self) -> dict[str, Any]:
        """The profile fields the call set (travel_radius_miles may be set to null: no travel limit)."""
        return self.model_dump(exclude={"complete"}, exclude_unset=True)


class PhaseChange(Arguments):
    """A move to another conversation phase."""

    phase: Annotated[str, allowed(CONVERSATION_PHASES), enum(CONVERSATION_PHASES)]
    reason: Text300 | SkipJsonSchema[None] = None


class Criterion(Arguments):
    """One criterion of a trial as judged for the patient."""

    type: Literal["inclusion", "exclusion"]
    criterion: Annotated[str, Field(max_length=600)]
    status: Annotated[str, allowed(CRITERION_STATUSES), enum(CRITERION_STATUSES)]
    plain: Text400
    reason: Text400 | SkipJsonSchema[None] = None


class Unknown(Arguments):
    """Something still unknown about the patient for a trial: a record to find, a question or a test."""

    kind: Literal["record", "question", "test"]
    text: Text300
    topic: Annotated[str, Field(max_length=80, description="For questions: the topic it is grouped under.")] \
        | SkipJsonSchema[None] = None


class Match(Arguments):
    """One trial's assessment for the patient (the app adds the fit score, band and distance note)."""

    nct_id: Nct
    fit_score: Annotated[int, Field(ge=0, le=100, description="Ignored: the app computes the fit score from "
                                    "the criteria statuses.")] | SkipJsonSchema[None] = None
    verdict: Annotated[str, allowed(VERDICTS), enum(VERDICTS)]
    summary: Annotated[str, Field(max_length=700)]
    criteria: Annotated[list[Criterion], Field(max_length=60)]
    unknowns: Annotated[list[Unknown], Field(max_length=20)]
    what_to_expect: Annotated[str, Field(max_length=900)] | SkipJsonSchema[None] = None
    nearest_site: Text300 | SkipJsonSchema[None] = None
    distance_miles: Annotated[float, Field(ge=0, description="Miles to the nearest site (default: from the "
                                           "search result).")] | None = None
    # Set by guided mode from the trial's MeSH relevance (services.matching.form.ranking_fields); not in the
    # model's schema. Only the order of the list reads them.
    partial: SkipJsonSchema[bool | None] = None
    broad: SkipJsonSchema[bool | None] = None
    about_diagnosis: SkipJsonSchema[bool | None] = None
    conditions_matched: SkipJsonSchema[Annotated[int, Field(ge=0, le=50)] | None] = None
    closeness: SkipJsonSchema[Annotated[int, Field(ge=0, le=3)] | None] = None
    abroad: SkipJsonSchema[bool | None] = None


class Matches(Arguments):
    """save_matched_trials: one assessment per trial."""

    trials: Annotated[list[Match], Field(min_length=1, max_length=30)]


class QuestionGroup(Arguments):
    """Questions under one topic (reports made before the app grouped them by who can answer)."""

    topic: Text80
    questions: Annotated[list[Text300], Field(min_length=1, max_length=15)]


class GlossaryEntry(Arguments):
    """A term of the report and its meaning in plain words."""

    term: Text80
    meaning: Text300


class ReportDraft(Arguments):
    """generate_report: the texts the report prints around the selected trials."""

    summary: Annotated[str, Field(max_length=2000)]
    questions_for_doctor: Annotated[list[Text300], Field(min_length=1, max_length=15)]
    question_groups: Annotated[list[QuestionGroup], Field(max_length=10, description=(
        "Leave out: read only from reports made before the app grouped the questions by who can answer them "
        "(it now does that itself)."))] | SkipJsonSchema[None] = None
    glossary: Annotated[list[GlossaryEntry], Field(max_length=30)]


class Widget(Arguments):
    """A set of choices for one intake question."""

    field: Annotated[str, allowed(INTAKE_FIELDS), enum(INTAKE_FIELDS)]
    question: Text300
    widget_type: Literal["single_select", "multi_select"]
    options: Annotated[list[Text120], Field(max_length=12)] | SkipJsonSchema[None] = None
    allow_other: bool = False


class Cards(Arguments):
    """Trial cards to show."""

    nct_ids: Annotated[list[Nct], Field(min_length=1, max_length=20)]
    selectable: bool = True


class StatusMessage(Arguments):
    """A short progress message."""

    message: Text200


class FilterChange(Arguments):
    """Dashboard filters the patient's answers set (the dashboard's own URL names)."""

    condition: Text200 | SkipJsonSchema[None] = None
    intervention: Text200 | SkipJsonSchema[None] = None
    age: Age | SkipJsonSchema[None] = None
    sex: Sex | SkipJsonSchema[None] = None
    near: Text200 | SkipJsonSchema[None] = None
    radius: Radius | SkipJsonSchema[None] = None
    radius_unit: Literal["mi", "km"] | SkipJsonSchema[None] = None
    phase: Phases | SkipJsonSchema[None] = None
    status: Statuses | SkipJsonSchema[None] = None
