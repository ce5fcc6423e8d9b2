"""The parent's verdict: outcome, reason and comparison, from what the child sent as data.

The child runs the agent's code, so nothing it says is taken as a conclusion. Here the
parent:

- matches every call the child reports against its own copy of the tape (the same
  :func:`~debugger.replay.sandbox.classify` the child answered with; for a LangGraph graph,
  the same :class:`~debugger.replay.graph.world.GraphWorld`, on the tape of the namespace
  the call says it was made in), and checks that a call the child says the tape answered
  got exactly the recorded answer;
- compares each state with the original's itself, and finds the divergences itself;
- checks the steps follow each other, budgets move as the calls (a graph's: its states'
  new AI messages) say, and the reason the
  child gives for stopping holds on the data (a spent budget, the step limit, the end of
  the original, a divergence);
- words the outcome from its own templates; the agent's own text (an exception message, an
  interrupt's request) appears only quoted, clipped to one line.

Anything that does not hold makes the outcome ``sandbox_violation``: the report then says
what the parent saw, and nothing the child claimed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from debugger.replay.budgets import budget_reason
from debugger.replay.isolation import TMP_MB
from debugger.replay.process import ChildResult
from debugger.replay.protocol import clip
from debugger.replay.sandbox import classify, divergence_for, missing_divergences, tokens_of
from debugger.replay.tape import Match, Tape, TapeEntry, canonical


class Untrusted(Exception):
    """The child's data contradicts itself or the tape; the message is the parent's."""


@dataclass(frozen=True)
class Verdict:
    """What the parent concluded."""

    outcome: str
    reason: str
    steps: list[dict[str, Any]]
    """The child's steps with the parent's call statuses, divergences and state equality."""


def judge(doc: dict[str, Any], child: ChildResult, timeout_s: float) -> Verdict:
    """The verdict on a finished child, given the document it was started with."""
    if child.work_exceeded is not None:
        return _violation(child.work_exceeded)
    if child.protocol_error is not None:
        return _violation(f"its messages broke the protocol ({child.protocol_error})")
    try:
        steps = judged_steps(doc, child)
    except Untrusted as e:
        return _violation(str(e))
    if child.timed_out:
        full = [s for s in steps if not s["partial"]]
        where = f" (last step finished: {full[-1]['step_index']})" if full else ""
        return Verdict("timeout", f"stopped by the wall-clock limit of {timeout_s:g} s{where}",
                       steps)  # fmt: skip
    if child.end is None and child.oom_killed:
        return Verdict("memory_limit", "the kernel stopped the replay at its memory limit "
                       f"({doc['memory_mb']} MB, and {2 * TMP_MB} MB for /tmp and /dev/shm)",
                       steps)  # fmt: skip
    if child.end is None:
        code = child.returncode
        tail = (child.stderr_tail.strip().splitlines() or [""])[-1]
        how = f"signal {-code}" if code is not None and code < 0 else f"exit status {code}"
        return Verdict("crashed", f"the replay's process died ({how}) {clip(tail, 300)}".strip(),
                       steps)  # fmt: skip
    try:
        outcome, reason = _stop(doc, child.end, steps)
    except Untrusted as e:
        return _violation(str(e))
    return Verdict(outcome, reason, steps)


def _violation(what: str) -> Verdict:
    return Verdict("sandbox_violation",
                   f"the replay's process cannot be trusted: {what}; none of the steps it "
                   "reported is used", [])  # fmt: skip


class _NativeRules:
    """How a native agent's calls and budgets are checked (a graph's: ``GraphWorld``)."""

    def __init__(self, doc: dict[str, Any]) -> None:
        steps = [int(k) for k in doc["original"]]
        self.tape = Tape(doc["tape"], int(doc["from_step"]), doc.get("effects") or [], steps)
        self.last = original_last(doc)

    def classify(self, call: dict[str, Any], beyond: bool) -> tuple[str, TapeEntry | None]:
        return classify(self.tape, int(call["step_index"]), beyond, call)

    def missing(self, step: int, state: Any) -> list[dict[str, Any]]:
        return missing_divergences(self.tape, step)

    @staticmethod
    def steps_spent(step: int, before: int) -> int:
        return before + 1

    @staticmethod
    def tokens(calls: list[dict[str, Any]], state: Any) -> int:
        return sum(tokens_of(c["response"]) for c in calls if c["kind"] == "model")


def original_last(doc: dict[str, Any]) -> int | None:
    """The original's last step the replay is compared with."""
    if doc.get("graph"):
        from debugger.replay.graph.world import last_step

        return last_step(doc)
    last = doc.get("original_last_step")
    return None if last is None else int(last)


def rules_for(doc: dict[str, Any]) -> Any:
    """The tape and budget rules the replay's calls are judged by: a graph replay's are the
    same :class:`~debugger.replay.graph.world.GraphWorld` its child answered with."""
    if doc.get("graph"):
        from debugger.replay.graph.world import GraphWorld

        return GraphWorld(doc)
    return _NativeRules(doc)


def judged_steps(doc: dict[str, Any], child: ChildResult) -> list[dict[str, Any]]:
    """The child's steps, checked, with the comparison the parent computed."""
    start = int(doc["from_step"])
    ready = child.ready or {}
    originals = ready.get("originals")
    if originals is None:
        originals = {k: v["state"] for k, v in doc["original"].items()}
    rules = rules_for(doc)
    budgets = dict(doc["start"]["budgets"])
    strict = doc["mode"] == "strict"
    judged: list[dict[str, Any]] = []
    for i, ev in enumerate(child.steps):
        step = int(ev["step_index"])
        if step != start + i + 1:
            raise Untrusted(f"it reported step {step} where step {start + i + 1} was next")
        if judged and judged[-1]["partial"]:
            raise Untrusted(f"it reported step {step} after an unfinished step")
        if i >= int(doc["max_steps"]):
            raise Untrusted("it reported more steps than the step limit allows")
        if strict and any(s["divergences"] for s in judged):
            raise Untrusted(f"it went on to step {step} after a divergence in strict mode")
        beyond = rules.last is None or step > rules.last
        calls, divergences = _calls(rules, step, beyond, ev["calls"])
        state_equal = None
        if not ev["partial"]:
            divergences += rules.missing(step, ev["state"])
            _check_budgets(rules, step, budgets, ev, calls)
            budgets = dict(ev["budgets"])
            original = originals.get(str(step))
            if original is not None:
                state_equal = canonical(original) == canonical(ev["state"])
                if not state_equal:
                    divergences.append({
                        "step_index": step, "kind": "state", "call": None, "original": None,
                        "message": f"step {step}: the working state differs from the original",
                        "original_state": original,
                    })  # fmt: skip
        judged.append({**ev, "calls": calls, "divergences": divergences,
                       "state_equal": state_equal})  # fmt: skip
    return judged


def _calls(
    rules: Any, step: int, beyond: bool, calls: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    out, divergences = [], []
    for c in calls:
        if c["step_index"] != step:
            raise Untrusted(f"a call of step {c['step_index']} was reported in step {step}")
        status, entry = rules.classify(c, beyond)
        answered = status == "matched" and entry is not None and entry.recorded
        if (c["source"] == "tape") != answered:
            raise Untrusted(f"step {step}: call {c['name']} says it was answered from the tape "
                            "and the tape disagrees")  # fmt: skip
        if (
            answered
            and entry is not None
            and (canonical(c["response"]) != canonical(entry.response) or c["error"] != entry.error)
        ):
            raise Untrusted(f"step {step}: call {c['name']} reports an answer the tape never "
                            "gave")  # fmt: skip
        if status in ("different_args", "unexpected"):
            divergences.append(divergence_for(c, Match(status, entry)))  # type: ignore[arg-type]
        out.append({**c, "status": status, "tape_seq": entry.seq if entry else None})
    return out, divergences


def _check_budgets(
    rules: Any, step: int, before: dict[str, int], ev: dict[str, Any], calls: list[dict[str, Any]]
) -> None:
    after = ev["budgets"]
    tokens = rules.tokens(calls, ev["state"])
    if after["steps_spent"] != rules.steps_spent(step, before["steps_spent"]):
        raise Untrusted(f"step {step}: its step budget did not move by one step")
    if after["tokens_spent"] != before["tokens_spent"] + tokens:
        raise Untrusted(f"step {step}: its token budget does not match its model calls")
    if after["wall_clock_ms"] < before["wall_clock_ms"]:
        raise Untrusted(f"step {step}: its wall-clock budget went backwards")


def _stop(doc: dict[str, Any], end: dict[str, Any], steps: list[dict[str, Any]]) -> tuple[str, str]:
    """The outcome and reason of the child's stop, checked against its data."""
    why, step, detail = end["why"], int(end["step_index"]), end["detail"]
    full = [s for s in steps if not s["partial"]]
    partial = steps[-1] if steps and steps[-1]["partial"] else None
    last_full = int(full[-1]["step_index"]) if full else int(doc["from_step"])
    graph = bool(doc.get("graph"))
    who = "the graph" if graph else "the agent"
    # a graph parks inside its superstep: interrupt() stops the node that called it
    inside = ("diverged", "memory", "agent_error", *(("parked",) if graph else ()))
    if partial is not None:
        if why not in inside or step != partial["step_index"]:
            raise Untrusted(f"it stopped with {why!r} at step {step} inside an unfinished step")
    elif step != last_full:
        raise Untrusted(f"it stopped at step {step}, and its last finished step is {last_full}")
    quoted = clip(detail or "", 300)
    if why == "done":
        return "completed", f"{who} finished at step {step}"
    if why == "parked":
        return "parked", f"{who} waits for input at step {step}: {quoted}"[:300]
    if why == "budget":
        budgets = full[-1]["budgets"] if full else doc["start"]["budgets"]
        reason = budget_reason(budgets, doc.get("limits") or {})
        if reason is None:
            raise Untrusted("it stopped for a spent budget that is not spent")
        return "budget_exhausted", reason
    if why == "step_limit":
        if len(full) != int(doc["max_steps"]):
            raise Untrusted("it stopped for the step limit before reaching it")
        return "step_limit", f"stopped by the replay's step limit ({len(full)} steps)"
    if why == "end_of_original":
        last = original_last(doc)
        if doc["mode"] != "strict" or (last is not None and step + 1 <= int(last)):
            raise Untrusted("it stopped at the end of the original before reaching it")
        return "end_of_original", (
            f"the original's record ends at step {last}; strict mode stops before step "
            f"{step + 1} (use lenient mode with mocks to go on)"
        )
    if why == "diverged":
        found = [d for s in steps for d in s["divergences"]]
        if not found or doc["mode"] != "strict":
            raise Untrusted("it stopped for a divergence the parent does not find")
        return "diverged", str(found[0]["message"])
    if why == "memory":
        return "memory_limit", f"step {step} ran out of memory (limit {doc['memory_mb']} MB)"
    if partial is not None:
        return "agent_error", f"step {step} raised {quoted}"
    return "agent_error", f"after step {step}: {quoted}"
