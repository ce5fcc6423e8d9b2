"""Runs page: triage. Which runs need attention and why, then every run with its audit verdict.

The status badges filter on click; every filter lives in the URL (``/?status=crashed&q=...``),
so a filtered list is a link. Replays are counted under their original (a toggle lists
them), never in the status counts or Needs attention. Each run id links to that run's
Timeline (``timeline?run=...``). The list and Needs attention are HTML built on the server
(:mod:`debugger.pages_data.run_list` says why), fifty runs a page.
"""

from __future__ import annotations

from contextlib import closing
from typing import Any

import orjson
import streamlit as st

from debugger import pages_data
from debugger.model import RUN_STATUSES, Run
from debugger.pages_data import run_list
from debugger.pages_data.markup import md_text
from debugger.pages_data.runs import ANY_AGENT, described, range_caption, run_filters
from debugger.pages_data.status import STATUS_ICONS
from debugger.pages_data.triage import attention_items, verdicts
from debugger.store import Store
from debugger.ui.common import (
    PAGES,
    fingerprint,
    generation,
    get_store,
    guarded,
    open_cached,
    page_labels,
    shown_path,
    warm_store,
)

TITLE, ICON, URL = page_labels(__name__)

ATTENTION_LINKS = 20
"""Runs linked under "Needs attention" at most (the newest)."""
URL_OF_TIMELINE = next(p.url for p in PAGES if p.module == "timeline")
"""The Timeline's address, relative to the app's: links stay right under a
``server.baseUrlPath``."""

URL_KEYS = {"runs_status": "status", "runs_agent": "agent", "runs_text": "q",
            "runs_order": "order", "runs_replays": "replays"}  # fmt: skip
"""Session key of each filter -> its name in the URL."""
ORDER_KEYS = {v: k for k, v in run_list.ORDERS.items()}


def _from_url() -> None:
    """Set the filters from the URL when it changed (a link, the browser's back button)."""
    q = st.query_params
    asked = tuple(q.get(name) for name in URL_KEYS.values())
    if st.session_state.get("_runs_url") == asked:
        return
    st.session_state["_runs_url"] = asked
    statuses = [s for s in (q.get("status") or "").split(",") if s in RUN_STATUSES]
    st.session_state["runs_status"] = statuses
    st.session_state["runs_agent"] = q.get("agent") or ANY_AGENT
    st.session_state["runs_text"] = q.get("q") or ""
    st.session_state["runs_order"] = ORDER_KEYS.get(q.get("order") or "", run_list.DEFAULT_ORDER)
    st.session_state["runs_replays"] = q.get("replays") == "1"


def _to_url() -> None:
    state, q = st.session_state, st.query_params
    values = {
        "status": ",".join(state.get("runs_status") or []),
        "agent": "" if state.get("runs_agent") in (None, ANY_AGENT) else state["runs_agent"],
        "q": state.get("runs_text") or "",
        "order": "" if state.get("runs_order") in (None, run_list.DEFAULT_ORDER)
        else run_list.ORDERS[state["runs_order"]],
        "replays": "1" if state.get("runs_replays") else "",
    }  # fmt: skip
    for name, value in values.items():
        if value:
            q[name] = value
        else:
            q.pop(name, None)
    st.session_state["_runs_url"] = tuple(q.get(name) for name in URL_KEYS.values())


def _badges(counts: dict[str, int]) -> list[str]:
    def label(status: str) -> str:
        icon = STATUS_ICONS.get(status, "help")
        return f":material/{icon}: {status.replace('_', ' ')} **{counts[status]}**"

    picked = st.pills("Status", RUN_STATUSES, selection_mode="multi", key="runs_status",
                      format_func=label, label_visibility="collapsed",
                      help="Click a status to list only those runs")  # fmt: skip
    return list(picked or [])


def _filters(agents: list[str], counts: dict[str, int]) -> tuple[dict[str, Any], str, bool]:
    statuses = _badges(counts)
    search, more, toggle = st.columns([6, 2, 2], vertical_alignment="center")
    text = search.text_input("Search", key="runs_text", placeholder="run id, agent, error",
                             label_visibility="collapsed")  # fmt: skip
    with more.popover("Filters", icon=":material/filter_list:", width="stretch"):
        agent = st.selectbox("Agent", [ANY_AGENT, *agents], key="runs_agent")
        dates = st.date_input("Last checkpoint between", value=[], key="runs_dates")
        order = st.selectbox("Order", list(run_list.ORDERS), key="runs_order")
    replays = toggle.toggle("Show replays", key="runs_replays",
                            help="Replays are listed under their original by default")  # fmt: skip
    return run_filters(statuses, agent, text, dates), order or run_list.DEFAULT_ORDER, replays


_WARMED: dict[tuple[str, int], str] = {}
"""Verdicts computed at the server's start (:func:`warm`), by store path and generation:
the first page takes them instead of auditing the newest runs itself."""


@st.cache_data(max_entries=8, show_spinner=False)
def _verdicts_json(path: str, gen: int) -> str:
    warmed = _WARMED.pop((path, gen), None)
    if warmed is not None:
        return warmed
    return orjson.dumps(verdicts(open_cached(path, gen))).decode()


def _replays_of(store: Store, runs: list[Run]) -> dict[str, list[str]]:
    return {r.run_id: store.replay_ids(r.run_id) for r in runs if not r.replay_of}


def page() -> None:
    """Render the Runs page."""
    st.title("Runs")
    st.html(run_list.LIST_CSS)
    store = get_store()
    if store is None:
        return
    agents = guarded(store.run_agents)
    counts = guarded(pages_data.status_counts, store)
    if agents is None or counts is None:
        return
    _from_url()
    filters, label, with_replays = _filters(agents, counts)
    _to_url()
    replays = None if with_replays else False
    # a new filter or order starts again at the first page
    wanted = (tuple(sorted((k, str(v)) for k, v in filters.items())), label, with_replays)
    if st.session_state.get("_runs_view") != wanted:
        st.session_state["_runs_view"] = wanted
        st.session_state["runs_page"] = 0
    at = int(st.session_state.get("runs_page", 0))
    order = run_list.ORDERS[label]
    rows = run_list.PAGE_ROWS
    query = {**filters, "order": order, "limit": rows, "replays": replays}
    found = guarded(store.run_page, **query, offset=at * rows)
    if found is None:
        return
    pages = run_list.page_count(found.total)
    if at >= pages:  # fewer runs than when the page was chosen (a reload)
        at = st.session_state["runs_page"] = pages - 1
        found = store.run_page(**query, offset=at * rows)
    stopped = pages_data.needing_attention(store, ATTENTION_LINKS, **filters, replays=False)
    shown = None if not any(filters.values()) else _matching(store, filters)
    needing = sum(found.by_status.get(s, 0) for s in pages_data.ATTENTION)
    # drawn first without the audit, then again with it: the audit of many runs takes a
    # moment, and the runs that stopped and the list need none of it. Once only when the
    # server's warm-up has the verdicts at hand (a first view: each draw of the table is
    # work for the browser too)
    attention, (caption, table) = st.empty(), (st.empty(), st.empty())
    once = (store.path, generation()) in _WARMED
    if not once:
        with attention.container():
            _attention(attention_items(stopped, {}, shown), needing, len(stopped))
    caption.caption(
        f"{found.total} {'runs and replays' if with_replays else 'runs'} ({needing} stopped "
        f"short of completing) in {md_text(shown_path(store.path))}. "
        f"{described(filters)}{run_list.order_note(label)}Open a run by its id."
    )
    if not found.runs:
        table.info("No run matches these filters.", icon=":material/filter_alt_off:")
    replays_of = _replays_of(store, found.runs)
    if not once:
        _table(table, found.runs, {}, replays_of)
    audited = guarded(lambda: orjson.loads(_verdicts_json(store.path, generation())))
    if audited or once:
        audited = audited or {}
        with attention.container():
            _attention(attention_items(stopped, audited, shown), needing, len(stopped))
        _table(table, found.runs, audited, replays_of)
    if pages > 1:
        _pager(at, pages, found.total)


def _table(
    box: Any, runs: list[Run], audited: dict[str, Any], replays: dict[str, list[str]]
) -> None:
    if runs:
        box.html(run_list.runs_html(runs, URL_OF_TIMELINE, audited, replays))


def _matching(store: Store, filters: dict[str, Any]) -> set[str]:
    return {r.run_id for r in store.run_page(**filters, limit=10_000, replays=False).runs}


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

    The first reads through DuckDB and the first table pay for first-call set-up, and the
    verdicts audit the newest runs; done here while the browser loads the front end, the
    first page then costs only its own reads and takes the verdicts from :data:`_WARMED`.

    Raises:
        StoreError: the store cannot be opened.
    """
    with closing(warm_store(path)) as store:
        store.run_agents()
        pages_data.status_counts(store)
        found = store.run_page(limit=run_list.PAGE_ROWS, replays=False)
        run_list.runs_html(found.runs, URL_OF_TIMELINE)
        pages_data.needing_attention(store, ATTENTION_LINKS, replays=False)
        _WARMED[(path, fingerprint(path))] = orjson.dumps(verdicts(store)).decode()


def _attention(items: list[dict[str, Any]], stopped_total: int, stopped_shown: int) -> None:
    """Needs attention, before the list: each run linked, with why in words."""
    if not items:
        return
    st.subheader(f"Needs attention ({len(items)})")
    st.html(run_list.attention_html(items, URL_OF_TIMELINE))
    if stopped_total > stopped_shown:
        st.caption(
            f"The newest {stopped_shown} of {stopped_total} that stopped: click a status above "
            "to list the others."
        )
