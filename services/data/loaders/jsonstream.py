"""The items of one JSON array read a piece at a time (the site's "Download → JSON" can be gigabytes), so
memory holds one study and a read-ahead, never the file. The standard library's decoder reads each item
(json.JSONDecoder.raw_decode); this module only walks the brackets and commas between them."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from services.data.loaders import guard
from services.errors import BadInput

READ_AHEAD = 1 << 20  # characters read before each attempt to decode the next item


class _Buffer:
    """Text of the file from the current item on, with the line number where it starts."""

    def __init__(self, path: Path, lines: Iterable[tuple[int, str]], first: str, first_line: int) -> None:
        self.path, self.lines = path, iter(lines)
        self.text, self.pos, self.line = first, 0, first_line
        self.exhausted = False

    def more(self) -> bool:
        """Read at least READ_AHEAD more characters; False at the end of the file."""
        if self.exhausted:
            return False
        parts, size = [], 0
        for _, text in self.lines:
            parts.append(text)
            size += len(text)
            if size >= READ_AHEAD:
                break
        else:
            self.exhausted = True
        if self.pos > READ_AHEAD:  # drop what was consumed
            self.line += self.text.count("\n", 0, self.pos)
            self.text, self.pos = self.text[self.pos:], 0
        self.text += "".join(parts)
        return bool(parts) or not self.exhausted

    def next_char(self) -> str:
        """The next character that is not white space ('' at the end of the file); not consumed."""
        while True:
            while self.pos < len(self.text) and self.text[self.pos] in " \t\r\n":
                self.pos += 1
            if self.pos < len(self.text) or not self.more():
                return self.text[self.pos:self.pos + 1]

    def where(self, pos: int) -> int:
        return self.line + self.text.count("\n", 0, pos)


def array_items(path: Path, lines: Iterable[tuple[int, str]], first: str, first_line: int) -> Iterator[Any]:
    """Yield each item of the array that starts with the line `first` (line number `first_line`); BadInput
    names the line of anything that is not JSON, and refuses one item longer than the line limit."""
    buf = _Buffer(path, lines, first.lstrip(), first_line)
    buf.pos = 1  # the opening bracket
    decoder = json.JSONDecoder()
    limit = guard.max_line_bytes()
    expect_item = True
    while True:
        char = buf.next_char()
        if char == "]" or (char == "" and not expect_item):
            if char == "":
                raise BadInput(f"{path}: line {buf.where(buf.pos)}: the JSON array is not closed.")
            return
        if not expect_item:
            if char != ",":
                raise BadInput(f"{path}: line {buf.where(buf.pos)}: not valid JSON (expected ',' or ']').")
            buf.pos += 1
            expect_item = True
            continue
        if char == "":
            raise BadInput(f"{path}: line {buf.where(buf.pos)}: the JSON array is not closed.")
        while True:
            try:
                item, end = decoder.raw_decode(buf.text, buf.pos)
                break
            except json.JSONDecodeError as err:
                if len(buf.text) - buf.pos > limit:
                    raise BadInput(f"{path}: line {buf.where(buf.pos)}: one item is longer than "
                                   f"{limit:,} characters, the line limit ({guard.MAX_LINE_ENV}).") from err
                if not buf.more():
                    raise BadInput(f"{path}: line {buf.where(err.pos)}: not valid JSON ({err.msg}).") from err
            except RecursionError:  # Python's parser recurses per level; a hostile file nests 100,000 deep
                where = buf.where(buf.pos)
                raise BadInput(f"{path}: line {where}: JSON nested too deeply to read.") from None
        buf.pos = end
        expect_item = False
        yield item
