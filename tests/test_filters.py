"""The filter model's plain-language description: what it says must be what the filter selects."""

from __future__ import annotations

from services.dashboard.filters import Filters


def test_filters_describe_an_enrollment_cap_of_zero_as_a_cap() -> None:
    # enroll_max=0 selects trials enrolling no one; "0–…" would claim there is no upper bound at all.
    f, notices = Filters.from_query({"enroll_max": "0"})
    assert notices == [] and f.enrollment_max == 0
    assert "Enrollment: 0–0" in f.describe()
    assert "Enrollment: 0–…" in Filters(enrollment_min=0).describe()
    assert "Enrollment: 10–200" in Filters(enrollment_min=10, enrollment_max=200).describe()
