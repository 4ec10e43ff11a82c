"""The patient report for a guided-mode-like patient (type 2 diabetes, 55, female, Houston TX) from real sample trials."""

from __future__ import annotations

import contextlib
import os
import re
import stat
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import date
from html import unescape
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from services import report
from services.assistant.backend import DatabaseBackend
from services.dashboard.filters import Filters
from services.dashboard.search import matching_trials
from services.eligibility.labels import Label
from services.eligibility.match import criterion_status, match_record, structured_criteria
from services.eligibility.model import judge_criteria
from services.eligibility.parser import Criterion, parse_criteria
from services.eligibility.patient import PatientProfile
from services.eligibility.rules import Judgement
from services.eligibility.scoring import fit_score, gap_checklist, results_from, trial_verdict
from services.errors import BadInput
from services.report import (
    PdfFailed,
    criterion_rows,
    profile_rows,
    render_pdf,
    render_report,
    side_effects,
    trial_inputs,
)
from services.report.words import shorten
from services.trials import ReportRequest
from tests.html_check import check_html, element_texts, tables

CHROMIUM = "/usr/bin/chromium"
SHOTS = Path("/tmp/shots")
# Chosen by the patient: a digital therapeutic trial in Houston (found by the search below), a linaclotide trial
# for people with type 2 diabetes in Texas, and a contrast-agent safety study with posted side effects that
# takes only people 65 or older.
SELECTED = ("NCT04886388", "NCT03119584", "NCT01252810")
PATIENT = PatientProfile(
    age=55, sex="female", conditions=("type 2 diabetes",), treatments=("metformin",), ecog=1
)
INJECTION = "<script>alert(1)</script>"
DAY = date(2026, 3, 2)


@pytest.fixture(scope="module")
def case(db: Any) -> SimpleNamespace:
    """Search, judge and render as guided mode would; keep every piece for the tests to inspect."""
    backend = DatabaseBackend(db)
    place = backend.geocode_location("Houston, TX")
    assert place is not None
    found = matching_trials(
        Filters(condition="type 2 diabetes", status=(), near="Houston, TX", radius=300.0, unit="mi"),
        sort="nearest_miles", descending=False, limit=100, db=db,
    )
    candidates = [str(n) for n in found["nct_id"]]
    matches = []
    for nct_id in SELECTED:
        info = backend.get_eligibility_criteria(nct_id)
        details = backend.get_trial_details(nct_id)
        assert info is not None and details is not None
        criteria = structured_criteria(info.get("min_age"), info.get("max_age"), info.get("sex"))
        criteria += list(parse_criteria(info.get("criteria_text")).all)
        matches.append(
            match_record(nct_id, judge_criteria(criteria, PATIENT), title=details.get("title"),
                         status=details.get("status"), phases=details.get("phases") or ())
        )
    matches[0]["what_to_expect"] = 'You would use an app every day. "><iframe src="https://evil.example/x"></iframe>'
    request = ReportRequest(
        session_id="k" * 43,
        patient_profile={
            "diagnosis": "Type 2 diabetes", "age": 55, "sex": "female", "location": "Houston, TX",
            "latitude": place["latitude"], "longitude": place["longitude"], "travel_radius_miles": 50,
            "treatments": ["metformin"], "ecog": 1, "notes": f"{INJECTION} I do not like needles",
        },
        intake_answers={"diagnosis": "Type 2 diabetes", "preferences": "Weekday visits"},
        trials=tuple(matches),
        summary="You have type 2 diabetes and live in Houston.\n\nYou chose three trials to discuss "
                "<img src=x onerror=alert(2)>.",
        questions_for_doctor=("Is my HbA1c in the range these trials want?", "Would I stop metformin?"),
        glossary=({"term": "HbA1c</dd><script>alert(3)</script>", "meaning": "Average blood sugar over 3 months."},),
    )
    inputs = trial_inputs(backend, request.patient_profile, request.trials)
    html = render_report(request, **inputs, generated_on=DAY)
    return SimpleNamespace(backend=backend, request=request, inputs=inputs, html=html, candidates=candidates,
                           matches=matches, db=db)


def test_report_parses_as_balanced_html(case: SimpleNamespace) -> None:
    checked = check_html(case.html)
    assert checked["problems"] == []
    assert {"summary", "about-you", "comparison", "questions", "glossary", "references", "disclaimer"} <= checked["ids"]
    assert not {"script", "iframe", "img", "link", "object", "embed", "form", "base"} & set(checked["elements"])


def test_report_sections_cover_the_selected_trials_in_order(case: SimpleNamespace) -> None:
    titles = [m["title"] for m in case.matches]
    assert element_texts(case.html, "h2") == [
        "What this report could and could not see",
        "Summary",
        "About you",
        "The trials side by side",
        *[f"Trial {i}: {shorten(t, 120, at_sentence=False)}" for i, t in enumerate(titles, start=1)],
        "Questions for your doctor",
        "Please read",
        "Appendix",
    ]
    appendix = case.html.split('<section id="appendix">')[1]
    assert element_texts(appendix, "h3") == [
        *[f"A{i}. Trial {i} in full: {t}" for i, t in enumerate(titles, start=1)],
        "Words used in this report", "References"]
    assert element_texts(appendix, "h4") == [
        "In plain words", "Eligibility checklist", "What to expect",
        "Side effects reported in the trial's results", "Nearest site", "A message to the study team",
    ] * 3


def test_report_contains_only_the_selected_trials(case: SimpleNamespace) -> None:
    assert SELECTED[0] in case.candidates and "NCT05094401" in case.candidates
    unselected = [n for n in case.candidates if n not in SELECTED]
    assert len(unselected) >= 10
    assert [n for n in unselected if n in case.html] == []
    assert sorted(set(re.findall(r"NCT\d{8}", case.html))) == sorted(SELECTED)


def test_report_links_only_to_clinicaltrials_gov(case: SimpleNamespace) -> None:
    attributes = re.findall(r"""\b(?:src|href|action|poster|srcset)\s*=\s*(["'])(.*?)\1""", case.html, re.I)
    values = [value for _, value in attributes]
    external = {v for v in values if not v.startswith("#")}
    assert external == {f"https://clinicaltrials.gov/study/{n}" for n in SELECTED}
    ids = check_html(case.html)["ids"]
    assert all(v[1:] in ids for v in values if v.startswith("#"))
    assert re.search(r"url\s*\(|@import|<link|<script", case.html, re.I) is None
    assert "https://evil.example" in case.html  # shown as text only, never as a link or frame


def test_report_escapes_injected_patient_and_model_text(case: SimpleNamespace) -> None:
    html = case.html
    assert "&lt;script&gt;alert(1)&lt;/script&gt; I do not like needles" in html
    assert "&lt;img src=x onerror=alert(2)&gt;" in html
    assert "HbA1c&lt;/dd&gt;&lt;script&gt;alert(3)&lt;/script&gt;" in html
    assert "&#34;&gt;&lt;iframe src=&#34;https://evil.example/x&#34;&gt;&lt;/iframe&gt;" in html
    assert "<script" not in html.lower() and "<img" not in html.lower() and "<iframe" not in html.lower()


def test_report_profile_lists_what_the_patient_said(case: SimpleNamespace) -> None:
    profile = [(dt, dd) for dt, dd in zip(
        element_texts(case.html.split('id="about-you"')[1].split("</section>")[0], "dt"),
        element_texts(case.html.split('id="about-you"')[1].split("</section>")[0], "dd"), strict=True)]
    assert profile == [
        ("Diagnosis", "Type 2 diabetes"),
        ("Treatments so far", "metformin"),
        ("Age", "55 years"),
        ("Sex", "Female"),
        ("Where you live", "Houston, TX"),
        ("How far you would travel", "Up to 50 miles"),
        ("Activity score (ECOG)", "1"),
        ("Other preferences", "Weekday visits"),
        ("Notes", f"{INJECTION} I do not like needles"),
    ]


def test_report_checklist_rows_match_the_saved_criteria(case: SimpleNamespace) -> None:
    checklists = tables(case.html, "checklist")
    assert len(checklists) == 3
    marks = {"met": "✓ Met", "not_met": "✗ Not met", "needs_discussion": "? Needs discussion",
             "not_enough_information": "? Not enough information"}
    for match, table in zip(case.matches, checklists, strict=True):
        assert table[0] == ["Requirement", "Kind", "For you", "Why"]
        def wording(c: dict[str, Any]) -> str:
            plain, full = " ".join(c["plain"].split()), " ".join(c["criterion"].split())
            same = plain.lower().rstrip(". ") == full.lower().rstrip(". ")  # a tidied full stop is not a rewrite
            return plain if same else f"{plain}Trial's wording: {shorten(full, 400)}"

        expected = [
            [wording(c), "Needed to join" if c["type"] == "inclusion" else "Keeps people out",
             marks[c["status"]], " ".join(c["reason"].split())]
            for c in match["criteria"]
        ]
        assert table[1:] == expected
    # The contrast study takes people 65 or older: the structured age limit rules this 55-year-old out.
    assert checklists[2][1][:3] == ["Aged 65 or older.Trial's wording: Age 65 years or older", "Needed to join",
                                    "✗ Not met"]
    assert case.matches[2]["verdict"] == "excluded"


def test_report_comparison_table_matches_the_saved_matches(case: SimpleNamespace) -> None:
    [compare] = tables(case.html, "compare")
    rows = {row[0]: row[1:] for row in compare[1:]}
    bands = {"promising": "Good match so far", "needs_information": "Needs information", "unlikely": "Unlikely"}
    assert rows["Fit score"] == [
        f"{m['fit_score']} / 100 {bands[m['fit_band']]}" if m["fit_score"] is not None else "No score"
        for m in case.matches
    ]
    assert rows["Our reading"][2] == "Likely not eligible"
    assert rows["Side-effect results posted"] == ["No", "No", "Yes"]
    assert [h.split(":")[0] for h in compare[0][1:]] == ["Trial 1", "Trial 2", "Trial 3"]
    nearest = case.inputs["nearest_sites"]
    assert nearest[SELECTED[0]]["distance_miles"] < 1
    assert rows["Nearest site"][0].endswith("less than a mile from you")


def test_report_side_effects_are_the_top_posted_terms(case: SimpleNamespace) -> None:
    rows = case.db.fetch_rows(
        "SELECT lower(event_type) = 'serious' AS serious, adverse_event_term AS term, organ_system, "
        "sum(subjects_affected)::int AS affected, sum(subjects_at_risk)::int AS at_risk "
        "FROM ctgov.reported_events WHERE nct_id = :n GROUP BY 1, 2, 3",
        {"n": SELECTED[2]},
    )

    def expected(serious: bool, limit: int) -> list[list[str]]:
        picked = sorted((r for r in rows if r["serious"] is serious and r["affected"] > 0),
                        key=lambda r: (-r["affected"], r["term"].lower()))[:limit]
        return [[r["term"][:1].upper() + r["term"][1:], r["organ_system"], f"{r['affected']:,} of {r['at_risk']:,}",
                 f"{100 * r['affected'] / r['at_risk']:.0f}%"] for r in picked]

    serious, other = tables(case.html, "events")
    assert serious[0] == ["Serious", "Body system", "People affected", "Share"]
    assert serious[1:] == expected(True, 5)
    assert other[0] == ["Other (not serious)", "Body system", "People affected", "Share"]
    assert other[1:] == expected(False, 8)
    assert len(serious) > 1 and len(other) > 1
    assert "not necessarily caused by the treatment" in case.html


def test_report_references_and_disclaimer(case: SimpleNamespace) -> None:
    refs = element_texts(case.html.split('id="references"')[1].split("</section>")[0], "li")
    details = case.inputs["trial_details"]
    assert refs == [
        f"{details[n]['official_title']}. ClinicalTrials.gov identifier {n}. https://clinicaltrials.gov/study/{n}"
        for n in SELECTED
    ]
    assert "Not medical advice — discuss with your doctor." in case.html
    assert element_texts(case.html.split('id="disclaimer"')[1].split("</section>")[0], "p") == [report.DISCLAIMER]


@pytest.mark.browser
def test_report_pdf_is_produced_by_chromium(case: SimpleNamespace) -> None:
    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian's chromium is not installed, so no PDF engine is present")
    pdf = render_pdf(case.html)
    assert pdf is not None and pdf.startswith(b"%PDF")
    assert len(pdf) > 20_000
    SHOTS.mkdir(parents=True, exist_ok=True)
    (SHOTS / "report-test.pdf").write_bytes(pdf)


@pytest.mark.browser
def test_report_renders_in_headless_chromium_without_network(case: SimpleNamespace, scratch_dir: Path) -> None:
    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian's chromium is not installed")
    from playwright.sync_api import sync_playwright

    page_file = scratch_dir / "report.html"
    page_file.write_text(case.html, encoding="utf-8")
    SHOTS.mkdir(parents=True, exist_ok=True)
    requested: list[str] = []
    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--no-first-run"])
        try:
            page = browser.new_page(viewport={"width": 1000, "height": 1400})
            page.on("request", lambda r: requested.append(r.url))
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(page_file.as_uri())
            title = page.title()
            trial_boxes = page.locator("article.trial").count()
            height = page.evaluate("document.body.scrollHeight")
            page.screenshot(path=str(SHOTS / "report-test.png"), full_page=True)
            page.emulate_media(media="print")
            nav_shown = page.locator("nav").is_visible()
        finally:
            browser.close()
    assert requested == [page_file.as_uri()]
    assert errors == []
    assert title == "Clinical trial options to discuss with your doctor"
    assert trial_boxes == 3
    assert height > 3000
    assert nav_shown is False  # the contents list is for the screen only


@contextlib.contextmanager
def logging_proxy() -> Iterator[tuple[str, list[str]]]:
    """A local HTTP proxy that records every request (and CONNECT) it receives and answers each with 502."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _record(self) -> None:
            seen.append(f"{self.command} {self.path}")
            self.send_response(502)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_POST = do_HEAD = do_CONNECT = _record  # noqa: N815 - http.server's names

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.browser
def test_report_pdf_chromium_makes_no_outbound_request(monkeypatch: pytest.MonkeyPatch) -> None:
    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian's chromium is not installed, so no PDF engine is present")
    page = "<!DOCTYPE html><html><body><p>x</p></body></html>"
    with logging_proxy() as (url, seen):
        for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy"):
            monkeypatch.setenv(name, url)  # Chromium on Linux sends everything through the environment's proxy
        with monkeypatch.context() as plain:
            plain.setattr(report.pdf, "OFFLINE_FLAGS", ())
            render_pdf(page)
        # The control: without the flags Chromium asked Google for the time (and for updates), through the proxy.
        assert any("google" in request for request in seen), seen
        seen.clear()
        pdf = render_pdf(page)
    assert pdf is not None and pdf.startswith(b"%PDF")
    assert seen == []


def test_report_pdf_is_none_without_chromium(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHROMIUM_PATH", "/nonexistent/chromium")
    assert report.find_chromium() is None
    assert render_pdf("<!DOCTYPE html><html><body>x</body></html>") is None


def _fake_browser(folder: Path, body: str) -> str:
    path = folder / "fake-chromium"
    path.write_text("#!/bin/sh\n" + body + "\n", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_report_pdf_times_out_and_stops_chromium(scratch_dir: Path) -> None:
    browser = _fake_browser(scratch_dir, "sleep 30")
    started = time.monotonic()
    with pytest.raises(PdfFailed, match="did not finish the PDF within 1 seconds"):
        render_pdf("<!DOCTYPE html><html></html>", chromium=browser, timeout=1)
    assert time.monotonic() - started < 10


def test_report_pdf_failure_says_why(scratch_dir: Path) -> None:
    browser = _fake_browser(scratch_dir, "echo 'cannot open display' >&2; exit 3")
    with pytest.raises(PdfFailed, match="exited with code 3 without writing a PDF: cannot open display"):
        render_pdf("<!DOCTYPE html><html></html>", chromium=browser)


def test_report_refuses_no_trials_and_bad_ids(case: SimpleNamespace) -> None:
    with pytest.raises(BadInput, match="at least one selected trial"):
        render_report(replace(case.request, trials=()))
    bad = dict(case.matches[0], nct_id="NCT123")
    with pytest.raises(BadInput, match="'NCT123' is not an NCT id"):
        render_report(replace(case.request, trials=(bad,)))


def test_report_without_lookups_falls_back_to_the_saved_match(case: SimpleNamespace) -> None:
    match = dict(case.matches[0], nearest_site="Study Site, Houston, Texas (2 miles)")
    html = render_report(replace(case.request, trials=(match,)), generated_on=DAY)
    assert check_html(html)["problems"] == []
    assert "<p>Study Site, Houston, Texas (2 miles).</p>" in html
    assert "Side-effect results were not looked up for this trial." in html
    assert "Full details of this trial were not available" in html
    assert "Prepared March 2, 2026 · 1 trial you chose" in html


def test_report_side_effects_sum_groups_and_rank_by_people() -> None:
    events = {
        "nct_id": "NCT00000001",
        "has_results": True,
        "events": [
            {"term": "nausea", "organ_system": "GI", "serious": False, "subjects_affected": 10, "subjects_at_risk": 100},
            {"term": "Nausea", "organ_system": "GI", "serious": False, "subjects_affected": 5, "subjects_at_risk": 100},
            {"term": "Headache", "organ_system": "Nervous", "serious": False, "subjects_affected": 15, "subjects_at_risk": 200},
            {"term": "Rash", "organ_system": "Skin", "serious": False, "subjects_affected": 0, "subjects_at_risk": 200},
            {"term": "Sepsis", "organ_system": "Infections", "serious": True, "subjects_affected": 1, "subjects_at_risk": 0},
        ],
    }
    assert side_effects(events) == {
        "has_results": True,
        "serious": [{"term": "Sepsis", "organ_system": "Infections", "affected": 1, "at_risk": 0, "percent": "",
                     "people": "1"}],
        "other": [
            {"term": "Headache", "organ_system": "Nervous", "affected": 15, "at_risk": 200, "percent": "8%",
             "people": "15 of 200"},
            {"term": "Nausea", "organ_system": "GI", "affected": 15, "at_risk": 200, "percent": "8%",
             "people": "15 of 200"},
        ],
    }
    assert side_effects({"nct_id": "NCT00000001", "has_results": False, "events": []}) == {
        "has_results": False, "serious": [], "other": []}
    assert side_effects(None) is None


def test_report_criterion_rows_word_every_status() -> None:
    rows = criterion_rows([
        {"type": "inclusion", "criterion": "Age >= 18", "status": "met", "plain": "You are 18 or older", "reason": "55."},
        {"type": "exclusion", "criterion": "Pregnancy", "status": "not_met", "plain": "pregnancy", "reason": "r"},
        {"type": "inclusion", "criterion": "HbA1c 7-10%", "status": "needs_discussion", "plain": "", "reason": ""},
        {"type": "exclusion", "criterion": "Insulin", "status": "not_enough_info", "plain": "Insulin", "reason": ""},
        {"type": "exclusion", "criterion": "Lactation", "status": "not_applicable", "plain": "Lactation", "reason": ""},
    ])
    assert [(r["kind"], r["plain"], r["original"], r["status"], r["mark"], r["css"]) for r in rows] == [
        ("Needed to join", "You are 18 or older", "Age >= 18", "Met", "✓", "met"),
        ("Keeps people out", "pregnancy", "", "Not met", "✗", "notmet"),
        ("Needed to join", "HbA1c 7-10%", "", "Needs discussion", "?", "discuss"),
        ("Keeps people out", "Insulin", "", "Not enough information", "?", "unknown"),
        ("Keeps people out", "Lactation", "", "Does not apply to you", "–", "met"),
    ]


def test_report_profile_rows_merge_intake_and_hide_coordinates() -> None:
    rows = profile_rows(
        {"age": 55, "sex": "female", "latitude": 29.7, "longitude": -95.3, "preferred_phases": ["PHASE2", "PHASE3"],
         "activity_level": "Fully active, no limits on what I can do", "ecog": 0, "favourite_colour": "blue"},
        {"diagnosis": "Type 2 diabetes", "age": 54},
    )
    assert rows == [
        ("Diagnosis", "Type 2 diabetes"),
        ("Age", "55 years"),
        ("Sex", "Female"),
        ("Daily activity", "Fully active, no limits on what I can do"),
        ("Trial phases you prefer", "Phase 2, Phase 3"),
        ("Favourite colour", "blue"),
    ]


def test_report_profile_rows_leave_out_the_sessions_own_bookkeeping() -> None:
    """The dashboard filters a session started from and the chat transcript kept for the model are not answers:
    'About you' showed 'Dashboard radius: 100' beside the patient's own 'Up to 50 miles', and every intake message
    joined by commas as 'Patient said'."""
    rows = profile_rows(
        {"diagnosis": "asthma", "travel_radius_miles": 50},
        {"dashboard_condition": "asthma", "dashboard_radius": 100.0, "dashboard_radius_unit": "mi",
         "dashboard_sex": "FEMALE", "patient_said": ["Hi", "I have asthma and live in Boston"],
         "interventions_of_interest": "inhaler"},
    )
    assert rows == [("Diagnosis", "asthma"), ("How far you would travel", "Up to 50 miles"),
                    ("Interventions of interest", "inhaler")]


@pytest.mark.parametrize(
    ("label", "kind", "status"),
    [
        (Label.MET, "inclusion", "met"),
        (Label.MET, "exclusion", "not_met"),
        (Label.NOT_MET, "inclusion", "not_met"),
        (Label.NOT_MET, "exclusion", "met"),
        (Label.NEEDS_DISCUSSION, "exclusion", "needs_discussion"),
        (Label.NOT_ENOUGH_INFO, "inclusion", "not_enough_information"),
        (Label.NOT_APPLICABLE, "exclusion", "met"),
    ],
)
def test_report_match_status_says_whether_the_patient_passes(label: Label, kind: str, status: str) -> None:
    assert criterion_status(label, kind) == status  # type: ignore[arg-type]


def test_report_match_record_from_judgements() -> None:
    pairs = [
        (Criterion(0, "Age 65 years or older", "inclusion"), Judgement(Label.NOT_MET, "You are 55.")),
        (Criterion(1, "Type 1 diabetes", "exclusion"), Judgement(Label.NOT_MET, "You have type 2.")),
        (Criterion(2, "HbA1c 7-10%", "inclusion"), Judgement(Label.NOT_ENOUGH_INFO, "No HbA1c on record.")),
    ]
    record = match_record("NCT01252810", pairs, title="T", status="COMPLETED", phases=["PHASE2"])
    results = results_from(pairs)
    checklist = gap_checklist(results)
    assert record == {
        "nct_id": "NCT01252810",
        "title": "T",
        "status": "COMPLETED",
        "phases": ["PHASE2"],
        "fit_score": 10,  # excluded: round(19 x 1/2), the lowest band (the age line is not counted)
        "fit_band": "unlikely",
        "fit_explanation": fit_score(results).explanation,
        "verdict": "excluded",
        "summary": f"{trial_verdict(results, True).reason} {fit_score(results).explanation}",
        "criteria": [
            {"type": "inclusion", "criterion": "Age 65 years or older", "status": "not_met", "plain": "Aged 65 or older.",
             "reason": "You are 55."},
            {"type": "exclusion", "criterion": "Type 1 diabetes", "status": "met", "plain": "Type 1 diabetes.",
             "reason": "You have type 2."},
            {"type": "inclusion", "criterion": "HbA1c 7-10%", "status": "not_enough_information",
             "plain": "A test result showing: HbA1c (average blood sugar over 2–3 months) between 7 and 10%.",
             "reason": "No HbA1c on record."},
        ],
        "unknowns": [{"kind": "record", "text": r} for r in checklist.records]
        + [{"kind": "question", "text": q, "topic": t} for q, t in zip(checklist.questions, checklist.topics, strict=True)],
    }
    assert checklist.records == ("Recent lab results (blood and urine tests)",)
    assert checklist.questions == (
        "Are my recent blood test results within the trial's limits, and can I have copies to bring?",)


def test_report_structured_limits_become_criteria() -> None:
    assert structured_criteria("18 Years", "75 Years", "ALL") == [Criterion(0, "Age 18 years to 75 years", "inclusion")]
    assert structured_criteria("65 Years", None, "FEMALE") == [
        Criterion(0, "Age 65 years or older", "inclusion"), Criterion(0, "Sex: female", "inclusion")]
    assert structured_criteria("N/A", "17 Years", "MALE") == [
        Criterion(0, "Age 17 years or younger", "inclusion"), Criterion(0, "Sex: male", "inclusion")]
    assert structured_criteria(None, "N/A", None) == []


_STALE_SQL = """
SELECT s.nct_id,
       upper(replace(replace(s.overall_status, ',', ''), ' ', '_')) IN ('RECRUITING', 'NOT_YET_RECRUITING',
                                                                       'ENROLLING_BY_INVITATION')
       AND (s.primary_completion_date < CAST(:today AS date)
            OR coalesce(s.last_update_posted_date, s.last_update_submitted_date) < CAST(:today AS date) - 730) AS stale
FROM ctgov.studies s
WHERE upper(replace(s.overall_status, ' ', '_')) = 'RECRUITING'
ORDER BY s.nct_id
"""


def test_report_marks_a_stale_recruiting_trial(db: Any) -> None:
    rows = db.fetch_rows(_STALE_SQL, {"today": DAY})
    stale = next(r["nct_id"] for r in rows if r["stale"])
    fresh = next(r["nct_id"] for r in rows if not r["stale"])
    backend = DatabaseBackend(db)
    request = ReportRequest(
        session_id="s" * 43, patient_profile={"diagnosis": "x", "age": 50}, intake_answers={},
        trials=tuple({"nct_id": n, "verdict": "uncertain", "fit_score": 30, "summary": "S", "criteria": [],
                      "unknowns": []} for n in (stale, fresh)),
        summary="S", questions_for_doctor=("Q?",), glossary=())
    inputs = trial_inputs(backend, request.patient_profile, request.trials)
    html = render_report(request, **inputs, generated_on=DAY)
    check_html(html)
    stale_part, fresh_part = html.split(f'id="trial-{fresh}"')
    details = backend.get_trial_details(stale) or {}
    assert "Status may be out of date — last updated " in stale_part.split(f'id="trial-{stale}"')[1]
    assert "Status may be out of date" not in fresh_part
    assert details.get("last_update_date") or details.get("primary_completion_date")


def test_report_how_we_searched_states_radius_searches_and_missing_criteria() -> None:
    facts = {"radius_miles": 200.0, "place": "Lompoc, CA", "found": 7, "without_criteria_text": 4, "checked": 7,
             "searches": [
                 {"strategy": "exact", "condition": "non-small cell lung cancer", "radius_miles": 200, "returned": 0,
                  "new": 0},
                 {"strategy": "wider_radius", "condition": "non-small cell lung cancer", "radius_miles": 600.0,
                  "returned": 1, "new": 1},
                 {"strategy": "wider_radius", "condition": "non-small cell lung cancer", "radius_miles": None,
                  "returned": 7, "new": 6}]}
    request = ReportRequest(
        session_id="s" * 43, patient_profile={}, intake_answers={},
        trials=({"nct_id": "NCT00000001", "verdict": "uncertain", "fit_score": 20, "summary": "S", "criteria": [],
                 "unknowns": [], "criteria_text": "missing from this copy"},),
        summary="S", questions_for_doctor=("Q1?", "Q2?"), glossary=(),
        question_groups=(("Your daily activity", ("Q1?",)), ("Taking part", ("Q2?",))), search_facts=facts)
    html = render_report(request, generated_on=DAY)
    check_html(html)
    section = html.split('id="search"')[1].split("</section>")[0]
    text = re.sub(r"<[^>]+>", " ", section)
    text = " ".join(text.split())
    assert "Travel limit: Up to 200 miles from Lompoc, CA." in text
    assert "3 searches of this app's copy of the registry ran" in text
    assert "Your condition near you (“non-small cell lung cancer”, within 200 miles): 0 trials, 0 new" in text
    assert "A wider distance (“non-small cell lung cancer”, within 600 miles): 1 trial, 1 new" in text
    assert "A wider distance (“non-small cell lung cancer”, at any distance): 7 trials, 6 new" in text
    assert "found 7 different trials: 3 with eligibility criteria text in our copy and 4 without it" in text
    assert "1 searches" not in html and "1 trials" not in html
    questions = html.split('id="questions"')[1].split("</section>")[0]
    assert re.findall(r"<h3>([^<]+)</h3>", questions) == ["Your daily activity", "Taking part"]
    assert "missing from this app's copy of the registry (not from the registry itself)" in html


def test_report_groups_questions_by_who_can_answer_them_and_shows_review_points() -> None:
    from services.assistant import careteam

    profile = {"diagnosis": "non-small cell lung cancer", "age": 62, "sex": "male",
               "other_conditions": ["heart failure"]}
    trials_ = tuple({"nct_id": n, "verdict": "uncertain", "fit_score": 40, "summary": "S", "unknowns": [],
                     "nearest_site": "Harbor Clinic, Santa Barbara, CA", "criteria": [
                         {"type": "inclusion", "criterion": c, "status": s, "plain": c, "reason": "R."}
                         for c, s in cs]}
                    for n, cs in (("NCT00000001", [("Measurable disease per RECIST 1.1", "not_enough_information"),
                                                   ("Stage IV disease <b>bold</b>", "not_met"),
                                                   ("History of heart failure", "met")]),
                                  ("NCT00000002", [("Absolute neutrophil count ≥ 1.5 x 10^9/L", "needs_discussion"),
                                                   ("History of heart failure", "met")])))
    team = careteam.build(profile, trials_).as_report()
    team["groups"][1]["source"], team["groups"][1]["note"] = "model", "1 of the model's questions could not be used."
    request = ReportRequest(
        session_id="s" * 43, patient_profile=profile, intake_answers={}, trials=trials_, summary="S",
        questions_for_doctor=("Do my latest scans show what this line asks for (RECIST), and are they recent "
                              "enough?",
                              "Should I <i>wait</i> before choosing?"),
        glossary=(), question_groups=(("Old topic", ("Old question?",)),), care_team=team)
    html = render_report(request, generated_on=DAY)
    check_html(html)
    questions = html.split('id="questions"')[1].split("</section>")[0]
    assert element_texts(questions, "h2") == ["Questions for your doctor, by who can answer them"]
    assert element_texts(questions, "h3") == [
        "Your oncologist (diagnosis, stage, treatments)", "Radiology (your scans)",
        "Pathology and laboratory (tumour tests, biomarkers, blood tests)",
        "The trial team (visits, travel, consent, pregnancy rules)", "More questions"]
    items = element_texts(questions, "li")
    assert ("NCT00000001 — “Measurable disease per RECIST 1.1”: Do my latest scans show what this line asks "
            "for (RECIST), and are they recent enough?") in items
    assert ("NCT00000002 — “Absolute neutrophil count ≥ 1.5 x 10^9/L”: Does my latest Absolute neutrophil "
            "count result meet “Absolute neutrophil count ≥ 1.5 x 10^9/L”, and is it recent enough for this "
            "trial?") in items
    # The flat list adds only what the groups do not ask already; the old topic groups give way to the care team.
    assert items[-1] == "Should I <i>wait</i> before choosing?" and "&lt;i&gt;wait&lt;/i&gt;" in questions
    assert "Old topic" not in html and items.count(
        "Do my latest scans show what this line asks for (RECIST), and are they recent enough?") == 0
    assert "Worded by the AI assistant from this part of your answers only. 1 of the model's questions could not be " \
           "used." in element_texts(questions, "p")
    # The reviewer's points stand under the trial they are about; a trial with none has no such heading.
    first, second = html.split('id="trial-NCT00000002"')
    first = first.split('id="trial-NCT00000001"')[1]
    assert "Points to check before you go further" in first and "Points to check" not in second.split("</article>")[0]
    assert element_texts(first.split("Points to check before you go further")[1].split("</ul>")[0], "li") == [
        "Conflict: “Stage IV disease <b>bold</b>”: your answers suggest you do not pass this line. R."]
    assert "<b>bold" not in html


def test_report_comparison_says_beyond_the_travel_limit_only_for_a_trial_that_is() -> None:
    from services.eligibility.scoring import reach_note, within_reach

    def match(nct_id: str, miles: float | None) -> dict[str, Any]:
        return {"nct_id": nct_id, "verdict": "uncertain", "summary": "S", "criteria": [], "unknowns": [],
                "distance_miles": miles, "within_reach": within_reach(miles, 100.0),
                "distance_note": reach_note(miles, 100.0)}

    request = ReportRequest(
        session_id="s" * 43, patient_profile={"travel_radius_miles": 100}, intake_answers={},
        trials=(match("NCT00000001", None), match("NCT00000002", 500.0), match("NCT00000003", 20.0)),
        summary="S", questions_for_doctor=("Q?",), glossary=())
    html = render_report(request, generated_on=DAY)
    [compare] = tables(html, "compare")
    nearest = {row[0]: row[1:] for row in compare[1:]}["Nearest site"]
    # The first trial's distance is unknown: its note says so, and the table must not call it beyond the limit.
    assert nearest == ["Not known", "Not known Beyond your travel limit", "Not known"]
    assert "No site of this trial has a known location in our copy" in html.split('id="trial-NCT00000001"')[1]


def test_report_a_shortened_quote_says_it_was_shortened() -> None:
    # Cut at a sentence end, the trial's wording lost its exception without a mark and read as the whole criterion.
    full = ("No prior chemotherapy for metastatic disease. " + "Detail " * 50
            + ". Exception: adjuvant chemotherapy more than 12 months ago is allowed.")
    [row] = criterion_rows([{"criterion": full, "plain": "No chemotherapy before.", "status": "met",
                             "type": "exclusion"}])
    assert len(full) > 400 and len(row["original"]) <= 400
    assert row["original"].endswith(" …") and full.startswith(row["original"][:-2])
    assert "Exception" not in row["original"]
    short = "No prior chemotherapy for metastatic disease. Exception: none."
    assert criterion_rows([{"criterion": short, "plain": "P.", "status": "met"}])[0]["original"] == short


def _one_trial_report(details: dict[str, Any]) -> str:
    """The report of one trial NCT00000001 (a bare saved match) with these details besides its id and title."""
    request = ReportRequest(
        session_id="s" * 43, patient_profile={}, intake_answers={},
        trials=({"nct_id": "NCT00000001", "verdict": "uncertain", "summary": "S", "criteria": [], "unknowns": []},),
        summary="S", questions_for_doctor=("Q?",), glossary=())
    full = {"nct_id": "NCT00000001", "title": "T", **details}
    return render_report(request, trial_details={"NCT00000001": full}, generated_on=DAY)  # type: ignore[dict-item]


def test_report_says_a_past_planned_end_in_the_past_tense() -> None:
    """'How long' says 'is planned to end' only for an end still ahead; one the registry has not updated since it
    passed 'was planned to end', and a completed trial 'ended'."""
    def how_long(status: str, start: str, end: str) -> str:
        html = _one_trial_report({"status": status, "start_date": start, "completion_date": end})
        return " ".join(re.sub(r"<[^>]+>", " ", html.split("How long:")[1].split("</li>")[0]).split())

    assert how_long("ACTIVE_NOT_RECRUITING", "2019-01", "2021-06").startswith(
        "the study started in January 2019 and was planned to end in June 2021 (about 2.4 years in all).")
    assert how_long("RECRUITING", "2025-01", "2028-06").startswith(
        "the study started in January 2025 and is planned to end in June 2028")
    assert how_long("NOT_YET_RECRUITING", "2026-06", "2027-06").startswith(
        "the study starts in June 2026 and is planned to end in June 2027")
    assert how_long("COMPLETED", "2019-01", "2021-06").startswith("the study started in January 2019 and ended in June 2021")
    assert how_long("RECRUITING", "2025-01", "2026-03").startswith(  # this month: not yet past
        "the study started in January 2025 and is planned to end in March 2026")


def test_report_how_long_says_what_it_knows_without_a_start_date() -> None:
    """Without a start date the 'How long' line was left out, even when the registry gave the planned end, and the
    comparison said 'Runs: Not given'; now it gives the end it knows, or says there is not enough information."""
    def rendered(start: str | None, end: str | None, status: str = "RECRUITING") -> tuple[str, str]:
        html = _one_trial_report({"status": status, "start_date": start, "completion_date": end})
        assert "How long:" in html
        how_long = " ".join(re.sub(r"<[^>]+>", " ", html.split("How long:")[1].split("</li>")[0]).split())
        [compare] = tables(html, "compare")
        return how_long, {row[0]: row[1:] for row in compare[1:]}["Runs"][0]

    how_long, runs = rendered(None, "2028-06")
    assert how_long.startswith("the registry gives no start date; the study is planned to end in June 2028.")
    assert runs == "Start not given, to June 2028"
    how_long, _ = rendered(None, "2021-06", "COMPLETED")
    assert how_long.startswith("the registry gives no start date; the study ended in June 2021.")
    how_long, runs = rendered(None, None)
    assert how_long.startswith("not enough information: the registry gives no start or end date.")
    assert runs == "Not given"


def test_report_travel_limit_in_whole_miles_like_the_cards() -> None:
    """A radius chosen in km is saved in miles (100 km = 62.137 miles): 'About you' and 'How we searched' said
    'Up to 62.1 miles' where the cards and the chat say 'within 62 miles', and a one-mile limit read 'Up to 1 miles'."""
    radius = 100 / 1.609344
    assert profile_rows({"travel_radius_miles": radius}, {}) == [("How far you would travel", "Up to 62 miles")]
    assert profile_rows({"travel_radius_miles": 1}, {}) == [("How far you would travel", "Up to 1 mile")]
    assert report.search_view({"radius_miles": radius, "place": "Lyon"})["limit"] == "Up to 62 miles from Lyon"
    assert report.search_view({"radius_miles": 1, "place": "Lyon"})["limit"] == "Up to 1 mile from Lyon"


def test_report_status_says_when_the_registry_recorded_it() -> None:
    """A printed report read 'Recruiting' with nothing to say when that was true: it is the registry's status as of
    the record's last update in our copy, which can be months old on the day the report is made. The comparison
    and the trial's section now say that date, or that our copy has none."""
    def statuses(last_update: str | None) -> tuple[str, str]:
        html = _one_trial_report({"status": "RECRUITING", "last_update_date": last_update})
        [compare] = tables(html, "compare")
        head = html.split('id="trial-NCT00000001"')[1].split("<h3>")[0]
        section = " ".join(unescape(re.sub(r"<[^>]+>", " ", head)).split())
        return {row[0]: row[1:] for row in compare[1:]}["Status"][0], section

    cell, section = statuses("2025-11-20")
    assert cell == "Recruiting as of the registry's update of November 20, 2025"
    assert "Recruiting as of the registry's update of November 20, 2025" in section
    cell, section = statuses(None)
    assert cell == "Recruiting (our copy has no update date)"
    assert "Recruiting (our copy has no update date)" in section


def test_report_how_we_searched_names_phases_in_words() -> None:
    """A phase search read 'phases PHASE2, PHASE3' (the registry's codes) in 'How we searched' and in the guided
    chat's search summary; it now says 'Phase 2 / Phase 3' as the rest of the report does."""
    from services.trials import describe_searches

    facts = {"searches": [{"strategy": "phase", "condition": "asthma", "radius_miles": 50, "phases": ["PHASE2", "PHASE3"],
                           "returned": 2, "new": 1}]}
    [line] = describe_searches(facts)
    assert line == "the trial phases you prefer (“asthma”, within 50 miles, Phase 2 / Phase 3): 2 trials, 1 new"
    assert "PHASE" not in report.search_view(facts)["searches"][0]


def test_report_how_we_searched_says_all_have_criteria_text_when_none_lacks_it() -> None:
    """With every trial carrying its criteria text, 'How we searched' read '… and 0 without it (for those only the
    age and sex limits could be checked; …)', a caveat about no trial; it now says they all have it."""
    facts = {"radius_miles": 50, "place": "Boston", "found": 3, "without_criteria_text": 0, "checked": 3,
             "searches": [{"strategy": "exact", "condition": "asthma", "radius_miles": 50, "returned": 3, "new": 3}]}
    request = ReportRequest(
        session_id="s" * 43, patient_profile={}, intake_answers={},
        trials=({"nct_id": "NCT00000001", "verdict": "uncertain", "summary": "S", "criteria": [], "unknowns": []},),
        summary="S", questions_for_doctor=("Q?",), glossary=(), search_facts=facts)
    section = render_report(request, generated_on=DAY).split('id="search"')[1].split("</section>")[0]
    text = " ".join(re.sub(r"<[^>]+>", " ", section).split())
    assert "Together they found 3 different trials, all with eligibility criteria text in our copy." in text
    assert "0 without" not in text and "for those only" not in text
