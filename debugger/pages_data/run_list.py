"""The Runs page's list of runs as a Markdown table whose run ids are links.

Not a data grid (``st.dataframe``): the grid's front-end code is the largest the app loads,
evaluated before it draws, and the first page would wait for it. A Markdown table costs the
browser nothing it has not loaded already, and its run ids are real links: a person can open
a run in a new tab, copy its address into an incident channel, or follow it with the
keyboard. Ordering and paging are done by the store in SQL; status badges mark the runs
needing attention.

No Streamlit import: what this builds is plain text (tested without a server).
"""

from __future__ import annotations

import math
from datetime import datetime
from html import escape
from typing import Any
from urllib.parse import quote

from debugger.model import Run
from debugger.pages_data.status import status_badge

PAGE_ROWS = 50
"""Runs per page of the list (the filters narrow longer lists)."""

ERROR_CHARS = 70
"""Characters of a run's last error shown in the list (the Timeline shows all of it)."""


ORDERS: dict[str, str] = {
    "Needing attention first": "attention",
    "Last checkpoint, newest first": "newest",
    "Tokens spent, most first": "tokens",
    "Wall clock, longest first": "wall_clock",
    "Run id": "run_id",
}
"""The list's orders: label -> the store's order key (``run_reads.RUN_ORDERS``); ties go
newest first. The store orders and pages in SQL (``Store.run_page``)."""
DEFAULT_ORDER = next(iter(ORDERS))
"""The order the list starts in."""

_MARKDOWN_SPECIAL = set("\\`*_[]|~$:<>&")
"""Characters that Markdown, Streamlit's directives (``:red[...]``, ``:material/...:``) or
LaTeX (``$``) would read as syntax: written as character references, they stay text."""

COLUMNS = ("Run", "Status", "Agent", "Steps", "Tokens", "Steps spent", "Wall clock",
           "Pending", "Last error", "Model versions", "Last checkpoint")  # fmt: skip
_ALIGN = ("---", "---", "---", "---", "--:", "--:", "--:", "--:", "---", "---", "---")


def md_text(value: Any, limit: int | None = None) -> str:
    """A value as table-cell text that no Markdown, HTML or directive syntax can change."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    text = " ".join(str(value).split())  # a cell is one line
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    return "".join(f"&#{ord(c)};" if c in _MARKDOWN_SPECIAL else c for c in text)


def run_link(run_id: str, page_url: str) -> str:
    """An HTML link to a run's Timeline, opened in the same tab (a page's own address)."""
    href = escape(f"{page_url}?run={quote(run_id, safe='')}", quote=True)
    return f'<a href="{href}" target="_self">{md_text(run_id)}</a>'


def _when(value: datetime | None) -> str:
    return md_text(value.strftime("%Y-%m-%d %H:%M:%S")) if value is not None else ""


def order_note(order: str) -> str:
    """The caption's note on a chosen order (``""`` for the default order)."""
    return "" if order == DEFAULT_ORDER else f"Ordered: {order.lower()}. "


def page_count(rows: int) -> int:
    """Pages of :data:`PAGE_ROWS` runs (at least one, even when empty)."""
    return max(1, math.ceil(rows / PAGE_ROWS))


def runs_markdown(runs: list[Run], page_url: str) -> str:
    """A Markdown table of the runs, one line each, run ids linked to ``page_url``."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "|".join(_ALIGN) + "|"]
    for r in runs:
        b = r.budgets
        cells = (
            run_link(r.run_id, page_url),
            status_badge(r.status),
            md_text(r.agent),
            md_text(f"{r.first_step}–{r.last_step}"),
            f"{b.tokens_spent:,}",
            f"{b.steps_spent:,}",
            f"{b.wall_clock_ms / 1000:,.1f}\u00a0s",
            str(r.pending_count),
            md_text(r.last_error, ERROR_CHARS),
            md_text(", ".join(r.model_versions)),
            _when(r.last_at),
        )
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
