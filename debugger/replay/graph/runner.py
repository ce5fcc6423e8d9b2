"""The replay loop of a LangGraph graph, inside the sandbox child.

The graph runs one superstep at a time (``interrupt_after="*"``, durability ``sync``) from
the restored checkpoint on an in-memory saver, so the child sees each checkpoint before the
next superstep starts and emits the same ``step`` events as for a native agent: the state
(as the loader would store it), the budgets, the calls and the divergences. A superstep
that stops on ``interrupt()`` is resumed with the value the original resumed with at that
checkpoint, else with the next ``--resume`` value, else the replay parks like the original.
A node resumed after an interrupt runs again from its start, as in LangGraph, so the calls
it made before the interrupt may be made, and answered, again.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Container
from typing import Any

from debugger.replay.graph.intercept import Interceptor
from debugger.replay.graph.world import GraphContext, GraphTape
from debugger.replay.sandbox import StopReplay
from debugger.replay.tape import Tape, canonical
from loaders.langgraph.map import facts_of, is_internal, is_message

Outcome = tuple[str, str]


def messages(state: dict[str, Any]) -> list[dict[str, Any]]:
    """The messages of a (decoded) state, in order."""
    return [m for value in state.values() for m in (value if isinstance(value, list) else [value])
            if is_message(m)]  # fmt: skip


def message_facts(state: dict[str, Any], known: Container[str] = ()) -> dict[str, Any]:
    """Facts of the messages in a (decoded) state, by message id, but for ``known`` ids."""
    out = {}
    for m in messages(state):
        if m.get("id") not in known:
            f = facts_of(m)
            out[f.key] = f
    return out


class GraphRunner:
    """Runs the graph superstep by superstep and reports each as a step event."""

    def __init__(self, data: dict[str, Any], events: Any, graph: Any, ctx: GraphContext,
                 config: dict[str, Any]) -> None:  # fmt: skip
        self.data, self.events, self.graph, self.ctx = data, events, graph, ctx
        self.config = {"configurable": {"thread_id": config["configurable"]["thread_id"]}}
        self.step = int(data["from_step"])
        self.budgets = dict(data["start"]["budgets"])
        self.originals = {int(k): v["state"] for k, v in data["original"].items()}
        g = data["graph"]
        steps = [s for s in (data.get("original_last_step"), g.get("last_step")) if s is not None]
        self.original_last: int | None = max(int(s) for s in steps) if steps else None
        self.recorded_resume = {int(k): list(v) for k, v in (g.get("resume") or {}).items()}
        self.given_resume = list(g.get("resume_given") or [])
        self.seen = message_facts(data["start"]["state"])
        self.started = time.perf_counter()
        self.wall_start = int(self.budgets.get("wall_clock_ms") or 0)

    # -- the loop -------------------------------------------------------------------------
    def run(self) -> Outcome:
        """Run supersteps until an outcome; returns (outcome, reason)."""
        from langgraph.errors import GraphRecursionError

        done = 0
        snap = self.graph.get_state(self.config)
        while True:
            started = time.perf_counter()
            stop = self._before(snap, done)
            if stop:
                return stop
            nxt = self.step + 1
            beyond = self.original_last is None or nxt > self.original_last
            self.ctx.begin_step(nxt, beyond)
            try:
                parked, snap = self._superstep(nxt, snap)
            except StopReplay as s:
                self._partial(nxt)
                return "diverged", str(s.divergence["message"])
            except GraphRecursionError:
                self._partial(nxt)
                return "step_limit", f"step {nxt} hit LangGraph's recursion limit"
            except MemoryError:
                self._partial(nxt)
                return "memory_limit", f"step {nxt} ran out of memory"
            except Exception as e:
                self._partial(nxt, traceback.format_exc(limit=-3))
                return "agent_error", f"step {nxt} raised {type(e).__name__}: {e}"
            if parked:
                self._partial(nxt)
                return "parked", parked
            done += 1
            found = self._emit(nxt, started)
            if found and self.data["mode"] == "strict":
                return "diverged", str(found[0]["message"])

    def _before(self, snap: Any, done: int) -> Outcome | None:
        if not snap.next and not snap.tasks:
            return "completed", f"the graph finished at step {self.step}"
        if done >= int(self.data["max_steps"]):
            return "step_limit", f"stopped by the replay's step limit ({done} steps)"
        nxt = self.step + 1
        if self.data["mode"] == "strict" and (
            self.original_last is None or nxt > self.original_last
        ):
            return "end_of_original", (
                f"the original's record ends at step {self.original_last}; strict mode stops "
                f"before step {nxt} (use lenient mode with mocks to go on)"
            )
        return None

    def _superstep(self, step: int, before: Any) -> tuple[str | None, Any]:
        """Run one superstep through any interrupts: the parking reason (or None) and the
        snapshot it ends on."""
        from langgraph.types import Command

        payload: Any = None
        stalled = 0
        stops: dict[str, Any] = {"interrupt_after": "*"}
        if tuple(before.next) == ("__start__",):
            # the input's own node is hidden from interrupt_after: stop before the next one
            stops["interrupt_before"] = "*"
        while True:
            for _ in self.graph.stream(payload, self.config, durability="sync",
                                       stream_mode="updates", **stops):  # fmt: skip
                pass
            snap = self.graph.get_state(self.config)
            if int((snap.metadata or {}).get("step", self.step)) > self.step:
                return None, snap
            if snap.interrupts:
                answers = self._answers(snap.interrupts)
                if answers is None:
                    question = snap.interrupts[0].value
                    why = f"interrupt() at step {step} waits for an answer: {question!r}"
                    return why[:300], snap
                self._rerun()
                payload = Command(resume=answers)
                continue
            stalled += 1  # a static breakpoint (interrupt_before): go on once, as the original
            if stalled > 1 or (self.original_last is not None and step > self.original_last):
                nodes = ", ".join(snap.next)
                return f"paused before {nodes} at step {step} (a breakpoint of the graph)", snap
            payload = None

    def _answers(self, interrupts: Any) -> Any:
        """The resume value(s) for the open interrupts, or None to park."""
        values = []
        recorded = self.recorded_resume.get(self.step, [])
        for _ in interrupts:
            if recorded:
                values.append(recorded.pop(0))
            elif self.given_resume:
                values.append(self.given_resume.pop(0))
            else:
                return None
        if len(interrupts) == 1:
            return values[0]
        return {i.id: v for i, v in zip(interrupts, values, strict=True)}

    def _rerun(self) -> None:
        """The interrupted node runs again from its start: its recorded calls may repeat."""
        seqs = {c.get("tape_seq") for c in self.ctx.calls}
        for entry in self.ctx.tape.by_step.get(self.ctx.step_index, []):
            if entry.seq in seqs:
                entry.used = False

    # -- reporting ------------------------------------------------------------------------
    def _state(self) -> dict[str, Any]:
        from debugger.replay.graph.revive import encode

        saved = self.graph.checkpointer.get_tuple(self.config)
        values = saved.checkpoint["channel_values"] if saved else {}
        return {k: encode(v) for k, v in values.items() if not is_internal(k)}

    def _account(self, state: dict[str, Any], step: int) -> None:
        facts = message_facts(state, self.seen)
        new = sum(f.tokens for k, f in facts.items() if f.kind == "ai" and k not in self.seen)
        self.seen.update(facts)
        self.budgets["tokens_spent"] += new
        self.budgets["steps_spent"] = max(step, 0)
        elapsed = round((time.perf_counter() - self.started) * 1000)
        self.budgets["wall_clock_ms"] = self.wall_start + elapsed

    def _produced_without_model(self, state: dict[str, Any]) -> None:
        """A recorded model call whose answer is in the state anyway is not missing: the
        tape infers model calls from AI messages, which a node may also write itself."""
        ids = {m.get("id") for m in messages(state)}
        for entry in self.ctx.unused_model_entries():
            if isinstance(entry.response, dict) and entry.response.get("id") in ids:
                entry.used = True

    def _emit(self, step: int, started: float) -> list[dict[str, Any]]:
        state = self._state()
        self._account(state, step)
        self._produced_without_model(state)
        self.ctx.missing_calls()
        divergences = list(self.ctx.divergences)
        original = self.originals.get(step)
        equal = None if original is None else canonical(original) == canonical(state)
        if equal is False:
            divergences.append({
                "step_index": step, "kind": "state", "call": None, "original": None,
                "message": f"step {step}: the working state differs from the original",
                "original_state": original,
            })  # fmt: skip
        self.step = step
        seconds = time.perf_counter() - started  # the whole step: run, encode, compare
        self.events.emit("step", step_index=step, partial=False, state=state,
                         budgets=self.budgets, calls=self.ctx.calls, divergences=divergences,
                         state_equal=equal, pending_effects=[], seconds=seconds)  # fmt: skip
        return divergences

    def _partial(self, step: int, error: str | None = None) -> None:
        self.events.emit(
            "step", step_index=step, partial=True, state=None, budgets=self.budgets,
            calls=self.ctx.calls, divergences=self.ctx.divergences, state_equal=None, error=error,
        )  # fmt: skip


def build_context(data: dict[str, Any], mocks: Any) -> GraphContext:
    """The recorded world of the run: the root's tape, its subgraphs' tapes, the answers."""
    g = data["graph"]
    from_step = int(data["from_step"])
    tape = GraphTape(data["tape"], from_step, data.get("effects") or [],
                     [int(k) for k in data["original"]], new_ids=g.get("new_ids"))  # fmt: skip
    ns_tapes: dict[str, Tape] = {
        ns: GraphTape(t["tape"], -(2**31), new_ids=t.get("new_ids"))
        for ns, t in (g.get("namespaces") or {}).items()
    }
    ctx = GraphContext(tape, mocks, data["mode"], seq=int(data["seq_start"]), ns_tapes=ns_tapes,
                       answers=dict(g.get("answers") or {}),
                       writes=tuple(g.get("writes") or ()))  # fmt: skip
    Interceptor(ctx).install()
    return ctx
