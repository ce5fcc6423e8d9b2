"""The Runs page's list of runs as an HTML table whose run ids are links, and Needs attention.

Not a data grid (``st.dataframe``): the grid's front-end code is the largest the app loads,
evaluated before it draws, and the first page would wait for it. Not Markdown either: the
browser parses Markdown (and the HTML inside it) in JavaScript on the first page's critical
path, where HTML built here is set as it is (``st.html``): the first page was drawn ~0.1 s
sooner after the websocket opened (benchmarks/README.md, "App start"). Its run
ids are real links: a person can open a run in a new tab, copy its address into an incident
channel, or follow it with the keyboard. Ordering and paging are done by the store in SQL;
status badges mark the runs needing attention.

Every value from a checkpoint goes through :func:`~debugger.pages_data.markup.html_text`:
it is text, never markup (``st.html`` does not read Markdown, so ``:red[...]`` or an image
in Markdown syntax stays text, and an HTML tag is escaped).

No Streamlit import: what this builds is plain text (tested without a server).
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any
from urllib.parse import quote

from debugger.model import Run, step_span
from debugger.pages_data.markup import html_text, one_line
from debugger.pages_data.status import STATUS_COLOURS, STATUS_ICONS

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
_NUMERIC = {"Steps", "Tokens", "Wall clock", "Pending", "Replays"}
"""Columns aligned right."""
WIDTHS = ("14%", "11%", "15%", "8%", "5%", "6%", "7%", "6%", "6%", "11%", "11%")
"""Column widths: with a fixed layout the table fits the page at 1440 px, one line a row
(a longer cell ends in an ellipsis; hovering it shows the whole)."""

BADGE_COLOURS = {
    "green": ("#f1fbf6", "#0c5a44"),
    "blue": ("#eef4ff", "#1c4fb0"),
    "orange": ("#fff6ed", "#9b4519"),
    "violet": ("#f8f2ff", "#6f33b8"),
    "red": ("#fff1f2", "#9e303b"),
    "gray": ("#f3f3f4", "#4b4b52"),
}
"""Badge background and text per status colour (:data:`STATUS_COLOURS`), as Streamlit's
light theme draws its Markdown badges."""

_ICON = (
    "font-family:'Material Symbols Rounded';font-weight:400;font-style:normal;"
    "display:inline-block;vertical-align:bottom;white-space:nowrap;overflow-wrap:normal;"
    "user-select:none"
)
LINK_COLOUR = "#244fb4"
"""Links as Streamlit's Markdown draws them in the app's light theme."""

LIST_CSS = (
    "<style>"
    "table.runs{table-layout:fixed;width:100%;font-size:0.85rem;border-collapse:collapse;"
    "margin:0 0 1rem}"
    "table.runs :is(td,th){white-space:nowrap;overflow:hidden;text-overflow:ellipsis;"
    "padding:4px 6px;border:1px solid rgba(47,45,43,0.1);vertical-align:middle;"
    "text-align:left}"
    "table.runs th{font-weight:700}"
    "table.runs .num{text-align:right}"
    ".runs-badge{border-radius:4px;padding:0 4px;margin:0 1px;font-size:0.875rem}"
    + "".join(
        f".runs-badge.{name}{{background-color:{bg};color:{fg}}}"
        for name, (bg, fg) in BADGE_COLOURS.items()
    )
    + f".runs-error{{color:{BADGE_COLOURS['red'][1]}}}"
    + f".runs-icon{{{_ICON}}}"
    + f":is(table.runs,ul.attention) a{{color:{LINK_COLOUR}}}"
    + ".stHtml ul.attention{padding:0;margin:0}"
    + "ul.attention li{margin:0.2rem 0 0.2rem 1.15rem;padding-left:0.3rem;line-height:1.6}"
    + "".join(f"table.runs th:nth-child({i + 1}){{width:{w}}}" for i, w in enumerate(WIDTHS))
    + "</style>"
)
"""The list's and Needs attention's style (their classes only)."""


def run_link(run_id: str, page_url: str) -> str:
    """An HTML link to a run's Timeline, opened in the same tab (a page's own address)."""
    href = html_text(f"{page_url}?run={quote(run_id, safe='')}")
    text = html_text(one_line(run_id))
    return f'<a class="run" href="{href}" title="{text}">{text}</a>'


def icon(status: str) -> str:
    """A status's Material icon (the font Streamlit serves: no emoji font, no network)."""
    name = STATUS_ICONS.get(status, "help")
    return f'<span class="runs-icon" aria-hidden="true" translate="no">{name}</span>'


def status_badge_html(status: str) -> str:
    """A run status as a coloured badge with its icon."""
    colour = STATUS_COLOURS.get(status, "gray")
    return (
        f'<span class="runs-badge {colour}">{icon(status)} '
        f"{html_text(status.replace('_', ' '))}</span>"
    )


def _when(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S") if value is not None else ""


def order_note(order: str) -> str:
    """The caption's note on a chosen order (``""`` for the default order)."""
    return "" if order == DEFAULT_ORDER else f"Ordered: {order.lower()}. "


def page_count(rows: int) -> int:
    """Pages of :data:`PAGE_ROWS` runs (at least one, even when empty)."""
    return max(1, math.ceil(rows / PAGE_ROWS))


def runs_html(
    runs: list[Run],
    page_url: str,
    verdicts: dict[str, dict[str, Any]] | None = None,
    replays: dict[str, list[str]] | None = None,
) -> str:
    """An HTML table of the runs, one line each, run ids linked to ``page_url``.

    Args:
        runs: the page's runs.
        page_url: the Timeline's address.
        verdicts: run id -> :func:`debugger.pages_data.triage.verdicts` entry.
        replays: run id -> its replays' ids, newest first (linked from the Replays cell).
    """
    verdicts = verdicts or {}
    replays = replays or {}
    head = "".join(f"<th{_cls(c)}>{c}</th>" for c in COLUMNS)
    lines = [f'<table class="runs"><thead><tr>{head}</tr></thead><tbody>']
    for r in runs:
        b = r.budgets
        cells = (
            run_link(r.run_id, page_url),
            status_badge_html(r.status),
            _verdict(verdicts.get(r.run_id)),
            html_text(r.agent),
            step_span(r.first_step, r.last_step),
            f"{b.tokens_spent:,}",
            f"{b.wall_clock_ms / 1000:,.1f}\u00a0s",
            str(r.pending_count),
            _replays(replays.get(r.run_id, []), page_url, r),
            _hover(r.last_error),
            _when(r.last_at),
        )
        row = "".join(f"<td{_cls(c)}>{v}</td>" for c, v in zip(COLUMNS, cells, strict=True))
        lines.append(f"<tr>{row}</tr>")
    lines.append("</tbody></table>")
    return "\n".join(lines)


def _cls(column: str) -> str:
    return ' class="num"' if column in _NUMERIC else ""


def attention_html(items: list[dict[str, Any]], page_url: str, why_chars: int = 220) -> str:
    """Needs attention: each run's icon, link and why, in words (``items`` as
    :func:`debugger.pages_data.triage.attention_items` gives them)."""
    lines = [
        f"<li>{icon(item['status'])} {run_link(item['run_id'], page_url)} · "
        f"{html_text(one_line(item['why'], why_chars))}</li>"
        for item in items
    ]
    return '<ul class="attention">' + "".join(lines) + "</ul>"


def _verdict(v: dict[str, Any] | None) -> str:
    if v is None:
        return ""
    text = html_text(v["verdict"] + (f", {len(v['errors'])} error(s)" if v["errors"] else ""))
    return f'<span class="runs-error">{text}</span>' if v["errors"] else text


def _replays(ids: list[str], page_url: str, run: Run) -> str:
    if run.replay_of:
        return f"of {run_link(run.replay_of, page_url)}"
    if not ids:
        return ""
    href = html_text(f"{page_url}?run={quote(ids[0], safe='')}")
    return f'<a href="{href}" title="the newest replay">{len(ids)}</a>'


def _hover(text: str | None) -> str:
    """A long cell's text, shortened; the whole text shows on hover."""
    if not text:
        return ""
    whole, shown = html_text(one_line(text)), html_text(one_line(text, ERROR_CHARS))
    return f'<span title="{whole}">{shown}</span>'
