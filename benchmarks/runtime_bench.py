"""What the checkpointing runtime costs per step, against running the agent bare.

Runs the refund desk's clean scenario (ten steps, two writes) many times:

- **bare**: the agent's ``step`` in a plain loop with a context that calls the tools and the
  model directly and records nothing (the peer: an agent with no checkpoints at all);
- **runtime, synchronous=OFF**: the runtime writing checkpoints, tape and effects to SQLite
  without waiting for the disk;
- **runtime, synchronous=FULL** (the default): the same, each transaction durable.

Tools hit the real ledger file in both cases; the clock is manual, so no sleeps. Medians of
per-step milliseconds over all runs.

Usage::

    python benchmarks/runtime_bench.py            # 200 runs
    python benchmarks/runtime_bench.py --quick    # 20 runs

Prints a markdown table; results are recorded in benchmarks/README.md (section "Runtime").
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from debugger.runtime import ManualClock
from sample_checkpoints.refund_desk.agent import agent, initial_state
from sample_checkpoints.refund_desk.ledger import Ledger
from sample_checkpoints.refund_desk.model import scripted_model
from sample_checkpoints.scenarios import SCENARIOS, Env

CLEAN = SCENARIOS[0]


class BareContext:
    """Calls tools and the model directly; records nothing."""

    def __init__(self, ledger: Ledger, model: Any) -> None:
        self.tools = {t.name: t.fn for t in ledger.tools()}
        self.model_fn = model.fn

    def tool(self, name: str, **args: Any) -> Any:
        return self.tools[name](**args)

    def effect(self, name: str, key: str | None, **args: Any) -> Any:
        return self.tools[name](key, **args)

    def model(self, request: dict[str, Any]) -> dict[str, Any]:
        return dict(self.model_fn(request))


def bare(env: Env, i: int) -> tuple[float, int]:
    clock = ManualClock(CLEAN.start)
    ledger = Ledger(env.ledger_db, clock, "OFF")
    ctx = BareContext(ledger, scripted_model(clock))
    state, steps = initial_state({**CLEAN.ticket, "id": f"T-bare-{i}"}), 0
    start = time.perf_counter()
    while not agent.is_done(state):
        state = agent.step(state, ctx)
        steps += 1
    elapsed = time.perf_counter() - start
    ledger.close()
    return elapsed, steps


def with_runtime(env: Env, i: int, synchronous: str) -> tuple[float, int]:
    clock = ManualClock(CLEAN.start)
    rt, ledger = env.runtime(clock)
    rt.db.con.execute(f"PRAGMA synchronous={synchronous}")
    start = time.perf_counter()
    result = rt.start(f"bench-{synchronous}-{i}", initial_state({**CLEAN.ticket, "id": f"T{i}"}))
    elapsed = time.perf_counter() - start
    rt.close()
    ledger.close()
    return elapsed, result.step_index


def measure(runs: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        env = Env(Path(tmp))
        env.seed([CLEAN])
        out = {}
        ways: tuple[tuple[str, Callable[[int], tuple[float, int]]], ...] = (
            ("bare loop (no checkpoints)", lambda i: bare(env, i)),
            ("runtime, synchronous=OFF", lambda i: with_runtime(env, i, "OFF")),
            ("runtime, synchronous=FULL", lambda i: with_runtime(env, i, "FULL")),
        )
        for name, fn in ways:
            per_step = []
            for i in range(runs):
                elapsed, steps = fn(i)
                per_step.append(elapsed * 1000 / steps)
            out[name] = statistics.median(per_step)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20 runs instead of 200")
    args = parser.parse_args()
    runs = 20 if args.quick else 200
    result = measure(runs)
    base = result["bare loop (no checkpoints)"]
    print(f"Refund desk, clean scenario, {runs} runs x 10 steps; load avg {os.getloadavg()[0]:.1f}")
    print()
    print("| way | median ms / step | × bare |")
    print("|---|---:|---:|")
    for name, ms in result.items():
        print(f"| {name} | {ms:.3f} | {ms / base:.1f} |")


if __name__ == "__main__":
    main()
