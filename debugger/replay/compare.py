"""Replay versus original: aligned steps, divergences with their diff, and the write analysis.

A write the replay attempted is a *duplicate* when the original already made it (same
idempotency key and tool; or, for a write without a key, the same tool and arguments) and the
original's effect did not fail: run for real, that code would have repeated the side effect.
Writes the original made after the starting step that the replay never attempted are listed
too, because they are what a fix usually changes.
"""

from __future__ import annotations

from typing import Any

from debugger.diff import diff_states
from debugger.model import Effect
from debugger.replay.inputs import ReplayInputs
from debugger.replay.process import ChildResult
from debugger.replay.report import AlignedStep, Divergence, Violation, WriteRecord
from debugger.replay.tape import canonical


def diff_rows(old: Any, new: Any) -> list[dict[str, Any]]:
    """(path, kind, old, new) rows of two states, as the Diff page and ``stepscope diff`` show."""
    return [
        {"path": r.path, "kind": r.kind, "old": r.old, "new": r.new} for r in diff_states(old, new)
    ]


def aligned_steps(inputs: ReplayInputs, child: ChildResult, replay_id: str) -> list[AlignedStep]:
    """One row per step the replay executed."""
    rows = []
    for ev in child.steps:
        step = int(ev["step_index"])
        original = inputs.original_at(step)
        calls = ev.get("calls") or []
        rows.append(
            AlignedStep(
                step_index=step,
                original_checkpoint_id=original.checkpoint_id if original else None,
                replay_checkpoint_id=None if ev["partial"] else checkpoint_id(replay_id, step),
                state_equal=ev.get("state_equal"),
                calls=len(calls),
                calls_from_tape=sum(1 for c in calls if c.get("source") == "tape"),
                divergences=len(ev.get("divergences") or []),
                original_tokens=original.budgets.tokens_spent if original else None,
                replay_tokens=None if ev["partial"] else int(ev["budgets"]["tokens_spent"]),
                seconds=ev.get("seconds"),
            )
        )
    return rows


def checkpoint_id(replay_id: str, step: int) -> str:
    """The id of the replay's checkpoint at ``step``."""
    return f"{replay_id}@{step}"


def divergences(child: ChildResult) -> list[Divergence]:
    """Every divergence the child noted, with the diff of arguments or state."""
    found = []
    for ev in child.steps:
        for d in ev.get("divergences") or []:
            if d["kind"] == "state":
                diff = diff_rows(d.get("original_state"), ev.get("state"))
            elif d["kind"] == "different_args" and d.get("original"):
                diff = diff_rows(d["original"].get("request"), d["call"].get("request"))
            else:
                diff = []
            found.append(Divergence(step_index=int(d["step_index"]), kind=d["kind"],
                                    message=d["message"], call=d.get("call"),
                                    original=d.get("original"), diff=diff))  # fmt: skip
    return found


def ledger(child: ChildResult) -> list[dict[str, Any]]:
    """The writes the replay attempted, in order (none was executed)."""
    return [
        {
            k: c.get(k)
            for k in (
                "step_index",
                "seq",
                "name",
                "idempotency_key",
                "request",
                "source",
                "status",
                "response",
                "error",
            )
        }
        for ev in child.steps
        for c in ev.get("calls") or []
        if c.get("is_write")
    ]


def final_effects(effects: list[Effect]) -> list[Effect]:
    """One effect per write: the last row recorded for it (pending, then its outcome)."""
    latest: dict[tuple[str, str], Effect] = {}
    for e in effects:
        ident = e.idempotency_key or canonical(e.args).decode()
        latest[(e.tool, ident)] = e
    return list(latest.values())


def _same_write(write: dict[str, Any], effect: Effect) -> str | None:
    if write["name"] != effect.tool:
        return None
    if write.get("idempotency_key") and write["idempotency_key"] == effect.idempotency_key:
        return "idempotency_key"
    if canonical(write.get("request")) == canonical(effect.args):
        return "tool+args"
    return None


def duplicate_writes(writes: list[dict[str, Any]], effects: list[Effect]) -> list[WriteRecord]:
    """Replay writes that repeat a write the original made (and that did not fail)."""
    originals = [e for e in final_effects(effects) if e.status != "failed"]
    found = []
    for w in writes:
        for e in originals:
            how = _same_write(w, e)
            if how:
                found.append(WriteRecord(step_index=int(w["step_index"]), tool=w["name"],
                                         idempotency_key=w.get("idempotency_key"),
                                         args=w.get("request"), original_step=e.step_index,
                                         original_status=e.status, matched_by=how))  # fmt: skip
                break
    return found


def missing_writes(
    writes: list[dict[str, Any]], effects: list[Effect], from_step: int
) -> list[WriteRecord]:
    """Writes the original made after ``from_step`` that no replay write repeats."""
    return [
        WriteRecord(
            step_index=e.step_index,
            tool=e.tool,
            idempotency_key=e.idempotency_key,
            args=e.args,
            original_status=e.status,
        )
        for e in final_effects(effects)
        if e.step_index > from_step and not any(_same_write(w, e) for w in writes)
    ]


def unmatched_calls(inputs: ReplayInputs, child: ChildResult) -> list[dict[str, Any]]:
    """The original's calls in the replayed steps that the replay never made."""
    reached = {int(ev["step_index"]) for ev in child.steps}
    used = {c.get("tape_seq") for ev in child.steps for c in ev.get("calls") or []}
    return [
        {"step_index": t.step_index, "seq": t.seq, "kind": t.kind, "name": t.name,
         "request": t.request, "idempotency_key": t.idempotency_key, "is_write": t.is_write}
        for t in inputs.tape
        if t.step_index in reached and t.seq not in used
    ]  # fmt: skip


def violations(child: ChildResult) -> list[Violation]:
    """Sandbox refusals, in order."""
    return [Violation(int(v["step_index"]), str(v["kind"]), str(v["detail"]))
            for v in child.violations]  # fmt: skip
