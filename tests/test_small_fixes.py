"""Small things a newcomer met: distinct chart labels, non-clickable charts say why, radius limit in its unit,
the sql command's table width, the Trials table's sorted column, the map without a network style."""

from __future__ import annotations

import json

from services.commands import sql_cmd
from services.dashboard import charts, filters, mapdeck, trialview


def test_small_fixes_labels_that_cut_alike_stay_distinct():
    names = [f"AST2303 Tablets(ABK3376 Tablets) ，{dose}mg" for dose in (100, 125, 25, 50, 75)]
    ticks = charts.distinct_labels(names)
    assert len(set(ticks)) == len(ticks)
    assert all(len(t) <= charts.LABEL_CHARS + 1 for t in ticks)
    for dose, tick in zip((100, 125, 25, 50, 75), ticks, strict=True):
        assert f"{dose}mg" in tick
    assert charts.distinct_labels(["Metformin", "Metformin", "Short"]) == ["Metformin", "Metformin #2", "Short"]
    assert charts.distinct_labels(["a" * 50]) == [charts.short_label("a" * 50)]


def test_small_fixes_every_chart_is_clickable_or_says_why():
    for spec in charts.CHARTS:
        assert spec.clickable or charts.NOT_CLICKABLE in spec.note, spec.facet
        assert not (spec.clickable and charts.NOT_CLICKABLE in spec.note), spec.facet


def test_small_fixes_radius_limit_is_stated_in_the_chosen_unit():
    f, notices = filters.Filters.from_query({"radius": ["15000"]})
    assert f.radius == filters.DEFAULT_RADIUS
    assert any(f"at most {int(filters.MAX_RADIUS_MILES):,} mi" in n for n in notices), notices
    f, notices = filters.Filters.from_query({"radius": ["15000"], "unit": ["km"]})
    assert (f.radius, f.unit, notices) == (15000.0, "km", [])
    _, notices = filters.Filters.from_query({"radius": ["30000"], "unit": ["km"]})
    assert any(f"at most {int(filters.MAX_RADIUS_MILES * filters.geo.KM_PER_MILE):,} km" in n for n in notices)
    _, notices = filters.Filters.from_query({"radius": ["inf"]})
    assert notices == ["Ignored radius: “inf” is not a finite number; give a distance such as 100 (at most 12,500 mi "
                       "or 20,116 km)."]
    _, notices = filters.Filters.from_query({"radius": ["nan"]})
    assert notices == ["Ignored radius: the radius must be a number more than 0."]


class _Result:
    def __init__(self, frame):  # noqa: ANN001
        self._frame = frame

    def frame(self):  # noqa: ANN201
        return self._frame


def test_small_fixes_sql_text_table_cuts_long_cells():
    import pandas as pd

    long = "Inclusion Criteria:\n" + "x " * 3000
    text = sql_cmd._text(_Result(pd.DataFrame({"nct_id": ["NCT00000001"], "criteria": [long]})))
    assert max(len(line) for line in text.splitlines()) < 100
    assert "--json prints them whole" in text
    short = sql_cmd._text(_Result(pd.DataFrame({"n": [1, 2]})))
    assert "--json" not in short


def test_small_fixes_sorted_column_stands_next_to_the_id():
    for sort, column in trialview.SORT_COLUMN.items():
        order = trialview.table_column_order(sort, near=True)
        assert order[:3] == ["nct_id", column, "title"] and order[-1] == "link"
        assert len(order) == len(set(order))
    plain = trialview.table_column_order("title", near=False)
    assert plain[:2] == ["nct_id", "title"] and "nearest" not in plain


def test_small_fixes_map_without_tiles_fetches_no_style():
    assert mapdeck.EMPTY_MAP_STYLE.startswith("data:application/json,")
    from urllib.parse import unquote

    style = json.loads(unquote(mapdeck.EMPTY_MAP_STYLE.split(",", 1)[1]))
    assert style == {"version": 8, "sources": {}, "layers": []}
