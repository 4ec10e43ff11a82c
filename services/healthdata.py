"""Health records a patient uploads: an Apple Health export (export.zip / export.xml) or a CSV of labs and vitals.

Everything here is pure: bytes or a binary stream in, recognised observations (with the unit as written and the
value in a standard unit) out, or a HealthDataError whose message says what to do. The XML is read with expat in
chunks and never built into a tree, so memory stays flat for exports of hundreds of megabytes; entity declarations
are refused (no "billion laughs"), and the bytes read, the size of one tag, the nesting, the records kept and the
time spent are capped.
"""

from __future__ import annotations

import csv
import heapq
import io
import json
import math
import re
import statistics
import time
import zipfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path, PurePosixPath
from typing import IO, Any, Literal, get_args
from xml.parsers import expat

from services.errors import BadInput
from services.inert import one_line

Kind = Literal["lab", "vital", "steps"]
Source = Literal["apple-health", "csv"]

MAX_XML_BYTES = 250_000_000  # uncompressed export.xml read at most
MAX_CSV_BYTES = 2_000_000
MAX_CSV_ROWS = 5_000
MAX_OBSERVATIONS = 20_000  # kept per upload (the most recent ones)
MAX_PENDING = 200_000  # distinct (measure, day[, device]) groups while reading an export
MAX_ZIP_ENTRIES = 50_000
MAX_ZIP_RATIO = 250  # uncompressed / compressed size of one member
MAX_CLINICAL_FILES = 5_000
MAX_CLINICAL_BYTES = 1_000_000  # one FHIR resource file
MAX_SECONDS = 120.0
CHUNK = 1 << 20
SLICE = 1 << 14  # fed to expat at a time, so an unfinished token is checked every 16 KB
MAX_TOKEN_BYTES = 64_000  # one tag with its attributes, or one comment; Apple's are under 1 KB. A token over the
# cap is always refused; one under MAX_TOKEN_BYTES - SLICE never is (the check runs between slices).
MAX_DEPTH = 16  # nested elements; Apple's exports nest 4 deep (Correlation > Record > MetadataEntry)
SHOWN_PROBLEMS = 50


class HealthDataError(BadInput):
    """An upload that cannot be used; the message says why and what to upload instead."""


@dataclass(frozen=True)
class Measure:
    """A lab or vital this app recognises: names, standard unit, accepted units and a plausible range."""

    key: str
    name: str
    kind: Kind
    unit: str  # the standard unit, as shown
    units: Mapping[str, tuple[float, float]]  # normalised unit -> (factor, offset) to the standard unit
    low: float
    high: float
    names: tuple[str, ...] = ()
    loinc: tuple[str, ...] = ()
    apple: tuple[str, ...] = ()  # HKQuantityTypeIdentifier… suffixes

    def to_standard(self, value: float, unit: str) -> float | None:
        """The value in the standard unit, or None when the unit does not fit this measure."""
        rule = self.units.get(normalise_unit(unit))
        if rule is None:
            return None
        return value * rule[0] + rule[1]

    def unit_choices(self) -> str:
        """The units to write, for messages."""
        return ", ".join(dict.fromkeys(_UNIT_SHOWN.get(u, u) for u in self.units if u)) or "no unit"


HEALTH_DIR = Path(__file__).resolve().parents[1] / "data" / "health"


def unit_rules(cell: str, key: Callable[[str], str] = str) -> dict[str, tuple[float, float]]:
    """A units cell of a measures table ("mg/dl=1|umol/l=0.0113|degf=0.5556+-17.78") → unit (as `key` spells
    it) → (factor, offset) to the standard unit."""
    out: dict[str, tuple[float, float]] = {}
    for item in cell.split("|"):
        unit, _, rule = item.partition("=")
        factor, _, offset = rule.partition("+")
        out[key(unit)] = (float(factor), float(offset or 0))
    return out


def _read_units() -> dict[str, str]:
    """Normalised unit → as it is written for people (data/health/unit_names.csv)."""
    with open(HEALTH_DIR / "unit_names.csv", encoding="utf-8", newline="") as fh:
        return {r["unit"]: r["shown"] for r in csv.DictReader(fh)}


def _read_measures() -> tuple[Measure, ...]:
    """The labs and vitals an upload may hold (data/health/measures.csv: names, LOINC codes, Apple Health
    identifiers, units with their conversion to the standard unit, the plausible range, the source)."""
    with open(HEALTH_DIR / "measures.csv", encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))

    def cells(text: str) -> tuple[str, ...]:
        return tuple(c.strip() for c in text.split("|") if c.strip())

    kinds = {k: k for k in get_args(Kind)}
    bad = [r["key"] for r in rows if r["kind"] not in kinds]
    if bad:
        raise BadInput(f"data/health/measures.csv: measures {bad} have a kind other than {sorted(kinds)}")
    return tuple(
        Measure(
            r["key"], r["name"], kinds[r["kind"]], r["unit"],
            unit_rules(r["units"]),
            float(r["low"]), float(r["high"]), cells(r["names"]), cells(r["loinc"]), cells(r["apple"]),
        )
        for r in rows
    )


_UNIT_SHOWN = _read_units()
MEASURES: tuple[Measure, ...] = _read_measures()
BY_KEY = {m.key: m for m in MEASURES}
_BY_NAME = {n: m for m in MEASURES for n in m.names}
_BY_LOINC = {c: m for m in MEASURES for c in m.loinc}
_BY_APPLE = {f"HKQuantityTypeIdentifier{a}": m for m in MEASURES for a in m.apple}


@dataclass(frozen=True)
class Observation:
    """One recognised value: as written (name, value, unit) and in the measure's standard unit."""

    kind: Kind
    key: str
    name: str
    value: float
    unit: str
    std_value: float
    std_unit: str
    observed_on: date
    source: Source

    def as_row(self) -> dict[str, Any]:
        """The row stored in app.health_records (JSON-friendly)."""
        return {**asdict(self), "observed_on": self.observed_on.isoformat()}


@dataclass
class Parsed:
    """What one upload gave: the observations to store, rows not stored (with why), and notes about the reading."""

    source: Source
    observations: list[Observation]
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


# --- Names and units ------------------------------------------------------------------------------------------

def normalise_unit(unit: str) -> str:
    """A unit in one spelling: lower case, no spaces, µ/μ → u, ×10^9 → 109, Apple's mmol<180.15…>/L → mmol/l."""
    u = re.sub(r"<[^<>]*>", "", unit or "").strip().lower()
    u = u.replace("μ", "u").replace("µ", "u").replace("²", "2").replace("³", "3").replace("°", "deg")
    u = re.sub(r"\s+", "", u).replace("×", "x").replace("^", "").replace("*", "")
    u = re.sub(r"^x?10e?(\d)", r"10\1", u)
    return {"degreesc": "degc", "celsius": "degc", "degreesf": "degf", "fahrenheit": "degf", "beats/minute": "bpm",
            "cells/mcl": "cells/ul", "/mcl": "/ul", "mm[hg]": "mmhg",
            "ml/min/{1.73_m2}": "ml/min/1.73m2", "ml/min/1.73msq": "ml/min/1.73m2"}.get(u, u)


def shown_unit(unit: str) -> str:
    """A normalised unit as it is written for people ("umol/l" → "µmol/L")."""
    return _UNIT_SHOWN.get(unit, unit)


def measure_named(name: str) -> Measure | None:
    """The measure a written name means ("SGPT" → ALT), or None."""
    key = " ".join(re.sub(r"[-_,.()/:;]+", " ", (name or "").lower()).split())
    return _BY_NAME.get(key) or _BY_NAME.get(key.replace(" ", ""))


def _observation(measure: Measure, name: str, value: float, unit: str, day: date, source: Source) -> Observation | str:
    """An observation, or the sentence saying why the value cannot be used."""
    if not math.isfinite(value):
        return "the value is not a finite number"
    std = measure.to_standard(value, unit)
    if std is None:
        return (f"“{one_line(unit, 40) or '(no unit)'}” is not a unit for {measure.name}; write the value in "
                f"{measure.unit_choices()}")
    if not measure.low <= std <= measure.high:
        return (f"{measure.name} of {value:g} {one_line(unit, 40)} is outside the possible range "
                f"({measure.low:g}–{measure.high:g} {measure.unit}); check the value and its unit")
    return Observation(measure.kind, measure.key, one_line(name, 80), value, one_line(unit, 30), round(std, 6),
                       measure.unit, day, source)


def _day(text: str, today: date) -> date | None:
    m = re.match(r"\s*(\d{4})-(\d{2})-(\d{2})", text or "")
    if not m:
        return None
    try:
        day = date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        return None
    return day if date(1900, 1, 1) <= day <= today + timedelta(days=1) else None


def _dedupe(observations: Iterable[Observation], notes: list[str]) -> list[Observation]:
    unique = list({(o.kind, o.key, o.observed_on, o.std_value): o for o in observations}.values())
    unique.sort(key=lambda o: (o.observed_on, o.kind, o.key), reverse=True)
    if len(unique) > MAX_OBSERVATIONS:
        notes.append(f"Only the {MAX_OBSERVATIONS:,} most recent values were kept (of {len(unique):,}); values "
                     f"before {unique[MAX_OBSERVATIONS - 1].observed_on.isoformat()} were left out.")
        unique = unique[:MAX_OBSERVATIONS]
    return unique


# --- CSV ------------------------------------------------------------------------------------------------------

CSV_COLUMNS = ("date", "name", "value", "unit")


def csv_template() -> str:
    """The downloadable CSV template: the header and one blank row per recognised test with its usual unit."""
    rows = ["date,name,value,unit"]
    for m in MEASURES:
        unit = next((_UNIT_SHOWN.get(u, u) for u in m.units if u), "")
        label = {"anc": "ANC", "egfr": "eGFR", "hemoglobin": "Haemoglobin", "platelets": "Platelets", "creatinine": "Creatinine",
                 "bilirubin": "Total bilirubin", "ldl": "LDL", "steps": "Steps"}.get(m.key, m.name[:1].upper() + m.name[1:])
        rows.append(f",{label},,{unit}")
    return "\n".join(rows) + "\n"


def read_csv(data: bytes, *, today: date | None = None) -> Parsed:
    """Labs and vitals from a CSV with the columns date,name,value,unit; bad rows are listed, not stored."""
    today = today or date.today()
    if len(data) > MAX_CSV_BYTES:
        raise HealthDataError(f"The CSV file is {len(data) / 1e6:.1f} MB; the limit is {MAX_CSV_BYTES / 1e6:.0f} MB. "
                              "Split it into smaller files or keep only recent results.")
    if b"\x00" in data[:4096]:
        raise HealthDataError("This file is not a text CSV (it contains binary data). Save it from your spreadsheet "
                              "as “CSV UTF-8” with the columns date, name, value, unit.")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise HealthDataError(f"The CSV file is not UTF-8 text (byte {exc.start + 1}). Save it as “CSV UTF-8”.") from exc
    sample = text[:4096]
    delimiter = ";" if sample.count(";") > sample.count(",") else ","  # spreadsheets in decimal-comma locales
    reader = csv.reader(io.StringIO(text), delimiter=delimiter)
    try:
        header = next(reader)
    except (StopIteration, csv.Error) as exc:
        raise HealthDataError("The CSV file is empty. Use the template: columns date, name, value, unit.") from exc
    columns = [c.strip().lower() for c in header]
    missing = [c for c in CSV_COLUMNS if c not in columns]
    if missing:
        raise HealthDataError(f"The CSV file's first row must name the columns date, name, value, unit; "
                              f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} missing (first row: "
                              f"“{one_line(','.join(header), 80)}”). Download the template and copy your values into it.")
    at = {c: columns.index(c) for c in CSV_COLUMNS}
    parsed = Parsed("csv", [])
    kept: list[Observation] = []
    blank = 0
    try:
        for number, row in enumerate(reader, start=2):
            if number - 1 > MAX_CSV_ROWS:
                raise HealthDataError(f"The CSV file has more than {MAX_CSV_ROWS:,} rows; keep only the results you "
                                      "want checked (the latest of each test is what counts).")
            cells = {c: (row[i].strip() if i < len(row) else "") for c, i in at.items()}
            if not any(cells.values()) or not cells["value"]:
                blank += 1
                continue
            outcome = _csv_row(cells, today)
            if isinstance(outcome, str):
                parsed.problems.append(f"Row {number}: {outcome}.")
            else:
                kept.append(outcome)
    except csv.Error as exc:
        raise HealthDataError(f"The CSV file cannot be read ({exc}). Save it again as “CSV UTF-8”.") from exc
    parsed.observations = _dedupe(kept, parsed.notes)
    if blank:
        parsed.notes.append(f"{blank:,} row{'s' if blank != 1 else ''} without a value {'were' if blank != 1 else 'was'} "
                            "skipped.")
    return parsed


def _csv_row(cells: Mapping[str, str], today: date) -> Observation | str:
    measure = measure_named(cells["name"])
    if measure is None:
        examples = "Creatinine, eGFR, ALT, AST, Total bilirubin, Haemoglobin, ANC, Platelets, HbA1c, LDL, Weight, Steps"
        return f"“{one_line(cells['name'], 40)}” is not a test this app recognises; use a name from the template ({examples})"
    day = _day(cells["date"], today)
    if day is None or not re.fullmatch(r"\d{4}-\d{2}-\d{2}", cells["date"]):
        return f"the date “{one_line(cells['date'], 40)}” is not a real past date written as YYYY-MM-DD (e.g. 2026-10-02)"
    raw = cells["value"].replace("\u2009", "").replace(" ", "")
    if not re.fullmatch(r"\d+(?:\.\d+)?", raw):
        hint = " (use a point for decimals)" if re.fullmatch(r"\d+,\d+", raw) else ""
        return f"the value “{one_line(cells['value'], 40)}” is not a plain number{hint}; write only the number, e.g. 1.2"
    return _observation(measure, cells["name"], float(raw), cells["unit"], day, "csv")


# --- Apple Health export ----------------------------------------------------------------------------------------

@dataclass
class _ExportReader:
    """expat callbacks that keep per-day aggregates, never the elements themselves."""

    today: date
    deadline: float
    root_seen: bool = False
    records: int = 0
    steps: dict[tuple[date, str], float] = field(default_factory=dict)  # (day, device) -> steps
    latest: dict[tuple[str, date], tuple[str, str, float, str]] = field(default_factory=dict)  # last reading of a day
    # Lab records to read: a min-heap of (received, position, path) holding the newest MAX_CLINICAL_FILES.
    clinical: list[tuple[float, int, str]] = field(default_factory=list)
    clinical_total: int = 0
    labs_left_out: int = 0  # lab records past MAX_CLINICAL_FILES (the oldest by receivedDate)
    problems: dict[str, int] = field(default_factory=dict)
    opened: int = 0  # elements started, less those folded out of `closed`
    # expat appends each end tag's name here (list.append: no Python call per element, which cost 60% of the time)
    closed: list[str] = field(default_factory=list)

    def start(self, name: str, attrs: dict[str, str]) -> None:
        self.opened += 1
        if len(self.closed) > 4096:
            self.opened -= len(self.closed)
            self.closed.clear()
        if self.opened - len(self.closed) > MAX_DEPTH:
            raise HealthDataError(f"This XML file nests elements more than {MAX_DEPTH} deep (<{one_line(name, 40)}>), "
                                  "which no Apple Health export does; it was refused and nothing was stored. Upload "
                                  "export.zip as the Health app made it.")
        if not self.root_seen:
            self.root_seen = True
            if name != "HealthData":
                raise HealthDataError(f"This XML file is not an Apple Health export (it starts with <{one_line(name, 40)}>, "
                                      "not <HealthData>). Upload export.zip from the Health app's “Export All Health "
                                      "Data”.")
            return
        if name == "Record":
            self.records += 1
            if self.records % 20_000 == 0 and time.monotonic() > self.deadline:
                raise HealthDataError(f"Reading the export took longer than {MAX_SECONDS:.0f} seconds and was stopped; "
                                      "nothing was stored. Try again, or upload a CSV of the results you need.")
            measure = _BY_APPLE.get(attrs.get("type", ""))
            if measure is not None:
                self._record(measure, attrs)
        elif name == "ClinicalRecord":
            self.clinical_total += 1
            path = attrs.get("resourceFilePath", "")
            if "LabResult" in attrs.get("type", "") and path:
                try:  # e.g. "2026-10-03 09:00:00 +0100"; a record without a readable date counts as the oldest
                    received = datetime.strptime(attrs.get("receivedDate", ""), "%Y-%m-%d %H:%M:%S %z").timestamp()
                except ValueError:
                    received = -math.inf
                entry = (received, self.clinical_total, path)
                if len(self.clinical) < MAX_CLINICAL_FILES:
                    heapq.heappush(self.clinical, entry)
                else:
                    heapq.heappushpop(self.clinical, entry)
                    self.labs_left_out += 1

    def _record(self, measure: Measure, attrs: dict[str, str]) -> None:
        stamp = attrs.get("startDate", "")
        day = _day(stamp, self.today)
        try:
            value = float(attrs.get("value", ""))
        except ValueError:
            value = math.nan
        if day is None or not math.isfinite(value):
            self.problems[measure.name] = self.problems.get(measure.name, 0) + 1
            return
        unit = attrs.get("unit", "")
        if measure.key == "spo2" and value <= 1:
            value *= 100  # Apple stores saturation as a fraction with the unit "%"
        if len(self.steps) + len(self.latest) >= MAX_PENDING:
            raise HealthDataError(f"The export holds more than {MAX_PENDING:,} days of measurements; this app cannot "
                                  "keep them all. Upload a CSV of the results you need instead.")
        if measure.key == "steps":
            device = attrs.get("sourceName", "")[:100]
            self.steps[(day, device)] = self.steps.get((day, device), 0.0) + value
            return
        earlier = self.latest.get((measure.key, day))
        if earlier is None or stamp >= earlier[0]:
            self.latest[(measure.key, day)] = (stamp, attrs.get("type", "")[24:], value, unit)

    def observations(self, notes: list[str], problems: list[str]) -> list[Observation]:
        out: list[Observation] = []
        per_day: dict[date, float] = {}
        for (day, _device), total in self.steps.items():
            per_day[day] = max(per_day.get(day, 0.0), total)
        for day, total in per_day.items():
            made = _observation(BY_KEY["steps"], "Steps (day total)", round(total), "count", day, "apple-health")
            if isinstance(made, Observation):
                out.append(made)
        bad: dict[str, int] = dict(self.problems)
        for (key, day), (_stamp, type_name, value, unit) in self.latest.items():
            made = _observation(BY_KEY[key], type_name, value, unit, day, "apple-health")
            if isinstance(made, Observation):
                out.append(made)
            else:
                bad[BY_KEY[key].name] = bad.get(BY_KEY[key].name, 0) + 1
        if per_day:
            notes.append("Steps are each day's total from the device that counted the most (a phone and a watch "
                         "count the same steps).")
        if self.latest:
            notes.append("For heart rate, blood pressure, weight and other vitals the last reading of each day is kept.")
        problems += [f"{n:,} {name} reading{'s' if n != 1 else ''} had no usable date, value or unit and "
                     f"{'were' if n != 1 else 'was'} not stored." for name, n in sorted(bad.items())]
        return out


def _parse_export(read: Callable[[int], bytes], today: date, deadline: float) -> _ExportReader:
    """Stream export.xml through expat in small slices, refusing entity declarations, anything past the byte cap,
    and any token (a tag with its attributes, a comment) or nesting no device export has.

    expat 2.5 rescans an unfinished token from its start on every feed, so one 240 MB attribute fed in 1 MB chunks
    cost tens of seconds and its whole size in memory; checking how far the input runs past the last complete token
    after each slice keeps both bounded (defusedxml would only refuse the entities, which is done here already).
    """
    reader = _ExportReader(today, deadline)
    parser = expat.ParserCreate()
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)

    def no_entities(*_args: Any) -> None:
        raise HealthDataError("This XML file declares entities (<!ENTITY …>), which an Apple Health export never "
                              "does; it was refused and nothing was stored.")

    parser.EntityDeclHandler = no_entities
    parser.ExternalEntityRefHandler = lambda *_args: 0  # type: ignore[assignment]
    parser.StartElementHandler = reader.start
    parser.EndElementHandler = reader.closed.append
    total = 0
    try:
        while chunk := read(CHUNK):
            if total == 0 and not chunk.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"<"):
                raise HealthDataError("This file is not an Apple Health export: it is not XML. Upload export.zip (or "
                                      "the export.xml inside it) from the Health app's “Export All Health Data”, or a "
                                      "CSV of your results.")
            view = memoryview(chunk)
            for at in range(0, len(chunk), SLICE):
                piece = view[at:at + SLICE]
                total += len(piece)
                if total > MAX_XML_BYTES:
                    raise HealthDataError(f"The export is larger than {MAX_XML_BYTES / 1e6:.0f} MB of XML; nothing "
                                          "was stored. Upload a CSV of the results you need instead.")
                if time.monotonic() > deadline:
                    raise HealthDataError(f"Reading the export took longer than {MAX_SECONDS:.0f} seconds and was "
                                          "stopped; nothing was stored.")
                parser.Parse(piece, False)
                if total - parser.CurrentByteIndex > MAX_TOKEN_BYTES - SLICE:
                    raise HealthDataError(
                        f"This XML file has a single tag, attribute value or comment longer than "
                        f"{MAX_TOKEN_BYTES // 1000:,} KB (from byte {parser.CurrentByteIndex + 1:,}), which no "
                        "Apple Health export has (their longest are under 1 KB); it was refused and nothing was "
                        "stored. Upload export.zip as the Health app made it.")
        if total:  # an empty file is reported below, as having no root element
            parser.Parse(b"", True)
    except expat.ExpatError as exc:
        what = expat.ErrorString(exc.code) if exc.code else str(exc)
        raise HealthDataError(f"The export is not well-formed XML ({what} at line {exc.lineno}); nothing was stored. "
                              "Export it again from the Health app.") from exc
    if not reader.root_seen:
        raise HealthDataError("The file is empty. Upload export.zip from the Health app's “Export All Health Data”.")
    return reader


def read_export_xml(stream: IO[bytes], *, today: date | None = None) -> Parsed:
    """Steps and vitals from an Apple Health export.xml stream (labs need the zip's clinical records)."""
    reader = _parse_export(stream.read, today or date.today(), time.monotonic() + MAX_SECONDS)
    parsed = _finish(reader, [])
    if labs := len(reader.clinical) + reader.labs_left_out:
        parsed.notes.append(f"{labs:,} lab result{'s' if labs != 1 else ''} from your health records "
                            f"{'are' if labs != 1 else 'is'} kept in the export's clinical-records folder, which "
                            "export.xml alone does not hold; upload export.zip to include them.")
    return parsed


def _finish(reader: _ExportReader, labs: list[Observation]) -> Parsed:
    parsed = Parsed("apple-health", [])
    observations = reader.observations(parsed.notes, parsed.problems) + labs
    parsed.observations = _dedupe(observations, parsed.notes)
    return parsed


def _unsafe_name(name: str) -> bool:
    parts = name.replace("\\", "/").split("/")
    return (name.startswith(("/", "\\")) or bool(re.match(r"^[A-Za-z]:", name)) or ".." in parts
            or "\x00" in name)


def read_export_zip(stream: IO[bytes], *, today: date | None = None) -> Parsed:
    """Steps, vitals and FHIR lab results from an Apple Health export.zip, read member by member, never extracted."""
    today = today or date.today()
    deadline = time.monotonic() + MAX_SECONDS
    try:
        archive = zipfile.ZipFile(stream)
    except (zipfile.BadZipFile, OSError) as exc:
        raise HealthDataError("This file is not a readable zip archive. Upload export.zip as the Health app made it, "
                              "or the export.xml inside it.") from exc
    with archive:
        infos = archive.infolist()
        if len(infos) > MAX_ZIP_ENTRIES:
            raise HealthDataError(f"The zip holds {len(infos):,} files, more than an export ever has "
                                  f"({MAX_ZIP_ENTRIES:,}); it was refused.")
        unsafe = [i.filename for i in infos if _unsafe_name(i.filename)]
        if unsafe:
            raise HealthDataError(f"The zip contains a file name that points outside the archive (“{one_line(unsafe[0], 40)}”); "
                                  "it was refused and nothing was stored. Upload the export.zip the Health app made.")
        exports = [i for i in infos if PurePosixPath(i.filename.replace("\\", "/")).name == "export.xml"]
        main = [i for i in exports if i.filename.replace("\\", "/") == "apple_health_export/export.xml"] or exports
        if len(main) != 1:
            several = " (or more than one)" if main else ""
            raise HealthDataError(f"The zip has no export.xml{several}. Upload the export.zip from the "
                                  "Health app's “Export All Health Data” unchanged.")
        info = main[0]
        _check_member(info, MAX_XML_BYTES)
        try:
            with archive.open(info) as member:
                reader = _parse_export(member.read, today, deadline)
        except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError) as exc:
            raise HealthDataError(f"export.xml in the zip cannot be read ({one_line(str(exc), 80)}); nothing was stored.") from exc
        base = PurePosixPath(info.filename.replace("\\", "/")).parent
        labs, unread = _clinical_labs(archive, base, [path for *_, path in sorted(reader.clinical, key=lambda e: e[1])],
                                      today, deadline)
    parsed = _finish(reader, labs)
    if reader.clinical_total and unread:
        parsed.notes.append(f"{unread:,} lab result{'s' if unread != 1 else ''} from your health records "
                            f"{'are' if unread != 1 else 'is'} not among the tests this app reads and "
                            f"{'were' if unread != 1 else 'was'} left out.")
    if n := reader.labs_left_out:
        parsed.notes.append(f"{n:,} more lab result{'s' if n != 1 else ''} from your health records "
                            f"{'were' if n != 1 else 'was'} not read (this app reads at most {MAX_CLINICAL_FILES:,} "
                            "per export), so the lab values shown may not be your latest.")
    return parsed


def _check_member(info: zipfile.ZipInfo, limit: int) -> None:
    if info.file_size > limit:
        raise HealthDataError(f"{one_line(info.filename, 40)} is {info.file_size / 1e6:.0f} MB uncompressed, over the "
                              f"{limit / 1e6:.0f} MB this app reads; nothing was stored.")
    if info.file_size > 1_000_000 and info.file_size > MAX_ZIP_RATIO * max(info.compress_size, 1):
        raise HealthDataError(f"{one_line(info.filename, 40)} is compressed more than {MAX_ZIP_RATIO} to 1, which a real "
                              "export never is (a “zip bomb”); it was refused and nothing was stored.")


def _clinical_labs(archive: zipfile.ZipFile, base: PurePosixPath, paths: Sequence[str], today: date,
                   deadline: float) -> tuple[list[Observation], int]:
    """Lab results from the FHIR Observation files that ClinicalRecord elements point to."""
    labs: list[Observation] = []
    unread = 0
    names = set(archive.namelist())
    for path in paths:
        if time.monotonic() > deadline:
            raise HealthDataError(f"Reading the export took longer than {MAX_SECONDS:.0f} seconds; nothing was stored.")
        relative = path.lstrip("/")  # Apple writes "/clinical-records/…", relative to the export's folder
        inner = str(base / relative)
        if _unsafe_name(relative) or inner not in names:
            unread += 1
            continue
        info = archive.getinfo(inner)
        _check_member(info, MAX_CLINICAL_BYTES)
        try:
            with archive.open(info) as member:
                resource = json.loads(member.read(MAX_CLINICAL_BYTES + 1))
        except (ValueError, RecursionError, zipfile.BadZipFile, OSError):  # RecursionError: nested too deeply
            unread += 1
            continue
        made = fhir_observation(resource, today)
        if made is None:
            unread += 1
        else:
            labs.append(made)
    return labs, unread


def fhir_observation(resource: Any, today: date) -> Observation | None:
    """A recognised lab value from one FHIR Observation resource (LOINC code or name), else None."""
    if not isinstance(resource, dict) or resource.get("resourceType") != "Observation":
        return None
    code: dict[str, Any] = resource["code"] if isinstance(resource.get("code"), dict) else {}
    codings = [c for c in code.get("coding") or [] if isinstance(c, dict)]
    measure = next((_BY_LOINC[str(c.get("code"))] for c in codings if str(c.get("code")) in _BY_LOINC), None)
    name = str(code.get("text") or next((c.get("display") for c in codings if c.get("display")), "") or "")
    measure = measure or measure_named(name)
    quantity = resource.get("valueQuantity")
    if measure is None or measure.kind != "lab" or not isinstance(quantity, dict):
        return None
    day = _day(str(resource.get("effectiveDateTime") or resource.get("issued") or ""), today)
    value = quantity.get("value")
    if day is None or not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    made = _observation(measure, name or measure.name, float(value), str(quantity.get("unit") or quantity.get("code") or ""),
                        day, "apple-health")
    return made if isinstance(made, Observation) else None


def read_upload(filename: str, stream: IO[bytes], *, today: date | None = None) -> Parsed:
    """Read one uploaded file by its kind (.zip, .xml or .csv); refuse anything else."""
    suffix = PurePosixPath(filename.lower()).suffix
    if suffix == ".zip":
        return read_export_zip(stream, today=today)
    if suffix == ".xml":
        return read_export_xml(stream, today=today)
    if suffix == ".csv":
        return read_csv(stream.read(MAX_CSV_BYTES + 1), today=today)
    raise HealthDataError("Upload export.zip or export.xml from Apple Health, or a CSV made from the template.")


# --- Reading them back ------------------------------------------------------------------------------------------

def latest_labs(observations: Iterable[Observation]) -> dict[str, Observation]:
    """The most recent value of each lab (ties: the first given)."""
    latest: dict[str, Observation] = {}
    for o in observations:
        if o.kind == "lab" and (o.key not in latest or o.observed_on > latest[o.key].observed_on):
            latest[o.key] = o
    return latest


def activity_estimate(observations: Iterable[Observation]) -> str | None:
    """A sentence estimating activity from the median daily steps of the last 30 days with data; never an ECOG."""
    days = {o.observed_on: o.std_value for o in observations if o.kind == "steps"}
    if not days:
        return None
    last = max(days)
    recent = sorted(v for d, v in days.items() if d > last - timedelta(days=30))
    span = f"{min(d for d in days if d > last - timedelta(days=30)).isoformat()} to {last.isoformat()}"
    if len(recent) < 7:
        return (f"Only {len(recent)} day{'s' if len(recent) != 1 else ''} of step counts in the 30 days to "
                f"{last.isoformat()}: too few to estimate how active you are.")
    median = statistics.median(recent)
    band = ("mostly sitting (under 5,000)" if median < 5000 else "low activity (5,000–7,499)" if median < 7500
            else "somewhat active (7,500–9,999)" if median < 10000 else "active (10,000 or more)")
    return (f"About {round(median, -2):,.0f} steps a day (median of {len(recent)} days with step counts, {span}): "
            f"{band} by a common step-count scale. This is an estimate of activity from your phone or watch, not an "
            "ECOG performance status score; your doctor assesses that.")
