"""Shorten the history sent to the model by size, never splitting a tool_use from its tool_result."""

from __future__ import annotations

import json
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

Message = dict[str, Any]

BRIDGE_NOTE = (
    "[Earlier messages of this conversation were left out to save space. The session context in the "
    "system prompt still holds everything saved: the patient's answers and profile, the trials found and "
    "scored, and the selection.]"
)


@dataclass(frozen=True)
class TrimPolicy:
    """Trim when the history is above max_chars; then keep the newest messages up to keep_chars."""

    max_chars: int
    keep_chars: int


DEFAULT_POLICY = TrimPolicy(max_chars=160_000, keep_chars=80_000)
# The interview itself is the material during intake, so let it grow much further before cutting.
INTAKE_POLICY = TrimPolicy(max_chars=400_000, keep_chars=200_000)


def policy_for(phase: str, intake_complete: bool) -> TrimPolicy:
    """The larger threshold while the interview is still going on, the default otherwise."""
    return INTAKE_POLICY if phase == "intake" and not intake_complete else DEFAULT_POLICY


def message_size(message: Message) -> int:
    """Size of one message as sent (characters of its JSON)."""
    return len(json.dumps(message, ensure_ascii=False))


def _has_tool_result(message: Message) -> bool:
    content = message["content"]
    return isinstance(content, list) and any(b.get("type") == "tool_result" for b in content)


def safe_starts(messages: list[Message]) -> list[int]:
    """Indexes where the kept part may begin: any assistant message, or a user message that answers no
    tool call (so every tool_result kept has its tool_use kept too)."""
    return [
        i for i, m in enumerate(messages) if i > 0 and (m["role"] == "assistant" or not _has_tool_result(m))
    ]


def trim_history(messages: list[Message], policy: TrimPolicy) -> tuple[list[Message], int]:
    """The messages to send and how many were left out; the input list is not changed."""
    sizes = [message_size(m) for m in messages]
    if sum(sizes) <= policy.max_chars:
        return list(messages), 0
    starts = safe_starts(messages)
    if not starts:
        return list(messages), 0
    tail = list(accumulate(reversed(sizes)))[::-1]  # tail[i]: the size of messages[i:]
    # The earliest safe start whose tail fits; if none fits, the latest one (keep as little as is valid).
    cut = next((i for i in starts if tail[i] <= policy.keep_chars), starts[-1])
    kept = messages[cut:]
    bridge = {"type": "text", "text": BRIDGE_NOTE}
    first = kept[0]
    if first["role"] == "user":
        content = first["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
        kept = [{"role": "user", "content": [bridge, *blocks]}, *kept[1:]]
    else:
        kept = [{"role": "user", "content": [bridge]}, *kept]
    return kept, cut
