"""The tool registry: a tool's schema bound to its handler, the context a handler may touch, and a run that never
raises (every failure becomes an error result the model can read)."""

from __future__ import annotations

import json
import logging
import queue
import threading
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from pydantic import ValidationError

from services.assistant.arguments import Arguments
from services.assistant.problem import problems
from services.assistant.session import AssistantSession
from services.errors import TrialLandscapeError
from services.llm import ModelClient
from services.trials import NCT_RE, TrialBackend

log = logging.getLogger(__name__)

MAX_RESULT_CHARS = 24_000


class ToolError(Exception):
    """A problem the model can fix: returned to it as an error tool result."""


@dataclass
class ToolContext:
    """What a tool handler may touch: the session (under lock), the backend, event and status queues, and the model
    client when the turn has one."""

    session: AssistantSession
    backend: TrialBackend
    lock: threading.RLock = field(default_factory=threading.RLock)
    statuses: queue.SimpleQueue[str] = field(default_factory=queue.SimpleQueue)
    events: list[dict[str, Any]] = field(default_factory=list)
    today: date | None = None  # the date status freshness is judged on (None: the real today)
    model: ModelClient | None = None  # the Messages API client of a Claude-mode turn (None in guided mode)

    def emit(self, event: dict[str, Any]) -> None:
        """Queue a UI event; the page gets it after this turn's text."""
        self.events.append(event)

    def status(self, message: str) -> None:
        """Send a progress message; the orchestrator delivers it at once."""
        self.statuses.put(message)

    def for_call(self) -> ToolContext:
        """A context for one tool call: shared session, lock and status queue; its own event list."""
        return ToolContext(self.session, self.backend, self.lock, self.statuses, [], self.today, self.model)


Handler = Callable[[Any, ToolContext], dict[str, Any]]  # (the tool's Arguments, context) -> JSON-ready result


@dataclass(frozen=True)
class Tool:
    """One tool: schema for the model, handler for the app.

    barrier: its effect on the session depends on order, so it runs alone, in the order the model asked.
    data: its result comes from the database, so NCT ids in it count as seen (grounding).
    """

    name: str
    description: str
    arguments: type[Arguments]
    handler: Handler
    barrier: bool = False
    data: bool = False

    @property
    def input_schema(self) -> dict[str, Any]:
        """The JSON schema of the tool's arguments, generated from their model."""
        return self.arguments.tool_schema()

    def definition(self) -> dict[str, Any]:
        """The tool as the Messages API expects it."""
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema}


@dataclass(frozen=True)
class ToolOutcome:
    """The result of one tool call: JSON text for the model, error flag, UI events it queued."""

    content: str
    is_error: bool
    events: tuple[dict[str, Any], ...] = ()


class ToolRegistry:
    """The set of tools the model may call; runs a call and never raises."""

    def __init__(self, tools: Iterable[Tool]) -> None:
        self.tools: dict[str, Tool] = {}
        for tool in tools:
            self.tools[tool.name] = tool

    def definitions(self, cache: bool = True) -> list[dict[str, Any]]:
        """API tool definitions; the last carries a cache breakpoint so the tool list is cached."""
        defs = [tool.definition() for tool in self.tools.values()]
        if cache and defs:
            defs[-1] = dict(defs[-1], cache_control={"type": "ephemeral"})
        return defs

    def is_barrier(self, name: str) -> bool:
        """Whether a call to this tool must run alone and in order."""
        tool = self.tools.get(name)
        return tool is None or tool.barrier

    def run(self, name: str, args: Any, ctx: ToolContext) -> ToolOutcome:
        """Validate and run one call; every failure becomes an error result the model can read."""
        tool = self.tools.get(name)
        if tool is None:
            return _error(f"There is no tool named '{name}'. Available: {', '.join(self.tools)}.")
        if not isinstance(args, dict):
            return _error(f"Invalid arguments for {name}; fix these and call again.",
                          problems=[f"$: must be an object, got {type(args).__name__}"])
        try:
            parsed = tool.arguments.model_validate(args)
        except ValidationError as exc:
            return _error(f"Invalid arguments for {name}; fix these and call again.",
                          problems=problems(exc, tool.arguments))
        call_ctx = ctx.for_call()
        try:
            result = tool.handler(parsed, call_ctx)
        except ToolError as exc:
            return _error(str(exc))
        except TrialLandscapeError as exc:
            return _error(f"{name} failed: {exc}", hint=exc.hint or None)
        except Exception as exc:  # a tool bug must not end the conversation; the model is told and can go on
            # The frames, not the message: a tool's arguments (the patient's answers) can be quoted in it.
            log.error("tool %s crashed with %s:\n%s", name, type(exc).__name__,
                      "".join(traceback.format_tb(exc.__traceback__)).rstrip())
            return _error(f"{name} failed unexpectedly ({type(exc).__name__}: {exc}).")
        content = _dump(result)
        if tool.data:
            with ctx.lock:
                ctx.session.note_seen(NCT_RE.findall(content))
        return ToolOutcome(content, False, tuple(call_ctx.events))

    def call(self, name: str, args: Arguments, ctx: ToolContext) -> dict[str, Any]:
        """Run one tool on typed arguments, as guided mode does (no JSON on the way): ToolError and the
        app's own errors reach the caller; NCT ids in a data tool's result count as seen, as for the model."""
        tool = self.tools[name]
        if not isinstance(args, tool.arguments):
            raise TypeError(f"{name} takes {tool.arguments.__name__}, not {type(args).__name__}")
        result = tool.handler(args, ctx)
        if tool.data:
            with ctx.lock:
                ctx.session.note_seen(NCT_RE.findall(json.dumps(result, ensure_ascii=False, default=str)))
        return result


def _dump(result: Any) -> str:
    text = json.dumps(result, ensure_ascii=False, default=str)
    if len(text) > MAX_RESULT_CHARS:
        return text[:MAX_RESULT_CHARS] + " …[result cut here: too long]"
    return text


def _error(message: str, **extra: Any) -> ToolOutcome:
    payload = {"error": message, **{k: v for k, v in extra.items() if v is not None}}
    return ToolOutcome(json.dumps(payload, ensure_ascii=False), True)
