"""Audit and migration dry-run costs, against the naive way, on a synthetic native store.

Measures (medians of several repeats, milliseconds):

- ``audit_run`` of one run, uncached (first view) and cached (every later page view), against
  the floor of loading the run's records (checkpoints, effects, tape) that any audit needs;
- the migrations dry run over the whole store, against the naive way: load every checkpoint
  and push each through the migrations, current ones included;
- with ``--long``: how the audit and the Timeline grow with a run's length (one run of 1k,
  10k and 50k steps from ``benchmarks/synth.py``): ``audit_run`` uncached, and the Timeline's
  first step as the page builds it through ``debugger.pages_data`` (the audit's findings, the
  step navigator, the head's step view), and with ``--apptest`` the whole page once through
  Streamlit's AppTest.

Usage::

    python benchmarks/audit_bench.py            # 200 runs x 60 steps, 4 KB states
    python benchmarks/audit_bench.py --quick    # 20 runs x 30 steps, 1 KB states
    python benchmarks/audit_bench.py --long [--apptest]   # 1k, 10k, 50k-step runs

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
sys.path.insert(0, str(Path(__file__).resolve().parent))

import synth  # benchmarks/ is on the path when run as a script

from debugger import pages_data
from debugger.audit import audit_run
from debugger.audit import run as audit
from debugger.migrations import dry_run, migrate_state, registry_from_module
from debugger.store import Store
from loaders import ImportOptions, import_source

LONG_STEPS = (1_000, 10_000, 50_000)
"""Run lengths of ``--long``."""
LONG_TARGET_S = {"audit": 2.0, "timeline": 3.0}
"""At 50k steps: the audit in under 2 s, the Timeline's first step in under 3 s."""


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


def timeline_first_step(store: Store, run_id: str) -> None:
    """What the Timeline computes before it shows a run's first (head) step, uncached."""
    audit._cache.clear()
    found = pages_data.audit_findings(store, run_id)
    refs = pages_data.step_refs(store, run_id)
    grouped = pages_data.findings_by_step(found, [r.step_index for r in refs])
    [pages_data.timeline.nav_label(r, grouped) for r in refs]  # the navigator's labels
    pages_data.timeline.url_checkpoint(refs, len(refs) - 1)
    pages_data.step_view(store, run_id, refs=refs).to_json()


def apptest_seconds(store_path: Path, run_id: str) -> tuple[float, float]:
    """Wall and CPU seconds of the whole Timeline page of the run once through AppTest."""
    from streamlit.testing.v1 import AppTest
    from streamlit.util import calc_hash

    app = str(Path(__file__).resolve().parent.parent / "app.py")
    at = AppTest.from_file(app, default_timeout=600)
    at.session_state["store_path"] = str(store_path)
    at.query_params["run"] = run_id
    at._page_hash = calc_hash("timeline")  # as tests/ui/helpers.open_app opens a page
    start, cpu = time.perf_counter(), time.process_time()
    at.run()
    if at.exception:
        raise SystemExit(f"the Timeline raised: {at.exception[0].value}")
    return time.perf_counter() - start, time.process_time() - cpu


def median_wall_cpu(fn: Callable[[], Any], repeats: int) -> tuple[float, float]:
    """Median wall and CPU seconds of ``fn`` (CPU: this process, all threads).

    On a shared, loaded machine the wall time grows with the load while the CPU time
    stays near the work done, so both are printed.
    """
    walls, cpus = [], []
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def long_runs(repeats: int, with_apptest: bool) -> None:
    """One run each of LONG_STEPS steps: audit and Timeline, uncached; print the table."""
    print(f"one run of N steps, ~512 B states, load average {os.getloadavg()[0]:.1f}\n")
    head = "| steps | audit_run, uncached: wall (CPU) s | Timeline first step: wall (CPU) s |"
    print(head + (" AppTest, whole page: wall (CPU) s |" if with_apptest else ""))
    print("|---:|---:|---:|" + ("---:|" if with_apptest else ""))
    with tempfile.TemporaryDirectory() as tmp:
        for steps in LONG_STEPS:
            source, path = Path(tmp) / f"s{steps}.sqlite", Path(tmp) / f"s{steps}.duckdb"
            synth.write(synth.Spec(1, steps, 512), source, None)
            with Store.open(path) as store:
                import_source(store, str(source), ImportOptions())
            with Store.open(path, read_only=True) as store:
                run_id = store.run_records()[0].run_id

                def uncached(s: Store = store, r: str = run_id) -> None:
                    audit._cache.clear()
                    audit_run(s, r)

                a, a_cpu = median_wall_cpu(uncached, repeats)
                t, t_cpu = median_wall_cpu(
                    lambda s=store, r=run_id: timeline_first_step(s, r), repeats
                )
            extra = ""
            if with_apptest:
                page, page_cpu = apptest_seconds(path, run_id)
                extra = f" {page:.2f} ({page_cpu:.2f}) |"
            print(f"| {steps:,} | {a:.2f} ({a_cpu:.2f}) | {t:.2f} ({t_cpu:.2f}) |{extra}")
    print(f"load average at the end {os.getloadavg()[0]:.1f}")
    print(f"\ntarget at {LONG_STEPS[-1]:,} steps: audit < {LONG_TARGET_S['audit']} s, "
          f"Timeline first step < {LONG_TARGET_S['timeline']} s")  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    """Build the store, measure, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small run")
    parser.add_argument("--long", action="store_true", help="1k, 10k, 50k-step runs")
    parser.add_argument("--apptest", action="store_true", help="with --long: the page too")
    parser.add_argument("--repeat", type=int, default=3, help="with --long: repeats")
    args = parser.parse_args(argv)
    if args.long:
        long_runs(args.repeat, args.apptest)
        return
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
