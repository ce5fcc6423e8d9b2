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


FILTER_KEYS = ("runs_status", "runs_agent", "runs_dates")
"""The filters in the popover (the search box stays on the page)."""


def _active_filters() -> int:
    """How many of the popover's filters are set (their values from the last run)."""
    state = st.session_state
    return sum(
        1
        for key in FILTER_KEYS
        if (value := state.get(key)) not in (None, "(any)")
        and not (isinstance(value, list | tuple) and len(value) == 0)
    )


def _filters(agents: list[str]) -> dict[str, object]:
    """The filters' values, read from the session before their widgets are drawn.

    The page draws its table before the filters above it (see :func:`page`), so the values
    come from the widgets' keys: what the person set, or nothing on the first run.
    """
    state = st.session_state
    statuses = [s for s in state.get("runs_status") or [] if s in RUN_STATUSES]
    agent = state.get("runs_agent")
    text = state.get("runs_text") or None
    dates = state.get("runs_dates") or ()
    since = until = None
    if isinstance(dates, tuple | list) and len(dates) >= 1:
        since = datetime.combine(dates[0], time.min)
        until = datetime.combine(dates[-1], time.max)
    return {
        "status": ",".join(statuses) or None,
        "agent": agent if agent in agents else None,
        "text": text,
        "since": since,
        "until": until,
    }


def _filter_widgets(agents: list[str]) -> None:
    # Status, agent and dates sit in a popover: its widgets are drawn only when it opens,
    # so the page does not wait for the front end's select and date-picker code
    # (measured: the first page drew ~0.45 s sooner in Chromium, see docs/app.md).
    search, more = st.columns([4, 1], vertical_alignment="bottom")
    search.text_input("Search", key="runs_text", placeholder="run id, agent, error")
    active = _active_filters()
    label = f"Filters ({active})" if active else "Filters"
    with more.popover(label, icon=":material/filter_list:", width="stretch"):
        st.multiselect("Status", RUN_STATUSES, key="runs_status")
        st.selectbox("Agent", ["(any)", *agents], key="runs_agent")
        st.date_input("Last checkpoint between", value=[], key="runs_dates")


def _described(filters: dict[str, object]) -> str:
    """The active filters in words, for the caption (they are hidden in the popover)."""
    parts = []
    if filters["status"]:
        parts.append(f"status {str(filters['status']).replace(',', ', ')}")
    if filters["agent"]:
        parts.append(f"agent {filters['agent']}")
    if filters["text"]:
        parts.append(f"matching “{filters['text']}”")
    if filters["since"] is not None and filters["until"] is not None:
        since, until = filters["since"], filters["until"]
        assert isinstance(since, datetime) and isinstance(until, datetime)
        parts.append(f"last checkpoint {since.date()} to {until.date()}")
    return ("; ".join(parts)).join(("Filtered by ", ". ")) if parts else ""


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
    agents = sorted(a for a in store.runs()["agent"].dropna().unique())
    filters = _filters(agents)
    frame = guarded(pages_data.runs_table, store, **filters)
    if frame is None:
        return
    # The table is sent before what sits above it (the summary, the filters, the caption):
    # the browser loads the data grid's code (1.2 MB, the page's largest) when the table's
    # message arrives, and sooner means the page is complete sooner (~0.4 s on 2 cores).
    head = st.container()
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
    with head:
        _summary(counts)
        _filter_widgets(agents)
        attention = int(frame["needs_attention"].sum())
        st.caption(
            f"{len(frame)} runs ({attention} need attention) in {store.path}. "
            f"{_described(filters)}Select a row to open its timeline."
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
