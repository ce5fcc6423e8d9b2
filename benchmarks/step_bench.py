"""Server-side cost of one Timeline step change, and the page data sent per step.

A step change in the app reruns only the step fragment, which calls
``debugger.pages_data.step_view`` (fetch the step's checkpoint and the one before it, diff
their states from the stored texts, parsing only the branches that differ, build the page's
data with short previews) on a cache miss, and parses a cached JSON string on a hit. This
script measures exactly those calls on:

- a store of 1,000,000 checkpoints (10,000 runs x 100 steps, ~1 KB states, written by
  ``benchmarks/synth.py`` and imported through the real importer), and
- a run of ~1 MB states with a few changes a step (the same store).

It compares them with the naive page: load the run's checkpoints, diff with plain DeepDiff,
and send the full state with the diff. Page data is the byte size of what the page renders
(the step view's JSON), against the naive page's full state plus diff.

    python benchmarks/step_bench.py            # 1,000,000 checkpoints (builds the store once)
    python benchmarks/step_bench.py --quick    # 10,000 checkpoints

The stores are kept in benchmarks/data/ (git-ignored) and reused while their spec matches.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from diff_bench import make_state

try:  # the shared generator of large histories (benchmarks/synth.py), when it is there
    import synth
except ImportError:  # pragma: no cover - fall back to generating the rows in DuckDB
    synth = None

from debugger import pages_data
from debugger.diff import plain_deepdiff_rows
from debugger.store import Store
from loaders import ImportOptions, import_source

DATA = Path(__file__).resolve().parent / "data"
LARGE_RUN = "large-1mb"
LARGE_STEPS = 8
TARGET_MS = 25.0
TARGET_BYTES = 50_000


def _large_rows() -> list[tuple[Any, ...]]:
    """A run of ~1 MB states; each step changes a few values, as an agent step does."""
    state = make_state(1_000_000)
    rows = []
    for step in range(LARGE_STEPS):
        state["run"]["step"] = step
        state["messages"].append({"role": "assistant", "content": f"step {step} done"})
        key = list(state["orders"])[step * 7]
        state["orders"][key]["flags"]["priority"] = step
        state["notes"][step] = f"revised at step {step}"
        pending = (
            [
                {
                    "tool": "issue_refund",
                    "idempotency_key": f"refund-{step}",
                    "args": {"order": key},
                    "status": "pending",
                }
            ]
            if step % 3 == 2
            else []
        )
        meta = {"agent": "big-agent", "limits": {"tokens": 50_000, "steps": 20}}
        rows.append(
            (
                LARGE_RUN,
                step,
                3,
                f"2026-11-02T10:00:{step:02d}+00:00",
                orjson.dumps(state).decode(),
                900 * step,
                step,
                2000 * step,
                orjson.dumps(pending).decode(),
                "model-a" if step < 4 else "model-b",
                '{"issue_refund": "2.0"}',
                orjson.dumps(meta).decode(),
            )
        )
    return rows


COLUMNS = (
    "run_id",
    "step_index",
    "schema_version",
    "created_at",
    "working_state",
    "tokens_spent",
    "steps_spent",
    "wall_clock_ms",
    "pending_effects",
    "model_version",
    "tool_versions",
    "metadata",
)
DDL = f"CREATE TABLE checkpoints ({', '.join(COLUMNS)})"


def _duckdb_rows(runs: int, steps: int, state_bytes: int, out: Path) -> None:
    """Native-shape rows written by DuckDB (when synth.py is not available)."""
    import duckdb

    out.mkdir(parents=True, exist_ok=True)
    pad = max(state_bytes - 200, 0)
    duckdb.sql(f"""
        COPY (SELECT printf('run-%07d', r) AS run_id, s AS step_index, 3 AS schema_version,
                     strftime(TIMESTAMP '2026-11-01 08:00:00' + INTERVAL (r * 60 + s) SECOND,
                              '%Y-%m-%dT%H:%M:%S+00:00') AS created_at,
                     json_object('run', r, 'step', s, 'phase', 'p' || (s % 7),
                                 'notes', repeat('note ', {pad // 5})) AS working_state,
                     137 * (s + 1) AS tokens_spent, s + 1 AS steps_spent,
                     1500 * (s + 1) AS wall_clock_ms, '[]' AS pending_effects,
                     'model-2026-11' AS model_version, '{{}}' AS tool_versions,
                     json_object('agent', 'agent-' || (r % 7)) AS metadata
              FROM range({runs}) t(r), range({steps}) u(s) ORDER BY r, s)
        TO '{out}/part-0.parquet' (FORMAT parquet)""")


def _write_large(path: Path) -> Path:
    path.unlink(missing_ok=True)
    con = sqlite3.connect(path)
    con.execute(DDL)
    marks = ", ".join("?" for _ in COLUMNS)
    con.executemany(f"INSERT INTO checkpoints VALUES ({marks})", _large_rows())
    con.commit()
    con.close()
    return path


def build_store(runs: int, steps: int, state_bytes: int) -> Path:
    """The benchmark store (synthetic runs + the 1 MB run), built once per spec."""
    DATA.mkdir(exist_ok=True)
    name = f"step_{runs}x{steps}"
    store, spec_file = DATA / f"{name}.duckdb", DATA / f"{name}.spec.json"
    spec = {"runs": runs, "steps": steps, "state_bytes": state_bytes, "large": LARGE_STEPS}
    if store.exists() and spec_file.exists() and json.loads(spec_file.read_text()) == spec:
        with Store.open(store):  # a store kept from an older version is migrated once
            pass
        return store
    store.unlink(missing_ok=True)
    parquet = DATA / f"{name}_parquet"
    if not (parquet / "checkpoints").exists():
        t0 = time.perf_counter()
        if synth is not None:
            synth.write(synth.Spec(runs, steps, state_bytes), None, parquet)
        else:
            _duckdb_rows(runs, steps, state_bytes, parquet / "checkpoints")
        print(
            f"generated {runs * steps:,} checkpoints in {time.perf_counter() - t0:.0f} s",
            file=sys.stderr,
        )
    t0 = time.perf_counter()
    with Store.open(store) as s:
        import_source(s, str(parquet), ImportOptions())
        import_source(s, str(_write_large(DATA / f"{name}_large.sqlite")), ImportOptions())
    print(f"imported in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    spec_file.write_text(json.dumps(spec))
    return store


def _timed(fn: Callable[[], Any], before: Callable[[], Any] | None = None) -> tuple[float, float]:
    """Wall and CPU milliseconds of one call (``before`` runs untimed first)."""
    if before is not None:
        before()
    w0, c0 = time.perf_counter(), time.process_time()
    fn()
    return (time.perf_counter() - w0) * 1000, (time.process_time() - c0) * 1000


def _median(
    fn: Callable[[], Any], repeats: int, before: Callable[[], Any] | None = None
) -> tuple[float, float]:
    runs = [_timed(fn, before) for _ in range(repeats)]
    return statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs)


def naive_step(store: Store, run_id: str, pos: int) -> bytes:
    """The naive page: load the run, plain DeepDiff, send the full state and the diff."""
    ckpts = store.checkpoints(run_id)
    old, new = ckpts[pos - 1], ckpts[pos]
    rows = plain_deepdiff_rows(old.working_state, new.working_state)
    return orjson.dumps(
        {"state": new.working_state, "diff": [r.to_dict() for r in rows]}, default=str
    )


def measure_run(store: Store, run_id: str, repeats: int, naive_steps: int) -> dict[str, float]:
    """Per step change: forward (the step left is in memory), jump (both read), cache hit,
    naive; page data sizes."""
    refs = pages_data.step_refs(store, run_id)

    def view(pos: int) -> str:
        cid = refs[pos].checkpoint_id
        return pages_data.step_view(store, run_id, checkpoint_id=cid, refs=refs).to_json()

    def forget() -> None:
        pages_data.recent.clear_recent()

    out: dict[str, list[float]] = {
        k: [] for k in ("fwd", "fwd_cpu", "jump", "jump_cpu", "hit", "bytes")
    }
    for pos in range(1, len(refs)):
        text = view(pos)
        out["bytes"].append(len(text.encode()))
        w, c = _median(
            lambda pos=pos: view(pos), repeats, before=lambda pos=pos: (forget(), view(pos - 1))
        )
        out["fwd"].append(w)
        out["fwd_cpu"].append(c)
        w, c = _median(lambda pos=pos: view(pos), repeats, before=forget)
        out["jump"].append(w)
        out["jump_cpu"].append(c)
        out["hit"].append(_median(lambda text=text: orjson.loads(text), repeats)[0])
    naive = [
        _timed(lambda pos=pos: naive_step(store, run_id, pos))[0]
        for pos in range(1, min(len(refs), naive_steps + 1))
    ]
    m = {k: statistics.median(v) for k, v in out.items()}
    m["max_bytes"] = max(out["bytes"])
    m["naive"] = statistics.median(naive)
    m["naive_bytes"] = len(naive_step(store, run_id, 1))
    m["open_run"] = _median(lambda: pages_data.step_refs(store, run_id), repeats)[0]
    return m


def parse_ms(store: Store, repeats: int) -> float:
    """Reference unit: orjson.loads of one ~1 MB state from the store, wall ms."""
    text = store.checkpoint(LARGE_RUN, step=1)
    raw = orjson.dumps(text.working_state)
    return _median(lambda: orjson.loads(raw), repeats * 3)[0]


def main(argv: list[str] | None = None) -> int:
    """Build (or reuse) the store, measure, print a markdown table."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="10,000 checkpoints, fewer repeats")
    a = p.parse_args(argv)
    runs, steps, repeats = (100, 100, 3) if a.quick else (10_000, 100, 5)
    path = build_store(runs, steps, 1024)
    with Store.open(path, read_only=True) as store:
        [(total,)] = store.sql("SELECT count(*) FROM checkpoint_rows")
        sample = [f"run-{i:07d}" for i in (0, runs // 2, runs - 1)]
        small = [measure_run(store, r, repeats, 5) for r in sample]
        large = measure_run(store, LARGE_RUN, repeats, 1 if a.quick else 2)
        unit = parse_ms(store, repeats)
    load = os.getloadavg()[0]
    print(
        f"\nStore: {total:,} checkpoints ({path.stat().st_size / 2**20:,.0f} MiB); "
        f"load average {load:.1f}; orjson.loads of one 1 MB state: {unit:.1f} ms\n"
    )
    print(
        "| states | step forward ms (cpu) | jump ms (cpu) | cache hit ms | naive ms | "
        "naive ÷ forward | page data / step | naive page data | open a run ms |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    rows = [
        ("~1 KB, 1M store", {k: statistics.median(m[k] for m in small) for k in small[0]}),
        ("~1 MB", large),
    ]
    for label, m in rows:
        print(
            f"| {label} | {m['fwd']:.1f} ({m['fwd_cpu']:.1f}) | {m['jump']:.1f} "
            f"({m['jump_cpu']:.1f}) | {m['hit']:.2f} | {m['naive']:,.0f} | "
            f"{m['naive'] / m['fwd']:.0f}× | {m['bytes'] / 1024:.1f} kB (max "
            f"{m['max_bytes'] / 1024:.1f}) | {m['naive_bytes'] / 1024:,.0f} kB | "
            f"{m['open_run']:.1f} |"
        )
    ok_time = large["fwd"] < TARGET_MS
    ok_size = max(large["max_bytes"], *(m["max_bytes"] for m in small)) < TARGET_BYTES
    print(
        f"\nTargets: step change < {TARGET_MS:.0f} ms for 1 MB states: "
        f"{'met' if ok_time else 'NOT met'} (here, at this load); page data < 50 kB per "
        f"step: {'met' if ok_size else 'NOT met'}."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
