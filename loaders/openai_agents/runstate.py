"""A saved ``RunState`` (``state.to_string()`` / ``to_json()``) as one checkpoint of its own run.

The SDK serializes a run's state when the run stops for a human (tool calls that need
approval) so that the application can resume it later with ``RunState.from_string``. The
document carries ``$schemaVersion`` (``"1.21"``), ``current_turn`` (the agent loop's
iterations in this run, which ``max_turns`` limits), the current agent, the input, the
generated items, every model response with its usage, the approvals given so far, and
``current_step``: ``next_step_interruption`` lists the calls awaiting approval.

Mapping: the run is the file (its path without ``.json``), the step ``current_turn``; the
state ``{"agent", "items"}`` (the input, then the generated items); tokens from the
context's usage, the step limit from ``max_turns``; the version ``"M.m"`` as the integer
``M * 1000 + m`` (so versions order as the SDK orders them; the text stays in
``metadata.openai_agents.schema_version``). ``next_step_interruption`` parks the run on the
calls awaiting approval, ``next_step_final_output`` completes it. A RunState has no
timestamp: the file's modification time stands for when it was saved.
"""

from __future__ import annotations

from typing import Any

from loaders.langgraph.decode import to_json
from loaders.openai_agents.items import TapeBuilder, pending_calls
from loaders.runtime_rows import JsonDocument, RunRows, with_state

SCHEMA_KEY = "$schemaVersion"


def is_run_state(doc: Any) -> bool:
    """True for a document shaped like a serialized RunState."""
    return isinstance(doc, dict) and SCHEMA_KEY in doc and "current_turn" in doc


def version_number(text: Any) -> int | None:
    """``"1.21"`` as 1021; None when the text is not ``major.minor``."""
    major, _, minor = str(text).partition(".")
    if not (major.isdigit() and (minor.isdigit() or not minor)):
        return None
    return int(major) * 1000 + int(minor or 0)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _items(state: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The run's input items and the items it generated."""
    given = state.get("original_input")
    inputs = [{"role": "user", "content": given}] if isinstance(given, str) else list(given or [])
    made = []
    for g in state.get("generated_items") or []:
        # an approval item repeats the tool call it asks about
        if isinstance(g, dict) and g.get("type") != "tool_approval_item":
            made.append(g.get("raw_item"))
    return [i for i in inputs if isinstance(i, dict)], [i for i in made if isinstance(i, dict)]


def _status(state: dict[str, Any]) -> dict[str, Any]:
    step = _dict(state.get("current_step"))
    kind = step.get("type")
    if kind == "next_step_interruption":
        listed = _dict(step.get("data")).get("interruptions") or []
        asks = [_dict(_dict(i).get("raw_item")) for i in listed]
        named = ", ".join(f"{a.get('name')} ({a.get('call_id')})" for a in asks)
        interrupts = [
            {"id": a.get("call_id"), "value": {"action": f"approve {a.get('name')}",
             "tool": a.get("name"), "arguments": a.get("arguments")}}
            for a in asks
        ]  # fmt: skip
        first: Any = interrupts[0] if interrupts else True
        return {
            "status": "parked", "status_reason": f"awaiting approval of {named}",
            "interrupts": interrupts, "interrupt": first,
        }  # fmt: skip
    if kind == "next_step_final_output":
        return {"status": "completed", "status_reason": "the run produced its final output"}
    return {}


def map_run_state(doc: JsonDocument, state: dict[str, Any], names: tuple[str, ...]) -> RunRows:
    """The rows of one RunState file: one checkpoint and its tape."""
    run_id = doc.stem
    turn = state["current_turn"] if isinstance(state.get("current_turn"), int) else 0
    inputs, made = _items(state)
    items = inputs + made
    context = _dict(state.get("context"))
    usage = _dict(context.get("usage"))
    agent = _dict(state.get("current_agent"))
    trace = _dict(state.get("trace"))
    pending = pending_calls(items, names)
    meta: dict[str, Any] = {
        "agent": agent.get("name"),
        "openai_agents": {"source": "run_state", "file": doc.name,
                          "schema_version": state.get(SCHEMA_KEY),
                          "trace_id": trace.get("id"), "approvals": context.get("approvals"),
                          "current_step": _dict(state.get("current_step")).get("type")},
        "usage": {k: usage.get(k) for k in ("requests", "input_tokens", "output_tokens",
                                             "total_tokens")},
        **({"limits": {"steps": state["max_turns"]}}
           if isinstance(state.get("max_turns"), int) else {}),
        **_status(state),
    }  # fmt: skip
    cid = f"{run_id}#turn-{turn}"
    row = {"_key": doc.key, "run_id": run_id, "checkpoint_id": cid, "parent_id": None,
           "step_index": turn, "schema_version": version_number(state.get(SCHEMA_KEY)),
           "created_at": doc.modified, "tokens_spent": usage.get("total_tokens"),
           "steps_spent": turn, "wall_clock_ms": None, "pending_effects": to_json(pending),
           "model_version": None, "tool_versions": None, "metadata": to_json(meta)}  # fmt: skip
    tape = TapeBuilder(run_id, names)
    for i, item in enumerate(items):
        tape.add(i, item, turn if i >= len(inputs) else 0)
    return RunRows([with_state(row, to_json({"agent": agent.get("name"), "items": items}))],
                   tape.finish())  # fmt: skip
