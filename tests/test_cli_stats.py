"""`python -m services stats`: the same numbers as stats.dashboard, as JSON or text; bad input exits 2."""

from __future__ import annotations

import json
from urllib.parse import parse_qs

import pytest

from services.cli import main
from services.dashboard import stats
from services.dashboard.filters import Filters


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("query", [
    "condition=lung%20cancer&status=RECRUITING",
    "",
    "near=Boston%2C%20MA&radius=100&status=ANY",
    "age=62&sex=male&phase=PHASE2",
])
def test_cli_stats_json_equals_dashboard(db, capsys, query):
    code, out, _ = _run(capsys, "stats", "--query", query, "--json")
    assert code == 0
    data = json.loads(out)
    f, notices = Filters.from_query(parse_qs(query))
    want = json.loads(json.dumps(stats.dashboard(f, db=db).as_dict(), default=str))
    assert {k: data[k] for k in ("query", "kpis", "funnel", "facets", "errors")} == \
        {k: want[k] for k in ("query", "kpis", "funnel", "facets", "errors")}
    assert set(data["kpis"]) == {"matching_trials", "recruiting", "sites", "countries", "planned_enrollment"}
    assert set(data["facets"]) == set(stats.FACETS)
    assert all({"stage", "count"} <= set(s) for s in data["funnel"])
    assert all({"value", "label", "count"} <= set(r) for rows in data["facets"].values() for r in rows)
    place = f.place()
    assert data["notices"] == notices + ([f"Place: {place.name} ({place.lat:.4f}, {place.lon:.4f}); radius 100 mi."]
                                         if place else [])


def test_cli_stats_accepts_a_whole_share_link(db, capsys):
    _, a, _ = _run(capsys, "stats", "--query", "http://localhost:8501/Explore?condition=diabetes&phase=PHASE3",
                   "--json")
    _, b, _ = _run(capsys, "stats", "--query", "condition=diabetes&phase=PHASE3", "--json")
    assert json.loads(a) == json.loads(b)
    assert json.loads(a)["query"] == "condition=diabetes&phase=PHASE3"


def test_cli_stats_bad_parameters_become_notices(db, capsys):
    query = "radius=-5&phase=PHASE9&age=abc&color=red&condition=diabetes"
    code, out, _ = _run(capsys, "stats", "--query", query, "--json")
    assert code == 0
    data = json.loads(out)
    _, notices = Filters.from_query(parse_qs(query))
    assert data["notices"] == notices and len(notices) == 4
    text = " ".join(notices)
    assert "radius" in text and "PHASE9" in text and "age" in text and "color" in text
    assert data["query"] == "condition=diabetes"


def test_cli_stats_text_output(db, capsys):
    code, out, _ = _run(capsys, "stats", "--query", "condition=diabetes&status=ANY", "--facet", "phase")
    assert code == 0
    d = stats.dashboard(Filters(condition="diabetes", status=()), db=db, facets=["phase"])
    lines = out.splitlines()
    assert lines[0] == "filter: condition=diabetes&status=ANY"
    assert lines[1] == (f"matching trials {d.kpis['matching_trials']:,} · recruiting {d.kpis['recruiting']:,} · "
                        f"sites {d.kpis['sites']:,} · countries {d.kpis['countries']:,} · planned enrollment "
                        f"{d.kpis['planned_enrollment']:,}")
    assert lines[3] == "phase: " + ", ".join(f"{r['label']} {r['count']:,}" for r in d.facets["phase"])
    assert len(lines) == 4


def test_cli_stats_unknown_facet_exits_2(db, capsys):
    code, out, err = _run(capsys, "stats", "--facet", "colour")
    assert code == 2 and out == ""
    assert "unknown facet(s) colour" in err


def test_cli_stats_overlong_query_exits_2(capsys):
    code, _, err = _run(capsys, "stats", "--query", "condition=" + "x" * 9000)
    assert code == 2 and "characters long" in err
