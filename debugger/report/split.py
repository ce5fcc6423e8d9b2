"""A split diff of two working states, as a code review shows one: the pretty-printed JSON
of each side, aligned line by line, changed lines highlighted, unchanged runs folded.

Used by the Diff page and the incident report. Every line is escaped when rendered: state
values are data, never markup.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from html import escape
from typing import Any, Literal

from debugger import json_text

CONTEXT_LINES = 3
"""Unchanged lines shown around each change; longer unchanged runs are folded."""
MAX_LINES = 4000
"""Lines of the split diff at most (each side's text is never cut inside a line)."""

Tag = Literal["equal", "replace", "delete", "insert", "fold"]


@dataclass(frozen=True)
class SplitLine:
    """One row of a split diff: a line of each side (None where that side has none)."""

    tag: Tag
    """How the two lines differ; ``fold`` is a run of unchanged lines left out."""
    left_no: int | None
    left: str | None
    right_no: int | None
    right: str | None


def pretty(value: Any) -> list[str]:
    """A value as indented JSON lines, keys in their stored order.

    Written by :func:`debugger.json_text.dumps`, not orjson directly: orjson writes NaN and
    Infinity as ``null`` (a diff from NaN would show "null") and fails with a bare TypeError
    on a value nested past its limit, which a store an older version wrote may hold.

    Raises:
        DecodeError: the value nests too deeply to write.
    """
    return json_text.dumps(value, indent=True, default=str).splitlines()


def split_lines(old: Any, new: Any, context: int = CONTEXT_LINES) -> list[SplitLine]:
    """The two values' JSON lines aligned; unchanged runs beyond ``context`` folded."""
    a, b = pretty(old), pretty(new)
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    rows: list[SplitLine] = []
    last_a = 0
    for group in matcher.get_grouped_opcodes(context):
        first_a = group[0][1]
        if first_a > last_a:
            rows.append(SplitLine("fold", None, f"{first_a - last_a} unchanged lines", None, None))
        for tag, i1, i2, j1, j2 in group:
            rows += _rows(tag, a, b, i1, i2, j1, j2)
        last_a = group[-1][2]
        if len(rows) > MAX_LINES:
            break
    if not rows and a:
        rows.append(SplitLine("fold", None, f"{len(a)} unchanged lines", None, None))
    elif last_a < len(a) and rows:
        rows.append(SplitLine("fold", None, f"{len(a) - last_a} unchanged lines", None, None))
    return rows


def _rows(tag: str, a: list[str], b: list[str], i1: int, i2: int, j1: int, j2: int
          ) -> list[SplitLine]:  # fmt: skip
    out = []
    for k in range(max(i2 - i1, j2 - j1)):
        i, j = i1 + k, j1 + k
        left = a[i] if i < i2 else None
        right = b[j] if j < j2 else None
        kind: Tag = tag  # type: ignore[assignment]
        if tag == "replace" and left is None:
            kind = "insert"
        elif tag == "replace" and right is None:
            kind = "delete"
        out.append(SplitLine(kind, i + 1 if left is not None else None, left,
                             j + 1 if right is not None else None, right))  # fmt: skip
    return out


SPLIT_CSS = """<style>
.ss-split{width:100%;border-collapse:collapse;table-layout:fixed;
  font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12px}
.ss-split td{vertical-align:top;padding:0 6px;white-space:pre-wrap;word-break:break-all}
.ss-split td.no{width:3.5em;color:#a8a29e;text-align:right;user-select:none}
.ss-split tr.replace td.l,.ss-split tr.delete td.l{background:#fee2e2}
.ss-split tr.replace td.r,.ss-split tr.insert td.r{background:#dcfce7}
.ss-split tr.fold td{background:#f5f5f4;color:#78716c;font-style:italic;text-align:center}
.ss-split th{text-align:left;padding:4px 6px;border-bottom:1px solid #d6d3d1}
</style>"""


def split_html(rows: list[SplitLine], left_title: str, right_title: str) -> str:
    """The split diff as an HTML table (escaped; no script, no external resource)."""
    body = []
    for r in rows:
        if r.tag == "fold":
            body.append(f'<tr class="fold"><td colspan="4">{escape(str(r.left))}</td></tr>')
            continue
        body.append(
            f'<tr class="{r.tag}"><td class="no">{r.left_no or ""}</td>'
            f'<td class="l">{escape(r.left or "")}</td>'
            f'<td class="no">{r.right_no or ""}</td>'
            f'<td class="r">{escape(r.right or "")}</td></tr>'
        )
    return (
        f'{SPLIT_CSS}<table class="ss-split"><colgroup><col style="width:3.5em"><col>'
        f'<col style="width:3.5em"><col></colgroup><thead><tr><th></th>'
        f"<th>{escape(left_title)}</th><th></th><th>{escape(right_title)}</th></tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table>"
    )
