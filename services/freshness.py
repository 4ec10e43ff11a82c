"""Status freshness: whether a trial that says it is open may no longer be, and the mark that says so.

A registry status is only as fresh as the record's last update. A trial still listed as recruiting after its
primary completion date has passed, or whose record has not been updated for more than two years, may well have
stopped taking people; ClinicalTrials.gov itself moves such records to "Unknown status" only later. Every page,
card and report that shows a status uses :func:`status_note` so they say the same thing.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from services.data.normalize import ENROLLING_STATUSES, canonical

STALE_AFTER_DAYS = 730  # "not updated in over two years"
MARK = "Status may be out of date"


def as_date(value: Any) -> dt.date | None:
    """A date from a date, a datetime or ISO text ('2024-05-01', '2024-05' = the 1st); None otherwise."""
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    text = str(value).strip()
    for fmt, size in (("%Y-%m-%d", 10), ("%Y-%m", 7)):
        try:
            return dt.datetime.strptime(text[:size], fmt).date()
        except ValueError:
            continue
    return None


def status_note(status: Any, *, primary_completion: Any = None, last_update: Any = None,
                today: dt.date | None = None) -> str | None:
    """The "status may be out of date" sentence for an open trial whose status looks stale, else None.

    Stale means: its primary completion date is before ``today``, or its last update is more than two years
    before ``today``. ``today`` defaults to the current date (tests pass their own).
    """
    code = canonical("status", str(status)) if status else None
    if code not in ENROLLING_STATUSES:
        return None
    today = today or dt.date.today()
    completion = as_date(primary_completion)
    updated = as_date(last_update)
    reasons: list[str] = []
    if completion is not None and completion < today:
        reasons.append(f"its primary completion date ({completion:%B %Y}) has passed")
    if updated is not None and (today - updated).days > STALE_AFTER_DAYS:
        reasons.append("it has not been updated for more than two years")
    if not reasons:
        return None
    when = f"last updated {updated:%B %-d, %Y}" if updated is not None else "no update date in our copy"
    return f"{MARK} — {when}; {' and '.join(reasons)}. Check ClinicalTrials.gov or ask the study team."


def last_update_of(record: Any) -> Any:
    """The record's last update date: last_update_posted_date, else last_update_submitted_date."""
    get = getattr(record, "get", None)
    if get is None:
        return None
    return get("last_update_posted_date") or get("last_update_submitted_date")
