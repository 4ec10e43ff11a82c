"""The filter model's plain-language description: what it says must be what the filter selects."""

from __future__ import annotations

from services.dashboard import compare, filters
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


def test_filters_a_link_with_hundreds_of_unknown_parameters_gives_a_few_notices_and_a_count():
    # One notice per unknown parameter was kept for each of up to 999 parameters (the warning showed 12 of them).
    params = {"condition": "asthma", **{f"x{i}": "1" for i in range(900)}, "phase": "PHASE9"}
    f, notices = Filters.from_query(params)
    assert f == Filters(condition="asthma")
    n = filters.MAX_UNKNOWN_NOTICES
    assert notices == [*(f"Ignored unknown parameter “x{i}”." for i in range(n)),
                       f"Ignored {900 - n:,} more unknown parameters.", notices[-1]]
    assert notices[-1].startswith("Ignored phase:")
    got, b_notices = compare.b_from_query({f"b.x{i}": "1" for i in range(900)})
    assert got == Filters() and b_notices == ["Filter set B: " + n.replace("“x", "“b.x") for n in notices[:-1]]
    assert Filters.from_query({"x": "1", "phase": "PHASE9"})[1][0] == "Ignored unknown parameter “x”."


def test_filters_a_repeated_bad_value_is_named_once_in_its_notice():
    # ?phase=PHASE9&phase=PHASE9 gave "unknown value(s) PHASE9, PHASE9".
    for raw, named in ((["PHASE9", "PHASE9"], "PHASE9"), ("PHASE9,PHASE9,PHASE8,PHASE9", "PHASE9, PHASE8")):
        f, [notice] = Filters.from_query({"phase": raw})
        assert f == Filters()
        assert notice.startswith(f"Ignored phase: unknown value(s) {named}; allowed: "), notice



def test_filters_a_radius_too_large_for_a_number_says_so_not_more_than_zero():
    # ?radius=1e400 overflows to infinity: it was refused with "the radius must be a number more than 0".
    for raw in ("1e400", "-1e400", "inf"):
        f, [notice] = Filters.from_query({"radius": raw})
        assert f.radius == filters.DEFAULT_RADIUS
        assert "more than 0" not in notice and "not a finite number" in notice, notice
        assert notice.endswith(f"give a distance such as {filters.DEFAULT_RADIUS:g} (at most 12,500 mi or "
                               f"20,116 km)."), notice
    assert Filters.from_query({"radius": "-5"})[1] == ["Ignored radius: the radius must be a number more than 0."]
