"""Runs page: every run with status, agent, steps, budgets, last error and model versions.

Failed, crashed, parked and budget-exhausted runs come first and are marked; selecting a row
opens that run in the Timeline (``?run=...``).
"""

from __future__ import annotations

from contextlib import closing
from datetime import datetime, time

import pandas as pd
import streamlit as st

from debugger import pages_data
from debugger.model import RUN_STATUSES
from debugger.ui.common import get_store, guarded, page_for, page_labels, warm_store
from debugger.ui.widgets import STATUS_ICONS

TITLE, ICON, URL = page_labels(__name__)

COLUMNS = {
    "run_id": st.column_config.TextColumn("Run", width="medium"),
    "status": st.column_config.TextColumn("Status"),
    "agent": st.column_config.TextColumn("Agent"),
    "steps": st.column_config.TextColumn("Steps"),
    "checkpoint_count": st.column_config.NumberColumn("Checkpoints"),
    "tokens_spent": st.column_config.NumberColumn("Tokens", format="localized"),
    "steps_spent": st.column_config.NumberColumn("Steps spent"),
    "wall_clock_ms": st.column_config.NumberColumn("Wall clock ms", format="localized"),
    "pending_count": st.column_config.NumberColumn("Pending"),
    "last_error": st.column_config.TextColumn("Last error", width="large"),
    "model_versions": st.column_config.TextColumn("Model versions"),
    "status_reason": st.column_config.TextColumn("Why this status", width="medium"),
    "last_at": st.column_config.DatetimeColumn("Last checkpoint", format="YYYY-MM-DD HH:mm:ss"),
    "replay_of": st.column_config.TextColumn("Replay of"),
}


def _highlight(row: pd.Series) -> list[str]:
    # whole row tinted, so failed/crashed/parked runs stand out in a long list
    colour = {
        "failed": "#fee2e2",
        "crashed": "#fee2e2",
        "parked": "#fef9c3",
        "budget_exhausted": "#ede9fe",
    }.get(str(row["status"]), "")
    return [f"background-color: {colour}" if colour else ""] * len(row)


def _filters(agents: list[str]) -> dict[str, object]:
    c1, c2, c3, c4 = st.columns([3, 2, 3, 3])
    statuses = c1.multiselect("Status", RUN_STATUSES, key="runs_status")
    agent = c2.selectbox("Agent", ["(any)", *agents], key="runs_agent")
    text = c3.text_input("Search", key="runs_text", placeholder="run id, agent, error")
    dates = c4.date_input("Last checkpoint between", value=[], key="runs_dates")
    since = until = None
    if isinstance(dates, tuple | list) and len(dates) >= 1:
        since = datetime.combine(dates[0], time.min)
        until = datetime.combine(dates[-1], time.max)
    return {
        "status": ",".join(statuses) or None,
        "agent": None if agent == "(any)" else agent,
        "text": text or None,
        "since": since,
        "until": until,
    }


def _summary(counts: dict[str, int]) -> None:
    cols = st.columns(len(counts))
    for col, (status, n) in zip(cols, counts.items(), strict=True):
        icon = STATUS_ICONS.get(status, "help")
        col.metric(f":material/{icon}: {status.replace('_', ' ')}", n)


def page() -> None:
    """Render the Runs page."""
    st.title("Runs")
    store = get_store()
    if store is None:
        return
    counts = guarded(pages_data.status_counts, store)
    if counts is None:
        return
    _summary(counts)
    agents = sorted(a for a in store.runs()["agent"].dropna().unique())
    frame = guarded(pages_data.runs_table, store, **_filters(agents))
    if frame is None:
        return
    attention = int(frame["needs_attention"].sum())
    st.caption(
        f"{len(frame)} runs ({attention} need attention) in {store.path}. "
        "Select a row to open its timeline."
    )
    shown = frame[[c for c in COLUMNS if c in frame.columns]]
    event = st.dataframe(
        shown.style.apply(_highlight, axis=1),
        hide_index=True,
        width="stretch",
        column_config=COLUMNS,
        on_select="rerun",
        selection_mode="single-row",
        key="runs_table",
    )
    rows = event.selection.rows if event is not None else []
    if rows:
        run_id = str(shown.iloc[rows[0]]["run_id"])
        st.switch_page(page_for("timeline"), query_params={"run": run_id})
    _links(frame)


def warm(path: str) -> None:
    """Read and style the page's data once, off any script run (at the server's start).

    The first read through pandas and DuckDB and the first styled frame pay for lazy
    imports and first-call set-up inside both libraries; done here while the browser loads
    the front end, the first page then costs only its own reads.

    Raises:
        StoreError: the store cannot be opened.
    """
    with closing(warm_store(path)) as store:
        pages_data.status_counts(store)
        sorted(store.runs()["agent"].dropna().unique())
        frame = pages_data.runs_table(store)
        shown = frame[[c for c in COLUMNS if c in frame.columns]]
        shown.style.apply(_highlight, axis=1).to_html()


def _links(frame: pd.DataFrame) -> None:
    # plain links too: keyboard users and the browser test can follow them
    needing = frame[frame["needs_attention"]]
    if needing.empty:
        return
    st.subheader("Needs attention")
    for row in needing.itertuples(index=False):
        st.page_link(
            page_for("timeline"),
            label=f"{row.run_id} — {str(row.status).replace('_', ' ')}: {row.status_reason}",
            icon=f":material/{STATUS_ICONS.get(str(row.status), 'help')}:",
            query_params={"run": str(row.run_id)},
        )
