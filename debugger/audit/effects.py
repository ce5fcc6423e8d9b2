"""Audit rules about side effects: keys, unknown outcomes, repeats.

A write is safe to resume only if the system of record can recognise it by its idempotency
key, so these rules look at the keys: effects without one, effects whose outcome is still
unknown at the head (a resume must look them up by key, never repeat them blindly), one key
executed twice, and one action executed under two keys (the key did not protect it).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import orjson

from debugger.audit.registry import AuditInput, rule
from debugger.audit.registry import finding as _f
from debugger.json_text import preview
from debugger.model import EffectCheck, Finding, Severity

ARGS_CHARS = 80
"""Longest argument text in a finding's message."""

OPEN = ("pending", "unknown")
DONE = ("committed", "failed")


def effect_label(pending: Any) -> str:
    """What a pending entry writes: its tool, else the channel it writes (LangGraph)."""
    if not isinstance(pending, dict):
        return "effect"
    if pending.get("tool"):
        return str(pending["tool"])
    return f"write to {pending['channel']}" if pending.get("channel") else "effect"


def key_of(pending: Any) -> str | None:
    """The idempotency key of a pending-effect entry (``idempotency_key`` or ``key``).

    A tool call (LangGraph) whose entry names no key falls back to its ``idempotency_key``
    argument: the key the call itself carries to the system of record.
    """
    if not isinstance(pending, dict):
        return None
    key = pending.get("idempotency_key") or pending.get("key")
    args = pending.get("args")
    if not key and pending.get("kind") == "tool_call" and isinstance(args, dict):
        key = args.get("idempotency_key")
    return str(key) if key else None


def in_doubt(inp: AuditInput) -> list[dict[str, Any]]:
    """The head's pending entries a resume cannot take as settled.

    Not the writes a runtime keeps and applies itself on resume (LangGraph's pending writes of
    the tasks that finished in a failed superstep): those are replayed, never lost or repeated.
    """
    return [
        p for p in inp.head.pending_effects
        if not (isinstance(p, dict) and p.get("kind") in inp.runtime.applied_kinds)
    ]  # fmt: skip


def asks_first(inp: AuditInput, pending: Any) -> bool:
    """A tool call at a head parked on a question: the runtime runs it when the run resumes
    (LangGraph runs the task again from its start with the answer; the OpenAI Agents SDK runs
    a call once approved), so no outcome of it is in doubt; only what the tool did before it
    asked would happen again."""
    return (
        inp.runtime.tool_calls_in_state
        and isinstance(pending, dict)
        and pending.get("kind") == "tool_call"
        and not inp.runtime.attempted(pending, inp.head)
    )


def action_key(tool: str, args: Any) -> str:
    """A canonical text of tool + arguments, to spot the same action under two keys."""
    return tool + " " + orjson.dumps(args, option=orjson.OPT_SORT_KEYS).decode()


def short(args: Any) -> str:
    """Arguments as one short line for a finding's message (the shared preview, 80 chars)."""
    return preview(args, ARGS_CHARS)


@rule("pending-effect-without-key")
def keyless(inp: AuditInput) -> list[Finding]:
    """A pending effect (at the head, or in the effects table) without an idempotency key.

    The head says what is pending now: an effect an older checkpoint listed and a later one
    no longer does was answered (a tool message, a commit) and is not in doubt.
    """
    out = []
    c = inp.head
    for p in in_doubt(inp):
        if key_of(p) is None and asks_first(inp, p):
            tool = effect_label(p)
            out.append(
                _f("pending-effect-without-key", "warning", c.step_index,
                   f"checkpoint at step {c.step_index} lists a pending {tool} without an "
                   "idempotency key: the run waits for an answer and resuming runs the call "
                   "(from its start), so anything it did before asking would happen again",
                   "give the call an idempotency key, or have the tool ask before it acts")
            )  # fmt: skip
        elif key_of(p) is None:
            tool = effect_label(p)
            out.append(
                _f("pending-effect-without-key", "error", c.step_index,
                   f"checkpoint at step {c.step_index} lists a pending {tool} without an "
                   "idempotency key: its outcome cannot be looked up",
                   "give every write a key and record it before the call")
            )  # fmt: skip
    for e in inp.effects:
        if e.idempotency_key is None and e.status in OPEN:
            out.append(
                _f("pending-effect-without-key", "error", e.step_index,
                   f"{e.tool} {short(e.args)} at step {e.step_index} is {e.status} and has no "
                   "idempotency key: its outcome cannot be looked up",
                   "check the system of record by hand; give every write a key")
            )  # fmt: skip
    return out


def open_effects(inp: AuditInput) -> list[EffectCheck]:
    """Effects a resume from the head must resolve by key before going on.

    Those the head lists as pending, plus effects recorded at or after the head's step whose
    key has no committed or failed row (the same rule the run status uses). Status ``planned``
    marks a pending entry that was never attempted (no effect row, not ``unknown``): a resume
    still looks its key up, but nothing is in doubt yet.
    """
    head = inp.head
    resolved = {e.idempotency_key for e in inp.effects if e.status in DONE and e.idempotency_key}
    attempted = {e.idempotency_key: e for e in inp.effects if e.status in OPEN}
    checks: dict[str, EffectCheck] = {}
    for p in in_doubt(inp):
        key = key_of(p)
        if key and key not in resolved and isinstance(p, dict):
            row = attempted.get(key)
            status = (
                row.status if row
                else "unknown" if inp.runtime.attempted(p, head)
                else "planned"
            )  # fmt: skip
            step = row.step_index if row else head.step_index
            checks[key] = EffectCheck(key, str(p.get("tool", "?")), p.get("args"), step, status)
    for e in inp.effects:
        key = e.idempotency_key
        if key and key not in resolved and e.status in OPEN and e.step_index >= head.step_index:
            checks[key] = EffectCheck(key, e.tool, e.args, e.step_index, e.status)
    return sorted(checks.values(), key=lambda c: (c.step_index, c.idempotency_key or ""))


@rule("effect-outcome-unknown")
def unknown_outcome(inp: AuditInput) -> list[Finding]:
    """An effect still pending, outcome unknown, at the last checkpoint."""
    return [
        _f("effect-outcome-unknown", "warning", c.step_index,
           f"{c.tool} {short(c.args)} (key {c.idempotency_key}) was attempted at step "
           f"{c.step_index} and is still {c.status} at the last checkpoint: it may or may not "
           "have happened",
           f"look up key {c.idempotency_key} in the system of record before resuming; never "
           "repeat it blindly")
        for c in open_effects(inp)
        if c.status != "planned"
    ]  # fmt: skip


@rule("resume-checked-effects")
def resume_checked(inp: AuditInput) -> list[Finding]:
    """A resume that looked its open effects up by key (``metadata.resume.resolved_effects``)."""
    out = []
    for c in inp.lineage:
        resume = c.metadata.get("resume") if isinstance(c.metadata, dict) else None
        done = resume.get("resolved_effects") if isinstance(resume, dict) else None
        if not done:
            continue
        outcomes = ", ".join(
            f"{d.get('idempotency_key')} → {d.get('outcome')}" for d in done if isinstance(d, dict)
        )
        out.append(
            _f("resume-checked-effects", "info", c.step_index,
               f"the resume before step {c.step_index} looked open effects up by key: {outcomes}",
               "nothing to do: this is how a resume should treat unknown outcomes")
        )  # fmt: skip
    return out


def _executions(inp: AuditInput) -> list[tuple[str | None, str, Any, int, bool]]:
    """Writes that ran: (key, tool, args, step, succeeded), from the tape or else the effects."""
    writes = [t for t in inp.calls if t.is_write]
    if writes:
        return [(t.idempotency_key, t.name, t.request, t.step_index, t.error is None)
                for t in writes]  # fmt: skip
    return [(e.idempotency_key, e.tool, e.args, e.step_index, e.status == "committed")
            for e in inp.effects if e.status != "pending"]  # fmt: skip


@rule("key-executed-twice")
def key_twice(inp: AuditInput) -> list[Finding]:
    """One idempotency key executed more than once."""
    by_key: dict[str, list[tuple[str | None, str, Any, int, bool]]] = defaultdict(list)
    for ex in _executions(inp):
        if ex[0]:
            by_key[ex[0]].append(ex)
    out = []
    for key, runs in by_key.items():
        if len(runs) < 2:
            continue
        steps = ", ".join(str(r[3]) for r in runs)
        ok = sum(r[4] for r in runs)
        severity: Severity = "error" if ok >= 2 else "warning"
        out.append(
            _f("key-executed-twice", severity, runs[1][3],
               f"{runs[0][1]} with key {key} was executed {len(runs)} times (steps {steps}; "
               f"{ok} succeeded)",
               "look the key up before executing; the key only helps if the receiving system "
               "deduplicates on it — check it for duplicates now")
        )  # fmt: skip
    return out


@rule("same-action-different-keys")
def same_action(inp: AuditInput) -> list[Finding]:
    """The same tool and arguments executed under two different keys."""
    by_action: dict[str, dict[str, int]] = defaultdict(dict)
    tool_of: dict[str, tuple[str, Any]] = {}
    for key, tool, args, step, _ in _executions(inp):
        if key:
            action = action_key(tool, args)
            by_action[action].setdefault(key, step)
            tool_of[action] = (tool, args)
    out = []
    for action, keys in by_action.items():
        if len(keys) < 2:
            continue
        tool, args = tool_of[action]
        listed = ", ".join(f"{k} (step {s})" for k, s in keys.items())
        out.append(
            _f("same-action-different-keys", "error", sorted(keys.values())[1],
               f"{tool} {short(args)} was executed under {len(keys)} keys: {listed}",
               "derive the key from the action (run, step, tool, arguments), not from a "
               "counter or a clock, so a repeat is recognised")
        )  # fmt: skip
    return out


__all__ = [
    "action_key", "asks_first", "effect_label", "in_doubt", "key_of", "open_effects", "short",
]  # fmt: skip
