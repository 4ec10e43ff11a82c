"""Thin Anthropic Messages API client: the only module that imports the SDK; returns plain dicts."""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, astuple, dataclass, fields
from typing import Any, Protocol

import anthropic
import httpx2

from services import settings
from services.errors import AssistantUnavailable

DEFAULT_MODEL = "claude-sonnet-5-5"
MODEL_CHOICES: tuple[str, ...] = ("claude-sonnet-5-5", "claude-opus-5-5", "claude-haiku-5-5")
DEFAULT_MAX_RETRIES = 4
DEFAULT_TIMEOUT_SECONDS = 120.0

Message = dict[str, Any]


@dataclass(frozen=True)
class TokenUsage:
    """Token counts reported by the API for one reply."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(*map(operator.add, astuple(self), astuple(other)))

    def as_dict(self) -> dict[str, int]:
        """The counts as a plain dict (for JSON and the page)."""
        return asdict(self)


def count_usage(message: Mapping[str, Any]) -> TokenUsage:
    """Input/output (and cache) token counts of one reply message dict; missing counts are zero."""
    usage = message.get("usage") or {}
    return TokenUsage(**{field.name: int(usage.get(field.name) or 0) for field in fields(TokenUsage)})


class ModelClient(Protocol):
    """What the assistant's loop and the eligibility model need from a Messages API client: LLMClient below, or a
    wrapper of it (a concurrency gate) or a fake in tests."""

    def create(
        self,
        *,
        model: str,
        max_tokens: int,
        system: str | list[dict[str, Any]],
        messages: Iterable[Mapping[str, Any]],
        tools: list[dict[str, Any]] | None = None,
    ) -> Message:
        """One non-streaming call."""
        ...

    def stream(
        self,
        *,
        model: str,
        max_tokens: int,
        system: str | list[dict[str, Any]],
        messages: Iterable[Mapping[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        on_text: Callable[[str], None] | None = None,
    ) -> Message:
        """One streaming call, text deltas to on_text as they arrive."""
        ...


def api_key_from_env() -> str | None:
    """The configured API key (ANTHROPIC_API_KEY), or None when the assistant must run in guided mode."""
    key = settings.current().anthropic_api_key
    return key.get_secret_value() if key else None


class LLMClient:
    """Calls messages.create / messages.stream; SDK retries cover 429, 529, 5xx and timeouts."""

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        http_client: httpx2.Client | None = None,
        max_retries: int = DEFAULT_MAX_RETRIES,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
    ) -> None:
        key = api_key or api_key_from_env()
        if not key:
            raise AssistantUnavailable(
                "No Anthropic API key is configured (set ANTHROPIC_API_KEY).",
                hint="Set ANTHROPIC_API_KEY and restart, or use guided mode, which needs no key.",
            )
        self.base_url = base_url or settings.current().anthropic_base_url
        self.max_retries = max_retries
        self._client = anthropic.Anthropic(
            api_key=key,
            base_url=self.base_url,
            http_client=http_client,
            max_retries=max_retries,
            timeout=timeout,
        )

    def create(
        self,
        *,
        model: str,
        max_tokens: int,
        system: str | list[dict[str, Any]],
        messages: Iterable[Mapping[str, Any]],
        tools: list[dict[str, Any]] | None = None,
    ) -> Message:
        """One non-streaming Messages API call; the reply as a plain dict."""
        try:
            reply = self._client.messages.create(**_request(model, max_tokens, system, messages, tools))
        except anthropic.AnthropicError as exc:
            raise self._unavailable(exc) from exc
        return reply.to_dict()

    def stream(
        self,
        *,
        model: str,
        max_tokens: int,
        system: str | list[dict[str, Any]],
        messages: Iterable[Mapping[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        on_text: Callable[[str], None] | None = None,
    ) -> Message:
        """One streaming call: text deltas go to on_text as they arrive; the full reply is returned."""
        try:
            request = _request(model, max_tokens, system, messages, tools)
            with self._client.messages.stream(**request) as stream:
                for event in stream:
                    if event.type == "text" and on_text is not None:
                        on_text(event.text)
                final = stream.get_final_message()
        except anthropic.AnthropicError as exc:
            raise self._unavailable(exc) from exc
        except ValueError as exc:  # the SDK raises this when a streamed tool input is not valid JSON
            raise AssistantUnavailable(f"The model's reply could not be read: {exc}") from exc
        return final.to_dict()

    def _unavailable(self, exc: anthropic.AnthropicError) -> AssistantUnavailable:
        return AssistantUnavailable(describe_error(exc, self.base_url, self.max_retries))


def _request(
    model: str,
    max_tokens: int,
    system: str | list[dict[str, Any]],
    messages: Iterable[Mapping[str, Any]],
    tools: list[dict[str, Any]] | None,
) -> dict[str, Any]:
    """The keyword arguments messages.create and messages.stream share (no tools: the SDK's omit)."""
    return {
        "model": model,
        "max_tokens": max_tokens,
        "system": system,
        "messages": list(messages),
        "tools": tools or anthropic.omit,
    }


def describe_error(exc: BaseException, base_url: str, max_retries: int) -> str:
    """A readable sentence for an SDK error: what failed and, where known, why."""
    retried = f" (after {max_retries} {'retry' if max_retries == 1 else 'retries'})" if max_retries else ""
    if isinstance(exc, anthropic.APITimeoutError):
        return f"The model service at {base_url} did not answer in time{retried}."
    if isinstance(exc, anthropic.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        reason = f": {cause}" if cause else ""
        return f"Cannot connect to the model service at {base_url}{retried}{reason}."
    if isinstance(exc, anthropic.APIStatusError):
        detail = exc.api_message or exc.message
        status = exc.status_code
        if status == 401:
            return "The model service rejected the API key (HTTP 401). Check ANTHROPIC_API_KEY."
        if status == 403:
            return f"The API key may not use this model or feature (HTTP 403): {detail}"
        if status == 404:
            return f"The model service does not know this model or address (HTTP 404): {detail}"
        if status == 429:
            return (
                f"The model service is rate-limiting requests (HTTP 429){retried}. Wait a minute and retry."
            )
        if status == 529:
            return f"The model service is overloaded (HTTP 529){retried}. Try again shortly."
        if status >= 500:
            return f"The model service had an internal error (HTTP {status}){retried}: {detail}"
        return f"The model service refused the request (HTTP {status}): {detail}"
    return f"The model service call failed: {exc}"
