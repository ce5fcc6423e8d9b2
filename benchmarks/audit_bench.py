"""Audit and migration dry-run costs, against the naive way, on a synthetic native store.

Measures (medians of several repeats, milliseconds):

- ``audit_run`` of one run, uncached (first view) and cached (every later page view), against
  the floor of loading the run's records (checkpoints, effects, tape) that any audit needs;
- the migrations dry run over the whole store, against the naive way: load every checkpoint
  and push each through the migrations, current ones included.

Usage::

    python benchmarks/audit_bench.py            # 200 runs x 60 steps, 4 KB states
    python benchmarks/audit_bench.py --quick    # 20 runs x 30 steps, 1 KB states

Prints a markdown table; results are recorded in benchmarks/README.md (section "Audit").
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from debugger.audit import audit_run
from debugger.audit import run as audit
from debugger.migrations import dry_run, migrate_state, registry_from_module
from debugger.store import Store
from loaders import ImportOptions, import_source


def _migrations() -> types.ModuleType:
    mod = types.ModuleType("bench_migrations")
    mod.CURRENT_VERSION = 3  # type: ignore[attr-defined]
    mod.v1_to_v2 = lambda s: {**s, "v2": True}  # type: ignore[attr-defined]
    mod.v2_to_v3 = lambda s: {**s, "v3": True}  # type: ignore[attr-defined]
    return mod


def write_source(path: Path, runs: int, steps: int, state_bytes: int) -> None:
    """Native SQLite: a quarter of the runs at schema v1, the rest at v3; one keyed write each."""
    con = sqlite3.connect(path)
    con.execute(
        "CREATE TABLE checkpoints (run_id TEXT, step_index INTEGER, schema_version INTEGER, "
        "created_at TEXT, working_state TEXT, tokens_spent INTEGER, steps_spent INTEGER, "
        "wall_clock_ms INTEGER, pending_effects TEXT, model_version TEXT, tool_versions TEXT, "
        "metadata TEXT)"
    )
    con.execute(
        "CREATE TABLE effects (run_id TEXT, step_index INTEGER, idempotency_key TEXT, "
        "tool TEXT, args TEXT, status TEXT, result TEXT, created_at TEXT)"
    )
    filler = ("order refund ledger policy " * (state_bytes // 26 + 1))[:state_bytes]
    for r in range(runs):
        version = 1 if r % 4 == 0 else 3
        rows = [
            (f"run-{r:05d}", s, version, f"2026-11-01T{8 + s // 60:02d}:{s % 60:02d}:00+00:00",
             json.dumps({"step": s, "notes": [filler[i::7] for i in range(7)]}), 100 * s, s,
             900 * s, "[]", "m-1", '{"issue_refund": "1"}',
             json.dumps({"agent": "bench", "limits": {"tokens": 10**9}}))
            for s in range(steps)
        ]  # fmt: skip
        con.executemany(f"INSERT INTO checkpoints VALUES ({', '.join('?' * 12)})", rows)
        con.execute(
            "INSERT INTO effects VALUES (?, 3, ?, 'issue_refund', '{}', 'committed', NULL, NULL)",
            (f"run-{r:05d}", f"refund-{r}"),
        )
    con.commit()
    con.close()


def median_ms(fn: Callable[[], Any], repeats: int) -> float:
    """Median wall time of ``fn`` in milliseconds."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def naive_dry_run(store: Store, registry: Any) -> int:
    """Load every checkpoint of every run and migrate it, current versions included."""
    n = 0
    for run in store.run_records():
        for c in store.checkpoints(run.run_id):
            migrate_state(c.working_state, c.schema_version, registry)
            n += 1
    return n


def main(argv: list[str] | None = None) -> None:
    """Build the store, measure, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small run")
    args = parser.parse_args(argv)
    runs, steps, size, repeats = (20, 30, 1024, 5) if args.quick else (200, 60, 4096, 7)
    registry = registry_from_module(_migrations())
    with tempfile.TemporaryDirectory() as tmp:
        source, store_path = Path(tmp) / "src.sqlite", Path(tmp) / "bench.duckdb"
        write_source(source, runs, steps, size)
        with Store.open(store_path) as store:
            import_source(store, str(source), ImportOptions())
        with Store.open(store_path, read_only=True) as store:
            run_id = "run-00001"

            def uncached() -> None:
                audit._cache.clear()
                audit_run(store, run_id, registry)

            def load_floor() -> None:
                store.checkpoints(run_id), store.effects(run_id), store.tool_calls(run_id)

            rows = [
                ("audit_run, first view (uncached)", median_ms(uncached, repeats)),
                ("audit_run, later views (cached)", median_ms(lambda: audit_run(store, run_id, registry), repeats)),  # noqa: E501
                ("floor: load the run's records", median_ms(load_floor, repeats)),
                ("dry run (skips current versions)", median_ms(lambda: dry_run(store, registry), 3)),  # noqa: E501
                ("naive dry run (migrate every checkpoint)", median_ms(lambda: naive_dry_run(store, registry), 3)),  # noqa: E501
            ]  # fmt: skip
    print(f"{runs} runs x {steps} steps, ~{size} B states, {runs * steps:,} checkpoints, "
          f"load average {os.getloadavg()[0]:.1f}\n")  # fmt: skip
    print("| measure | median ms |\n|---|---:|")
    for name, ms in rows:
        print(f"| {name} | {ms:,.1f} |")
    print(f"\ncached / uncached: {rows[1][1] / rows[0][1]:.2f}; "
          f"dry run / naive: {rows[3][1] / rows[4][1]:.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
