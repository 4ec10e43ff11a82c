"""The assistant's per-conversation state, with an exact JSON round trip that refuses corrupt data."""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from services.assistant.problem import problems
from services.errors import BadInput
from services.llm import DEFAULT_MODEL
from services.trials import NCT_RE

CONVERSATION_PHASES: tuple[str, ...] = ("intake", "search", "matching", "selection", "report", "followup")
FLAGS: tuple[str, ...] = (
    "intake_complete",
    "search_complete",
    "matching_complete",
    "selection_complete",
    "report_complete",
)
DEFAULT_MAX_TOKENS = 8192
SCHEMA_VERSION = 1
NctId = Annotated[str, Field(pattern=r"^NCT\d{8}$")]


def new_session_id() -> str:
    """An unguessable session token: 32 random bytes (256 bits), URL-safe."""
    return secrets.token_urlsafe(32)


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass
class AssistantSettings:
    """Per-session model choice, output budget and history trimming switch."""

    model: str = DEFAULT_MODEL
    max_tokens: int = DEFAULT_MAX_TOKENS
    trimming: bool = True


@dataclass
class UsageCounters:
    """Running totals over the whole session."""

    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    def add(self, usage: Mapping[str, int], calls: int = 0) -> None:
        """Add one reply's token counts (and model calls) to the totals."""
        self.model_calls += calls
        for counter in fields(self)[1:]:  # the token counts, named as the API names them
            setattr(self, counter.name, getattr(self, counter.name) + int(usage.get(counter.name, 0)))


@dataclass(frozen=True)
class ChatEntry:
    """One line of the visible conversation (tool traffic left out)."""

    role: str
    text: str


@dataclass
class AssistantSession:
    """Everything one assistant conversation knows; messages are Anthropic content-block dicts."""

    id: str = field(default_factory=new_session_id)
    phase: str = "intake"
    flags: dict[str, bool] = field(default_factory=lambda: dict.fromkeys(FLAGS, False))
    intake_answers: dict[str, Any] = field(default_factory=dict)
    patient_profile: dict[str, Any] = field(default_factory=dict)
    filters: dict[str, Any] = field(default_factory=dict)
    messages: list[dict[str, Any]] = field(default_factory=list)
    candidates: dict[str, dict[str, Any]] = field(default_factory=dict)
    searches: list[dict[str, Any]] = field(default_factory=list)  # one entry per search_trials call, in order
    matched_trials: list[dict[str, Any]] = field(default_factory=list)
    selected_nct_ids: list[str] = field(default_factory=list)
    report_html: str | None = None
    seen_nct_ids: list[str] = field(default_factory=list)
    widgets: dict[str, dict[str, Any]] = field(default_factory=dict)
    settings: AssistantSettings = field(default_factory=AssistantSettings)
    usage: UsageCounters = field(default_factory=UsageCounters)
    created_at: datetime = field(default_factory=_now)
    updated_at: datetime = field(default_factory=_now)

    def touch(self) -> None:
        """Mark the session as changed now."""
        self.updated_at = _now()

    def note_seen(self, nct_ids: set[str] | list[str]) -> None:
        """Remember NCT ids that came back from a data tool (grounding checks look here)."""
        merged = set(self.seen_nct_ids) | {i for i in nct_ids if NCT_RE.fullmatch(i)}
        self.seen_nct_ids = sorted(merged)

    def matched(self, nct_id: str) -> dict[str, Any] | None:
        """The saved match for one trial, if any."""
        return next((t for t in self.matched_trials if t.get("nct_id") == nct_id), None)

    def choose(self, nct_ids: Sequence[str]) -> str | None:
        """Record the trials the patient ticked; when they cannot be used, why, in words for the patient."""
        ids = list(dict.fromkeys(i.strip().upper() for i in nct_ids))
        if not ids:
            return "Please tick at least one trial for your report."
        bad = [i for i in ids if not NCT_RE.fullmatch(i) or self.matched(i) is None]
        if bad:
            return f"These trials were not among the assessed trials: {', '.join(bad)}."
        self.selected_nct_ids = ids
        self.flags["selection_complete"] = True
        return None

    def add_user(self, blocks: list[dict[str, Any]]) -> None:
        """Add user content; joins the previous user message if the last turn ended without a reply
        (after an API failure or the step limit), so roles keep alternating and nothing is lost."""
        if self.messages and self.messages[-1]["role"] == "user":
            content = self.messages[-1]["content"]
            previous = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
            self.messages[-1] = {"role": "user", "content": previous + blocks}
        else:
            self.messages.append({"role": "user", "content": blocks})
        self.touch()

    def chat_log(self) -> list[ChatEntry]:
        """The visible conversation: user and assistant text, without tool calls and results."""
        entries: list[ChatEntry] = []
        for message in self.messages:
            content = message["content"]
            blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
            texts = [b["text"] for b in blocks if b.get("type") == "text" and b.get("text", "").strip()]
            if texts:
                entries.append(ChatEntry(message["role"], "\n\n".join(texts)))
        return entries

    def seed_from_dashboard(self, filters: Mapping[str, Any]) -> None:
        """Start the interview from the dashboard's filters (condition, age, sex, place, radius)."""
        keys = ("condition", "age", "sex", "near", "radius", "radius_unit")
        picked = {k: filters[k] for k in keys if filters.get(k) not in (None, "", [], ())}
        self.filters.update(picked)
        for key, value in picked.items():
            self.intake_answers.setdefault(f"dashboard_{key}", value)
        self.touch()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of the whole session (its fields as they are, shallow; the nested ones as plain data)."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data.update(version=SCHEMA_VERSION, flags=dict(self.flags), settings=asdict(self.settings),
                    usage=asdict(self.usage), created_at=self.created_at.isoformat(),
                    updated_at=self.updated_at.isoformat())
        return data

    def to_json(self) -> str:
        """Serialise to JSON; from_json(to_json()) gives back an equal session."""
        try:
            return json.dumps(self.to_dict(), sort_keys=True, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise BadInput(
                f"Assistant session {self.id[:8]}… holds a value JSON cannot store: {exc}"
            ) from exc

    @classmethod
    def from_json(cls, text: str | bytes) -> AssistantSession:
        """Rebuild a session from to_json() output; corrupt or foreign data raises BadInput saying where."""
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise BadInput(f"Assistant session data is not valid JSON: {exc}") from exc
        return cls.from_dict(data)

    @classmethod
    def from_dict(cls, data: Any) -> AssistantSession:
        """Rebuild a session from to_dict() output, checked by StoredSession (BadInput naming the field)."""
        if not isinstance(data, dict):
            raise BadInput("Assistant session data is corrupt: $ must be a JSON object.")
        try:
            stored = StoredSession.model_validate(data)
        except ValidationError as exc:
            raise BadInput(f"Assistant session data is corrupt: {'; '.join(problems(exc))}.") from exc
        # The checked structure, but the stored values themselves (the model's dicts as they were saved).
        kept = {f.name: data[f.name] for f in fields(cls) if f.name in data}
        kept.update(flags=stored.flags.model_dump(), searches=data.get("searches", []),
                    settings=AssistantSettings(**stored.settings.model_dump()),
                    usage=UsageCounters(**stored.usage.model_dump()),
                    created_at=stored.created_at, updated_at=stored.updated_at)
        return cls(**kept)


class _Stored(BaseModel):
    """A part of a stored session: exact JSON types, nothing unknown."""

    model_config = ConfigDict(extra="forbid", strict=True)


class _Block(BaseModel):
    """A content block of a stored message: any Anthropic block, as long as it says its type."""

    model_config = ConfigDict(extra="allow", strict=True)
    type: str


class _Message(BaseModel):
    """A stored message: its role and its text or blocks."""

    model_config = ConfigDict(extra="allow", strict=True)
    role: Literal["user", "assistant"]
    content: str | list[_Block]


class _Match(BaseModel):
    """A saved match: any fields, with the trial's NCT id."""

    model_config = ConfigDict(extra="allow", strict=True)
    nct_id: NctId


class _Settings(_Stored):
    model: Annotated[str, Field(min_length=1)]
    max_tokens: Annotated[int, Field(gt=0)]
    trimming: bool


_Counters = Annotated[int, Field(ge=0)]


class _Usage(_Stored):
    model_calls: _Counters
    input_tokens: _Counters
    output_tokens: _Counters
    cache_creation_input_tokens: _Counters
    cache_read_input_tokens: _Counters


class _Flags(_Stored):
    intake_complete: bool
    search_complete: bool
    matching_complete: bool
    selection_complete: bool
    report_complete: bool


def _aware(value: Any) -> datetime:
    """An ISO timestamp with its time zone (sessions store theirs in UTC)."""
    if not isinstance(value, str):
        raise ValueError("must be an ISO timestamp")
    try:
        stamp = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError("is not an ISO timestamp") from None
    if stamp.tzinfo is None:
        raise ValueError("must include a time zone")
    return stamp


def _phase(value: str) -> str:
    if value not in CONVERSATION_PHASES:
        raise ValueError(f"must be one of {', '.join(CONVERSATION_PHASES)}")
    return value


Stamp = Annotated[datetime, BeforeValidator(_aware)]


class StoredSession(_Stored):
    """The JSON a session is stored as (to_dict): every field's type checked, the model's own dicts left open.
    Sessions stored before the search log existed have no `searches`; they load with none."""

    model_config = ConfigDict(extra="forbid", strict=True)
    version: Literal[1]
    id: Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{43,}$")]
    phase: Annotated[str, AfterValidator(_phase)]
    flags: _Flags
    intake_answers: dict[str, Any]
    patient_profile: dict[str, Any]
    filters: dict[str, Any]
    messages: list[_Message]
    candidates: dict[NctId, dict[str, Any]]
    searches: list[dict[str, Any]] = []
    matched_trials: list[_Match]
    selected_nct_ids: list[NctId]
    report_html: str | None
    seen_nct_ids: list[NctId]
    widgets: dict[str, dict[str, Any]]
    settings: _Settings
    usage: _Usage
    created_at: Stamp
    updated_at: Stamp
