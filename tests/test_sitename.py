"""The facility grouping rule (services/data/sitename.py): real names from the sample, and the SQL twin of the rule."""

from __future__ import annotations

import pytest

from services.data import runtime, sitename
from services.data.db import load_sql

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

# Rows that must stay apart: a generic name in two cities, numbered sites, different hospitals.
DIFFERENT_SITES = [
    (("Research Site", "Seoul"), ("Research Site", "Beijing")),
    (("Teva Investigational Site 13834", "Phoenix"), ("Teva Investigational Site 13819", "Phoenix")),
    (("Research Site", "Madrid"), ("Research Site 12", "Madrid")),
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
    assert sitename.site_key("Asan Medical Center", "Seoul", "Korea, Republic of") != sitename.site_key(
        "Asan Medical Center", "Seoul", "South Korea")  # the country as AACT spells it (stated limitation)


def test_sitename_without_a_name_has_no_group():
    assert sitename.site_key(None, "Boston", "United States") is None
    assert sitename.site_key(" - ", "Boston", "United States") is None
    assert sitename.site_key("Mayo Clinic", None, None) == "mayo clinic |  | "


def test_sitename_generic_names_are_flagged():
    for name in ("Research Site", "Novartis Investigative Site", "Teva Investigational Site 13834",
                 "Local Institution", "New York City Clinical Research Site", "Site 0004"):
        assert sitename.is_generic(name), name
    for name in ("Massachusetts General Hospital", "Site Management Services", "Research Institute of Seoul"):
        assert not sitename.is_generic(name), name


def test_sitename_sql_equals_python_on_every_facility_of_the_sample(db):
    df = db.fetch_df("SELECT f.name, f.city, f.country, f.state, k.group_key FROM ctgov.facilities f "
                     f"JOIN ({load_sql('site_keys')}) k ON k.facility_id = f.id ORDER BY f.id", timeout_ms=600_000)
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
    sql = load_sql("site_keys").replace(
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
    # Columbus, Georgia and Columbus, Ohio: one "Research Site" row on the Sites page counted both states' trials.
    assert sitename.site_key("Research Site", "Columbus", "United States", "Georgia") != sitename.site_key(
        "Research Site", "Columbus", "United States", "Ohio")
    assert sitename.site_key("Mayo Clinic", "Rochester", "United States", "Minnesota") == (
        "mayo clinic | rochester | minnesota | united states")
    # A postal code or another case is the same state; outside the United States the state is not read.
    assert sitename.site_key("Research Site", "Columbus", "United States", "OH") == sitename.site_key(
        "Research Site", "Columbus", "United States", "ohio")
    assert sitename.site_key("Research Site", "Toronto", "Canada", "Ontario") == sitename.site_key(
        "Research Site", "Toronto", "Canada", "ON") == "research site | toronto | canada"


def test_sitename_no_group_spans_two_us_states(db):
    _rebuilt(db)
    assert db.fetch_value(
        "SELECT count(*) FROM (SELECT g.group_id FROM app.site_groups g JOIN ctgov.facilities f ON f.id = g.facility_id "
        "WHERE f.country = 'United States' GROUP BY g.group_id HAVING count(DISTINCT lower(f.state)) > 1) x") == 0


def test_sitename_states_fold_the_same_in_sql_and_python(db):
    from services.data import geo

    states = [s for code, name in geo.US_STATE_CODES.items() for s in (code, code.lower(), name, name.upper())]
    states += ["", "  ", "N.Y.", "Ontario", "St. Louis", "Île-de-France"]
    sql = load_sql("site_keys").replace(
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
