"""SQL page: a read-only console over the store, with a row limit and example queries.

Queries run on a locked-down connection (:mod:`debugger.store.console`): the store attached
read-only, no file access, no extensions, no other databases, memory capped.
"""

from __future__ import annotations

import streamlit as st

from debugger.settings import SQL_MEMORY
from debugger.store.console import DEFAULT_ROW_LIMIT, EXAMPLES, QueryResult, run_query
from debugger.ui.common import guarded, page_labels, store_path

TITLE, ICON, URL = page_labels(__name__)


def _use_example() -> None:
    st.session_state["sql_text"] = EXAMPLES[st.session_state["sql_example"]]


def page() -> None:
    """Render the SQL page."""
    st.title("SQL")
    st.caption(
        "Read-only over the store: tables `runs`, `checkpoints`, `effects`, `tool_calls`, "
        "`quarantine`, `sources`; one run's checkpoints: `checkpoints_of('<run>')` (fast on "
        "a large store). Files, extensions and other databases are off; memory is "
        f"capped at {SQL_MEMORY.value()} (`{SQL_MEMORY.name}`)."
    )
    st.session_state.setdefault("sql_text", next(iter(EXAMPLES.values())))
    st.selectbox("Example queries", list(EXAMPLES), key="sql_example", on_change=_use_example)
    sql = st.text_area("Query", key="sql_text", height=180)
    c1, c2 = st.columns([1, 4], vertical_alignment="bottom")
    limit = c1.number_input(
        "Row limit",
        min_value=1,
        max_value=100_000,
        value=DEFAULT_ROW_LIMIT,
        step=100,
        key="sql_limit",
    )
    run = c2.button("Run", type="primary", key="sql_run", shortcut="Ctrl+Enter")
    if run:
        st.session_state["sql_last"] = guarded(run_query, store_path(), sql, int(limit))
    result = st.session_state.get("sql_last")
    if isinstance(result, QueryResult):
        st.dataframe(result.frame, hide_index=True, width="stretch")
        note = f"{len(result.frame):,} rows in {result.seconds * 1000:.0f} ms"
        if result.truncated:
            note += f"; cut to the row limit of {len(result.frame):,}"
        st.caption(note)
