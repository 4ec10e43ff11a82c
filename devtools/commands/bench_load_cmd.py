"""`python -m services bench load`: concurrent simulated users against the dashboard service (and HTTP)."""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from services.errors import BadInput, TrialLandscapeError

PROJECT_DIR = Path(__file__).resolve().parents[2]
SERVER_START_TIMEOUT_S = 120.0


def register_bench(bench_subparsers: Any) -> None:
    """Add `load` under `bench`."""
    parser: argparse.ArgumentParser = bench_subparsers.add_parser(
        "load",
        help="simulated concurrent users with random filters; p50/p95 latency and errors",
        description="Threads play users who open dashboards for random filters (through the shared "
        "cross-user cache unless --no-cache) and, with --url or --serve, also fetch a Streamlit server's "
        "health endpoint and page. Loopback only; every loop stops at the deadline.",
    )
    parser.add_argument("--users", type=int, default=30, help="concurrent users (default: %(default)s)")
    parser.add_argument("--seconds", type=float, default=60.0, help="duration (default: %(default)s)")
    parser.add_argument("--think-ms", type=float, default=1000.0,
                        help="mean pause between a user's actions, uniform 0…2×mean (default: %(default)s)")
    parser.add_argument("--views", type=int, default=60,
                        help="distinct filters the users choose from, by Zipf popularity; 0 = a new random "
                        "filter every time (default: %(default)s)")
    parser.add_argument("--no-cache", action="store_true", help="compute every dashboard (no shared cache)")
    parser.add_argument("--seed", type=int, default=7, help="random seed of the users' filters")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--url", help="also load a running Streamlit server at this loopback URL")
    group.add_argument("--serve", action="store_true",
                       help="start a Streamlit server of this app on a free loopback port and load it too")
    parser.add_argument("--protocol", action="store_true",
                        help="drive the real server (--url or --serve) through Streamlit's WebSocket protocol: "
                        "visitors open pages and change the Condition filter; reports renders per second, "
                        "p50/p95 render time and errors")
    parser.add_argument("--pages", default="Explore,Map",
                        help="with --protocol: the pages visitors move between (default: %(default)s)")
    parser.add_argument("--app-dir", action="append", type=Path, metavar="DIR",
                        help="with --protocol --serve: serve the checkout in DIR (default: this one); give it more "
                        "than once to run the same load against each checkout in turn — e.g. a worktree of an "
                        "older commit, then this one — and print them side by side")
    parser.add_argument("--pid", type=int,
                        help="with --protocol --url: the server's process id, to report its CPU seconds per render")
    parser.add_argument("--no-warm-up", action="store_true",
                        help="with --protocol: start the clock at once (default: one visitor first opens every "
                        "page and the server is left to finish its start-up work)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.set_defaults(handler=handle)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def streamlit_server(port: int | None = None) -> Iterator[str]:
    """Run `streamlit run app.py` on 127.0.0.1 (this process's environment) until the block ends; yield its URL."""
    with served_app(port=port) as (url, _proc):
        yield url


@contextlib.contextmanager
def served_app(app_dir: Path = PROJECT_DIR, port: int | None = None) -> Iterator[tuple[str, subprocess.Popen[Any]]]:
    """Run `streamlit run app.py` of the checkout app_dir on 127.0.0.1 until the block ends; yield URL and process.

    Another checkout (e.g. a worktree of an older commit, for a before/after run) reads this checkout's embedded
    database unless TRIAL_LANDSCAPE_DATA_DIR or DATABASE_URL says otherwise, so both serve the same data.
    """
    from devtools.loadtest import http_get
    from services.data import embedded

    app_dir = Path(app_dir).resolve()
    if not (app_dir / "app.py").is_file():
        raise BadInput(f"{app_dir} holds no app.py: give the folder of a checkout of this project.")
    port = port or free_port()
    url = f"http://127.0.0.1:{port}"
    cmd = [sys.executable, "-m", "streamlit", "run", str(app_dir / "app.py"), "--server.port", str(port),
           "--server.address", "127.0.0.1", "--server.headless", "true", "--browser.gatherUsageStats", "false"]
    env = dict(os.environ)
    env.setdefault("TRIAL_LANDSCAPE_DATA_DIR", str(embedded.data_dir()))
    proc = subprocess.Popen(cmd, cwd=app_dir, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                raise TrialLandscapeError(f"The Streamlit server exited at start (code {proc.returncode}).")
            try:
                http_get(f"{url}/_stcore/health", timeout_s=2)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise TrialLandscapeError("The Streamlit server did not answer its health check in time.") from None
                time.sleep(0.5)
        yield url, proc
    finally:
        stop_process(proc)


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds a process has used so far (None where /proc cannot tell)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


SETTLE_CPU_SHARE = 0.1
SETTLE_TIMEOUT_S = 120.0


def wait_until_idle(pid: int, timeout_s: float = SETTLE_TIMEOUT_S) -> float:
    """Wait until the process uses under 10% of a core over a second (its start-up work done); the seconds waited."""
    started = time.monotonic()
    last = cpu_seconds(pid)
    while last is not None and time.monotonic() - started < timeout_s:
        time.sleep(1.0)
        now = cpu_seconds(pid)
        if now is None or now - last < SETTLE_CPU_SHARE:
            break
        last = now
    return time.monotonic() - started


def stop_process(proc: subprocess.Popen[Any]) -> None:
    """Ask a child process to stop; kill it when it has not stopped after 20 s."""
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


def _text(result: dict[str, Any]) -> str:
    lines = [f"{result['users']} users for {result['seconds']} s (think {result['think_s']} s, views "
             f"{result['views']}): "
             f"{result['requests']} requests, {result['errors']} errors, p50 {result['p50_s']} s, "
             f"p95 {result['p95_s']} s"]
    for name, s in result["targets"].items():
        lines.append(f"  {name:<14} {s['requests']:>7} requests  {s['errors']:>4} errors  "
                     f"p50 {s['p50_s']:.4f} s  p95 {s['p95_s']:.4f} s  max {s['max_s']:.4f} s")
    if "cache" in result:
        c = result["cache"]
        lines.append(f"  dashboard cache: {c['computations']} computations, {c['hits']} hits, "
                     f"{c['shared']} waited for another user's computation")
    return "\n".join(lines)


def _protocol_text(result: dict[str, Any]) -> str:
    if "runs" in result:
        return _comparison_text(result)
    lines = [f"{result['users']} visitors on {', '.join(result['pages'])} for {result['seconds']} s "
             f"(think {result['think_s']} s, Streamlit WebSocket protocol): {result['renders']} renders "
             f"({result['renders_per_s']}/s), {result['errors']} errors, p50 {result['p50_s']} s, "
             f"p95 {result['p95_s']} s, max {result['max_s']} s, {result['mb_received']} MB received"]
    if result.get("app"):
        lines[0] = f"[{result['app']}] " + lines[0]
    if result.get("cpu_s_per_render") is not None:
        lines.append(f"  server CPU: {result['server_cpu_s']} s, {result['cpu_s_per_render']} s per render")
    for name, s in result["targets"].items():
        lines.append(f"  {name:<16} {s['requests']:>6} renders  {s['errors']:>4} errors  "
                     f"p50 {s['p50_s']:.3f} s  p95 {s['p95_s']:.3f} s  max {s['max_s']:.3f} s")
        for sample in s.get("error_samples", [])[:2]:
            lines.append(f"      e.g. {sample}")
    if "load_average" in result:
        lines.append(f"  load average before/after: {result['load_average']}")
    return "\n".join(lines)


def _comparison_text(result: dict[str, Any]) -> str:
    parts = [_protocol_text(run) for run in result["runs"]]
    head = (f"{'app':<28} {'renders':>7} {'per s':>6} {'p50 s':>7} {'p95 s':>7} {'max s':>7} {'errors':>6} "
            f"{'CPU s/render':>12}  load before/after")
    rows = [head]
    for run in result["runs"]:
        cpu = run.get("cpu_s_per_render")
        rows.append(f"{run['app'][:28]:<28} {run['renders']:>7} {run['renders_per_s']:>6} {run['p50_s']:>7} "
                    f"{run['p95_s']:>7} {run['max_s']:>7} {run['errors']:>6} {'—' if cpu is None else cpu:>12}  "
                    f"{run['load_average']}")
    return "\n\n".join(parts) + "\n\n" + "\n".join(rows)


def _app_label(app_dir: Path) -> str:
    """The checkout's folder name and commit, with a + when it has uncommitted changes."""
    def git(*argv: str) -> str:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            return subprocess.run(["git", "-C", str(app_dir), *argv], capture_output=True, text=True, timeout=10,
                                  check=False).stdout.strip()
        return ""

    commit = git("rev-parse", "--short", "HEAD")
    dirty = "+" if commit and git("status", "--porcelain", "--untracked-files=no") else ""
    return f"{app_dir.name}@{commit}{dirty}" if commit else app_dir.name


def _measure(url: str, pid: int | None, args: argparse.Namespace, pages: tuple[str, ...]) -> dict[str, Any]:
    """Warm the server up (unless told not to), then the visitors' run, with load average and server CPU."""
    from devtools import loadtest_ws

    warm = None
    if not args.no_warm_up:
        warm = loadtest_ws.warm_up(url, pages)
        if pid is not None:
            wait_until_idle(pid)
    load_before = os.getloadavg()[0]
    cpu_before = cpu_seconds(pid) if pid is not None else None
    result = loadtest_ws.run_visitors(url, users=args.users, seconds=args.seconds, pages=pages,
                                      think_s=args.think_ms / 1000, seed=args.seed)
    cpu_after = cpu_seconds(pid) if pid is not None else None
    result["load_average"] = " / ".join(f"{a:.1f}" for a in (load_before, os.getloadavg()[0]))
    result["warm_up_s"] = None if warm is None else round(warm, 2)
    if cpu_before is not None and cpu_after is not None:
        result["server_cpu_s"] = round(cpu_after - cpu_before, 1)
        result["cpu_s_per_render"] = round((cpu_after - cpu_before) / result["renders"], 3) if result["renders"] else None
    return result


def _handle_protocol(args: argparse.Namespace) -> int:
    from services.cli import print_result

    if not (args.url or args.serve):
        raise BadInput("--protocol needs a server: give --url or --serve.")
    if args.app_dir and not args.serve:
        raise BadInput("--app-dir goes with --serve.")
    if args.pid is not None and not args.url:
        raise BadInput("--pid goes with --url (with --serve the benchmark knows its server).")
    pages = tuple(p.strip() for p in args.pages.split(",") if p.strip())
    if args.url:
        result = _measure(args.url, args.pid, args, pages)
    else:
        runs = []
        for app_dir in args.app_dir or [PROJECT_DIR]:
            with served_app(app_dir) as (url, proc):
                run = _measure(url, proc.pid, args, pages)
            run["app"] = _app_label(Path(app_dir).resolve())
            runs.append(run)
        result = runs[0] if len(runs) == 1 else {"runs": runs, "errors": sum(r["errors"] for r in runs)}
    print_result(result, args.json, _protocol_text)
    return 1 if result["errors"] else 0


def handle(args: argparse.Namespace) -> int:
    """Run the load test and print its measurements; exit 1 when any request failed."""
    from devtools import loadtest
    from services.cli import print_result
    from services.dashboard import stats
    from services.data import runtime

    if args.url:
        loadtest.check_loopback(args.url)
    if args.think_ms < 0:
        raise BadInput("--think-ms cannot be negative.")
    if args.protocol:
        return _handle_protocol(args)
    if args.think_ms < 0:
        raise BadInput("--think-ms cannot be negative.")
    # Start/attach the database and load the in-process engine before the clock starts, as the server does.
    stats.warm_engine(runtime.get_db())
    if args.views < 0:
        raise BadInput("--views cannot be negative.")
    views = loadtest.view_pool(args.views, args.seed) if args.views else None
    targets = {"dashboard": loadtest.dashboard_request(views, use_cache=not args.no_cache)}
    before = stats.dashboard_cache_stats()
    with contextlib.ExitStack() as stack:
        url = stack.enter_context(streamlit_server()) if args.serve else args.url
        if url:
            targets.update(loadtest.http_requests(url))
        result = loadtest.run_load(targets, users=args.users, seconds=args.seconds, think_s=args.think_ms / 1000,
                                   seed=args.seed)
    if not args.no_cache:
        after = stats.dashboard_cache_stats()
        result["cache"] = {"computations": after.computations - before.computations,
                           "hits": after.hits - before.hits, "shared": after.shared - before.shared}
    result["views"] = len(views) if views else "random"
    result["database"] = runtime.get_db().label
    print_result(result, args.json, _text)
    return 1 if result["errors"] else 0
