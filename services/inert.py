"""Untrusted text (trial records, URL parameters, model output) made inert for every place the app shows it.

Streamlit renders almost every string as Markdown (headers, captions, banners, labels, expander titles) and
Markdown can make the browser fetch things (images) or offer links. Plotly reads a little HTML in labels.
Every such string goes through this one module:

- `md(text)`: literal text inside Markdown. Every ASCII punctuation character is backslash-escaped
  (CommonMark allows that for all of them), so no emphasis, list, heading, table, HTML, image, link, math or
  Streamlit directive can form; bare URLs and e-mail addresses are not turned into links either, because an
  escaped ``:`` or ``.`` breaks GitHub's autolink rule (they render as the plain text they are, not as a
  broken link such as ``127%5C.0``). Lines keep their breaks.
- `md_line(text)`: the same on one line (labels, titles, banners built from several values).
- `html_text(text)`: text inside HTML we write ourselves (legends, badges, the report).
- `plotly_text(text)`: text in a Plotly label or hover (entities stand for the three HTML characters).
- `chat_md(text, grounded)`: the assistant's answer: literal text, **bold** kept, and only the NCT ids that came
  from this session's tool results turned into links — to ClinicalTrials.gov, the one site we ever link to.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable

CTGOV_STUDY = "https://clinicaltrials.gov/study/"
_PUNCT = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_NCT = re.compile(r"(?<![A-Za-z0-9])NCT\d{8}(?![A-Za-z0-9])")  # a whole token: NCT012345678 is not NCT01234567
_BOLD = re.compile(r"\\\*\\\*(?=\S)(.+?)(?<=\S)\\\*\\\*")


# GitHub-flavoured Markdown also links bare "http://…", "www.…" and e-mail addresses after parsing, escapes or
# not; an invisible word joiner before ":", "." or "@" of such a word keeps them plain text.
_WORD_JOINER = "\u2060"
_AUTOLINK = re.compile(r"(?i)(?<![^\W_])(https?|www)(?=[:.])|(?=@)")


def _escape_chars(text: str) -> str:
    text = _AUTOLINK.sub(lambda m: (m.group(1) or "") + _WORD_JOINER, text)
    return "".join("\\" + c if c in _PUNCT else c for c in text)


# Control characters other than line breaks and tabs have no business on a page, nor have the invisible
# bidirectional controls: each reorders how the rest of its line reads ("\u202eevil" shows as "live").
_DROPPED = dict.fromkeys([*range(32), *range(127, 160), *map(ord, "\u061c\u200e\u200f\u202a\u202b\u202c\u202d"
                                                             "\u202e\u2066\u2067\u2068\u2069")])
del _DROPPED[ord("\n")], _DROPPED[ord("\t")]
_SPACED = {k: " " if chr(k).isspace() else None for k in _DROPPED}  # for text(): "\x1c" still separates words


def _clean(text: object) -> str:
    return ("" if text is None else str(text)).translate(_DROPPED)


def text(value: object) -> str:
    """A text value with runs of white space collapsed and control and bidirectional characters dropped; missing
    values (None, NaN) as ''."""
    if value is None or (isinstance(value, float) and value != value):
        return ""
    return " ".join(str(value).translate(_SPACED).split())


def one_line(value: object, limit: int) -> str:
    """text(value) cut to at most limit characters, with an ellipsis when cut (the one shortener of the app)."""
    line = text(value)
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def md(text: object) -> str:
    """Text shown literally in Markdown: nothing in it becomes markup, a link, an image or HTML."""
    value = _clean(text).replace("\r\n", "\n").replace("\r", "\n")
    paragraphs: list[list[str]] = [[]]
    for line in value.split("\n"):
        line = line.strip()
        if line:
            paragraphs[-1].append(_escape_chars(line))
        elif paragraphs[-1]:
            paragraphs.append([])
    # Paragraphs stay paragraphs; the lines inside one end in a hard break (a trailing backslash).
    return "\n\n".join("\\\n".join(lines) for lines in paragraphs if lines)


def md_line(text: object) -> str:
    """`md` on a single line (every run of whitespace becomes one space)."""
    return _escape_chars(" ".join(_clean(text).split()))


def html_text(text: object) -> str:
    """Text inside HTML we write ourselves: the five HTML characters as entities."""
    return html.escape(_clean(text), quote=True)


def plotly_text(text: object) -> str:
    """Text in a Plotly label or hover: no tag (Plotly reads <a>, <span style>, …) can form."""
    return _clean(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def ctgov_link(nct_id: str, text: str | None = None) -> str:
    """A Markdown link to a study on ClinicalTrials.gov (the id must be a real NCT id)."""
    if not _NCT.fullmatch(nct_id):
        raise ValueError(f"not an NCT id: {nct_id!r}")
    return f"[{md_line(text) if text is not None else nct_id}]({CTGOV_STUDY}{nct_id})"


UNCHECKED_MARK = "⚠️ **Not checked:**"
_SLOT = re.compile("\ue000(\\d+)\ue001")


def chat_md(text: object, grounded: Iterable[str] = (), unchecked: Iterable[str] = ()) -> str:
    """The assistant's words as literal text with **bold** kept; only grounded NCT ids become links. A
    sentence in `unchecked` (a claim the checks could not confirm) is marked "Not checked" and shown as plain
    text: no bold, no link, so nothing in it looks confirmed."""
    known = {str(i).upper() for i in grounded}
    value = _clean(text).replace("\ue000", "").replace("\ue001", "")
    slots: list[str] = []
    for sentence in sorted({_clean(s).strip() for s in unchecked} - {""}, key=len, reverse=True):
        if sentence in value:
            value = value.replace(sentence, f"\ue000{len(slots)}\ue001")
            slots.append(sentence)
    out = _BOLD.sub(lambda m: f"**{m.group(1)}**", md(value))

    def link(match: re.Match[str]) -> str:
        nct = match.group(0)
        return ctgov_link(nct) if nct in known else nct

    out = _NCT.sub(link, out)
    return _SLOT.sub(lambda m: f"{UNCHECKED_MARK} {md_line(slots[int(m.group(1))])}", out)
