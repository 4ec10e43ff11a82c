"""`python -m services match --form`: guided mode's matches for one form as JSON; bad forms exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from services.cli import main
from services.commands import match_cmd
from services.errors import BadInput

FORM = Path(__file__).parent / "fixtures" / "guided_forms" / "sickle_cell_atlanta.json"
VERDICTS = {"eligible", "uncertain", "excluded", "not_relevant"}


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_match_cmd_json_runs_guided_mode(db, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "match", "--form", str(FORM), "--json")
    assert code == 0
    data = json.loads(out)
    assert set(data) == {"place", "radius_miles", "searches", "found", "checked", "matches"}
    assert data["place"] == "Atlanta, GA" and data["radius_miles"] == 40.0
    assert data["searches"][0]["strategy"] == "exact"
    assert data["searches"][0]["condition"] == "sickle cell disease"
    assert all({"strategy", "condition", "returned", "new", "total_matching"} <= set(s) for s in data["searches"])
    assert 0 < len(data["matches"]) == data["checked"] <= data["found"]
    for m in data["matches"]:
        assert set(m) == {"nct_id", "verdict", "fit_score", "within_reach", "miles", "reason", "criteria"}
        assert m["verdict"] in VERDICTS
        # a trial about another condition is not scored (null), every other one is
        assert (m["fit_score"] is None and m["verdict"] == "not_relevant") or (
            isinstance(m["fit_score"], int) and 0 <= m["fit_score"] <= 100)
        assert m["reason"]
        assert m["criteria"] and all(set(c) == {"kind", "text", "status", "reason"} for c in m["criteria"])
        assert {c["kind"] for c in m["criteria"]} <= {"inclusion", "exclusion"}
        assert {c["status"] for c in m["criteria"]} <= {"met", "not_met", "needs_discussion",
                                                        "not_enough_information"}
        if m["within_reach"]:
            assert m["miles"] <= 40.0
    # the text form lists the same trials in the same order
    lines = match_cmd._text(data).splitlines()
    assert [line.split()[0] for line in lines[-len(data["matches"]):]] == [m["nct_id"] for m in data["matches"]]


@pytest.mark.parametrize(("content", "message"), [
    ("{", "is not a JSON file"),
    ('["type 2 diabetes"]', "must be a JSON object"),
    ('{"diagnosis": "asthma", "weight": 80}', "Unknown form field(s) weight"),
    ('{"diagnosis": "asthma", "age": "old"}', "The form has wrong values: age"),
    ('{"diagnosis": "asthma", "age": 40, "sex": "female", "location": ""}', "Please enter where you live"),
])
def test_match_cmd_bad_form_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str,
                                    message: str) -> None:
    path = tmp_path / "form.json"
    path.write_text(content, encoding="utf-8")
    code, out, err = _run(capsys, "match", "--form", str(path), "--json")
    assert (code, out) == (2, "")
    assert message in err


def test_match_cmd_missing_and_huge_files_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "match", "--form", str(tmp_path / "none.json"))
    assert code == 2 and "Cannot read" in err
    huge = tmp_path / "huge.json"
    huge.write_text(json.dumps({"notes": "x" * match_cmd.MAX_FORM_BYTES}), encoding="utf-8")
    code, _, err = _run(capsys, "match", "--form", str(huge))
    assert code == 2 and "far smaller" in err


def test_match_cmd_form_lists_as_text_or_lists() -> None:
    a = match_cmd.intake_form({"diagnosis": "asthma", "treatments": "albuterol, budesonide;  albuterol"})
    b = match_cmd.intake_form({"diagnosis": "asthma", "treatments": ["albuterol", "budesonide"]})
    assert a.treatments == b.treatments == ("albuterol", "budesonide")
    nested = match_cmd.intake_form({"diagnosis": "asthma", "travel_radius_miles": None})
    assert nested.travel_radius_miles is None


def test_match_cmd_verdict_is_one_of_four() -> None:
    for v in VERDICTS:
        assert match_cmd.verdict({"nct_id": "NCT00000001", "verdict": v}) == v
    with pytest.raises(ValueError, match="unknown match verdict 'maybe'"):
        match_cmd.verdict({"nct_id": "NCT00000001", "verdict": "maybe"})
    with pytest.raises(BadInput):
        match_cmd.intake_form({"diagnosis": "asthma", "biomarkers": 5})
