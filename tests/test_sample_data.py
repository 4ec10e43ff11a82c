"""The shipped data folder holds no personal contact data: no e-mail, no phone number, no API v2 contact key."""

from __future__ import annotations

import gzip
import json
import re
from functools import cache
from pathlib import Path

from services.data.privacy import EMAIL_RE, PHONE_RE, _phone_like, contact_keys

DATA = Path(__file__).resolve().parent.parent / "data"
# A line can only hold a contact key if one of these appears in it (parsing only those lines keeps the scan fast).
KEY_HINTS = tuple(f'"{k}"' for k in ("centralContacts", "contacts", "investigatorFullName", "oldNameTitle", "phone",
                                     "phoneExt", "email", "overallOfficials", "pointOfContact"))


# Cheap anchors every match contains, each found by a fast scan; the full patterns only run around them.
_DIGIT_ANCHOR_RE = re.compile(r"\d[\s.-]\d{4}(?!\d)")
_LITERAL_ANCHORS = ("@", "+", "1-8")


def _anchors(text: str) -> list[int]:
    found = [m.start() for m in _DIGIT_ANCHOR_RE.finditer(text)]
    for literal in _LITERAL_ANCHORS:
        i = text.find(literal)
        while i >= 0:
            found.append(i)
            i = text.find(literal, i + 1)
    return sorted(found)


def find_contacts(text: str) -> list[str]:
    """Phone numbers and e-mail addresses in a text, in order of appearance (privacy.scrub_text's anchors)."""
    spans: dict[tuple[int, int], str] = {}
    for at in _anchors(text):
        lo, hi = max(0, at - 80), min(len(text), at + 120)
        for pattern in (EMAIL_RE, PHONE_RE):
            for m in pattern.finditer(text, lo, hi):
                if m.start() <= at < m.end() and (m.end() < hi or hi == len(text)) \
                        and (pattern is EMAIL_RE or _phone_like(m)):
                    spans[m.span()] = m.group(0)
    return [spans[k] for k in sorted(spans)]


@cache
def _texts() -> list[tuple[Path, str]]:
    out = []
    for path in sorted(p for p in DATA.rglob("*") if p.is_file()):
        raw = path.read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        out.append((path, raw.decode("utf-8")))
    return out


def test_sample_data_has_no_email_or_phone_number():
    texts = _texts()
    assert any(p.name == "full_records.jsonl.gz" for p, _ in texts)  # the scan sees the shipped sample
    found = {}
    for path, text in texts:
        hits = find_contacts(text)
        if hits:
            found[str(path.relative_to(DATA))] = sorted(set(hits))[:5]
    assert found == {}


def test_sample_data_has_no_api_v2_contact_keys():
    found = {}
    for path, text in _texts():
        if not path.name.endswith((".jsonl", ".jsonl.gz", ".json", ".geojson")):
            continue
        lines = text.splitlines() if ".jsonl" in path.name else [text]
        docs = [json.loads(line) for line in lines if line.strip() and any(h in line for h in KEY_HINTS)]
        keys = sorted({re.sub(r"\[\d+\]", "[]", k) for doc in docs for k in contact_keys(doc)})
        if keys:
            found[str(path.relative_to(DATA))] = keys
    assert found == {}


def test_sample_data_scan_recognises_contact_data():
    """The scan's patterns find what they are meant to find (so an empty result means something)."""
    study = {"protocolSection": {"contactsLocationsModule": {
        "centralContacts": [{"name": "A B", "phone": "617-555-0100"}],
        "overallOfficials": [{"name": "C D", "affiliation": "X", "role": "PRINCIPAL_INVESTIGATOR"}],
        "locations": [{"facility": "Y", "contacts": [{"email": "a@b.org"}]}]}}}
    assert sorted(re.sub(r"\[\d+\]", "[]", k) for k in contact_keys(study)) == [
        ".protocolSection.contactsLocationsModule.centralContacts",
        ".protocolSection.contactsLocationsModule.centralContacts[].phone",
        ".protocolSection.contactsLocationsModule.locations[].contacts",
        ".protocolSection.contactsLocationsModule.locations[].contacts[].email",
        ".protocolSection.contactsLocationsModule.overallOfficials[].name"]
    text = "call 1-877-CTLILLY (1-877-285-4559) or +45 86 19 71 09, write to x.y@site.org; dose 1.5 mg, NCT01234567"
    assert find_contacts(text) == ["1-877-CTLILLY", "1-877-285-4559", "+45 86 19 71 09", "x.y@site.org"]
    assert find_contacts("Stage 1.5 to 3.0, 2023-05-01, ECOG 0-1, 100 mg/m2, HbA1c 7.0-10.5%, NCT01234567") == []


def _n(text: str) -> int:
    return int(text.replace(",", ""))


def test_sample_data_readme_counts_follow_the_files(raw_v2, raw_csv, raw_fill):
    """The README's sample counts are the files' counts (no database needed)."""
    readme = (DATA.parent / "README.md").read_text(encoding="utf-8")
    m = re.search(r"shipped sample of ([\d,]+) real studies \(([\d,]+) full\s+records, ([\d,]+) partial records from "
                  r"CSV downloads, ([\d,]+) of those with criteria text added\)", readme)
    assert m, "the README's opening paragraph no longer states the sample's counts"
    csv_ids = {r["NCT Number"] for r in raw_csv}
    assert tuple(_n(g) for g in m.groups()) == (len(raw_v2) + len(raw_csv), len(raw_v2), len(raw_csv),
                                                sum(1 for f in raw_fill if f["nct_id"] in csv_ids))
    assert f"In all: {len(raw_v2) + len(raw_csv):,} studies, {len(raw_v2):,} full records and {len(raw_csv):,}" in \
        " ".join(readme.split())
