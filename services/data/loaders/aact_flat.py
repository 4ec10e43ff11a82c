"""AACT flat-file export (YYYYMMDD_pipe-delimited-export.zip, or its folder of <table>.txt) → ctgov.

Each `<table>.txt` is CSV with `|` as delimiter, a header line, NULL as empty, booleans t/f (AACT's
Util::TableExporter: `COPY … TO STDOUT WITH DELIMITER '|' CSV HEADER`, then every `""` deleted and line breaks
inside values turned into `~`; those values are stored as the export has them). Tables we mirror are copied with
the columns both sides have; other files are skipped and reported. Row ids are not kept: every row gets an id
from our sequences and the columns that point at other rows (facility_id, result_group_id, outcome_id …) are
repointed, so an export never collides with rows already loaded.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from services.data.loaders import guard
from services.data.loaders.common import NCT_RE
from services.errors import BadInput, QueryFailed

# Where the database's COPY stopped, as translate_error adds it to the message (services/data/db.py).
_COPY_CONTEXT = re.compile(r" \(COPY (\w+), line (\d+)(?:, column (\w+))?[^)]*\)\Z")


@dataclass
class FlatTable:
    """One table file read: the columns kept and its records (text as in the file, '' for NULL)."""

    table: str
    columns: list[str]
    records: list[list[str]]
    dropped_columns: list[str] = field(default_factory=list)
    orphans: int = 0  # rows of studies not in studies.txt, left out: the import would not replace them
    lines: list[int] = field(default_factory=list)  # the file's line of each record

    @property
    def rows(self) -> int:
        return len(self.records)

    def renumber(self, fresh: list[int], references: dict[str, dict[str, int]],
                 ref_columns: dict[str, str]) -> dict[str, int]:
        """Give row i the id fresh[i] (returns old id → new id) and repoint columns naming other tables' ids.

        ref_columns: column → referenced table; references: table → its old id → new id. A reference to a row
        not in the export becomes NULL.
        """
        mapping: dict[str, int] = {}
        id_idx = self.columns.index("id") if "id" in self.columns else None
        refs = [(self.columns.index(c), references.get(t, {})) for c, t in ref_columns.items() if c in self.columns]
        for i, record in enumerate(self.records):
            if id_idx is not None:
                mapping[record[id_idx]] = fresh[i]
                record[id_idx] = str(fresh[i])
            for idx, known in refs:
                if record[idx] != "":
                    new = known.get(record[idx])
                    record[idx] = "" if new is None else str(new)
        return mapping

    def without_id(self) -> None:
        """Drop the id column, so the table's sequence numbers the rows."""
        if "id" in self.columns:
            idx = self.columns.index("id")
            self.columns = [c for c in self.columns if c != "id"]
            self.records = [r[:idx] + r[idx + 1:] for r in self.records]

    def csv_bytes(self) -> io.BytesIO:
        """The records as COPY-ready CSV (| delimiter, NULL as empty). CRLF rows, so a lone carriage return
        inside a value is quoted like a line break."""
        out = io.StringIO()
        csv.writer(out, delimiter="|", lineterminator="\r\n").writerows(self.records)
        return io.BytesIO(out.getvalue().encode("utf-8"))


@contextmanager
def _members(path: Path) -> Iterator[dict[str, IO[bytes]]]:
    guard.check_path(path, folder_ok=True)  # no symbolic links; size and line limits on every member
    budget = guard.Budget()
    with ExitStack() as stack:
        handles: dict[str, IO[bytes]]
        if path.is_dir():
            handles = {p.stem: stack.enter_context(guard.open_file(p, budget, where=f"{path.name}/{p.name}"))
                       for p in sorted(path.glob("*.txt"))}
        elif path.suffix == ".zip":
            zf = stack.enter_context(guard.open_zip(path))
            names = [n for n in zf.namelist() if n.endswith(".txt")]
            handles = {Path(n).stem: stack.enter_context(guard.open_member(zf, n, f"{path.name}:{n}", budget))
                       for n in names}
        else:
            raise BadInput(f"{path}: expected an AACT pipe-delimited export (.zip) or a folder of "
                           "<table>.txt files.")
        yield handles


def read_export(path: Path, known: dict[str, list[str]]) -> tuple[list[str], list[FlatTable], list[str]]:
    """Validate and convert an export: (study NCT ids, tables to copy, skipped file names).

    `known` maps each ctgov table we hold to its columns (read from the database).
    """
    tables: list[FlatTable] = []
    skipped: list[str] = []
    nct_ids: list[str] = []
    with _members(path) as members:
        if "studies" not in members:
            raise BadInput(f"{path}: no studies.txt inside; an AACT export always has one.")
        tables.append(_convert(path, "studies", members.pop("studies"), known["studies"], nct_ids))
        studies = set(nct_ids)
        for name, handle in members.items():
            if name not in known:
                skipped.append(f"{name}.txt")
                continue
            tables.append(_convert(path, name, handle, known[name], studies))
    return nct_ids, tables, skipped


def _convert(path: Path, table: str, handle: IO[bytes], columns: list[str],
             studies: list[str] | set[str]) -> FlatTable:
    """Read one table file; studies.txt appends its NCT ids to the `studies` list, other tables keep only rows
    of the `studies` set."""
    text = io.TextIOWrapper(handle, encoding="utf-8", errors="strict", newline="")
    reader = csv.reader(text, delimiter="|")
    where = f"{path.name}:{table}.txt"
    try:
        header = next(reader)
    except StopIteration as err:
        raise BadInput(f"{where}: line 1: empty file (expected a header line).") from err
    except UnicodeDecodeError as err:
        raise BadInput(f"{where}: line 1: bytes that are not UTF-8.") from err
    header = [h.strip() for h in header]
    if "nct_id" not in header:
        raise BadInput(f"{where}: line 1: no nct_id column; the header is {header[:6]}… — not an AACT table file.")
    keep = [i for i, h in enumerate(header) if h in columns]
    unknown = [h for h in header if h not in columns]
    if len(keep) < max(2, len(header) // 2):
        raise BadInput(f"{where}: line 1: columns {unknown[:6]} do not match AACT's {table} table.")
    flat = FlatTable(table, [header[i] for i in keep], [], unknown)
    nct_col = header.index("nct_id")
    seen: set[str] = set()
    line_no = 1
    try:
        for line_no, record in enumerate(reader, start=2):
            if len(record) != len(header):
                raise BadInput(f"{where}: line {line_no}: {len(record)} fields, the header has {len(header)}.")
            nct = record[nct_col]
            if not NCT_RE.match(nct):
                raise BadInput(f"{where}: line {line_no}: malformed nct_id {nct[:20]!r}.")
            if isinstance(studies, list):
                if nct in seen:
                    raise BadInput(f"{where}: line {line_no}: duplicate study {nct}.")
                seen.add(nct)
                studies.append(nct)
            elif nct not in studies:
                flat.orphans += 1
                continue
            kept = [record[i] for i in keep]
            if any("\x00" in value for value in kept):
                column = flat.columns[next(i for i, value in enumerate(kept) if "\x00" in value)]
                raise BadInput(f"{where}: line {line_no}: column {column} holds a NUL character, which PostgreSQL "
                               "cannot store; nothing was imported.")
            flat.records.append(kept)
            flat.lines.append(line_no)
    except UnicodeDecodeError as err:
        raise BadInput(f"{where}: line {line_no + 1}: bytes that are not UTF-8.") from err
    except csv.Error as err:
        raise BadInput(f"{where}: line {line_no}: unreadable CSV ({err}).") from err
    return flat


def copy_failure(path: Path, tables: list[FlatTable], err: QueryFailed) -> BadInput | None:
    """A value the database refused while copying an export, as its file, line and column; None when the
    failure names no row of `tables`."""
    found = _COPY_CONTEXT.search(str(err))
    flat = next((t for t in tables if found and t.table == found[1]), None)
    if found is None or flat is None:
        return None
    row = int(found[2]) - 1  # the rows sent are the kept records, one line each (AACT exports hold no line breaks)
    line = f" line {flat.lines[row]}:" if 0 <= row < len(flat.lines) else ""
    column = f" column {found[3]}:" if found[3] else ""
    reason = str(err)[: found.start()].removeprefix("The database refused the query: ")
    return BadInput(f"{path.name}:{flat.table}.txt:{line}{column} {reason}; nothing was imported.")
