"""The assistant's per-conversation state, with an exact JSON round trip that refuses corrupt data."""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from typing import Any

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
_TOKEN_RE = re.compile(r"[A-Za-z0-9_-]{43,}")


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
        """Rebuild a session from to_dict() output, checking every field."""
        _require(isinstance(data, dict), "$", "must be a JSON object")
        expected = {"version"} | {f.name for f in fields(cls)}
        missing = sorted(expected - data.keys() - {"searches"})  # sessions saved before the search log lack it
        extra = sorted(data.keys() - expected)
        _require(not missing, "$", f"is missing {', '.join(missing)}")
        _require(not extra, "$", f"has unknown fields {', '.join(extra)}")
        _require(
            data["version"] == SCHEMA_VERSION,
            "$.version",
            f"must be {SCHEMA_VERSION}, got {data['version']!r}",
        )
        _require(
            isinstance(data["id"], str) and _TOKEN_RE.fullmatch(data["id"]) is not None,
            "$.id",
            "must be a URL-safe token of at least 43 characters",
        )
        _require(
            data["phase"] in CONVERSATION_PHASES, "$.phase", f"must be one of {', '.join(CONVERSATION_PHASES)}, got {data['phase']!r}"
        )
        flags = data["flags"]
        _require(
            isinstance(flags, dict) and set(flags) == set(FLAGS),
            "$.flags",
            f"must have exactly {', '.join(FLAGS)}",
        )
        for name, value in flags.items():
            _require(isinstance(value, bool), f"$.flags.{name}", "must be true or false")
        for name in ("intake_answers", "patient_profile", "filters", "candidates", "widgets"):
            _require(isinstance(data[name], dict), f"$.{name}", "must be an object")
        for nct_id, trial in data["candidates"].items():
            _require(NCT_RE.fullmatch(nct_id) is not None, f"$.candidates.{nct_id}", "key must be an NCT id")
            _require(isinstance(trial, dict), f"$.candidates.{nct_id}", "must be an object")
        for widget_id, widget in data["widgets"].items():
            _require(isinstance(widget, dict), f"$.widgets.{widget_id}", "must be an object")
        _check_messages(data["messages"])
        _require(isinstance(data["matched_trials"], list), "$.matched_trials", "must be a list")
        searches = data.get("searches", [])
        _require(isinstance(searches, list) and all(isinstance(x, dict) for x in searches), "$.searches",
                  "must be a list of objects")
        for i, trial in enumerate(data["matched_trials"]):
            _require(
                isinstance(trial, dict) and NCT_RE.fullmatch(str(trial.get("nct_id", ""))) is not None,
                f"$.matched_trials[{i}]",
                "must be an object with an NCT id",
            )
        for name in ("selected_nct_ids", "seen_nct_ids"):
            ids = data[name]
            _require(
                isinstance(ids, list) and all(isinstance(i, str) and NCT_RE.fullmatch(i) for i in ids),
                f"$.{name}",
                "must be a list of NCT ids",
            )
        _require(
            data["report_html"] is None or isinstance(data["report_html"], str),
            "$.report_html",
            "must be text or null",
        )
        settings = data["settings"]
        _require(
            isinstance(settings, dict) and set(settings) == {"model", "max_tokens", "trimming"},
            "$.settings",
            "must have exactly model, max_tokens, trimming",
        )
        _require(
            isinstance(settings["model"], str) and settings["model"] != "",
            "$.settings.model",
            "must be a model name",
        )
        _require(
            _is_int(settings["max_tokens"]) and settings["max_tokens"] > 0,
            "$.settings.max_tokens",
            "must be a positive integer",
        )
        _require(isinstance(settings["trimming"], bool), "$.settings.trimming", "must be true or false")
        usage = data["usage"]
        usage_keys = {f.name for f in fields(UsageCounters)}
        _require(
            isinstance(usage, dict) and set(usage) == usage_keys,
            "$.usage",
            f"must have exactly {', '.join(sorted(usage_keys))}",
        )
        for name, value in usage.items():
            _require(_is_int(value) and value >= 0, f"$.usage.{name}", "must be a non-negative integer")
        stamps = {name: _parse_time(data[name], f"$.{name}") for name in ("created_at", "updated_at")}
        kept = {name: data[name] for name in expected - {"version", "searches"}}
        kept.update(flags=dict(flags), searches=searches, settings=AssistantSettings(**settings),
                    usage=UsageCounters(**usage), **stamps)
        return cls(**kept)


def _require(ok: bool, path: str, problem: str) -> None:
    if not ok:
        raise BadInput(f"Assistant session data is corrupt: {path} {problem}.")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _parse_time(value: Any, path: str) -> datetime:
    _require(isinstance(value, str), path, "must be an ISO timestamp")
    try:
        stamp = datetime.fromisoformat(value)
    except ValueError:
        _require(False, path, f"is not an ISO timestamp: {value!r}")
        raise
    _require(stamp.tzinfo is not None, path, "must include a time zone")
    return stamp


def _check_messages(messages: Any) -> None:
    _require(isinstance(messages, list), "$.messages", "must be a list")
    for i, message in enumerate(messages):
        path = f"$.messages[{i}]"
        _require(isinstance(message, dict), path, "must be an object")
        _require(message.get("role") in ("user", "assistant"), f"{path}.role", "must be user or assistant")
        content = message.get("content")
        _require(isinstance(content, str | list), f"{path}.content", "must be text or a list of blocks")
        if isinstance(content, list):
            for j, block in enumerate(content):
                _require(
                    isinstance(block, dict) and isinstance(block.get("type"), str),
                    f"{path}.content[{j}]",
                    "must be a block with a type",
                )
