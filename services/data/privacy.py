"""Personal contact data in shipped records: the patterns we refuse and the scrub that removes them.

Run as `python -m services.data.privacy IN.jsonl.gz OUT.jsonl.gz` to rewrite a JSON-lines file with every
phone number and e-mail address in its text replaced and every API v2 contact key dropped. Lines with
nothing to remove are copied byte for byte.
"""

from __future__ import annotations

import gzip
import json
import re
import sys
from pathlib import Path
from typing import Any

EMAIL_RE = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
# North-American numbers (with or without +1, brackets, dots, dashes, spaces), vanity numbers such as
# 1-877-CTLILLY, and international numbers written with a leading +. Never inside a word, a decimal or a URL.
PHONE_RE = re.compile(
    r"(?<![\w+./=-])(?:\+?1[\s-]?)?(?:\([2-9]\d\d\)\s?|[2-9]\d\d[\s.-])[2-9]\d\d[\s.-]\d{4}(?![\w-])"
    r"|(?<![\w+./=-])1-8\d\d-[A-Z]{4,7}(?![\w-])"
    r"|(?<![\w+./=-])\+\d{1,3}(?:[\s.-]?\(?\d{1,5}\)?){2,6}(?![\w-])"
)
# API v2 keys that hold people's contact data (contactsLocationsModule, resultsSection.moreInfoModule).
# Dropped wherever they occur:
CONTACT_KEYS = frozenset({
    "centralContacts", "contacts", "investigatorFullName", "oldNameTitle", "phone", "phoneExt", "email",
})
# Dropped inside these objects only (an official keeps affiliation and role; a point of contact its organization):
CONTACT_KEYS_IN = {"overallOfficials": frozenset({"name"}), "pointOfContact": frozenset({"title"})}
PHONE_REPLACEMENT = "[phone removed]"
EMAIL_REPLACEMENT = "[email removed]"


def _phone_like(match: re.Match[str]) -> bool:
    digits = sum(c.isdigit() for c in match.group(0))
    return digits >= 8 or match.group(0)[-1].isalpha()


def scrub_text(text: str) -> str:
    """Replace every e-mail address and phone number in a text."""
    text = EMAIL_RE.sub(EMAIL_REPLACEMENT, text)
    return PHONE_RE.sub(lambda m: PHONE_REPLACEMENT if _phone_like(m) else m.group(0), text)


def _dropped(parent: str) -> frozenset[str]:
    return CONTACT_KEYS | CONTACT_KEYS_IN.get(parent, frozenset())


def scrub(value: Any, parent: str = "") -> Any:
    """A copy of a JSON value without contact keys and with contact data removed from every string."""
    if isinstance(value, dict):
        drop = _dropped(parent)
        return {k: scrub(v, k) for k, v in value.items() if k not in drop}
    if isinstance(value, list):
        return [scrub(v, parent) for v in value]
    if isinstance(value, str):
        return scrub_text(value)
    return value


def contact_keys(value: Any, path: str = "", parent: str = "") -> list[str]:
    """Paths of every contact key in a JSON value."""
    if isinstance(value, dict):
        drop = _dropped(parent)
        out = [f"{path}.{k}" for k in value if k in drop]
        for k, v in value.items():
            out += contact_keys(v, f"{path}.{k}", k)
        return out
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in contact_keys(v, f"{path}[{i}]", parent)]
    return []


def scrub_file(src: Path, dst: Path) -> int:
    """Rewrite a (gzipped) JSON-lines file without contact data; return how many lines changed."""
    changed = 0
    opener = gzip.open if src.suffix == ".gz" else open
    with opener(src, "rt", encoding="utf-8") as fin, gzip.open(dst, "wt", encoding="utf-8", compresslevel=9) as fout:
        for line in fin:
            record = json.loads(line)
            clean = scrub(record)
            if clean != record:
                changed += 1
                fout.write(json.dumps(clean, ensure_ascii=False, separators=(",", ":")) + "\n")
            else:
                fout.write(line if line.endswith("\n") else line + "\n")
    return changed


if __name__ == "__main__":  # pragma: no cover - a data-preparation step, run by hand
    print(scrub_file(Path(sys.argv[1]), Path(sys.argv[2])), "lines changed")
