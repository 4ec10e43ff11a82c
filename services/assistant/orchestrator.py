"""The agent loop: one user message in, model calls and tool runs until the model is done, a TurnResult out."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

from services.assistant.arguments import ACTIVITY_LEVELS
from services.assistant.claims import check_claims, warning_text
from services.assistant.grounding import LOOKUP_PHASES, GroundingWarning, check_answer
from services.assistant.prompts import build_system
from services.assistant.registry import ToolContext, ToolOutcome
from services.assistant.session import AssistantSession
from services.assistant.tools import build_registry
from services.assistant.trimming import policy_for, trim_history
from services.errors import AssistantUnavailable
from services.llm import Message, ModelClient, TokenUsage, count_usage
from services.trials import TrialBackend

MAX_MODEL_CALLS = 15
MAX_TOOL_WORKERS = 6
MAX_USER_TEXT = 20_000
_MAX_KEPT_PATIENT_MESSAGES = 30
_KEPT_MESSAGE_CHARS = 600


@dataclass(frozen=True)
class WidgetAnswer:
    """The patient's answer to a choice widget: chosen options and, if allowed, their own words."""

    widget_id: str
    selections: tuple[str, ...]
    other_text: str = ""


@dataclass(frozen=True)
class TrialSelection:
    """The trials the patient ticked on the trial cards."""

    nct_ids: tuple[str, ...]


UserInput = str | WidgetAnswer | TrialSelection


@dataclass
class Callbacks:
    """How the page hears about a turn while it runs (all called on the caller's thread).

    on_text: streamed text deltas; on_status: progress messages, delivered at once;
    on_event: UI events (widgets, trial cards, filters, phase, report), after the turn's text.
    """

    on_text: Callable[[str], None] | None = None
    on_status: Callable[[str], None] | None = None
    on_event: Callable[[dict[str, Any]], None] | None = None


@dataclass
class TurnResult:
    """What one user message produced."""

    text: str
    events: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[GroundingWarning] = field(default_factory=list)
    model_calls: int = 0
    usage: dict[str, int] = field(default_factory=dict)
    error: str | None = None
    flagged: list[str] = field(default_factory=list)  # sentences whose claims could not be checked


class Orchestrator:
    """Runs the assistant loop over an AssistantSession; no UI code, the page passes callbacks."""

    def __init__(
        self,
        llm: ModelClient,
        backend: TrialBackend,
        callbacks: Callbacks | None = None,
        *,
        heartbeat_seconds: float = 8.0,
    ) -> None:
        self.llm = llm
        self.backend = backend
        self.callbacks = callbacks or Callbacks()
        self.registry = build_registry()
        self.heartbeat_seconds = heartbeat_seconds

    # ---------------------------------------------------------------- public

    def run_turn(self, session: AssistantSession, user_input: UserInput) -> TurnResult:
        """Handle one user message (text, widget answer or trial selection) through to the final answer."""
        problem = self._accept_input(session, user_input)
        if problem:
            return TurnResult(text="", error=problem)
        start_phase = session.phase
        texts: list[str] = []
        events: list[dict[str, Any]] = []
        usage = TokenUsage()
        warnings: list[GroundingWarning] = []
        calls = lookups = 0
        error: str | None = None
        wants_tools = False
        ctx = ToolContext(session, self.backend, model=self.llm)
        while True:
            if calls >= MAX_MODEL_CALLS:
                if wants_tools:
                    notice = (
                        f"I have taken {MAX_MODEL_CALLS} steps on this message, which is the most I do in one "
                        'go. Everything so far is saved. Send "continue" and I will carry on from here.'
                    )
                    texts.append(notice)
                    warnings.append(GroundingWarning("step_limit", notice))
                break
            try:
                reply = self._call_model(session, bool(texts))
            except AssistantUnavailable as exc:
                error = f"{exc} {exc.hint}".strip()
                break
            calls += 1
            reply_usage = count_usage(reply)
            usage += reply_usage
            session.usage.add(reply_usage.as_dict(), calls=1)
            content = [_clean_block(b) for b in reply.get("content") or [] if not _is_empty_text(b)]
            if not content:
                break
            session.messages.append({"role": "assistant", "content": content})
            text = "".join(b["text"] for b in content if b.get("type") == "text").strip()
            if text:
                texts.append(text)
            tool_uses = [b for b in content if b.get("type") == "tool_use"]
            wants_tools = bool(tool_uses)
            if reply.get("stop_reason") == "max_tokens" and not tool_uses:
                warnings.append(
                    GroundingWarning(
                        "cut_off",
                        "The answer hit the length limit and was cut off. Ask the assistant to continue, "
                        "or raise the answer length in the assistant settings.",
                    )
                )
            if not tool_uses:
                break
            outcomes = self._run_tools(ctx, tool_uses)
            tools = self.registry.tools
            lookups += sum(1 for b in tool_uses if b["name"] in tools and tools[b["name"]].data)
            results: list[dict[str, Any]] = []
            for block, outcome in zip(tool_uses, outcomes, strict=True):
                result: dict[str, Any] = {
                    "type": "tool_result",
                    "tool_use_id": block["id"],
                    "content": outcome.content,
                }
                if outcome.is_error:
                    result["is_error"] = True
                results.append(result)
                events.extend(outcome.events)
            session.messages.append({"role": "user", "content": results})
        answer = "\n\n".join(texts)
        phase = start_phase if start_phase in LOOKUP_PHASES else session.phase
        warnings = check_answer(answer, session.seen_nct_ids, phase=phase, tool_calls=lookups) + warnings
        # Verdicts, places, distances and numbers must agree with the saved checks and the tool results.
        flags = check_claims(answer, session) if answer else []
        if flags:
            warnings.append(GroundingWarning("unchecked_claim", warning_text(flags)))
        events = _coalesce_filters(events)
        session.touch()
        if self.callbacks.on_event:
            for event in events:
                self.callbacks.on_event(event)
        return TurnResult(answer, events, warnings, calls, usage.as_dict(), error,
                          list(dict.fromkeys(f.sentence for f in flags)))

    # ---------------------------------------------------------------- input

    def _accept_input(self, session: AssistantSession, user_input: UserInput) -> str | None:
        """Turn the input into a user message (storing answers in session state); a reason if refused."""
        if isinstance(user_input, WidgetAnswer):
            return self._accept_widget(session, user_input)
        if isinstance(user_input, TrialSelection):
            return self._accept_selection(session, user_input)
        text = user_input.strip()
        if not text:
            return "The message is empty."
        if len(text) > MAX_USER_TEXT:
            return f"The message is too long ({len(text):,} characters; at most {MAX_USER_TEXT:,})."
        if session.phase == "intake":
            said = list(session.intake_answers.get("patient_said", []))
            said.append(text[:_KEPT_MESSAGE_CHARS])
            session.intake_answers["patient_said"] = said[-_MAX_KEPT_PATIENT_MESSAGES:]
        session.add_user([{"type": "text", "text": text}])
        return None

    def _accept_widget(self, session: AssistantSession, answer: WidgetAnswer) -> str | None:
        widget = session.widgets.get(answer.widget_id)
        if widget is None:
            return "That set of choices is no longer open. Please answer in your own words."
        options = widget["options"]
        wrong = [s for s in answer.selections if s not in options]
        if wrong:
            return f"Not one of the offered choices: {', '.join(wrong)}."
        other = answer.other_text.strip()
        if other and not widget.get("allow_other"):
            return "This question only takes the offered choices."
        if len(other) > 300:
            return "The 'other' answer is too long (at most 300 characters)."
        chosen = list(dict.fromkeys(answer.selections)) + ([other] if other else [])
        if not chosen:
            return "Please pick an answer first."
        if widget["widget_type"] == "single_select" and len(chosen) != 1:
            return "Please pick exactly one answer."
        value: Any = chosen[0] if widget["widget_type"] == "single_select" else chosen
        widget["answer"] = value
        session.intake_answers[widget["field"]] = value
        if widget["field"] == "activity_level" and value in ACTIVITY_LEVELS:
            session.patient_profile["activity_level"] = value
            session.patient_profile["ecog"] = ACTIVITY_LEVELS[value]
        shown = value if isinstance(value, str) else "; ".join(value)
        answered = f"My answer to \u201c{widget['question']}\u201d: {shown}"
        session.add_user([{"type": "text", "text": answered}])
        return None

    def _accept_selection(self, session: AssistantSession, selection: TrialSelection) -> str | None:
        problem = session.choose(selection.nct_ids)
        if problem is None:
            ids = ", ".join(session.selected_nct_ids)
            session.add_user([{"type": "text", "text": f"I have chosen these trials for my report: {ids}."}])
        return problem

    # ---------------------------------------------------------------- model

    def _call_model(self, session: AssistantSession, had_text: bool) -> Message:
        """One model call with the system prompt rebuilt from the session as it is now."""
        system = build_system(session)
        if session.settings.trimming:
            messages, _ = trim_history(
                session.messages, policy_for(session.phase, session.flags["intake_complete"])
            )
        else:
            messages = list(session.messages)
        params: dict[str, Any] = {
            "model": session.settings.model,
            "max_tokens": session.settings.max_tokens,
            "system": system,
            "messages": messages,
            "tools": self.registry.definitions(),
        }
        on_text = self.callbacks.on_text
        if on_text is None:
            return self.llm.create(**params)
        first = True

        def forward(delta: str) -> None:
            nonlocal first
            if first and had_text:
                on_text("\n\n")
            first = False
            on_text(delta)

        return self.llm.stream(**params, on_text=forward)

    # ---------------------------------------------------------------- tools

    def _run_tools(self, ctx: ToolContext, tool_uses: list[dict[str, Any]]) -> list[ToolOutcome]:
        """Run a turn's tool calls: runs of independent calls at the same time, order-sensitive ones alone."""
        outcomes: list[ToolOutcome | None] = [None] * len(tool_uses)
        batch: list[int] = []
        for i, block in enumerate(tool_uses):
            if self.registry.is_barrier(block["name"]):
                self._run_batch(ctx, tool_uses, batch, outcomes)
                batch = []
                outcomes[i] = self.registry.run(block["name"], block["input"], ctx)
                self._drain_statuses(ctx)
            else:
                batch.append(i)
        self._run_batch(ctx, tool_uses, batch, outcomes)
        return [o for o in outcomes if o is not None]

    def _run_batch(
        self,
        ctx: ToolContext,
        tool_uses: list[dict[str, Any]],
        indexes: list[int],
        outcomes: list[ToolOutcome | None],
    ) -> None:
        if not indexes:
            return
        # Lookups run on worker threads; this thread relays their progress messages and heartbeats,
        # so callbacks (and any UI code behind them) only ever run on the caller's thread.
        names = ", ".join(dict.fromkeys(tool_uses[i]["name"] for i in indexes))
        with ThreadPoolExecutor(max_workers=min(MAX_TOOL_WORKERS, len(indexes))) as pool:
            futures: dict[Future[ToolOutcome], int] = {
                pool.submit(self.registry.run, tool_uses[i]["name"], tool_uses[i]["input"], ctx): i
                for i in indexes
            }
            started = time.monotonic()
            next_beat = started + self.heartbeat_seconds
            pending = set(futures)
            while pending:
                done, pending = wait(pending, timeout=0.05, return_when=FIRST_COMPLETED)
                for future in done:
                    outcomes[futures[future]] = future.result()
                self._drain_statuses(ctx)
                now = time.monotonic()
                if pending and now >= next_beat:
                    self._status(f"Still working on {names}… ({int(now - started)} s)")
                    next_beat = now + self.heartbeat_seconds
        self._drain_statuses(ctx)

    def _drain_statuses(self, ctx: ToolContext) -> None:
        while not ctx.statuses.empty():
            self._status(ctx.statuses.get())

    def _status(self, message: str) -> None:
        if self.callbacks.on_status:
            self.callbacks.on_status(message)


def _clean_block(block: dict[str, Any]) -> dict[str, Any]:
    """A reply block as history: SDK-only keys and empty values dropped."""
    if block.get("type") == "tool_use":
        return {
            "type": "tool_use",
            "id": block["id"],
            "name": block["name"],
            "input": block.get("input") or {},
        }
    if block.get("type") == "text":
        out = {"type": "text", "text": block.get("text", "")}
        if block.get("citations"):
            out["citations"] = block["citations"]
        return out
    return {k: v for k, v in block.items() if v is not None and k != "parsed_output"}


def _is_empty_text(block: dict[str, Any]) -> bool:
    return block.get("type") == "text" and not str(block.get("text") or "").strip()


def _coalesce_filters(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each filters event carries the full merged filters, so only the last one matters."""
    last = max((i for i, e in enumerate(events) if e.get("type") == "filters"), default=None)
    return [e for i, e in enumerate(events) if e.get("type") != "filters" or i == last]
