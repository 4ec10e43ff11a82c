"""The filter model's plain-language description: what it says must be what the filter selects."""

from __future__ import annotations

from services.dashboard.filters import Filters
from services.data.normalize import ENROLLING_STATUSES, OPEN_STATUSES


def test_filters_describe_an_enrollment_cap_of_zero_as_a_cap() -> None:
    # enroll_max=0 selects trials enrolling no one; "0–…" would claim there is no upper bound at all.
    f, notices = Filters.from_query({"enroll_max": "0"})
    assert notices == [] and f.enrollment_max == 0
    assert "Enrollment: 0–0" in f.describe()
    assert "Enrollment: 0–…" in Filters(enrollment_min=0).describe()
    assert "Enrollment: 10–200" in Filters(enrollment_min=10, enrollment_max=200).describe()


def test_filters_describe_the_default_status_without_claiming_enrolment() -> None:
    # The default keeps "Active, not recruiting" trials, which enrol no one: its caption may not call them open to
    # enrolment (every caption, saved view and comparison reads this line).
    assert "ACTIVE_NOT_RECRUITING" in OPEN_STATUSES
    line = Filters().describe()[0]
    assert "enrol" not in line and line == "Status: open or still running"
    assert Filters(status=ENROLLING_STATUSES).describe()[0].startswith("Status: Recruiting, ")
