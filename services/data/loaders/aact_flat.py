"""AACT flat-file export (YYYYMMDD_pipe-delimited-export.zip, or its folder of <table>.txt) → staging tables.

Each `<table>.txt` is CSV with `|` as delimiter, a header line, NULL as empty, booleans t/f (AACT's
Util::TableExporter: `COPY … TO STDOUT WITH DELIMITER '|' CSV HEADER`, then every `""` deleted and line breaks
inside values turned into `~`; those values are stored as the export has them). Each member streams from the
zip (through the size and line guard) straight into PostgreSQL's COPY, into a temporary staging table typed
like ours (`_s_<table>`, with each row's file line), so memory holds one read buffer whatever the export's
size; the checks a row needs (NCT id form, duplicate studies, rows of studies not in studies.txt) then run in
SQL, and services/data/loaders/aact_merge.py moves what should be kept into ctgov. Other files are skipped and
reported."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import IO

from services.data.loaders import guard, merge
from services.data.loaders.bulk import Session
from services.data.loaders.common import ID_TABLES
from services.errors import BadInput, QueryFailed

# Where the database's COPY stopped, as translate_error adds it to the message (services/data/db.py).
_COPY_CONTEXT = re.compile(r" \(COPY _s_(\w+), line (\d+)(?:, column (\w+))?[^)]*\)\Z")
_NAME = re.compile(r"^[a-z_][a-z0-9_]*$")
_NCT_SQL = "^NCT[0-9]{8}$"


@dataclass
class Staged:
    """One table file copied into its staging table."""

    table: str
    columns: list[str]  # the file's columns we hold, in file order
    rows: int = 0
    dropped_columns: list[str] = field(default_factory=list)
    orphans: int = 0  # rows of studies not in studies.txt, left out: the import would not replace them

    @property
    def stage(self) -> str:
        return f'"_s_{self.table}"'


@contextmanager
def members(path: Path) -> Iterator[dict[str, tuple[str, Callable[[], IO[bytes]]]]]:
    """Table name → (where, opener) of each `<table>.txt` in a zip or folder. Two members naming one table are
    refused with both names (a zip may even hold one name twice); each opens through the guard when asked."""
    guard.check_path(path, folder_ok=True)  # no symbolic links; size and line limits on every member
    budget = guard.Budget()
    with ExitStack() as stack:
        found: dict[str, tuple[str, Callable[[], IO[bytes]]]] = {}
        openers: dict[str, Callable[[], IO[bytes]]] = {}
        if path.is_dir():
            for p in sorted(path.glob("*.txt")):
                openers[p.name] = partial(_enter, stack, partial(guard.open_file, p, budget,
                                                                 where=f"{path.name}/{p.name}"))
            names = list(openers)
        elif path.suffix == ".zip":
            zf = stack.enter_context(guard.open_zip(path))
            names = [n for n in zf.namelist() if n.endswith(".txt")]
            for n in names:  # a name twice is refused below, before anything is opened
                member = partial(guard.open_member, zf, n, f"{path.name}:{n}", budget)
                openers[n] = partial(_enter, stack, member)
        else:
            raise BadInput(f"{path}: expected an AACT pipe-delimited export (.zip) or a folder of "
                           "<table>.txt files.")
        for name in names:
            table = Path(name).stem.lower()
            if table in found:
                raise BadInput(f"{path}: holds {found[table][0]} and {name}, two files for the {table} "
                               "table; keep one and import again. Nothing was imported.")
            found[table] = (name, openers[name])
        yield found


def _enter(stack: ExitStack, opener: Callable[[], IO[bytes]]) -> IO[bytes]:
    return stack.enter_context(opener())  # type: ignore[arg-type]


def _header(handle: IO[bytes], where: str) -> list[str]:
    line = handle.readline()
    try:
        text = line.decode("utf-8").removeprefix("\ufeff").rstrip("\r\n")
    except UnicodeDecodeError as err:
        raise BadInput(f"{where}: line 1: bytes that are not UTF-8.") from err
    if not text.strip():
        raise BadInput(f"{where}: line 1: empty file (expected a header line).")
    header = [h.strip().strip('"') for h in text.split("|")]
    if "nct_id" not in header:
        raise BadInput(f"{where}: line 1: no nct_id column; the header is {header[:6]}… — not an AACT table file.")
    if len(set(header)) != len(header):
        twice = next(h for h in header if header.count(h) > 1)
        raise BadInput(f"{where}: line 1: column {twice[:40]!r} appears twice in the header.")
    return header


def stage(session: Session, path: Path, table: str, handle: IO[bytes], lay: merge.Layout) -> Staged:
    """COPY one member into `_s_<table>` (merge.create_stage, plus the file line of each row); columns we do
    not hold go to text columns nobody reads."""
    types = lay.types[table]
    header = _header(handle, f"{path.name}:{table}.txt")
    known = [h for h in header if h in types]
    unknown = [h for h in header if h not in types]
    if len(known) < max(2, len(header) // 2):
        raise BadInput(f"{path.name}:{table}.txt: line 1: columns {unknown[:6]} do not match AACT's {table} "
                       "table.")
    staged = Staged(table, known, dropped_columns=unknown)
    names = {h: (h if h in types else f"_x{i}") for i, h in enumerate(header)}
    extra = [f'"{names[h]}" text' for h in unknown]
    extra.append("_line bigint GENERATED BY DEFAULT AS IDENTITY (START WITH 2)")
    merge.create_stage(session, table, lay, extra)
    staged.rows = session.copy_csv(f"_s_{table}", [names[h] for h in header], handle)
    return staged


def check(session: Session, path: Path, staged: Staged, studies: Staged | None) -> None:
    """Refuse malformed NCT ids and (in studies.txt) a study twice; drop rows of studies not in studies.txt.
    """
    where = f"{path.name}:{staged.table}.txt"
    bad = session.fetch(f"SELECT _line, left(coalesce(nct_id, ''), 20) AS nct FROM {staged.stage} "
                        f"WHERE nct_id IS NULL OR nct_id !~ $1 ORDER BY _line LIMIT 1", _NCT_SQL)
    if bad:
        raise BadInput(f"{where}: line {bad[0]['_line']}: malformed nct_id {bad[0]['nct']!r}.")
    if studies is None:
        twice = session.fetch(f"SELECT nct_id, (array_agg(_line ORDER BY _line))[2] AS line "
                              f"FROM {staged.stage} "
                              "GROUP BY nct_id HAVING count(*) > 1 ORDER BY 2 LIMIT 1")
        if twice:
            raise BadInput(f"{where}: line {twice[0]['line']}: duplicate study {twice[0]['nct_id']}.")
        session.execute(f"CREATE UNIQUE INDEX ON {staged.stage} (nct_id)")
    else:
        status = session.execute(f"DELETE FROM {staged.stage} s WHERE NOT EXISTS "
                                 f"(SELECT 1 FROM {studies.stage} t WHERE t.nct_id = s.nct_id)")
        staged.orphans = int(status.split()[-1])
        staged.rows -= staged.orphans
        session.execute(f"CREATE INDEX ON {staged.stage} (nct_id)")
        if "id" in staged.columns and staged.table in ID_TABLES:
            try:
                session.execute(f"CREATE UNIQUE INDEX ON {staged.stage} (id)")
            except QueryFailed as err:
                raise BadInput(f"{where}: two rows share one id ({err}); nothing was imported.") from err
    session.execute(f"ANALYZE {staged.stage}")


def copy_failure(path: Path, err: QueryFailed) -> BadInput | None:
    """A value the database refused while copying an export, as its file, line and column; None when the
    failure names no member."""
    found = _COPY_CONTEXT.search(str(err))
    if found is None:
        return None
    line = int(found[2]) + 1  # the header line is read before the COPY starts
    named = found[3] and _NAME.match(found[3]) and not found[3].startswith("_x")  # not a column we drop
    column = f" column {found[3]}:" if named else ""
    reason = str(err)[: found.start()].removeprefix("The database refused the query: ")
    if "0x00" in reason:
        reason = "holds a NUL character, which PostgreSQL cannot store"
    elif "invalid byte sequence" in reason:
        reason = f"bytes that are not UTF-8 ({reason})"
    return BadInput(f"{path.name}:{found[1]}.txt: line {line}:{column} {reason}; nothing was imported.")
