"""Peak memory of a process serving the dashboard, measured apart from any benchmark's own baggage.

A child Python process (this module run with `--child`) points the app at one database and renders the
app's own Explore and Map page scripts (Streamlit AppTest, in that process) once per benchmark filter, as a
server would for a visitor. It then reports its high-water mark of resident memory (VmHWM). The facet
store loads in that process on the first page, exactly as in `streamlit run app.py`.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from devtools.bench import DASHBOARD_FILTERS
from services.errors import BadInput, TrialLandscapeError

PROJECT = Path(__file__).resolve().parent.parent
PAGES = ("app_pages/explore.py", "app_pages/map.py")
PAGE_TIMEOUT_S = 900  # the first page also loads the facet store
MEMORY_TARGET_MB = 1024


def _rss_mb() -> tuple[float, float]:
    """(current, peak) resident memory of this process in MB (from /proc where it exists)."""
    try:
        fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines()
                      if ":" in line)
        return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024
    except (OSError, KeyError, ValueError):
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        return peak, peak


def serve_pages(filters: Sequence[tuple[str, str]] = DASHBOARD_FILTERS) -> dict[str, Any]:
    """Render every page for every filter in this process; its timings and memory (run in the child)."""
    from streamlit.testing.v1 import AppTest

    from services.data import geo

    geo.warm_up()
    baseline_mb, _ = _rss_mb()
    pages = []
    for name, query in filters:
        for page in PAGES:
            at = AppTest.from_file(str(PROJECT / page), default_timeout=PAGE_TIMEOUT_S)
            for key, value in parse_qsl(query, keep_blank_values=True):
                at.query_params[key] = value
            started = time.perf_counter()
            at.run()
            rss, peak = _rss_mb()
            pages.append({"filter": name, "page": page, "seconds": round(time.perf_counter() - started, 2),
                          "errors": [str(e.value) for e in at.exception], "rss_mb": round(rss, 1),
                          "peak_mb": round(peak, 1)})
    rss, peak = _rss_mb()
    return {"baseline_rss_mb": round(baseline_mb, 1), "final_rss_mb": round(rss, 1), "peak_rss_mb": round(peak, 1),
            "pages": pages}


def run(database_url: str, *, names: Sequence[str] = (), timeout_s: float = 3600) -> dict[str, Any]:
    """Measure a fresh serving process against `database_url` (the named benchmark filters, default all)."""
    unknown = set(names) - {name for name, _ in DASHBOARD_FILTERS}
    if unknown:
        raise BadInput(f"unknown filter name(s): {', '.join(sorted(unknown))}")
    env = dict(os.environ, DATABASE_URL=database_url, PYTHONUNBUFFERED="1")
    proc = subprocess.run([sys.executable, "-m", "devtools.bench_memory", "--child", *names], cwd=PROJECT,
                          env=env, capture_output=True, text=True, timeout=timeout_s, check=False)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise TrialLandscapeError(f"the serving process failed (exit {proc.returncode}): "
                                  f"{(proc.stderr or proc.stdout).strip()[-800:]}")
    result: dict[str, Any] = json.loads(lines[-1])
    result["target_mb"] = MEMORY_TARGET_MB
    result["ok"] = result["peak_rss_mb"] <= MEMORY_TARGET_MB and not any(p["errors"] for p in result["pages"])
    return result


def table(result: dict[str, Any]) -> str:
    """The measurement as plain text."""
    lines = [f"{'filter':<24}{'page':<22}{'seconds':>8}{'RSS MB':>9}{'peak MB':>9}  errors"]
    for p in result["pages"]:
        lines.append(f"{p['filter']:<24}{p['page']:<22}{p['seconds']:>8.2f}{p['rss_mb']:>9.0f}{p['peak_mb']:>9.0f}  "
                     + ("; ".join(p["errors"]) or "-"))
    lines.append(f"serving process: after imports {result['baseline_rss_mb']:.0f} MB · at the end "
                 f"{result['final_rss_mb']:.0f} MB · peak {result['peak_rss_mb']:.0f} MB "
                 f"(target ≤ {result['target_mb']} MB: {'met' if result['ok'] else 'MISSED'})")
    return "\n".join(lines)


if __name__ == "__main__" and sys.argv[1:2] == ["--child"]:
    wanted = set(sys.argv[2:])
    print(json.dumps(serve_pages([(n, q) for n, q in DASHBOARD_FILTERS if not wanted or n in wanted])), flush=True)
