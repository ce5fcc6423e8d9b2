"""Checkpoint content as text the browser cannot read as markup.

Run ids, agents, errors, states and tool calls come from the agent's world, and anything an
agent saw can land in them: a Markdown image in a ``last_error`` would be fetched by every
browser that opens the Timeline (a tracking beacon), a link or ``:red[...]`` would render.
Every page therefore writes such values through :func:`md_text` (inside Markdown) or
:func:`html_text` (inside HTML), and tables of long values through :func:`table_html`, whose
shortened cells open in full on click (``<details>``, no JavaScript).

No Streamlit import: what this builds is plain text (tested without a server).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from debugger.json_text import ELLIPSIS

_MARKDOWN_SPECIAL = set("\\`*_[]|~$:<>&!#+-=.(){}\"'")
"""Characters that Markdown, Streamlit's directives (``:red[...]``, ``:material/...:``) or
LaTeX (``$``) could read as syntax: written as character references, they stay text."""

WORD_JOINER = "\u2060"
"""An invisible character that keeps the Markdown renderer from making a link of text.

Streamlit's renderer turns any ``http://``, ``www.`` or ``name@host`` in text into a link,
even when written as character references; a word joiner after the scheme (or the ``@``)
leaves the text as it reads and makes no link."""
_AUTOLINK = re.compile(r"(?i)((?:https?|ftp|mailto)(?=:)|www(?=\.)|@)")

_ATTR_SPECIAL = _MARKDOWN_SPECIAL | set("|\"'<>&")
"""Characters written as references in an attribute's text (HTML's and Markdown's)."""

CELL_CHARS = 90
"""Characters of a value shown in a table cell; a click opens the rest."""
FULL_CHARS = 20_000
"""Longest value a cell opens in full; past it the cell says the whole value is a download
(the page stays light however long a value is)."""


def one_line(value: Any, limit: int | None = None) -> str:
    """A value as one line of plain text (a table cell, a caption), ending in an ellipsis
    past ``limit`` characters; None and NaN as empty. Not escaped: see :func:`md_text` and
    :func:`html_text`."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    text = " ".join(str(value).split())
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + ELLIPSIS
    return text


def md_text(value: Any, limit: int | None = None) -> str:
    """A value as one line of Markdown text that no Markdown, HTML or directive syntax can
    change (None and NaN as empty)."""
    return _escaped(one_line(value, limit))


def _escaped(text: str) -> str:
    text = _AUTOLINK.sub("\\1" + WORD_JOINER, text)
    return "".join(f"&#{ord(c)};" if c in _MARKDOWN_SPECIAL else c for c in text)


def md_with_code(value: Any) -> str:
    """Like :func:`md_text`, but the `backtick spans` of Stepscope's own hints render as
    code: a hint names commands and config keys that way. The text between spans is escaped
    as md_text escapes it, and a span's inside is code (Markdown renders it literally)."""
    parts = " ".join(str(value).split()).split("`")
    if len(parts) % 2 == 0:  # an unmatched backtick: no span at all
        return md_text(value)
    return "".join(f"`{p}`" if i % 2 and p else _escaped(p) for i, p in enumerate(parts))


def attr_text(value: Any) -> str:
    """A value as the text of an HTML attribute (a tooltip) inside Markdown: HTML-escaped,
    and Markdown's and Streamlit's syntax characters written as references too."""
    return "".join(f"&#{ord(c)};" if c in _ATTR_SPECIAL else c for c in one_line(value))


def html_text(value: Any) -> str:
    """A value as HTML text (None as empty)."""
    return "" if value is None else escape(str(value), quote=True)


def cell_html(
    text: Any, full: Any = None, limit: int = CELL_CHARS, total: int | None = None
) -> str:
    """One cell: the text on one line, shortened to ``limit``; a click opens it in full.

    Args:
        text: what the cell shows (already a preview, or the value's text).
        full: the whole value when ``text`` is a preview of it (None: ``text`` is whole).
        limit: characters shown before the click.
        total: the value's length when ``full`` itself is cut (past :data:`FULL_CHARS`):
            the cell says so, and the page offers the whole value as a download.
    """
    shown = "" if text is None else " ".join(str(text).split())
    whole = str(full) if full is not None else ("" if text is None else str(text))
    if len(shown) <= limit and (full is None or whole == shown):
        return html_text(shown)
    short = shown[: limit - 1] + ELLIPSIS if len(shown) > limit else shown
    note = ""
    if total is None and len(whole) > FULL_CHARS:
        total, whole = len(whole), whole[: FULL_CHARS - 1] + ELLIPSIS
    if total is not None:
        note = (f'<div class="ss-cut">The first {len(whole) - 1:,} of {total:,} characters: '
                "the whole value is a download below the table.</div>")  # fmt: skip
    return (
        f'<details class="ss-cell"><summary title="click to open in full">{html_text(short)}'
        f"</summary><pre>{html_text(whole)}</pre>{note}</details>"
    )


TABLE_CSS = """<style>
.ss-table{width:100%;border-collapse:collapse;table-layout:fixed;font-size:0.85rem}
.ss-table th{text-align:left;font-weight:600;border-bottom:1px solid #d6d3d1;padding:4px 6px}
.ss-table td{vertical-align:top;border-bottom:1px solid #e7e5e4;padding:4px 6px;
  overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.ss-table td:has(details[open]){white-space:normal}
.ss-table details summary{cursor:pointer;overflow:hidden;text-overflow:ellipsis;
  white-space:nowrap;list-style:none}
.ss-table details summary::-webkit-details-marker{display:none}
.ss-table details[open] summary{color:#78716c}
.ss-table .ss-cut{color:#b45309;font-size:0.8rem}
.ss-table pre{white-space:pre-wrap;word-break:break-word;margin:4px 0;font-size:0.8rem;
  max-height:24rem;overflow:auto;background:#f5f5f4;padding:6px;border-radius:4px}
</style>"""
"""How :func:`table_html` tables look: fixed columns, one line a row until a cell opens."""


def table_html(
    rows: Sequence[Mapping[str, Any]],
    columns: Mapping[str, str],
    full: Mapping[str, str] | None = None,
    widths: Mapping[str, str] | None = None,
) -> str:
    """An HTML table of text cells, every value escaped, long ones opening on click.

    Args:
        rows: the rows, as dicts.
        columns: row key -> column heading, in order.
        full: row key -> the row key holding that column's whole value (when the shown
            value is a preview).
        widths: row key -> a CSS width for its column.
    """
    full = full or {}
    widths = widths or {}
    cols = "".join(f'<col style="width:{widths[k]}">' if k in widths else "<col>" for k in columns)
    head = "".join(f"<th>{html_text(h)}</th>" for h in columns.values())
    body = []
    for row in rows:
        cells = "".join(
            "<td>"
            + cell_html(
                row.get(k), row.get(full[k]) if k in full else None, total=row.get(f"{k}_chars")
            )
            + "</td>"
            for k in columns
        )
        body.append(f"<tr>{cells}</tr>")
    return (
        f'{TABLE_CSS}<table class="ss-table"><colgroup>{cols}</colgroup>'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    )
