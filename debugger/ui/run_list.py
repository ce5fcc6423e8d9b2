"""The Runs page's list of runs as a Markdown table whose run ids are links.

The list was a data grid (``st.dataframe``) until session 5. The grid's front-end code is the
largest the app loads (1.2 MB of JavaScript, evaluated before it draws): on 2 cores the first
page then completed 0.8 s later than with this table (alternated starts, medians of six).
A Markdown table costs the browser nothing it has not loaded already, and its run ids are
real links: a person can open a run in a new tab, copy its address into an incident channel,
or follow it with the keyboard. Ordering and paging, which the grid did on its own, are
done here; status badges take the place of the grid's tinted rows.

No Streamlit import: what this builds is plain text (tested without a server).
"""

from __future__ import annotations

import json
import math
from html import escape
from typing import Any
from urllib.parse import quote

import pandas as pd

from debugger.ui.widgets import status_badge

PAGE_ROWS = 50
"""Runs per page of the list (the filters narrow longer lists)."""

ERROR_CHARS = 70
"""Characters of a run's last error shown in the list (the Timeline shows all of it)."""

ORDERS: dict[str, tuple[str, bool] | None] = {
    "Needing attention first": None,
    "Last checkpoint, newest first": ("last_at", False),
    "Tokens spent, most first": ("tokens_spent", False),
    "Wall clock, longest first": ("wall_clock_ms", False),
    "Run id": ("run_id", True),
}
"""The list's orders: label -> (column, ascending); None keeps the store's order, in which
runs needing attention come first (``pages_data.runs_table``)."""

_MARKDOWN_SPECIAL = set("\\`*_[]|~$:<>&")
"""Characters that Markdown, Streamlit's directives (``:red[...]``, ``:material/...:``) or
LaTeX (``$``) would read as syntax: written as character references, they stay text."""

COLUMNS = ("Run", "Status", "Agent", "Steps", "Tokens", "Steps spent", "Wall clock",
           "Pending", "Last error", "Model versions", "Last checkpoint")  # fmt: skip
_ALIGN = ("---", "---", "---", "---", "--:", "--:", "--:", "--:", "---", "---", "---")


def md_text(value: Any, limit: int | None = None) -> str:
    """A value as table-cell text that no Markdown, HTML or directive syntax can change."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NaT:
        return ""
    text = " ".join(str(value).split())  # a cell is one line
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    return "".join(f"&#{ord(c)};" if c in _MARKDOWN_SPECIAL else c for c in text)


def run_link(run_id: str, page_url: str) -> str:
    """An HTML link to a run's Timeline, opened in the same tab (a page's own address)."""
    href = escape(f"{page_url}?run={quote(run_id, safe='')}", quote=True)
    return f'<a href="{href}" target="_self">{md_text(run_id)}</a>'


def _versions(value: Any) -> str:
    try:
        versions = json.loads(value) if isinstance(value, str) else value
    except ValueError:
        return md_text(value)
    if isinstance(versions, list):
        return md_text(", ".join(str(v) for v in versions))
    return md_text(versions)


def _when(value: Any) -> str:
    if value is None or value is pd.NaT:
        return ""
    return md_text(pd.Timestamp(value).strftime("%Y-%m-%d %H:%M:%S"))


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def ordered(frame: pd.DataFrame, order: str) -> pd.DataFrame:
    """The runs in one of :data:`ORDERS` (stable: ties keep the store's order)."""
    how = ORDERS.get(order)
    if how is None:
        return frame
    column, ascending = how
    return frame.sort_values(column, ascending=ascending, kind="stable", na_position="last")


def page_count(rows: int) -> int:
    """Pages of :data:`PAGE_ROWS` runs (at least one, even when empty)."""
    return max(1, math.ceil(rows / PAGE_ROWS))


def runs_markdown(frame: pd.DataFrame, page_url: str) -> str:
    """A Markdown table of the runs, one line each, run ids linked to ``page_url``."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "|".join(_ALIGN) + "|"]
    for r in frame.to_dict("records"):
        cells = (
            run_link(str(r["run_id"]), page_url),
            status_badge(str(r["status"])),
            md_text(r["agent"]),
            md_text(r["steps"]),
            f"{_int(r['tokens_spent']):,}",
            f"{_int(r['steps_spent']):,}",
            f"{_int(r['wall_clock_ms']) / 1000:,.1f}\u00a0s",
            str(_int(r["pending_count"])),
            md_text(r["last_error"], ERROR_CHARS),
            _versions(r["model_versions"]),
            _when(r["last_at"]),
        )
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
