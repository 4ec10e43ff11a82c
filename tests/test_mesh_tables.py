"""MeSH in the database: AACT's ctgov.mesh_terms / mesh_headings (AACT's columns and rows as its loaders make them),
an AACT query joining browse_conditions to mesh_terms in the SQL console, and app.study_mesh (the sample)."""

from __future__ import annotations

from typing import Any

from services import console
from services.data import studymesh
from services.vocab import mesh as mesh_vocab

# AACT's db/ctgov_v2.sql (ctti-clinicaltrials/aact): the two tables and their columns in order.
AACT_COLUMNS = {
    "mesh_terms": ["id", "qualifier", "tree_number", "description", "mesh_term", "downcase_mesh_term"],
    "mesh_headings": ["id", "qualifier", "heading", "subcategory"],
}


def test_mesh_tables_have_aacts_columns(db: Any) -> None:
    for table, columns in AACT_COLUMNS.items():
        found = [r["column_name"] for r in db.fetch_rows(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = 'ctgov' AND table_name = :t "
            "ORDER BY ordinal_position", {"t": table})]
        assert found == columns, table
        result = console.run_query(f"SELECT * FROM ctgov.{table} LIMIT 1", db=db)
        assert list(result.columns) == columns and len(result.rows) == 1


def test_mesh_terms_rows_follow_aacts_loader(db: Any) -> None:
    """One row per tree number, qualifier its top-level category, mesh_term the heading (AACT's MeshTerm)."""
    rows = db.fetch_rows("SELECT qualifier, tree_number, description, mesh_term, downcase_mesh_term "
                         "FROM ctgov.mesh_terms WHERE mesh_term = 'Breast Neoplasms' ORDER BY tree_number")
    assert [(r["qualifier"], r["tree_number"]) for r in rows] == [("C04", "C04.588.180"), ("C17", "C17.800.090.500")]
    assert all(r["description"] is None and r["downcase_mesh_term"] == "breast neoplasms" for r in rows)
    m = mesh_vocab.vocabulary()
    total = sum(len(d.trees) for d in m.descriptors.values())
    assert db.fetch_value("SELECT count(*) FROM ctgov.mesh_terms") == total
    assert db.fetch_value("SELECT count(DISTINCT tree_number) FROM ctgov.mesh_terms") == total
    top = db.fetch_rows("SELECT mesh_term FROM ctgov.mesh_terms WHERE tree_number = 'C04'")
    assert [r["mesh_term"] for r in top] == ["Neoplasms"]


def test_mesh_headings_list_descriptors_by_category(db: Any) -> None:
    rows = db.fetch_rows("SELECT qualifier, heading FROM ctgov.mesh_headings WHERE subcategory = 'Breast Neoplasms' "
                         "ORDER BY qualifier")
    assert [(r["qualifier"], r["heading"]) for r in rows] == [
        ("C04", "Neoplasms"), ("C17", "Skin and Connective Tissue Diseases")]
    assert db.fetch_value("SELECT count(*) FROM ctgov.mesh_headings WHERE qualifier !~ '^[A-Z][0-9][0-9]$'") == 0


def test_mesh_aact_join_runs_in_the_console(db: Any) -> None:
    """An AACT user's query: trials by MeSH category, browse_conditions joined to mesh_terms on the term."""
    sql = ("SELECT mt.qualifier, count(DISTINCT bc.nct_id) AS trials FROM browse_conditions bc "
           "JOIN mesh_terms mt ON mt.downcase_mesh_term = bc.downcase_mesh_term "
           "WHERE bc.mesh_type = 'mesh-list' GROUP BY mt.qualifier ORDER BY trials DESC")
    result = console.run_query(sql, db=db)
    counts = dict(result.rows)
    assert counts["C04"] > 0 and list(result.columns) == ["qualifier", "trials"]
    expected = db.fetch_value(
        "SELECT count(DISTINCT bc.nct_id) FROM ctgov.browse_conditions bc WHERE bc.mesh_type = 'mesh-list' AND "
        "EXISTS (SELECT 1 FROM ctgov.mesh_terms mt WHERE mt.downcase_mesh_term = bc.downcase_mesh_term "
        "AND mt.qualifier = 'C04')")
    assert counts["C04"] == expected


def test_mesh_study_rows_come_from_browse_and_names() -> None:
    m = mesh_vocab.vocabulary()
    rows = studymesh.study_mesh_rows(
        m, [("NCT1", "Breast Neoplasms", "mesh-list"), ("NCT1", "Neoplasms", "mesh-ancestor"),
            ("NCT1", "Breast Neoplasms", "other")],
        [("NCT2", "Metastatic Breast Cancer"), ("NCT3", "Quux of the Xyzzy"), ("NCT4", "T2D")])
    breast, neo, t2d = m.by_name["breast neoplasms"], m.by_name["neoplasms"], m.by_name["diabetes mellitus, type 2"]
    assert rows == sorted([("NCT1", breast, "mesh-list"), ("NCT1", neo, "mesh-ancestor"), ("NCT2", breast, "name"),
                           ("NCT4", t2d, "name")])


def test_mesh_study_table_is_built_for_the_current_generation(db: Any) -> None:
    studymesh.ensure_built(db)  # another test may have moved the generation (refresh_study_facets)
    assert studymesh.ensure_built(db) is False  # built for the current generation: nothing to do
    assert studymesh.stored()
    by_source = {r["source"]: r["n"] for r in db.fetch_rows(
        "SELECT source, count(*) AS n FROM app.study_mesh GROUP BY source")}
    assert set(by_source) == {"mesh-list", "mesh-ancestor", "name"}
    # CSV-only records have names only: they get headings through their names.
    csv_only = db.fetch_value(
        "SELECT count(DISTINCT sm.nct_id) FROM app.study_mesh sm WHERE sm.source = 'name' AND NOT EXISTS "
        "(SELECT 1 FROM ctgov.browse_conditions b WHERE b.nct_id = sm.nct_id)")
    assert csv_only > 1000
