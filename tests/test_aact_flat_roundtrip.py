"""AACT flat files: an export written exactly as AACT's Util::TableExporter writes it, for every study table,
imports back equal (up to what AACT's exporter itself loses), with ids that overlap rows already loaded.

The writer below follows app/models/util/table_exporter.rb: `COPY ctgov.<t> TO STDOUT WITH DELIMITER '|' CSV
HEADER`, then per row `gsub(/""/, '')`, `gsub(/\\n\\s/, '~')`, `gsub(/\\n/, '~')` and the last `~` back to a
newline; one <table>.txt per table in a zip.
"""

from __future__ import annotations

import re
import zipfile
from collections import Counter
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from services.data.loaders import REFERENCES, import_aact
from services.data.loaders.aact_schema import TABLES
from tests import aact_fixtures as af

pytestmark = pytest.mark.skipif(not af.available(), reason="AACT fixtures not present")

_RUBY_SPACE = "[ \t\r\n\f\v]"


def _pg_copy_text(value: Any) -> str | None:
    """How PostgreSQL's COPY prints a value (None for NULL)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "t" if value else "f"
    if isinstance(value, datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, (date, Decimal, int)):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _pg_csv_field(text: str | None) -> str:
    """PostgreSQL CSV output: NULL empty; quoted when empty or holding the delimiter, a quote, CR or LF."""
    if text is None:
        return ""
    if text == "" or any(ch in text for ch in '|"\r\n') or text == "\\.":
        return '"' + text.replace('"', '""') + '"'
    return text


def _aact_row(fields: list[str]) -> str:
    """One COPY row through AACT's exporter."""
    row = "|".join(fields) + "\n"
    row = row.replace('""', "")
    row = re.sub("\n" + _RUBY_SPACE, "~", row)
    row = row.replace("\n", "~")
    return re.sub("~$", "\n", row)


def write_aact_export(path: Path, tables: dict[str, tuple[list[str], list[list[Any]]]]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for table, (columns, rows) in tables.items():
            body = _aact_row(columns) + "".join(_aact_row([_pg_csv_field(_pg_copy_text(v)) for v in row])
                                                for row in rows)
            zf.writestr(f"{table}.txt", body.encode("utf-8"))
    return path


def _aact_loses(value: Any) -> Any:
    """What a text value looks like after AACT's exporter (quotes gone, line breaks as ~, '' as NULL)."""
    if not isinstance(value, str):
        return value
    out = value.replace('"', "")
    out = re.sub("\n" + _RUBY_SPACE, "~", out).replace("\n", "~")
    return out if out != "" else None


REF_COLUMNS = {(t, c) for refs in REFERENCES.values() for t, c in refs}
SKIP = {"id", "created_at", "updated_at"}

NCTS = [f"NCT992000{i:02d}" for i in range(1, 12)]


def _study_set() -> list[dict[str, Any]]:
    names = ["flat_tricky_study.json", "flat_cr_study.json", "NCT02552212.json", "NCT03475563.json",
             "NCT00465816.json", "NCT03453554.json", "study_reference.json", "facility_investigator.json",
             "central_contact.json", "NCT03630471.json", "NCT05594173.json"]
    return [af.with_nct(af.fixture(n), nct) for n, nct in zip(names, NCTS, strict=True)]


def _rows(db, table: str) -> list[dict[str, Any]]:  # noqa: ANN001
    order = "id" if any(c == "id" for c, _ in TABLES[table]) else "nct_id"
    return db.fetch_rows(f"SELECT * FROM ctgov.{table} WHERE nct_id = ANY(:ids) ORDER BY {order}", {"ids": NCTS})


def _comparable(table: str, rows: list[dict[str, Any]]) -> Counter:
    keep = [c for c, _ in TABLES[table] if c not in SKIP and (table, c) not in REF_COLUMNS]
    return Counter(tuple(_aact_loses(r[c]) for c in keep) for r in rows)


def _links(db, table: str, col: str, target: str) -> Counter:  # noqa: ANN001
    """Each reference as (row's nct_id, the referenced row's nct_id) — NULL when it points nowhere."""
    rows = db.fetch_rows(f"SELECT a.nct_id, b.nct_id AS target FROM ctgov.{table} a "
                         f"LEFT JOIN ctgov.{target} b ON b.id = a.{col} WHERE a.nct_id = ANY(:ids) "
                         f"AND a.{col} IS NOT NULL", {"ids": NCTS})
    return Counter((r["nct_id"], r["target"]) for r in rows)


def test_flat_export_roundtrip_every_table(db, scratch_dir):
    af.load(db, _study_set(), scratch_dir / "flat.jsonl")
    try:
        db.execute("INSERT INTO ctgov.search_results (nct_id, name, \"grouping\") VALUES (:n, 'covid-19', '')",
                   {"n": NCTS[0]})
        before = {t: _rows(db, t) for t in TABLES}
        filled = [t for t, rows in before.items() if rows]
        assert len(filled) == len(TABLES), f"tables the test set leaves empty: {set(TABLES) - set(filled)}"
        links_before = {(t, c): _links(db, t, c, target) for target, refs in REFERENCES.items() for t, c in refs}

        # The export's ids are AACT's own numbering: here ids that rows of other studies already have.
        export: dict[str, tuple[list[str], list[list[Any]]]] = {}
        new_ids: dict[str, dict[Any, int]] = {}
        for table in sorted(TABLES, key=lambda t: t not in REFERENCES):
            cols = [c for c, _ in TABLES[table]]
            if "id" in cols:
                taken = [r["id"] for r in db.fetch_rows(
                    f"SELECT id FROM ctgov.{table} WHERE NOT nct_id = ANY(:ids) ORDER BY id LIMIT :n",
                    {"ids": NCTS, "n": len(before[table])})]
                top = max(taken, default=0)
                taken += [top + 1 + i for i in range(len(before[table]) - len(taken))]
                new_ids[table] = {r["id"]: taken[i] for i, r in enumerate(before[table])}
            export[table] = (cols, [[r[c] for c in cols] for r in before[table]])
        for table, (cols, rows) in export.items():
            for row in rows:
                if "id" in cols:
                    row[cols.index("id")] = new_ids[table][row[cols.index("id")]]
                for target, refs in REFERENCES.items():
                    for t, c in refs:
                        if t == table and row[cols.index(c)] is not None:
                            row[cols.index(c)] = new_ids[target][row[cols.index(c)]]
        overlap = list(new_ids["conditions"].values())
        assert db.fetch_value("SELECT count(*) FROM ctgov.conditions WHERE id = ANY(:x) AND NOT nct_id = ANY(:ids)",
                              {"x": overlap, "ids": NCTS}) == len(overlap)
        path = write_aact_export(scratch_dir / "20260901_pipe-delimited-export.zip", export)

        report = import_aact(db, path)
        assert report.studies == len(NCTS)
        after = {t: _rows(db, t) for t in TABLES}
        for table in TABLES:
            assert _comparable(table, after[table]) == _comparable(table, before[table]), table
        for target, refs in REFERENCES.items():
            for t, c in refs:
                assert _links(db, t, c, target) == links_before[(t, c)], (t, c)
        # What AACT's exporter does to text is what the import stores: no quotes, line breaks as ~, CR kept.
        title = db.fetch_value("SELECT brief_title FROM ctgov.studies WHERE nct_id = :n", {"n": NCTS[1]})
        assert title == "Carriage return\r~inside a title"
        tricky = db.fetch_rows("SELECT official_title, why_stopped FROM ctgov.studies WHERE nct_id = :n",
                               {"n": NCTS[0]})[0]
        assert tricky["why_stopped"] == "He said stop | now~next line"
        assert tricky["official_title"] == "Line one~Line two~  indented after a blank line~and a tab-indented line"
        assert db.fetch_value("SELECT count(*) FROM ctgov.keywords WHERE name = 'tilde~kept' AND nct_id = :n",
                              {"n": NCTS[0]}) == 1
    finally:
        af.remove(db, NCTS)
