"""MeSH in the database: AACT's own ctgov.mesh_terms / ctgov.mesh_headings, and app.study_mesh (each study's
MeSH descriptors), built from the shipped vocabulary (services/vocab/mesh.py, data/mesh/).

- ctgov.mesh_terms: as AACT's MeshTerm.populate_from_file fills it from NLM's tree file — one row per tree number,
  qualifier = its top-level category ('C04'), mesh_term = the descriptor's heading, downcase_mesh_term = lower case;
  description stays NULL as in AACT's current loader (its older loader stored the heading's first word there).
- ctgov.mesh_headings: as AACT's MeshHeading ("MeSH Headings by Subcategory") — qualifier = a top-level category,
  heading = the category's name, subcategory = a descriptor under it. Only the categories whose names the shipped
  files carry (data/mesh/top_headings.csv: diseases C and psychiatry/psychology F); AACT's own file lists the
  headings new in one year, which the reshaped files cannot tell.
- app.area_descriptors: each therapeutic area's descriptors (services/vocab/areas.py), loaded with the MeSH
  tables.
- ctgov.study_mesh_terms and ctgov.therapeutic_area_terms: views of the two app tables in the schema the SQL
  console reads (sql/schema/075_mesh.sql), so the MeSH charts' SQL runs there.
- app.study_mesh: a study's descriptors from its browse_conditions rows (mesh-list, mesh-ancestor; heading by name)
  and from each condition name resolved by Mesh.resolve (source 'name': partial CSV records have names only).

The MeSH tables load once per MeSH data version (MESH_VERSION, app.meta 'mesh_tables_version'); app.study_mesh is
rebuilt when the derived tables' generation (app.meta 'facets_refreshed_at') or MESH_VERSION moved since it was built
(app.meta 'study_mesh_built'): at start, at the end of the sample load and after every import
(services/dashboard/engine.prepare_after_import).
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

from services.data.db import Database
from services.data.startup import PROGRESS, wait_until_quiet
from services.errors import TrialLandscapeError
from services.vocab import areas as area_vocab
from services.vocab import mesh as mesh_vocab

RULE = "study_mesh v1: browse by name (then entry term), names by Mesh.resolve (diseases)"
_FILES = ("descriptors.tsv.gz", "terms.tsv.gz", "top_headings.csv", "project_terms.csv", "spellings.csv",
          "attribute_trees.csv", "therapeutic_areas.csv", "extra_parents.csv", "eponym_heads.csv")


def _version() -> str:
    digest = hashlib.sha256(RULE.encode())
    for name in _FILES:
        digest.update(name.encode() + b"\0" + (Path(mesh_vocab.DATA_DIR) / name).read_bytes())
    return digest.hexdigest()[:16]


MESH_VERSION = _version()
_ready: set[str] = set()  # databases (by URL) of this process whose app.study_mesh is built
_lock = threading.Lock()


# Set while SQL is written for the console ("Show the SQL"), which reads schema ctgov only: filters then read
# the base tables as they do on a read-only AACT.
_base_only: contextvars.ContextVar[bool] = contextvars.ContextVar("study_mesh_base_only", default=False)


def built() -> bool:
    """Whether this process's trial database has app.study_mesh built, whatever base_tables_only() says: the
    MeSH charts then read it through the ctgov views (sql/queries/facet_conditions_mesh.sql), which the SQL
    console reads too."""
    return bool(_ready)


def console_view() -> str | None:
    """Within base_tables_only() on a database whose app.study_mesh is built, its ctgov view that the SQL
    console may read (ctgov.study_mesh_terms): a condition filter's shown SQL finds what the page finds."""
    return "ctgov.study_mesh_terms" if _base_only.get() and _ready else None


def stored() -> bool:
    """Whether this process's trial database has app.study_mesh (the condition filter reads it; else it matches on
    the base tables: a read-only AACT without the app schema)."""
    return bool(_ready) and not _base_only.get()


@contextlib.contextmanager
def base_tables_only() -> Iterator[None]:
    """Within the block, stored() is False: SQL written meanwhile reads AACT's base tables only."""
    token = _base_only.set(True)
    try:
        yield
    finally:
        _base_only.reset(token)


def detect(db: Database) -> bool:
    """Note whether `db` has a built app.study_mesh (a process that did not build it: a benchmark, a CLI)."""
    try:
        built = db.fetch_value("SELECT to_regclass('app.study_mesh') IS NOT NULL AND to_regclass('app.meta') IS NOT "
                               "NULL AND EXISTS (SELECT 1 FROM app.meta WHERE key = 'study_mesh_built')",
                               timeout_ms=5_000) is True
    except TrialLandscapeError:
        return False
    if built:
        with _lock:
            _ready.add(db.url)
    return built


def warm_up(quiet_s: float = 5.0) -> threading.Thread:
    """Load the vocabulary in the background once the pages are quiet, so the first typed condition of this process
    does not wait for it (~3.6 s alone, several times that on a busy machine)."""
    def work() -> None:
        wait_until_quiet(quiet_s, at_most_s=60.0)
        mesh_vocab.vocabulary()

    thread = threading.Thread(target=work, name="mesh-vocabulary", daemon=True)
    thread.start()
    return thread


# ---- AACT's MeSH tables ----------------------------------------------------------------------------------
def mesh_term_rows(m: mesh_vocab.Mesh) -> list[tuple[str, str, None, str, str]]:
    """ctgov.mesh_terms rows (qualifier, tree_number, description, mesh_term, downcase_mesh_term) in tree order."""
    pairs = sorted((t, d.name) for d in m.descriptors.values() for t in d.trees)
    return [(t.split(".")[0], t, None, name, name.lower()) for t, name in pairs]


def mesh_heading_rows(m: mesh_vocab.Mesh) -> list[tuple[str, str, str]]:
    """ctgov.mesh_headings rows (qualifier, heading, subcategory): every descriptor under each named category."""
    names = {r["tree_number"]: r["name"] for r in mesh_vocab.read_csv("top_headings.csv")}
    rows = {(t.split(".")[0], d.name) for d in m.descriptors.values() for t in d.trees
            if "." in t and t.split(".")[0] in names}
    return [(q, names[q], sub) for q, sub in sorted(rows)]


def area_descriptor_rows() -> list[tuple[str, str, str]]:
    """app.area_descriptors rows (area, tree_number, descriptor_ui): each area's heading and every narrower
    descriptor, as the in-process engine and the area filter read them (Area.descriptors)."""
    return [(a.name, a.tree_number, ui) for a in area_vocab.areas() for ui in sorted(a.descriptors())]


def _meta_sql(key: str, value_sql: str) -> str:
    return (f"INSERT INTO app.meta (key, value) VALUES ('{key}', {value_sql}) "
            "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()")


def ensure_mesh_tables(db: Database) -> bool:
    """Load ctgov.mesh_terms and ctgov.mesh_headings unless this MeSH version is loaded; True when it loaded."""
    current = db.fetch_value("SELECT value FROM app.meta WHERE key = 'mesh_tables_version'", timeout_ms=10_000)
    # app.mesh_descriptors and app.area_descriptors came later (issue 38): a database loaded before gets
    # them now.
    named = db.fetch_value("SELECT EXISTS (SELECT 1 FROM app.mesh_descriptors) "
                           "AND EXISTS (SELECT 1 FROM app.area_descriptors)", timeout_ms=10_000)
    if current == MESH_VERSION and named:
        return False
    with PROGRESS.stage("Loading MeSH 2024 into ctgov.mesh_terms and ctgov.mesh_headings"):
        m = mesh_vocab.vocabulary()
        db.replace_rows({}, {
            "ctgov.mesh_terms": (("qualifier", "tree_number", "description", "mesh_term", "downcase_mesh_term"),
                                 mesh_term_rows(m)),
            "ctgov.mesh_headings": (("qualifier", "heading", "subcategory"), mesh_heading_rows(m)),
            "app.mesh_descriptors": (("descriptor_ui", "name"),
                                     sorted((d.ui, d.name) for d in m.descriptors.values())),
            "app.area_descriptors": (("area", "tree_number", "descriptor_ui"), area_descriptor_rows())},
            before=["TRUNCATE ctgov.mesh_terms, ctgov.mesh_headings, app.mesh_descriptors, "
                    "app.area_descriptors RESTART IDENTITY"],
            after=[_meta_sql("mesh_tables_version", f"'{MESH_VERSION}'"),
                   "ANALYZE ctgov.mesh_terms", "ANALYZE ctgov.mesh_headings"])
    return True


# ---- each study's descriptors ------------------------------------------------------------------------------
def study_mesh_rows(m: mesh_vocab.Mesh, browse: Iterable[tuple[str, str, str]],
                    names: Iterable[tuple[str, str]]) -> list[tuple[str, str, str]]:
    """(nct_id, descriptor_ui, source) rows: browse_conditions (nct_id, mesh_term, mesh_type) by heading (else as an
    entry term), condition names (nct_id, name) by Mesh.resolve; each name resolved once."""
    out: set[tuple[str, str, str]] = set()
    by_term: dict[str, frozenset[str]] = {}
    for nct, term, kind in browse:
        if not term or kind not in ("mesh-list", "mesh-ancestor"):
            continue
        if term not in by_term:
            ui = m.by_name.get(term.lower())
            by_term[term] = frozenset((ui,)) if ui else m.lookup(term, None)
        out.update((nct, ui, kind) for ui in by_term[term])
    resolved: dict[str, frozenset[str]] = {}
    for nct, name in names:
        if not name:
            continue
        if name not in resolved:
            resolved[name] = m.resolve(name)
        out.update((nct, ui, "name") for ui in resolved[name])
    return sorted(out)


def _stamp_sql() -> str:
    return "coalesce((SELECT value FROM app.meta WHERE key = 'facets_refreshed_at'), '') || '|' || '" + MESH_VERSION + "'"


def refresh(db: Database) -> int:
    """Rebuild app.study_mesh from the current ctgov tables; the number of rows."""
    # The stamp is read before the rows: an import in between leaves it older than the data, so the next check
    # rebuilds again rather than call a stale table current.
    stamp = str(db.fetch_value(f"SELECT {_stamp_sql()}", timeout_ms=10_000))
    with PROGRESS.stage("Mapping every study to its MeSH headings", unit="rows") as advance:
        m = mesh_vocab.vocabulary()
        browse = [(str(r["nct_id"]), r["mesh_term"], r["mesh_type"]) for r in db.fetch_rows(
            "SELECT nct_id, mesh_term, mesh_type FROM ctgov.browse_conditions WHERE mesh_term IS NOT NULL",
            timeout_ms=600_000)]
        names = [(str(r["nct_id"]), r["name"]) for r in db.fetch_rows(
            "SELECT nct_id, name FROM ctgov.conditions WHERE name IS NOT NULL", timeout_ms=600_000)]
        rows = study_mesh_rows(m, browse, names)
        advance(len(rows))
        db.replace_rows({}, {"app.study_mesh": (("nct_id", "descriptor_ui", "source"), rows)},
                        before=["TRUNCATE app.study_mesh"],
                        after=[_meta_sql("study_mesh_built", "'" + stamp.replace("'", "''") + "'"),
                               "ANALYZE app.study_mesh"])
    with _lock:
        _ready.add(db.url)
    return len(rows)


def ensure_built(db: Database) -> bool:
    """Load the MeSH tables and (re)build app.study_mesh when they are missing or stale; True when it built."""
    loaded = ensure_mesh_tables(db)
    current = db.fetch_value(f"SELECT (SELECT value FROM app.meta WHERE key = 'study_mesh_built') = {_stamp_sql()}",
                             timeout_ms=10_000)
    if current is True:
        with _lock:
            _ready.add(db.url)
        return loaded
    refresh(db)
    return True
