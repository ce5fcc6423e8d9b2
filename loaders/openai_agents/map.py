"""One session run of the OpenAI Agents SDK onto checkpoints (one per turn) and the tape.

What goes where (docs/runtimes-openai-agents.md says the same for users):

- run: the session (``<session>@<branch>`` for an AdvancedSQLiteSession branch); step: the
  user turn; checkpoint id ``<run>#turn-<n>``, parent the previous turn's;
- working state: ``{"items": [...]}``, the session's items up to the end of the turn (what
  ``session.get_items()`` returned then);
- budgets: tokens, the ``turn_usage`` totals up to the turn (AdvancedSQLiteSession after
  ``store_run_usage``; a plain session records none); steps, the turn number; wall clock,
  seconds from the session's first message to the turn's last;
- pending effects: function calls of the items with no output (keyed by an idempotency
  argument);
- status, at the last turn: ``completed`` when it ends with an assistant message and no call
  is pending; otherwise none is set and the store decides (a pending call: ``crashed``, "in
  flight"; a tool output the model never answered: ``in_progress``, ``crashed`` once stale):
  a session records no errors and no pauses, so it cannot say ``failed`` or ``parked``;
- model and tool versions: a session records neither.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from loaders.langgraph.decode import to_json
from loaders.langgraph.map import ms_between
from loaders.openai_agents.items import (
    TapeBuilder,
    is_model_output,
    is_tool_error,
    pending_calls,
    turn_numbers,
)
from loaders.openai_agents.session import Message, SessionRun
from loaders.runtime_rows import RunRows, quarantined, stable_key, with_state


def iso(ts: Any) -> str | None:
    """SQLite's ``CURRENT_TIMESTAMP`` text (UTC, to the second) as an ISO timestamp."""
    if ts is None:
        return None
    try:
        return datetime.fromisoformat(str(ts)).isoformat() + "+00:00"
    except ValueError:
        return str(ts)


def checkpoint_id(run_id: str, turn: int) -> str:
    """The id of a run's checkpoint at a turn (the same on every import)."""
    return f"{run_id}#turn-{turn}"


def _bad(run: SessionRun, m: Message) -> dict[str, Any]:
    raw = to_json({"table": "agent_messages", "id": m.id, "session_id": run.session_id,
                   "message_data": m.raw[:2000]}).decode()  # fmt: skip
    return quarantined(stable_key("agent_messages", str(m.id)), run.run_id,
                       f"agent_messages row {m.id}: {m.problem}", raw)  # fmt: skip


def _status(items: list[dict[str, Any]], pending: list[Any]) -> dict[str, Any]:
    last = items[-1] if items else {}
    if pending:
        names = ", ".join(str(p["tool"]) for p in pending)
        return {"waiting_for": f"the output of {names}"}
    if is_model_output(last) and last.get("type", "message") == "message":
        return {"status": "completed", "status_reason": "the turn ended with the model's answer"}
    return {"waiting_for": "the model's next response"}


def map_session(run: SessionRun, names: tuple[str, ...]) -> RunRows:
    """The rows of one session run: a checkpoint per turn, the tape, quarantined messages."""
    out = RunRows()
    good = [m for m in run.messages if m.item is not None]
    if run.first:
        out.checkpoints += [_bad(run, m) for m in run.messages if m.item is None]
    if not good:
        return out
    items: list[dict[str, Any]] = [m.item for m in good if m.item is not None]
    if run.turns is not None:
        keep = {m.id for m in good}
        turns = [t for m, t in zip(run.messages, run.turns, strict=True) if m.id in keep]
    else:
        turns = turn_numbers(items)
    tape = TapeBuilder(run.run_id, names)
    first_ts = iso(good[0].created_at)
    tokens = 0
    parent: str | None = None
    ends = [i for i in range(len(items)) if i + 1 == len(items) or turns[i + 1] != turns[i]]
    start = 0
    for end in ends:
        turn = turns[end]
        for i in range(start, end + 1):
            tape.add(i, items[i], turn)
        upto = items[: end + 1]
        usage = run.usage.get(turn)
        tokens += int(usage.get("total_tokens") or 0) if usage else 0
        pending = pending_calls(upto, names)
        errors = [
            {"call_id": it.get("call_id"), "output": it.get("output")}
            for it in items[start : end + 1]
            if is_tool_error(it.get("output"))
        ]
        meta: dict[str, Any] = {
            "openai_agents": {"source": "session", "session_id": run.session_id,
                              "branch_id": run.branch_id, "message_ids":
                              [good[start].id, good[end].id]},
            **({"usage": usage} if usage else {}),
            **({"tool_errors": errors} if errors else {}),
            **(_status(upto, pending) if end == ends[-1] else {}),
        }  # fmt: skip
        cid = checkpoint_id(run.run_id, turn)
        ts = iso(good[end].created_at)
        row = {"_key": stable_key(run.run_id, cid), "run_id": run.run_id, "checkpoint_id": cid,
               "parent_id": parent, "step_index": turn, "schema_version": None,
               "created_at": ts, "tokens_spent": tokens if run.usage else None,
               "steps_spent": turn, "wall_clock_ms": ms_between(first_ts, ts),
               "pending_effects": to_json(pending), "model_version": None,
               "tool_versions": None, "metadata": to_json(meta)}  # fmt: skip
        out.checkpoints.append(with_state(row, to_json({"items": upto})))
        parent, start = cid, end + 1
    out.tape = tape.finish()
    return out
