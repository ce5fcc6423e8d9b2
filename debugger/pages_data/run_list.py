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
from debugger.pages_data.markup import attr_text, md_text
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

COLUMNS = ("Run", "Status", "Audit", "Agent", "Steps", "Tokens", "Wall clock", "Pending",
           "Replays", "Last error", "Last checkpoint")  # fmt: skip
_ALIGN = ("---", "---", "---", "---", "--:", "--:", "--:", "--:", "--:", "---", "---")
WIDTHS = ("14%", "11%", "15%", "8%", "5%", "6%", "7%", "6%", "6%", "11%", "11%")
"""Column widths: with a fixed layout the table fits the page at 1440 px, one line a row
(a longer cell ends in an ellipsis; hovering it shows the whole)."""

LIST_CSS = (
    "<style>"
    '[data-testid="stMarkdownContainer"]:has(table a.run) table'
    "{table-layout:fixed;width:100%;font-size:0.85rem}"
    '[data-testid="stMarkdownContainer"]:has(table a.run) :is(td,th)'
    "{white-space:nowrap;overflow:hidden;text-overflow:ellipsis;padding:4px 6px}"
    + "".join(
        f'[data-testid="stMarkdownContainer"]:has(table a.run) th:nth-child({i + 1}){{width:{w}}}'
        for i, w in enumerate(WIDTHS)
    )
    + "</style>"
)
"""The list's style (it applies to the run list's table only)."""


def run_link(run_id: str, page_url: str) -> str:
    """An HTML link to a run's Timeline, opened in the same tab (a page's own address)."""
    href = escape(f"{page_url}?run={quote(run_id, safe='')}", quote=True)
    title = attr_text(run_id)
    return f'<a class="run" href="{href}" target="_self" title="{title}">{md_text(run_id)}</a>'


def _when(value: datetime | None) -> str:
    return md_text(value.strftime("%Y-%m-%d %H:%M:%S")) if value is not None else ""


def order_note(order: str) -> str:
    """The caption's note on a chosen order (``""`` for the default order)."""
    return "" if order == DEFAULT_ORDER else f"Ordered: {order.lower()}. "


def page_count(rows: int) -> int:
    """Pages of :data:`PAGE_ROWS` runs (at least one, even when empty)."""
    return max(1, math.ceil(rows / PAGE_ROWS))


def runs_markdown(
    runs: list[Run],
    page_url: str,
    verdicts: dict[str, dict[str, Any]] | None = None,
    replays: dict[str, list[str]] | None = None,
) -> str:
    """A Markdown table of the runs, one line each, run ids linked to ``page_url``.

    Args:
        runs: the page's runs.
        page_url: the Timeline's address.
        verdicts: run id -> :func:`debugger.pages_data.triage.verdicts` entry.
        replays: run id -> its replays' ids, newest first (linked from the Replays cell).
    """
    verdicts = verdicts or {}
    replays = replays or {}
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "|".join(_ALIGN) + "|"]
    for r in runs:
        b = r.budgets
        cells = (
            run_link(r.run_id, page_url),
            status_badge(r.status),
            _verdict(verdicts.get(r.run_id)),
            md_text(r.agent),
            md_text(f"{r.first_step}–{r.last_step}"),
            f"{b.tokens_spent:,}",
            f"{b.wall_clock_ms / 1000:,.1f}\u00a0s",
            str(r.pending_count),
            _replays(replays.get(r.run_id, []), page_url, r),
            _hover(r.last_error),
            _when(r.last_at),
        )
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _verdict(v: dict[str, Any] | None) -> str:
    if v is None:
        return ""
    text = v["verdict"] + (f", {len(v['errors'])} error(s)" if v["errors"] else "")
    return f":red[{md_text(text)}]" if v["errors"] else md_text(text)


def _replays(ids: list[str], page_url: str, run: Run) -> str:
    if run.replay_of:
        return f"of {run_link(run.replay_of, page_url)}"
    if not ids:
        return ""
    href = escape(f"{page_url}?run={quote(ids[0], safe='')}", quote=True)
    return f'<a href="{href}" target="_self" title="the newest replay">{len(ids)}</a>'


def _hover(text: str | None) -> str:
    """A long cell's text, shortened; the whole text shows on hover."""
    if not text:
        return ""
    title = attr_text(text)
    return f'<span title="{title}">{md_text(text, ERROR_CHARS)}</span>'
