"""The replay's child process: ``python -m debugger.replay.child --input-fd N --protocol-fd N
--log-fd N --isolation kernel|hooks``.

It reads the replay's JSON document from the input descriptor, sends its stdout and stderr
to the log descriptor (``agent.log``), installs the in-process hooks (the layer that
explains a refusal; under kernel isolation the kernel is what enforces it), imports the
agent (and mocks), migrates the starting state if needed, then runs the agent's steps
against a :class:`~debugger.replay.sandbox.SandboxContext`.

It reports data only, over the protocol descriptor (:mod:`debugger.replay.protocol`):
``hello``, ``violation``, ``ready`` (the start state, migrated), ``step`` (state, budgets,
the calls as made), ``setup_error`` and ``end`` (why the loop stopped, from a closed set).
The parent decides the outcome, words it, and compares the replay with the original.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import orjson

from debugger.contract import Agent, check_agent
from debugger.errors import StepscopeError
from debugger.replay import guard
from debugger.replay.budgets import budget_reason
from debugger.replay.protocol import Writer, clip
from debugger.replay.sandbox import SandboxContext, StopReplay, load_mocks
from debugger.replay.tape import Tape, canonical
from debugger.replay.versions import migrate_state, migrations_for

_CALL_KEYS = ("step_index", "seq", "kind", "name", "request", "idempotency_key", "is_write",
              "source", "response", "error")  # fmt: skip


def _json_copy(value: Any) -> Any:
    return orjson.loads(orjson.dumps(value))


def load_agent(spec: str) -> Agent:
    """Import ``module:attribute`` and check it is an Agent (``debugger.contract``)."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ValueError(f"agent {spec!r} is not of the form module:attribute")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return check_agent(obj, spec)


Stop = tuple[str, int, str | None]
"""Why the loop stopped (``protocol.STOP_REASONS``), at which step, and the agent's text."""


def limit_stop(
    data: dict[str, Any], step: int, done: int, original_last: int | None
) -> Stop | None:
    """Where a replay stops before its next step, whatever the agent: at ``max_steps``, or
    (strict mode) past the last step the original recorded, where nothing can answer it."""
    if done >= int(data["max_steps"]):
        return "step_limit", step, None
    if data["mode"] == "strict" and (original_last is None or step + 1 > original_last):
        return "end_of_original", step, None
    return None


class Runner:
    """The replay loop inside the child."""

    def __init__(self, data: dict[str, Any], out: Writer, agent: Agent, mocks: Any) -> None:
        self.data = data
        self.out = out
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

    def run(self, state: Any) -> Stop:
        """Run steps until one of the stop reasons."""
        done = 0
        while True:
            self.step_started = time.perf_counter()
            try:
                stop = self._before_step(state, done)
            except Exception as e:  # the agent's is_done / interrupt hooks are its code too
                return "agent_error", self.step, f"{type(e).__name__}: {e}"
            if stop:
                return stop
            nxt = self.step + 1
            beyond = self.original_last is None or nxt > self.original_last
            self.ctx.begin_step(nxt, beyond)
            started = time.perf_counter()
            try:
                # a JSON-clean copy each way, as the runtime does: no shared objects
                new_state = _json_copy(self.agent.step(_json_copy(state), self.ctx))
            except StopReplay:
                self._partial(nxt)
                return "diverged", nxt, None
            except MemoryError:
                self._partial(nxt)
                return "memory", nxt, None
            except Exception as e:
                self._partial(nxt, traceback.format_exc(limit=-3))
                return "agent_error", nxt, f"{type(e).__name__}: {e}"
            self._account(time.perf_counter() - started)
            self.step, state, done = nxt, new_state, done + 1
            found = self._emit_step(state)
            if found and self.data["mode"] == "strict":
                return "diverged", nxt, None

    def _before_step(self, state: Any, done: int) -> Stop | None:
        if self.agent.is_done(state):
            return "done", self.step, None
        interrupt = getattr(self.agent, "interrupt", None)
        request = interrupt(state) if callable(interrupt) else None
        if request:
            return "parked", self.step, repr(request)
        if budget_reason(self.budgets, self.limits):
            return "budget", self.step, None
        return limit_stop(self.data, self.step, done, self.original_last)

    def _account(self, seconds: float) -> None:
        self.budgets["steps_spent"] += 1
        self.budgets["tokens_spent"] += self.ctx.step_tokens
        self.budgets["wall_clock_ms"] += round(seconds * 1000)

    def _calls(self) -> list[dict[str, Any]]:
        return [{k: c.get(k) for k in _CALL_KEYS} for c in self.ctx.calls]

    def _emit_step(self, state: Any) -> list[dict[str, Any]]:
        """Send the finished step; return the divergences the child itself saw (strict stop)."""
        self.ctx.missing_calls()
        divergences = list(self.ctx.divergences)
        original = self.originals.get(self.step)
        if original is not None and canonical(original) != canonical(state):
            divergences.append({"kind": "state"})
        planned = getattr(self.agent, "planned_effects", None)
        pending = [{"status": "pending", **e} for e in planned(state)] if callable(planned) else []
        seconds = time.perf_counter() - self.step_started
        self.out.send("step", step_index=self.step, partial=False, state=state,
                      budgets=self.budgets, calls=self._calls(), pending_effects=pending,
                      seconds=seconds, error=None)  # fmt: skip
        return divergences

    def _partial(self, step: int, error: str | None = None) -> None:
        self.out.send("step", step_index=step, partial=True, state=None, budgets=self.budgets,
                      calls=self._calls(), pending_effects=[],
                      seconds=time.perf_counter() - self.step_started,
                      error=None if error is None else clip(error))  # fmt: skip


def _setup(data: dict[str, Any], out: Writer) -> tuple[Agent, Any, Any] | None:
    """Import agent and mocks, migrate states; None (after a message) when that fails."""
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
        out.send("setup_error", what=what, message=clip(message), hint=clip(hint),
                 traceback=clip(traceback.format_exc(limit=-4)))  # fmt: skip
        return None
    # the migrated originals are sent only when a migration module ran: else the parent
    # compares with the states it read from the store itself
    originals = data["original"] if module is not None else None
    out.send("ready", state=state, schema_version=data["start"]["schema_version"],
             migrated_from=migrated_from, originals=originals)  # fmt: skip
    return agent, mocks, state


def _args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="debugger.replay.child")
    for name in ("--input-fd", "--protocol-fd", "--log-fd"):
        parser.add_argument(name, type=int, required=True)
    parser.add_argument("--isolation", choices=("kernel", "hooks"), required=True)
    return parser.parse_args(argv)


def open_child(argv: list[str]) -> tuple[dict[str, Any], Writer, list[Any]]:
    """The start every kind of child shares: read the document, send output to the log,
    install the hooks, say ``hello``.

    Returns:
        The replay's document, the protocol writer, and a list to append the runner to
        (a violation is reported at its ``ctx.step_index``).
    """
    args = _args(argv)
    with os.fdopen(args.input_fd, "rb") as f:
        data = orjson.loads(f.read())
    os.dup2(args.log_fd, 1)
    os.dup2(args.log_fd, 2)
    os.close(args.log_fd)
    out = Writer(args.protocol_fd)
    sys.dont_write_bytecode = True

    runners: list[Any] = []

    def record(kind: str, detail: str) -> None:
        step = runners[0].ctx.step_index if runners else int(data["from_step"])
        out.send("violation", kind=kind, detail=clip(detail), step_index=step)

    guard.limit_memory(int(data["memory_mb"]))
    guard.block_network(record)
    # where the child may write: its work directory and $TMPDIR, plus the private /tmp and
    # /dev/shm of the kernel sandbox (in hooks mode those are the machine's, shared)
    writable = [os.getcwd(), os.environ.get("TMPDIR") or os.getcwd()]
    if args.isolation == "kernel":
        writable += ["/tmp", "/dev/shm"]
    guard.install_audit_hook(record, [Path(p) for p in writable])
    out.send("hello", pid=os.getpid())
    return data, out, runners


def main(argv: list[str]) -> int:
    """Run the replay whose document arrives on ``--input-fd``."""
    data, out, runners = open_child(argv)
    setup = _setup(data, out)
    if setup is None:
        return 3
    agent, mocks, state = setup
    runner = Runner(data, out, agent, mocks)
    runners.append(runner)
    why, step, detail = runner.run(state)
    out.send("end", why=why, step_index=step, detail=None if detail is None else clip(detail))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
