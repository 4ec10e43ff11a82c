"""A researcher's words over the sample (issue 38): therapeutic areas, AND / OR / NOT, the free-text search,
and merged institutions and countries — each count checked in both engines and against hand-written SQL."""

from __future__ import annotations

import pytest

from services.dashboard import boolquery, condition, engine, feasibility, stats, stopreason, textsearch
from services.dashboard.filters import Filters
from services.data import geo, sitename
from services.vocab import areas

ANY = ()  # any status: the counts compared are the whole sample's


@pytest.fixture(scope="module")
def engines(db):
    return {"sql": engine.SqlEngine(db), "memory": engine.MemoryEngine(db)}


def ids(engines, **values) -> set[str]:
    """The matching NCT ids, the same in both engines (else the test fails here)."""
    found = {kind: set(eng.matching_ids(Filters(status=ANY, **values))) for kind, eng in engines.items()}
    assert found["sql"] == found["memory"], values
    return found["sql"]


# ---- the model on its own ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "read"),
    [
        ("lung OR breast cancer", "“lung cancer” OR “breast cancer”"),
        ("type 1 OR type 2 diabetes", "“type 1 diabetes” OR “type 2 diabetes”"),
        (
            "heart attack OR stroke",
            "“heart attack” OR “stroke”",
        ),  # "heart attack" is longer: nothing to share
        ('"lung" OR breast cancer', "“lung” OR “breast cancer”"),  # a quoted word keeps to itself
        ("cancer NOT breast", "“cancer” AND NOT “breast”"),
        ("(asthma OR COPD) AND smoking", "(“asthma” OR “COPD”) AND “smoking”"),
        ("relapsed or refractory myeloma", "“relapsed or refractory myeloma”"),  # operators only in capitals
    ],
)
def test_terms_condition_expression_is_read_as_clinicaltrials_gov_does(text, read):
    assert boolquery.describe(condition.parsed(text)) == read


def test_terms_area_names_are_their_mesh_categories():
    assert condition.expand("oncology").named == condition.expand("cancer").named == ("D009369",)  # Neoplasms
    assert condition.expand("Cardiology").named == (areas.by_name("Cardiology").root(),)
    assert {a.tree_number for a in areas.areas()} >= {"C04", "C14", "C10", "F03"}
    assert all(a.source and a.descriptors() for a in areas.areas())


# ---- counts over the sample --------------------------------------------------------------------------------
def test_terms_oncology_covers_cancer_and_equals_the_neoplasms_area(engines):
    oncology, cancer = ids(engines, condition="oncology"), ids(engines, condition="cancer")
    area = ids(engines, area=("Oncology",))
    assert len(cancer) > 1_000 and oncology >= cancer and oncology == area


def test_terms_type_ii_diabetes_is_type_2_diabetes(engines):
    two = ids(engines, condition="type 2 diabetes")
    assert len(two) > 100 and ids(engines, condition="type II diabetes") == two


def test_terms_or_is_the_union_and_not_removes(engines):
    lung, breast = ids(engines, condition="lung cancer"), ids(engines, condition="breast cancer")
    assert ids(engines, condition="lung OR breast cancer") == lung | breast > lung
    cancer, without = ids(engines, condition="cancer"), ids(engines, condition="cancer NOT breast cancer")
    assert without == cancer - breast and len(without) < len(cancer)
    assert ids(engines, condition="breast cancer AND lung cancer") == breast & lung


def test_terms_intervention_or_is_the_union(engines):
    a, b = ids(engines, intervention="metformin"), ids(engines, intervention="insulin")
    assert ids(engines, intervention="metformin OR insulin") == a | b > a
    assert ids(engines, intervention="insulin NOT metformin") == b - a


def test_terms_free_text_phrase_matches_the_sql_full_text_count(db, engines):
    found = ids(engines, text='"quality of life"')
    by_hand = {
        r["nct_id"]
        for r in db.fetch_rows(
            "SELECT s.nct_id FROM ctgov.studies s WHERE to_tsvector('english', concat_ws(' ', s.brief_title, "
            "s.official_title, (SELECT string_agg(bs.description, ' ') FROM ctgov.brief_summaries bs "
            "WHERE bs.nct_id = s.nct_id), (SELECT string_agg(k.name, ' ') FROM ctgov.keywords k WHERE "
            "k.nct_id = s.nct_id),"
            " (SELECT string_agg(concat_ws(' ', o.measure, o.description), ' ') FROM ctgov.design_outcomes o "
            "WHERE o.nct_id = s.nct_id))) @@ phraseto_tsquery('english', 'quality of life')",
            timeout_ms=120_000,
        )
    }
    assert len(by_hand) > 100 and found == by_hand
    words = ids(engines, text="quality life")  # both words anywhere: at least the phrase's studies
    assert words >= found and ids(engines, text='"quality of life" NOT cancer') < found


def test_terms_free_text_terms_are_bound_never_written_into_sql():
    params: dict = {}
    sql = textsearch.where_sql('x\') OR 1=1 -- OR "a b"', params)
    assert "1=1" not in str(sql) and "1=1" in " ".join(params.values())


# ---- institutions and countries ----------------------------------------------------------------------------
def test_terms_md_anderson_is_one_row_near_houston_for_cancer(db, engines):
    houston = geo.geocode("Houston, TX").place
    spellings = {
        r["name"]
        for r in db.fetch_rows(
            "SELECT DISTINCT name FROM ctgov.facilities WHERE city = 'Houston' AND name ILIKE '%anderson%'"
        )
    }
    merged = sorted(
        n
        for n in spellings
        if sitename.site_key(n, "Houston", "United States", "Texas")
        == "university of texas md anderson cancer center | houston | texas | united states"
    )
    assert len(merged) >= 10, merged  # the variants merged, listed on failure
    f = Filters(condition="cancer", near="Houston, TX", radius=50, status=ANY)
    for eng in engines.values():
        table = feasibility.site_table(f, houston, db=db, engine=eng)
        rows = table.rows[
            table.rows["facility"].str.contains("Anderson", case=False) & (table.rows["city"] == "Houston")
        ]
        assert list(rows["facility"]) == ["University of Texas MD Anderson Cancer Center"], eng.kind
        by_sql = db.fetch_value(
            "SELECT count(DISTINCT f.nct_id) FROM ctgov.facilities f WHERE f.city = 'Houston' "
            "AND f.name = ANY(CAST(:names AS text[])) AND f.nct_id = ANY(CAST(:ids AS text[]))",
            {"names": merged, "ids": sorted(ids(engines, condition="cancer"))},
        )
        assert int(rows["trials"].iloc[0]) == by_sql
        top = table.rows.head(10)
        assert not any(sitename.is_placeholder(n) for n in top["facility"]), list(top["facility"])


def test_terms_korea_is_one_country(db, engines):
    assert geo.country_display("Korea, Republic of") == geo.country_display("South Korea") == "South Korea"
    korea = ids(engines, country=("South Korea",))
    assert korea == ids(engines, country=("Korea, Republic of",))
    by_sql = {
        r["nct_id"]
        for r in db.fetch_rows(
            "SELECT nct_id FROM ctgov.countries WHERE removed IS NOT TRUE "
            "AND name IN ('South Korea', 'Korea, Republic of')"
        )
    }
    assert korea == by_sql and len(by_sql) > 300
    for eng in engines.values():
        bars = stats.dashboard(Filters(status=ANY), engine=eng, facets=["countries"]).facets["countries"]
        names = [b["value"] for b in bars]
        assert "Korea, Republic of" not in names and names.count("South Korea") == 1
        assert next(b["count"] for b in bars if b["value"] == "South Korea") == len(by_sql)


def test_terms_countries_kpi_counts_one_country_per_iso_code(db, engines):
    """The Countries KPI is the number of distinct countries after merging spellings ("Korea, Republic of" and
    "South Korea" one), in both engines, without and with a place filter; the Sites page keys them alike."""
    names = {
        r["name"]
        for r in db.fetch_rows(
            "SELECT DISTINCT name FROM ctgov.countries WHERE removed IS NOT TRUE AND name <> ''"
        )
    }
    merged = {geo.country_display(n) for n in names}
    assert {"Korea, Republic of", "South Korea"} <= names and len(merged) < len(names)
    korea = Filters(status=ANY, country=("South Korea",))
    for eng in engines.values():
        assert stats.dashboard(Filters(status=ANY), engine=eng, facets=[]).kpis["countries"] == len(merged)
        assert stats.dashboard(korea, engine=eng, facets=[]).kpis["countries"] == 1, eng.kind
    keys = {
        sitename.site_key(r["name"], r["city"], r["country"], r["state"])
        for r in db.fetch_rows(
            "SELECT name, city, state, country FROM ctgov.facilities WHERE country IN ('South Korea', "
            "'Korea, Republic of') AND name IS NOT NULL"
        )
    }
    assert {k.rsplit(" | ", 1)[1] for k in keys if k} == {"south korea"}


# ---- charts: headings, areas, stop reasons, sponsors -------------------------------------------------------
def test_terms_narrower_headings_can_be_switched_off_and_are_counted(db, engines):
    strict, wide = (
        ids(engines, condition="breast cancer", narrower=False),
        ids(engines, condition="breast cancer"),
    )
    assert (
        strict < wide and Filters(condition="x", narrower=False).query_string() == "condition=x&narrower=no"
    )
    note = stats.expansion_note(Filters(condition="breast cancer", status=ANY), db)
    assert note == (
        f"“breast cancer”: {len(strict):,} trials from the named headings + {len(wide - strict):,} from 8 "
        "narrower headings (switch off Include narrower headings to leave them out)."
    )


def test_terms_charts_count_mesh_headings_and_areas_alike_in_both_engines(engines):
    f = Filters(condition="alzheimer", status=ANY)
    got = {
        kind: stats.dashboard(f, engine=eng, facets=["conditions", "therapeutic_areas"], timeout_ms=120_000)
        for kind, eng in engines.items()
    }
    assert got["sql"].facets == got["memory"].facets
    bars = [b["label"] for b in got["sql"].facets["conditions"]]
    assert (
        bars[0] == "Alzheimer Disease" and "Alzheimer's Disease" not in bars and len(bars) == len(set(bars))
    )
    areas_n = {b["value"]: b["count"] for b in got["sql"].facets["therapeutic_areas"]}
    assert areas_n["Neurology"] == len(ids(engines, condition="alzheimer", area=("Neurology",)))


@pytest.mark.parametrize(
    ("reason", "category"),
    [
        ("Slow accrual", "Accrual"),
        ("Low Accrual", "Accrual"),
        ("Poor accrual", "Accrual"),
        ("Insufficient accrual", "Accrual"),
        ("Lack of funding", "Funding"),
        ("Safety concerns", "Safety"),
        ("Futility at interim analysis", "Efficacy"),
        ("Sponsor decision", "Business"),
        ("Low enrollment due to COVID-19 pandemic", "COVID-19"),
        ("PI left the institution", "Other"),
    ],
)
def test_terms_stop_reasons_fall_in_their_category(reason, category):
    assert stopreason.category(reason) == category


def test_terms_stop_categories_sum_every_stated_reason(db, engines):
    for eng in engines.values():
        bars = stats.dashboard(Filters(status=ANY), engine=eng, facets=["stop_categories"]).facets[
            "stop_categories"
        ]
        stated = db.fetch_value("SELECT count(*) FROM ctgov.studies WHERE btrim(why_stopped) <> ''")
        counts = {b["value"]: b["count"] for b in bars}
        assert (
            sum(counts.values()) == stated
            and counts["Accrual"] > 0
            and set(counts) <= set(stopreason.categories())
        )


def test_terms_sponsors_fold_spellings_and_registry_stated_parents():
    from services.dashboard import sponsorname

    assert sponsorname.sponsor("Genzyme, a Sanofi Company") == ("sanofi", "Sanofi")
    assert sponsorname.sponsor("Sanofi")[0] == "sanofi"
    assert sponsorname.merged(
        [("Novartis Pharmaceuticals", 91), ("Novartis", 28), ("Pfizer", 100), ("Pfizer Inc.", 3)]
    ) == [("Novartis", 119), ("Pfizer", 103)]
    assert sponsorname.sponsor("Merck Sharp & Dohme LLC")[1] is None  # no stated parent, no alias row: itself
