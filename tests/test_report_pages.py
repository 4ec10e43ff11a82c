"""The report a doctor would keep reading: the first page says what our copy is and what the search could not
see, three trials fit in eight pages before the appendix, tables fit the page, record text shows as written,
and the contact draft asks the study team only what the patient cannot answer."""

from __future__ import annotations

import json
import os
import re
from datetime import date
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from services import report
from services.assistant import careteam
from services.assistant.backend import DatabaseBackend
from services.eligibility.match import match_record, structured_criteria
from services.eligibility.model import judge_criteria
from services.eligibility.parser import parse_criteria
from services.eligibility.patient import PatientProfile
from services.report.coverage import coverage_view, nothing_fits, registry
from services.report.trial import SELF_KNOWN_FILE, contact_view, patient_can_answer
from services.report.words import record_text
from services.trials import ReportRequest
from tests.html_check import check_html

CHROMIUM = "/usr/bin/chromium"
DAY = date(2026, 3, 2)
# A 9-year-old boy in Houston with relapsed B-ALL, and three open leukaemia trials from the sample whose
# records are long (39, 25 and 12 criteria): the report for such a patient ran to 31 pages.
CHILD_TRIALS = ("NCT05645718", "NCT05326516", "NCT05521087")
CHILD = PatientProfile(
    age=9,
    sex="male",
    conditions=("relapsed B-cell acute lymphoblastic leukemia",),
    treatments=("vincristine", "dexamethasone", "pegaspargase"),
)
CHILD_DIAGNOSIS = "relapsed B-cell acute lymphoblastic leukemia"
CHILD_FORM: dict[str, Any] = {
    "diagnosis": CHILD_DIAGNOSIS,
    "stage": "first relapse",
    "age": 9,
    "sex": "male",
    "location": "Houston, TX",
    "travel_radius_miles": 30,
    "treatments": ["vincristine", "dexamethasone", "pegaspargase"],
}
APPENDIX = re.compile(r'<section id="appendix">.*?</section><!-- /appendix -->', re.S)


def _pages(pdf: bytes) -> int:
    """Pages of a PDF: its page objects (/Type /Page, not the /Pages tree)."""
    return len(re.findall(rb"/Type\s*/Page\b", pdf))


@pytest.fixture(scope="module")
def child(db: Any) -> SimpleNamespace:
    """Judge the three trials for the child, build the care team's questions, render as the backend does."""
    backend = DatabaseBackend(db)
    place = backend.geocode_location("Houston, TX")
    assert place is not None
    profile = {**CHILD_FORM, "latitude": place["latitude"], "longitude": place["longitude"]}
    matches = []
    for nct_id in CHILD_TRIALS:
        info, details = backend.get_eligibility_criteria(nct_id), backend.get_trial_details(nct_id)
        assert info is not None and details is not None
        criteria = structured_criteria(info.get("min_age"), info.get("max_age"), info.get("sex"))
        criteria += list(parse_criteria(info.get("criteria_text")).all)
        matches.append(
            match_record(
                nct_id,
                judge_criteria(criteria, CHILD),
                title=details.get("title"),
                status=details.get("status"),
                phases=details.get("phases") or (),
            )
        )
    facts = {
        "radius_miles": 30,
        "place": "Houston, TX",
        "found": 43,
        "checked": 20,
        "without_criteria_text": 3,
        "searches": [
            {
                "strategy": "exact",
                "condition": CHILD_FORM["diagnosis"],
                "radius_miles": 30,
                "returned": 4,
                "new": 4,
            }
        ],
    }
    request = ReportRequest(
        session_id="c" * 43,
        patient_profile=profile,
        intake_answers=dict(CHILD_FORM),
        trials=tuple(matches),
        summary="You are 9 years old, male, with relapsed B-cell acute lymphoblastic leukemia.",
        questions_for_doctor=(),
        glossary=(),
        search_facts=facts,
        care_team=careteam.build(profile, matches).as_report(),
    )
    coverage = backend.copy_coverage(profile)
    html = report.render_report(
        request, **report.trial_inputs(backend, profile, matches), coverage=coverage, generated_on=DAY
    )
    return SimpleNamespace(
        backend=backend,
        profile=profile,
        matches=matches,
        request=request,
        coverage=coverage,
        html=html,
        db=db,
    )


def test_report_pages_coverage_counts_come_from_the_database(child: SimpleNamespace) -> None:
    got = child.coverage
    assert got["studies"] == int(child.db.fetch_value("SELECT count(*) FROM ctgov.studies"))
    assert got["newest_update"] == child.db.fetch_value(
        "SELECT max(last_update_posted_date) FROM ctgov.studies"
    )
    # The open trials of the condition for a 9-year-old boy, and of those the ones with no located site,
    # counted a second way: the dashboard engine's ids, each one's sites read through the backend.
    from services.dashboard.engine import engine_for
    from services.dashboard.filters import Filters

    ids = engine_for(child.db).matching_ids(
        Filters(condition=CHILD_DIAGNOSIS, age=9.0, sex="MALE", status=("RECRUITING", "NOT_YET_RECRUITING"))
    )
    unlocated = [
        i
        for i in ids
        if not any(s.get("latitude") is not None for s in child.backend.get_trial_locations(i, None) or [])
    ]
    assert (got["matching"], got["without_located_site"]) == (len(ids), len(unlocated))
    assert 0 < got["without_located_site"] <= got["matching"]


def test_report_pages_first_page_names_the_sample_and_the_unseen_trials(child: SimpleNamespace) -> None:
    first = child.html.split('<section id="about-you">')[0]  # everything before the second page's sections
    assert check_html(child.html)["problems"] == []
    studies, whole = child.coverage["studies"], registry()["registry_studies"]
    assert f"a sample: {studies:,} studies of about {whole:,} in the registry" in first
    hidden, matching = child.coverage["without_located_site"], child.coverage["matching"]
    which = "none of them has a" if hidden == matching else f"{hidden:,} of them have no"
    assert (
        f"Our copy has {matching} open trials for “{CHILD_DIAGNOSIS}” that take someone of your age and "
        f"sex, and {which} site with a known location in our copy"
    ) in first
    assert (
        "A search within 30 miles cannot see them; none of the searches for this report could list them."
        in first
    )
    anywhere = dict(
        child.request.search_facts,
        searches=[
            *child.request.search_facts["searches"],
            {"strategy": "wider_radius", "radius_miles": None},
        ],
    )
    assert (
        "the search at any distance listed them, but their distances are not known"
        in coverage_view(child.coverage, anywhere, [], "")["unseen_text"]
    )
    newest = child.coverage["newest_update"]
    assert f"and {newest:%B %Y}" in first  # the as-of dates, from the database
    assert first.index('id="coverage"') < first.index('id="summary"')


def test_report_pages_say_so_when_nothing_fits_and_what_to_do() -> None:
    off = [{"verdict": "not_relevant"}, {"verdict": "not_relevant"}, {"verdict": "excluded"}]
    said = nothing_fits(off, "type 2 diabetes", 575000)
    assert said is not None
    assert said["headline"] == "All 3 trials in this report look unlikely to fit you."
    assert said["detail"].startswith(
        "By our reading of their records, 2 seem to be about another condition than "
        "yours and 1 have a line that rules you out."
    )
    assert "Search ClinicalTrials.gov itself for “type 2 diabetes”" in said["steps"][0]
    assert nothing_fits([*off, {"verdict": "uncertain"}], "x", 575000) is None
    assert nothing_fits([], "x", 575000) is None
    assert coverage_view(None, {}, off, "type 2 diabetes")["nothing_fits"] == said


def test_report_pages_the_copy_sentence_follows_the_copys_size() -> None:
    whole = registry()["registry_studies"]
    full = coverage_view(
        {"studies": whole - 10, "newest_update": date(2026, 11, 1), "oldest_update": date(2001, 5, 3)},
        {},
        [],
        "",
    )
    assert full["copy_text"].startswith(
        f"This report searched this app's copy of ClinicalTrials.gov: {whole - 10:,} "
        "studies, about the whole registry."
    )
    assert "between May 2001 and November 2026" in full["copy_text"]
    assert "sample" not in full["copy_text"]


@pytest.mark.browser
def test_report_pages_three_trials_fit_eight_pages_before_the_appendix(child: SimpleNamespace) -> None:
    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian's chromium is not installed, so no PDF engine is present")
    whole = report.render_pdf(child.html)
    main = report.render_pdf(APPENDIX.sub("", child.html))
    assert whole is not None and main is not None
    assert _pages(main) <= 8, _pages(main)
    assert _pages(whole) > _pages(main)  # the full criterion tables are all still there, in the appendix
    appendix = APPENDIX.search(child.html)
    assert appendix is not None and appendix.group(0).count('<table class="checklist">') == 3


@pytest.mark.browser
def test_report_pages_no_table_is_wider_than_the_page(child: SimpleNamespace, scratch_dir: Path) -> None:
    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian's chromium is not installed")
    from playwright.sync_api import sync_playwright

    # A printed US Letter page is 8.5 in wide; with the stylesheet's 12 mm side margins about 726 CSS pixels
    # are left. A long unbroken token (a URL, a gene list) in a cell must wrap instead of widening its table.
    long_word = "ABCDEFGHIJ" * 30
    html = child.html.replace(
        "</main>",
        f'<table class="checklist"><tr><td>{long_word}</td><td>x</td><td>y</td>'
        f"<td>z</td></tr></table></main>",
    )
    page_file = scratch_dir / "report.html"
    page_file.write_text(html, encoding="utf-8")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 726, "height": 1000})
            page.emulate_media(media="print")
            page.goto(page_file.as_uri())
            widths = page.evaluate("""() => [...document.querySelectorAll('table')].map(t => ({
                cls: t.className, table: t.scrollWidth, box: t.parentElement.clientWidth}))
                .concat([{cls: 'page', table: document.documentElement.scrollWidth,
                          box: document.documentElement.clientWidth}])""")
        finally:
            browser.close()
    assert len(widths) >= 8  # the comparison, three checklists, the study groups, side effects, the added one
    assert [w for w in widths if w["table"] > w["box"]] == []


def test_report_pages_record_text_shows_as_written() -> None:
    assert (
        record_text(r"management \[1\] of \(acute\) \*leukaemia\* \>= 18 \#2")
        == "management [1] of (acute) *leukaemia* >= 18 #2"
    )
    assert record_text(None) == ""


def test_report_pages_registry_escapes_never_reach_the_page(child: SimpleNamespace) -> None:
    nct = CHILD_TRIALS[0]
    details = {
        "nct_id": nct,
        "title": r"Study \[A\] of \<b\>x\</b\>",
        "summary": r"Standard management \[1\].",
    }
    html = report.render_report(child.request, trial_details={nct: details},  # type: ignore[dict-item]
                                generated_on=DAY)
    assert "Standard management [1]." in html and r"\[" not in html
    assert "Study [A] of &lt;b&gt;x&lt;/b&gt;" in html  # unescaped from Markdown, still escaped for HTML
    assert "<b>x" not in html


def test_report_pages_self_known_cues_each_match_their_example() -> None:
    rows = json.loads(SELF_KNOWN_FILE.read_text(encoding="utf-8"))["cues"]
    assert len(rows) >= 8
    for row in rows:
        assert re.search(row["pattern"], row["example"], re.I), row["fact"]
        assert patient_can_answer(row["example"]), row["fact"]


def test_report_pages_contact_draft_asks_only_what_the_patient_cannot_answer() -> None:
    profile = {"age": 58, "sex": "male", "diagnosis": "type 2 diabetes", "location": "Houston, TX"}
    lines = [
        ("BMI ≥ 25 kg/m2", "inclusion"),
        ("Age 18 years or older", "inclusion"),
        ("HbA1c between 7.0% and 10.0%", "inclusion"),
        ("Willing to use a smartphone app daily", "inclusion"),
        ("Current smokers", "exclusion"),
        ("Treated with a GLP-1 receptor agonist within 3 months", "exclusion"),
        ("Previous participation in a study of the same device", "exclusion"),
    ]
    match = {
        "nct_id": "NCT04886388",
        "title": "An app for diabetes",
        "criteria": [
            {"criterion": t, "plain": t, "type": k, "status": "not_enough_information"} for t, k in lines
        ],
    }
    draft = contact_view(profile, match, None, None)["message"]
    asked = [line[2:] for line in draft.splitlines() if line.startswith("- ")]
    assert asked == [
        "Treated with a GLP-1 receptor agonist within 3 months",
        "Previous participation in a study of the same device",
    ]
    assert "BMI" not in draft and "HbA1c" not in draft and "Age 18" not in draft


def test_report_pages_contact_draft_for_a_child_is_written_by_a_parent(child: SimpleNamespace) -> None:
    draft = contact_view(child.profile, child.matches[0], None, None)["message"]
    assert (
        "I am writing about my 9-year-old son, who has relapsed B-cell acute lymphoblastic leukemia" in draft
    )
    assert "would like to know whether he could take part" in draft
    assert "year-old man" not in draft
    assert "Age limits" not in draft and "Sex:" not in draft
