"""In-process columnar facet engine: a filter's dashboard and map computed from numpy arrays held in memory.

The arrays are loaded once per process and database (COPY of app.study_facets, the condition,
intervention and sponsor rows, and every site) and reloaded when app.meta 'facets_refreshed_at'
changes. Strings become integer codes into dictionaries sorted in byte ("C") order, with NULL as the
last code, so ordering by code is ordering as PostgreSQL's `ORDER BY … COLLATE "C"` (NULLS LAST).
Filters become boolean masks over the studies; facets are bincounts over codes. Every frame has the
shape the SQL of stats/sitemap produces, so the same shaping code labels and orders both; the
condition and intervention searches still run in the database (word-boundary regular expressions)
and come back as study rows.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import gc
import hashlib
import io
import json
import logging
import math
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pa_csv

from services import settings
from services.dashboard import facetcopy
from services.dashboard.filters import FILTER_DEFS, FUNNEL_FIELDS, FUNNEL_STAGES, Filters
from services.data import geo, startup
from services.data.db import Database, load_sql
from services.data.normalize import CLOSED_OUTCOMES
from services.errors import TrialLandscapeError
from services.vocab import areas as area_vocab

_log = logging.getLogger(__name__)

LOAD_TIMEOUT_MS = 900_000
LOOKUP_TIMEOUT_MS = 60_000
REFRESH_CHECK_S = 5.0  # how often a store asks the database whether the derived tables were rebuilt
RADIANS_PER_DEGREE = 0.0174532925199432957692  # PostgreSQL's constant for radians()
ENROLL_EDGES = np.array([50, 100, 250, 500, 1000, 5000], dtype=np.float64)
SITE_EDGES = np.array([0, 1, 5, 20, 100], dtype=np.int64)
COLLAB_EDGES = np.array([0, 1, 3], dtype=np.int64)
AGE_GROUPS = ("CHILD", "ADULT", "OLDER_ADULT")
LOC_CELL_CACHE_MAX = 1_000_000  # positions up to which grid cells are kept per step (4 MB a step)
# The map's grid cell sizes (degrees), tried in order; cells_0 … cells_6 of map_summary.sql count each.
# The coarsest has at most 18 × 36 = 648 cells, so some step always fits a point limit of 648 or more. Each
# position's cell at each step is computed once per load and kept in the start cache (FacetStore.loc_grid).
GRID_STEPS: tuple[float, ...] = (0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0)
WORLD_MAPS_KEPT = 8  # maps of every trial and of the default filters kept per store (per limits asked for)
CELL_SAMPLE_SIZE = 50_000  # positions a map's grid step is first tried on (a lower bound of its cells)
DENSE_COUNTS_MAX = 4_000_000  # (group, label) pairs up to which a mode is counted in a table (32 MB)
SITE_SLICE_ROWS = 400_000  # sites read per COPY while loading (bounds the text held at once)
SITE_TEXT = ("country", "state", "city", "shown_status")
# The export table's columns (facetstore_export.sql) and types; an export adds nearest_miles after countries.
EXPORT_TYPES: dict[str, pa.DataType] = {
    "nct_id": pa.string(), "title": pa.string(), "phase": pa.string(), "status": pa.string(),
    "conditions": pa.string(), "lead_sponsor": pa.string(), "funder_class": pa.string(),
    "enrollment": pa.int64(), "enrollment_type": pa.string(), "start_date": pa.date32(),
    "primary_completion_date": pa.date32(),
    "sites": pa.int64(), "countries": pa.string(), "study_type": pa.string(), "has_results": pa.bool_()}
# Trials table sorts by text → the rank column of facetstore_studies.sql (ranked in the database's collation).
SORT_RANKS = {"title": "title_rank", "phase": "phase_rank", "status": "status_rank", "lead_sponsor": "sponsor_rank"}


# ---- dictionary encoding ---------------------------------------------------------------------------
@dataclass
class Coded:
    """Integer codes into `labels` (sorted in byte order, None last for NULL)."""

    codes: np.ndarray
    labels: np.ndarray

    @property
    def size(self) -> int:
        return len(self.labels)

    @property
    def null(self) -> int:
        return len(self.labels) - 1

    def lut(self, wanted: Callable[[Any], bool]) -> np.ndarray:
        """Boolean lookup table over the codes: which labels satisfy `wanted` (NULL never does)."""
        return np.array([bool(wanted(value)) for value in self.labels[:-1]] + [False], dtype=bool)

    def among(self, values: Iterable[str]) -> np.ndarray:
        """One flag per code in `codes`: whether its label is one of the values (NULL never is)."""
        wanted = set(values)
        return self.lut(lambda v: v in wanted)[self.codes]

    def code_of(self, value: str) -> int:
        """The code of a label, or -1 when it does not occur."""
        i = int(np.searchsorted(self.labels[:-1].astype(str), value)) if self.size > 1 else 0
        return i if i < self.size - 1 and self.labels[i] == value else -1


class _Dictionary:
    """Strings → codes, grown one chunk of rows at a time; `finish` recodes them into byte order, NULL last."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}

    def codes(self, col: pd.Series) -> np.ndarray:
        """Provisional codes of a chunk's column (-1 for NULL)."""
        cat = col if isinstance(col.dtype, pd.CategoricalDtype) else col.astype("category")
        lut = np.empty(len(cat.cat.categories) + 1, dtype=np.int32)
        for j, value in enumerate(cat.cat.categories):
            lut[j] = self.index.setdefault(str(value), len(self.index))
        lut[-1] = -1  # pandas codes NULL as -1, which indexes this last slot
        return lut[cat.cat.codes.to_numpy()]

    def finish(self, codes: np.ndarray) -> Coded:
        """Final codes: labels sorted in byte ("C") order, NULL as the last code."""
        labels = list(self.index)
        order = sorted(range(len(labels)), key=lambda i: labels[i].encode("utf-8"))
        remap = np.empty(len(labels) + 1, dtype=np.int32)
        remap[np.asarray(order, dtype=np.int64)] = np.arange(len(labels), dtype=np.int32)
        remap[-1] = len(labels)  # provisional -1 (NULL) → last
        out = np.empty(len(labels) + 1, dtype=object)
        out[: len(labels)] = [labels[i] for i in order]
        out[-1] = None
        return Coded(remap[codes], out)


def _coded(col: pd.Series) -> Coded:
    """A categorical (or object) column → codes with byte-ordered labels and NULL last."""
    words = _Dictionary()
    return words.finish(words.codes(col))


def _read(buffer: io.BufferedReader, text_cols: list[str], dtypes: dict[str, Any]) -> pd.DataFrame:
    """CSV from COPY (NULL as \\N) → DataFrame: text as categories, numbers with explicit dtypes."""
    dtype = {**dict.fromkeys(text_cols, "category"), **dtypes}
    return pd.read_csv(buffer, dtype=dtype, na_values=["\\N"], keep_default_na=False)


def _flag(col: pd.Series) -> np.ndarray:
    """A boolean column (t/f/NULL as categories) → int8 1/0/-1."""
    values = col.astype(object).to_numpy()
    out = np.full(len(values), -1, dtype=np.int8)
    out[values == "t"] = 1
    out[values == "f"] = 0
    return out


@dataclass
class Labeled:
    """Child rows with a grouping value and a display label per row (conditions, interventions)."""

    rows: np.ndarray  # study row of each child row
    value: Coded
    first: np.ndarray  # first child row of its (study, value): counts distinct studies
    pair: np.ndarray  # code of (value, label) per child row
    pair_value: np.ndarray  # value code of each pair (pairs sorted by value, then label)
    pair_label: np.ndarray
    labels: Coded

    @classmethod
    def build(cls, df: pd.DataFrame) -> Labeled:
        rows = df["i"].to_numpy(np.int32)
        value = _coded(df["value"])
        label = _coded(df["label"])
        first = np.zeros(len(rows), dtype=bool)
        _, idx = np.unique(rows.astype(np.int64) * value.size + value.codes, return_index=True)
        first[idx] = True
        return cls(rows, value, first, *_pair_codes(value, label), label)

    def top(self, mask: np.ndarray, k: int) -> pd.DataFrame:
        """value, label (most common spelling, ties to the first in byte order), n distinct studies; top k."""
        sel = mask[self.rows]
        n = np.bincount(self.value.codes[sel & self.first], minlength=self.value.size)
        codes = _top_codes(n, k, keep_null=True)
        pair_n = np.bincount(self.pair[sel], minlength=len(self.pair_value))
        labels = []
        for v in codes:
            lo, hi = np.searchsorted(self.pair_value, [v, v + 1])
            cand_n = pair_n[lo:hi].copy()
            cand_n[self.pair_label[lo:hi] == self.labels.null] = 0  # mode() ignores NULL
            labels.append(self.labels.labels[self.pair_label[lo + int(np.argmax(cand_n))]]
                          if cand_n.size and cand_n.max() > 0 else None)
        return pd.DataFrame({"value": list(self.value.labels[codes]), "label": labels,
                             "n": [int(x) for x in n[codes]]})


def _pair_codes(a: Coded, b: Coded) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The code of each row's (a, b) pair among the distinct pairs (sorted by a, then b), and each pair's a and b."""
    pairs, pair = np.unique(a.codes.astype(np.int64) * b.size + b.codes, return_inverse=True)
    return pair.astype(np.int32), (pairs // b.size).astype(np.int32), (pairs % b.size).astype(np.int32)


def _top_codes(counts: np.ndarray, k: int, *, keep_null: bool) -> np.ndarray:
    """Codes with a count, by count descending then code (byte order, NULL last); the first k."""
    nz = np.flatnonzero(counts)
    if not keep_null:
        nz = nz[nz != len(counts) - 1]
    order = np.lexsort((nz, -counts[nz]))
    return nz[order][:k]


def _top(labels: np.ndarray, counts: np.ndarray, k: int) -> pd.DataFrame:
    """value/n rows of the k codes with the most counts (NULL left out): a top-k GROUP BY over the column."""
    top = _top_codes(counts, k, keep_null=False)
    return pd.DataFrame({"value": list(labels[top]), "n": [int(x) for x in counts[top]]})


def _groups(coded: Coded, counts: np.ndarray, *, keep_null: bool = True) -> pd.DataFrame:
    """value/n rows for every code with a count (a GROUP BY over the column)."""
    nz = np.flatnonzero(counts)
    if not keep_null:
        nz = nz[nz != coded.null]
    return pd.DataFrame({"value": list(coded.labels[nz]), "n": [int(x) for x in counts[nz]]})


def _int_groups(values: np.ndarray, **extra: np.ndarray) -> pd.DataFrame:
    """GROUP BY over small integers: value, n (and sums of extra 0/1 arrays)."""
    if values.size == 0:
        return pd.DataFrame({"value": [], "n": [], **{k: [] for k in extra}})
    lo = int(values.min())
    n = np.bincount(values - lo)
    nz = np.flatnonzero(n)
    out: dict[str, list[int]] = {"value": [int(v + lo) for v in nz], "n": [int(x) for x in n[nz]]}
    for name, weights in extra.items():
        out[name] = [int(x) for x in np.bincount(values - lo, weights=weights, minlength=len(n))[nz]]
    return pd.DataFrame(out)


def _haversine_miles(lat: np.ndarray, lon: np.ndarray, near_lat: float, near_lon: float) -> np.ndarray:
    """filters.distance_sql in float64, step for step (asin from the C library, as PostgreSQL's)."""
    a = np.sin(((lat - near_lat) / 2) * RADIANS_PER_DEGREE) ** 2
    b = np.cos(near_lat * RADIANS_PER_DEGREE) * np.cos(lat * RADIANS_PER_DEGREE)
    c = np.sin(((lon - near_lon) / 2) * RADIANS_PER_DEGREE) ** 2
    inner = np.minimum(1.0, np.sqrt(a + b * c))
    asin = np.fromiter(map(math.asin, inner.tolist()), dtype=np.float64, count=inner.size)
    return 2 * geo.EARTH_RADIUS_MILES * asin


def _micro_degrees(degrees: np.ndarray, offset: int) -> np.ndarray:
    """round(degrees × 10⁶) + offset as int64, with as few temporary arrays as possible."""
    scaled = degrees * 1e6
    np.rint(scaled, out=scaled)
    out = scaled.astype(np.int64)
    del scaled
    out += offset
    return out


def _locations(lat: np.ndarray, lon: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sites → distinct positions: (position code per site, latitude and longitude per position).

    Sites cluster in cities (AACT's coordinates are city-level geocodes), so there are usually far fewer
    positions than sites; distances and grid cells are computed per position. Sites without both coordinates
    get the last code, whose coordinates are NaN. AACT stores coordinates as numeric(10,6), so positions are
    grouped by whole micro-degrees (one int64 key, a fast sort); any other precision falls back to exact pairs.
    """
    ok = ~np.isnan(lat) & ~np.isnan(lon)
    everywhere = bool(ok.all())
    located = slice(None) if everywhere else np.flatnonzero(ok)
    la, lo = (lat, lon) if everywhere else (lat[located], lon[located])
    del ok
    key = _micro_degrees(la, 90_000_000)
    key *= 360_000_001
    key += _micro_degrees(lo, 180_000_000)
    keys = _distinct_sorted(key)
    inverse = np.searchsorted(keys, key).astype(np.int32)
    del key
    # A micro-degree integer divided by 1e6 is the double nearest the decimal, as numeric → float8 gives it.
    loc_lat = (keys // 360_000_001 - 90_000_000) / 1e6
    loc_lon = (keys % 360_000_001 - 180_000_000) / 1e6
    del keys
    if not (np.array_equal(loc_lat[inverse], la) and np.array_equal(loc_lon[inverse], lo)):
        uniq, exact = np.unique(la + 1j * lo, return_inverse=True)  # finer than micro-degrees: exact pairs
        loc_lat, loc_lon, inverse = uniq.real, uniq.imag, exact.astype(np.int32)
    site_loc = np.full(lat.size, loc_lat.size, dtype=np.int32)
    site_loc[located] = inverse
    return site_loc, np.append(loc_lat, np.nan), np.append(loc_lon, np.nan)


@functools.cache
def _libc() -> ctypes.CDLL:
    """The C library, for glibc's allocator controls and prctl (OSError where there is none)."""
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")


@functools.cache
def _tune_allocator() -> None:
    """Serve large arrays (≥ 8 MB) from their own memory maps, returned to the system as soon as they are freed.

    glibc otherwise raises that threshold after the first large free, so the map's tens-of-MB temporaries land
    in the heap, where ~300 MB stayed resident between page views. Once per process; no-op off glibc.
    """
    with contextlib.suppress(OSError, AttributeError):
        _libc().mallopt(-3, 8 << 20)  # M_MMAP_THRESHOLD


def _release_memory() -> None:
    """Free what only reference cycles still hold (pandas frames keep some), then give freed heap pages back to
    the operating system (glibc keeps them otherwise; no-op elsewhere)."""
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        _libc().malloc_trim(0)


# ---- the store -------------------------------------------------------------------------------------
class FacetStore:
    """Every study's facet inputs and every site, as arrays, for one database."""

    def __init__(self, db: Database, refreshed_at: str) -> None:
        self.refreshed_at = refreshed_at
        self.from_cache = False  # True when mapped from the start cache (read_cache) instead of loaded by COPY
        _tune_allocator()
        started = time.perf_counter()
        loaders = {"facetstore_studies": self._load_studies, "facetstore_dates": self._load_dates,
                   "facetstore_lists": self._load_lists, "facetstore_conditions": self._load_conditions,
                   "facetstore_interventions": self._load_interventions,
                   "facetstore_collaboration": self._load_collaboration, "facetstore_mesh": self._load_areas}

        # One table at a time (the sites, the largest, in slices), handing freed memory back after each: the
        # load's peak stays near the size of the arrays plus one table's text, not every table's text at once.
        for name, load in loaders.items():
            load(db.copy_csv(load_sql(name), timeout_ms=LOAD_TIMEOUT_MS))
            _release_memory()
        self._load_sites(db)  # needs the studies' NCT ids
        _release_memory()
        self.export = self._load_export(db)
        _release_memory()
        self.load_seconds = time.perf_counter() - started
        _log.info("facet store loaded %d studies and %d sites in %.1f s", self.n, len(self.site_row),
                  self.load_seconds)

    # ---- loading --------------------------------------------------------------------------------
    def _load_studies(self, buffer: io.BufferedReader) -> None:
        coded = ("status", "phases", "phase_raw", "study_type", "funder_class", "lead_sponsor", "lead_lower",
                 "enrollment_type", "gender", "gender_upper", "why_stopped")
        flags = ("g_child", "g_adult", "g_older", "healthy", "has_results")  # t/f/NULL
        floats = {c: np.float64 for c in ("enrollment", "start_year", "start_day", "age_lo", "age_hi", "finish_year",
                                          *SORT_RANKS.values())}
        df = _read(buffer, [*coded, *flags], {"nct_id": "S16", "duration_bucket": np.int8,
                                              "n_sites": np.int64, "n_collaborators": np.int64, **floats})
        self.nct = df["nct_id"].to_numpy().astype("S16")
        self.n = len(df)
        (self.status, self.phases, self.phase_raw, self.study_type, self.funder_class, self.lead_sponsor,
         self.lead_lower, self.enrollment_type, self.gender, self.gender_upper, self.why_stopped) = (
            _coded(df[c]) for c in coded)
        self.enrollment = df["enrollment"].to_numpy(np.float64)
        self.enroll_bucket = (np.searchsorted(ENROLL_EDGES, self.enrollment, side="right") + 1).astype(np.int8)
        self.enroll_bucket[np.isnan(self.enrollment)] = 0
        self.start_year = df["start_year"].to_numpy(np.float64)
        self.start_day = df["start_day"].to_numpy(np.float64)
        self.sort_ranks = {key: df[col].to_numpy(np.float32) for key, col in SORT_RANKS.items()}  # exact below 2**24
        self.finish_year = df["finish_year"].to_numpy(np.float64)
        self.duration = df["duration_bucket"].to_numpy(np.int8)
        self.age_lo = df["age_lo"].to_numpy(np.float64)
        self.age_hi = df["age_hi"].to_numpy(np.float64)
        self.age_groups = np.stack([_flag(df[c]) == 1 for c in ("g_child", "g_adult", "g_older")])
        self.healthy = _flag(df["healthy"])
        self.has_results = _flag(df["has_results"]) == 1
        self.n_sites = df["n_sites"].to_numpy(np.int64)
        self.sites_bucket = np.searchsorted(SITE_EDGES, self.n_sites, side="left").astype(np.int8)
        self.collab_bucket = np.searchsorted(COLLAB_EDGES, df["n_collaborators"].to_numpy(np.int64),
                                             side="left").astype(np.int8)

    def _load_dates(self, buffer: io.BufferedReader) -> None:
        """Primary completion and completion dates (days since 1970; NaN: not given) and the actual/estimated mark
        of each date and of the enrollment (int8: 1 actual, 0 estimated, -1 no type given), for the timeline and
        the planning benchmarks. Aligned to the studies' rows by NCT id."""
        marks = ("start_actual", "primary_actual", "completion_actual", "enrollment_actual")
        df = _read(buffer, list(marks), {"nct_id": "S16", "primary_day": np.float64, "completion_day": np.float64})
        pos, known = self._positions(df["nct_id"].to_numpy().astype("S16"))
        rows = pos[known]
        for name in ("primary_day", "completion_day"):
            out = np.full(self.n, np.nan)
            out[rows] = df[name].to_numpy(np.float64)[known]
            setattr(self, name, out)
        for name in marks:
            flags = np.full(self.n, -1, dtype=np.int8)
            flags[rows] = _flag(df[name])[known]
            setattr(self, name, flags)

    def _load_lists(self, buffer: io.BufferedReader) -> None:
        df = _read(buffer, ["kind", "v"], {"i": np.int32})
        kind = df["kind"].astype(object).to_numpy()
        self.lists: dict[str, tuple[np.ndarray, Coded]] = {}
        for name in ("country", "state", "itype"):
            part = df[kind == name]
            self.lists[name] = (part["i"].to_numpy(np.int32), _coded(part["v"].cat.remove_unused_categories()))

    def _load_conditions(self, buffer: io.BufferedReader) -> None:
        self.conditions = Labeled.build(_read(buffer, ["value", "label"], {"i": np.int32}))

    def _load_interventions(self, buffer: io.BufferedReader) -> None:
        self.interventions = Labeled.build(_read(buffer, ["value", "label"], {"i": np.int32}))

    def _load_collaboration(self, buffer: io.BufferedReader) -> None:
        df = _read(buffer, ["value", "collaborator"], {"i": np.int32})
        self.collab_rows = df["i"].to_numpy(np.int32)
        lead, collab = _coded(df["value"]), _coded(df["collaborator"])
        # Each pair's two names as codes into the distinct names (hundreds of thousands of pairs at registry scale:
        # as text they were most of the strings the start cache decodes).
        self.collab_pair, self.collab_pair_lead, self.collab_pair_collab = _pair_codes(lead, collab)
        self.collab_leads = lead.labels
        self.collab_collaborators = collab.labels

    def _load_areas(self, buffer: io.BufferedReader) -> None:
        """Each study's therapeutic areas as bits (bit k: areas.areas()[k]) from its MeSH descriptors."""
        df = _read(buffer, ["descriptor_ui"], {"i": np.int32})
        ui = _coded(df["descriptor_ui"])
        bits = np.zeros(ui.size, dtype=np.int64)
        for k, area in enumerate(area_vocab.areas()):
            bits[ui.lut(area.descriptors().__contains__)] |= 1 << k
        self.area_bits = np.zeros(self.n, dtype=np.int64)
        np.bitwise_or.at(self.area_bits, df["i"].to_numpy(np.int32), bits[ui.codes])

    def _load_sites(self, db: Database) -> None:
        """Every site in site-id order, read in slices of ids so that only one slice's text is held at a time."""
        span = db.fetch_rows(load_sql("facetstore_site_span"), timeout_ms=LOAD_TIMEOUT_MS)[0]
        low, high, total = span["low"], span["high"], span["total"]
        slices = max(1, math.ceil(int(total or 0) / SITE_SLICE_ROWS))
        bounds = np.linspace(int(low or 0), int(high or 0) + 1, slices + 1).round().astype(np.int64)
        words = {name: _Dictionary() for name in SITE_TEXT}
        parts: dict[str, list[np.ndarray]] = {name: [] for name in ("row", "id", "lat", "lon", "group", *SITE_TEXT)}
        for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
            buffer = db.copy_csv(load_sql("facetstore_sites"), {"lo": lo, "hi": hi}, timeout_ms=LOAD_TIMEOUT_MS)
            df = _read(buffer, list(SITE_TEXT), {"nct_id": "S16", "site_id": np.int64, "lat": np.float64,
                                                 "lon": np.float64, "site_group": np.float64})
            pos, known = self._positions(df["nct_id"].to_numpy().astype("S16"))
            parts["row"].append(pos[known].astype(np.int32))
            parts["id"].append(df["site_id"].to_numpy(np.int64)[known])
            parts["lat"].append(df["lat"].to_numpy(np.float64)[known])
            parts["lon"].append(df["lon"].to_numpy(np.float64)[known])
            parts["group"].append(np.nan_to_num(df["site_group"].to_numpy(np.float64)[known], nan=-1).astype(np.int32))
            for name in SITE_TEXT:
                parts[name].append(words[name].codes(df[name])[known])
            del df, buffer
            _release_memory()
        self.site_row = np.concatenate(parts.pop("row"))
        site_id = np.concatenate(parts.pop("id"))
        # AACT's facility ids are 32-bit integers; half the memory when they fit.
        self.site_id = site_id.astype(np.int32) if site_id.size and site_id.max() < 2**31 else site_id
        del site_id
        # Each site's facility group (app.site_groups, in key order; -1: no name), for the Sites page.
        self.site_group = np.concatenate(parts.pop("group"))
        self.n_site_groups = int(self.site_group.max()) + 1 if self.site_group.size else 0
        self.site_loc, self.loc_lat, self.loc_lon = _locations(np.concatenate(parts.pop("lat")),
                                                               np.concatenate(parts.pop("lon")))
        self._loc_cells: dict[float, tuple[np.ndarray, int]] = {}
        self._world: dict[tuple[Any, ...], MapFrames] = {}
        # Each position's grid cell at every map step, once (and in the start cache): a map then only counts.
        self.loc_grid = {repr(step): self._grid_cells(step) for step in GRID_STEPS}
        coded = {name: words[name].finish(np.concatenate(parts.pop(name))) for name in SITE_TEXT}
        self.site_country: Coded = coded["country"]
        self.site_state: Coded = coded["state"]
        self.site_city: Coded = coded["city"]
        self.site_status: Coded = coded["shown_status"]
        # The first site of each (facility group, study), and the first recruiting one: the Sites page counts distinct
        # studies per group by summing these flags instead of sorting millions of pairs per view.
        self.site_pair_first = _first_of_pairs(self.site_group, self.site_row, self.n)
        recruiting = _recruiting(self.site_status)[self.site_status.codes]
        self.site_pair_recruiting = _first_of_pairs(np.where(recruiting, self.site_group, -1), self.site_row, self.n)

    def _load_export(self, db: Database) -> pa.Table | None:
        """The export table: one row per study (in row order) with the columns of trials_page.sql but the
        distance; None when its rows are not exactly the studies' (a study with two lead sponsors)."""
        buffer = db.copy_csv(load_sql("facetstore_export"), timeout_ms=LOAD_TIMEOUT_MS)
        table = pa_csv.read_csv(buffer, convert_options=pa_csv.ConvertOptions(
            column_types=EXPORT_TYPES, null_values=["\\N"], strings_can_be_null=True,
            quoted_strings_can_be_null=False, true_values=["t"], false_values=["f"]))
        if table.num_rows != self.n or not np.array_equal(
                np.asarray(table.column("nct_id").to_numpy(zero_copy_only=False), dtype="S16"), self.nct):
            _log.warning("the export table's rows are not one per study; exports are read by SQL")
            return None
        return table

    # ---- filters ----------------------------------------------------------------------------------
    def _positions(self, nct_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Row number of each NCT id, and whether the store has it at all."""
        if nct_ids.size == 0 or self.n == 0:
            return np.zeros(nct_ids.size, dtype=np.int64), np.zeros(nct_ids.size, dtype=bool)
        pos = np.minimum(np.searchsorted(self.nct, nct_ids), self.n - 1)
        return pos, self.nct[pos] == nct_ids

    def lookup(self, db: Database, sub: str | None, params: dict[str, Any]) -> np.ndarray:
        """Rows whose NCT id a SELECT of NCT ids returns (run in the database; None: nothing to search for)."""
        if sub is None:
            return np.zeros(self.n, dtype=bool)
        # No DISTINCT: setting a row's mask twice is harmless, while PostgreSQL 15 hashed 209,000 distinct ids of
        # "diabetes" at 575,000 studies into 174,000 spilled batches (143 s; 0.5 s without it).
        buffer = db.copy_csv(f"SELECT q.nct_id FROM ({sub}) q", params, timeout_ms=LOOKUP_TIMEOUT_MS)
        ids = pd.read_csv(buffer, dtype={"nct_id": "S16"}, na_values=["\\N"], keep_default_na=False)
        pos, known = self._positions(ids["nct_id"].dropna().to_numpy().astype("S16"))
        mask = np.zeros(self.n, dtype=bool)
        mask[pos[known]] = True  # ids not in the store are dropped
        return mask

    def any_in_list(self, name: str, values: tuple[str, ...]) -> np.ndarray:
        """Studies with any of the values in a list column (countries, US states)."""
        rows, coded = self.lists[name]
        mask = np.zeros(self.n, dtype=bool)
        mask[rows[coded.among(values)]] = True
        return mask

    @property
    def nloc(self) -> int:
        """Distinct site positions; code nloc means "no coordinates"."""
        return len(self.loc_lat) - 1

    def loc_miles(self, place: geo.Place, radius_miles: float | None = None,
                  positions: np.ndarray | None = None) -> np.ndarray:
        """Great-circle miles from the place to every position (NaN without coordinates, or outside the radius
        when one is given: bounding box first, then the exact distance; or, without a radius, when not among the
        `positions` given)."""
        lat, lon = self.loc_lat, self.loc_lon
        if radius_miles is None:
            wanted = ~np.isnan(lat)
            if positions is not None:
                chosen = np.zeros(lat.size, dtype=bool)
                chosen[positions] = True
                wanted &= chosen
            ok = np.flatnonzero(wanted)
        else:
            min_lat, max_lat, min_lon, max_lon = geo.bounding_box(place.lat, place.lon, radius_miles)
            ok = np.flatnonzero((lat >= min_lat) & (lat <= max_lat) & (lon >= min_lon) & (lon <= max_lon))
        out = np.full(lat.size, np.nan)
        out[ok] = _haversine_miles(lat[ok], lon[ok], place.lat, place.lon)
        if radius_miles is not None:
            out[out > radius_miles] = np.nan
        return out

    def near_sites(self, place: geo.Place, radius_miles: float) -> tuple[np.ndarray, np.ndarray]:
        """Indexes of located sites within the radius and their miles."""
        miles = self.loc_miles(place, radius_miles)
        sites = np.flatnonzero(~np.isnan(miles)[self.site_loc])
        return sites, miles[self.site_loc[sites]]

    def loc_cells(self, step: float) -> tuple[np.ndarray, int]:
        """Grid cell (floor(lat/step), floor(lon/step)) of every position as one int32 key below the returned
        bound (the last position, "no coordinates", gets the bound itself). The map's steps (GRID_STEPS) were
        computed at load; another step is kept when positions are few (AACT's city-level coordinates), else
        recomputed per call (tens of ms when nearly every site has its own)."""
        stored = self.loc_grid.get(repr(float(step)))
        if stored is not None:
            return stored
        cached = self._loc_cells.get(step)
        if cached is not None:
            return cached
        cells, bound = self._grid_cells(step)
        if self.nloc <= LOC_CELL_CACHE_MAX:
            self._loc_cells[step] = (cells, bound)
        return cells, bound

    def _grid_cells(self, step: float) -> tuple[np.ndarray, int]:
        if self.nloc:
            keys, bound = _cell_keys(self.loc_lat[:-1], self.loc_lon[:-1], step)
            cells = np.empty(keys.size + 1, dtype=np.int64 if bound >= 2**31 else np.int32)
            cells[:-1] = keys
            cells[-1] = bound
            del keys
        else:
            cells, bound = np.zeros(1, dtype=np.int32), 0
        return cells, bound

    def clause_masks(self, f: Filters, db: Database) -> dict[str, np.ndarray]:
        """One boolean mask per set filter, from each filter's definition (filters.FILTER_DEFS)."""
        return {d.name: d.mask(self, f, db) for d in FILTER_DEFS if d.is_set(f)}

    def _all(self, masks: dict[str, np.ndarray], skip: tuple[str, ...] = ()) -> np.ndarray:
        out = np.ones(self.n, dtype=bool)
        for name, m in masks.items():
            if name not in skip:
                out &= m
        return out

    def mask(self, f: Filters, db: Database) -> np.ndarray:
        """The studies matching every filter."""
        return self._all(self.clause_masks(f, db))

    def nearest_miles(self, place: geo.Place | None, mask: np.ndarray, radius_miles: float | None = None
                      ) -> np.ndarray:
        """Miles from the place to each matching study's nearest located site (NaN: no such site, not matching, or
        no place) — engine.near_cte's nearest_miles, for the Trials table's distance sort.

        With `radius_miles`, every matching study has a site within it (the near filter): then only those sites
        are measured (a bounding box first), not every site of the registry."""
        out = np.full(self.n, np.inf)
        if place is not None:
            if radius_miles is not None:
                sites, miles = self.near_sites(place, radius_miles)
            else:  # the positions of the matching studies' sites only
                sites = np.flatnonzero(mask[self.site_row])
                locs = self.site_loc[sites]
                miles = self.loc_miles(place, positions=locs)[locs]  # NaN for sites without coordinates
            rows = self.site_row[sites]
            keep = mask[rows] & ~np.isnan(miles)
            np.minimum.at(out, rows[keep], miles[keep])
        out[np.isinf(out)] = np.nan
        return out

    def sorted_page(self, mask: np.ndarray, key: str, *, descending: bool, start: int, stop: int,
                    values: np.ndarray | None = None) -> np.ndarray:
        """NCT ids of rows start…stop of the matching studies ordered by a number column ("sites", "enrollment",
        "start_date"), a text column's rank (SORT_RANKS) or the `values` given (one per study), NULLs last, ties by
        NCT id: `ORDER BY key [DESC] NULLS LAST, nct_id` in SQL."""
        rows = np.flatnonzero(mask)  # NCT id order
        numbers = {"sites": self.n_sites, "enrollment": self.enrollment, "start_date": self.start_day}
        column = values if values is not None else numbers[key] if key in numbers else self.sort_ranks[key]
        values = column[rows].astype(np.float64)
        missing = np.isnan(values)
        values[missing] = 0.0
        if descending:
            values = -values
        order = np.lexsort((rows, values, missing))  # the last key sorts first
        return self.nct[rows[order[start:stop]]]

    # ---- the dashboard ----------------------------------------------------------------------------
    def dashboard_frames(self, f: Filters, db: Database, tops: dict[str, int]
                         ) -> tuple[dict[str, int], dict[str, int], dict[str, pd.DataFrame]]:
        """KPIs, funnel counts and the raw frame of every facet (the shapes the SQL gives)."""
        masks = self.clause_masks(f, db)
        mask = self._all(masks)
        idx = np.flatnonzero(mask)
        raw: dict[str, pd.DataFrame] = {}

        def count(coded: Coded, rows: np.ndarray = idx) -> np.ndarray:
            return np.bincount(coded.codes[rows], minlength=coded.size)

        status_n = count(self.status)
        country_rows, country = self.lists["country"]
        country_n = np.bincount(country.codes[mask[country_rows]], minlength=country.size)
        recruiting = self.status.code_of("RECRUITING")
        kpis = {"matching_trials": int(idx.size),
                "recruiting": int(status_n[recruiting]) if recruiting >= 0 else 0,
                "sites": int(self.n_sites[idx].sum()),
                "countries": _countries_among(country, country_n[:-1] > 0),
                "planned_enrollment": int(np.nansum(self.enrollment[idx]))}
        if f.country or f.state or f.near:  # Sites and Countries count the sites in the area (map_area.sql)
            chosen = mask[self.site_row]
            _in_area(self, f, chosen)
            kpis["sites"] = int(np.count_nonzero(chosen))
            seen = np.zeros(self.site_country.size, dtype=bool)
            seen[self.site_country.codes[chosen]] = True
            kpis["countries"] = _countries_among(self.site_country, seen[:-1])
        base = self._all(masks, skip=FUNNEL_FIELDS)
        funnel = {"base": int(np.count_nonzero(base))}
        so_far = base
        for stage, names in FUNNEL_STAGES.items():
            for name in names:
                if name in masks:
                    so_far = so_far & masks[name]
            funnel[stage] = int(np.count_nonzero(so_far))

        raw["phase"] = _groups(self.phase_raw, count(self.phase_raw))
        raw["status"] = _groups(self.status, status_n)
        raw["study_type"] = _groups(self.study_type, count(self.study_type))
        with_lead = idx[self.lead_sponsor.codes[idx] != self.lead_sponsor.null]
        raw["funder_class"] = _groups(self.funder_class, count(self.funder_class, with_lead))
        raw["lead_sponsors"] = _top(self.lead_sponsor.labels, count(self.lead_sponsor, with_lead),
                                    tops["lead_sponsors"])
        etype = self.enrollment_type
        key = self.enroll_bucket[idx].astype(np.int64) * etype.size + etype.codes[idx]
        en = np.bincount(key, minlength=8 * etype.size)
        nz = np.flatnonzero(en)
        raw["enrollment"] = pd.DataFrame({"value": [int(k // etype.size) for k in nz], "n": [int(x) for x in en[nz]],
                                          "enrollment_type": list(etype.labels[nz % etype.size])})
        raw["sex"] = _groups(self.gender, count(self.gender))
        groups = self.age_groups[:, idx].sum(axis=1)
        raw["age_groups"] = pd.DataFrame({"value": [g for g, k in zip(AGE_GROUPS, groups, strict=True) if k],
                                          "n": [int(k) for k in groups if k]})
        itype_rows, itype = self.lists["itype"]
        raw["intervention_types"] = _groups(itype, np.bincount(itype.codes[mask[itype_rows]], minlength=itype.size))
        raw["duration"] = _int_groups(self.duration[idx].astype(np.int64))
        years = self.start_year[idx]
        raw["start_year"] = _int_groups(years[~np.isnan(years)].astype(np.int64))
        raw["sites_per_trial"] = _int_groups(self.sites_bucket[idx].astype(np.int64))
        raw["countries"] = _top(country.labels, country_n, tops["countries"])
        state_rows, state = self.lists["state"]
        raw["us_states"] = _groups(state, np.bincount(state.codes[mask[state_rows]], minlength=state.size),
                                   keep_null=False)
        raw["collaboration_mix"] = _int_groups(self.collab_bucket[idx].astype(np.int64))
        closed = np.flatnonzero(self._all(masks, skip=("status",)))
        closed_status = count(self.status, closed)
        keep = self.status.lut(lambda v: v in CLOSED_OUTCOMES)
        raw["outcome"] = _groups(self.status, np.where(keep, closed_status, 0))
        raw["why_stopped"] = _top(self.why_stopped.labels, count(self.why_stopped, closed),
                                  tops["why_stopped"])
        raw["stop_categories"] = _top(self.why_stopped.labels, count(self.why_stopped, closed),
                                      tops["stop_categories"])
        finish = self.finish_year[closed]
        done = ~np.isnan(finish)
        raw["results_by_year"] = _int_groups(finish[done].astype(np.int64),
                                             with_results=self.has_results[closed][done].astype(np.float64))
        raw["conditions"] = self.conditions.top(mask, tops["conditions"])
        area_n = [int(np.count_nonzero(self.area_bits[idx] & (1 << k)))
                  for k in range(len(area_vocab.areas()))]
        raw["therapeutic_areas"] = pd.DataFrame({"value": [a.name for a, n in zip(area_vocab.areas(), area_n,
                                                                                  strict=True) if n],
                                                 "n": [n for n in area_n if n]})
        raw["interventions"] = self.interventions.top(mask, tops["interventions"])
        pair_n = np.bincount(self.collab_pair[mask[self.collab_rows]], minlength=len(self.collab_pair_lead))
        top = _top_codes(pair_n, tops["collaboration"], keep_null=True)
        raw["collaboration"] = pd.DataFrame({"value": list(self.collab_leads[self.collab_pair_lead[top]]),
                                             "collaborator": list(
                                                 self.collab_collaborators[self.collab_pair_collab[top]]),
                                             "n": [int(x) for x in pair_n[top]]})
        return kpis, funnel, raw

# ---- the start cache: the arrays on disk, memory-mapped at start ------------------------------------
# Bump CACHE_FORMAT when the store's attributes change shape (2: the timeline's dates and their marks; 3: the
# Sites page's site group and pair flags, before the merge; 4: both; 5: collaboration pairs as codes, not
# names; 6: conditions as MeSH headings, therapeutic areas; 7: each position's map grid cells, loc_grid;
# 8: the export table).
CACHE_FORMAT = 8
_TRANSIENT = ("_loc_cells", "_world", "load_seconds", "from_cache")  # per process, never written


def cache_enabled() -> bool:
    """False when TRIAL_LANDSCAPE_FACET_CACHE=0 asks for a load by COPY on every start."""
    return settings.current().facet_cache


def cache_root(db: Database) -> Path:
    """Where this database's start caches live: next to its data folder when the server runs on this machine and
    tells us where (the embedded server: `<data dir>/facet-cache`), else a folder per database under the user's
    cache folder (TRIAL_LANDSCAPE_CACHE_DIR; keyed by the URL without its password)."""
    try:
        name = str(db.fetch_value("SELECT current_database()", timeout_ms=5_000))
        pgdata = db.fetch_value("SELECT current_setting('data_directory', true)", timeout_ms=5_000)
    except TrialLandscapeError:  # not allowed to read the setting: not our server
        pgdata = None
    if pgdata:
        here = Path(str(pgdata))
        if (here / "PG_VERSION").is_file() and os.access(here.parent, os.W_OK):
            return here.parent / "facet-cache" / hashlib.sha256(name.encode()).hexdigest()[:12]
    parts = urlsplit(db.url)
    safe = parts._replace(netloc=parts.netloc.rsplit("@", 1)[-1] + f"#{parts.username or ''}").geturl()
    return geo.cache_dir() / "facet-cache" / hashlib.sha256(safe.encode()).hexdigest()[:16]


def cache_key(stamp: str) -> str:
    """The folder name of one generation of the derived tables (their refresh stamp) in this cache format."""
    return f"v{CACHE_FORMAT}-" + hashlib.sha256(stamp.encode()).hexdigest()[:16]


def _save_value(value: Any, folder: Path, name: str, files: dict[str, int]) -> Any:
    """Write one attribute's arrays under `folder`; return its manifest entry (JSON)."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "O":  # labels: UTF-8 bytes + offsets, NULL marked
            items = value.tolist()
            if not all(v is None or isinstance(v, str) for v in items):
                raise TypeError(f"{name}: only strings and NULL can be cached")
            encoded = [b"" if v is None else v.encode("utf-8") for v in items]
            offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
            np.cumsum([len(e) for e in encoded], out=offsets[1:])
            parts = {"blob": np.frombuffer(b"".join(encoded), dtype=np.uint8),
                     "offsets": offsets, "null": np.array([v is None for v in items], dtype=bool)}
            return {"t": "strings", **{k: _save_value(a, folder, f"{name}.{k}", files) for k, a in parts.items()}}
        path = folder / f"{name}.npy"
        np.save(path, np.ascontiguousarray(value), allow_pickle=False)
        files[path.name] = path.stat().st_size
        return {"t": "array", "file": path.name}
    if isinstance(value, (Coded, Labeled)):
        return {"t": type(value).__name__,
                "fields": {k: _save_value(v, folder, f"{name}.{k}", files) for k, v in vars(value).items()}}
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise TypeError(f"{name}: only text keys can be cached")
        return {"t": "dict", "items": {k: _save_value(v, folder, f"{name}.{k}", files) for k, v in value.items()}}
    if isinstance(value, tuple):
        return {"t": "tuple", "items": [_save_value(v, folder, f"{name}.{i}", files) for i, v in enumerate(value)]}
    if isinstance(value, pa.Table):  # Arrow's file format: memory-mapped back without decoding its text
        path = folder / f"{name}.arrow"
        with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, value.schema) as writer:
            writer.write_table(value)
        files[path.name] = path.stat().st_size
        return {"t": "arrow", "file": path.name}
    if value is None or isinstance(value, (bool, int, float, str)):
        return {"t": "value", "value": value}
    raise TypeError(f"{name}: {type(value).__name__} cannot be cached")


def _load_value(entry: Any, folder: Path, files: dict[str, int]) -> Any:
    kind = entry["t"]
    if kind == "array":
        path = folder / entry["file"]
        if path.stat().st_size != files[entry["file"]]:
            raise ValueError(f"{path.name} has the wrong size")
        array = np.load(path, mmap_mode="r", allow_pickle=False)
        # A plain ndarray over the mapped pages: no copy, read-only, and no np.memmap subclass in results.
        return array.view(np.ndarray) if array.size else np.array(array)
    if kind == "strings":
        blob = bytes(_load_value(entry["blob"], folder, files))
        offsets = _load_value(entry["offsets"], folder, files).tolist()
        null = _load_value(entry["null"], folder, files).tolist()
        out = np.empty(len(null), dtype=object)
        out[:] = [None if nil else blob[a:b].decode("utf-8")
                  for a, b, nil in zip(offsets[:-1], offsets[1:], null, strict=True)]
        return out
    if kind in ("Coded", "Labeled"):
        cls = Coded if kind == "Coded" else Labeled
        return cls(**{k: _load_value(v, folder, files) for k, v in entry["fields"].items()})
    if kind == "dict":
        return {k: _load_value(v, folder, files) for k, v in entry["items"].items()}
    if kind == "tuple":
        return tuple(_load_value(v, folder, files) for v in entry["items"])
    if kind == "arrow":
        path = folder / entry["file"]
        if path.stat().st_size != files[entry["file"]]:
            raise ValueError(f"{path.name} has the wrong size")
        return pa.ipc.open_file(pa.memory_map(str(path))).read_all()
    if kind == "value":
        return entry["value"]
    raise ValueError(f"unknown cache entry {kind!r}")


def write_cache(store: FacetStore, root: Path) -> Path:
    """Write the store's arrays as `<root>/<key>/` (a temporary folder renamed into place, so a crash never leaves
    half a cache) and remove every other generation. Returns the folder."""
    root.mkdir(parents=True, exist_ok=True)
    key = cache_key(store.refreshed_at)
    final = root / key
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{key}-", dir=root))
    try:
        files: dict[str, int] = {}
        attrs = {k: _save_value(v, tmp, k, files) for k, v in vars(store).items() if k not in _TRANSIENT}
        manifest = {"format": CACHE_FORMAT, "refreshed_at": store.refreshed_at, "n": store.n, "files": files,
                    "attrs": attrs}
        with open(tmp / "manifest.json", "w", encoding="utf-8") as out:
            json.dump(manifest, out)
            out.flush()
            os.fsync(out.fileno())
        if final.exists():  # another process wrote this generation first: theirs is as good
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            os.rename(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    for other in root.iterdir():  # older generations, and temporary folders a crashed writer left behind
        if other.name != key and (not other.name.startswith(".tmp-") or time.time() - other.stat().st_mtime > 3600):
            shutil.rmtree(other, ignore_errors=True)
    return final


def read_cache(root: Path, stamp: str) -> FacetStore | None:
    """The store memory-mapped from `<root>/<key>/`, or None when there is none for this generation. A cache that
    cannot be read or does not match is removed (and rebuilt by the caller's next load)."""
    folder = root / cache_key(stamp)
    manifest_path = folder / "manifest.json"
    if not manifest_path.is_file():
        return None
    started = time.perf_counter()
    try:
        with open(manifest_path, encoding="utf-8") as src:
            manifest = json.load(src)
        if manifest.get("format") != CACHE_FORMAT or manifest.get("refreshed_at") != stamp:
            raise ValueError("written for another generation")
        store = FacetStore.__new__(FacetStore)
        for name, entry in manifest["attrs"].items():
            setattr(store, name, _load_value(entry, folder, manifest["files"]))
        if store.n != len(store.nct) or store.refreshed_at != stamp:
            raise ValueError("does not match its manifest")
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        _log.warning("ignoring the facet start cache %s (%s); loading from the database", folder, err)
        shutil.rmtree(folder, ignore_errors=True)
        return None
    store._loc_cells = {}
    store._world = {}
    store.from_cache = True
    store.load_seconds = time.perf_counter() - started
    _log.info("facet store mapped %d studies and %d sites from %s in %.2f s", store.n, len(store.site_row), folder,
              store.load_seconds)
    return store


def _load(db: Database, stamp: str, *, background: bool = False, root: Path | None = None) -> FacetStore:
    """The store for a generation: from the start cache when there is one, else the database's copy of it (a second
    or two), else by COPY (then cached). In the `background` (a server's warm-up) a child process at lower CPU
    priority fetches the copy or loads by COPY (build_cache_in_child) once the first pages have been drawn (or a page
    needs the arrays), and this process maps the result. `root`: the cache folder's root when the caller knows it (a
    child building for its server)."""
    if root is None and cache_enabled():
        root = cache_root(db)
    if root is not None:
        key = cache_key(stamp)
        cached = read_cache(root, stamp)
        if cached is None and background:
            by_copy = not facetcopy.available(db, key)
            wanted = _wanted.setdefault(db.url, threading.Event())
            with _copy_lock:  # a load by COPY takes long: the pages are served by SQL meanwhile (ready_store)
                if by_copy:
                    _copying.add(db.url)
            try:
                # The first visitor's landing view is stored: the child starts once it has been drawn, or at once
                # when a page needs the arrays (ready_store; one waits for a fetch, SQL answers during a load).
                startup.wait_until_quiet(BUILD_QUIET_S, at_most_s=BUILD_WAIT_AT_MOST_S, unless=wanted)
                if build_cache_in_child(db, root, stamp):
                    cached = read_cache(root, stamp)
            finally:
                _wanted.pop(db.url, None)
                with _copy_lock:
                    _copying.discard(db.url)
        if cached is None and facetcopy.available(db, key) and facetcopy.fetch(db, root, key) is not None:
            cached = read_cache(root, stamp)  # this host's folder was missing or stale: the database's copy
        if cached is not None:
            return cached
    with _copy_lock:
        _copying.add(db.url)
    try:
        store = FacetStore(db, stamp)
    finally:
        with _copy_lock:
            _copying.discard(db.url)
    if root is not None:
        try:
            folder = write_cache(store, root)
        except (OSError, TypeError) as err:  # no cache is slower starts, not wrong numbers
            _log.warning("could not write the facet start cache under %s: %s", root, err)
        else:
            facetcopy.publish(db, folder)  # every other host of this database starts from it too
    return store


BUILD_URL_ENV = "TRIAL_LANDSCAPE_CACHE_BUILD_URL"  # the database of a child's build (never on its command line)
BUILD_NICE = 10  # the child's CPU priority below the server's: visitors first
BUILD_QUIET_S = 3.0  # ... and it starts once the first pages have been drawn (startup.wait_until_quiet),
BUILD_WAIT_AT_MOST_S = 30.0  # or after this however busy the pages are
BUILD_TIMEOUT_S = 3600.0
PROJECT_DIR = Path(__file__).resolve().parents[2]


def build_cache_in_child(db: Database, root: Path, stamp: str) -> bool:
    """Make `<root>/<key>/` for a generation in a child process (the database's copy fetched, else the arrays
    loaded by COPY, written and published in the database); True when the folder is there after it.

    Done in the server's process, the load by COPY (~40 s at 575,000 studies) or the fetch (~1.5 s) held the
    interpreter and a core while the first visitor's page was drawn from the landing view; in a child at lower
    priority the browser and the server come first, and the load's garbage never enters the server.
    """
    cmd = [sys.executable, "-m", "services.dashboard.facetstore", "--build-cache", str(root), stamp,
           str(os.getpid()), f"--nice={BUILD_NICE}"]
    if db.read_only:
        cmd.append("--read-only")
    try:
        subprocess.run(cmd, cwd=PROJECT_DIR, env=settings.child_environment(**{BUILD_URL_ENV: db.url}),
                       capture_output=True,
                       timeout=BUILD_TIMEOUT_S, check=True)
    except (OSError, subprocess.SubprocessError) as err:
        detail = getattr(err, "stderr", b"") or b""
        _log.warning("the child building the facet start cache failed (%s %s); loading here", err,
                     detail[-500:].decode("utf-8", "replace"))
        return False
    return (root / cache_key(stamp) / "manifest.json").is_file()


def _build_cache_main(args: list[str]) -> int:
    """The child of build_cache_in_child: `--build-cache ROOT STAMP PARENT_PID [--nice=N] [--read-only]`, its
    database in BUILD_URL_ENV. It ends with its parent (a stopped server leaves no build running) and runs at
    the parent's BUILD_NICE."""
    import signal

    _libc().prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    if os.getppid() != int(args[2]):  # the parent ended before the line above
        return 1
    os.nice(next((int(a.split("=", 1)[1]) for a in args[3:] if a.startswith("--nice=")), BUILD_NICE))
    root, stamp = Path(args[0]), args[1]
    url = settings.current().cache_build_url
    if url is None:
        return 1
    db = Database(url.get_secret_value(), read_only="--read-only" in args[3:],
                  label="facet start cache build")
    _load(db, stamp, root=root)  # the copy fetched, else loaded by COPY, written and published, as in a server
    return 0


# ---- one store per process and database ------------------------------------------------------------
_stores: dict[str, FacetStore] = {}
_checked: dict[str, tuple[float, str | None]] = {}
_lock = threading.Lock()
_copying: set[str] = set()  # databases whose store is being loaded by COPY right now (seconds to minutes)
_wanted: dict[str, threading.Event] = {}  # set once a page needs the arrays: a server's rebuild waits no longer
_roots: dict[str, Path] = {}
_background: dict[str, threading.Thread] = {}
_copy_lock = threading.Lock()


def generation(db: Database) -> str | None:
    """The database's current generation of the derived tables (their refresh stamp; checked every few
    seconds)."""
    now = time.monotonic()
    seen = _checked.get(db.url)
    if seen is not None and now - seen[0] < REFRESH_CHECK_S:
        return seen[1]
    try:
        value = db.fetch_value("SELECT value FROM app.meta WHERE key = 'facets_refreshed_at'", timeout_ms=5_000)
    except TrialLandscapeError as err:
        loaded = _stores.get(db.url)
        if loaded is None:
            raise
        # A slow or failed freshness check must not throw away a loaded store: keep it and ask again later.
        _log.warning("could not check whether the derived tables changed (%s); keeping the loaded store", err)
        return loaded.refreshed_at
    stamp = None if value is None else str(value)
    _checked[db.url] = (now, stamp)
    return stamp


def _current(db: Database, stamp: str | None) -> FacetStore | None:
    """This process's store of the database when it is of generation `stamp`, else None."""
    store = _stores.get(db.url)
    return store if store is not None and store.refreshed_at == stamp else None


def store_for(db: Database, *, background: bool = False) -> FacetStore:
    """The loaded store of this database (loaded on first use; reloaded after the derived tables are rebuilt);
    `background`: a load by a child process (see _load).

    Raises the database's typed error when the tables cannot be read; callers fall back to SQL.
    """
    stamp = generation(db)
    store = _current(db, stamp)
    if store is not None:
        return store
    with _lock:  # one load at a time; others wait for it instead of loading the same arrays again
        store = _current(db, stamp)
        if store is not None:
            return store
        _stores.pop(db.url, None)  # let the old arrays go before the new ones arrive
        store = _load(db, stamp or "", background=background)
        _stores[db.url] = store
        return store


def ready_store(db: Database) -> FacetStore | None:
    """The current store when it is loaded or can be mapped from the start cache at once; else None, with a load by
    COPY started in the background (the server's pages are served by SQL meanwhile, then the cache is written)."""
    stamp = generation(db)
    store = _current(db, stamp)
    if store is not None:
        return store
    _wanted.setdefault(db.url, threading.Event()).set()  # a page needs the arrays: a load waits no longer for quiet
    if db.url not in _copying and cache_enabled() and stamp is not None:
        root = _roots.get(db.url)
        if root is None:
            root = _roots.setdefault(db.url, cache_root(db))
        key = cache_key(stamp)
        if (root / key / "manifest.json").is_file() or facetcopy.available(db, key):
            return store_for(db)  # the arrays are mapped (a fraction of a second) or fetched first (a second or two)
    with _copy_lock:
        running = _background.get(db.url)
        if running is None or not running.is_alive():
            running = threading.Thread(target=warm_up, args=(db,), name="facet-load", daemon=True)
            _background[db.url] = running
            running.start()
    return None


def loaded(db: Database) -> FacetStore | None:
    """The store this process holds for the database, whatever its generation; None before the first load."""
    return _stores.get(db.url)


def is_loaded(db: Database) -> bool:
    """True once this process holds a store for the database (the first load takes ~20 s at registry scale)."""
    return db.url in _stores


def warm_up(db: Database) -> None:
    """Load the store now (a background thread at server start), so the first visitor does not wait for it; then
    make sure the database keeps a copy of its start cache for other hosts."""
    try:
        store_for(db, background=True)
    except TrialLandscapeError as err:  # the pages fall back to SQL and say so; nothing to do here
        _log.warning("facet store warm-up failed: %s", err)
        return
    keep_copy(db)


def keep_copy(db: Database) -> None:
    """Publish the loaded generation's start cache in the database unless it holds it already (a cache folder
    written before the database kept copies, or by a process that could not publish)."""
    store = _stores.get(db.url)
    if store is None or not cache_enabled():
        return
    folder = cache_root(db) / cache_key(store.refreshed_at)
    if (folder / "manifest.json").is_file() and not facetcopy.available(db, folder.name):
        facetcopy.publish(db, folder)


def forget() -> None:
    """Drop every loaded store (tests, or after switching databases)."""
    with _lock:
        _stores.clear()
        _checked.clear()
        _roots.clear()
        _wanted.clear()


# ---- the map ---------------------------------------------------------------------------------------
def _mean_rounded(micro_sums: np.ndarray, n: np.ndarray) -> list[float]:
    """round(avg(x::numeric), 5)::float8 as PostgreSQL computes it, from exact sums of micro-degrees.

    AACT stores coordinates as numeric(10,6), so sums of micro-degree integers are exact (float64 holds every
    integer below 2**53; a cell's sum stays far below) and so is the mean; rounding is half away from zero.
    """
    s, d = micro_sums.astype(np.int64), 10 * n.astype(np.int64)  # the mean in units of 1e-5 degrees is s / d
    q = (2 * np.abs(s) + d) // (2 * d)
    out: list[float] = (np.where(s >= 0, q, -q) / 100_000).tolist()  # q is exact in float64: one correct rounding
    return out


def _runs(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct keys in ascending order and how often each occurs (np.sort based: numpy's plain np.unique
    takes a hashing path that is ~100× slower on millions of int64 keys)."""
    if keys.size == 0:
        return keys.astype(np.int64), np.zeros(0, dtype=np.int64)
    s = np.sort(keys)
    starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])
    return s[starts], np.diff(np.r_[starts, s.size])


def _group_mode(groups: np.ndarray, coded: Coded, sites: np.ndarray, ngroups: int) -> list[Any]:
    """mode() of a coded site column per group: most frequent non-NULL label, ties to the first in byte order."""
    if ngroups * coded.size <= min(DENSE_COUNTS_MAX, 4 * sites.size):  # few labels: a table of counts, no sort
        counts = np.bincount(groups * coded.size + coded.codes[sites], minlength=ngroups * coded.size)
        table = counts.reshape(ngroups, coded.size)[:, :coded.null]  # NULL is the last code
        best = table.argmax(axis=1)  # the first of the most frequent: the lowest code, first in byte order
        found = table[np.arange(ngroups), best] > 0
        return [coded.labels[c] if f else None for c, f in zip(best.tolist(), found.tolist(), strict=True)]
    wide = np.int32 if ngroups * coded.size < 2**31 else np.int64  # half the memory (and a faster sort) when it fits
    codes = coded.codes[sites]
    keep = codes != coded.null
    key = groups[keep].astype(wide)
    key *= coded.size
    key += codes[keep]
    del codes, keep
    keys, counts = _runs(key)
    del key
    g, c = keys // coded.size, keys % coded.size  # sorted by group, then code (byte order)
    best = np.zeros(ngroups, dtype=np.int64)
    np.maximum.at(best, g, counts)
    top = np.flatnonzero(counts == best[g])
    first = top[np.r_[True, g[top][1:] != g[top][:-1]]] if top.size else top  # lowest code among the most frequent
    out: list[Any] = [None] * ngroups
    for gi, ci in zip(g[first].tolist(), c[first].tolist(), strict=True):
        out[gi] = coded.labels[ci]
    return out


def _distinct_sorted(keys: np.ndarray, *, in_place: bool = False) -> np.ndarray:
    """The distinct values of keys, ascending (np.sort based, like _runs, without the counts); `in_place` sorts
    the caller's array instead of a copy."""
    if in_place:
        keys.sort()
    s = keys if in_place else np.sort(keys)
    return s[np.r_[True, s[1:] != s[:-1]]] if s.size else s


def _distinct_per_group(groups: np.ndarray, rows: np.ndarray, ngroups: int) -> np.ndarray:
    """count(DISTINCT study) per group."""
    if rows.size == 0:
        return np.zeros(ngroups, dtype=np.int64)
    starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
    if starts.size * ngroups <= 2**32 and _count_distinct(rows[starts], int(rows.max()) + 1) == starts.size:
        # Each study's sites lie together (as they are stored: a study's sites get consecutive ids). Then a
        # (run of one study, group) key rises run by run, and a stable sort (timsort) orders it about three times as
        # fast as a full sort of (group, study) keys.
        run = np.zeros(rows.size, dtype=np.uint32)
        run[starts[1:]] = 1
        np.cumsum(run, out=run)
        run *= np.uint32(ngroups)
        run += groups.astype(np.uint32)
        run.sort(kind="stable")
        pairs = run[np.r_[True, run[1:] != run[:-1]]]
        return np.bincount(pairs % np.uint32(ngroups), minlength=ngroups)
    width = int(rows.max()) + 1
    bound = ngroups * width  # 32-bit keys sort twice as fast as 64-bit ones
    wide = np.int32 if bound <= 2**31 else np.uint32 if bound <= 2**32 else np.int64
    key: np.ndarray = groups.astype(wide)
    key *= width
    key += rows.astype(wide)
    pairs = _distinct_sorted(key, in_place=True)
    del key
    return np.bincount(pairs // width, minlength=ngroups)


def _countries_among(coded: Coded, present: np.ndarray) -> int:
    """How many countries the labels flagged in `present` (one flag per label but NULL) name, one per ISO
    code: a spelling of geo.country_renames counts as its country's one name (as dashboard_kpis.sql)."""
    renames = geo.country_renames()
    return len({renames.get(str(label), str(label)) for label in coded.labels[:-1][present]})


def _count_distinct(values: np.ndarray, bound: int) -> int:
    """How many distinct values there are among non-negative integers below `bound` (study rows, cell keys),
    by marking a table instead of sorting."""
    seen = np.zeros(bound, dtype=bool)
    seen[values] = True
    return int(np.count_nonzero(seen))


def _cell_keys(lat: np.ndarray, lon: np.ndarray, step: float) -> tuple[np.ndarray, int]:
    """Grid cell (floor(lat/step), floor(lon/step)) of non-empty coordinates as one whole-number key each (float64)
    below the returned bound."""
    ky = lat / step
    kx = lon / step
    np.floor(ky, out=ky)
    np.floor(kx, out=kx)
    y0, x0 = ky.min(), kx.min()
    width = int(kx.max() - x0) + 1
    bound = (int(ky.max() - y0) + 1) * width
    ky -= y0
    ky *= width
    kx -= x0
    ky += kx  # whole numbers far below 2**53: exact in float64
    return ky, bound


def _distinct_cells(store: FacetStore, positions: np.ndarray, step: float) -> int:
    """How many grid cells of `step` degrees the given positions fall into: for a few positions, cheaper than
    FacetStore.loc_cells of every position."""
    if positions.size == 0:
        return 0
    keys, _ = _cell_keys(store.loc_lat[positions], store.loc_lon[positions], step)
    return int(_distinct_sorted(keys, in_place=True).size)


def export_rows(store: FacetStore, ids: list[str]) -> pd.DataFrame | None:
    """trials_page.sql's rows of the given trials, in their order, from the export table (no place: no
    distances); None without an export table. Typed as db.fetch_df types the query's rows."""
    table = getattr(store, "export", None)
    if table is None:
        return None
    pos, known = store._positions(np.array(ids, dtype="S16"))
    part = table.take(pa.array(pos[known]))
    columns: dict[str, list[Any]] = {}
    for name in part.column_names:
        columns[name] = part.column(name).to_pylist()
        if name == "countries":  # trials_page.sql's place for the distance
            columns["nearest_miles"] = [None] * part.num_rows
    return pd.DataFrame(columns)


@dataclass
class MapFrames:
    """The raw frames of one map, shaped as the map_*.sql queries return them."""

    summary: dict[str, int]
    cell: float | None
    points: pd.DataFrame  # map_site_points.sql rows, or map_site_grid.sql rows when cell is set
    nearest: pd.DataFrame | None
    countries: pd.DataFrame
    states: pd.DataFrame
    errors: dict[str, str] = field(default_factory=dict)  # a part that failed (SQL engine), by name
    # The shaped frames (sitemap) of a map kept per store: every copy handed out shares this one dict.
    shaped: dict[str, pd.DataFrame] = field(default_factory=dict)


def _in_area(store: FacetStore, f: Filters, chosen: np.ndarray) -> np.ndarray | None:
    """Keep in `chosen` (a flag per site) only the sites in the filter's area — its countries, states and radius
    around its place (map_area.sql's rule); the miles of every location from the place within the radius (NaN
    beyond it), or None without a place."""
    if f.country:
        chosen &= store.site_country.among(f.country)
    if f.state:
        chosen &= store.site_state.among(f.state)
    place = f.place()
    if place is None:
        return None
    loc_miles: np.ndarray = store.loc_miles(place, f.radius_miles())
    chosen &= ~np.isnan(loc_miles)[store.site_loc]
    return loc_miles


def map_frames(store: FacetStore, f: Filters, db: Database, *, only_in_area: bool, point_limit: int,
               nearest_limit: int, grid_steps: tuple[float, ...]) -> MapFrames:
    """Summary, points or grid cells, nearest sites and country/state values of a filter's sites. The map of
    every trial and the first visitor's (the default filters) are computed once per store (one generation of
    the data) and then handed out as copies."""
    if not f.is_default() and (any(d.is_set(f) for d in FILTER_DEFS) or f.place() is not None):
        return _map_frames(store, f, db, only_in_area=only_in_area, point_limit=point_limit,
                           nearest_limit=nearest_limit, grid_steps=grid_steps)
    key = (f, only_in_area, point_limit, nearest_limit, grid_steps)
    world = store._world.get(key)
    if world is None:
        world = _map_frames(store, f, db, only_in_area=only_in_area, point_limit=point_limit,
                            nearest_limit=nearest_limit, grid_steps=grid_steps)
        if len(store._world) >= WORLD_MAPS_KEPT:
            store._world.clear()
        store._world[key] = world
    return replace(world, summary=dict(world.summary), points=world.points.copy(),
                   countries=world.countries.copy(), states=world.states.copy(), errors=dict(world.errors))


def _map_frames(store: FacetStore, f: Filters, db: Database, *, only_in_area: bool, point_limit: int,
                nearest_limit: int, grid_steps: tuple[float, ...]) -> MapFrames:
    mask = store.mask(f, db)
    place = f.place()
    chosen = mask[store.site_row]  # a site is on the map when its trial matches (and it lies in the area)
    loc_miles = _in_area(store, f, chosen) if only_in_area else None
    if place is not None and loc_miles is None:
        loc_miles = store.loc_miles(place, None)
    sites = np.flatnonzero(chosen).astype(np.int32)  # site positions (site-id order); 2.9M sites fit int32
    del chosen
    rows = store.site_row[sites]
    loc_sites = sites[store.site_loc[sites] != store.nloc]
    summary = {"sites": int(sites.size), "located": int(loc_sites.size), "trials": _count_distinct(rows, store.n),
               "trials_located": _count_distinct(store.site_row[loc_sites], store.n)}
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="map-values") as pool:
        # The country and state values do not depend on the points, nor some of a grid's columns on the others:
        # numpy lets go of the interpreter while it sorts and gathers, so the other core computes them meanwhile.
        countries = pool.submit(_country_values, store, sites, rows)
        states = pool.submit(_state_values, store, sites, rows)
        cell, points = _points(store, loc_sites, db, place, point_limit=point_limit, grid_steps=grid_steps,
                               pool=pool)
    nearest = None
    if place is not None and loc_miles is not None:
        chosen_ids = _nearest_ids(store, loc_sites, loc_miles[store.site_loc[loc_sites]], nearest_limit)
        found = _site_rows(db, chosen_ids, place).set_index("site_id", drop=False)
        cols = ["miles", "site_id", "nct_id", "facility", "city", "state", "country", "lat", "lon", "site_status",
                "trial_status", "title"]
        nearest = (found.loc[chosen_ids.tolist(), cols].reset_index(drop=True) if len(found)
                   else pd.DataFrame(columns=cols))
    return MapFrames(summary, cell, points, nearest, countries.result(), states.result())


def _points(store: FacetStore, loc_sites: np.ndarray, db: Database, place: geo.Place | None, *, point_limit: int,
            grid_steps: tuple[float, ...], pool: Executor) -> tuple[float | None, pd.DataFrame]:
    """The located sites as points when they are few, else in grid cells of the finest step that fits (else the
    coarsest); the step (None: points)."""
    if loc_sites.size <= point_limit:
        return None, _site_rows(db, store.site_id[loc_sites[:max(1, point_limit)]], place)
    locs = store.site_loc[loc_sites]
    used = np.zeros(store.nloc + 1, dtype=bool)
    used[locs] = True
    used_locs = np.flatnonzero(used).astype(np.int32)
    del used
    sample = used_locs[::max(1, used_locs.size // CELL_SAMPLE_SIZE)]
    for cell in grid_steps:
        if cell != grid_steps[-1] and _distinct_cells(store, sample, cell) > point_limit:
            continue  # a part of the positions already falls into too many cells: so does the whole
        cells, ncells = store.loc_cells(cell)
        if _count_distinct(cells[used_locs], ncells) <= point_limit:
            break
    return cell, _grid(store, loc_sites, locs, cells, ncells, pool)


def _nearest_ids(store: FacetStore, sites: np.ndarray, miles: np.ndarray, limit: int) -> np.ndarray:
    """Site ids of the `limit` nearest sites (ties by site id), without sorting them all."""
    k = min(limit, sites.size)
    if k == 0:
        return np.zeros(0, dtype=np.int64)
    near = np.flatnonzero(miles <= np.partition(miles, k - 1)[k - 1])
    order = np.lexsort((store.site_id[sites[near]], miles[near]))[:k]
    return store.site_id[sites[near[order]]].astype(np.int64)


def _site_rows(db: Database, ids: np.ndarray, place: geo.Place | None) -> pd.DataFrame:
    params = {"ids": [int(i) for i in ids], "near_lat": place.lat if place else None,
              "near_lon": place.lon if place else None, "earth_miles": geo.EARTH_RADIUS_MILES}
    return db.fetch_df(load_sql("facetstore_site_rows"), params, timeout_ms=LOOKUP_TIMEOUT_MS)


def _grid(store: FacetStore, sites: np.ndarray, locs: np.ndarray, cells: np.ndarray, ncells: int,
          pool: Executor) -> pd.DataFrame:
    """map_site_grid.sql in numpy, over located sites (in site-id order) and their positions, with each position's
    cell (FacetStore.loc_cells); the studies and the cities per cell counted by the `pool` meanwhile."""
    cols = ["lat", "lon", "sites", "trials", "status", "city", "country"]
    if sites.size == 0:
        return pd.DataFrame(columns=cols)
    site_cells = cells[locs]
    del cells
    used = np.zeros(ncells + 1, dtype=bool)
    used[site_cells] = True
    dense = np.cumsum(used, dtype=np.int32) - 1
    groups = dense[site_cells]
    ngroups = int(dense[-1]) + 1
    del site_cells, used, dense
    counted = pool.submit(_distinct_per_group, groups, store.site_row[sites], ngroups)
    cities = pool.submit(_group_mode, groups, store.site_city, sites, ngroups)
    n = np.bincount(groups, minlength=ngroups)
    sum_lat = np.bincount(groups, weights=np.rint(store.loc_lat[locs] * 1e6), minlength=ngroups)
    sum_lon = np.bincount(groups, weights=np.rint(store.loc_lon[locs] * 1e6), minlength=ngroups)
    status = _group_mode(groups, store.site_status, sites, ngroups)
    country = _group_mode(groups, store.site_country, sites, ngroups)
    first = np.full(ngroups, sites.size, dtype=np.int64)
    np.minimum.at(first, groups, np.arange(sites.size, dtype=np.int64))  # sites are in site-id order
    order = np.lexsort((store.site_id[sites[first]], -n)).tolist()
    lat_r, lon_r = _mean_rounded(sum_lat, n), _mean_rounded(sum_lon, n)
    trials, city = counted.result(), cities.result()
    return pd.DataFrame({"lat": [lat_r[i] for i in order], "lon": [lon_r[i] for i in order],
                         "sites": [int(n[i]) for i in order], "trials": [int(trials[i]) for i in order],
                         "status": [status[i] for i in order], "city": [city[i] for i in order],
                         "country": [country[i] for i in order]})


def _coded_values(codes: np.ndarray, labels: np.ndarray, rows: np.ndarray, name: str,
                  wanted: np.ndarray | None = None) -> pd.DataFrame:
    """name, sites, trials per code (map_country_values / map_state_values); only of the labels `wanted` (a flag
    per label) when given."""
    size = len(labels)
    n = np.bincount(codes, minlength=size)
    if wanted is not None:
        n[~wanted] = 0
    nz = np.flatnonzero(n)
    if nz.size == 0:
        return pd.DataFrame(columns=[name, "sites", "trials"])
    trials = _distinct_per_group(codes, rows, size)
    order = nz[np.lexsort((nz, -trials[nz]))]
    return pd.DataFrame({name: list(labels[order]), "sites": [int(x) for x in n[order]],
                         "trials": [int(x) for x in trials[order]]})


def _country_values(store: FacetStore, sites: np.ndarray, rows: np.ndarray) -> pd.DataFrame:
    coded = store.site_country
    return _coded_values(coded.codes[sites], coded.labels, rows, "country",
                         wanted=coded.lut(lambda v: v.strip(" ") != ""))


def _state_values(store: FacetStore, sites: np.ndarray, rows: np.ndarray) -> pd.DataFrame:
    country, state = store.site_country, store.site_state
    us = country.code_of("United States")
    pr = country.code_of("Puerto Rico")
    c = country.codes[sites]
    here = np.flatnonzero((c == us) | (c == pr))  # US and Puerto Rico sites only (a code of -1 matches none)
    sites, rows, c = sites[here], rows[here], c[here]
    s = state.codes[sites]
    named = state.lut(lambda v: v.strip(" ") != "")[s]
    in_us = (c == us) & named if us >= 0 else np.zeros(sites.size, dtype=bool)
    in_pr = c == pr if pr >= 0 else np.zeros(sites.size, dtype=bool)
    # Puerto Rico counts as its own "state" whatever the state column says.
    pr_code = state.code_of("Puerto Rico")
    labels = state.labels
    if pr_code < 0:
        labels = np.append(state.labels[:-1], ["Puerto Rico", None]).astype(object)
        pr_code = state.size - 1
    codes = np.where(in_pr, pr_code, s)
    keep = in_us | in_pr
    return _coded_values(codes[keep], labels, rows[keep], "state")


# ---- the Sites page --------------------------------------------------------------------------------
SITE_ORDERS = ("trials", "recruiting", "distance")  # how the Sites page ranks facility groups


@dataclass
class SiteFrames:
    """The raw frames of the Sites page, shaped as the feasibility_*.sql queries return them. Each group is named by
    its representative facility (`site_id`: the lowest facility id among its sites of the matching trials)."""

    groups: pd.DataFrame  # site_id, trials, recruiting, miles, point_id (lowest located facility id), in rank order
    details: pd.DataFrame  # site_id, kind ("phase", "sponsor", "investigator"), value, n (distinct trials), of (values
    # of that kind in the group): every phase, the first TOP_DETAILS sponsors and investigators
    totals: dict[str, int]  # groups, sites (with a name), unnamed (sites without a name)


GROUP_COLUMNS = ["site_id", "trials", "recruiting", "miles", "point_id"]
DETAIL_COLUMNS = ["site_id", "kind", "value", "n", "of"]
TOP_DETAILS = 3  # lead sponsors and investigators listed per group


def _recruiting(status: Coded) -> np.ndarray:
    """Per code of the sites' shown status: whether it says "recruiting" (SQL: upper(btrim(status)) = 'RECRUITING')."""
    return status.lut(lambda v: str(v).strip(" ").upper() == "RECRUITING")


def _first_of_pairs(groups: np.ndarray, rows: np.ndarray, n: int) -> np.ndarray:
    """True at the first site (in site order) of each (group, study) pair; never for a group below 0."""
    out = np.zeros(groups.size, dtype=bool)
    keep = np.flatnonzero(groups >= 0)
    key = groups[keep].astype(np.int64) * (n + 1) + rows[keep]
    order = np.argsort(key, kind="stable")
    sorted_key = key[order]
    out[keep[order[np.diff(sorted_key, prepend=-1) != 0]]] = True  # keys are never negative: the first counts
    return out


def site_frames(store: FacetStore, f: Filters, db: Database, place: geo.Place | None, *, order: str, limit: int,
                investigators: bool) -> SiteFrames:
    """The facility groups of the matching trials with the most trials (or recruiting trials, or nearest to the
    place), and the phases, lead sponsors and investigators of the first `limit` of them. Only facilities in the
    filter's area count (its countries, states, radius): a trial with a site in Japan lists its Japanese sites."""
    mask = store.mask(f, db)
    chosen = mask[store.site_row]
    left_out = chosen.copy() if f.country or f.state or f.near else None
    _in_area(store, f, chosen)  # only the facilities in the filter's area (country, state, radius)
    if left_out is not None:
        left_out &= ~chosen  # the matching trials' sites outside the area
    sites = np.flatnonzero(chosen).astype(np.int32)
    del chosen
    named = sites[store.site_group[sites] >= 0]
    totals = {"sites": int(named.size), "unnamed": int(sites.size - named.size)}
    del sites
    ng = store.n_site_groups
    g = store.site_group[named]
    rows = store.site_row[named]
    first, first_recruiting = store.site_pair_first[named], store.site_pair_recruiting[named]
    if left_out is not None and left_out.any():
        # The area may leave out a (group, study)'s first site and keep another of its sites: for the studies with
        # a site left out, the first sites are those among the sites kept.
        cut = np.zeros(store.n, dtype=bool)
        cut[store.site_row[left_out]] = True
        redo = np.flatnonzero(cut[rows])
        on = _recruiting(store.site_status)[store.site_status.codes[named[redo]]]
        first[redo] = _first_of_pairs(g[redo], rows[redo], store.n)
        first_recruiting[redo] = _first_of_pairs(np.where(on, g[redo], -1), rows[redo], store.n)
    trials = np.bincount(g[first], minlength=ng)
    recruiting = np.bincount(g[first_recruiting], minlength=ng)
    present = np.flatnonzero(trials)
    totals["groups"] = int(present.size)
    miles = np.full(ng, np.inf)
    located = store.site_loc[named] != store.nloc
    if place is not None:
        locs = store.site_loc[named[located]]
        site_miles = store.loc_miles(place, positions=locs)[locs]
        np.minimum.at(miles, g[located], site_miles)
    miles[np.isinf(miles)] = np.nan
    p_miles = miles[present]
    no_miles = np.isnan(p_miles)
    if order == "recruiting":
        ranked = np.lexsort((present, -trials[present], -recruiting[present]))
    elif order == "distance":
        ranked = np.lexsort((present, -trials[present], np.where(no_miles, 0.0, p_miles), no_miles))
    else:
        ranked = np.lexsort((present, -recruiting[present], -trials[present]))
    top = present[ranked[:max(0, int(limit))]]
    chosen = np.zeros(ng, dtype=bool)
    chosen[top] = True
    keep = chosen[g]
    s2, g2, rows2, loc2 = named[keep], g[keep], rows[keep], located[keep]
    firsts = first[keep]  # one site per (group, study): the details count each study once
    big = np.iinfo(np.int64).max
    rep = np.full(ng, big, dtype=np.int64)
    np.minimum.at(rep, g2, store.site_id[s2].astype(np.int64))
    point = np.full(ng, big, dtype=np.int64)
    np.minimum.at(point, g2[loc2], store.site_id[s2[loc2]].astype(np.int64))
    groups = pd.DataFrame({
        "site_id": rep[top].tolist(), "trials": trials[top].tolist(), "recruiting": recruiting[top].tolist(),
        "miles": miles[top].tolist(), "point_id": [None if p == big else int(p) for p in point[top].tolist()]},
        columns=GROUP_COLUMNS)
    details = [_group_counts(g2[firsts], rows2[firsts], store.phase_raw, rep, "phase", keep_null=True),
               _group_counts(g2[firsts], rows2[firsts], store.lead_sponsor, rep, "sponsor", keep_null=False,
                             top=TOP_DETAILS)]
    if investigators and s2.size:
        details.append(_investigators(db, store.site_id[s2], rep[g2], rows2))
    frames = [d for d in details if len(d)]
    detail = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=DETAIL_COLUMNS)
    return SiteFrames(groups, detail, totals)


def _group_counts(groups: np.ndarray, rows: np.ndarray, coded: Coded, rep: np.ndarray, kind: str, *,
                  keep_null: bool, top: int | None = None) -> pd.DataFrame:
    """Studies per (group, study value) from one row per (group, study): the groups' phases or lead sponsors; with
    `top`, only each group's first `top` values (most studies, then byte order), and `of` how many the group has."""
    if groups.size == 0:
        return pd.DataFrame(columns=DETAIL_COLUMNS)
    pg, codes = groups.astype(np.int64), coded.codes[rows]  # one row per (group, study): no duplicates to drop
    if not keep_null:
        pg, codes = pg[codes != coded.null], codes[codes != coded.null]
    keys, n = _runs(pg * coded.size + codes)
    group, code = keys // coded.size, keys % coded.size
    order = np.lexsort((code, -n, group))  # by group, then most studies, then the value's byte order (NULL last)
    group, code, n = group[order], code[order], n[order]
    starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    sizes = np.diff(np.r_[starts, group.size])
    rank = np.arange(group.size) - np.repeat(starts, sizes)
    of = np.repeat(sizes, sizes)
    keep = rank < top if top is not None else np.ones(group.size, dtype=bool)
    return pd.DataFrame({"site_id": rep[group[keep]].tolist(), "kind": kind, "value": list(coded.labels[code[keep]]),
                         "n": n[keep].tolist(), "of": of[keep].tolist()}, columns=DETAIL_COLUMNS)


def _investigators(db: Database, site_ids: np.ndarray, reps: np.ndarray, rows: np.ndarray) -> pd.DataFrame:
    """Investigators named at the chosen sites (ctgov.facility_investigators), distinct studies (of the sites) per
    group and name."""
    ids = [int(i) for i in site_ids]
    found = db.fetch_df(load_sql("feasibility_site_investigators"), {"ids": ids},
                        timeout_ms=LOOKUP_TIMEOUT_MS)
    if found.empty:
        return pd.DataFrame(columns=DETAIL_COLUMNS)
    rep_of = dict(zip(ids, [int(r) for r in reps], strict=True))
    row_of = dict(zip(ids, [int(r) for r in rows], strict=True))
    found["site_id"] = [rep_of[int(i)] for i in found["facility_id"]]
    found["study"] = [row_of[int(i)] for i in found["facility_id"]]
    n = found.groupby(["site_id", "value"], sort=False)["study"].nunique().reset_index(name="n")
    n["order"] = [str(v).encode("utf-8") for v in n["value"]]
    n = n.sort_values(["site_id", "n", "order"], ascending=[True, False, True], kind="stable")
    n["of"] = n.groupby("site_id")["value"].transform("size")
    n = n[n.groupby("site_id").cumcount() < TOP_DETAILS]
    return n.assign(kind="investigator")[DETAIL_COLUMNS].reset_index(drop=True)


if __name__ == "__main__" and sys.argv[1:2] == ["--build-cache"] and len(sys.argv) >= 5:
    # Through the package module, so the store's classes are services.dashboard.facetstore's, not __main__'s.
    from services.dashboard import facetstore as _module

    sys.exit(_module._build_cache_main(sys.argv[2:]))
