"""Real-protocol load: visitors that speak Streamlit's own WebSocket protocol to a running server.

Each visitor opens `/_stcore/stream` as a browser tab does, asks for a page with a `rerun_script` BackMsg and
reads ForwardMsgs until the server reports `script_finished`: that interval is one render. Between renders a
visitor changes the shared Condition filter through its sidebar widget (the same WidgetState a browser sends)
or moves to another page. Errors are exceptions and error banners in the rendered page, facets that timed out,
renders that do not finish in time and dropped connections. Loopback only; every loop is bounded by a deadline.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState
from websockets.exceptions import WebSocketException
from websockets.sync.client import ClientConnection, connect

from devtools.loadtest import CONDITIONS, MAX_SECONDS, MAX_USERS, TargetStats, check_loopback, percentile
from services.errors import BadInput

RENDER_TIMEOUT_S = 60.0
MAX_CACHED_MESSAGES = 2_000
PAGES = ("Explore", "Map", "Trials")
# A warning the pages show when a facet or a query gave up: the render is degraded, so it counts as an error.
TIMEOUT_MARKERS = ("could not be computed", "took too long", "not reachable", "database is busy")
# Counted apart in the result: a database reported down, and a busy pool (the page retries by itself).
COUNTED_MARKERS = ("not reachable", "database is busy")


class RenderFailed(Exception):
    """A render that did not complete or showed an error to the visitor."""


@dataclass
class Render:
    """What one script run sent to the visitor."""

    seconds: float
    messages: int
    bytes: int
    elements: int
    problems: list[str] = field(default_factory=list)
    references: int = 0  # elements sent as a reference to one the tab already holds


class Visitor:
    """One browser tab: a WebSocket session, the app's pages and the widget ids it has seen."""

    def __init__(self, base_url: str, timeout_s: float = RENDER_TIMEOUT_S) -> None:
        base = check_loopback(base_url)
        self.ws_url = "ws" + base[len("http"):] + "/_stcore/stream"
        self.timeout_s = timeout_s
        self.pages: dict[str, str] = {}  # page name → page_script_hash
        self.widgets: dict[str, str] = {}  # widget key → widget id (as the server named it)
        self.labels: dict[str, str] = {}  # widget label → widget id (for widgets without a key)
        self.alerts: list[str] = []  # the texts of the alerts (error/warning/info) of the last render
        self.page_hash = ""
        # Hashes of the large messages this tab holds, reported with every rerun as a browser does, so that the
        # server sends a short reference instead of an element the tab already has (e.g. an unchanged map).
        self.cached: dict[str, None] = {}
        self._stack = contextlib.ExitStack()
        self.ws: ClientConnection = self._stack.enter_context(
            connect(self.ws_url, subprotocols=["streamlit"], open_timeout=timeout_s,  # type: ignore[list-item]
                    max_size=None))

    def close(self) -> None:
        """Close the WebSocket (the server ends the session)."""
        self._stack.close()

    def open_page(self, name: str, query_string: str = "") -> Render:
        """Navigate to a page by its name (as in the sidebar), as a click on its link does."""
        if name not in self.pages and self.pages:
            raise BadInput(f"No page named {name!r}; the app has {sorted(self.pages)}.")
        self.page_hash = self.pages.get(name, "")
        return self._run(query_string=query_string, page_name=name if not self.page_hash else "")

    def set_text(self, key: str, value: str) -> Render:
        """Type into a text input (by its widget key) and press Enter: one rerun with that widget's new value."""
        widget_id = self.widgets.get(key)
        if widget_id is None:
            raise RenderFailed(f"the page has no widget {key!r}")
        state = WidgetState(id=widget_id, string_value=value)
        return self._run(widgets=[state])

    def click(self, label: str) -> Render:
        """Press a button (by its label): one rerun with that button's trigger."""
        widget_id = self.labels.get(label)
        if widget_id is None:
            raise RenderFailed(f"the page has no button {label!r}")
        return self._run(widgets=[WidgetState(id=widget_id, trigger_value=True)])

    def _run(self, *, query_string: str = "", page_name: str = "", widgets: Sequence[WidgetState] = ()) -> Render:
        msg = BackMsg()
        msg.rerun_script.query_string = query_string
        msg.rerun_script.page_script_hash = self.page_hash
        msg.rerun_script.page_name = page_name
        msg.rerun_script.widget_states.widgets.extend(widgets)
        msg.rerun_script.cached_message_hashes.extend(self.cached)
        started = time.perf_counter()
        self.ws.send(msg.SerializeToString())
        render = Render(0.0, 0, 0, 0)
        self.alerts = []
        deadline = time.monotonic() + self.timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise RenderFailed(f"no script_finished within {self.timeout_s:.0f} s")
            try:
                data = self.ws.recv(timeout=left)
            except TimeoutError:
                raise RenderFailed(f"no script_finished within {self.timeout_s:.0f} s") from None
            raw = data.encode() if isinstance(data, str) else data
            render.messages += 1
            render.bytes += len(raw)
            fwd = ForwardMsg()
            fwd.ParseFromString(raw)
            kind = fwd.WhichOneof("type")
            if fwd.metadata.cacheable and fwd.hash:
                self.cached[fwd.hash] = None
                while len(self.cached) > MAX_CACHED_MESSAGES:
                    self.cached.pop(next(iter(self.cached)))
            if kind == "new_session":
                self._learn_pages(fwd.new_session.app_pages)
                if not self.page_hash:
                    self.page_hash = fwd.new_session.page_script_hash
            elif kind == "navigation":
                self._learn_pages(fwd.navigation.app_pages)
            elif kind == "delta":
                self._read_delta(fwd, render)
            elif kind == "ref_hash":
                render.references += 1
            elif kind == "page_not_found":
                render.problems.append("page not found")
            elif kind == "script_finished":
                status = fwd.script_finished
                if status == ForwardMsg.FINISHED_WITH_COMPILE_ERROR:
                    render.problems.append("script compile error")
                if status in (ForwardMsg.FINISHED_SUCCESSFULLY, ForwardMsg.FINISHED_WITH_COMPILE_ERROR):
                    break
        render.seconds = time.perf_counter() - started
        return render

    def _learn_pages(self, app_pages: Any) -> None:
        for page in app_pages:
            for name in (page.page_name, page.url_pathname):
                if name:
                    self.pages[name] = page.page_script_hash

    def _read_delta(self, fwd: ForwardMsg, render: Render) -> None:
        delta = fwd.delta
        if delta.WhichOneof("type") != "new_element":
            return
        element = delta.new_element
        kind = element.WhichOneof("type")
        if kind is None:
            return
        render.elements += 1
        body: Any = getattr(element, kind)
        widget_id = getattr(body, "id", "")
        if isinstance(widget_id, str) and widget_id.startswith("$$ID-"):
            self.widgets[widget_id.rsplit("-", 1)[-1]] = widget_id
            label = getattr(body, "label", "")
            if isinstance(label, str) and label:
                self.labels[label] = widget_id
        if kind == "exception":
            render.problems.append(f"exception: {body.type}: {body.message[:160]}")
        elif kind == "alert":
            self.alerts.append(body.body)
            text = body.body.lower()
            if body.format == body.ERROR:
                render.problems.append(f"error banner: {body.body[:160]}")
            elif body.format == body.WARNING and any(m in text for m in TIMEOUT_MARKERS):
                render.problems.append(f"degraded: {body.body[:160]}")


WARM_UP_TIMEOUT_S = 300.0


def warm_up(base_url: str, pages: Sequence[str] = ("Explore", "Map"), timeout_s: float = WARM_UP_TIMEOUT_S) -> float:
    """One visitor opens the home page and each page once with the default filters, as after a server start (the
    database attached, the in-process engine loaded): the seconds it took. Raises RenderFailed when a page fails."""
    started = time.perf_counter()
    tab = Visitor(base_url, timeout_s)
    try:
        for page in ("", *pages):
            render = tab.open_page(page)
            if render.problems:
                raise RenderFailed(f"warm-up of {page or 'the home page'}: {'; '.join(render.problems)}")
    finally:
        tab.close()
    return time.perf_counter() - started


def run_visitors(base_url: str, *, users: int, seconds: float, pages: Sequence[str] = ("Explore", "Map"),
                 think_s: float = 1.0, seed: int = 7, render_timeout_s: float = RENDER_TIMEOUT_S) -> dict[str, Any]:
    """`users` visitors for `seconds`: each opens a page, then alternates changing the Condition filter and
    moving to another of `pages`, pausing a random think time (uniform 0 … 2×think_s) between actions.

    Returns renders, renders per second, p50/p95/max render time, errors (with samples) and per-page stats.
    """
    check_loopback(base_url)
    if not 1 <= users <= MAX_USERS:
        raise BadInput(f"--users must be between 1 and {MAX_USERS}.")
    if not 0 < seconds <= MAX_SECONDS:
        raise BadInput(f"--seconds must be more than 0 and at most {MAX_SECONDS:.0f}.")
    unknown = [p for p in pages if p not in PAGES]
    if not pages or unknown:
        raise BadInput(f"--pages must name some of {', '.join(PAGES)} (not {', '.join(unknown) or 'nothing'}).")
    stats = {f"{p}:{a}": TargetStats() for p in pages for a in ("open", "filter")}
    totals = {"messages": 0, "bytes": 0}
    said = dict.fromkeys(COUNTED_MARKERS, 0)  # renders that showed each marker
    lock = threading.Lock()
    started = time.monotonic()
    deadline = started + seconds

    def record(name: str, render: Render | None, error: str | None) -> None:
        with lock:
            s = stats[name]
            if render is not None:
                totals["messages"] += render.messages
                totals["bytes"] += render.bytes
            if error is None and render is not None and not render.problems:
                s.latencies.append(render.seconds)
                return
            s.errors += 1
            message = error or "; ".join(render.problems if render else [])
            for marker in COUNTED_MARKERS:
                said[marker] += marker in message.lower()
            if len(s.error_samples) < 5:
                s.error_samples.append(message[:240])

    def visitor(index: int) -> None:
        rng = random.Random(seed * 1_000_003 + index)
        time.sleep(rng.uniform(0, min(1.0, seconds / 10)))  # arrivals spread over the first second
        page = pages[index % len(pages)]
        tab: Visitor | None = None
        action = "open"
        while time.monotonic() < deadline:
            name = f"{page}:{action}"
            try:
                if tab is None:
                    tab = Visitor(base_url, render_timeout_s)
                    tab.open_page("")  # the home page first, as a visitor arriving at the site
                    action = "open"
                    name = f"{page}:open"
                    render = tab.open_page(page)
                elif action == "open":
                    render = tab.open_page(page)
                else:
                    render = tab.set_text("flt_condition", rng.choice(CONDITIONS + ("",)))
                record(name, render, None)
            except (RenderFailed, WebSocketException, OSError) as err:
                record(name, None, f"{type(err).__name__}: {err}")
                if tab is not None:
                    tab.close()
                tab = None  # a broken tab is reopened, as a visitor would reload
            if rng.random() < 0.3 and len(pages) > 1:
                page, action = rng.choice([p for p in pages if p != page]), "open"
            else:
                action = "filter"
            pause = rng.uniform(0, 2 * think_s)
            if time.monotonic() + pause >= deadline:
                break
            time.sleep(pause)
        if tab is not None:
            tab.close()

    threads = [threading.Thread(target=visitor, args=(i,), name=f"ws-visitor-{i}", daemon=True)
               for i in range(users)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=max(1.0, deadline - time.monotonic()) + render_timeout_s + 30)
    elapsed = time.monotonic() - started
    everything = TargetStats()
    for s in stats.values():
        everything.latencies.extend(s.latencies)
        everything.errors += s.errors
    renders = len(everything.latencies)
    return {
        "mode": "websocket",
        "users": users,
        "pages": list(pages),
        "seconds": round(elapsed, 2),
        "think_s": think_s,
        "renders": renders,
        "errors": everything.errors,
        "renders_per_s": round(renders / elapsed, 2) if elapsed else 0.0,
        "p50_s": round(percentile(everything.latencies, 50), 3),
        "p95_s": round(percentile(everything.latencies, 95), 3),
        "max_s": round(max(everything.latencies, default=0.0), 3),
        "mb_received": round(totals["bytes"] / 1e6, 1),
        "unfinished_users": sum(t.is_alive() for t in threads),
        "renders_saying": said,
        "targets": {name: s.summary() for name, s in stats.items() if s.latencies or s.errors},
    }
