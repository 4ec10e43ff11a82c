"""A local fake of the Anthropic Messages API for tests: scripted replies, SSE streaming, injected errors."""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Block = dict[str, Any]

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


@dataclass
class ScriptedTurn:
    """One assistant reply: content blocks plus the stop reason the fake reports."""

    content: list[Block]
    stop_reason: str = "end_turn"
    delay: float = 0.0
    text_pieces: int = 3  # streamed text arrives in this many deltas …
    piece_delay: float = 0.0  # … with this pause after each (a slow model)


@dataclass
class ScriptedError:
    """An HTTP error the fake answers with instead of a reply."""

    status: int
    message: str = "injected error"
    retry_after_ms: int | None = 10


Responder = Callable[[dict[str, Any]], ScriptedTurn]


@dataclass
class _State:
    script: deque[ScriptedTurn | ScriptedError | Responder] = field(default_factory=deque)
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    routes: list[tuple[Callable[[dict[str, Any]], bool], Responder]] = field(default_factory=list)


def text_block(text: str) -> Block:
    """A text content block."""
    return {"type": "text", "text": text}


def tool_block(name: str, tool_input: dict[str, Any], tool_id: str | None = None) -> Block:
    """A tool_use content block; the fake fills in an id when none is given."""
    block: Block = {"type": "tool_use", "name": name, "input": tool_input}
    if tool_id is not None:
        block["id"] = tool_id
    return block


class FakeAnthropic:
    """Serve scripted Messages API replies on 127.0.0.1 at a random port; record every request body."""

    def __init__(self) -> None:
        self._state = _State()
        state = self._state

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - signature is fixed
                return

            def do_POST(self) -> None:  # noqa: N802 - http.server naming
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                if self.path.split("?")[0] != "/v1/messages":
                    self._send_json(404, _error_body(404, f"no route {self.path}"))
                    return
                body = json.loads(raw)
                with state.lock:
                    state.requests.append(body)
                    state.headers.append({k.lower(): v for k, v in self.headers.items()})
                    routed = next((r for accepts, r in state.routes if accepts(body)), None)
                    item = routed or (state.script.popleft() if state.script else None)
                if item is None:
                    self._send_json(
                        400,
                        _error_body(400, "fake script exhausted: no scripted reply left"),
                        {"x-should-retry": "false"},
                    )
                    return
                if isinstance(item, ScriptedError):
                    extra = {"x-should-retry": "true"} if item.status in (429, 529) else {}
                    if item.retry_after_ms is not None:
                        extra["retry-after-ms"] = str(item.retry_after_ms)
                    self._send_json(item.status, _error_body(item.status, item.message), extra)
                    return
                turn = item(body) if callable(item) else item
                if turn.delay:
                    time.sleep(turn.delay)
                message = _message(turn, body, state)
                if body.get("stream"):
                    self._send_stream(message, turn.text_pieces, turn.piece_delay)
                else:
                    self._send_json(200, message)

            def _send_json(
                self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
            ) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.send_header("request-id", f"req_fake_{len(state.requests)}")
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def _send_stream(self, message: dict[str, Any], pieces: int = 3, pause: float = 0.0) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("connection", "close")
                self.end_headers()
                self.close_connection = True
                for event in _sse_events(message, pieces):
                    chunk = f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()
                    self.wfile.write(chunk)
                    self.wfile.flush()
                    if pause and event.get("delta", {}).get("type") == "text_delta":
                        time.sleep(pause)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)

    @property
    def base_url(self) -> str:
        """The URL to pass as the SDK's base_url."""
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Every request body received so far, in order."""
        with self._state.lock:
            return list(self._state.requests)

    @property
    def request_headers(self) -> list[dict[str, str]]:
        """The headers of every request received so far (lower-cased names)."""
        with self._state.lock:
            return list(self._state.headers)

    @property
    def remaining(self) -> int:
        """How many scripted items have not been consumed."""
        with self._state.lock:
            return len(self._state.script)

    def add(self, item: ScriptedTurn | ScriptedError | Responder) -> FakeAnthropic:
        """Queue one scripted reply, error or responder function."""
        with self._state.lock:
            self._state.script.append(item)
        return self

    def route(self, accepts: Callable[[dict[str, Any]], bool], responder: Responder) -> FakeAnthropic:
        """Answer every request that `accepts` (a predicate on the request body) with `responder`, outside the
        script (for side calls whose number or order the script should not depend on)."""
        with self._state.lock:
            self._state.routes.append((accepts, responder))
        return self

    def add_text(self, text: str) -> FakeAnthropic:
        """Queue a plain text answer that ends the turn."""
        return self.add(ScriptedTurn([text_block(text)]))

    def add_tools(
        self, *calls: tuple[str, dict[str, Any]], text: str | None = None, delay: float = 0.0
    ) -> FakeAnthropic:
        """Queue a reply that asks for one or more tool calls (optionally after some text)."""
        content: list[Block] = [text_block(text)] if text else []
        content.extend(tool_block(name, args) for name, args in calls)
        return self.add(ScriptedTurn(content, stop_reason="tool_use", delay=delay))

    def add_error(self, status: int, message: str = "injected error", times: int = 1) -> FakeAnthropic:
        """Queue `times` HTTP errors with the given status (429 rate limit, 529 overloaded, ...)."""
        for _ in range(times):
            self.add(ScriptedError(status, message))
        return self

    def start(self) -> FakeAnthropic:
        """Start serving in a daemon thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeAnthropic:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _error_body(status: int, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": _ERROR_TYPES.get(status, "api_error"), "message": message}}


def _message(turn: ScriptedTurn, body: dict[str, Any], state: _State) -> dict[str, Any]:
    content: list[Block] = []
    for block in turn.content:
        block = dict(block)
        if block["type"] == "tool_use" and "id" not in block:
            block["id"] = f"toolu_fake_{next(state.ids):04d}"
        content.append(block)
    output_tokens = sum(len(json.dumps(b)) for b in content) // 4 + 1
    return {
        "id": f"msg_fake_{next(state.ids):04d}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "fake-model"),
        "content": content,
        "stop_reason": turn.stop_reason,
        "stop_sequence": None,
        "usage": {
            "input_tokens": len(json.dumps({k: v for k, v in body.items() if k != "stream"})) // 4,
            "output_tokens": output_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
    }


def _pieces(text: str, parts: int = 3) -> list[str]:
    if not text:
        return [""]
    size = max(1, -(-len(text) // parts))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _sse_events(message: dict[str, Any], pieces: int = 3) -> list[dict[str, Any]]:
    usage = message["usage"]
    start = dict(message, content=[], stop_reason=None, usage=dict(usage, output_tokens=1))
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}, {"type": "ping"}]
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            events.append(
                {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}
            )
            for piece in _pieces(block["text"], pieces):
                events.append(
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "text_delta", "text": piece},
                    }
                )
        else:
            events.append(
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {
                        "type": "tool_use",
                        "id": block["id"],
                        "name": block["name"],
                        "input": {},
                    },
                }
            )
            for piece in _pieces(json.dumps(block["input"])):
                events.append(
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": piece},
                    }
                )
        events.append({"type": "content_block_stop", "index": index})
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": usage["output_tokens"]},
        }
    )
    events.append({"type": "message_stop"})
    return events
