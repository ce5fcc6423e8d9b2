"""The replay's child process: ``python -m debugger.replay.child INPUT.json``.

It caps its memory, blocks the network and outside writes, imports the agent (and mocks),
migrates the starting state if needed, then runs the agent's steps against a
:class:`~debugger.replay.sandbox.SandboxContext`. It reports one JSON event per line on the
stdout it was started with; the agent's own prints go to ``agent.log`` in the output
directory. The parent enforces the wall-clock limit by killing this process.

Events: ``started``, ``violation``, ``step`` (state, budgets, calls, divergences; ``partial``
when the step did not finish), ``setup_error`` and ``end`` (outcome and reason).
"""

from __future__ import annotations

import importlib
import os
import sys
import time
import traceback
from pathlib import Path
from typing import IO, Any

import orjson

from debugger.contract import BUDGET_LIMITS, Agent, check_agent
from debugger.errors import StepscopeError
from debugger.replay import guard
from debugger.replay.sandbox import SandboxContext, StopReplay, load_mocks
from debugger.replay.tape import Tape, canonical
from debugger.replay.versions import migrate_state, migrations_for


def _json_copy(value: Any) -> Any:
    return orjson.loads(orjson.dumps(value))


class _Events:
    """One JSON document a line on the protocol descriptor."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.stream = stream

    def emit(self, event: str, **fields: Any) -> None:
        line = orjson.dumps({"event": event, **fields}, default=repr,
                            option=orjson.OPT_NON_STR_KEYS)  # fmt: skip
        self.stream.write(line + b"\n")
        self.stream.flush()


def _take_stdout(output_dir: Path) -> IO[bytes]:
    """Keep the original stdout for events; send fds 1 and 2 to agent.log."""
    proto = os.fdopen(os.dup(1), "wb")
    log = os.open(output_dir / "agent.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    return proto


def load_agent(spec: str) -> Agent:
    """Import ``module:attribute`` and check it is an Agent (``debugger.contract``)."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ValueError(f"agent {spec!r} is not of the form module:attribute")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return check_agent(obj, spec)


_BUDGET_WORDS = (
    ("steps_spent", "step"),
    ("tokens_spent", "token"),
    ("wall_clock_ms", "wall-clock"),
)
"""Each budget in the order the child checks it (steps first), and its word in a reason."""


def _budget_reason(budgets: dict[str, int], limits: dict[str, Any]) -> str | None:
    """Why the run's own limits stop it (as the runtime checks them), or None."""
    for spent_key, what in _BUDGET_WORDS:
        limit = limits.get(BUDGET_LIMITS[spent_key])
        if isinstance(limit, int | float) and budgets[spent_key] >= limit:
            return f"the run's {what} budget is spent ({budgets[spent_key]} of {limit})"
    return None


class Runner:
    """The replay loop inside the child."""

    def __init__(self, data: dict[str, Any], events: _Events, agent: Agent, mocks: Any) -> None:
        self.data = data
        self.events = events
        self.agent = agent
        self.step = int(data["from_step"])
        self.budgets = dict(data["start"]["budgets"])
        self.limits = data.get("limits") or {}
        self.originals: dict[int, Any] = {int(k): v for k, v in data["original"].items()}
        last = data.get("original_last_step")
        self.original_last: int | None = None if last is None else int(last)
        tape = Tape(data["tape"], self.step, data.get("effects") or [], self.originals)
        self.ctx = SandboxContext(tape, mocks, data["mode"], seq=int(data["seq_start"]))
        self.step_started = time.perf_counter()

    def run(self, state: Any) -> tuple[str, str]:
        """Run steps until an outcome; returns (outcome, reason)."""
        done = 0
        while True:
            self.step_started = time.perf_counter()
            try:
                stop = self._before_step(state, done)
            except Exception as e:  # the agent's is_done / interrupt hooks are its code too
                return "agent_error", f"after step {self.step}: {type(e).__name__}: {e}"
            if stop:
                return stop
            nxt = self.step + 1
            beyond = self.original_last is None or nxt > self.original_last
            self.ctx.begin_step(nxt, beyond)
            started = time.perf_counter()
            try:
                # a JSON-clean copy each way, as the runtime does: no shared objects
                new_state = _json_copy(self.agent.step(_json_copy(state), self.ctx))
            except StopReplay as s:
                self._partial(nxt)
                return "diverged", str(s.divergence["message"])
            except MemoryError:
                self._partial(nxt)
                return (
                    "memory_limit",
                    f"step {nxt} ran out of memory (limit {self.data['memory_mb']} MB)",
                )
            except Exception as e:
                self._partial(nxt, traceback.format_exc(limit=-3))
                return "agent_error", f"step {nxt} raised {type(e).__name__}: {e}"
            self._account(time.perf_counter() - started)
            self.step, state, done = nxt, new_state, done + 1
            found = self._emit_step(state)
            if found and self.data["mode"] == "strict":
                return "diverged", str(found[0]["message"])

    def _before_step(self, state: Any, done: int) -> tuple[str, str] | None:
        if self.agent.is_done(state):
            return "completed", f"the agent finished at step {self.step}"
        interrupt = getattr(self.agent, "interrupt", None)
        request = interrupt(state) if callable(interrupt) else None
        if request:
            return "parked", f"the agent waits for input at step {self.step}: {request!r}"[:300]
        reason = _budget_reason(self.budgets, self.limits)
        if reason:
            return "budget_exhausted", reason
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

    def _account(self, seconds: float) -> None:
        self.budgets["steps_spent"] += 1
        self.budgets["tokens_spent"] += self.ctx.step_tokens
        self.budgets["wall_clock_ms"] += round(seconds * 1000)

    def _emit_step(self, state: Any) -> list[dict[str, Any]]:
        self.ctx.missing_calls()
        divergences = list(self.ctx.divergences)
        original = self.originals.get(self.step)
        equal = None if original is None else canonical(original) == canonical(state)
        if equal is False:
            divergences.append({
                "step_index": self.step, "kind": "state", "call": None, "original": None,
                "message": f"step {self.step}: the working state differs from the original",
                "original_state": original,
            })  # fmt: skip
        planned = getattr(self.agent, "planned_effects", None)
        pending = [{"status": "pending", **e} for e in planned(state)] if callable(planned) else []
        seconds = time.perf_counter() - self.step_started
        self.events.emit("step", step_index=self.step, partial=False, state=state,
                         budgets=self.budgets, calls=self.ctx.calls, divergences=divergences,
                         state_equal=equal, pending_effects=pending, seconds=seconds)  # fmt: skip
        return divergences

    def _partial(self, step: int, error: str | None = None) -> None:
        self.events.emit(
            "step", step_index=step, partial=True, state=None, budgets=self.budgets,
            calls=self.ctx.calls, divergences=self.ctx.divergences, state_equal=None, error=error,
        )  # fmt: skip


def _setup(data: dict[str, Any], events: _Events) -> tuple[Agent, Any, Any] | None:
    """Import agent and mocks, migrate states; None (after an event) when that fails."""
    what = "agent"
    try:
        agent = load_agent(data["agent"])
        what = "mocks"
        mocks = load_mocks(data.get("mocks"))
        what = "migration"
        module = migrations_for(data["agent"], data.get("migrations"))
        start = data["start"]
        state = migrate_state(start["state"], start.get("schema_version"), module)
        version = start.get("schema_version")
        if module is not None and version is not None:
            data["start"]["schema_version"] = int(module.CURRENT_VERSION)
        migrated_from = version if version != data["start"]["schema_version"] else None
        for original in data["original"].values():
            original["state"] = migrate_state(original["state"], original.get("schema_version"),
                                              module)  # fmt: skip
        data["original"] = {k: v["state"] for k, v in data["original"].items()}
    except Exception as e:
        if isinstance(e, StepscopeError):  # already says what is wrong and what to do
            message, hint = f"{type(e).__name__}: {e.message}", e.hint
        else:
            message, hint = f"{type(e).__name__}: {e}", ""
        events.emit("setup_error", what=what, message=message, hint=hint,
                    traceback=traceback.format_exc(limit=-4))  # fmt: skip
        return None
    events.emit("ready", state=state, schema_version=data["start"]["schema_version"],
                migrated_from=migrated_from)  # fmt: skip
    return agent, mocks, state


def main(argv: list[str]) -> int:
    """Run one replay described by the JSON file ``argv[1]``."""
    data = orjson.loads(Path(argv[1]).read_bytes())
    output_dir = Path(data["output_dir"])
    events = _Events(_take_stdout(output_dir))
    sys.dont_write_bytecode = True

    runners: list[Any] = []  # Runner, or a graph's runner: both have ctx.step_index

    def record(kind: str, detail: str) -> None:
        step = runners[0].ctx.step_index if runners else int(data["from_step"])
        events.emit("violation", kind=kind, detail=detail, step_index=step)

    guard.limit_memory(int(data["memory_mb"]))
    guard.block_network(record)
    guard.install_audit_hook(record, [output_dir])
    events.emit("started", pid=os.getpid())
    if data.get("graph"):  # a LangGraph graph instead of a step(state, ctx) agent
        from debugger.replay.graph.child import run_graph

        return run_graph(data, events, runners)
    setup = _setup(data, events)
    if setup is None:
        return 3
    agent, mocks, state = setup
    runner = Runner(data, events, agent, mocks)
    runners.append(runner)
    outcome, reason = runner.run(state)
    events.emit("end", outcome=outcome, reason=reason, step_index=runner.step,
                budgets=runner.budgets)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
