"""Runs page: every run with status, steps, budgets and versions."""

from __future__ import annotations

import streamlit as st

from debugger.model import RUN_STATUSES
from debugger.ui.common import get_store, guarded

TITLE = "Runs"
ICON = ":material/list:"
URL = "runs"


def page() -> None:
    """Render the Runs page."""
    st.title("Runs")
    store = get_store()
    if store is None:
        return
    statuses = st.multiselect("Status", RUN_STATUSES, key="runs_status")
    text = st.text_input("Search", key="runs_text", placeholder="run id, agent, error")
    frame = guarded(store.runs, status=",".join(statuses) or None, text=text or None)
    if frame is None:
        return
    st.caption(f"{len(frame)} runs in {store.path}")
    st.dataframe(frame, hide_index=True, width="stretch")
