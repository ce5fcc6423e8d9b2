"""One CrewAI flow's persisted states onto checkpoints, one per completed method.

What goes where (docs/crewai.md says the same for users):

- run: the flow's ``flow_uuid`` (``state.id``); step: the ``flow_states`` rows of the flow in
  the order they were written, counted from 1 (a row is saved after each method that
  completed, so the step is the method); checkpoint id ``<flow>#state-<row id>``;
- working state: ``state_json``, the flow's state after the method; ``schema_version`` from
  an integer ``schema_version`` field of the state, when the application keeps one;
- budgets: steps, the methods completed so far; wall clock, from the flow's first row; no
  tokens (flow persistence records none);
- status: ``parked`` when a ``pending_feedback`` row waits for the flow (its message is the
  open question); otherwise none: CrewAI records neither the end of a flow nor its errors
  (a method that raises saves nothing), so the store shows ``in_progress``, then
  ``crashed`` once the flow's last row is older than an hour.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from loaders.langgraph.decode import to_json
from loaders.langgraph.map import ms_between
from loaders.runtime_rows import RunRows, quarantined, stable_key, with_state


@dataclass
class StateRow:
    """One ``flow_states`` row (or the state of a ``pending_feedback`` row)."""

    row_id: int | None
    method: str
    timestamp: str | None
    raw: str


@dataclass
class Pending:
    """The ``pending_feedback`` row of a flow."""

    context: dict[str, Any]
    state: StateRow


def _loads(raw: str) -> tuple[Any, str | None]:
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        return None, f"state_json is not JSON ({e})"
    if not isinstance(value, dict):
        return None, "state_json is not a JSON object"
    return value, None


def _version(state: dict[str, Any]) -> int | None:
    v = state.get("schema_version")
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _parked(flow: str, pending: Pending) -> dict[str, Any]:
    ctx = pending.context
    method = ctx.get("method_name") or pending.state.method
    question = ctx.get("message")
    value = {"question": question, "method": method, "output": ctx.get("method_output"),
             "emit": ctx.get("emit"), "default_outcome": ctx.get("default_outcome")}  # fmt: skip
    return {
        "status": "parked",
        "status_reason": f"waiting for human feedback on {method}: {question}",
        "interrupt": {"id": flow, "value": value},
        "interrupts": [{"id": flow, "value": value}],
        "feedback": {
            k: ctx[k]
            for k in ("flow_class", "requested_at", "llm", "metadata", "unreadable_context")
            if k in ctx
        },
    }


def map_flow(flow: str, rows: list[StateRow], pending: Pending | None) -> RunRows:
    """The rows of one flow: a checkpoint per persisted method, the parked head."""
    out = RunRows()
    if not rows and pending is not None:
        rows = [pending.state]
    first_ts = rows[0].timestamp if rows else None
    parent: str | None = None
    for step, row in enumerate(rows, start=1):
        cid = f"{flow}#state-{row.row_id if row.row_id is not None else 'pending'}"
        state, problem = _loads(row.raw)
        if problem is not None:
            where = {"table": "flow_states", "id": row.row_id, "flow_uuid": flow,
                     "method_name": row.method, "state_json": row.raw[:2000]}  # fmt: skip
            raw = to_json(where).decode()
            reason = f"flow_states row {row.row_id}: {problem}"
            out.checkpoints.append(quarantined(stable_key(flow, cid), flow, reason, raw))
            continue
        meta: dict[str, Any] = {"method": row.method,
                                "crewai": {"flow_uuid": flow, "row_id": row.row_id}}  # fmt: skip
        if step == len(rows) and pending is not None:
            meta.update(_parked(flow, pending))
        ck = {"_key": stable_key(flow, cid), "run_id": flow, "checkpoint_id": cid,
              "parent_id": parent, "step_index": step, "schema_version": _version(state),
              "created_at": row.timestamp, "tokens_spent": None, "steps_spent": step,
              "wall_clock_ms": ms_between(first_ts, row.timestamp), "pending_effects": b"[]",
              "model_version": None, "tool_versions": None, "metadata": to_json(meta)}  # fmt: skip
        out.checkpoints.append(with_state(ck, to_json(state)))
        parent = cid
    return out
