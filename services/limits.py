"""Fair-use limits for a shared instance: assistant messages per visitor per time window, concurrent model calls.

`visitor_limiter()` counts assistant messages in PostgreSQL (app.limit_events), so every app process behind a
load balancer shares the count and a new session does not reset it: ASSISTANT_MESSAGE_LIMIT (default 20)
messages per ASSISTANT_MESSAGE_WINDOW_S (default 600) seconds for each browser (its cookie),
ASSISTANT_NETWORK_LIMIT (default 3× that) for each network address, and ASSISTANT_GLOBAL_LIMIT (default 500)
for the whole instance. When the database cannot be written it falls back to an in-process sliding window
with the per-browser limit. `model_gate()`: MODEL_CONCURRENCY (default 4) model calls at once per process,
a caller waiting at most MODEL_WAIT_S (default 30) seconds for a free slot.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import math
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from services import settings
from services.errors import AssistantUnavailable, TrialLandscapeError

_log = logging.getLogger(__name__)
MAX_TRACKED_KEYS = 10_000


class ModelBusy(AssistantUnavailable):
    """Every model-call slot of this server stayed taken for the whole wait."""

    hint = "Many people are using the assistant right now. Your conversation is kept; send your message again in a minute."


@dataclass(frozen=True)
class LimitDecision:
    """Whether one more event is allowed now, how many remain, and when the oldest counted one expires."""

    allowed: bool
    remaining: int
    retry_after_s: float
    blocker: str = ""  # shared limits: "b" (this browser), "n" (its network) or "g" (everyone) refused it

    def message(self, limit: int, window_s: float) -> str:
        """A sentence for the page when the event was refused."""
        return (f"You have sent {limit} messages in the last {duration(window_s)}, the most this server allows. "
                f"You can send the next one in {duration(self.retry_after_s)}.")


def duration(seconds: float) -> str:
    whole = max(1, math.ceil(seconds))
    if whole < 120:
        return f"{whole} second{'s' if whole != 1 else ''}"
    minutes = math.ceil(whole / 60)
    return f"{minutes} minutes"


class SlidingWindowLimiter:
    """At most `limit` events per `window_s` seconds for each key (a session token), counted over a sliding window."""

    def __init__(self, limit: int, window_s: float, *, clock: Callable[[], float] = time.monotonic,
                 max_keys: int = MAX_TRACKED_KEYS) -> None:
        if limit < 1 or window_s <= 0:
            raise ValueError("limit must be ≥ 1 and window_s > 0")
        self.limit = limit
        self.window_s = float(window_s)
        self._clock = clock
        self._max_keys = max_keys
        self._events: OrderedDict[str, deque[float]] = OrderedDict()
        self._lock = threading.Lock()

    def try_acquire(self, key: str) -> LimitDecision:
        """Count one event for `key` if the window allows it; the decision says whether it was counted."""
        with self._lock:
            now = self._clock()
            events = self._events.get(key)
            if events is None:
                events = self._events[key] = deque()
                while len(self._events) > self._max_keys:
                    self._events.popitem(last=False)
            while events and events[0] <= now - self.window_s:
                events.popleft()
            self._events.move_to_end(key)
            allowed = len(events) < self.limit
            if allowed:
                events.append(now)
            remaining = max(0, self.limit - len(events))
            retry = 0.0 if remaining else max(0.0, events[0] + self.window_s - now)
            return LimitDecision(allowed, remaining, retry)


class ConcurrencyGate:
    """A counting semaphore for model calls: `with gate.slot(): …`; waits at most timeout_s, then ModelBusy."""

    def __init__(self, limit: int, timeout_s: float) -> None:
        if limit < 1:
            raise ValueError("limit must be ≥ 1")
        self.limit = limit
        self.timeout_s = float(timeout_s)
        self._semaphore = threading.BoundedSemaphore(limit)
        self._lock = threading.Lock()
        self._in_use = 0

    @property
    def in_use(self) -> int:
        """How many slots are taken right now."""
        with self._lock:
            return self._in_use

    @contextlib.contextmanager
    def slot(self, timeout_s: float | None = None) -> Iterator[None]:
        """Hold one slot for the duration of the block; raise ModelBusy if none frees up in time."""
        wait = self.timeout_s if timeout_s is None else timeout_s
        if not self._semaphore.acquire(timeout=max(0.0, wait)):
            raise ModelBusy(f"All {self.limit} assistant slots of this server stayed busy for "
                            f"{duration(wait)}; nothing was sent to the model.")
        with self._lock:
            self._in_use += 1
        try:
            yield
        finally:
            with self._lock:
                self._in_use -= 1
            self._semaphore.release()


def gate_from(config: settings.Settings) -> ConcurrencyGate:
    """A model-call gate with MODEL_CONCURRENCY and MODEL_WAIT_S from the settings."""
    return ConcurrencyGate(config.model_concurrency, config.model_wait_s)


_singletons_lock = threading.Lock()
_gate: ConcurrencyGate | None = None


def model_gate() -> ConcurrencyGate:
    """The process's gate on concurrent model calls, shared by every session."""
    global _gate
    with _singletons_lock:
        if _gate is None:
            _gate = gate_from(settings.current())
        return _gate


@dataclass(frozen=True)
class Visitor:
    """Who is asking, as digests (never the raw values): the browser (its cookie) and the network address."""

    browser: str
    network: str

    @classmethod
    def from_values(cls, browser: str, network: str) -> Visitor:
        """Digest a browser token and a network address (the same values give the same keys in every process)."""
        return cls(_digest("browser", browser), _digest("network", network))

    def keys(self) -> tuple[str, str]:
        """The limit keys of this visitor: "b:<browser>", "n:<network>"."""
        return f"b:{self.browser}", f"n:{self.network}"


GLOBAL_KEY = "g:all"


def _digest(kind: str, value: str) -> str:
    return hashlib.sha256(f"trial-landscape-{kind}:{value}".encode()).hexdigest()[:32]


class SharedLimiter:
    """At most `per_browser` events per window for a browser, `per_network` for a network address and
    `global_limit` for everyone, counted in PostgreSQL so that every process and every new session share them.

    When the database cannot be written the decision falls back to this process's own window with the
    per-browser limit, keyed by the browser, so the assistant keeps a limit rather than none.
    """

    def __init__(self, db_factory: Callable[[], Any], kind: str, per_browser: int, per_network: int,
                 global_limit: int, window_s: float) -> None:
        if min(per_browser, per_network, global_limit) < 1 or window_s <= 0:
            raise ValueError("limits must be ≥ 1 and window_s > 0")
        self._db_factory = db_factory
        self.kind = kind
        self.limit = per_browser
        self.per_network = per_network
        self.global_limit = global_limit
        self.window_s = float(window_s)
        self._fallback = SlidingWindowLimiter(per_browser, window_s)

    def try_acquire(self, visitor: Visitor) -> LimitDecision:
        """Count one event for the visitor if every limit allows it; the decision says whether it was counted."""
        from services.data.db import load_sql

        browser, network = visitor.keys()
        try:
            rows = self._db_factory().fetch_locked(
                f"app.limit_events:{self.kind}", load_sql("limit_events_acquire"),
                {"kind": self.kind, "keys": [browser, network, GLOBAL_KEY],
                 "limits": [self.limit, self.per_network, self.global_limit], "window_s": self.window_s})
        except TrialLandscapeError as err:
            _log.warning("shared %s limit unavailable (%s); counting in this process only", self.kind, err)
            return self._fallback.try_acquire(browser)
        allowed = bool(rows[0]["allowed"]) if rows else True
        mine = next((r for r in rows if r["key"] == browser), None)
        remaining = max(0, self.limit - int(mine["counted"]) - (1 if allowed else 0)) if mine else self.limit
        retry = max((float(r["retry_s"] or 0) for r in rows), default=0.0)
        blocker = "" if allowed else next(
            (str(r["key"])[:1] for r in rows if int(r["counted"]) >= int(r["cap"])), "b")
        return LimitDecision(allowed, remaining, 0.0 if allowed else retry, blocker)

    def message(self, decision: LimitDecision) -> str:
        """The sentence shown when a message was refused, naming which limit it hit."""
        if decision.blocker == "g":
            return (f"This server has answered {self.global_limit} messages in the last {duration(self.window_s)}, "
                    f"its limit for everyone. You can send yours in {duration(decision.retry_after_s)}.")
        if decision.blocker == "n":
            return (f"{self.per_network} messages came from your network in the last {duration(self.window_s)}, "
                    f"the most this server allows. You can send the next one in "
                    f"{duration(decision.retry_after_s)}.")
        return decision.message(self.limit, self.window_s)


_visitor_limiter: SharedLimiter | None = None


def shared_limiter_from(config: settings.Settings, db_factory: Callable[[], Any]) -> SharedLimiter:
    """The assistant's shared message limiter with the ASSISTANT_* limits from the settings."""
    return SharedLimiter(db_factory, "assistant_message", config.assistant_message_limit,
                         config.network_limit,
                         config.assistant_global_limit, config.assistant_message_window_s)


def visitor_limiter() -> SharedLimiter:
    """The process's assistant-message limiter, shared through the app database."""
    global _visitor_limiter
    with _singletons_lock:
        if _visitor_limiter is None:
            from services.data import runtime

            _visitor_limiter = shared_limiter_from(settings.current(), runtime.get_app_db)
        return _visitor_limiter
