"""What a graph replay needs from the store, beyond a native replay's inputs (parent side).

For the child: the starting checkpoint as LangGraph had it (id, step, internal channels,
``next``, pending writes), the recorded tool messages by tool call id, the messages each
step first wrote, the subgraph namespaces' tapes, the original's checkpoint ids by
(namespace, step), and the values the original resumed its interrupts with.

For the comparison: LangGraph records no writes, so the original's writes are read off its
tape with the same rule the replay uses (``--writes``, the tools' marks as the replay met
them, the name rule), each with its outcome: ``committed``, ``failed`` (an error message),
or ``unknown`` when the call was still unanswered where the run stopped (in flight, the
step after the AI message that asked for it).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from debugger.errors import ReplayError
from debugger.model import Checkpoint, Effect, ToolCall
from debugger.replay.graph.world import is_write
from debugger.replay.inputs import CALL_FIELDS, ReplayInputs
from debugger.store import Store
from loaders.langgraph.map import facts_of, is_message, with_state_copies


class NotAGraphRun(ReplayError):
    """``--graph`` on a run that LangGraph did not write."""

    title = "Cannot replay this run as a graph"
    exit_code = 2


def _messages(state: Any) -> list[dict[str, Any]]:
    if not isinstance(state, dict):
        return []
    out = []
    for value in state.values():
        for m in value if isinstance(value, list) else [value]:
            if is_message(m):
                out.append(m)
    return out


def _ids(state: Any) -> set[str]:
    return {facts_of(m).key for m in _messages(state)}


def new_ids(checkpoints: Sequence[Checkpoint]) -> dict[int, list[str]]:
    """Per step, the message ids its checkpoint holds that its predecessor did not."""
    out: dict[int, list[str]] = {}
    before: set[str] = set()
    for c in checkpoints:
        now = _ids(c.working_state)
        out[c.step_index] = sorted(now - before)
        before = now
    return out


def tool_answers(checkpoints: Iterable[Checkpoint]) -> dict[str, Any]:
    """The recorded tool messages by tool call id (states and pending writes)."""
    out: dict[str, Any] = {}
    for c in checkpoints:
        found = _messages(c.working_state)
        for w in c.metadata.get("pending_writes") or []:
            v = w.get("value")
            found += [m for m in (v if isinstance(v, list) else [v]) if is_message(m)]
        for m in found:
            if m.get("type") == "tool" and m.get("tool_call_id"):
                out.setdefault(str(m["tool_call_id"]), m)
    return out


def start_input(c: Checkpoint) -> dict[str, Any]:
    """The starting checkpoint as the child restores it."""
    md = c.metadata
    return {
        "checkpoint_id": c.checkpoint_id,
        "step": c.step_index,
        "ts": c.created_at.isoformat() if c.created_at else None,
        "v": (md.get("langgraph") or {}).get("v"),
        "source": md.get("source"),
        "state": c.working_state,
        # the loader stores a Send's copy of the state (and an entrypoint's output) as a
        # reference to it: put it back
        "internal": with_state_copies(md.get("internal_channels") or {}, c.working_state),
        "next": md.get("next") or [],
        "pending_writes": md.get("pending_writes") or [],
    }


def _tape_dict(t: ToolCall) -> dict[str, Any]:
    return {f: getattr(t, f) for f in CALL_FIELDS}


def _keyed(by_step: dict[int, list[str]]) -> dict[str, list[str]]:
    return {str(k): v for k, v in by_step.items()}


def _namespaces(store: Store, run_id: str) -> dict[str, tuple[list[Checkpoint], list[ToolCall]]]:
    prefix = f"{run_id}/"
    out = {}
    for run in store.run_records(text=prefix):
        if run.run_id.startswith(prefix) and "~replay-" not in run.run_id:
            ns = run.run_id[len(prefix) :]
            out[ns] = (store.checkpoints(run.run_id), store.tool_calls(run.run_id))
    return out


def child_graph_input(
    store: Store, inputs: ReplayInputs, writes: Sequence[str], resume: Sequence[Any]
) -> dict[str, Any]:
    """The ``graph`` part of the child's input document.

    Raises:
        NotAGraphRun: the run was not imported from a LangGraph checkpointer.
    """
    run_id = inputs.run.run_id
    if store.run_flavour(run_id) != "langgraph":
        raise NotAGraphRun(
            f"run {run_id} was not imported from a LangGraph checkpointer "
            f"({store.run_flavour(run_id) or 'unknown'} flavour)",
            "replay it with --agent MODULE:ATTR, or import the LangGraph database first",
        )
    start, lineage = inputs.start, inputs.lineage
    head = lineage[-1] if lineage else start
    spaces = _namespaces(store, run_id)
    everything = [c for cks, _ in spaces.values() for c in cks] + store.checkpoints(run_id)
    ids = [["", c.step_index, c.checkpoint_id] for c in lineage]
    for ns, (cks, _) in spaces.items():
        ids += [[ns, c.step_index, c.checkpoint_id] for c in cks]
    resume_at = {str(c.step_index): c.metadata["resume"] for c in [start, *lineage]
                 if c.metadata.get("resume")}  # fmt: skip
    return {
        "thread_id": (start.metadata.get("langgraph") or {}).get("thread_id") or run_id,
        "start": start_input(start),
        "answers": tool_answers(everything),
        "new_ids": _keyed(new_ids([start, *lineage])),
        "namespaces": {
            ns: {"tape": [_tape_dict(t) for t in tape], "new_ids": _keyed(new_ids(cks))}
            for ns, (cks, tape) in spaces.items()
        },
        "ids": ids,
        # a run parked on interrupt() recorded the question of the step after its head
        "last_step": head.step_index + 1 if head.metadata.get("interrupt") else None,
        "resume": resume_at,
        "resume_given": list(resume),
        "writes": list(writes),
    }


def _effect(run_id: str, t: ToolCall, step: int, status: str) -> Effect:
    return Effect(run_id=run_id, effect_id=f"{run_id}#tape-{t.seq}", step_index=step,
                  idempotency_key=t.idempotency_key, tool=t.name, args=t.request,
                  status=status, result=t.response)  # type: ignore[arg-type]  # fmt: skip


def in_flight(inputs: ReplayInputs, tape: Iterable[ToolCall]) -> list[Effect]:
    """The original's tool calls never answered, at the step that would have run them.

    Their outcome is ``unknown`` when the run failed or crashed (the tool may have run, also
    when it raised: the task's error is on the call, no answer is), ``pending`` otherwise (a
    run parked before its tools).
    """
    status = "unknown" if inputs.run.status in ("failed", "crashed") else "pending"
    # An error with no answer is the tools task's own (it raised and the run stopped): the
    # tool may have done its work before raising, so its outcome is unknown too.
    return [
        _effect(inputs.run.run_id, t, t.step_index + 1, status)
        for t in tape
        if t.kind == "tool" and t.response is None
    ]


def with_in_flight(inputs: ReplayInputs, tape: Iterable[ToolCall]) -> ReplayInputs:
    """``inputs`` whose effects are the calls in flight (the child's partial steps).

    Args:
        inputs: the native replay's inputs.
        tape: the original's whole tape (every step).
    """
    return replace(inputs, effects=in_flight(inputs, tape))


def with_original_writes(
    inputs: ReplayInputs,
    tape: Iterable[ToolCall],
    calls: Iterable[dict[str, Any]],
    writes: Sequence[str],
) -> ReplayInputs:
    """``inputs`` whose effects are the original's writes, classified as the replay did."""
    seen = {str(c["name"]): bool(c.get("is_write")) for c in calls if c.get("kind") == "tool"}
    effects = [e for e in inputs.effects
               if is_write(e.tool, writes, seen.get(e.tool))]  # fmt: skip
    for t in tape:
        if t.kind != "tool" or t.response is None:  # unanswered: in flight (above)
            continue
        if is_write(t.name, writes, seen.get(t.name)):
            status = "failed" if t.error is not None else "committed"
            effects.append(_effect(inputs.run.run_id, t, t.step_index, status))
    return replace(inputs, effects=effects)
