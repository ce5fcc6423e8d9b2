"""The Runs page's data: runs needing attention first, runs per status, the filters in words.

The list itself, an HTML table, is :mod:`debugger.pages_data.run_list`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, time
from typing import Any

from debugger.model import ATTENTION_STATUSES, RUN_STATUSES, Run
from debugger.store import Store

ATTENTION = ATTENTION_STATUSES
"""Statuses the Runs page makes stand out."""
ANY_AGENT = "(any)"
"""The agent choice that filters nothing."""


def needing_attention(store: Store, limit: int, **filters: Any) -> list[Run]:
    """The newest runs needing attention among those matching ``filters`` (at most
    ``limit``: the page links each one)."""
    wanted = filters.get("status")
    statuses = [s for s in ATTENTION if not wanted or s in str(wanted).split(",")]
    if not statuses:
        return []
    return store.run_page(**{**filters, "status": ",".join(statuses)}, order="newest",
                          limit=limit).runs  # fmt: skip


def status_counts(store: Store) -> dict[str, int]:
    """Number of runs per status in the whole store (every status, zero included); replays
    are not counted (they are listed under their original)."""
    counts = store.run_page(limit=0, replays=False).by_status
    return {s: counts.get(s, 0) for s in RUN_STATUSES}


def run_filters(
    statuses: Sequence[str], agent: str | None, text: str, dates: Any
) -> dict[str, datetime | str | None]:
    """The store's run filters (``Store.run_page``) from the Runs page's inputs.

    Args:
        statuses: statuses picked (none: every status).
        agent: the agent picked, None or ``(any)`` for every agent.
        text: the search box's text.
        dates: the date range picked (a sequence of one or two dates, else no range).
    """
    since = until = None
    if isinstance(dates, tuple | list) and len(dates) >= 1:
        since = datetime.combine(dates[0], time.min)
        until = datetime.combine(dates[-1], time.max)
    return {
        "status": ",".join(statuses) or None,
        "agent": None if agent in (None, ANY_AGENT) else agent,
        "text": text or None,
        "since": since,
        "until": until,
    }


def described(filters: dict[str, Any]) -> str:
    """The active filters in words, for the page's caption (``""`` when none is set)."""
    parts = []
    if filters.get("status"):
        parts.append(f"status {str(filters['status']).replace(',', ', ')}")
    if filters.get("agent"):
        parts.append(f"agent {filters['agent']}")
    if filters.get("text"):
        parts.append(f"matching “{filters['text']}”")
    since, until = filters.get("since"), filters.get("until")
    if isinstance(since, datetime) and isinstance(until, datetime):
        parts.append(f"last checkpoint {since.date()} to {until.date()}")
    return ("; ".join(parts)).join(("Filtered by ", ". ")) if parts else ""


def range_caption(at: int, pages: int, total: int, rows: int) -> str:
    """Which runs a page of ``rows`` runs shows (``at`` counts from 0)."""
    first, last = at * rows + 1, min(total, (at + 1) * rows)
    return f"Runs {first}–{last} of {total} (page {at + 1} of {pages})"
