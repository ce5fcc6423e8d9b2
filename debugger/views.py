"""HTML views for notebooks: ``_repr_html_`` of a run, a checkpoint and a diff.

Compact, self-contained HTML (inline styles, no JavaScript) so the same facts the app shows
appear in Jupyter, in exported notebooks and on GitHub's notebook renderer. Every value is
escaped; long values are shortened, with the full value in the cell's ``title``.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from debugger.diff_checkpoint import CheckpointDiff
    from debugger.diff_states import DiffRow
    from debugger.model import Checkpoint, Run

MAX_VALUE_CHARS = 120
"""Longest value shown in a cell; the full text is in the tooltip."""
MAX_ROWS = 200
"""Most diff rows rendered; a note says how many were left out."""
MAX_STATE_CHARS = 4000
"""Longest working state shown inside a checkpoint's collapsible block."""

_STATUS_COLOURS = {
    "completed": "#1a7f37", "failed": "#cf222e", "crashed": "#cf222e", "parked": "#9a6700",
    "budget_exhausted": "#bc4c00", "in_progress": "#0969da",
}  # fmt: skip
_KIND_COLOURS = {"added": "#1a7f37", "removed": "#cf222e", "changed": "#9a6700"}
_TABLE = "border-collapse:collapse;font-size:12px;font-family:ui-monospace,monospace"
_HEAD = "background:#f6f8fa"
_CELL = "border:1px solid #d0d7de;padding:2px 6px;text-align:left;vertical-align:top"


def esc(value: Any) -> str:
    """HTML-escape any value's text."""
    return html.escape(str(value), quote=True)


def compact(value: Any, limit: int = MAX_VALUE_CHARS) -> str:
    """A value as short JSON (strings quoted, so ``"1"`` and ``1`` look different)."""
    try:
        text = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS, default=repr).decode()
    except TypeError:
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _cell(value: Any, tag: str = "td", style: str = "") -> str:
    full = compact(value, limit=10_000)
    short = compact(value)
    title = f' title="{esc(full)}"' if short != full else ""
    return f'<{tag} style="{_CELL};{style}"{title}>{esc(short)}</{tag}>'


def _text_cell(text: str, tag: str = "td", style: str = "") -> str:
    return f'<{tag} style="{_CELL};{style}">{esc(text)}</{tag}>'


def table(header: Sequence[str], rows: Iterable[Sequence[Any]], raw_first: bool = True) -> str:
    """A small bordered table; the first column as plain text, the rest as compact JSON."""
    head = "".join(_text_cell(h, "th", _HEAD) for h in header)
    body = []
    for row in rows:
        cells = [_text_cell(str(row[0])) if raw_first else _cell(row[0])]
        cells += [_cell(v) for v in row[1:]]
        body.append(f"<tr>{''.join(cells)}</tr>")
    return f'<table style="{_TABLE}"><tr>{head}</tr>{"".join(body)}</table>'


def _badge(status: str) -> str:
    colour = _STATUS_COLOURS.get(status, "#57606a")
    return (
        f'<span style="background:{colour};color:white;border-radius:8px;padding:0 6px;'
        f'font-size:11px">{esc(status)}</span>'
    )


def _facts(pairs: Iterable[tuple[str, Any]]) -> str:
    rows = [(k, v) for k, v in pairs if v not in (None, [], {}, "")]
    return table(("field", "value"), rows)


def run_html(run: Run) -> str:
    """A run: id, status badge and reason, steps, budgets against limits, versions, error."""
    b = run.budgets
    limits = run.limits or {}
    facts = [
        ("agent", run.agent),
        ("status reason", run.status_reason),
        ("steps", f"{run.first_step}-{run.last_step} ({run.checkpoint_count} checkpoints)"),
        ("tokens", _against(b.tokens_spent, limits.get("tokens"))),
        ("steps spent", _against(b.steps_spent, limits.get("steps"))),
        ("wall clock ms", _against(b.wall_clock_ms, limits.get("wall_clock_ms"))),
        ("model versions", ", ".join(run.model_versions)),
        ("schema versions", ", ".join(str(v) for v in run.schema_versions)),
        ("pending effects", run.pending_count or None),
        ("last error", run.last_error),
        ("first at", run.first_at.isoformat() if run.first_at else None),
        ("last at", run.last_at.isoformat() if run.last_at else None),
        ("replay of", f"{run.replay_of} from step {run.replay_from_step}"
         if run.replay_of else None),
    ]  # fmt: skip
    return f"<div><b>Run {esc(run.run_id)}</b> {_badge(run.status)}{_facts(facts)}</div>"


def _against(spent: int, limit: Any) -> str:
    return f"{spent:,} / {limit:,}" if isinstance(limit, int) and limit else f"{spent:,}"


def checkpoint_html(c: Checkpoint) -> str:
    """A checkpoint: identity, budgets, versions, pending effects, state in a <details> block."""
    b = c.budgets
    facts = [
        ("checkpoint_id", c.checkpoint_id),
        ("parent_id", c.parent_id),
        ("schema_version", c.schema_version),
        ("created_at", c.created_at.isoformat() if c.created_at else None),
        ("budgets", f"{b.tokens_spent:,} tokens, {b.steps_spent} steps, "
                    f"{b.wall_clock_ms:,} ms"),
        ("model_version", c.model_version),
        ("tool_versions", compact(c.tool_versions)),
        ("metadata", compact(c.metadata)),
        ("state", f"{c.state_bytes:,} bytes, hash {c.state_hash[:12]}"),
    ]  # fmt: skip
    pending = _effects_table(c.pending_effects)
    state = compact(c.working_state, limit=MAX_STATE_CHARS)
    return (
        f"<div><b>Checkpoint {esc(c.run_id)} step {c.step_index}</b>{_facts(facts)}"
        f"{pending}<details><summary>working state</summary>"
        f'<pre style="white-space:pre-wrap;font-size:11px">{esc(state)}</pre></details></div>'
    )


def _effects_table(effects: Sequence[Any]) -> str:
    if not effects:
        return "<div><i>no pending effects</i></div>"
    rows = [
        (e.get("idempotency_key"), e.get("tool"), e.get("status"), e.get("args"))
        if isinstance(e, dict) else (None, None, None, e)
        for e in effects
    ]  # fmt: skip
    return (
        "<div><b>pending effects</b>"
        + table(("idempotency_key", "tool", "status", "args"), rows, raw_first=False)
        + "</div>"
    )


def _kind_colour(kind: str) -> str:
    for suffix, colour in _KIND_COLOURS.items():
        if kind.endswith(suffix) or suffix in kind:
            return colour
    return "#57606a"


def diff_rows_html(rows: Sequence[DiffRow], title: str = "state") -> str:
    """Diff rows as a table of kind, path, old, new (at most :data:`MAX_ROWS`)."""
    if not rows:
        return f"<div><b>{esc(title)}</b>: <i>no differences</i></div>"
    body = []
    for r in rows[:MAX_ROWS]:
        kind = _text_cell(r.kind, style=f"color:{_kind_colour(r.kind)}")
        path = _text_cell(r.path if r.new_path is None else f"{r.path} → {r.new_path}")
        body.append(f"<tr>{kind}{path}{_cell(r.old)}{_cell(r.new)}</tr>")
    head = "".join(_text_cell(h, "th", _HEAD) for h in ("kind", "path", "old", "new"))
    more = len(rows) - MAX_ROWS
    note = f"<div><i>{more} more rows not shown</i></div>" if more > 0 else ""
    return (
        f"<div><b>{esc(title)}</b>: {len(rows)} differences"
        f'<table style="{_TABLE}"><tr>{head}</tr>{"".join(body)}</table>{note}</div>'
    )


def checkpoint_diff_html(d: CheckpointDiff) -> str:
    """A checkpoint diff: summary line, then state, budgets, pending effects and metadata."""
    parts = [f"<div><b>{esc(d.summary())}</b></div>", diff_rows_html(d.state, "state")]
    if d.budgets:
        parts.append("<div><b>budgets</b>" + table(
            ("budget", "old", "new", "delta"),
            [(b.name, b.old, b.new, b.delta) for b in d.budgets],
        ) + "</div>")  # fmt: skip
    if d.effects:
        parts.append("<div><b>pending effects</b>" + table(
            ("idempotency_key", "change", "tool", "old status", "new status"),
            [(e.idempotency_key, e.change, e.tool, e.old_status, e.new_status)
             for e in d.effects],
        ) + "</div>")  # fmt: skip
    if d.metadata:
        parts.append(diff_rows_html(d.metadata, "metadata"))
    return "<div>" + "".join(parts) + "</div>"
