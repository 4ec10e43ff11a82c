"""The report printed to PDF by headless Chromium, offline: no request leaves the machine."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

from services import settings
from services.errors import TrialLandscapeError

# Chromium reaches Google on its own (network time, component updates, safe browsing, metrics) unless told not
# to; the report is a local file and needs nothing from outside, so every host name fails to resolve as well.
OFFLINE_FLAGS = (
    "--disable-domain-reliability",
    "--disable-client-side-phishing-detection",
    "--metrics-recording-only",
    "--disable-breakpad",
    "--no-pings",
    "--disable-crash-reporter",
    "--safebrowsing-disable-auto-update",
    "--disable-features=NetworkTimeServiceQuerying,OptimizationHints,MediaRouter,Translate,"
    "AutofillServerCommunication,CertificateTransparencyComponentUpdater",
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE localhost",
)
CHROMIUM_PATHS = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")
PDF_TIMEOUT_SECONDS = 60.0


class PdfFailed(TrialLandscapeError):
    """Chromium was found but did not produce a PDF (crashed, timed out or wrote nothing usable)."""

    hint = "Open the HTML report in a browser and use Print → Save as PDF instead."


def find_chromium() -> str | None:
    """Path of a Chromium/Chrome binary (CHROMIUM_PATH overrides), or None when there is none."""
    configured = str(settings.current().chromium_path or "")
    candidates = [configured] if configured else [*CHROMIUM_PATHS, shutil.which("chromium") or ""]
    for path in candidates:
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def render_pdf(
    html: str, *, timeout: float = PDF_TIMEOUT_SECONDS, chromium: str | None = None
) -> bytes | None:
    """The HTML printed to PDF by headless Chromium; None when no Chromium is installed; PdfFailed when it
    fails."""
    binary = chromium or find_chromium()
    if binary is None:
        return None
    with tempfile.TemporaryDirectory(prefix="trial-report-") as tmp:
        folder = Path(tmp)
        page = folder / "report.html"
        page.write_text(html, encoding="utf-8")
        target = folder / "report.pdf"
        command = [
            binary,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-default-apps",
            "--disable-extensions",
            "--no-first-run",
            "--no-default-browser-check",
            *OFFLINE_FLAGS,
            "--no-pdf-header-footer",
            f"--user-data-dir={folder / 'profile'}",
            f"--print-to-pdf={target}",
            page.as_uri(),
        ]
        process = subprocess.Popen(
            command,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its own process group, so a timeout ends Chromium's helpers too
            env=settings.child_environment(HOME=str(folder)),
        )
        try:
            _, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            raise PdfFailed(f"Chromium did not finish the PDF within {timeout:g} seconds.") from None
        data = target.read_bytes() if target.is_file() else b""
        if not data.startswith(b"%PDF"):
            tail = stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
            raise PdfFailed(
                f"Chromium exited with code {process.returncode} without writing a PDF"
                + (f": {' / '.join(tail)}" if tail else ".")
            )
        return data
