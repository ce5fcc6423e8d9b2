"""Runs page: every run with status, agent, steps, budgets, last error and model versions.

Failed, crashed, parked and budget-exhausted runs come first, with their status as a coloured
badge; each run id links to that run's Timeline (``timeline?run=...``). The list is a
Markdown table (:mod:`debugger.pages_data.run_list` says why), fifty runs a page.
"""

from __future__ import annotations

from contextlib import closing
from typing import Any

import streamlit as st

from debugger import pages_data
from debugger.model import RUN_STATUSES, Run
from debugger.pages_data import run_list
from debugger.pages_data.runs import ANY_AGENT, described, range_caption, run_filters
from debugger.pages_data.status import STATUS_ICONS, count_badge
from debugger.ui.common import PAGES, get_store, guarded, page_for, page_labels, warm_store

TITLE, ICON, URL = page_labels(__name__)

ATTENTION_LINKS = 20
"""Runs linked under "Needs attention" at most (the newest)."""
URL_OF_TIMELINE = next(p.url for p in PAGES if p.module == "timeline")
"""The Timeline's address, relative to the app's: links stay right under a
``server.baseUrlPath``."""

FILTER_KEYS = ("runs_status", "runs_agent", "runs_dates")
"""The filters in the popover (the search box stays on the page)."""


def _active_filters() -> int:
    """How many of the popover's filters are set (their values from the last run)."""
    state = st.session_state
    return sum(
        1
        for key in FILTER_KEYS
        if (value := state.get(key)) not in (None, ANY_AGENT)
        and not (isinstance(value, list | tuple) and len(value) == 0)
    )


def _filters(agents: list[str]) -> tuple[dict[str, Any], str]:
    """Draw the search box and the filters' popover; return the filters and the order's
    label."""
    # Status, agent, dates and order sit in a popover: its widgets are drawn only when it
    # opens, so the first page does not wait for the front end's select and date-picker code.
    search, more = st.columns([4, 1], vertical_alignment="bottom")
    text = search.text_input("Search", key="runs_text", placeholder="run id, agent, error")
    active = _active_filters()  # the label comes before the widgets that set it
    label = f"Filters ({active})" if active else "Filters"
    with more.popover(label, icon=":material/filter_list:", width="stretch"):
        statuses = st.multiselect("Status", RUN_STATUSES, key="runs_status")
        agent = st.selectbox("Agent", [ANY_AGENT, *agents], key="runs_agent")
        dates = st.date_input("Last checkpoint between", value=[], key="runs_dates")
        order = st.selectbox("Order", list(run_list.ORDERS), key="runs_order")
    filters = run_filters(statuses, agent, text, dates)
    return filters, order or run_list.DEFAULT_ORDER


def _summary(counts: dict[str, int]) -> None:
    # Badges in one line of Markdown rather than a row of st.metric: the metric's front-end
    # code (number formatting, charting helpers) is loaded lazily, and the first page would
    # wait for it.
    st.markdown(" &nbsp; ".join(count_badge(s, n) for s, n in counts.items()))


def page() -> None:
    """Render the Runs page."""
    st.title("Runs")
    store = get_store()
    if store is None:
        return
    agents = guarded(store.run_agents)
    counts = guarded(pages_data.status_counts, store)
    if agents is None or counts is None:
        return
    _summary(counts)
    filters, label = _filters(agents)
    # a new filter or order starts again at the first page
    wanted = (tuple(sorted((k, str(v)) for k, v in filters.items())), label)
    if st.session_state.get("_runs_view") != wanted:
        st.session_state["_runs_view"] = wanted
        st.session_state["runs_page"] = 0
    at = int(st.session_state.get("runs_page", 0))
    order = run_list.ORDERS[label]
    # Run records, not a DataFrame (importing pandas would delay the server while the browser
    # loads the front end), ordered and cut by the store in SQL: only the page's runs become
    # records.
    rows = run_list.PAGE_ROWS
    found = guarded(store.run_page, **filters, order=order, offset=at * rows, limit=rows)
    if found is None:
        return
    pages = run_list.page_count(found.total)
    if at >= pages:  # fewer runs than when the page was chosen (a reload)
        at = st.session_state["runs_page"] = pages - 1
        found = store.run_page(**filters, order=order, offset=at * rows, limit=rows)
    attention = sum(found.by_status.get(s, 0) for s in pages_data.ATTENTION)
    st.caption(
        f"{found.total} runs ({attention} need attention) in {store.path}. "
        f"{described(filters)}{run_list.order_note(label)}Open a run by its id."
    )
    if not found.runs:
        st.info("No run matches these filters.", icon=":material/filter_alt_off:")
    else:
        st.markdown(run_list.runs_markdown(found.runs, URL_OF_TIMELINE), unsafe_allow_html=True)
    if pages > 1:
        _pager(at, pages, found.total)
    if attention:
        _links(pages_data.needing_attention(store, ATTENTION_LINKS, **filters), attention)


def _pager(at: int, pages: int, total: int) -> None:
    back, where, forward = st.columns([1, 3, 1], vertical_alignment="center")
    if back.button("Previous", icon=":material/chevron_left:", disabled=at == 0, key="runs_prev"):
        st.session_state["runs_page"] = at - 1
        st.rerun()
    where.caption(range_caption(at, pages, total, run_list.PAGE_ROWS))
    if forward.button(
        "Next", icon=":material/chevron_right:", disabled=at >= pages - 1, key="runs_next"
    ):
        st.session_state["runs_page"] = at + 1
        st.rerun()


def warm(path: str) -> None:
    """Read and lay out the page's data once, off any script run (at the server's start).

    The first reads through DuckDB and the first table pay for first-call set-up; done here
    while the browser loads the front end, the first page then costs only its own reads.

    Raises:
        StoreError: the store cannot be opened.
    """
    with closing(warm_store(path)) as store:
        store.run_agents()
        pages_data.status_counts(store)
        found = store.run_page(limit=run_list.PAGE_ROWS)
        run_list.runs_markdown(found.runs, URL_OF_TIMELINE)
        pages_data.needing_attention(store, ATTENTION_LINKS)


def _links(needing: list[Run], total: int) -> None:
    # plain links too: keyboard users and the browser test can follow them
    st.subheader("Needs attention")
    for run in needing:
        st.page_link(
            page_for("timeline"),
            label=f"{run.run_id} — {run.status.replace('_', ' ')}: {run.status_reason}",
            icon=f":material/{STATUS_ICONS.get(run.status, 'help')}:",
            query_params={"run": run.run_id},
        )
    if total > len(needing):
        st.caption(
            f"The newest {len(needing)} of {total}: choose a status under Filters to list "
            "the others."
        )
