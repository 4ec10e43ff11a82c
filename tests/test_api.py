"""The URL API (services/ui/api.py) on a real `streamlit run app.py`: each route gives the page's numbers for
three filters; bad input is a JSON 400 naming the fault, never a trace; the SQL route refuses what the console
refuses; with a password, nothing answers without it."""

from __future__ import annotations

import base64
import io
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import pandas as pd
import pytest

from devtools.commands.bench_load_cmd import stop_process
from services import console
from services.dashboard import search, stats, trialview
from services.dashboard.filters import PARAMS, Filters
from services.errors import BadInput
from tests.test_browser import PASSWORD, _env, _start_streamlit

FILTERS = {
    "default": {},
    "condition_phases": {"condition": "breast cancer", "phase": ["PHASE2", "PHASE3"], "status": "ANY"},
    "place_funder_years": {"near": "Boston, MA", "radius": "300", "funder": "INDUSTRY", "start_from": "2015"},
}
REFUSED_SQL = ["DELETE FROM ctgov.studies", "SELECT * FROM app.meta", "SELECT pg_sleep(1)",
               "SELECT 1; SELECT 2", "SELECT * FROM pg_catalog.pg_authid"]


def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=120) as response:  # noqa: S310 - a local test server
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


def get_json(url: str, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    status, head, body = get(url, headers)
    assert head["content-type"].startswith("application/json"), (status, body[:200])
    return status, json.loads(body)


def query(params: dict[str, Any]) -> str:
    return urlencode(params, doseq=True)


@pytest.fixture(scope="module")
def api_url(db: Any) -> Iterator[str]:
    proc, url, _ = _start_streamlit(_env())
    yield f"{url}/api/v1"
    stop_process(proc)


@pytest.fixture(scope="module")
def gated_api(db: Any) -> Iterator[str]:
    proc, url, _ = _start_streamlit(_env(APP_PASSWORD=PASSWORD))
    yield f"{url}/api/v1"
    stop_process(proc)


def _filters(params: dict[str, Any]) -> Filters:
    f, notices = Filters.from_query(params)
    assert not notices
    return f


@pytest.mark.parametrize("name", sorted(FILTERS))
def test_api_stats_gives_the_explore_numbers(api_url: str, name: str) -> None:
    status, body = get_json(f"{api_url}/stats.json?{query(FILTERS[name])}")
    assert status == 200, body
    dash = stats.cached_dashboard(_filters(FILTERS[name]))
    assert body["kpis"] == dash.kpis
    assert body["funnel"] == dash.funnel
    assert body["facets"] == json.loads(json.dumps(dash.facets))
    assert set(body["facets"]) == set(stats.FACETS) and body["errors"] == {}
    assert body["query"] == _filters(FILTERS[name]).query_string()
    assert set(body["sql"]) == {"kpis", "funnel", *stats.FACETS}


@pytest.mark.parametrize("name", sorted(FILTERS))
def test_api_trials_json_and_csv_give_the_trials_page(api_url: str, name: str) -> None:
    f = _filters(FILTERS[name])
    sorts, default = trialview.sorts_for(f, near=f.place() is not None)
    params = {**FILTERS[name], "rows": 7, "page": 2}
    status, body = get_json(f"{api_url}/trials.json?{query(params)}")
    assert status == 200, body
    total = search.count_trials(f)
    desc = default not in ("nearest_miles", "nct_id", "title")
    page = trialview.trials_page(f, default, desc, 7, 7)
    assert (body["total"], body["sort"], body["desc"]) == (total, default, desc)
    assert body["pages"] == -(-total // 7)
    assert [t["nct_id"] for t in body["trials"]] == list(page["nct_id"])
    # pandas reads the CSV straight from the URL (the README's example)
    csv = pd.read_csv(f"{api_url}/trials.csv?{query({**params, 'sort': 'nct_id', 'desc': 'yes'})}")
    ids = list(trialview.trials_page(f, "nct_id", True, 7, 7)["nct_id"])
    assert list(csv["nct_id"]) == ids and "title" in csv.columns


def test_api_trials_csv_defuses_formulas_and_says_the_total(api_url: str) -> None:
    status, head, body = get(f"{api_url}/trials.csv?status=ANY&rows=1000&sort=nct_id")
    assert status == 200 and int(head["x-total-count"]) == search.count_trials(_filters({"status": "ANY"}))
    assert 'filename="trials-api-' in head["content-disposition"]
    cells = pd.read_csv(io.BytesIO(body), dtype=str, keep_default_na=False).to_numpy().ravel()
    assert not [c for c in cells
                if c.startswith(("=", "+", "@")) or (c.startswith("-") and not c[1:2].isdigit())]


def test_api_trial_gives_the_trial_page_record(api_url: str) -> None:
    nct = str(search.matching_trials(Filters(status=()), limit=1)["nct_id"].iloc[0])
    status, body = get_json(f"{api_url}/trial/{nct.lower()}.json")
    assert status == 200, body
    detail = search.trial_detail(nct)
    assert detail is not None
    assert (body["nct_id"], body["study"]["title"], body["conditions"], len(body["sites"])) == (
        nct, detail.study.get("title"), list(detail.conditions), len(detail.sites))
    assert "contacts" not in body
    assert get_json(f"{api_url}/trial/NCT00000000.json")[0] == 404
    status, body = get_json(f"{api_url}/trial/NCT123.json")
    assert status == 400 and "NCT followed by 8 digits" in body["error"]


def test_api_sql_runs_what_the_console_runs_and_refuses_what_it_refuses(api_url: str) -> None:
    sql = "SELECT phase, count(*) AS trials FROM studies WHERE overall_status = :status GROUP BY 1 ORDER BY 1"
    status, body = get_json(f"{api_url}/sql.json?{query({'sql': sql, 'sql.status': 'COMPLETED'})}")
    assert status == 200, body
    expected = console.run_query(sql, {"status": "COMPLETED"}).to_json()
    assert (body["columns"], body["rows"]) == (expected["columns"], expected["rows"])
    assert body["truncated"] is False
    for refused in REFUSED_SQL:
        with pytest.raises(BadInput) as caught:
            console.check(refused)
        status, body = get_json(f"{api_url}/sql.json?{query({'sql': refused})}")
        assert status == 400 and str(caught.value) in body["error"], (refused, body)


@pytest.mark.parametrize(("path", "fault"), [
    ("stats.json?phase=PHASE9", "phase"),
    ("stats.json?start_from=abc", "start_from"),
    ("stats.json?bogus=1", "Unknown parameter"),
    ("stats.json?condition=" + "x" * 300, "condition"),
    ("trials.json?rows=5000", "rows"),
    ("trials.json?page=0", "page"),
    ("trials.json?sort=drop%20table", "Unknown sort"),
    ("trials.json?page=99999&rows=1000", "Pages reach"),
    ("sql.json", "sql"),
    ("sql.json?sql=" + "x" * 100_001, "sql"),
])
def test_api_refuses_bad_input_as_json_naming_the_fault(api_url: str, path: str, fault: str) -> None:
    status, body = get_json(f"{api_url}/{path}")
    assert status in (400, 414), body
    text = json.dumps(body)
    assert fault in text and "Traceback" not in text and "File \"" not in text


def test_api_openapi_lists_every_route_and_every_filter(api_url: str) -> None:
    status, body = get_json(f"{api_url}/openapi.json")
    assert status == 200 and body["openapi"].startswith("3.1")
    assert {p.rsplit("/", 1)[-1] for p in body["paths"]} == {
        "stats.json", "trials.json", "trials.csv", "{nct_id}.json", "sql.json", "openapi.json"}
    names = {p["name"] for p in body["paths"]["/api/v1/stats.json"]["get"]["parameters"]}
    assert names == set(PARAMS)  # filters come from the share link's table: a new filter is listed by itself
    assert "StatsResponse" in body["components"]["schemas"]


ROUTES = ["stats.json", "trials.json", "trials.csv", "trial/NCT00000102.json", "sql.json?sql=SELECT%201",
          "openapi.json"]


def test_api_behind_the_password_refuses_without_it_and_answers_with_it(gated_api: str) -> None:
    for route in ROUTES:
        status, head, body = get(f"{gated_api}/{route}")
        assert status == 401, (route, status)
        assert "password" in json.loads(body)["error"] and head["www-authenticate"].startswith("Basic")
    basic = base64.b64encode(f"me:{PASSWORD}".encode()).decode()
    status, body = get_json(f"{gated_api}/stats.json", {"Authorization": f"Basic {basic}"})
    assert status == 200 and body["kpis"] == stats.cached_dashboard(Filters()).kpis
    status, body = get_json(f"{gated_api}/sql.json?sql=SELECT%201%20AS%20one",
                            {"Authorization": f"Bearer {PASSWORD}"})
    assert status == 200 and body["rows"] == [[1]]
    # a wrong password is refused and costs the sign-in form's growing delay
    status, head, raw = get(f"{gated_api}/stats.json", {"Authorization": "Bearer not the password"})
    assert status == 401 and "not right" in json.loads(raw)["error"] and int(head["retry-after"]) >= 1


# ---- limits and errors, on the routes alone (Starlette's test client; no database) ----------------------
@pytest.fixture()
def routes_client(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    from starlette.applications import Starlette
    from starlette.testclient import TestClient

    from services.ui import api as api_routes

    monkeypatch.setattr(api_routes, "_limits", None)  # read the limits from this test's environment
    yield TestClient(Starlette(routes=api_routes.routes()))
    api_routes._limits = None


def test_api_rate_limit_per_address_answers_429_with_retry_after(routes_client: Any,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("API_RATE", "2")
    answers = [routes_client.get("/api/v1/openapi.json") for _ in range(3)]
    assert [a.status_code for a in answers] == [200, 200, 429]
    assert "Too many requests" in answers[2].json()["error"] and int(answers[2].headers["retry-after"]) >= 1


def test_api_busy_server_answers_503(routes_client: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from services.ui import api as api_routes

    monkeypatch.setenv("API_CONCURRENT", "1")
    monkeypatch.setenv("API_WAIT_S", "0")
    state = api_routes._state()
    assert state.slots.acquire(timeout=1)
    try:
        answer = routes_client.get("/api/v1/openapi.json")
    finally:
        state.slots.release()
    assert answer.status_code == 503 and "busy" in answer.json()["error"]


def test_api_unexpected_error_is_a_500_with_a_reference_and_no_trace(routes_client: Any,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from services.dashboard import api as api_plain

    def broken(base: str = "/") -> dict[str, Any]:
        raise RuntimeError("/srv/secret/path.py line 3")

    monkeypatch.setattr(api_plain, "openapi", broken)
    answer = routes_client.get("/api/v1/openapi.json")
    assert answer.status_code == 500
    text = answer.text
    assert "reference" in answer.json()["error"] and "secret" not in text and "Traceback" not in text


def test_api_lazy_routes_match_the_api_module() -> None:
    from services.dashboard import api as dashboard_api
    from services.ui import api, apiroutes

    assert [r.path for r in apiroutes.routes()] == [r.path for r in api.ROUTES]
    assert apiroutes.PREFIX == f"/api/{dashboard_api.VERSION}"
