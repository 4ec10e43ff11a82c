"""The app's one text formatter and shortener (services.inert.text / one_line), used wherever record text, a URL
parameter or an upload's value is quoted in a message, a tooltip or a report."""

from __future__ import annotations

import random

import pytest

from services.inert import one_line, text


@pytest.mark.parametrize(("value", "want"), [
    (None, ""), (float("nan"), ""), ("", ""), ("  a \n\t b  ", "a b"), (12, "12"), (1.5, "1.5"), ("x\u00a0y", "x y"),
    ("pay\u202egnp.exe", "paygnp.exe"), ("a \u2066b\u2069 \u200e\u200f c\x00", "a b c"), ("x\x1cy\x0bz", "x y z"),
])
def test_inert_text_collapses_white_space_and_blanks_missing_values(value: object, want: str) -> None:
    assert text(value) == want


def test_inert_one_line_keeps_short_text_and_cuts_long_text_with_an_ellipsis() -> None:
    assert one_line("Boston,\n  MA", 40) == "Boston, MA"
    assert one_line("a" * 40, 40) == "a" * 40
    assert one_line("a" * 41, 40) == "a" * 39 + "…"
    assert one_line("word " * 20, 10) == "word word…"  # no space before the ellipsis
    assert one_line(None, 5) == ""


def test_inert_one_line_is_never_longer_than_its_limit_and_keeps_the_start() -> None:
    rng = random.Random(7)
    alphabet = "ab \n\t.,é"
    for _ in range(2_000):
        raw = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))
        limit = rng.randint(2, 50)
        out = one_line(raw, limit)
        assert len(out) <= limit and "\n" not in out and "\t" not in out
        whole = text(raw)
        assert out == whole or (out.endswith("…") and whole.startswith(out[:-1]))


def test_inert_chat_md_links_only_a_whole_grounded_nct_id() -> None:
    from services.inert import chat_md

    seen = ["NCT01234567"]
    assert chat_md("See NCT01234567.", seen) == "See [NCT01234567](https://clinicaltrials.gov/study/NCT01234567)\\."
    assert chat_md("(NCT01234567, NCT07654321)", seen) == (
        "\\([NCT01234567](https://clinicaltrials.gov/study/NCT01234567)\\, NCT07654321\\)")
    # A longer token is not that trial: a ninth digit or a letter around it must not link to NCT01234567.
    for token in ("NCT012345678", "XNCT01234567", "NCT01234567X", "2NCT01234567"):
        assert chat_md(f"See {token} now", seen) == f"See {token} now", token


def test_inert_bidirectional_controls_cannot_reorder_what_a_line_says() -> None:
    # A right-to-left override (U+202E) in a URL parameter or a record's text reversed the rest of its line on the
    # page: Explore's notice for the link parameter "\u202eevil" read “.”live instead of “evil”. Now the invisible
    # bidirectional controls are dropped like other control characters (C1 controls too); letters of right-to-left
    # scripts and the joiners that emoji need are kept.
    from services.inert import html_text, md, md_line, plotly_text

    controls = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u0085\u009b"
    for shown in (md, md_line, html_text, plotly_text):
        for ch in controls:
            assert shown(f"a{ch}b") == "ab", (shown.__name__, hex(ord(ch)))
    assert md_line("Ignored “\u202eevil”") == "Ignored “evil”"
    assert md_line("שלום 👩\u200d⚕️") == "שלום 👩\u200d⚕️"
