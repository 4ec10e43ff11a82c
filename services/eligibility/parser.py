"""Split free-text eligibility criteria into numbered inclusion and exclusion criteria."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from services.eligibility.scope import label_meaning

CriterionKind = Literal["inclusion", "exclusion"]

# Registry text (API v2) is markdown, so characters such as "<", ">=", "*" and "1." arrive escaped.
_MD_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!<>|~=&\"'^%$@:;,/?])")

# A list marker at the start of a stripped line.  "*" and "+" need a following space so that
# footnote marks ("*1") and emphasis are not taken for bullets; an escaped marker ("1\.") is not a
# list marker, which is exactly what the markdown escape was for.
_BULLET = re.compile(
    r"""^(?:
        [*+](?=\s)
      | [•·▪●◦■□➢►✓✔–—]
      | -(?=\s|[A-Za-z(])
      | \d{1,3}[.)](?=\s)
      | \(\d{1,3}\)(?=\s)
      | [a-zA-Z][.)](?=\s)
      | \([a-zA-Z]\)(?=\s)
      | [ivxIVX]{1,4}[.)](?=\s)
      | [\u2460-\u2473]
    )\s*""",
    re.X,
)
# "* 2\. Need to ..." -- a bullet that repeats an (escaped) item number.
_REDUNDANT_NUMBER = re.compile(r"^\d{1,3}\\?[.)]\s+")

_KIND_WORD = re.compile(r"\b(non[- ]?inclusion|inclusions?|exclusions?|ineligibility)\b", re.I)
_CRITERIA_WORD = re.compile(r"\b(criti?eri(?:a|on|as|um)|requirements?)\b", re.I)
# Words that make a line a sentence about criteria rather than a heading over them.
_SENTENCE_WORD = re.compile(
    r"\b(meets?|met|fulfil+s?|satisf(?:y|ies)|apply|applies|may|must|will|should|would|can|is|are|"
    r"do|does|did|not|if|who|unless|than|refer|see|listed|above|below)\b",
    re.I,
)
_BARE_HEADING = re.compile(
    r"^(?:(?:key|main|major|other|general|additional|specific)\s+)?"
    r"(?:non[- ]?inclusions?|inclusions?|exclusions?)$",
    re.I,
)
_INLINE_HEADING = re.compile(
    r"^(?P<head>(?:[\w/()-]+\s+){0,4}?(?:non[- ]?inclusion|inclusion|exclusion)\s+criti?eri(?:a|on|as)\b"
    r"[^:.]{0,60}?)\s*:\s*(?P<rest>\S.*)$",
    re.I,
)
# An unbulleted line that opens with "Inclusion criteria for ..." is a heading however long it is.
_LEADING_HEADING = re.compile(
    r"^(?:(?:key|main|major|other|general|additional|specific|patient|participant|subject)\s+)?"
    r"(?:non[- ]?inclusion|inclusion|exclusion)\s+criti?eri(?:a|on|as)\b"
    r"(?!\s+(?:is|are|was|were|will|must|may|apply|applies|can|should|do|does)\b)",
    re.I,
)
_PREAMBLE = re.compile(
    r"\b(the following|as follows|all of the|any of the|one of the|must (?:meet|fulfil+|satisfy|have)"
    r"|will be (?:included|excluded|eligible)|are (?:eligible|excluded|not eligible)"
    r"|(?:to be|is|are) eligible|eligible (?:if|for)|object to the)\b",
    re.I,
)
# A list item that only announces the items after it ("Men with the following conditions were excluded:").
_ANNOUNCEMENT = re.compile(r"\b(?:excluded|included|eligible|ineligible|meet|fulfil+)\b.*:$", re.I)
_PLACEHOLDER = re.compile(
    r"^(?:nil|none|n/?a|not applicable|not specified|not required|no exclusion criteria|"
    r"no inclusion criteria|see .*characteristics|\.+|-+)\.?$",
    re.I,
)
# Headings of lists that are not about who may join (they end the eligibility lists).
_OTHER_HEADING = re.compile(
    r"^(?:[\w-]+\s+){0,2}(?:drop-?out|withdrawal|discontinuation|removal|termination|stopping)\s+"
    r"(?:criteria|criterion)\s*:?$",
    re.I,
)
_NOTE_START = re.compile(r"^(?:\*?\s*note\b|n\.?b\.?\b|\*\s*\d)", re.I)


# Where one sentence of a criterion ends: after "." or ";" before a capital or an opening bracket.
_CRITERION_SENTENCE_END = re.compile(r"(?<=[.;])\s+(?=[A-Z(])")


def criterion_sentences(text: str) -> list[str]:
    """The sentences of one criterion's text, as written (blank pieces dropped, nothing else trimmed)."""
    return [part for part in _CRITERION_SENTENCE_END.split(text) if part.strip()]


# An item that only announces that the items under it are each required ("... must meet all of the
# following criteria:") or each rule a person out ("... excluded if they meet any of the following:").
_ALL_ANNOUNCEMENT = re.compile(
    r"\b(?:all (?:of )?the following|each of the following|the following (?:inclusion |exclusion |eligibility )?"
    r"(?:criteria|requirements|conditions)\b(?!\s+(?:at least|one|any))|(?:are|is|be) (?:eligible|included)\b"
    r".*\bfollowing)",
    re.I,
)
_ANY_ANNOUNCEMENT = re.compile(r"\b(?:any|one or more|at least one|either) (?:of )?(?:the )?following\b", re.I)


def _splits_into_criteria(text: str, kind: CriterionKind) -> bool:
    """Whether a list item is only a header whose sub-items are separate criteria of the same kind.

    For inclusion lists that holds when the header says *all* of them are needed; a header saying
    "at least one of the following" keeps its alternatives together as one criterion.  For exclusion
    lists "any of the following" also splits: any one item applying rules a person out either way.
    """
    if not text.endswith(":") or len(text.split()) > 30:
        return False
    if _ALL_ANNOUNCEMENT.search(text):
        return not (kind == "inclusion" and _ANY_ANNOUNCEMENT.search(text))
    return kind == "exclusion" and bool(_ANY_ANNOUNCEMENT.search(text)) and bool(
        re.search(r"\b(?:excluded|not eligible|ineligible|exclusion)\b", text, re.I)
    )


def unescape_markdown(text: str) -> str:
    """Turn the registry's markdown escapes (``\\>=``, ``\\*``, ``1\\.``) back into plain characters."""
    return _MD_ESCAPE.sub(r"\1", text)


@dataclass(frozen=True)
class Criterion:
    """One top-level criterion; nested sub-items stay attached to it as children."""

    number: int
    text: str
    kind: CriterionKind
    children: tuple[str, ...] = ()
    section: str | None = None

    @property
    def full_text(self) -> str:
        """The criterion with its sub-items, as one line a reader (or an evaluator) can judge."""
        return _with_subitems(self.text, self.children)


def _with_subitems(head: str, subs: Sequence[str]) -> str:
    """A list item and its sub-items as one line: "Head: a; b" (a head that ends in ":" gets no second)."""
    if not subs:
        return head
    return head + (" " if head.endswith(":") else ": ") + "; ".join(subs)


@dataclass(frozen=True)
class ParsedCriteria:
    """Inclusion and exclusion criteria of one trial, numbered from 1 within each kind."""

    inclusion: tuple[Criterion, ...]
    exclusion: tuple[Criterion, ...]
    unsplit: bool
    ignored: tuple[str, ...] = ()

    @property
    def all(self) -> tuple[Criterion, ...]:
        """Inclusion criteria first, then exclusion criteria."""
        return self.inclusion + self.exclusion

    @property
    def notice(self) -> str | None:
        """A sentence for the reader when the split into inclusion and exclusion was a guess."""
        if self.unsplit:
            return (
                "This trial's criteria have no 'Inclusion' or 'Exclusion' headings, so every item is "
                "listed as an inclusion criterion; read items that start with 'No' as things that rule "
                "a person out."
            )
        return None


def _clean(text: str) -> str:
    text = unescape_markdown(text)
    text = re.sub(r"\s+", " ", text).strip()
    return text.rstrip(";,").strip()


@dataclass(frozen=True)
class _Heading:
    kind: str  # "inclusion", "exclusion", "neutral" (both or neither) or "other" (e.g. dropout criteria)
    title: str
    rest: str  # text after "Heading:" on the same line


def _heading(body: str, bulleted: bool) -> _Heading | None:
    """The heading a line opens, if it is an inclusion/exclusion (or other criteria) heading."""
    text = unescape_markdown(body).strip()
    if _OTHER_HEADING.match(text):
        return _Heading("other", text.rstrip(":"), "")
    if re.fullmatch(r"(?:(?:key|main|major|general|study|participant)\s+)?eligibility criteria\s*:?", text, re.I):
        return _Heading("neutral", text.rstrip(":"), "")
    inline = _INLINE_HEADING.match(text)
    if inline and len(inline.group("head").split()) <= 10:
        head, rest = inline.group("head"), inline.group("rest").strip()
    elif not bulleted and _LEADING_HEADING.match(text) and len(text.split()) <= 40:
        head, rest = text.rstrip(":").strip(), ""
    else:
        head, rest = text.rstrip(":").strip(), ""
        kind_match = _KIND_WORD.search(head)
        if kind_match is None or len(head.split()) > 12 or len(head[: kind_match.start()].split()) > 4:
            return None
        if not (_BARE_HEADING.match(head) or _CRITERIA_WORD.search(head)):
            return None
        if _SENTENCE_WORD.search(head) and not text.endswith(":"):
            return None
        if re.search(r"\b(meets?|must|will|apply|applies|may)\b", head, re.I):
            return None
    kinds = {m.group(1).lower() for m in _KIND_WORD.finditer(head)}
    has_exclusion = any(k.startswith(("excl", "non", "inel")) for k in kinds)
    has_inclusion = any(k.startswith("incl") for k in kinds)
    if has_exclusion and has_inclusion:
        return _Heading("neutral", head, rest)
    return _Heading("exclusion" if has_exclusion else "inclusion", head, rest)


@dataclass
class _Child:
    indent: int
    parts: list[str]
    subs: list[str]

    def text(self) -> str:
        return _with_subitems(_clean(" ".join(self.parts)), [c for c in (_clean(s) for s in self.subs) if c])


@dataclass
class _Item:
    kind: CriterionKind
    indent: int
    parts: list[str]
    section: str | None
    children: list[_Child]

    def ends_with_colon(self) -> bool:
        return self.parts[-1].rstrip().endswith(":")

    def add_text(self, text: str) -> None:
        if not self.children:
            self.parts.append(text)
        elif self.children[-1].subs:
            self.children[-1].subs[-1] += " " + text
        else:
            self.children[-1].parts.append(text)

    def add_bullet(self, text: str, indent: int) -> None:
        if self.children and indent > self.children[-1].indent:
            self.children[-1].subs.append(text)
        else:
            self.children.append(_Child(indent, [text], []))


# Some records arrive as one run-on line: "Inclusion Criteria:- item- item Exclusion Criteria:- item".
_MIDLINE_HEADING = re.compile(
    r"(?<=[.;:)\w])\s*(?=(?:Key |Main )?(?:Inclusion|Exclusion|INCLUSION|EXCLUSION) "
    r"(?:Criteria|CRITERIA|Critieria|CRITIERIA)\s*:)"
)
_RUN_ON_DASH = re.compile(r"(?:(?<=\s)|(?<=[\w.)]))-\s+(?=[A-Z(])")


def _split_run_on(line: str) -> list[str]:
    """Break a long single line that holds headings and dash-separated items into separate lines."""
    if len(line) < 150 or not re.search(r"(?i)(inclusion|exclusion) criteria\s*:", line):
        return [line]
    pieces = _MIDLINE_HEADING.sub("\n", line).split("\n")
    out: list[str] = []
    for piece in pieces:
        head, sep, rest = piece.partition(":")
        if sep and re.search(r"(?i)criteria\s*$", head) and _RUN_ON_DASH.search(rest):
            out.append(head.strip() + ":")
            items = (item.strip().lstrip("-").strip() for item in _RUN_ON_DASH.split(rest))
            out.extend("- " + item for item in items if item)
        else:
            out.append(piece)
    return out


# An item that ends by announcing exceptions or examples; the flat list after it belongs to it.
_SUBLIST_OPENER = re.compile(r"\b(?:with (?:the )?exception of|except(?: for)?|other than|excluding|include|"
                             r"includes)\s*:$", re.I)
SUBLIST_WORDS = 25


def _opens_sublist(item: _Item) -> bool:
    return bool(_SUBLIST_OPENER.search(item.parts[-1].rstrip()))


def _scope_heading(rest: str, later: Sequence[str]) -> bool:
    """Whether the words after "Inclusion Criteria:" name a part of the trial (a cohort, arm, healthy
    volunteers) over the list that follows, rather than being the first criterion."""
    following = next((line.strip() for line in later if line.strip()), "")
    return bool(following) and _BULLET.match(following) is not None and label_meaning(rest) is not None


def parse_criteria(text: str | None) -> ParsedCriteria:
    """Parse registry eligibility text (markdown or legacy indented plain text) into criteria."""
    if not text or not text.strip():
        return ParsedCriteria((), (), unsplit=False)
    lines = text.replace("\r\n", "\n").replace("\r", "\n").replace("\t", "    ").replace("\xa0", " ").split("\n")
    lines = [piece for line in lines for piece in _split_run_on(line)]

    items: list[_Item] = []
    ignored: list[str] = []
    kind: CriterionKind = "inclusion"
    in_other_list = False
    found_heading = False
    section: str | None = None
    base_indent: int | None = None
    current: _Item | None = None
    previous_blank = True
    for index, raw in enumerate(lines):
        stripped = raw.strip()
        if not stripped:
            previous_blank = True
            continue
        indent = len(raw) - len(raw.lstrip(" "))
        bullet = _BULLET.match(stripped)
        body = _REDUNDANT_NUMBER.sub("", stripped[bullet.end() :]) if bullet else stripped

        heading = _heading(body, bulleted=bullet is not None)
        if in_other_list and heading is None:
            ignored.append(_clean(body))
            continue
        if heading is not None:
            rest = heading.rest
            in_other_list = heading.kind == "other"
            if heading.kind in ("inclusion", "exclusion"):
                kind = heading.kind  # type: ignore[assignment]
                found_heading = True
            # A heading that names a group ("Inclusion criteria for participation in R3") labels what follows.
            title = _clean(heading.title)
            named_group = len(title.split()) > 3 and not _BARE_HEADING.match(title)
            section = title if named_group and not re.fullmatch(r"(?i)[\w ]*criti?eri\w*", title) else None
            base_indent, current = None, None
            previous_blank = True
            if rest and _scope_heading(rest, lines[index + 1:]):
                # "Inclusion Criteria: Urothelial Bladder Cancer Expansion Cohort" over a list: whom it is for
                section = _clean(rest).rstrip(":.")
            elif rest and re.fullmatch(r"\d{1,3}\\?[.)]", rest) is None:
                if rest.endswith(":") or (_PREAMBLE.search(rest) and len(rest) <= 150):
                    ignored.append(_clean(rest))
                else:
                    current = _Item(kind, indent, [rest], section, [])
                    items.append(current)
            continue

        if bullet:
            if not _clean(body):
                previous_blank = False
                continue
            if current is not None and base_indent is not None and indent > base_indent:
                current.add_bullet(body, indent)
            elif (current is not None and _opens_sublist(current) and len(body.split()) <= SUBLIST_WORDS
                  and not body.rstrip().endswith(".")):
                # "... with the exception of:" or "Effective methods include:" over a flat list: its items
                # (short, unpunctuated ones; a sentence starts the next criterion) are exceptions or examples
                current.add_bullet(body, indent + 1)
            else:
                base_indent = indent if base_indent is None else min(base_indent, indent)
                current = _Item(kind, indent, [body], section, [])
                items.append(current)
            previous_blank = False
            continue

        # A line without a list marker: a wrapped continuation, a sub-heading label, or a paragraph.
        continues = current is not None and (
            not previous_blank
            or indent > current.indent
            or (current.ends_with_colon() and not current.children)
            or _NOTE_START.match(stripped) is not None
        )
        if continues and current is not None:
            if previous_blank and not current.children and current.ends_with_colon():
                current.add_bullet(body, indent)
            else:
                current.add_text(body)
            previous_blank = False
            continue

        following = next((later for later in lines[index + 1 :] if later.strip()), "")
        follows_list = bool(following) and _BULLET.match(following.strip()) is not None
        label_like = stripped.endswith(":") or (
            follows_list and not re.search(r"[.;]$", stripped)
            and (len(stripped.split()) <= 6
                 or (len(stripped.split()) <= 15 and label_meaning(stripped) is not None))
        )
        if label_like:
            label = _clean(unescape_markdown(stripped).rstrip(":").strip())
            if _PREAMBLE.search(label):
                ignored.append(label)
                section = None
            else:
                section = label
            current = None
            if base_indent is not None and indent < base_indent:
                base_indent = None
        else:
            current = _Item(kind, indent, [body], section, [])
            items.append(current)
            base_indent = indent if base_indent is None else min(base_indent, indent)
        previous_blank = False

    inclusion: list[Criterion] = []
    exclusion: list[Criterion] = []
    for item in items:
        text_value = _clean(" ".join(item.parts))
        children = tuple(c for c in (child.text() for child in item.children) if c)
        if not text_value and not children:
            continue
        target = inclusion if item.kind == "inclusion" else exclusion
        if children and _splits_into_criteria(text_value, item.kind):
            # "* Patients are eligible only if they meet all of the following criteria:" over a numbered
            # list: the bullet only announces the list, and each numbered item is a criterion of its own.
            ignored.append(text_value)
            for child in children:
                target.append(Criterion(number=len(target) + 1, text=child, kind=item.kind, section=item.section))
            continue
        if not children and (_PLACEHOLDER.match(text_value) or _ANNOUNCEMENT.search(text_value)):
            ignored.append(text_value)
            continue
        if not text_value:
            text_value, children = children[0], children[1:]
        target.append(Criterion(number=len(target) + 1, text=text_value, kind=item.kind, children=children,
                                section=item.section))
    return ParsedCriteria(
        inclusion=tuple(inclusion),
        exclusion=tuple(exclusion),
        unsplit=not found_heading and bool(inclusion or exclusion),
        ignored=tuple(i for i in ignored if i),
    )
