"""A strict HTML well-formedness check for generated pages (html5lib is not installed): balanced tags, unique ids."""

from __future__ import annotations

from html.parser import HTMLParser

VOID = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
)


class _Checker(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, tuple[int, int]]] = []
        self.problems: list[str] = []
        self.ids: set[str] = set()
        self.doctype = False
        self.hrefs: list[str] = []
        self.elements: list[str] = []

    def handle_decl(self, decl: str) -> None:
        if decl.lower() == "doctype html":
            self.doctype = True

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append(tag)
        names = [name for name, _ in attrs]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            self.problems.append(f"line {self.getpos()[0]}: <{tag}> repeats attribute(s) {repeated}")
        for name, value in attrs:
            if name == "id" and value is not None:
                if value in self.ids:
                    self.problems.append(f"line {self.getpos()[0]}: duplicate id {value!r}")
                self.ids.add(value)
            if name in ("href", "src") and value is not None:
                self.hrefs.append(value)
        if tag not in VOID:
            self.stack.append((tag, self.getpos()))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in VOID:
            self.problems.append(f"line {self.getpos()[0]}: <{tag}/> is not a void element")
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.stack.pop()

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            self.problems.append(f"line {self.getpos()[0]}: end tag for void element </{tag}>")
            return
        if not self.stack:
            self.problems.append(f"line {self.getpos()[0]}: </{tag}> with nothing open")
            return
        open_tag, where = self.stack.pop()
        if open_tag != tag:
            self.problems.append(
                f"line {self.getpos()[0]}: </{tag}> closes <{open_tag}> opened at line {where[0]}"
            )


def check_html(text: str) -> dict[str, object]:
    """Parse text; return {problems, ids, hrefs, elements}. Problems list every unbalanced or duplicate thing."""
    checker = _Checker()
    checker.feed(text)
    checker.close()
    problems = list(checker.problems)
    if not checker.doctype:
        problems.append("no <!DOCTYPE html>")
    for tag, where in checker.stack:
        problems.append(f"<{tag}> opened at line {where[0]} is never closed")
    return {"problems": problems, "ids": checker.ids, "hrefs": checker.hrefs, "elements": checker.elements}


class _Tables(HTMLParser):
    def __init__(self, css_class: str) -> None:
        super().__init__(convert_charrefs=True)
        self.css_class = css_class
        self.tables: list[list[list[str]]] = []
        self.depth = 0  # >0 while inside a matching table
        self.cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        classes = (dict(attrs).get("class") or "").split()
        if tag == "table":
            if self.depth:
                self.depth += 1
            elif self.css_class in classes:
                self.depth = 1
                self.tables.append([])
        elif self.depth == 1 and tag == "tr":
            self.tables[-1].append([])
        elif self.depth == 1 and tag in ("td", "th"):
            self.cell = []
        elif self.cell is not None and tag == "br":
            self.cell.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag == "table" and self.depth:
            self.depth -= 1
        elif self.depth == 1 and tag in ("td", "th") and self.cell is not None:
            self.tables[-1][-1].append(" ".join("".join(self.cell).split()))
            self.cell = None

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.append(data)


def tables(text: str, css_class: str) -> list[list[list[str]]]:
    """Every <table> with the class, as rows of cell texts (whitespace collapsed)."""
    parser = _Tables(css_class)
    parser.feed(text)
    parser.close()
    return parser.tables


class _Texts(HTMLParser):
    def __init__(self, tag: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tag = tag
        self.found: list[str] = []
        self.parts: list[str] | None = None
        self.depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == self.tag:
            if self.parts is None:
                self.parts = []
            self.depth += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == self.tag and self.parts is not None:
            self.depth -= 1
            if self.depth == 0:
                self.found.append(" ".join("".join(self.parts).split()))
                self.parts = None

    def handle_data(self, data: str) -> None:
        if self.parts is not None:
            self.parts.append(data)


def element_texts(text: str, tag: str) -> list[str]:
    """The text of every <tag> element, in document order, whitespace collapsed."""
    parser = _Texts(tag)
    parser.feed(text)
    parser.close()
    return parser.found
