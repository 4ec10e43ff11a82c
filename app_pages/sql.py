"""SQL page: one read-only SELECT over ctgov, with example queries, a schema browser, bound parameters and CSV."""

import streamlit as st

from services import console, inert
from services.errors import BadInput, ConsoleBusy, QueryFailed, QueryTimeout, QueryTooHeavy, ResultTooLarge
from services.sqlguard import TooManyParameters
from services.ui import gate, health
from services.ui import state as ui_state

STARTER = """-- One read-only SELECT over schema ctgov; write values as :name to get an input box.
SELECT phase, count(*) AS trials
FROM ctgov.studies
WHERE overall_status = :status
GROUP BY phase
ORDER BY trials DESC"""

AACT_HELP = """SQL written for AACT runs here as it is: the 47 study tables have AACT's names and columns, and
`ctgov.`, `public.`, `ctgov_v2.` or no prefix all mean them. AACT's views (`all_conditions`, `all_sponsors`, …,
`covid_19_studies`) and `ids_for_term('%asthma%')` / `ids_for_org(…)` are there too. `EXPLAIN` or
`EXPLAIN ANALYZE` in front of a SELECT shows its plan.

**Value spellings changed in 2024.** Today's values are the API's enums (`'RECRUITING'`, `'WITHDRAWN'`,
`'PHASE1/PHASE2'`, `'INTERVENTIONAL'`, `'ESTIMATED'`); queries written before June 2024 compare against
`'Recruiting'`, `'Withdrawn'`, `'Phase 1/Phase 2'`, `'Interventional'`, `'Anticipated'` and find nothing. Two portable ways:

- read the `v_` views, which give the same columns spelled the classic way: `FROM ctgov.v_studies WHERE
  overall_status = 'Recruiting'` (also `v_eligibilities`, `v_interventions`, `v_design_groups`, `v_designs`,
  `v_outcomes`);
- or compare spelling-blind: `WHERE replace(lower(overall_status), '_', ' ') = 'recruiting'`, and for phases
  `replace(lower(phase), ' ', '') = 'phase1/phase2'`.
"""

health.ensure_database()
ui_state.page_setup("SQL", sidebar=False)
# The query and its parameters live in the URL (?sql=…&sql.name=value, Datasette-style), so a link reopens the
# query. It runs at once only in the browser that ran it itself; anyone else's link shows it and waits for a click.
opened = "sql_text" not in st.session_state and "sql" in st.query_params
ui_state.view_widget("sql_text", "sql", STARTER, str, max_chars=console.MAX_CHARS)
from_link = opened and st.session_state["sql_text"] == st.query_params.get("sql")
# One input box per :parameter; a query (a link's ?sql= too) naming more than the guard's limit gets none.
names: tuple[str, ...] = ()
too_many: TooManyParameters | None = None
try:
    names = console.check(st.session_state["sql_text"]).parameters
except TooManyParameters as err:
    too_many = err
except BadInput:
    pass  # any other refusal is explained when the query is run
for name in names:
    ui_state.view_widget(f"sql_param_{name}", f"sql.{name}",
                         "RECRUITING" if name == "status" and st.session_state["sql_text"] == STARTER else "", str,
                         max_chars=console.MAX_CHARS)
for key in ("sql_result", "sql_error", "sql_link"):
    st.session_state.setdefault(key, None)
params = {name: st.session_state.get(f"sql_param_{name}", "") for name in names}
browser = gate.visitor().browser
if from_link:  # True: this browser's own query, run now; False: someone else's, wait for a click
    st.session_state["sql_link"] = console.ran_before(browser, st.session_state["sql_text"], params)

st.title("🧮 SQL console")
# A monospaced editor: SQL is read by its columns.
st.html("<style>.st-key-sql_text textarea {font-family: 'Source Code Pro', ui-monospace, monospace; "
        "font-size: 0.9rem;}</style>")
examples = {example.name: example for example in console.examples()}
limits = console.limits()
with health.database_errors():
    guard = ui_state.cached(console.protection)
    columns = ui_state.cached(console.schema_columns)


def _load_example() -> None:
    chosen = st.session_state.get("sql_example")
    if chosen in examples:
        st.session_state["sql_text"] = examples[chosen].sql
        st.session_state["sql_result"] = None
        st.session_state["sql_error"] = None


# ---- schema browser ------------------------------------------------------------------------
with st.sidebar:
    st.header("Schema ctgov")
    find = st.text_input("Find a table or column", key="sql_find", placeholder="e.g. enrollment").strip().lower()
    shown = 0
    for table, group in columns.groupby("table_name", sort=True):
        hits = group if not find or find in str(table) else group[group["column_name"].str.contains(find, regex=False)]
        if find and hits.empty:
            continue
        shown += 1
        kind = "view" if bool(group["is_view"].iloc[0]) else "table"
        with st.expander(f"{table} · {len(group)} columns{' · view' if kind == 'view' else ''}", expanded=bool(find)):
            st.markdown("\n".join(f"- `{row.column_name}` <small>{inert.html_text(str(row.data_type))}</small>"
                                  for row in hits.itertuples()), unsafe_allow_html=True)
    if not shown:
        st.caption("No table or column matches.")
    st.caption("From information_schema; bare table names are read from ctgov.")

# ---- editor ----------------------------------------------------------------------------------
st.selectbox("Example queries", list(examples), index=None, key="sql_example", on_change=_load_example,
             format_func=lambda name: examples[name].title, placeholder="Load an example query…")
if st.session_state.get("sql_example") in examples:
    st.caption(examples[st.session_state["sql_example"]].description)
sql = st.text_area("Query", key="sql_text", height=260, max_chars=console.MAX_CHARS,
                   help="One SELECT (WITH allowed). Values written as :name become input boxes below.")

if too_many:
    st.error(inert.md(too_many), icon="🚫")
if names:
    st.markdown("**Parameters** — an empty box is NULL; text is converted to the type the query needs.")
    for start in range(0, len(names), 3):
        for col, name in zip(st.columns(3), names[start:start + 3], strict=False):
            col.text_input(f":{name}", key=f"sql_param_{name}")
ui_state.set_view_param("sql", sql, STARTER)
for key in [k for k in st.query_params if k.startswith("sql.") and k[4:] not in names]:
    del st.query_params[key]
for name in names:
    ui_state.set_view_param(f"sql.{name}", st.session_state.get(f"sql_param_{name}", ""),
                            "RECRUITING" if name == "status" and sql == STARTER else "")

clicked = st.button("Run query", type="primary", disabled=bool(too_many))
link, run = st.session_state["sql_link"], (clicked or st.session_state["sql_link"] is True) and not too_many
if clicked or link:
    st.session_state["sql_link"] = None
if clicked:
    console.remember_run(browser, sql, params)
elif link is False:
    st.info("This query came with a link and has not run: read it, then press **Run query**.", icon="🔗")
st.caption(f"Limits: {limits.describe()}. {guard.note} {guard.resources}".rstrip())
with st.expander("Queries written for AACT"):
    st.markdown(AACT_HELP)

if run:
    st.session_state["sql_result"] = None
    st.session_state["sql_error"] = None
    with health.database_errors():
        try:
            with st.spinner("Running the query…"):
                st.session_state["sql_result"] = console.run_query(sql, params, visitor=browser)
        except (ResultTooLarge, QueryTooHeavy, QueryTimeout) as err:  # stopped by one of the limits
            st.session_state["sql_error"] = ("timeout", f"**Stopped.** {inert.md(err)} {err.hint}")
        except ConsoleBusy as err:
            st.session_state["sql_error"] = ("timeout", f"**Not run yet.** {inert.md(err)}")
        except BadInput as err:  # UnsafeQuery included
            st.session_state["sql_error"] = ("refused", f"**Not run.** {inert.md(err)}")
        except QueryFailed as err:
            st.session_state["sql_error"] = ("failed", f"**The database refused the query.** "
                                                       f"{inert.md(str(err).removeprefix('The database refused the query: '))}")

# ---- result ----------------------------------------------------------------------------------
error = st.session_state["sql_error"]
result = st.session_state["sql_result"]
if error:
    kind, message = error
    if kind == "timeout":
        st.warning(message, icon="⏱️")
    else:
        st.error(message, icon="🚫")
elif result is not None:
    rows = len(result.rows)
    st.subheader(f"Result · {rows:,} row{'s' if rows != 1 else ''}")
    as_role = f"as {result.role_used}" if result.role_used else "without a reader role"
    st.caption(f"{result.elapsed_s:.2f} s · {as_role} · cap {result.cap:,} rows · timeout "
               f"{result.timeout_ms / 1000:g} s")
    if result.truncated_by == "bytes":
        st.warning(f"Only the first {rows:,} rows are shown: the result passed the console's size limit of "
                   f"{result.max_bytes / 1e6:g} MB, so the query was stopped there. Select fewer or shorter columns, "
                   "add a WHERE clause or aggregate.", icon="✂️")
    elif result.truncated:
        st.warning(f"Only the first {result.cap:,} rows are shown: the query has more. Add a LIMIT, a WHERE clause "
                   "or an aggregate to see what matters.", icon="✂️")
    st.dataframe(result.frame(), hide_index=True, width="stretch")
    st.download_button("Download CSV", data=result.to_csv(), file_name="query.csv", mime="text/csv",
                       on_click="ignore")
ui_state.footer()
