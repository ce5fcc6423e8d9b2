"""HTML views for notebooks: ``_repr_html_`` of a run, a checkpoint and a diff.

Compact, self-contained HTML (inline styles, no JavaScript) so the same facts the app shows
appear in Jupyter, in exported notebooks and on GitHub's notebook renderer. Every value is
escaped; long values are shortened, with the full value in the cell's ``title``.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from debugger.errors import StepscopeError
from debugger.json_text import ELLIPSIS, dumps, preview

if TYPE_CHECKING:
    from debugger.diff.checkpoint import CheckpointDiff
    from debugger.diff.states import DiffRow
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
# Jupyter and GitHub style plain tables already; only alignment and a monospace font here.
_TABLE = '<table style="font-family:monospace;font-size:12px;text-align:left">'


def esc(value: Any) -> str:
    """HTML-escape any value's text."""
    return html.escape(str(value), quote=True)


def json_cell(value: Any) -> str:
    """A cell showing a value as compact JSON; the full JSON in the tooltip when cut."""
    short = preview(value, MAX_VALUE_CHARS)
    full = preview(value, limit=10_000) if short.endswith(ELLIPSIS) else short
    title = f' title="{esc(full)}"' if short != full else ""
    return f"<td{title}>{esc(short)}</td>"


def text_cell(text: Any, colour: str | None = None) -> str:
    """A cell showing plain text (None as empty)."""
    style = f' style="color:{colour}"' if colour else ""
    return f"<td{style}>{'' if text is None else esc(text)}</td>"


def table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A table of already-rendered cells (see :func:`text_cell`, :func:`json_cell`)."""
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    body = "".join(f"<tr>{''.join(cells)}</tr>" for cells in rows)
    return f"{_TABLE}<tr>{head}</tr>{body}</table>"


def _badge(status: str) -> str:
    colour = _STATUS_COLOURS.get(status, "#57606a")
    return (
        f'<span style="background:{colour};color:white;border-radius:8px;padding:0 6px;'
        f'font-size:11px">{esc(status)}</span>'
    )


def _facts(pairs: Iterable[tuple[str, Any]]) -> str:
    rows = [(text_cell(k), text_cell(v)) for k, v in pairs if v not in (None, [], {}, "")]
    return table(("field", "value"), rows)


def run_html(run: Run) -> str:
    """A run: id, status badge and reason, steps, budgets against limits, versions, error."""
    b = run.budgets
    limits = run.limits or {}
    facts = [
        ("agent", run.agent),
        ("status reason", run.status_reason),
        ("steps", run.steps_text("-")),
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
        ("tool_versions", preview(c.tool_versions, MAX_VALUE_CHARS)),
        ("metadata", preview(c.metadata, MAX_VALUE_CHARS)),
        ("state", f"{c.state_bytes:,} bytes, hash {c.state_hash[:12]}"),
    ]  # fmt: skip
    pending = _effects_table(c.pending_effects)
    state = _indented(c.working_state)
    return (
        f"<div><b>Checkpoint {esc(c.run_id)} step {c.step_index}</b>{_facts(facts)}"
        f"{pending}<details><summary>working state</summary>"
        f'<pre style="font-size:11px">{esc(state)}</pre></details></div>'
    )


def _indented(value: Any) -> str:
    try:
        text = dumps(value, indent=True)
    except StepscopeError as e:  # nested too deeply to write: say so in the view
        return str(e)
    if len(text) <= MAX_STATE_CHARS:
        return text
    return text[:MAX_STATE_CHARS] + f"\n… ({len(text) - MAX_STATE_CHARS:,} more characters)"


def _effects_table(effects: Sequence[Any]) -> str:
    if not effects:
        return "<div><i>no pending effects</i></div>"
    rows = [
        (text_cell(e.get("idempotency_key")), text_cell(e.get("tool")),
         text_cell(e.get("status")), json_cell(e.get("args")))
        if isinstance(e, dict) else (text_cell(None), text_cell(None), text_cell(None),
                                     json_cell(e))
        for e in effects
    ]  # fmt: skip
    header = ("idempotency_key", "tool", "status", "args")
    return f"<div><b>pending effects</b>{table(header, rows)}</div>"


def _kind_colour(kind: str) -> str:
    for suffix, colour in _KIND_COLOURS.items():
        if kind.endswith(suffix) or suffix in kind:
            return colour
    return "#57606a"


def diff_rows_html(rows: Sequence[DiffRow], title: str = "state") -> str:
    """Diff rows as a table of kind, path, old, new (at most :data:`MAX_ROWS`)."""
    if not rows:
        return f"<div><b>{esc(title)}</b>: <i>no differences</i></div>"
    cells = [
        (text_cell(r.kind, _kind_colour(r.kind)),
         text_cell(r.path if r.new_path is None else f"{r.path} → {r.new_path}"),
         text_cell("") if r.kind.endswith("_added") else json_cell(r.old),
         text_cell("") if r.kind.endswith("_removed") else json_cell(r.new))
        for r in rows[:MAX_ROWS]
    ]  # fmt: skip
    more = len(rows) - MAX_ROWS
    note = f"<div><i>{more} more rows not shown</i></div>" if more > 0 else ""
    return (
        f"<div><b>{esc(title)}</b>: {len(rows)} differences"
        f"{table(('kind', 'path', 'old', 'new'), cells)}{note}</div>"
    )


def checkpoint_diff_html(d: CheckpointDiff) -> str:
    """A checkpoint diff: summary line, then state, budgets, pending effects and metadata."""
    parts = [f"<div><b>{esc(d.summary())}</b></div>", diff_rows_html(d.state, "state")]
    if d.budgets:
        budgets = [
            (text_cell(b.name), text_cell(f"{b.old:,}"), text_cell(f"{b.new:,}"),
             text_cell(f"{b.delta:+,}", "#cf222e" if b.delta < 0 else None))
            for b in d.budgets
        ]  # fmt: skip
        parts.append(
            f"<div><b>budgets</b>{table(('budget', 'old', 'new', 'delta'), budgets)}</div>"
        )
    if d.effects:
        effects = [
            (text_cell(e.idempotency_key or "(no key)"),
             text_cell(e.change, _kind_colour(e.change)), text_cell(e.tool),
             text_cell(e.old_status), text_cell(e.new_status))
            for e in d.effects
        ]  # fmt: skip
        header = ("idempotency_key", "change", "tool", "old status", "new status")
        parts.append(f"<div><b>pending effects</b>{table(header, effects)}</div>")
    if d.metadata:
        parts.append(diff_rows_html(d.metadata, "metadata"))
    return "<div>" + "".join(parts) + "</div>"
