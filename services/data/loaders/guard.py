"""The importers' one door to files: regular files only (no folders given as files, no symbolic links), and
decompressed bytes read through a guard that stops at a total-size and a line-length limit.

Limits (bytes, environment, stated in the README):
  TRIAL_LANDSCAPE_IMPORT_MAX_BYTES       decompressed bytes one import may read in all (default 16 GiB: a full
                                         AACT export is about 10 GB unpacked)
  TRIAL_LANDSCAPE_IMPORT_MAX_LINE_BYTES  longest line, or longest JSON file inside a zip (default 32 MiB; one
                                         API v2 study with results is at most a few MB)
Every refusal names the file and the limit and never quotes what the file holds.
"""

from __future__ import annotations

import gzip
import io
import stat
import zipfile
from pathlib import Path
from typing import IO, cast

from services import settings
from services.errors import BadInput

MAX_BYTES_ENV = "TRIAL_LANDSCAPE_IMPORT_MAX_BYTES"
MAX_LINE_ENV = "TRIAL_LANDSCAPE_IMPORT_MAX_LINE_BYTES"
# A zip member that claims to expand more than this many times over is refused before reading (text compresses
# 5–20 times; zip bombs a thousand times and more).
MAX_ZIP_RATIO = 200
_RATIO_FLOOR = 8 * 1024**2  # small members may compress extremely well (a column of "f"): never refused by ratio


def max_bytes() -> int:
    """Decompressed bytes one import may read in all (TRIAL_LANDSCAPE_IMPORT_MAX_BYTES)."""
    return settings.current().import_max_bytes


def max_line_bytes() -> int:
    """Longest line (and longest JSON member of a zip) an import accepts (..._IMPORT_MAX_LINE_BYTES)."""
    return settings.current().import_max_line_bytes


def _size(n: int) -> str:
    return f"{n / 1024**3:.1f} GiB" if n >= 1024**3 else f"{n / 1024**2:.0f} MiB" if n >= 1024**2 else f"{n:,} bytes"


def check_path(path: Path, *, folder_ok: bool = False) -> None:
    """Refuse a missing path, a symbolic link, a folder where a file is expected, or anything not a regular file."""
    if path.is_symlink():
        raise BadInput(f"{path}: is a symbolic link; importers read only regular files (copy the file itself here).")
    try:
        mode = path.stat().st_mode
    except FileNotFoundError as err:
        raise BadInput(f"{path}: no such file{' or folder' if folder_ok else ''}.") from err
    except OSError as err:
        raise BadInput(f"{path}: cannot be read ({err.strerror or 'access refused'}).") from err
    if stat.S_ISDIR(mode):
        if folder_ok:
            return
        raise BadInput(f"{path}: is a folder, not a file; give the path of the file to import.")
    if not stat.S_ISREG(mode):
        raise BadInput(f"{path}: is not a regular file (a device, pipe or socket); importers read only regular files.")


class Budget:
    """Decompressed bytes left for one import (shared by the members of an export)."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = max_bytes() if limit is None else limit
        self.used = 0

    def spend(self, n: int, where: str) -> None:
        self.used += n
        if self.used > self.limit:
            raise BadInput(f"{where}: expands to more than {_size(self.limit)} of data, the import limit "
                           f"({MAX_BYTES_ENV}); nothing was imported. Raise the limit if the file is genuine.")


class GuardedReader(io.RawIOBase):
    """A read-only stream that counts bytes against a Budget and refuses lines longer than a limit."""

    def __init__(self, raw: IO[bytes], where: str, budget: Budget, max_line: int) -> None:
        self._raw = raw
        self._where = where
        self._budget = budget
        self._max_line = max_line
        self._line = 0  # bytes of the current line so far
        self._line_no = 1

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        # Chunks never exceed the line limit, so only a line crossing chunk boundaries can be too long.
        chunk = self._raw.read(min(len(buffer), self._max_line, 1 << 20))
        n = len(chunk)
        if not n:
            return 0
        self._budget.spend(n, self._where)
        first = chunk.find(b"\n")
        if self._line + (n if first < 0 else first) > self._max_line:
            raise BadInput(f"{self._where}: line {self._line_no} is longer than {_size(self._max_line)}, the "
                           f"line limit ({MAX_LINE_ENV}); nothing was imported.")
        if first < 0:
            self._line += n
        else:
            self._line_no += chunk.count(b"\n")
            self._line = n - chunk.rfind(b"\n") - 1
        buffer[:n] = chunk
        return n

    def close(self) -> None:
        try:
            self._raw.close()
        finally:
            super().close()


def guarded(raw: IO[bytes], where: str, budget: Budget | None = None) -> io.BufferedReader:
    """Wrap a decompressed byte stream in the size and line guard."""
    return io.BufferedReader(GuardedReader(raw, where, budget or Budget(), max_line_bytes()), buffer_size=1 << 18)


def open_file(path: Path, budget: Budget | None = None, *, where: str | None = None) -> io.BufferedReader:
    """Open a regular file (plain or gzip) for guarded reading of its decompressed bytes."""
    check_path(path)
    raw = path.open("rb")
    head = raw.read(2)
    raw.seek(0)
    stream = cast(IO[bytes], gzip.GzipFile(fileobj=raw) if head == b"\x1f\x8b" else raw)
    return guarded(stream, where or str(path), budget)


def open_zip(path: Path) -> zipfile.ZipFile:
    """Open a zip archive that is a regular file; BadInput when it is not a readable zip."""
    check_path(path)
    try:
        return zipfile.ZipFile(path)
    except zipfile.BadZipFile as err:
        raise BadInput(f"{path}: not a readable zip file ({err}); download it again.") from err


def _check_member(zf: zipfile.ZipFile, name: str, where: str) -> zipfile.ZipInfo:
    info = zf.getinfo(name)
    if stat.S_ISLNK(info.external_attr >> 16):
        raise BadInput(f"{where}: is a symbolic link inside the zip; importers read only regular files.")
    if info.is_dir():
        raise BadInput(f"{where}: is a folder inside the zip, not a file.")
    if info.file_size > _RATIO_FLOOR and info.file_size > MAX_ZIP_RATIO * max(1, info.compress_size):
        raise BadInput(f"{where}: would expand from {_size(info.compress_size)} to {_size(info.file_size)} (over "
                       f"{MAX_ZIP_RATIO} times); refusing what looks like a zip bomb. Nothing was imported.")
    return info


def precheck(path: Path) -> None:
    """Refuse what needs no reading of the data (a missing file, a link, a zip member that would expand
    like a bomb) before the import opens the database and loads what an import needs."""
    check_path(path, folder_ok=True)
    if path.is_dir() or not zipfile.is_zipfile(path):
        return
    with open_zip(path) as zf:
        for info in zf.infolist():
            if not info.is_dir():  # folders inside an archive are fine; the importers skip them
                _check_member(zf, info.filename, f"{path}:{info.filename}")


def open_member(zf: zipfile.ZipFile, name: str, where: str, budget: Budget) -> io.BufferedReader:
    """Open one member of a zip for guarded reading."""
    _check_member(zf, name, where)
    return guarded(zf.open(name), where, budget)


def read_member(zf: zipfile.ZipFile, name: str, where: str, budget: Budget) -> bytes:
    """One whole (JSON) member of a zip, at most the line limit in size."""
    info = _check_member(zf, name, where)
    limit = max_line_bytes()
    if info.file_size > limit:
        raise BadInput(f"{where}: is {_size(info.file_size)}, more than one file inside a zip may be "
                       f"({_size(limit)}, {MAX_LINE_ENV}); nothing was imported.")
    with zf.open(name) as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise BadInput(f"{where}: is more than {_size(limit)} unpacked ({MAX_LINE_ENV}); nothing was imported.")
    budget.spend(len(data), where)
    return data
