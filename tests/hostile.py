"""A hostile ClinicalTrials.gov record for tests: every free-text field tries to make the browser fetch something.

Built from a real record of the shipped sample (so every loader path and page has something to show), with
script tags, Markdown images and links, `javascript:` links, CSS, SVG, Plotly's pseudo-HTML, bare URLs and very
long text in the title, conditions, keywords, sponsor, collaborator, facility, criteria, summary, arms,
interventions and outcomes. Every outside address points at `beacon` (a local server of the test's own, on another
origin), so a fetch is both intercepted in the browser and logged by the beacon.
"""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parent.parent
HOSTILE_NCT = "NCT99999901"
MARK = "zzhostile"  # a word only the hostile record contains (a condition filter that finds just it)


def payloads(beacon: str, tag: str) -> list[str]:
    """Text that would fetch `beacon/<tag>-…` if it were rendered as Markdown, HTML, SVG, CSS or Plotly labels."""
    b = beacon.rstrip("/")
    return [
        f"![x]({b}/{tag}-mdimg.png)",
        f"[click]({b}/{tag}-mdlink) [js](javascript:fetch('{b}/{tag}-jslink'))",
        f"<img src=\"{b}/{tag}-img.png\" onerror=\"fetch('{b}/{tag}-onerror')\">",
        f"<script>fetch('{b}/{tag}-script')</script>",
        f"<style>body{{background:url({b}/{tag}-css.png)}}</style>",
        f"<svg><image href=\"{b}/{tag}-svg.png\"/></svg>",
        f"<a href=\"{b}/{tag}-a\">a</a> <span style=\"background:url({b}/{tag}-span.png)\">s</span>",
        f"<{b}/{tag}-autolink> {b}/{tag}-bare www.{tag}.example",
        f"$\\includegraphics{{{b}/{tag}-tex.png}}$ :red[{tag}]",
    ]


def hostile_text(beacon: str, tag: str, long: bool = False) -> str:
    """One field's hostile text, with the marker word; `long` adds thousands of characters."""
    text = f"{MARK} {tag} " + " ".join(payloads(beacon, tag))
    return text + (" lorem" * 1500 if long else "")


def _base_record() -> dict[str, Any]:
    with gzip.open(PROJECT / "data" / "ctgov_sample.jsonl.gz", "rt", encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            record = json.loads(line)
            ps = record["protocolSection"]
            if (ps.get("armsInterventionsModule") and ps.get("outcomesModule")
                    and ps.get("contactsLocationsModule", {}).get("locations")
                    and ps["statusModule"].get("overallStatus") == "RECRUITING"
                    and ps.get("eligibilityModule", {}).get("eligibilityCriteria")):
                return record
    raise AssertionError("the sample has no recruiting interventional record with sites, arms and outcomes")


def hostile_record(beacon: str) -> dict[str, Any]:
    """The hostile study as a ClinicalTrials.gov API v2 record."""
    record = copy.deepcopy(_base_record())
    ps = record["protocolSection"]
    h = lambda tag, long=False: hostile_text(beacon, tag, long)  # noqa: E731
    ident = ps["identificationModule"]
    ident.update(nctId=HOSTILE_NCT, briefTitle=h("title", long=True), officialTitle=h("official"),
                 acronym=f"<b>{MARK}</b>")
    ps["conditionsModule"] = {"conditions": [h("condition"), f"{MARK} plain condition"],
                              "keywords": [h("keyword")]}
    ps["sponsorCollaboratorsModule"] = {
        "leadSponsor": {"name": h("sponsor"), "class": "OTHER"},
        "collaborators": [{"name": h("collaborator"), "class": "INDUSTRY"}],
    }
    ps["descriptionModule"] = {"briefSummary": h("summary", long=True), "detailedDescription": h("description")}
    ps["eligibilityModule"].update(
        eligibilityCriteria=("Inclusion Criteria:\n\n* " + h("inclusion") + "\n* Age 18 or older\n\n"
                             "Exclusion Criteria:\n\n* " + h("exclusion", long=True)),
        sex="ALL", minimumAge="18 Years", healthyVolunteers=False)
    ps["eligibilityModule"].pop("maximumAge", None)
    arms = ps["armsInterventionsModule"]
    for group in arms.get("armGroups", []):
        group.update(label=h("arm"), description=h("armdesc"))
        if group.get("interventionNames"):
            group["interventionNames"] = ["Drug: " + h("intervention")]
    for item in arms.get("interventions", []):
        item.update(name=h("intervention"), description=h("interventiondesc"))
        item["armGroupLabels"] = [h("arm")]
    outcomes = ps["outcomesModule"]
    for kind in ("primaryOutcomes", "secondaryOutcomes"):
        for outcome in outcomes.get(kind, []):
            outcome.update(measure=h("outcome"), description=h("outcomedesc"), timeFrame=h("timeframe"))
    sites = ps["contactsLocationsModule"]["locations"]
    ps["contactsLocationsModule"] = {"locations": [dict(sites[0], facility=h("facility"), city="Boston",
                                                        state="Massachusetts", zip="02115",
                                                        country="United States", status="RECRUITING",
                                                        geoPoint={"lat": 42.35843, "lon": -71.05977})]}
    record.pop("resultsSection", None)
    record["hasResults"] = False
    return record


def write_record(path: Path, beacon: str) -> Path:
    """The hostile study as a one-line JSONL file for the importer."""
    path.write_text(json.dumps(hostile_record(beacon)) + "\n", encoding="utf-8")
    return path
