"""The Health records upload in a real browser (Chromium): a CSV goes in, shows as a table, and can be removed."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

from services.assistant.store import storage_key
from tests.test_browser import (  # noqa: F401 - pytest fixtures used by name
    LOAD_TIMEOUT_MS,
    app_url,
    browser,
    exceptions,
    page,
    playwright_api,
    pytestmark,
    settle,
)

LABS = b"date,name,value,unit\n2026-10-02,Serum creatinine,97,umol/L\n2026-10-02,Platelets,210,x10^9/L\n"


def test_health_browser_csv_upload_table_and_removal(page: Any, app_url: str, db: Any, tmp_path: Any) -> None:  # noqa: F811
    csv = tmp_path / "labs.csv"
    csv.write_bytes(LABS)
    page.goto(app_url + "/Assistant")
    settle(page)
    uploader = page.locator('[data-testid="stFileUploader"]').filter(has_text="Apple Health export or lab CSV")
    uploader.locator('input[type="file"]').set_input_files(str(csv))
    page.get_by_text("Stored 2 values from labs.csv").wait_for(timeout=LOAD_TIMEOUT_MS)
    settle(page)
    assert exceptions(page) == []
    playwright_api.expect(page.locator('[data-testid="stDataFrame"]')).to_have_count(1)
    token = page.url.split("session=", 1)[1]
    rows = db.fetch_rows("SELECT key, std_value FROM app.health_records WHERE token = :t ORDER BY key",
                         {"t": storage_key(token)})
    assert [(r["key"], round(r["std_value"], 3)) for r in rows] == [("creatinine", 1.097), ("platelets", 210.0)]
    # Nothing of the upload in the URL: its only parameter is the session token (the port may hold any digits).
    params = parse_qs(urlsplit(page.url).query)
    assert list(params) == ["session"] and params["session"] == [token]

    page.get_by_role("button", name="Remove my health records").click()
    page.get_by_text("Removed 2 stored values from this session.").wait_for(timeout=LOAD_TIMEOUT_MS)
    assert db.fetch_value("SELECT count(*) FROM app.health_records WHERE token = :t",
                          {"t": storage_key(token)}) == 0

