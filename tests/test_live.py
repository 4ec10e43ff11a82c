"""Live status look-ups (services/live.py) against a local fake ClinicalTrials.gov API v2 speaking real HTTP."""

from __future__ import annotations

import gzip
import json
import socket
from pathlib import Path
from typing import Any

import pytest

from services import live
from services.live import LiveClient, LiveUnavailable
from tests.fake_ctgov import Scripted, fake_ctgov

SAMPLE = Path(__file__).resolve().parent.parent / "data" / "ctgov_sample.jsonl.gz"
FAST = {"min_interval_s": 0.2, "backoff_base_s": 0.05, "timeout_s": 5.0}


def _record(nct: str, status: str = "RECRUITING", *, min_age: str | None = None, max_age: str | None = None,
            condition: str = "Type 2 Diabetes", sites: tuple[str, ...] = ("RECRUITING", "COMPLETED"),
            why: str | None = None) -> dict[str, Any]:
    elig = {k: v for k, v in (("minimumAge", min_age), ("maximumAge", max_age)) if v}
    st = {"overallStatus": status, "lastUpdatePostDateStruct": {"date": "2026-10-01"}, "statusVerifiedDate": "2026-09"}
    if why:
        st["whyStopped"] = why
    return {"protocolSection": {
        "identificationModule": {"nctId": nct, "briefTitle": f"Trial {nct}"}, "statusModule": st,
        "conditionsModule": {"conditions": [condition]}, "eligibilityModule": elig,
        "contactsLocationsModule": {"locations": [{"facility": f"Site {i}", "status": s} for i, s in enumerate(sites)]},
    }}


def _real_record() -> dict[str, Any]:
    with gzip.open(SAMPLE, "rt") as fh:
        for line in fh:
            doc = json.loads(line)
            if (doc["protocolSection"].get("contactsLocationsModule") or {}).get("locations"):
                return doc  # type: ignore[no-any-return]
    raise AssertionError("no sample record with sites")


def _gaps(fake) -> list[float]:  # noqa: ANN001
    times = [a.at for a in fake.arrivals]
    return [b - a for a, b in zip(times, times[1:], strict=False)]


def test_live_status_reads_a_real_record_and_sends_only_the_nct_id():
    real = _real_record()
    nct = real["protocolSection"]["identificationModule"]["nctId"]
    with fake_ctgov([real]) as fake:
        got = LiveClient(fake.url, **FAST).status(nct.lower())
    status = real["protocolSection"]["statusModule"]
    locations = real["protocolSection"]["contactsLocationsModule"]["locations"]
    assert (got.nct_id, got.overall_status, got.sites) == (nct, status["overallStatus"], len(locations))
    assert got.recruiting_sites == sum(1 for loc in locations if loc.get("status") == "RECRUITING")
    assert got.last_update_posted == status["lastUpdatePostDateStruct"]["date"][:10]
    assert got.as_of.endswith(" UTC")
    [arrival] = fake.arrivals
    assert arrival.path == f"/api/v2/studies/{nct}"
    assert set(arrival.query) == {"fields", "format"}  # nothing about the patient


def test_live_backs_off_on_429_then_succeeds():
    with fake_ctgov([_record("NCT00000101")]) as fake:
        fake.script = [Scripted(429), Scripted(429)]
        got = LiveClient(fake.url, **FAST).status("NCT00000101")
    assert got.overall_status == "RECRUITING"
    assert len(fake.arrivals) == 3
    gaps = _gaps(fake)  # spacing holds across retries, and the back-off doubles (0.05 s, then 0.1 s, under 0.2 s)
    assert all(g >= 0.19 for g in gaps), gaps


def test_live_honours_a_short_retry_after_and_refuses_to_wait_long():
    with fake_ctgov([_record("NCT00000102")]) as fake:
        fake.script = [Scripted(429, headers={"Retry-After": "1"})]
        assert LiveClient(fake.url, **FAST).status("NCT00000102").overall_status == "RECRUITING"
        assert _gaps(fake)[0] >= 0.95
        fake.arrivals.clear()
        fake.script = [Scripted(429, headers={"Retry-After": "120"})]
        with pytest.raises(LiveUnavailable, match="asked us to wait 120 s"):
            LiveClient(fake.url, **FAST).status("NCT00000102")
        assert len(fake.arrivals) == 1


def test_live_retry_after_reads_odd_headers_without_failing():
    # An HTTP date in zone -0000 parses to a naive datetime; a superscript digit (one Latin-1 header byte) passes
    # str.isdigit but not float(). Both used to escape as TypeError/ValueError instead of a wait or a back-off.
    assert live._retry_after("Wed, 21 Oct 2015 07:28:00 -0000") == 0.0
    assert live._retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0
    assert live._retry_after("\u00b2") is None
    assert live._retry_after(" 3 ") == 3.0
    slept: list[float] = []
    with fake_ctgov([_record("NCT00000104")]) as fake:
        fake.script = [Scripted(429, headers={"Retry-After": "Wed, 21 Oct 2015 07:28:00 -0000"})]
        client = LiveClient(fake.url, **{**FAST, "min_interval_s": 0.0}, sleep=slept.append)
        assert client.status("NCT00000104").overall_status == "RECRUITING"
    assert slept == [0.0]


def test_live_gives_up_after_the_retries_with_a_clear_message():
    with fake_ctgov([_record("NCT00000103")]) as fake:
        fake.script = [Scripted(429)] * 10
        with pytest.raises(LiveUnavailable, match=r"still refused after 4 tries"):
            LiveClient(fake.url, **FAST).status("NCT00000103")
        assert len(fake.arrivals) == 4


def test_live_bad_request_shows_the_servers_reason_as_one_short_line():
    body = b'{"message": "Bad query.term: <b>unexpected</b>\n token ' + b"x" * 5000 + b'"}'
    with fake_ctgov([]) as fake:
        fake.script = [Scripted(400, body=body)]
        with pytest.raises(LiveUnavailable) as caught:
            LiveClient(fake.url, **FAST).search(condition="asthma")
    message = str(caught.value)
    assert message.startswith("ClinicalTrials.gov refused the request (HTTP 400). It said: {\"message\": \"Bad query")
    assert "\n" not in message and len(message) < 300


def test_live_unknown_trial_and_malformed_id():
    with fake_ctgov([]) as fake:
        client = LiveClient(fake.url, **FAST)
        with pytest.raises(LiveUnavailable, match="has no trial NCT09999999"):
            client.status("NCT09999999")
        with pytest.raises(LiveUnavailable, match="is not an NCT number"):
            client.status("NCT1; DROP TABLE")
        assert len(fake.arrivals) == 1  # the malformed id sent nothing


def test_live_timeout_and_offline_say_so():
    with fake_ctgov([_record("NCT00000104")]) as fake:
        fake.script = [Scripted(delay_s=3.0)]
        with pytest.raises(LiveUnavailable, match="did not answer in time"):
            LiveClient(fake.url, **{**FAST, "timeout_s": 0.5}).status("NCT00000104")
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{sock.getsockname()[1]}/api/v2"
    with pytest.raises(LiveUnavailable, match="Could not reach ClinicalTrials.gov"):
        LiveClient(closed, **FAST).status("NCT00000104")


def test_live_not_json_is_refused():
    with fake_ctgov([]) as fake:
        fake.script = [Scripted(200, body=b"<html>Down for maintenance</html>")]
        with pytest.raises(LiveUnavailable, match="not JSON"):
            LiveClient(fake.url, **FAST).status("NCT00000105")


def test_live_json_nested_too_deeply_is_refused():
    with fake_ctgov([]) as fake:
        fake.script.append(Scripted(body=b"[" * 100_000))
        with pytest.raises(LiveUnavailable, match="not JSON"):
            LiveClient(fake.url, **FAST).status("NCT00000117")


@pytest.mark.parametrize(("raw", "name"), [
    (b"HELLO THERE\r\n\r\n", "BadStatusLine"),
    (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n{\"studies\": [",
     "IncompleteRead"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n40\r\n{\"studies\": [", "IncompleteRead"),
    (b"HTTP/1.1 200 OK\r\nX-Filler: " + b"a" * 70_000 + b"\r\n\r\n{}", "LineTooLong"),
    (b"HTTP/1.1 400 Bad Request\r\nContent-Length: 900\r\n\r\nhalf a reason", None),
], ids=["bad-status-line", "incomplete-read", "incomplete-chunk", "line-too-long", "truncated-error-body"])
def test_live_a_malformed_http_answer_is_the_look_ups_clear_message(raw: bytes, name: str | None):
    with fake_ctgov([]) as fake:
        fake.script.append(Scripted(raw=raw))
        with pytest.raises(LiveUnavailable) as caught:
            LiveClient(fake.url, **FAST).status("NCT00000118")
    expected = (f"ClinicalTrials.gov sent a broken answer ({name}); it was not used. Try again later." if name
                else "ClinicalTrials.gov refused the request (HTTP 400). It said: half a reason")
    assert str(caught.value) == expected and len(fake.arrivals) == 1


def test_live_budget_is_spent_then_refused_and_answers_are_kept():
    with fake_ctgov([_record("NCT00000106"), _record("NCT00000107"), _record("NCT00000108")]) as fake:
        client = LiveClient(fake.url, **FAST, budget_per_hour=2)
        client.status("NCT00000106")
        client.status("NCT00000106")  # kept for ten minutes: no second request
        client.status("NCT00000107")
        with pytest.raises(LiveUnavailable, match="used its 2 live look-ups for this hour"):
            client.status("NCT00000108")
    assert [a.path.rsplit("/", 1)[1] for a in fake.arrivals] == ["NCT00000106", "NCT00000107"]


def test_live_keeps_one_and_a_half_seconds_between_requests():
    with fake_ctgov([_record("NCT00000109"), _record("NCT00000110")]) as fake:
        client = LiveClient(fake.url)  # the default spacing
        client.status("NCT00000109")
        client.status("NCT00000110")
    assert _gaps(fake)[0] >= live.MIN_INTERVAL_S


def test_live_spaces_a_request_from_the_end_of_the_previous_one():
    # The spacing used to run from the start of the previous request: a slow answer (or, under load, a first request
    # that took longer to reach the server than the second) left the server less than the spacing between two
    # requests. Measured where the server sees them, on the one monotonic clock of this process.
    with fake_ctgov([_record("NCT00000115"), _record("NCT00000116")]) as fake:
        fake.script = [Scripted(delay_s=0.5)]  # the first answer is held half a second
        client = LiveClient(fake.url, **FAST)
        client.status("NCT00000115")
        client.status("NCT00000116")
    assert _gaps(fake)[0] >= 0.5 + FAST["min_interval_s"]


def test_live_age_search_keeps_studies_without_an_age_bound():
    records = [_record("NCT00000201", min_age="18 Years", max_age="65 Years"),
               _record("NCT00000202"),  # no age bound at all
               _record("NCT00000203", min_age="18 Years"),  # no maximum
               _record("NCT00000204", min_age="70 Years"),
               _record("NCT00000205", max_age="40 Years"),
               _record("NCT00000206", condition="Asthma")]
    with fake_ctgov(records) as fake:
        found = LiveClient(fake.url, **FAST).search(condition="type 2 diabetes", age=62, sex="female")
    ids = sorted(s["protocolSection"]["identificationModule"]["nctId"] for s in found["studies"])
    assert ids == ["NCT00000201", "NCT00000202", "NCT00000203"]
    sent = fake.arrivals[0].query
    assert "AREA[MinimumAge]MISSING" in sent["query.term"][0] and "AREA[MaximumAge]MISSING" in sent["query.term"][0]
    assert sent["aggFilters"] == ["sex:f"]


def test_live_switched_off_sends_nothing(monkeypatch):
    with fake_ctgov([_record("NCT00000111")]) as fake:
        monkeypatch.setenv("CTGOV_API_URL", fake.url)
        monkeypatch.setenv("CTGOV_LIVE", "off")
        with pytest.raises(LiveUnavailable, match="switched off"):
            live.live_status("NCT00000111")
        monkeypatch.setenv("CTGOV_LIVE", "on")
        assert live.live_status("NCT00000111").overall_status == "RECRUITING"
    assert len(fake.arrivals) == 1


def test_live_compare_with_copy_says_what_changed():
    changed = live.parse_status(_record("NCT00000112", "TERMINATED", why="Sponsor decision"), "NCT00000112")
    differs, text = live.compare_with_copy(changed, "Recruiting", "2026-06-02")
    assert differs
    assert text.startswith("ClinicalTrials.gov now shows “Terminated” (checked ")
    assert text.endswith("our copy (record last updated 2026-06-02) says “Recruiting”. Why it stopped: Sponsor decision")
    same = live.parse_status(_record("NCT00000113"), "NCT00000113")
    differs, text = live.compare_with_copy(same, "RECRUITING", None)
    assert not differs and "1 of its 2 sites recruiting — the same as our copy." in text


@pytest.mark.parametrize("part, value, sites", [
    ("identificationModule", ["NCT00000114"], 2),
    ("contactsLocationsModule", [{"status": "RECRUITING"}], 0),
    ("statusModule", "RECRUITING", None),
])
def test_live_a_record_part_of_the_wrong_shape_is_read_as_absent(part, value, sites):
    doc = _record("NCT00000114")
    doc["protocolSection"][part] = value
    if sites is None:  # no status that can be read: said so, as for a record without one
        with pytest.raises(LiveUnavailable, match="record of NCT00000114 has no status"):
            live.parse_status(doc, "NCT00000114")
    else:
        got = live.parse_status(doc, "NCT00000114")
        assert (got.overall_status, got.sites) == ("RECRUITING", sites)


def test_live_counts_only_sites_it_can_read_and_a_status_that_is_text():
    doc = _record("NCT00000115")
    module = doc["protocolSection"]["contactsLocationsModule"]
    module["locations"] = "RECRUITING"  # a string is not a list of 10 sites
    assert live.parse_status(doc, "NCT00000115").sites == 0
    module["locations"] = [{"status": "RECRUITING"}, "Boston", None]
    got = live.parse_status(doc, "NCT00000115")
    assert (got.sites, got.recruiting_sites) == (1, 1)
    doc["protocolSection"]["statusModule"]["lastUpdatePostDateStruct"] = ["2026-10-01"]
    assert live.parse_status(doc, "NCT00000115").last_update_posted is None
    doc["protocolSection"]["statusModule"]["overallStatus"] = {"code": "RECRUITING"}
    with pytest.raises(LiveUnavailable, match="has no status"):
        live.parse_status(doc, "NCT00000115")


def test_live_cli_search_survives_a_study_without_its_sections(monkeypatch, capsys):
    from services.cli import main

    with fake_ctgov([]) as fake:
        answer = {"studies": [_record("NCT00000116"), {"protocolSection": None}], "totalCount": 2}
        fake.script.append(Scripted(body=json.dumps(answer).encode()))
        monkeypatch.setenv("CTGOV_API_URL", fake.url)
        assert main(["live", "search", "--condition", "diabetes", "--json"]) == 1
    assert "has no status" in capsys.readouterr().err


def test_live_cli_status_and_search(monkeypatch, capsys):
    from services.cli import main

    records = [_record("NCT00000301", "ACTIVE_NOT_RECRUITING", min_age="18 Years"), _record("NCT00000302"),
               _record("NCT00000303", min_age="80 Years")]
    with fake_ctgov(records) as fake:
        monkeypatch.setenv("CTGOV_API_URL", fake.url)
        assert main(["live", "status", "NCT00000301", "--json"]) == 0
        [row] = json.loads(capsys.readouterr().out)
        assert (row["nct_id"], row["overall_status"], row["recruiting_sites"], row["sites"]) == (
            "NCT00000301", "ACTIVE_NOT_RECRUITING", 1, 2)
        assert main(["live", "search", "--condition", "diabetes", "--age", "62", "--json"]) == 0
        found = json.loads(capsys.readouterr().out)
        assert (found["total"], sorted(s["nct_id"] for s in found["studies"])) == (2, ["NCT00000301", "NCT00000302"])
    monkeypatch.setenv("CTGOV_API_URL", "http://127.0.0.1:9/api/v2")
    assert main(["live", "status", "NCT00000301"]) == 1
    assert "Could not reach ClinicalTrials.gov" in capsys.readouterr().err


@pytest.mark.parametrize(("given", "shown"), [
    ("2026-10-01", "2026-10-01"), ("2026-10", "2026-10"), (" 2026-10-01 ", "2026-10-01"),
    ("２０２６-10-01", None), ("2026-13-45", None), ("soon!", None), ("[x](http:/", None), ("2026-10-01x", None),
])
def test_live_a_date_is_shown_only_when_it_is_a_date(given, shown):
    # The first ten characters of whatever the record held used to be shown as "record last updated soon!" (or
    # "２０２６-10-01", "2026-13-45") beside the live status.
    doc = _record("NCT00000116")
    status = doc["protocolSection"]["statusModule"]
    status["lastUpdatePostDateStruct"] = {"date": given}
    got = live.parse_status(doc, "NCT00000116")
    assert got.last_update_posted == shown
