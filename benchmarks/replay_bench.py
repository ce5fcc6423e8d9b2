"""Replay overhead per step, against calling the agent's step function directly.

A synthetic agent is recorded by the real runtime for N steps with a working state of about S
bytes, and imported into a fresh store. Then, on the same states:

- *direct*: ``agent.step(state, ctx)`` for every recorded state, with a dict-backed ctx (the
  cheapest possible answers): the agent's own cost;
- *replay*: ``debugger.replay.replay`` from step 0 (child process, sandbox, tape matching,
  state comparison, events, the replay's SQLite file and its import into the store).

Two replay figures per step: *in the loop*, the median wall time of a step inside the
sandbox child as it reports it (agent step, sandbox answers, JSON copies, state comparison);
and *end to end*, the marginal cost ``(T(N) - T(0)) / N`` where
``T(0)`` replays from the last checkpoint (the agent is done at once), which adds the
parent's per-step work (report, SQLite rows, import). The fixed cost of a replay (process
start, store reads, import) is reported separately. Medians of ``--repeat``.

The isolation's own cost: the fixed cost ``T(0)`` under ``kernel`` (bubblewrap) and under
``hooks`` (a plain child process), alternated replay by replay so that both see the same
load, and their difference, which is what the kernel sandbox adds to a replay's start.

    python benchmarks/replay_bench.py               # N=200, states of ~2 KB and ~100 KB
    python benchmarks/replay_bench.py --quick       # N=30, ~2 KB
    python benchmarks/replay_bench.py --isolation   # the isolation's start cost only
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

AGENT = "replay_bench:bench_agent"


class BenchAgent:
    """Each step: one read, one model call, a keyed write every 10th step; grows a log."""

    name = "bench"

    def is_done(self, state: dict[str, Any]) -> bool:
        return bool(state["n"] >= state["goal"])

    def step(self, state: dict[str, Any], ctx: Any) -> dict[str, Any]:
        n = state["n"] + 1
        item = ctx.tool("lookup", item=n)
        answer = ctx.model({"task": "note", "n": n})
        state["notes"][n % len(state["notes"])] = answer["text"] + item["name"]
        if n % 10 == 0:
            ctx.effect("write", f"w-{n}", n=n)
        state["n"] = n
        return state


bench_agent = BenchAgent()


class DictCtx:
    """The cheapest ctx: answers from precomputed dicts (the 'direct' baseline)."""

    def tool(self, name: str, **args: Any) -> Any:
        return {"name": f"item-{args['item']}"}

    def effect(self, name: str, key: str, **args: Any) -> Any:
        return {"ok": True}

    def model(self, request: dict[str, Any]) -> dict[str, Any]:
        return {"text": f"note {request['n']}", "usage": {"total_tokens": 5}}


def record(root: Path, steps: int, state_bytes: int) -> Path:
    """Record one run with the runtime and import it into a new store; return the store path."""
    from debugger.runtime import Model, Runtime, Tool
    from debugger.store import Store
    from loaders import import_source

    ctx = DictCtx()
    tools = [Tool("lookup", lambda item: ctx.tool("lookup", item=item)),
             Tool("write", lambda key, n: ctx.effect("write", key, n=n), write=True)]  # fmt: skip
    model = Model("bench-model", "1", ctx.model)
    notes = max(1, state_bytes // 40)
    state = {"n": 0, "goal": steps, "notes": [f"note {i:>30}" for i in range(notes)]}
    source = root / f"run-{steps}-{state_bytes}.sqlite"
    with Runtime(source, bench_agent, tools=tools, model=model) as rt:
        rt.start("bench", state)
    store_path = root / f"store-{steps}-{state_bytes}.duckdb"
    with Store.open(store_path, read_only=False) as store:
        import_source(store, str(source))
    return store_path


def direct_seconds(store_path: Path) -> tuple[float, int]:
    """Median time of agent.step on the recorded states (JSON copies in and out, as the
    runtime and the sandbox both do)."""
    from debugger.store import Store

    with Store.open(store_path, read_only=True) as store:
        states = [c.working_state for c in store.checkpoints("bench")][:-1]
    ctx = DictCtx()
    times = []
    for s in states:
        started = time.perf_counter()
        orjson.loads(orjson.dumps(bench_agent.step(orjson.loads(orjson.dumps(s)), ctx)))
        times.append(time.perf_counter() - started)
    return statistics.median(times), len(states)


def replay_seconds(
    store_path: Path, from_step: int, out: Path, isolation: str = "kernel"
) -> tuple[float, list[float]]:
    """Whole replay time, and each step's time inside the sandbox."""
    from debugger.replay import replay

    started = time.perf_counter()
    report = replay(store_path, "bench", from_step, AGENT, output_dir=out, isolation=isolation)
    seconds = time.perf_counter() - started
    assert not report.diverged and report.outcome == "completed", report.reason
    return seconds, [s.seconds for s in report.steps if s.seconds is not None]


def measure(root: Path, steps: int, state_bytes: int, repeat: int) -> dict[str, Any]:
    store = record(root, steps, state_bytes)
    direct = [direct_seconds(store)[0] for _ in range(repeat)]
    full, empty, loop = [], [], []
    for i in range(repeat):
        seconds, intervals = replay_seconds(store, 0, root / f"o-{steps}-{state_bytes}-{i}")
        full.append(seconds)
        loop.append(statistics.median(intervals) if intervals else 0.0)
        empty.append(replay_seconds(store, steps, root / f"z-{steps}-{state_bytes}-{i}")[0])
    marginal = (statistics.median(full) - statistics.median(empty)) / steps
    d, in_loop = statistics.median(direct), statistics.median(loop)
    return {
        "state": f"{state_bytes / 1024:.0f} KB",
        "steps": steps,
        "direct_ms": d * 1000,
        "loop_ms": in_loop * 1000,
        "ratio": in_loop / d if d else float("inf"),
        "marginal_ms": marginal * 1000,
        "fixed_s": statistics.median(empty),
        "total_s": statistics.median(full),
    }


def isolation_cost(root: Path, repeat: int) -> dict[str, float]:
    """Median fixed cost T(0) under each isolation, alternated; and the difference."""
    store = record(root, 30, 2048)
    times: dict[str, list[float]] = {"kernel": [], "hooks": []}
    replay_seconds(store, 30, root / "warm", "kernel")  # first imports and file cache
    for i in range(repeat):
        for isolation in times:
            out = root / f"iso-{isolation}-{i}"
            times[isolation].append(replay_seconds(store, 30, out, isolation)[0])
    kernel, hooks = (statistics.median(times[k]) for k in ("kernel", "hooks"))
    start = child_start(root, repeat * 2)
    return {"kernel_s": kernel, "hooks_s": hooks, "added_s": kernel - hooks, **start}


def child_start(root: Path, repeat: int) -> dict[str, float]:
    """The child interpreter's start (importing its modules) bare and inside bwrap, alternated:
    the sandbox's own cost without the store's and the import's noise."""
    import subprocess
    import sys

    from debugger.replay import isolation as iso

    work = root / "start"
    work.mkdir()
    path = iso.import_path()
    env = iso.environment(path, "/tmp")
    python = [sys.executable, "-c", "import debugger.replay.child"]
    readable = iso.readable_roots([*path, *iso.module_roots(["debugger", "orjson"])])
    sandboxed = iso.bwrap_command(python, writable=work, readable=readable, hidden=[], env=env)
    times: dict[str, list[float]] = {"bare": [], "bwrap": []}
    for _ in range(repeat):
        for name, argv in (("bare", python), ("bwrap", sandboxed)):
            started = time.perf_counter()
            subprocess.run(argv, env=env, check=True, cwd=work)
            times[name].append(time.perf_counter() - started)
    bare, bwrap = (statistics.median(times[k]) for k in ("bare", "bwrap"))
    return {"start_bare_s": bare, "start_bwrap_s": bwrap}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="30 steps, ~2 KB states, once")
    parser.add_argument("--isolation", action="store_true", help="the isolation's cost only")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if args.isolation:
        with tempfile.TemporaryDirectory() as tmp:
            cost = isolation_cost(Path(tmp), max(args.repeat, 5))
        print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; "
              f"median of {max(args.repeat, 5)}, alternated")  # fmt: skip
        print()
        print("| replay T(0), kernel s | replay T(0), hooks s | difference s "
              "| child start, bare s | child start, in bwrap s | added by bwrap s |")  # fmt: skip
        print("|---:|---:|---:|---:|---:|---:|")
        print(f"| {cost['kernel_s']:.3f} | {cost['hooks_s']:.3f} | {cost['added_s']:.3f} "
              f"| {cost['start_bare_s']:.3f} | {cost['start_bwrap_s']:.3f} "
              f"| {cost['start_bwrap_s'] - cost['start_bare_s']:.3f} |")  # fmt: skip
        return
    cases = [(30, 2048)] if args.quick else [(200, 2048), (200, 100 * 1024)]
    repeat = 1 if args.quick else args.repeat
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for steps, size in cases:
            rows.append(measure(Path(tmp), steps, size, repeat))
    print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; median of {repeat}")
    print()
    print("| state | steps | direct step (ms) | replay step, in the loop (ms) | ratio "
          "| replay step, end to end (ms) | fixed cost (s) | whole replay (s) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['state']} | {r['steps']} | {r['direct_ms']:.3f} | {r['loop_ms']:.3f} | "
              f"{r['ratio']:.1f}x | {r['marginal_ms']:.2f} | {r['fixed_s']:.2f} | "
              f"{r['total_s']:.2f} |")  # fmt: skip


if __name__ == "__main__":
    main()
