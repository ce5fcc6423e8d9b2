"""A small agent and its world for the runtime tests: five steps, a keyed payment at step 3."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from debugger.runtime import Limits, ManualClock, Model, Runtime, Tool


@dataclass
class World:
    """The system of record plus counters the tests read."""

    payments: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    reads: list[int] = field(default_factory=list)
    clock: ManualClock = field(
        default_factory=lambda: ManualClock(datetime(2026, 3, 1, 8, tzinfo=UTC), tick_ms=1)
    )

    def read(self, i: int) -> dict[str, int]:
        self.reads.append(i)
        self.clock.advance(10)
        return {"i": i, "double": 2 * i}

    def pay(self, key: str, amount: int) -> dict[str, Any]:
        record = {"key": key, "amount": amount, "n": len(self.payments.get(key, [])) + 1}
        self.payments.setdefault(key, []).append(record)
        self.clock.advance(50)
        return record

    def lookup(self, key: str) -> dict[str, Any] | None:
        found = self.payments.get(key)
        return found[0] if found else None

    def model(self, request: dict[str, Any]) -> dict[str, Any]:
        self.clock.advance(100)
        return {"ok": True, "usage": {"input_tokens": 30, "output_tokens": 10, "total_tokens": 40}}


class Counter:
    """Counts to five; step 3 pays ``pay-3`` (planned at step 2, so checkpoint 2 lists it)."""

    name = "counter"
    schema_version = 2

    def is_done(self, state: dict[str, Any]) -> bool:
        return bool(state["n"] >= 5)

    def step(self, state: dict[str, Any], ctx: Any) -> dict[str, Any]:
        state["n"] += 1
        ctx.tool("read", i=state["n"])
        ctx.model({"n": state["n"]})
        if state["n"] == 3:
            state["paid"].append(ctx.effect("pay", "pay-3", amount=30))
        return state

    def planned_effects(self, state: dict[str, Any]) -> list[dict[str, Any]]:
        if state["n"] == 2:
            return [{"tool": "pay", "idempotency_key": "pay-3", "args": {"amount": 30}}]
        return []


def runtime(path: Path, world: World, **kw: Any) -> Runtime:
    """A runtime on ``path`` for the counter in ``world``."""
    kw.setdefault("limits", Limits(tokens=1000, steps=50, wall_clock_ms=60_000))
    return Runtime(
        path,
        kw.pop("agent", Counter()),
        tools=[
            Tool("read", world.read, "1.0"),
            Tool("pay", world.pay, "2.0", write=True, lookup=world.lookup),
        ],
        model=Model("toy-model", kw.pop("model_version", "m-1"), world.model),
        clock=world.clock,
        synchronous="OFF",
        **kw,
    )
