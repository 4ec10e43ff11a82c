"""The server's doors (services/ui/doors.py, app.py) on a real `streamlit run app.py` with a password.

The server gets HTTP_PROXY/HTTPS_PROXY pointing at a local proxy that logs every connection and never
answers: a request for another host would show up there (and hang). Foreign-origin WebSocket handshakes are
refused without a look-up while /_stcore/health stays fast; without the password, upload PUTs,
/_stcore/metrics and WebSocket messages beyond the sign-in form are refused; /readyz names no path.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import socket
import statistics
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.testing.v1 import AppTest
from websockets.sync.client import connect

from devtools.commands.bench_load_cmd import stop_process
from services import access, settings
from services.ui import doors
from tests.test_browser import PASSWORD, _env, _start_streamlit

PROJECT = Path(__file__).resolve().parent.parent
FOREIGN = "http://evil.example"


# ---- pure logic --------------------------------------------------------------------------------------------
def test_doors_origin_verdict_keeps_this_host_and_loopback_and_refuses_the_rest():
    early = frozenset({"localhost", "127.0.0.1", "0.0.0.0", "trials.example.org"})
    listed = frozenset({"x.org"})
    host = "10.0.0.5:8501"
    assert [doors.origin_verdict(o, host, early, listed) for o in (
        "http://10.0.0.5:8501", "http://localhost:3000", "https://trials.example.org", "https://x.org",
        FOREIGN, "null", "http://10.0.0.5:9999", "http://[::1]:8501")] == [
        "http://10.0.0.5:8501", "http://localhost:3000", "https://trials.example.org",
        "https://10.0.0.5:8501", None, None, None, None]


def test_doors_client_address_believes_forwarded_for_only_from_a_trusted_proxy():
    with pytest.raises(settings.SettingsError, match="^TRUSTED_PROXY="):
        settings.read({"TRUSTED_PROXY": "10.0.0.2, not-an-address"})
    trusted = settings.read({"TRUSTED_PROXY": "10.0.0.2, 192.168.0.0/24"}).proxies
    assert len(trusted) == 2
    assert [
        access.client_address("203.0.113.9", "198.51.100.1", trusted),              # not from the proxy
        access.client_address("10.0.0.2", "198.51.100.1", trusted),                 # from the proxy
        access.client_address("10.0.0.2", "6.6.6.6, 198.51.100.1", trusted),        # forged entry ignored
        access.client_address("10.0.0.2", "198.51.100.1, 192.168.0.7", trusted),    # two proxies
        access.client_address("10.0.0.2", "", trusted),                             # proxy without the header
        access.client_address("10.0.0.2", "garbage, 192.168.0.7", trusted),         # malformed: nearest proxy
        access.client_address("10.0.0.2", "198.51.100.1", ()),                      # no trusted proxy set
    ] == ["203.0.113.9", "198.51.100.1", "198.51.100.1", "198.51.100.1", "10.0.0.2", "192.168.0.7",
          "10.0.0.2"]


def test_doors_media_owners_serve_only_the_owning_browser_and_withdraw_at_forget():
    owners = access.MediaOwners()
    owners.bind("tab-a", "browser-a")
    owners.bind("tab-a2", "browser-a")
    owners.bind("tab-b", "browser-b")
    owners.add("tab-a", "report")
    owners.add("tab-a2", "placeholder")
    owners.add("", "clicked", like="placeholder")
    owners.add("tab-b", "template")
    owners.add("tab-a", "template")
    served = [owners.may_serve("report", t, gated=True) for t in ("browser-a", "browser-b", "")]
    assert served == [True, False, False]
    assert owners.may_serve("clicked", "browser-a", gated=True) is True
    assert owners.may_serve("unknown", "x", gated=True) is None
    assert sorted(owners.forget_session("tab-a")) == ["report"]  # the template is still tab-b's
    assert [owners.may_serve(f, "browser-a", gated=True) for f in ("report", "template")] == [False, False]
    assert owners.may_serve("template", "browser-b", gated=True) is True


def _one_filter_widget() -> None:
    import streamlit as st

    from services.ui import state

    st.text_input("Condition", key="flt_condition",
                  on_change=lambda: st.session_state.update(got=state.filters_from_widgets("flt_")[0]))


def test_doors_crafted_widget_state_for_a_key_the_page_did_not_create_is_ignored():
    # A crafted client sent the sidebar's condition box on a run where the other filter widgets did not exist:
    # the callback read st.session_state["flt_intervention"] and raised KeyError (264 tracebacks in issue 40).
    at = AppTest.from_function(_one_filter_widget, default_timeout=60).run()
    at.text_input(key="flt_condition").input("lymphoma").run()
    assert not at.exception
    assert (at.session_state["got"].condition, at.session_state["got"].intervention) == ("lymphoma", None)


# ---- a real server -----------------------------------------------------------------------------------------
@dataclass
class SilentProxy:
    """A TCP listener that logs each connection and never answers (egress blocked, but visible)."""

    port: int
    attempts: list[str] = field(default_factory=list)


@pytest.fixture(scope="module")
def proxy() -> Iterator[SilentProxy]:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    found = SilentProxy(listener.getsockname()[1])
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            conn.settimeout(0.5)
            try:
                first = conn.recv(200).split(b"\r\n", 1)[0].decode("latin-1", "replace")
            except OSError:
                first = "(nothing read)"
            found.attempts.append(first)
            held.append(conn)  # never answered: the client waits for its own time-out

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield found
    stop.set()
    listener.close()
    thread.join(timeout=5)
    for conn in held:
        conn.close()


@pytest.fixture(scope="module")
def served(db, proxy: SilentProxy) -> Iterator[str]:  # noqa: ANN001 - the session database must exist first
    address = f"http://127.0.0.1:{proxy.port}"
    env = _env(APP_PASSWORD=PASSWORD, HTTP_PROXY=address, HTTPS_PROXY=address, http_proxy=address,
               https_proxy=address, NO_PROXY="", no_proxy="")
    proc, url, log = _start_streamlit(env)
    yield url
    stop_process(proc)
    print(log.read_text()[-4000:])


def _get(url: str, method: str = "GET", data: bytes | None = None,
         headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(url, data=data, method=method, headers=headers or {})  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 - loopback test server
            return response.status, response.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def _handshake(base: str, origin: str) -> str:
    """One raw WebSocket handshake to /_stcore/stream; the status line of the answer."""
    host = base.split("//", 1)[1]
    name, port = host.split(":")
    with socket.create_connection((name, int(port)), timeout=30) as sock:
        sock.sendall((f"GET /_stcore/stream HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\n"
                      "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                      "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: streamlit\r\n"
                      f"Origin: {origin}\r\n\r\n")
                     .encode())
        return sock.recv(200).split(b"\r\n", 1)[0].decode()


def _wait_ready(served: str) -> None:
    deadline = time.monotonic() + 180
    while _get(served + "/readyz")[0] != 200:
        assert time.monotonic() < deadline, "/readyz never answered 200"
        time.sleep(0.5)


def _health_p95(served: str, busy: Callable[[], Any] | None = None, probes: int = 20) -> tuple[float, int]:
    """p95 of /_stcore/health's answer time over `probes` probes, or over the time `busy` runs (at least that
    many); and the number of probes."""
    times: list[float] = []
    done = threading.Event()

    def probe() -> None:
        while not done.is_set() or len(times) < probes:
            start = time.monotonic()
            assert _get(served + "/_stcore/health")[0] == 200
            times.append(time.monotonic() - start)

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        prober = pool.submit(probe)
        if busy is not None:
            busy()
        done.set()
        prober.result(timeout=300)
    return statistics.quantiles(times, n=20)[-1], len(times)


def test_doors_foreign_origin_handshakes_are_refused_without_a_lookup(served: str, proxy: SilentProxy):
    # Streamlit's own check looked up its external address through the proxy (1 s time-out, then https) on the
    # event loop for each foreign handshake: 15 of them stalled /_stcore/health to 6 s.
    host = served.split("//", 1)[1]
    assert _handshake(served, f"http://{host}").endswith("101 Switching Protocols")  # same origin still opens
    _wait_ready(served)  # the server's start-up work is done
    quiet, _ = _health_p95(served)
    answers: list[str] = []

    def handshakes() -> None:
        with concurrent.futures.ThreadPoolExecutor(max_workers=10) as pool:
            answers.extend(pool.map(lambda _: _handshake(served, FOREIGN), range(50)))

    during, probes = _health_p95(served, handshakes)
    assert sorted(set(answers)) == ["HTTP/1.1 403 Forbidden"] and len(answers) == 50
    # 0.3 s on a quiet machine; on a shared, loaded one the same server's quiet p95 sets the bar (twice it).
    bar = max(0.3, 2 * quiet)
    print(f"/_stcore/health p95: {quiet:.3f} s quiet, {during:.3f} s during 50 foreign handshakes "
          f"({probes} probes)")
    assert during < bar, f"/_stcore/health p95 {during:.3f} s during the handshakes, {quiet:.3f} s quiet"
    assert proxy.attempts == []


def test_doors_without_the_password_uploads_metrics_and_paths_stay_shut(served: str):
    assert _get(served + "/_stcore/metrics")[0] == 403
    status, _ = _get(served + "/_stcore/upload_file/some-session/some-file", "PUT", b"x" * 1000,
                     {"Content-Type": "application/octet-stream"})
    assert status == 403
    _wait_ready(served)
    status, body = _get(served + "/readyz")
    verdict = json.loads(body)
    assert status == 200 and set(verdict) == {"ready", "latency_ms"} and verdict["ready"] is True
    assert os.environ["TRIAL_LANDSCAPE_DATA_DIR"] not in body.decode() and "/" not in body.decode()


def _frames(ws: Any, until: str) -> list[str]:  # noqa: ANN401
    """The ForwardMsg types the server sends until one of type `until`."""
    seen: list[str] = []
    while until not in seen:
        msg = ForwardMsg()
        msg.ParseFromString(ws.recv(timeout=120))
        seen.append(str(msg.WhichOneof("type")))
    return seen


def test_doors_a_client_that_never_signed_in_gets_no_upload_urls(served: str):
    host = served.split("//", 1)[1]
    with connect(f"ws://{host}/_stcore/stream", origin=f"http://{host}",  # type: ignore[arg-type]
                 subprotocols=["streamlit"]) as ws:  # type: ignore[list-item]
        start = BackMsg()
        start.rerun_script.query_string = ""
        ws.send(start.SerializeToString())
        _frames(ws, "script_finished")  # the sign-in form
        ask = BackMsg()
        ask.file_urls_request.request_id = "r1"
        ask.file_urls_request.file_names.extend(["a.bin"] * 4)
        ws.send(ask.SerializeToString())
        beat = BackMsg()
        beat.app_heartbeat = True
        ws.send(beat.SerializeToString())
        # Messages of one connection are handled in order, each answered at once: upload URLs would come
        # before
        # the heartbeat's acknowledgement.
        assert "file_urls_response" not in _frames(ws, "heartbeat_ack")


def _failing_page() -> None:
    import app

    app.page_error(ValueError("diagnosis of a patient"))


def test_doors_page_errors_show_a_reference_not_the_error_and_the_config_hides_details(caplog):
    import tomllib

    shipped = tomllib.loads((PROJECT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert shipped["client"]["showErrorDetails"] == "none"
    assert shipped["browser"]["serverAddress"] == "localhost"
    at = AppTest.from_function(_failing_page, default_timeout=60).run()
    [shown] = [e.value for e in at.error]
    assert shown.startswith("Something went wrong on this page (reference ") and "diagnosis" not in shown
    ref = shown.split("reference ", 1)[1][:8]
    assert f"page error {ref}: ValueError" in caplog.text
