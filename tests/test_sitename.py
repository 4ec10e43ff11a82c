"""The facility grouping rule (services/data/sitename.py): real names from the sample, and the SQL twin of the rule."""

from __future__ import annotations

import pytest

from services.data import runtime, sitename

# Spellings found side by side in the shipped sample's ctgov.facilities (same city and country).
SAME_SITE = [
    (("Washington University School Of Medicine", "St Louis"), ("Washington University School of Medicine",
                                                                "St. Louis")),
    (("Memorial Sloan -Kettering Cancer Center", "New York"), ("Memorial Sloan Kettering Cancer Center", "New York")),
    (("The University of Texas M.D. Anderson Cancer Center", "Houston"),
     ("The University of Texas MD Anderson Cancer Center", "Houston")),
    (("The University of Michigan", "Ann Arbor"), ("University of MIchigan", "Ann Arbor")),
    (("Oregon Health & Science University", "Portland"), ("Oregon Health And Science University", "Portland")),
    (("Brigham & Women's Hospital", "Boston"), ("Brigham and Women’s Hospital", "Boston")),
    (("Univ of Nebraska Medical CTR", "Omaha"), ("University Of Nebraska Medical Center", "Omaha")),
    (("Hosp. de La Santa Creu I Sant Pau", "Barcelona"), ("Hospital De La Santa Creu I Sant Pau", "Barcelona")),
    (("Beth Israel Deaconess Medical Centre", "Boston"), ("Beth Israel Deaconess Medical Center", "Boston")),
    (("Centre Léon Bérard", "Lyon"), ("Centre Leon Berard", "Lyon")),
    (("Univ. of Chicago", "Chicago"), ("The University of Chicago", "Chicago")),
    (("Cedars- Sinai Medical Center", "Los Angeles"), ("Cedars-Sinai Medical Center", "Los Angeles")),
    (("St Michael's Hospital", "Toronto"), ("St. Michaels Hospital", "Toronto")),
    (("ASAN Medical Center", "Seoul"), ("Asan medical center", "Seoul")),
]

# Rows that must stay apart: one name in two cities, different hospitals, an alias only in its own city.
# (Placeholder names such as "Research Site" have no group at all: test_sitename_placeholders_form_no_group.)
DIFFERENT_SITES = [
    (("Asan Medical Center", "Seoul"), ("Asan Medical Center", "Busan")),
    (("MD Anderson Cancer Center", "Madrid"),
     ("The University of Texas MD Anderson Cancer Center", "Madrid")),
    (("Banner MD Anderson Cancer Center", "Gilbert"), ("MD Anderson Cancer Center", "Gilbert")),
    (("Massachusetts General Hospital", "Boston"), ("Brigham and Women's Hospital", "Boston")),
]


@pytest.mark.parametrize(("a", "b"), SAME_SITE)
def test_sitename_merges_spellings_of_one_site(a, b):
    assert sitename.site_key(a[0], a[1], "United States") == sitename.site_key(b[0], b[1], "United States")


@pytest.mark.parametrize(("a", "b"), DIFFERENT_SITES)
def test_sitename_keeps_different_sites_apart(a, b):
    assert sitename.site_key(a[0], a[1], "Spain") != sitename.site_key(b[0], b[1], "Spain")


def test_sitename_key_reads_each_part():
    assert sitename.site_key("The Univ. of Texas M.D. Anderson Cancer Ctr", "St. Louis", "United States") == (
        "university of texas md anderson cancer center | saint louis | united states")
    assert sitename.name_key("Hosp. Clinic de Barcelona") == "hospital clinic de barcelona"
    assert sitename.name_key("Kawartha Centre - Redefining Healthy Aging") == "kawartha center redefining healthy aging"
    assert sitename.name_key("Theodor Bilharz Research Institute") == "theodor bilharz research institute"  # not "The"
    assert sitename.name_key("Sunnybrook Health Sciences Centre") == "sunnybrook health sciences center"
    # One country per ISO code (data/geo/countries.csv): AACT's two eras' spellings are one site's country.
    assert sitename.site_key("Asan Medical Center", "Seoul", "Korea, Republic of") == sitename.site_key(
        "Asan Medical Center", "Seoul", "South Korea") == "asan medical center | seoul | south korea"
    assert sitename.site_key("Clinic", "Moscow", "Russia") == "clinic | moscow | russian federation"


def test_sitename_without_a_name_has_no_group():
    assert sitename.site_key(None, "Boston", "United States") is None
    assert sitename.site_key(" - ", "Boston", "United States") is None
    assert sitename.site_key("Mayo Clinic", None, None) == "mayo clinic |  | "


# Spellings of MD Anderson in Houston in the sample's ctgov.facilities, read as one institution (issue 38).
MD_ANDERSON_HOUSTON = [
    "M D Anderson Cancer Center", "MD Anderson Cancer Center",
    "University of Texas MD Anderson Cancer Center",
    "The University of Texas MD Anderson Cancer Center", "The University of Texas M. D. Anderson Cancer "
                                                         "Center",
    "UT MD Anderson Cancer Center", "MD Anderson", "M.D. Anderson Cancer Center at University of Texas",
    "University of Texas - MD Anderson Cancer Center", "U.T.M.D. Anderson Cancer Center",
    "U.T. M.D. Anderson Cancer Center", "UT M.D. Anderson Cancer Center", "Uni Of TX MD Anderson Cancer Cntr",
    "The Univerrsity of Texas MD Anderson Cancer Center", "The University of Texas MD Anderson Cancer Centre",
    "The University of Texas, MD Anderson", "The University of Texas, MD Anderson Cancer Center",
    "University of Texas MD Anderson Cancer Center /ID# 127860", "MD Anderson Cancer Center-Site "
                                                                 "Number:8400001",
    "The University of Texas MD Anderson Cancer Center ( Site 0154)",
    "#1001, The University of Texas M.D. Anderson Cancer Center", "MD Anderson Cancer Center at Texas "
                                                                  "Medical Center",
    "MD Anderson West Houston", "University of Texas/MD Anderson Cancer Center Dept of MD Anderson (8)",
    "Uni Of TX MD Anderson Cancer Cntr Dept of Onc", "MD Anderson Cancer Center (Data Analysis Only)",
    "The University of Texas - MD Anderson Cancer Center - Infectious Diseases", "MD Anderson Regional Care "
                                                                                 "Center-Katy",
    ": The University of Texas MD Anderson Cancer Center", "~MD Anderson Cancer Center-Site Number:8400002",
    "MD Anderson Cancer Center /ID# 252514", "University of Texas MD Anderson Cancer Center Dept of MD "
                                             "Anderson (16)",
]


def test_sitename_md_anderson_spellings_are_one_institution_in_houston():
    keys = {sitename.site_key(n, "Houston", "United States", "Texas") for n in MD_ANDERSON_HOUSTON}
    assert keys == {"university of texas md anderson cancer center | houston | texas | united states"}
    assert {sitename.institution_name(n, "Houston") for n in MD_ANDERSON_HOUSTON} == {
        "University of Texas MD Anderson Cancer Center"}
    # Elsewhere an affiliate of that name is its own institution, shown as written.
    banner = "Banner MD Anderson Cancer Center"
    assert sitename.institution_name(banner, "Gilbert") == banner
    assert sitename.institution_name("MD Anderson Cancer Center", "Madrid") == "MD Anderson Cancer Center"


def test_sitename_placeholders_form_no_group():
    for name in ("Research Site", "Research Site 12", "Site 001", "Teva Investigational Site 13834",
                 "Local Institution", "Study Center 12", "GSK Investigational Site"):
        assert sitename.is_placeholder(name) and sitename.site_key(name, "Seoul", "South Korea") is None, name
    for name in ("Massachusetts General Hospital", "Site Management Services", "Research Institute of Seoul",
                 "Clinical Research Center of Seoul"):
        assert not sitename.is_placeholder(name) and sitename.site_key(name, "Seoul", "South Korea"), name


def test_sitename_generic_names_are_flagged():
    for name in ("Research Site", "Novartis Investigative Site", "Teva Investigational Site 13834",
                 "Local Institution", "New York City Clinical Research Site", "Site 0004"):
        assert sitename.is_generic(name), name
    for name in ("Massachusetts General Hospital", "Site Management Services", "Research Institute of Seoul"):
        assert not sitename.is_generic(name), name


def test_sitename_sql_equals_python_on_every_facility_of_the_sample(db):
    df = db.fetch_df("SELECT f.name, f.city, f.country, f.state, k.group_key FROM ctgov.facilities f "
                     f"JOIN ({sitename.site_keys_sql()}) k ON k.facility_id = f.id ORDER BY f.id",
                     timeout_ms=600_000)
    assert len(df) == db.fetch_value("SELECT count(*) FROM ctgov.facilities") > 90_000
    df = df.astype(object).where(df.notna(), None)
    python = [sitename.site_key(n, c, k, s) for n, c, k, s in zip(df["name"], df["city"], df["country"], df["state"],
                                                                  strict=True)]
    differ = [(n, s, p) for n, s, p in zip(df["name"], df["group_key"], python, strict=True) if s != p]
    assert differ == []
    named = df[df["group_key"].notna()]
    raw = len(set(zip(named["name"], named["city"], named["country"], strict=True)))
    assert named["group_key"].nunique() < raw * 0.95  # on real data the rule merges thousands of spellings


def test_sitename_hostile_text_folds_the_same_in_sql_and_python(db):
    names = ["O'Brien  &  Sons\t(Site #3)", "ÉCOLE—“Centre”·Médical\u00a0Univ", "the the hosp", "A.B.C. D E Ctr",
             "[x]\\y^z_{1}|2~", "%_' OR 1=1 --", "Ctr ctr CTR", "   ", "Hôpital Saint-Louis"]
    # The query itself, over these names instead of ctgov.facilities (ids are their positions).
    sql = sitename.site_keys_sql().replace(
        "FROM ctgov.facilities f",
        "FROM (SELECT u.i::int AS id, NULL::varchar AS nct_id, u.name, CAST(:city AS text) AS city, "
        "CAST(:country AS text) AS country, NULL::text AS state "
        "FROM unnest(CAST(:names AS text[])) WITH ORDINALITY AS u(name, i)) f")
    rows = db.fetch_df(sql + " ORDER BY facility_id", {"names": names, "city": "St. Louis", "country": "France"})
    assert [None if v != v else v for v in rows["group_key"]] == [sitename.site_key(n, "St. Louis", "France")
                                                                  for n in names]


def _rebuilt(db) -> None:  # noqa: ANN001
    """Rebuild the groups as an import does: other tests of this process may have changed the sample's sites."""
    db.execute_script(sitename.refresh_sql())


def test_sitename_derived_table_holds_every_named_facility_in_key_order(db):
    _rebuilt(db)
    row = db.fetch_rows(
        "SELECT (SELECT count(*) FROM app.site_groups) AS grouped, "
        "(SELECT count(*) FROM app.site_group_keys) AS keys, "
        "(SELECT count(*) FROM ctgov.facilities f WHERE NOT EXISTS "
        " (SELECT 1 FROM app.site_groups g WHERE g.facility_id = f.id)) AS ungrouped")[0]
    df = db.fetch_df("SELECT f.name, f.city, f.country, f.state, g.group_id FROM ctgov.facilities f "
                     "LEFT JOIN app.site_groups g ON g.facility_id = f.id")
    df = df.astype(object).where(df.notna(), None)
    keys = [sitename.site_key(n, c, k, s) for n, c, k, s in zip(df["name"], df["city"], df["country"], df["state"],
                                                                strict=True)]
    assert sum(k is None for k in keys) == row["ungrouped"] and sum(k is not None for k in keys) == row["grouped"]
    assert len({k for k in keys if k is not None}) == row["keys"]
    by_id = {int(g): k for g, k in zip(df["group_id"], keys, strict=True) if g is not None}
    ordered = [by_id[g] for g in sorted(by_id)]
    assert ordered == sorted(ordered, key=lambda k: k.encode("utf-8"))  # group ids follow the key's byte order


def test_sitename_ensure_built_fills_the_table_of_a_database_imported_before_it(db):
    _rebuilt(db)
    assert sitename.ensure_built(db) is False  # the import built it
    before = db.fetch_df("SELECT facility_id, group_id FROM app.site_groups ORDER BY facility_id")
    stamp = db.fetch_value("SELECT value FROM app.meta WHERE key = 'facets_refreshed_at'")
    db.execute("TRUNCATE app.site_groups, app.site_group_keys")  # as a database imported before the table existed
    assert sitename.ensure_built(db) is True
    after = db.fetch_df("SELECT facility_id, group_id FROM app.site_groups ORDER BY facility_id")
    assert after.equals(before)
    # The in-process engine reloads (its start cache is keyed by this stamp) and sees the groups.
    assert db.fetch_value("SELECT value FROM app.meta WHERE key = 'facets_refreshed_at'") != stamp


def test_sitename_us_sites_of_one_name_and_city_in_two_states_are_two_groups():
    # Columbus, Georgia and Columbus, Ohio: one "Research Site" row counted both states (now a placeholder).
    assert sitename.site_key("Saint Francis Hospital", "Columbus", "United States", "Georgia") \
        != sitename.site_key(
        "Saint Francis Hospital", "Columbus", "United States", "Ohio")
    assert sitename.site_key("Mayo Clinic", "Rochester", "United States", "Minnesota") == (
        "mayo clinic | rochester | minnesota | united states")
    # A postal code or another case is the same state; outside the United States the state is not read.
    assert sitename.site_key("Saint Francis Hospital", "Columbus", "United States", "OH") \
        == sitename.site_key(
        "Saint Francis Hospital", "Columbus", "United States", "ohio")
    assert sitename.site_key("Saint Francis Hospital", "Toronto", "Canada", "Ontario") == sitename.site_key(
        "Saint Francis Hospital", "Toronto", "Canada", "ON") == "saint francis hospital | toronto | canada"


def test_sitename_no_group_spans_two_us_states(db):
    _rebuilt(db)
    assert db.fetch_value(
        "SELECT count(*) FROM (SELECT g.group_id FROM app.site_groups g JOIN ctgov.facilities f ON f.id = g.facility_id "
        "WHERE f.country = 'United States' GROUP BY g.group_id HAVING count(DISTINCT lower(f.state)) > 1) x") == 0


def test_sitename_states_fold_the_same_in_sql_and_python(db):
    from services.data import geo

    states = [s for code, name in geo.US_STATE_CODES.items() for s in (code, code.lower(), name, name.upper())]
    states += ["", "  ", "N.Y.", "Ontario", "St. Louis", "Île-de-France"]
    sql = sitename.site_keys_sql().replace(
        "FROM ctgov.facilities f",
        "FROM (SELECT u.i::int AS id, NULL::varchar AS nct_id, 'Research Site' AS name, 'Columbus' AS city, u.state, "
        "CAST(:country AS text) AS country FROM unnest(CAST(:states AS text[])) WITH ORDINALITY AS u(state, i)) f")
    for country in ("United States", "united states", "France"):
        rows = db.fetch_df(sql + " ORDER BY facility_id", {"states": states, "country": country})
        assert list(rows["group_key"]) == [sitename.site_key("Research Site", "Columbus", country, s) for s in states]


def test_sitename_ensure_built_rebuilds_groups_made_by_an_older_rule(db):
    _rebuilt(db)
    before = db.fetch_df("SELECT facility_id, group_id FROM app.site_groups ORDER BY facility_id")
    stamp = db.fetch_value("SELECT value FROM app.meta WHERE key = 'facets_refreshed_at'")
    db.execute("UPDATE app.meta SET value = 'an older rule' WHERE key = 'site_groups_rule'")
    assert sitename.ensure_built(db) is True
    assert sitename.ensure_built(db) is False
    assert db.fetch_df("SELECT facility_id, group_id FROM app.site_groups ORDER BY facility_id").equals(before)
    # The in-process engine's start cache is keyed by this stamp: it is not served for the rebuilt groups.
    assert db.fetch_value("SELECT value FROM app.meta WHERE key = 'facets_refreshed_at'") != stamp
    # A start rebuilds them too, also when the schema files have not changed.
    db.execute("UPDATE app.meta SET value = 'an older rule' WHERE key = 'site_groups_rule'")
    runtime.ensure_schema(db)
    assert db.fetch_value("SELECT value FROM app.meta WHERE key = 'site_groups_rule'") == sitename.RULE_DIGEST


def test_sitename_reviewed_word_orders_and_campuses_join_their_institution(db):
    """Every reviewed row of institution_aliases.csv (MD Anderson's spellings and campuses, "X University" =
    "University of X" in one city, a campus named with its institution) is a spelling of the sample, and its
    facility rows are stored in their institution's group (app.site_groups, built by the SQL twin)."""
    _rebuilt(db)
    aliases = sitename.institution_aliases()
    rows = db.fetch_rows(
        "SELECT DISTINCT f.name, f.city, k.group_key FROM ctgov.facilities f "
        "JOIN app.site_groups g ON g.facility_id = f.id "
        "JOIN app.site_group_keys k ON k.group_id = g.group_id")
    seen: set[tuple[str, str]] = set()
    merged: set[str] = set()
    for r in rows:
        spelling = (sitename._plain_key(r["name"]), sitename.city_key(r["city"]))
        if spelling in aliases:
            assert r["group_key"].startswith(aliases[spelling][0] + " | "), (r["name"], r["group_key"])
            seen.add(spelling)
            merged.add(r["name"])
    assert set(aliases) == seen, sorted(set(aliases) - seen)  # each row is a spelling found in the sample
    assert {"Hong Kong University", "Barcelona University", "Oklahoma University", "Cambridge University",
            "Manchester University", "Leuven University", "Cleveland Clinic - Main Campus",
            "UZ Leuven - Campus Gasthuisberg"} <= merged, sorted(merged)
