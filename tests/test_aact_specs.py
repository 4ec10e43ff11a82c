"""AACT's own RSpec model specs, ported as data: for each spec, the fixture study goes through our JSON loader and
every row the spec states must come out (multiset equality; ids and timestamps ignored).

Source: ../shared/data/aact/expected/spec_expectations.json, transcribed from spec/models/*_spec.rb of
github.com/ctti-clinicaltrials/aact (MIT) at the commit it names; fixtures from spec/support/json_data/.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import date, datetime
from decimal import Decimal
from typing import Any

import pytest

from tests import aact_fixtures as af

pytestmark = pytest.mark.skipif(not af.available(), reason="AACT fixtures not present")

SPECS: list[dict[str, Any]] = (json.loads((af.EXPECTED / "spec_expectations.json").read_text(encoding="utf-8"))
                               ["specs"] if af.available() else [])
FIXTURE_NAMES = sorted({s["fixture"] for s in SPECS})
NCT_FOR = {name: f"NCT9930{i:04d}" for i, name in enumerate(FIXTURE_NAMES, start=1)}
IGNORED = {"id", "created_at", "updated_at"}


@pytest.fixture(scope="module")
def loaded(db, tmp_path_factory):  # noqa: ANN001, ANN201
    studies = [af.with_nct(af.fixture(name), nct) for name, nct in NCT_FOR.items()]
    af.load(db, studies, tmp_path_factory.mktemp("aact_specs") / "specs.jsonl")
    yield db
    af.remove(db, list(NCT_FOR.values()))


def _norm(value: Any) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, (int, float, Decimal)):
        return round(float(value), 9)
    return value


def _result_group_ref(db, nct: str, ref: str, table: str) -> Any:  # noqa: ANN001
    if ref == "$first":
        return db.fetch_value("SELECT min(id) FROM ctgov.result_groups WHERE nct_id = :n", {"n": nct})
    kind = {"reported_events": "Reported Event", "milestones": "Participant Flow",
            "drop_withdrawals": "Participant Flow"}.get(table, "Baseline")
    return db.fetch_value("SELECT id FROM ctgov.result_groups WHERE nct_id = :n AND ctgov_group_code = :c "
                          "AND result_type = :k", {"n": nct, "c": ref, "k": kind})


def _actual(db, spec: dict[str, Any], nct: str) -> list[dict[str, Any]]:  # noqa: ANN001
    table = spec["table"]
    if spec["compare"] == "join-titles":
        return db.fetch_rows(
            "SELECT dgi.nct_id, g.title AS design_group, i.name AS intervention "
            "FROM ctgov.design_group_interventions dgi LEFT JOIN ctgov.design_groups g ON g.id = dgi.design_group_id "
            "LEFT JOIN ctgov.interventions i ON i.id = dgi.intervention_id WHERE dgi.nct_id = :n", {"n": nct})
    if table == "outcome_analysis_groups":
        return db.fetch_rows(
            "SELECT oag.*, rg.title AS result_group_title FROM ctgov.outcome_analysis_groups oag "
            "LEFT JOIN ctgov.result_groups rg ON rg.id = oag.result_group_id WHERE oag.nct_id = :n", {"n": nct})
    return db.fetch_rows(f"SELECT * FROM ctgov.{table} WHERE nct_id = :n", {"n": nct})


def compare(db, spec: dict[str, Any]) -> tuple[int, list[str]]:  # noqa: ANN001
    """(spec rows matched, problems) for one spec."""
    nct = NCT_FOR[spec["fixture"]]
    expected: list[dict[str, Any]] = []
    for row in spec["rows"]:
        want = {}
        for col, value in row.items():
            if col in IGNORED or col in spec["dropped_columns"]:
                continue
            if col == "nct_id":
                value = nct
            elif isinstance(value, dict) and "$ref_result_group" in value:
                value = _result_group_ref(db, nct, value["$ref_result_group"], spec["table"])
            want[col] = value
        expected.append(want)
    columns = sorted({c for row in expected for c in row})
    actual = _actual(db, spec, nct)
    missing = [c for c in columns if actual and c not in actual[0]]
    if missing:
        return 0, [f"columns missing from our table: {missing}"]
    want_rows = Counter(tuple(_norm(r.get(c)) for c in columns) for r in expected)
    got_rows = Counter(tuple(_norm(r.get(c)) for c in columns) for r in actual)
    matched = sum((want_rows & got_rows).values())
    problems = []
    if spec["compare"] != "columns-stated" and len(actual) != len(expected):
        problems.append(f"{len(actual)} rows, AACT's spec states {len(expected)}")
    for row, n in (want_rows - got_rows).items():
        problems.append(f"expected but not produced ×{n}: {dict(zip(columns, row, strict=True))}")
    for row, n in (got_rows - want_rows).items():
        problems.append(f"produced but not expected ×{n}: {dict(zip(columns, row, strict=True))}")
    return matched, problems


@pytest.mark.parametrize("spec", SPECS, ids=[f"{s['table']}:{s['source'].split('/')[-1]}" for s in SPECS])
def test_aact_spec_rows(loaded, spec):  # noqa: ANN001
    matched, problems = compare(loaded, spec)
    assert not problems, "\n".join(problems)
    assert matched == len(spec["rows"])


def test_aact_spec_compare_notices_a_difference(loaded):  # noqa: ANN001
    spec = json.loads(json.dumps(next(s for s in SPECS if s["table"] == "studies")))
    spec["rows"][0]["brief_title"] = "not what AACT's spec says"
    matched, problems = compare(loaded, spec)
    assert matched == 0 and any("not what AACT's spec says" in p for p in problems)


def test_aact_spec_totals(loaded, capsys):  # noqa: ANN001
    """Every spec row over every table, counted (the number the issue asks for)."""
    total = sum(len(s["rows"]) for s in SPECS)
    matched = sum(compare(loaded, s)[0] for s in SPECS)
    with capsys.disabled():
        print(f"\nAACT spec rows matched: {matched} of {total} in {len(SPECS)} specs over "
              f"{len({s['table'] for s in SPECS})} tables")
    assert matched == total
