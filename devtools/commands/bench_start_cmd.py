"""`python -m services bench start`: how long a newcomer waits — first start, later start, a fully drawn Explore.

Runs the README's `streamlit run app.py` against a data folder and watches it from headless Chromium (Playwright,
a dev requirement): the seconds from launching the server until its health check answers, until Home shows its
numbers, and until Explore has drawn every chart with the script finished. Without --data-dir the first run uses
a fresh folder (the first start: database, sample, geocoding) and the second run the same folder again (a later
start). --synthetic serves the generator's registry-scale database (nothing is wiped), with the in-process engine's
start cache kept or, with --stale-cache, its folder removed before each start (the server fetches the database's
copy of it), or with --without-database-copy too (the arrays load by COPY while SQL serves; the landing view, stored
with its generation, shows at once), or with --without-landing-view as well (SQL computes it). --busy keeps one core
busy with a spinning process for the whole measurement, as on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from devtools.commands.bench_load_cmd import PROJECT_DIR, free_port, stop_process
from services.errors import BadInput, TrialLandscapeError

CHROMIUM = "/usr/bin/chromium"
START_TIMEOUT_S = 1800.0  # a first start on a busy 2-core machine takes minutes
PAGE_TIMEOUT_MS = 600_000
SETTLED_S = 1.0
ALL_CHARTS_DRAWN = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  const plots = [...document.querySelectorAll('.js-plotly-plot')];
  return !!app && app.getAttribute('data-test-script-state') === 'notRunning'
    && !document.querySelector('[data-testid="stStatusWidget"]')
    && plots.length > 0 && plots.every(p => p.querySelector('g.trace'));
}"""


def register_bench(bench_subparsers: Any) -> None:
    """Add `start` under `bench`."""
    parser: argparse.ArgumentParser = bench_subparsers.add_parser(
        "start",
        help="first and later start of `streamlit run app.py`, and a fully drawn Explore, seen from Chromium",
        description="Start the app as the README says and time, in headless Chromium, the health check, Home "
        "with its numbers and Explore with every chart drawn. Without --data-dir: a first start in a fresh "
        "folder, then a later start in the same folder.",
    )
    parser.add_argument("--data-dir", type=Path,
                        help="time later starts of this data folder only (default: a fresh folder, first + later)")
    parser.add_argument("--synthetic", action="store_true",
                        help="serve the generator's database (python -m services synth; its data folder from "
                             "TRIAL_LANDSCAPE_DATA_DIR) instead of the data folder's own: registry-scale starts")
    parser.add_argument("--stale-cache", action="store_true",
                        help="remove the in-process engine's start cache before each start (a start after new data: "
                             "SQL serves while the arrays load in the background); default: keep it")
    parser.add_argument("--without-database-copy", action="store_true",
                        help="with --stale-cache: remove the database's copy of the start cache too (a database "
                             "whose arrays no one has built yet: they load by COPY while SQL serves)")
    parser.add_argument("--without-landing-view", action="store_true",
                        help="with --without-database-copy: remove the stored landing view too (app.landing, which "
                             "an import writes): SQL computes the first Explore while the arrays load")
    parser.add_argument("--runs", type=int, default=1, help="later starts to time (default: %(default)s)")
    parser.add_argument("--explore-first", action="store_true",
                        help="open Explore straight away (a shared Explore link) instead of Home, then Explore")
    parser.add_argument("--busy", action="store_true", help="keep one core busy during the measurement")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    if not Path(CHROMIUM).exists():
        raise BadInput(f"{CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium).")
    if args.without_database_copy and not args.stale_cache:
        raise BadInput("--without-database-copy goes with --stale-cache.")
    if args.without_landing_view and not args.without_database_copy:
        raise BadInput("--without-landing-view goes with --without-database-copy.")
    if not 1 <= args.runs <= 10:
        raise BadInput("--runs must be between 1 and 10.")
    load_before = os.getloadavg()[0]  # other work on the machine, before this benchmark adds its own
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if args.busy else None
    try:
        runs: list[dict[str, Any]] = []
        if args.synthetic or args.stale_cache:
            runs += _registry_starts(args)
        elif args.data_dir is None:
            with tempfile.TemporaryDirectory(prefix="bench-start-") as tmp:
                # A newcomer's machine has no cache either: the gazetteer is built in the first start.
                fresh = {"TRIAL_LANDSCAPE_CACHE_DIR": str(Path(tmp) / "cache")}
                runs.append(time_start(Path(tmp) / "data", "first", fresh))
                runs += [time_start(Path(tmp) / "data", "later", fresh) for _ in range(args.runs)]
        else:
            runs += [time_start(args.data_dir, "later", explore_first=args.explore_first) for _ in range(args.runs)]
    finally:
        if spinner is not None:
            stop_process(spinner)
    result = {"busy": args.busy, "cpus": os.cpu_count(), "load_before": load_before,
              "load_after": os.getloadavg()[0], "runs": runs}
    print(json.dumps(result, indent=2) if args.json else _text(result))
    return 0


def _registry_starts(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Later starts on the synthetic database (or the data folder's own), with the start cache kept or removed."""
    import shutil

    from devtools import synth
    from services.dashboard import facetstore
    from services.data import embedded, runtime

    if args.synthetic:
        db = synth.synthetic_database(None)  # started here: the server runs while this process holds it
        extra = {"DATABASE_URL": db.url}
    else:
        db = runtime.get_db()
        extra = {}
    data_dir = args.data_dir or embedded.data_dir()
    root = facetstore.cache_root(db)
    runs = []
    for _ in range(args.runs):
        if args.stale_cache and root.exists():
            shutil.rmtree(root)
        if args.stale_cache and args.without_database_copy:
            db.execute("DELETE FROM app.facet_copy")
        if args.without_landing_view:
            db.execute("DELETE FROM app.landing")
        cached = root.exists() and any(root.glob("*/manifest.json"))
        kind = ("cache" if not args.stale_cache else "db copy only" if not args.without_database_copy
                else "nothing stored" if args.without_landing_view else "no cache")
        run = time_start(data_dir, kind, extra,
                         explore_first=args.explore_first)
        run["cache_present"] = cached
        run["cache_after"] = root.exists() and any(root.glob("*/manifest.json"))
        runs.append(run)
    return runs


def time_start(data_dir: Path, kind: str, extra_env: dict[str, str] | None = None, *,
               explore_first: bool = False) -> dict[str, Any]:
    """Launch the server on `data_dir` and time what a visitor sees (Home, then Explore; or Explore straight away
    with `explore_first`); stop it again."""
    from playwright.sync_api import sync_playwright

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "APP_PASSWORD", "ANTHROPIC_API_KEY")}
    env["TRIAL_LANDSCAPE_DATA_DIR"] = str(data_dir)
    env.update(extra_env or {})
    cmd = [sys.executable, "-m", "streamlit", "run", str(PROJECT_DIR / "app.py"), "--server.port", str(port),
           "--server.address", "127.0.0.1", "--server.headless", "true", "--browser.gatherUsageStats", "false"]
    with sync_playwright() as pw:
        # The visitor's browser is running before the server starts: its own start is not the app's.
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(PAGE_TIMEOUT_MS)
            t0 = time.monotonic()
            proc = subprocess.Popen(cmd, cwd=PROJECT_DIR, env=env, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
            try:
                _wait_healthy(url, proc, t0)
                health_s = time.monotonic() - t0
                home_s: float | None = None
                if not explore_first:
                    page.goto(url, timeout=PAGE_TIMEOUT_MS)
                    page.get_by_text("Where to go").wait_for()
                    page.locator('[data-testid="stMetric"]').first.wait_for()
                    home_s = time.monotonic() - t0
                t1 = time.monotonic()
                page.goto(url + "/Explore", timeout=PAGE_TIMEOUT_MS)
                settled = _settled_at(page)
                explore_s, to_explore_s = settled - t1, settled - t0
                charts = page.locator(".js-plotly-plot").count()
            finally:
                stop_process(proc)
        finally:
            browser.close()
    return {"kind": kind, "health_s": round(health_s, 1), "home_s": None if home_s is None else round(home_s, 1),
            "explore_s": round(explore_s, 1), "start_to_explore_s": round(to_explore_s, 1), "charts": charts,
            "load_after": round(os.getloadavg()[0], 2)}


def _wait_healthy(url: str, proc: subprocess.Popen[Any], t0: float) -> None:
    from devtools.loadtest import http_get

    while True:
        if proc.poll() is not None:
            raise TrialLandscapeError(f"The Streamlit server exited at start (code {proc.returncode}).")
        try:
            http_get(f"{url}/_stcore/health", timeout_s=2)
            return
        except OSError:
            if time.monotonic() - t0 > START_TIMEOUT_S:
                raise TrialLandscapeError("The Streamlit server did not answer its health check in time.") from None
            time.sleep(0.2)


def _settled_at(page: Any) -> float:
    """When every chart was drawn with the script finished — a state that then held for SETTLED_S (a run may ask
    for another), so the hold itself is not counted."""
    deadline = time.monotonic() + PAGE_TIMEOUT_MS / 1000
    since = None
    while time.monotonic() < deadline:
        if page.evaluate(ALL_CHARTS_DRAWN):
            since = since or time.monotonic()
            if time.monotonic() - since >= SETTLED_S:
                return since
        else:
            since = None
        page.wait_for_timeout(100)
    raise TrialLandscapeError("Explore did not finish drawing in time.")


def _text(result: dict[str, Any]) -> str:
    lines = [f"{'one core kept busy' if result['busy'] else 'no load added'} ({result['cpus']} CPUs, load average "
             f"{result['load_before']:.1f} before, {result.get('load_after', 0.0):.1f} after): seconds from "
             "`streamlit run app.py`"]
    lines.append(f"  {'start':<14} {'health':>7} {'Home':>7} {'Explore':>8} {'total':>6} charts")
    for r in result["runs"]:
        lines.append(f"  {r['kind']:<14} {r['health_s']:>7} {r['home_s'] or '-':>7} {r['explore_s']:>8} "
                     f"{r['start_to_explore_s']:>6} {r['charts']:>6}")
    lines.append("  (Explore: from opening it (after Home, unless Home shows '-') until every chart is drawn and the "
                 "script has finished)")
    return "\n".join(lines)
