"""The Timeline's data: one step of a run, and the budgets over the run.

For one step: what changed since the previous step, budgets, pending effects, metadata with
changes marked, the step's tool and model calls. Values are cut to short previews
so a step's page data stays small (well under 50 kB) however large the working state is; the
full state is fetched only when someone asks for it.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import orjson
import pandas as pd

from debugger.contract import BUDGET_LIMITS, BUDGETS
from debugger.diff import DiffRow, diff_checkpoints, diff_states
from debugger.diff.text import StateText
from debugger.json_text import ELLIPSIS, PREVIEW_CHARS, loads, preview
from debugger.model import Checkpoint, Effect, ToolCall
from debugger.pages_data.markup import FULL_CHARS
from debugger.pages_data.recent import fetch, gc_paused
from debugger.store import Store

MAX_DIFF_ROWS = 150
"""Diff rows shown for one step; the rest are counted, and the Diff page shows them all."""


@dataclass(frozen=True)
class StepRef:
    """One position of a run's step navigator: a checkpoint in write order."""

    position: int
    """Index in write order (0 is the first checkpoint)."""
    step_index: int
    """The checkpoint's step."""
    checkpoint_id: str
    """The checkpoint."""
    parent_id: str | None
    """The checkpoint it continues from."""
    label: str
    """What the navigator shows: ``step 7``, or ``step 7 · 2`` for a second one at step 7."""
    state_hash: str = ""
    """Hash of the stored state: with the id, it names the checkpoint's content exactly."""


def step_refs(store: Store, run_id: str) -> list[StepRef]:
    """The run's checkpoints in write order, labelled by step (forks get a suffix)."""
    frame = store.timeline(run_id)
    seen: dict[int, int] = {}
    refs = []
    columns = zip(
        frame["step_index"].tolist(),
        frame["checkpoint_id"].tolist(),
        frame["parent_id"].tolist(),
        frame["state_hash"].tolist(),
        strict=True,
    )
    for pos, (step_index, checkpoint_id, parent_id, state_hash) in enumerate(columns):
        step = int(step_index)
        seen[step] = seen.get(step, 0) + 1
        label = f"step {step}" if seen[step] == 1 else f"step {step} · {seen[step]}"
        parent = parent_id if isinstance(parent_id, str) else None
        refs.append(StepRef(pos, step, str(checkpoint_id), parent, label, str(state_hash)))
    return refs


def find_ref(refs: list[StepRef], step: int | None, checkpoint_id: str | None = None) -> int:
    """Position of a checkpoint (by id), else of the newest at ``step``, else the last one."""
    if checkpoint_id:
        for ref in refs:
            if ref.checkpoint_id == checkpoint_id:
                return ref.position
    if step is not None:
        at_step = [r.position for r in refs if r.step_index == step]
        if at_step:
            return at_step[-1]
    return len(refs) - 1


def previous_ref(refs: list[StepRef], position: int) -> StepRef | None:
    """What a step is compared with: its parent checkpoint, else the one written before it."""
    ref = refs[position]
    if ref.parent_id:
        for other in refs:
            if other.checkpoint_id == ref.parent_id:
                return other
    return refs[position - 1] if position > 0 else None


def url_checkpoint(refs: list[StepRef], position: int) -> str | None:
    """The checkpoint id a link to ``position`` needs: None when the step alone names it."""
    ref = refs[position]
    alone = sum(1 for r in refs if r.step_index == ref.step_index) == 1
    return None if alone else ref.checkpoint_id


def nav_label(ref: StepRef, steps_with_findings: Collection[int | None]) -> str:
    """The navigator's label of a step, marked when the audit found something there."""
    return ref.label + (" ⚠" if ref.step_index in steps_with_findings else "")


def ignore_paths(text: str) -> tuple[str, ...]:
    """State paths to leave out of the diff, from a comma-separated list."""
    return tuple(p.strip() for p in text.split(",") if p.strip())


@dataclass(frozen=True)
class StepView:
    """Everything the Timeline shows for one step, JSON-ready and small."""

    run_id: str
    step_index: int
    checkpoint_id: str
    parent_id: str | None
    created_at: str | None
    schema_version: int | None
    state_bytes: int
    previous: dict[str, Any] | None
    """The checkpoint compared with (step_index, checkpoint_id), None for the first."""
    diff: list[dict[str, str]]
    """Rows of path, kind, old, new (previews), at most MAX_DIFF_ROWS."""
    diff_total: int
    """All diff rows, including those not listed."""
    budgets: list[dict[str, Any]]
    """Per budget: name, spent, delta since the previous step, limit, share of the limit."""
    pending_effects: list[dict[str, Any]]
    """Effects pending at this checkpoint, with key, tool, status and the effects log's status."""
    effect_changes: list[dict[str, Any]]
    """Pending effects added, removed or changed since the previous step (by key)."""
    metadata: list[dict[str, Any]]
    """Run metadata (and versions) as key, value, previous and a changed flag."""
    model_version_changed: bool
    """True when the model version differs from the previous step's."""
    calls: list[dict[str, Any]]
    """The step's tool and model calls, in call order."""
    findings: list[dict[str, Any]] = field(default_factory=list)
    """Audit findings at this step (filled by the caller when an audit is available)."""

    def to_dict(self) -> dict[str, Any]:
        """Return the view as a dict."""
        return asdict(self)

    def to_json(self) -> str:
        """Return the view as compact JSON (what the app caches and renders)."""
        return orjson.dumps(self.to_dict()).decode()


_FULL_LIMIT: ContextVar[int] = ContextVar("stepscope_full_limit", default=FULL_CHARS)
"""Longest ``*_full`` text a row carries: :data:`FULL_CHARS` for a page, none in
:func:`uncut` (a download of one value)."""


def _with_full(row: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    """Set ``row[key]`` to the value's preview; a shortened value's text is under
    ``KEY_full`` (up to :data:`FULL_CHARS`: the page opens it on click), and a value longer
    than that gives its length under ``KEY_chars`` (the page offers it whole as a download,
    read again by :func:`whole_value`, so the page's data stays small)."""
    text = preview(value, sys.maxsize)
    row[key] = _cut(text, PREVIEW_CHARS)
    if len(text) > PREVIEW_CHARS:
        limit = _FULL_LIMIT.get()
        row[f"{key}_full"] = _cut(text, limit)
        if len(text) > limit:
            row[f"{key}_chars"] = len(text)
    return row


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + ELLIPSIS


@contextmanager
def uncut() -> Iterator[None]:
    """Within this, the rows' ``*_full`` texts are whole, however long."""
    token = _FULL_LIMIT.set(sys.maxsize)
    try:
        yield
    finally:
        _FULL_LIMIT.reset(token)


def whole_value(
    store: Store,
    run_id: str,
    checkpoint_id: str,
    ignore_paths: tuple[str, ...],
    table: str,
    index: int,
    column: str,
    refs: list[StepRef] | None = None,
) -> str:
    """The whole text of one value that a step's view cut (``KEY_chars`` in its row), for
    a download: the step's view built again with nothing cut, so it is the same value.

    Args:
        table: the view's list (``diff``, ``pending_effects``, ``metadata``, ``calls``).
        index: the row in that list.
        column: the row's key (``value``, ``args``, ``request``...).

    Raises:
        NotFound: the run or checkpoint is gone (the store changed).
    """
    with uncut():
        view = step_view(store, run_id, checkpoint_id=checkpoint_id,
                         ignore_paths=ignore_paths, refs=refs)  # fmt: skip
    row = getattr(view, table)[index]
    return str(row.get(f"{column}_full", row[column]))


def diff_rows(rows: list[DiffRow], limit: int = MAX_DIFF_ROWS) -> list[dict[str, str]]:
    """State diff rows as previews, at most ``limit`` of them (the absent side is blank);
    a shortened value's whole text is under ``old_full`` / ``new_full``."""
    out = []
    for r in rows[:limit]:
        row: dict[str, Any] = {"path": r.path, "kind": r.kind, "old": "", "new": ""}
        if not r.kind.endswith("_added"):
            _with_full(row, "old", r.old)
        if not r.kind.endswith("_removed"):
            _with_full(row, "new", r.new)
        out.append(row)
    return out


def budget_rows(ckpt: Checkpoint, prev: Checkpoint | None) -> list[dict[str, Any]]:
    """Budgets consumed at a checkpoint, the change since ``prev`` and the run's limits."""
    limits = ckpt.metadata.get("limits") if isinstance(ckpt.metadata, dict) else None
    limits = limits if isinstance(limits, dict) else {}
    rows = []
    for column, limit_key in BUDGET_LIMITS.items():
        spent = getattr(ckpt.budgets, column)
        before = getattr(prev.budgets, column) if prev else 0
        limit = limits.get(limit_key)
        share = spent / limit if isinstance(limit, int | float) and limit > 0 else None
        rows.append(
            {
                "name": column,
                "spent": spent,
                "delta": spent - before,
                "limit": limit,
                "share": share,
            }
        )
    return rows


def pending_rows(ckpt: Checkpoint, effects: list[Effect]) -> list[dict[str, Any]]:
    """Pending effects of a checkpoint with what the effects log says about each key."""
    logged: dict[str, str] = {}
    for e in effects:
        if e.idempotency_key:
            logged[e.idempotency_key] = e.status  # later rows win: the latest outcome
    rows = []
    for item in ckpt.pending_effects or []:
        entry = item if isinstance(item, dict) else {"value": item}
        key = entry.get("idempotency_key") or entry.get("key")
        row = {
            "tool": entry.get("tool") or entry.get("name"),
            "idempotency_key": key,
            "status": entry.get("status", "pending"),
            "logged_status": logged.get(str(key)) if key else None,
        }
        rows.append(_with_full(row, "args", entry.get("args")))
    return rows


def _flat_metadata(ckpt: Checkpoint) -> dict[str, Any]:
    flat: dict[str, Any] = {
        "model_version": ckpt.model_version,
        "schema_version": ckpt.schema_version,
    }
    for tool, version in sorted((ckpt.tool_versions or {}).items()):
        flat[f"tool_versions.{tool}"] = version
    meta = ckpt.metadata if isinstance(ckpt.metadata, dict) else {"metadata": ckpt.metadata}
    for key, value in sorted(meta.items()):
        flat[f"metadata.{key}"] = value
    return flat


_META_PATH = re.compile(r"^root\['([^']*)'\](?:\['([^']*)'\])?")


def _flat_key(path: str) -> str:
    """``root['metadata']['status']`` -> ``metadata.status``; ``root['model_version']`` ->
    ``model_version`` (the keys of :func:`_flat_metadata`)."""
    m = _META_PATH.match(path)
    if not m:
        return path
    return f"{m.group(1)}.{m.group(2)}" if m.group(2) is not None else m.group(1)


def metadata_rows(
    ckpt: Checkpoint, prev: Checkpoint | None, changes: list[DiffRow]
) -> list[dict[str, Any]]:
    """Versions and metadata of a checkpoint, each marked when ``changes`` (the metadata
    rows of :func:`debugger.diff.diff_checkpoints`) touch it."""
    now = _flat_metadata(ckpt)
    before = _flat_metadata(prev) if prev else {}
    changed = {_flat_key(r.path) for r in changes}
    keys = list(now) + [k for k in before if k not in now]
    rows = []
    for k in keys:
        row: dict[str, Any] = {"key": k}
        _with_full(row, "value", now.get(k))
        if prev:
            _with_full(row, "previous", before.get(k))
        else:
            row["previous"] = None
        row["changed"] = k in changed or k.split(".")[0] in changed
        rows.append(row)
    return rows


def call_rows(calls: list[ToolCall]) -> list[dict[str, Any]]:
    """A step's tool and model calls as preview rows."""
    rows = []
    for c in calls:
        row: dict[str, Any] = {"seq": c.seq, "kind": c.kind, "name": c.name}
        _with_full(row, "request", c.request)
        _with_full(row, "response", c.response)
        row.update(error=c.error, idempotency_key=c.idempotency_key, is_write=c.is_write)
        rows.append(row)
    return rows


def step_view(
    store: Store,
    run_id: str,
    step: int | None = None,
    checkpoint_id: str | None = None,
    ignore_paths: tuple[str, ...] = (),
    refs: list[StepRef] | None = None,
) -> StepView:
    """Build the Timeline's data for one step (the head when neither step nor id is given).

    The step is compared with its parent checkpoint (or the one written before it), so the
    diff shows what this step changed, also on a branch of a fork.

    Args:
        store: the store.
        run_id: the run.
        step: the step (the newest checkpoint at that step).
        checkpoint_id: a checkpoint, when a step has several (forks, re-executed steps).
        ignore_paths: state paths left out of the diff (noisy fields such as timestamps).
        refs: the run's :func:`step_refs`, when the caller already has them (the app caches
            them per run, so a step change reads only the two checkpoints it shows).

    Raises:
        NotFound: no such run or step.
    """
    refs = refs if refs is not None else step_refs(store, run_id)
    if not refs:  # a run without checkpoints: the store raises NotFound with its hint
        return view_of(store, store.checkpoint(run_id, step, checkpoint_id), None, ignore_paths)
    pos = find_ref(refs, step, checkpoint_id)
    if step is not None and checkpoint_id is None and refs[pos].step_index != step:
        store.checkpoint(run_id, step)  # the step does not exist: raises NotFound
    prev_ref = previous_ref(refs, pos)
    with gc_paused():
        prev = fetch(store, run_id, refs, prev_ref) if prev_ref else None
        cur = fetch(store, run_id, refs, refs[pos])
        if prev is None:
            ckpt = replace(cur.checkpoint, working_state=loads(cur.state.text))
            return view_of(store, ckpt, None, ignore_paths)
        texts = (prev.state, cur.state)
        return view_of(store, cur.checkpoint, prev.checkpoint, ignore_paths, texts)


def view_of(
    store: Store,
    ckpt: Checkpoint,
    prev: Checkpoint | None,
    ignore_paths: tuple[str, ...] = (),
    state_texts: tuple[StateText, StateText] | None = None,
) -> StepView:
    """The step view of a checkpoint compared with ``prev`` (None: everything is new).

    ``state_texts`` are ``prev``'s and ``ckpt``'s working states as stored JSON texts, when
    the caller read them unparsed (see :meth:`debugger.store.Store.checkpoint_text`), with
    what earlier diffs split of them (:class:`debugger.diff.text.StateText`).

    Raises:
        DiffOptionError: an ignore pattern is malformed.
    """
    if prev is None:
        # against an empty state of its own kind: an entrypoint's (LangGraph's functional
        # API) is None before it first returned, or a list, not an object
        ws = ckpt.working_state
        empty: Any = {} if isinstance(ws, dict) else [] if isinstance(ws, list) else None
        state = diff_states(empty, ws, ignore_paths)
        meta: list[DiffRow] = []
        effect_changes: list[dict[str, Any]] = []
    else:
        cd = diff_checkpoints(prev, ckpt, ignore_paths, state_texts=state_texts)
        state, meta = cd.state, cd.metadata
        effect_changes = [
            {
                "idempotency_key": e.idempotency_key,
                "change": e.change,
                "tool": e.tool,
                "old_status": e.old_status,
                "new_status": e.new_status,
            }
            for e in cd.effects
        ]
    return StepView(
        run_id=ckpt.run_id,
        step_index=ckpt.step_index,
        checkpoint_id=ckpt.checkpoint_id,
        parent_id=ckpt.parent_id,
        created_at=ckpt.created_at.isoformat() if ckpt.created_at else None,
        schema_version=ckpt.schema_version,
        state_bytes=ckpt.state_bytes,
        previous=(
            {"step_index": prev.step_index, "checkpoint_id": prev.checkpoint_id} if prev else None
        ),
        diff=diff_rows(state),
        diff_total=len(state),
        budgets=budget_rows(ckpt, prev),
        pending_effects=pending_rows(
            ckpt, store.effects(ckpt.run_id) if ckpt.pending_effects else []
        ),
        effect_changes=effect_changes,
        metadata=metadata_rows(ckpt, prev, meta),
        model_version_changed=prev is not None and prev.model_version != ckpt.model_version,
        calls=call_rows(store.tool_calls(ckpt.run_id, ckpt.step_index)),
    )


def budget_series(store: Store, run_id: str) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Budgets over the run's checkpoints (write order) and the run's limits.

    Returns:
        A frame with step_index, tokens_spent, steps_spent, wall_clock_ms (one row per
        checkpoint) and the limits from the head's ``metadata.limits``.
    """
    frame = store.timeline(run_id)
    cols = ["step_index", *BUDGETS]
    return frame[cols].reset_index(drop=True), dict(store.run(run_id).limits or {})
