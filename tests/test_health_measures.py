"""The measures an upload may hold are data (data/health/measures.csv): each row's own example converts to its
standard value, and the eligibility measures that judge uploaded labs name measures of this table."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from services import healthdata as h
from services.eligibility.measures import _unit_key, measure_rows
from services.errors import BadInput

ROWS = list(csv.DictReader(open(h.HEALTH_DIR / "measures.csv", encoding="utf-8", newline="")))


@pytest.mark.parametrize("row", ROWS, ids=[r["key"] for r in ROWS])
def test_health_measure_row_converts_its_example(row: dict[str, str]) -> None:
    measure = h.BY_KEY[row["key"]]
    value = float(row["example_value"].replace(",", ""))
    assert row["source"] and measure.low <= float(row["example_standard"]) <= measure.high
    assert measure.to_standard(value, row["example_unit"]) == pytest.approx(float(row["example_standard"]),
                                                                           rel=1e-3)


def test_health_measure_names_and_codes_name_one_measure_each() -> None:
    names = [n for m in h.MEASURES for n in m.names]
    codes = [c for m in h.MEASURES for c in m.loinc]
    assert len(names) == len(set(names)) and len(codes) == len(set(codes))
    assert h.measure_named("Serum Creatinine") is h.BY_KEY["creatinine"]


def test_eligibility_measures_read_uploads_in_the_same_units() -> None:
    # a lab judged from an upload converts each unit both tables know by the same factor
    for row in measure_rows():
        for key in row.lab_keys:
            upload = h.BY_KEY[key]
            for unit, rule in upload.units.items():
                mine = row.units.get(_unit_key(unit))
                if mine is not None:
                    assert mine == pytest.approx(rule, rel=1e-3), (row.key, unit)


def test_health_measures_refuse_a_kind_they_do_not_know(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    table = (h.HEALTH_DIR / "measures.csv").read_text(encoding="utf-8")
    (tmp_path / "measures.csv").write_text(table.replace(",lab,", ",labs,", 1), encoding="utf-8")
    monkeypatch.setattr(h, "HEALTH_DIR", tmp_path)
    with pytest.raises(BadInput, match="creatinine"):
        h._read_measures()
