"""AACT flat-file export (YYYYMMDD_pipe-delimited-export.zip, or its folder of <table>.txt) → ctgov.

Each `<table>.txt` is CSV with `|` as delimiter, a header line, NULL as empty, booleans t/f.
Tables we mirror are copied with the columns both sides have; other files are skipped and reported.
"""

from __future__ import annotations

import csv
import io
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from services.errors import BadInput
from services.loaders.common import NCT_RE


@dataclass
class FlatTable:
    """One table file ready to COPY: the columns kept and a CSV byte stream of them."""

    table: str
    columns: list[str]
    data: io.BytesIO
    rows: int
    dropped_columns: list[str] = field(default_factory=list)


@contextmanager
def _members(path: Path) -> Iterator[dict[str, IO[bytes]]]:
    if path.is_dir():
        handles = {p.stem: p.open("rb") for p in sorted(path.glob("*.txt"))}
        try:
            yield handles
        finally:
            for h in handles.values():
                h.close()
    elif path.suffix == ".zip":
        try:
            zf = zipfile.ZipFile(path)
        except zipfile.BadZipFile as err:
            raise BadInput(f"{path}: not a readable zip file ({err}); download the export again.") from err
        with zf:
            names = [n for n in zf.namelist() if n.endswith(".txt")]
            handles = {Path(n).stem: zf.open(n) for n in names}
            try:
                yield handles
            finally:
                for h in handles.values():
                    h.close()
    else:
        raise BadInput(f"{path}: expected an AACT pipe-delimited export (.zip) or a folder of <table>.txt files.")


def read_export(path: Path, known: dict[str, list[str]]) -> tuple[list[str], list[FlatTable], list[str]]:
    """Validate and convert an export: (study NCT ids, tables to copy, skipped file names).

    `known` maps each ctgov table we hold to its columns (read from the database).
    """
    if not path.exists():
        raise BadInput(f"{path}: no such file or folder.")
    tables: list[FlatTable] = []
    skipped: list[str] = []
    nct_ids: list[str] = []
    with _members(path) as members:
        if "studies" not in members:
            raise BadInput(f"{path}: no studies.txt inside; an AACT export always has one.")
        for name, handle in members.items():
            if name not in known:
                skipped.append(f"{name}.txt")
                continue
            tables.append(_convert(path, name, handle, known[name], nct_ids if name == "studies" else None))
    return nct_ids, tables, skipped


def _convert(path: Path, table: str, handle: IO[bytes], columns: list[str], nct_out: list[str] | None) -> FlatTable:
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
    out = io.StringIO()
    writer = csv.writer(out, delimiter="|", lineterminator="\n")
    nct_col = header.index("nct_id")
    seen: set[str] = set()
    rows = 0
    line_no = 1
    try:
        for line_no, record in enumerate(reader, start=2):
            if len(record) != len(header):
                raise BadInput(f"{where}: line {line_no}: {len(record)} fields, the header has {len(header)}.")
            nct = record[nct_col]
            if not NCT_RE.match(nct):
                raise BadInput(f"{where}: line {line_no}: malformed nct_id {nct[:20]!r}.")
            if nct_out is not None:
                if nct in seen:
                    raise BadInput(f"{where}: line {line_no}: duplicate study {nct}.")
                seen.add(nct)
                nct_out.append(nct)
            writer.writerow([record[i] for i in keep])
            rows += 1
    except UnicodeDecodeError as err:
        raise BadInput(f"{where}: line {line_no + 1}: bytes that are not UTF-8.") from err
    except csv.Error as err:
        raise BadInput(f"{where}: line {line_no}: unreadable CSV ({err}).") from err
    return FlatTable(table, [header[i] for i in keep], io.BytesIO(out.getvalue().encode("utf-8")), rows, unknown)
