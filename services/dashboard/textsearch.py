"""The free-text filter: PostgreSQL full-text search (the `english` configuration) over each study's titles,
brief summary, keywords and outcome measures, with AND / OR / NOT, brackets and "quoted phrases" (boolquery's
syntax).

A term of words without quotes matches a study whose text has every word, stemmed (plainto_tsquery); a quoted
phrase matches the words in that order (phraseto_tsquery). The expression becomes one tsquery (&&, ||, !!), so
each study's document is built and tested once. Both dashboard engines run this SQL in the database (the
in-process engine looks its rows up), so they agree by construction. The document is built on the fly from the
base tables: a few seconds at the sample's size; app.study_search's stored vector holds other fields
(conditions, MeSH terms) for ranking, so it is not this filter's document.
"""

from __future__ import annotations

from typing import Any

from services.dashboard import boolquery

CONFIG = "english"
# The study's searchable text: titles, brief summary, keywords, registered outcome measures and their
# descriptions.
DOCUMENT_SQL = (
    "to_tsvector('english', concat_ws(' ', {s}.brief_title, {s}.official_title, "
    "(SELECT string_agg(bs.description, ' ') FROM ctgov.brief_summaries bs WHERE bs.nct_id = {s}.nct_id), "
    "(SELECT string_agg(k.name, ' ') FROM ctgov.keywords k WHERE k.nct_id = {s}.nct_id), "
    "(SELECT string_agg(concat_ws(' ', o.measure, o.description), ' ') FROM ctgov.design_outcomes o "
    "WHERE o.nct_id = {s}.nct_id)))"
)


def document_sql(alias: str = "s") -> str:
    """SQL: the tsvector of the study `alias` (a ctgov.studies row)."""
    return DOCUMENT_SQL.format(s=alias)


def tsquery_sql(text: str, params: dict[str, Any], prefix: str = "txt") -> str | None:
    """SQL: the tsquery of a typed expression, terms bound as parameters (None when it holds no term)."""
    node = boolquery.parse(text)
    if node is None:
        return None
    counter = iter(range(10_000))

    def walk(n: boolquery.Node) -> str:
        if isinstance(n, boolquery.Term):
            name = f"{prefix}{next(counter)}"
            params[name] = n.text
            fn = "phraseto_tsquery" if n.quoted else "plainto_tsquery"
            return f"{fn}('{CONFIG}', CAST(:{name} AS text))"
        if n.op == "NOT":
            return f"(!! {walk(n.parts[0])})"
        return "(" + (" || " if n.op == "OR" else " && ").join(walk(p) for p in n.parts) + ")"

    return walk(boolquery.cut(node))


def where_sql(text: str, params: dict[str, Any], alias: str = "s") -> str | None:
    """SQL condition on a ctgov.studies alias: its document matches the typed expression."""
    query = tsquery_sql(text, params)
    return None if query is None else f"{document_sql(alias)} @@ {query}"


def ids_sql(text: str, params: dict[str, Any]) -> str | None:
    """SELECT of the NCT ids whose text matches (None when the text holds no term)."""
    cond = where_sql(text, params, "ts")
    return None if cond is None else f"SELECT ts.nct_id FROM ctgov.studies ts WHERE {cond}"
