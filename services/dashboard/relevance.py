"""The relevance order of the matching trials for a condition text, the same for both engines.

Two rankings of the matching trials are fused by reciprocal rank fusion (RRF, k = 60):
- the *text rank*: PostgreSQL full-text `ts_rank` of each trial's weighted document (title and condition names
  A, keywords and its own MeSH terms B, brief summary C; app.study_search, or built on the fly from ctgov) against
  a query made of the typed words and the names of the MeSH headings the text resolves to (condition.Concept),
  so "NSCLC" and "non-small cell lung cancer" ask exactly the same query;
- the *concept score*: how the trial's own headings match the concept — a condition name resolving to one of its
  descriptors (2) plus the share of its named headings that do (0–1, a trial about this condition above one
  listing it among many), one of its own MeSH terms (1), a MeSH ancestor AACT added (0.5), a keyword (0.5);
  read from app.study_mesh where the database has it, else from ctgov's names and headings as written.
Every matching trial has a concept score (it matched through one of those terms), only some have a text rank, so
the fused score — 1/(k + concept rank) + 1/(k + text rank) when there is one — exists for every candidate, and the
gate (used by the assistant's search) is on it: of n candidates, a trial passes when its fused score is at least
2/(k + n), what one ranked last in both lists would score — so it passes with any text hit, or without one when it
is in the top half of the concept ranking; a trial with no text evidence and a weak concept match is left out.
"""

from __future__ import annotations

import re
from typing import Any

from services.dashboard import condition
from services.data import studymesh
from services.data.db import Database, load_sql
from services.vocab import mesh as mesh_vocab

RELEVANCE = "relevance"  # the sort's name (Trials table, URL `sort=relevance`)
RRF_K = 60.0
TIMEOUT_MS = 60_000
_LEXEME = re.compile(r"[^0-9a-z\u00c0-\u024f]+")


def text_of(f: Any) -> str | None:
    """The text a filter ranks by: its condition (None when it selects nothing)."""
    text = getattr(f, "condition", None)
    return text if text and condition.expand(text).searchable else None


MAX_QUERY_NAMES = 60  # heading and entry-term names of the concept in the text query


def _query_names(concept: condition.Concept) -> list[str]:
    """The typed text, then the named headings' entry terms, then the narrower headings (capped)."""
    if not concept.named:
        return [concept.text]
    m = mesh_vocab.vocabulary()
    names = [concept.text]
    for u in concept.named:
        names += [m.name(u), *m.entry_terms.get(u, ())]
    names += sorted(m.name(u) for u in concept.descriptors - set(concept.named))
    return list(dict.fromkeys(names))[:MAX_QUERY_NAMES]


def tsquery(text: str) -> str:
    """to_tsquery text of a condition: one group per name (all its words, each word in its plural forms), OR-ed;
    built from folded words with every character but letters and digits removed, so nothing typed can change the
    query's syntax. Sorted, so equal concepts give the same query."""
    groups: set[str] = set()
    for name in _query_names(condition.expand(text)):
        parts = []
        for word in dict.fromkeys(condition.words(name)):
            members = sorted({m for m in (_LEXEME.sub("", f) for f in condition.forms(word)) if m})
            if members:
                parts.append("(" + " | ".join(members) + ")" if len(members) > 1 else members[0])
        if parts:
            groups.add(" & ".join(sorted(parts)))
    return " | ".join(f"({g})" for g in sorted(groups))


# The concept score from its parts (hit/share/own/ancestor/keyword), rounded so both forms below tie alike.
_SCORE = ("round(CAST(2 * {hit}::int + coalesce({share}, 0) + {own}::int + 0.5 * {ancestor}::int"
          " + 0.5 * {keyword}::int AS numeric), 6)")


# The text rank of a document d against the query q (both forms below), with the query made once.
_TEXT_RANK = "ts_rank('{0.1, 0.2, 0.4, 1.0}', d.doc, q.query, 1)"
_QUERY = "(SELECT to_tsquery('english', CAST(:tsq AS text)) AS query) q"


def _concept_parts(concept: condition.Concept, params: dict[str, Any], *, stored: bool) -> str:
    """LEFT JOIN LATERALs on m.nct_id giving c.hit, c.share, b.own, b.ancestor and k.keyword."""
    keyword = condition.term_match_sql("x.downcase_name", concept, params, "rel", heading=False)
    kw = (" LEFT JOIN LATERAL (SELECT bool_or(" + keyword + ") AS keyword FROM ctgov.keywords x"
          " WHERE x.nct_id = m.nct_id AND x.downcase_name IS NOT NULL) k ON true")
    if stored and concept.named:
        params["rel_uis"] = sorted(concept.descriptors)
        hit = "x.descriptor_ui = ANY(CAST(:rel_uis AS text[]))"
        return (" LEFT JOIN LATERAL (SELECT bool_or(x.source = 'name' AND " + hit + ") AS hit,"
                " (count(DISTINCT x.descriptor_ui) FILTER (WHERE x.source = 'name' AND " + hit + "))::float8"
                " / nullif(count(DISTINCT x.descriptor_ui) FILTER (WHERE x.source = 'name'), 0) AS share,"
                " bool_or(x.source = 'mesh-list' AND " + hit + ") AS own,"
                " bool_or(x.source = 'mesh-ancestor' AND " + hit + ") AS ancestor"
                " FROM app.study_mesh x WHERE x.nct_id = m.nct_id) c ON true"
                " CROSS JOIN LATERAL (SELECT c.own, c.ancestor) b" + kw)
    cond = condition.term_match_sql("x.downcase_name", concept, params, "rel", heading=False)
    mesh = condition.term_match_sql("x.downcase_mesh_term", concept, params, "rel", heading=True)
    return (f" LEFT JOIN LATERAL (SELECT bool_or({cond}) AS hit, avg(({cond})::int)::float8 AS share"
            " FROM ctgov.conditions x WHERE x.nct_id = m.nct_id AND x.downcase_name IS NOT NULL) c ON true"
            f" LEFT JOIN LATERAL (SELECT bool_or(x.mesh_type = 'mesh-list' AND ({mesh})) AS own,"
            f" bool_or(x.mesh_type <> 'mesh-list' AND ({mesh})) AS ancestor"
            " FROM ctgov.browse_conditions x WHERE x.nct_id = m.nct_id AND x.downcase_mesh_term IS NOT NULL) b"
            " ON true" + kw)


def scored_cte(text: str, params: dict[str, Any], *, stored: bool) -> str:
    """`, scored AS (…)`: every matching trial's (CTE m) concept score and text rank (NULL: no text hit), the input
    of relevance_order.sql, materialised as three narrow columns so its sorts stay in memory.

    Stored: the documents of app.study_search, else made from ctgov on the fly. The concept score reads the headings
    of app.study_mesh where the database has it (as the condition filter does), else ctgov's names and headings as
    written (a database without derived tables)."""
    concept = condition.expand(text)
    score = _SCORE.format(hit="coalesce(c.hit, false)", share="c.share", own="coalesce(b.own, false)",
                          ancestor="coalesce(b.ancestor, false)", keyword="coalesce(k.keyword, false)")
    parts = _concept_parts(concept, params, stored=studymesh.stored())  # the filter's source, either documents
    docs = "app.study_search d" if stored else "docs d"
    head = "" if stored else f", docs AS ({load_sql('search_documents')}\n)"
    return (f"{head}, scored AS MATERIALIZED (SELECT m.nct_id, {score} AS concept_score, t.r AS text_rank FROM m"
            f"{parts} LEFT JOIN (SELECT d.nct_id, {_TEXT_RANK} AS r FROM {docs}, {_QUERY} WHERE d.doc @@ q.query"
            f" AND d.nct_id IN (SELECT nct_id FROM m)) t ON t.nct_id = m.nct_id)")


def stored_documents(db: Database) -> bool:
    """Whether app.study_search is built and current: built no earlier than the term dictionary whose ids it holds
    (an import rebuilds both in one transaction; a dictionary rebuilt on its own would leave its ids stale). Else
    the documents are made from ctgov on the fly."""
    return db.fetch_value(load_sql("search_documents_current"), timeout_ms=5_000) is True


def ranked(db: Database, text: str, cte: str, params: dict[str, Any], *, descending: bool = True, limit: int,
           offset: int = 0, gated: bool = False, stored: bool | None = None) -> list[dict[str, Any]]:
    """Rows of relevance_order.sql over the CTE `cte` (WITH m AS …) of matching trials: nct_id, total, candidates,
    fused, text_rank, concept_score, best first when descending. `stored` (default: whether app.study_search is
    built) reads the stored documents, else makes them from ctgov."""
    p = dict(params)
    if stored is None:
        stored = stored_documents(db)
    scored = scored_cte(text, p, stored=stored)
    p.update({"tsq": tsquery(text), "k": RRF_K, "gated": gated, "descending": descending,
              "limit": max(1, int(limit)), "offset": max(0, int(offset))})
    sql = f"{cte}{scored}\n{load_sql('relevance_order')}"
    return [dict(r) for r in db.fetch_rows(sql, p, timeout_ms=TIMEOUT_MS)]


def page(db: Database, text: str, cte: str, params: dict[str, Any], *, descending: bool, limit: int,
         offset: int, gated: bool = False) -> tuple[list[str], int, int]:
    """One page of NCT ids in relevance order, the number of trials ranked (past the gate when one is given) and
    the number of candidates (every matching trial, what every page counts)."""
    rows = ranked(db, text, cte, params, descending=descending, limit=limit, offset=offset, gated=gated)
    ids = [str(r["nct_id"]) for r in rows]
    if not rows and offset > 0:  # past the last page: the counts are every page's, so the first row has them
        rows = ranked(db, text, cte, params, limit=1, gated=gated)
    if not rows:
        return [], 0, 0
    return ids, int(rows[0]["total"]), int(rows[0]["candidates"])
