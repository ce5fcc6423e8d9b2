"""The replay loop of a LangGraph graph, inside the sandbox child.

The graph runs one superstep at a time (``interrupt_after="*"``, durability ``sync``) from
the restored checkpoint on an in-memory saver, so the child sees each checkpoint before the
next superstep starts and sends the same ``step`` messages as a native agent's child
(:mod:`debugger.replay.protocol`): the state (as the loader would store it), the budgets
and the calls, each saying where in the graph it was made. The parent judges them. A superstep
that stops on ``interrupt()`` is resumed with the value the original resumed with at that
checkpoint, else with the next ``--resume`` value, else the replay parks like the original.
A node resumed after an interrupt runs again from its start, as in LangGraph, so the calls
it made before the interrupt may be made, and answered, again.
"""

from __future__ import annotations

import time
import traceback
from typing import Any

from debugger.replay.child import Stop, limit_stop
from debugger.replay.graph.intercept import Interceptor
from debugger.replay.graph.world import GraphContext, GraphWorld
from debugger.replay.protocol import GRAPH_CALL_PLACE, Writer, clip
from debugger.replay.sandbox import StopReplay
from debugger.replay.tape import canonical
from loaders.langgraph.map import state_of

"""Why the loop stopped (``protocol.STOP_REASONS``), at which step, and the graph's text."""
_CALL_KEYS = ("step_index", "seq", "kind", "name", "request", "idempotency_key", "is_write",
              "source", "response", "error", *GRAPH_CALL_PLACE)  # fmt: skip


class GraphRunner:
    """Runs the graph superstep by superstep and reports each as a step message."""

    def __init__(self, data: dict[str, Any], out: Writer, graph: Any, ctx: GraphContext,
                 config: dict[str, Any]) -> None:  # fmt: skip
        self.data, self.out, self.graph, self.ctx = data, out, graph, ctx
        assert ctx.world is not None
        self.world: GraphWorld = ctx.world
        self.config = {"configurable": {"thread_id": config["configurable"]["thread_id"]}}
        self.step = int(data["from_step"])
        self.budgets = dict(data["start"]["budgets"])
        self.originals = {int(k): v["state"] for k, v in data["original"].items()}
        self.original_last = self.world.last
        g = data["graph"]
        self.recorded_resume = {int(k): list(v) for k, v in (g.get("resume") or {}).items()}
        self.given_resume = list(g.get("resume_given") or [])
        self.started = time.perf_counter()
        self.wall_start = int(self.budgets.get("wall_clock_ms") or 0)

    # -- the loop -------------------------------------------------------------------------
    def run(self) -> Stop:
        """Run supersteps until one of the stop reasons."""
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
            except StopReplay:
                self._partial(nxt, started)
                return "diverged", nxt, None
            except MemoryError:
                self._partial(nxt, started)
                return "memory", nxt, None
            except Exception as e:  # LangGraph's recursion limit too: the graph's own stop
                self._partial(nxt, started, traceback.format_exc(limit=-3))
                return "agent_error", nxt, f"{type(e).__name__}: {e}"
            if parked:
                self._partial(nxt, started)
                return "parked", nxt, parked
            done += 1
            if self._emit(nxt, started) and self.data["mode"] == "strict":
                return "diverged", nxt, None

    def _before(self, snap: Any, done: int) -> Stop | None:
        if not snap.next and not snap.tasks:
            return "done", self.step, None
        return limit_stop(self.data, self.step, done, self.original_last)

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
                    return f"interrupt() waits for an answer: {question!r}"[:300], snap
                self.ctx.resumes += 1  # the interrupted node runs again from its start
                payload = Command(resume=answers)
                continue
            stalled += 1  # a static breakpoint (interrupt_before): go on once, as the original
            if stalled > 1 or (self.original_last is not None and step > self.original_last):
                nodes = ", ".join(snap.next)
                return f"paused before {nodes} (a breakpoint of the graph)", snap
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

    # -- reporting ------------------------------------------------------------------------
    def _state(self) -> Any:
        """The state as the loader stores it (:func:`state_of`: a graph's channels, an
        entrypoint's output)."""
        from debugger.replay.graph.revive import encode

        saved = self.graph.checkpointer.get_tuple(self.config)
        state = state_of(saved.checkpoint) if saved else {}
        if isinstance(state, dict):
            return {k: encode(v) for k, v in state.items()}
        return encode(state)

    def _account(self, state: dict[str, Any], step: int) -> None:
        self.budgets["tokens_spent"] += self.world.tokens(self.ctx.calls, state)
        self.budgets["steps_spent"] = self.world.steps_spent(step, self.budgets["steps_spent"])
        elapsed = round((time.perf_counter() - self.started) * 1000)
        self.budgets["wall_clock_ms"] = self.wall_start + elapsed

    def _calls(self) -> list[dict[str, Any]]:
        return [{k: c.get(k) for k in _CALL_KEYS} for c in self.ctx.calls]

    def _emit(self, step: int, started: float) -> bool:
        """Send the finished step; whether the child itself saw a divergence (strict stop)."""
        state = self._state()
        self._account(state, step)
        diverged = bool(self.world.missing(step, state) or self.ctx.divergences)
        original = self.originals.get(step)
        diverged = diverged or (original is not None and canonical(original) != canonical(state))
        self.step = step
        seconds = time.perf_counter() - started  # the whole step: run, encode, compare
        self.out.send("step", step_index=step, partial=False, state=state,
                      budgets=self.budgets, calls=self._calls(), pending_effects=[],
                      seconds=seconds, error=None)  # fmt: skip
        return diverged

    def _partial(self, step: int, started: float, error: str | None = None) -> None:
        self.out.send("step", step_index=step, partial=True, state=None, budgets=self.budgets,
                      calls=self._calls(), pending_effects=[],
                      seconds=time.perf_counter() - started,
                      error=None if error is None else clip(error))  # fmt: skip


def build_context(data: dict[str, Any], mocks: Any) -> GraphContext:
    """The recorded world of the run (:class:`GraphWorld`) as the graph's calls meet it."""
    world = GraphWorld(data)
    ctx = GraphContext(world.root, mocks, data["mode"], seq=int(data["seq_start"]), world=world,
                       answers=dict(data["graph"].get("answers") or {}),
                       writes=tuple(data["graph"].get("writes") or ()))  # fmt: skip
    Interceptor(ctx).install()
    return ctx
