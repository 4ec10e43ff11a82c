"""The ConText cue table: every row's own example, and the table's validation."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from services.errors import BadInput
from services.matching.context import RULES_PATH, Context, context, load_rules

ROWS = list(csv.DictReader(open(RULES_PATH, encoding="utf-8", newline="")))


@pytest.mark.parametrize("row", ROWS, ids=[f"{r['category']}:{r['literal']}" for r in ROWS])
def test_context_rule_example_gets_its_assertion(row: dict[str, str]) -> None:
    start = row["example"].lower().index(row["target"].lower())
    got = context().assertion(row["example"], start, start + len(row["target"]))
    assert got == row["expected"], row["literal"]


def test_context_without_the_cue_is_affirmed() -> None:
    # each example's cue is what changes it: the engine with no rules affirms every target
    bare = Context(())
    for row in ROWS:
        start = row["example"].lower().index(row["target"].lower())
        assert bare.assertion(row["example"], start, start + len(row["target"])) == "affirmed"


def test_context_scope_stops_at_the_sentence_and_its_limit() -> None:
    text = (
        "He has no fever. Cough for a week. She denies one two three four five six seven eight nine nausea."
    )
    ctx = context()
    assert ctx.assertion(text, text.index("fever"), text.index("fever") + 5) == "negated"
    assert ctx.assertion(text, text.index("Cough"), text.index("Cough") + 5) == "affirmed"
    assert ctx.assertion(text, text.index("nausea"), text.index("nausea") + 6) == "affirmed"


def test_context_rules_reject_an_unknown_category(tmp_path: Path) -> None:
    bad = tmp_path / "rules.csv"
    bad.write_text("literal,category,direction,max_scope,source\nno,NEGATIVE,forward,5,x\n", encoding="utf-8")
    with pytest.raises(BadInput, match="line 2"):
        load_rules(bad)


def test_context_normal_covers_only_the_finding_it_describes() -> None:
    # "X is normal" negates X, never a condition further back in the sentence
    text = "She has diabetes and her kidney function is normal."
    ctx = context()
    assert ctx.assertion(text, text.index("kidney"), text.index("kidney") + 15) == "negated"
    assert ctx.assertion(text, text.index("diabetes"), text.index("diabetes") + 8) == "affirmed"
