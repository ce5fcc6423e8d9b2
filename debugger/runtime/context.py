"""The ``ctx`` an agent's step receives: every tool, write and model call goes through it.

At record time each call becomes one tape row (``tool_calls``), and each keyed write also
an ``effects`` row committed as ``pending`` before the write runs. A write whose key the
runtime already knows as committed is not executed again: the recorded result is returned.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from debugger.runtime.clock import Clock, ManualClock, iso
from debugger.runtime.spec import (
    Faults,
    Model,
    PermissionDenied,
    SimulatedCrash,
    Tool,
    ToolTimeout,
)
from debugger.runtime.storage import RunDatabase, dumps


@dataclass
class Session:
    """What one ``start``/``resume`` call shares with the contexts of its steps."""

    run_id: str
    db: RunDatabase
    tools: dict[str, Tool]
    model: Model | None
    clock: Clock
    faults: Faults
    allowed: frozenset[str] | None
    next_seq: int
    known: dict[str, Any] = field(default_factory=dict)
    """Idempotency key -> result of writes known to be committed."""

    def take_seq(self) -> int:
        seq = self.next_seq
        self.next_seq += 1
        return seq


class RecordingContext:
    """The context of one loop iteration (step) at record time."""

    def __init__(self, session: Session, step_index: int) -> None:
        self._s = session
        self.step_index = step_index
        self.calls: list[dict[str, Any]] = []
        self.outcomes: list[tuple[str, str, Any]] = []
        self.unknown: list[dict[str, Any]] = []
        self.deduplicated: list[str] = []
        self.tokens = 0

    # -- the agent-facing API -------------------------------------------------------------

    def tool(self, name: str, **args: Any) -> Any:
        """Call a read tool and return its answer."""
        spec = self._spec(name, write=False)
        seq = self._s.take_seq()
        try:
            response = spec.fn(**args)
        except Exception as e:
            self._record(seq, "tool", name, args, None, _error(e), None, False)
            raise
        self._record(seq, "tool", name, args, response, None, None, False)
        return response

    def effect(self, name: str, key: str | None, **args: Any) -> Any:
        """Execute a keyed write once: a key already committed returns its recorded result."""
        spec = self._spec(name, write=True)
        seq = self._s.take_seq()
        if key is not None and key in self._s.known:
            result = self._s.known[key]
            self.deduplicated.append(key)
            self._record(seq, "tool", name, args, result, None, key, True)
            return result
        effect_id = self._intent(seq, name, key, args)
        if self._s.faults.timeout == (name, self.step_index):
            return self._timeout(spec, seq, effect_id, key, args)
        try:
            result = spec.fn(key, **args)
        except Exception as e:
            self.outcomes.append((effect_id, "failed", {"error": _error(e)}))
            self._record(seq, "tool", name, args, None, _error(e), key, True)
            raise
        self.outcomes.append((effect_id, "committed", result))
        self._record(seq, "tool", name, args, result, None, key, True)
        if key is not None:
            self._s.known[key] = result
        if self._s.faults.crash_after_effect == (name, self.step_index):
            raise SimulatedCrash(f"crash injected after {name} at step {self.step_index}")
        return result

    def model(self, request: dict[str, Any]) -> dict[str, Any]:
        """Call the model; its ``usage.total_tokens`` is charged to the token budget."""
        if self._s.model is None:
            raise PermissionDenied("this run has no model", "pass model=Model(...) to Runtime")
        seq = self._s.take_seq()
        try:
            response = self._s.model.fn(request)
        except Exception as e:
            self._record(seq, "model", self._s.model.name, request, None, _error(e), None, False)
            raise
        usage = response.get("usage") or {}
        self.tokens += int(usage.get("total_tokens", 0))
        self._record(seq, "model", self._s.model.name, request, response, None, None, False)
        return response

    # -- bookkeeping ----------------------------------------------------------------------

    def _spec(self, name: str, write: bool) -> Tool:
        spec = self._s.tools.get(name)
        if spec is None:
            raise PermissionDenied(f"no tool named {name!r}", "register it with Runtime(tools=...)")
        if spec.write != write:
            how = "ctx.effect(name, key, ...)" if spec.write else "ctx.tool(name, ...)"
            raise PermissionDenied(f"{name!r} must be called through {how}", "fix the agent")
        if self._s.allowed is not None and name not in self._s.allowed:
            raise PermissionDenied(
                f"tool {name!r} is not permitted for this run", "grant it in permissions="
            )
        return spec

    def _intent(self, seq: int, name: str, key: str | None, args: dict[str, Any]) -> str:
        effect_id = f"{self._s.run_id}/e{seq:04d}"
        self._s.db.write_effect_intent(
            {
                "run_id": self._s.run_id,
                "effect_id": effect_id,
                "seq": seq,
                "step_index": self.step_index,
                "idempotency_key": key,
                "tool": name,
                "args": dumps(args),
                "status": "pending",
                "result": None,
                "created_at": iso(self._s.clock.now()),
            }
        )
        return effect_id

    def _timeout(
        self, spec: Tool, seq: int, effect_id: str, key: str | None, args: dict[str, Any]
    ) -> Any:
        # The request reached the system of record; only the reply was lost.
        spec.fn(key, **args)
        if isinstance(self._s.clock, ManualClock):  # a real clock has already waited
            self._s.clock.advance(self._s.faults.timeout_ms)
        message = f"{spec.name} timed out after {self._s.faults.timeout_ms} ms; outcome unknown"
        self.outcomes.append((effect_id, "unknown", None))
        self.unknown.append(
            {"tool": spec.name, "idempotency_key": key, "args": args, "status": "unknown"}
        )
        self._record(seq, "tool", spec.name, args, None, message, key, True)
        raise ToolTimeout(message, f"check the key {key!r} in the system of record")

    def _record(
        self,
        seq: int,
        kind: str,
        name: str,
        request: Any,
        response: Any,
        error: str | None,
        key: str | None,
        is_write: bool,
    ) -> None:
        self.calls.append(
            {
                "run_id": self._s.run_id,
                "call_id": f"{self._s.run_id}/t{seq:04d}",
                "step_index": self.step_index,
                "seq": seq,
                "kind": kind,
                "name": name,
                "request": dumps(request),
                "response": None if response is None else dumps(response),
                "error": error,
                "idempotency_key": key,
                "is_write": int(is_write),
            }
        )


def _error(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"
