"""Saved views that report what changed: a named filter set and page, watched across imports.

A view's baseline is the snapshot generation it was last opened at (sql/queries/snapshot_studies.sql, written by
every import in the import's own transaction) and the NCT ids that matched it then. Its change report lists, among
the trials that match it now or matched it at the baseline, those whose watched fields differ between the baseline
and the latest generation: new trials (not in the data at the baseline), status changes, results newly posted and
new sites in the watched countries (the view's own country, else its country filter). Changes to other fields
(phase, sponsor, conditions, …) are not reported. When the data was changed by a route that keeps no snapshot (a
restore, `synth`, a read-only AACT), the report says it cannot tell instead of listing nothing.

A saved view never holds a patient's answers: the caller names those fields (`without`) and they are reset to
their defaults before anything is stored. Saved views live in the database, so everyone using it shares them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from typing import Any
from urllib.parse import parse_qs, urlencode

from services.dashboard.engine import as_cte, base_select, ids_select, nct_texts
from services.dashboard.filters import Filters, is_view_param, where_sql
from services.data.db import Database, load_sql
from services.data.normalize import label
from services.errors import BadInput, QueryFailed
from services.inert import CTGOV_STUDY
from services.trials import plural

MAX_NAME = 80  # characters of a view's name
MAX_VIEWS = 200  # saved views in one database
PAGES = ("Explore", "Compare", "Map", "Sites", "Timeline", "Trials", "Assistant")  # with the filter sidebar
KINDS = ("new_trial", "status", "results", "sites", "removed")
KIND_TITLES = {"new_trial": "New trials", "status": "Status changes", "results": "Results posted",
               "sites": "New sites", "removed": "No longer in the data"}
_COUNTED = {"new_trial": ("new trial", "new trials"), "status": ("status change", "status changes"),
            "results": ("trial with results posted", "trials with results posted"),
            "sites": ("trial with new sites", "trials with new sites"),
            "removed": ("trial no longer in the data", "trials no longer in the data")}
ITEM_LIMIT = 200  # changes listed per kind (the counts are always complete)


@dataclass(frozen=True)
class SavedView:
    """One saved view as stored."""

    id: int
    name: str
    query: str  # the filters as a share-link query string
    page: str
    view_query: str  # the page's view settings (map mode, sort, …) as a query string
    watch_country: str | None
    baseline: int | None
    opened_at: datetime | None
    created_at: datetime

    def filters(self) -> Filters:
        """The view's filters (notices about stored values no longer understood are dropped)."""
        return Filters.from_query(parse_qs(self.query, keep_blank_values=False))[0]

    def describe(self) -> list[str]:
        """The view's filters in words, as stored (checked when saved; no place look-up, so a sidebar listing many
        views never loads the gazetteer)."""
        return Filters.parsed(parse_qs(self.query, keep_blank_values=False))[0].describe()

    def view_params(self) -> dict[str, list[str]]:
        """The page's view settings as URL parameters."""
        return {k: v for k, v in parse_qs(self.view_query).items() if is_view_param(k)}

    def countries(self) -> tuple[str, ...]:
        """The countries whose new sites the report lists: the one chosen on the view, else its country filter."""
        return (self.watch_country,) if self.watch_country else self.filters().country

    def link(self) -> str:
        """The view as a page path with its query (what the share link would hold)."""
        query = "&".join(q for q in (self.query, self.view_query) if q)
        return f"{self.page}?{query}" if query else self.page


@dataclass(frozen=True)
class Change:
    """One change of one trial."""

    nct_id: str
    kind: str  # one of KINDS
    title: str
    before: str | None = None
    after: str | None = None
    country: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "app_path": f"Trials?nct={self.nct_id}", "url": CTGOV_STUDY + self.nct_id}


@dataclass(frozen=True)
class ChangeReport:
    """What changed in a view between its baseline and the latest snapshot (or why that cannot be told)."""

    view: SavedView
    known: bool
    reason: str = ""  # why it cannot be told (known=False)
    since: datetime | None = None  # when the baseline generation was taken
    baseline: int | None = None
    latest: int | None = None
    counts: dict[str, int] = field(default_factory=dict)
    changes: tuple[Change, ...] = ()

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def summary(self) -> str:
        """One line: the counts by kind, "no changes", or "cannot tell"."""
        if not self.known:
            return "cannot tell what changed"
        if not self.total:
            return "no changes"
        return ", ".join(f"{n:,} {_COUNTED[k][n != 1]}" for k, n in self.counts.items() if n)

    def as_dict(self) -> dict[str, Any]:
        v = self.view
        return {"id": v.id, "name": v.name, "page": v.page, "filters": v.filters().describe(), "link": v.link(),
                "watch_countries": list(v.countries()), "known": self.known, "reason": self.reason or None,
                "since": self.since, "baseline_generation": self.baseline, "latest_generation": self.latest,
                "opened_at": v.opened_at, "counts": self.counts, "summary": self.summary(),
                "changes": [c.as_dict() for c in self.changes]}


def clean_name(name: str) -> str:
    """A view name as stored: one line, no control characters, at most MAX_NAME characters; BadInput when empty."""
    text = " ".join("".join(c for c in str(name) if c.isprintable() or c.isspace()).split())
    if not text:
        raise BadInput("Give the view a name.")
    return text[:MAX_NAME]


def _view(row: Mapping[str, Any]) -> SavedView:
    return SavedView(int(row["id"]), str(row["name"]), str(row["query"]), str(row["page"]), str(row["view_query"]),
                     row["watch_country"], row["baseline"], row["opened_at"], row["created_at"])


def list_views(app_db: Database) -> list[SavedView]:
    """Every saved view, by name."""
    return [_view(r) for r in app_db.fetch_rows(load_sql("saved_views_list"))]


def get_view(app_db: Database, view_id: int) -> SavedView | None:
    """One saved view by id (None when it was deleted)."""
    return next((v for v in list_views(app_db) if v.id == view_id), None)


def saveable(f: Filters, without: Iterable[str] = ()) -> Filters:
    """The filters with the named fields (a patient's answers) back at their defaults: what a view may store."""
    default = Filters()
    fields = [name for name in without if hasattr(default, name)]
    if "near" in fields:  # the radius and its unit belong to the place
        fields += ["radius", "unit"]
    return replace(f, **{name: getattr(default, name) for name in fields})


def save_view(db: Database, name: str, f: Filters, *, page: str = "Explore",
              view_params: Mapping[str, Sequence[str]] | None = None, watch_country: str | None = None,
              without: Iterable[str] = (), app_db: Database | None = None) -> SavedView:
    """Save (or replace, by name) a view and take its baseline now. `without`: the filter fields holding a patient's
    answers, never stored. `db` is the trial database (snapshots), `app_db` where views live (default: the same)."""
    app_db = app_db or db
    if page not in PAGES:
        raise BadInput(f"not a page: {page[:40]!r}.")
    clean = clean_name(name)
    names = {v.name.lower() for v in list_views(app_db)}  # a name saved again replaces its view
    if len(names) >= MAX_VIEWS and clean.lower() not in names:
        raise BadInput(f"There are already {MAX_VIEWS} saved views; delete one first.")
    params = {k: list(v) for k, v in (view_params or {}).items() if is_view_param(k) and k != "session"}
    country = (watch_country or "").strip()[:120] or None
    rows = app_db.fetch_rows(load_sql("saved_view_save"), {
        "name": clean, "query": saveable(f, without).query_string(), "page": page,
        "view_query": urlencode([(k, x) for k, xs in params.items() for x in xs]), "watch_country": country})
    view = get_view(app_db, int(rows[0]["id"]))
    assert view is not None
    return mark_opened(db, view, app_db=app_db)


def delete_view(db: Database, view_id: int, *, app_db: Database | None = None) -> None:
    """Delete a saved view, and the snapshot generations only it still needed."""
    (app_db or db).execute(load_sql("saved_view_delete"), {"id": int(view_id)})
    _prune(db)


def mark_opened(db: Database, view: SavedView, *, app_db: Database | None = None) -> SavedView:
    """Move the view's baseline to the latest snapshot (the trials matching it now); returns the view as stored.

    While the data is not the latest snapshot's (changed by a route that keeps none) the baseline stays where it
    is, so the next import's snapshot is compared with it."""
    app_db = app_db or db
    if app_db is db and not db.read_only:
        select, params, stamp = _matched_now(db, view.filters())
        app_db.fetch_rows(f"{as_cte(select)}\n{load_sql('saved_view_mark')}",
                          {**params, "id": view.id, "stamp": stamp}, timeout_ms=120_000)
    else:  # the views live apart from the trial data (a read-only AACT): no snapshot to stand on
        app_db.execute("UPDATE app.saved_views SET opened_at = now() WHERE id = :id", {"id": view.id})
    _prune(db)
    found = get_view(app_db, view.id)
    return found if found is not None else view


def _matched_now(db: Database, f: Filters) -> tuple[str, dict[str, Any], str | None]:
    """SELECT of the NCT ids matching f now, its parameters, and the derived tables' stamp it was computed from.

    The in-process engine's ids when its store is loaded and current (a fraction of a second at registry scale);
    else SQL on the base tables, which the marking statement then reads in its own snapshot (stamp None)."""
    store = _current_store(db)
    if store is not None:
        return *ids_select(nct_texts(store.nct[store.mask(f, db)])), store.refreshed_at
    return *base_select(f), None


def _current_store(db: Database) -> Any:
    """The in-process engine's store when it is loaded and describes the data as it is now, else None."""
    from services.dashboard import facetstore
    from services.dashboard.engine import engine_for

    eng = engine_for(db)
    # A server answers from SQL while its store loads in the background; a command loads it (or maps its cache).
    if eng.kind != "memory" or (getattr(eng, "serve_sql_while_loading", False) and eng.loading()):
        return None
    store = facetstore.store_for(db)
    current = db.fetch_value("SELECT value FROM app.meta WHERE key = 'facets_refreshed_at'")
    return store if store.refreshed_at == current else None


def _prune(db: Database) -> None:
    if not db.read_only:
        db.execute_script(load_sql("prune_snapshots"), timeout_ms=120_000)


# ---- the change report ------------------------------------------------------------------------------
@dataclass(frozen=True)
class SnapshotState:
    """The latest snapshot generation and whether the data is still what it recorded."""

    latest: int | None
    taken_at: datetime | None
    current: bool
    reason: str = ""


def snapshot_state(db: Database) -> SnapshotState:
    """Whether change reports can be told on this database now, and against which generation."""
    try:
        row = db.fetch_rows(load_sql("snapshot_state"))[0]
    except QueryFailed:  # a database without the app schema (a read-only AACT) has no snapshots
        return SnapshotState(None, None, False, "this database keeps no snapshots (it has no app schema, e.g. a "
                                                "read-only AACT), so what changed cannot be told")
    if row["generation"] is None:
        return SnapshotState(None, None, False, "no import has recorded a snapshot in this database yet (the data "
                                                "was loaded by a route that keeps none, such as synth or a restore)")
    if row["facets_stamp"] != row["current_stamp"] or int(row["studies"]) != int(row["current_studies"]):
        return SnapshotState(int(row["generation"]), row["taken_at"], False,
                             "the data was changed after the last snapshot by a route that records none (not "
                             "python -m services import), so what changed since then cannot be told; the next "
                             "import records a new snapshot")
    return SnapshotState(int(row["generation"]), row["taken_at"], True)


def _sites(countries: Sequence[str] | None, counts: Sequence[int] | None) -> dict[str, int]:
    return dict(zip(countries or (), counts or (), strict=False))


def _status(value: str | None) -> str:
    return label("status", value) if value else "not given"


def _matching(db: Database, f: Filters, ids: list[str]) -> set[str]:
    if not ids:
        return set()
    store = _current_store(db)
    if store is not None:  # the in-process engine's mask: a fraction of a second whatever the filters
        return set(nct_texts(store.nct[store.mask(f, db)])).intersection(ids)
    parts = where_sql(f)
    parts.add("s.nct_id = ANY(CAST(:only_ids AS text[]))", only_ids=ids)
    rows = db.fetch_rows(f"SELECT s.nct_id FROM ctgov.studies s WHERE {parts.sql()}", parts.params,
                         timeout_ms=60_000)
    return {str(r["nct_id"]) for r in rows}


def change_report(db: Database, view: SavedView, *, app_db: Database | None = None,
                  state: SnapshotState | None = None, limit: int = ITEM_LIMIT) -> ChangeReport:
    """What changed in a view since it was last opened (its baseline) up to the latest snapshot."""
    app_db = app_db or db
    state = state or snapshot_state(db)
    if not state.current:
        return ChangeReport(view, False, state.reason, latest=state.latest)
    if view.baseline is None:
        return ChangeReport(view, False, "this view was last opened when the data had no current snapshot; open it "
                                         "to watch it from the current import on", latest=state.latest)
    base = db.fetch_rows(load_sql("snapshot_generation"), {"generation": view.baseline})
    if not base:
        return ChangeReport(view, False, "the snapshot this view was last opened at is no longer kept; open it to "
                                         "watch it from the current import on", latest=state.latest)
    since = base[0]["taken_at"]
    assert state.latest is not None
    if view.baseline >= state.latest:
        return ChangeReport(view, True, since=since, baseline=view.baseline, latest=state.latest,
                            counts=dict.fromkeys(KINDS, 0))
    rows = db.fetch_rows(load_sql("snapshot_changes"), {"base": view.baseline, "latest": state.latest},
                         timeout_ms=120_000)
    ids = [str(r["nct_id"]) for r in rows]
    now = _matching(db, view.filters(), ids)
    # Only a trial that does not match now needs the baseline's list (did it match then?).
    gone = [n for n in ids if n not in now]
    then = {str(r["nct_id"]) for r in app_db.fetch_rows(load_sql("saved_view_baseline_members"),
                                                         {"id": view.id, "ids": gone})} if gone else set()
    watched = view.countries()
    found: list[tuple[str, str, str | None, str | None, str | None]] = []  # nct, kind, before, after, country
    for r in rows:
        nct = str(r["nct_id"])
        # has_results is never NULL in a version (refresh_study_facets computes it), so NULL means no version.
        existed, exists = r["has_results_before"] is not None, r["has_results_after"] is not None
        if not existed and exists:
            if nct in now:
                found.append((nct, "new_trial", None, _status(r["status_after"]), None))
            continue
        if existed and not exists:
            if nct in then:
                found.append((nct, "removed", _status(r["status_before"]), None, None))
            continue
        if nct not in now and nct not in then:
            continue
        if r["status_before"] != r["status_after"]:
            found.append((nct, "status", _status(r["status_before"]), _status(r["status_after"]), None))
        if not r["has_results_before"] and r["has_results_after"]:
            posted = r["results_posted_after"]
            found.append((nct, "results", None, f"first posted {posted}" if posted else "results reported", None))
        if watched and nct in now:
            before = _sites(r["countries_before"], r["country_sites_before"])
            after = _sites(r["countries_after"], r["country_sites_after"])
            for country in watched:
                if after.get(country, 0) > before.get(country, 0):
                    found.append((nct, "sites", plural(before.get(country, 0), "site"),
                                  plural(after.get(country, 0), "site"), country))
    counts = {k: sum(1 for c in found if c[1] == k) for k in KINDS}
    listed = [c for k in KINDS for c in [c for c in found if c[1] == k][:limit]]
    titles = {str(r["nct_id"]): str(r["brief_title"] or "") for r in db.fetch_rows(
        load_sql("saved_view_titles"), {"ids": sorted({c[0] for c in listed})})} if listed else {}
    changes = tuple(Change(n, k, titles.get(n, ""), b, a, c) for n, k, b, a, c in listed)
    return ChangeReport(view, True, since=since, baseline=view.baseline, latest=state.latest, counts=counts,
                        changes=changes)


def watch(db: Database, *, app_db: Database | None = None, mark_seen: bool = False,
          limit: int = ITEM_LIMIT) -> dict[str, Any]:
    """The change report of every saved view (for `python -m services watch`); mark_seen moves every baseline."""
    app_db = app_db or db
    state = snapshot_state(db)
    reports = [change_report(db, v, app_db=app_db, state=state, limit=limit) for v in list_views(app_db)]
    if mark_seen:
        for report in reports:
            mark_opened(db, report.view, app_db=app_db)
    return {"latest_generation": state.latest, "latest_taken_at": state.taken_at, "data_current": state.current,
            "reason": state.reason or None, "marked_seen": mark_seen, "views": [r.as_dict() for r in reports]}
