"""Read latency of a large store: one checkpoint, one 1 MB state, the runs listing.

Builds (once; kept in ``benchmarks/data/``) a store of 1,000,000 checkpoints of ~2 KB state
plus a few runs whose states are ~1 MB, through Stepscope's own import of a synthetic
Parquet dataset (``benchmarks/synth.py``). Then, on a read-only open:

- ``store.checkpoint(run, step)``: fetched and parsed into a Checkpoint, random (run, step);
- the same for the ~1 MB states (stored uncompressed in ``large_states``);
- ``store.runs()``: every run with its aggregates, as a DataFrame;
- the plan: ``EXPLAIN ANALYZE`` of the lookup by ``lookup_key`` (the indexed BIGINT) against
  the naive ``WHERE run_id = ? AND step_index = ?``, with both timed in the same run.

Then the same reads on a message-heavy LangGraph store: threads of a ReAct agent whose
message list grows to ~200 messages (~100 KB states), written through the real
``SqliteSaver`` by ``benchmarks/lg_heavy_gen.py`` and imported by Stepscope, in chunks of
``--chunk-threads`` threads (each chunk's source deleted once imported: 1M checkpoints are a
54 GB source); its states are stored as skeletons plus shared messages (docs/store.md). It
prints the sources' summed size and the store's against the target (store <= 0.25 x source).

Run ``python benchmarks/store_bench.py`` (``--quick``: 100,000 checkpoints;
``--heavy-checkpoints N``, default 1,000,000; ``--only native|heavy``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import duckdb  # noqa: E402
import lg_heavy_gen  # noqa: E402
import synth  # noqa: E402

from debugger.store import Store  # noqa: E402
from debugger.store.prune import compact  # noqa: E402
from debugger.store.run_reads import runs_now  # noqa: E402
from debugger.store.schema import (  # noqa: E402
    CURRENT_VERSION,
    RUN_SHIFT,
    STEP_OFFSET,
    applied_version,
)
from loaders import import_source  # noqa: E402

LARGE_RUNS = 3
LARGE_STEPS = 4


def load() -> str:
    """The 1/5/15-minute load averages (the machine is shared)."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def migrated(store: Path) -> Path:
    """``store``, migrated to this Stepscope's layout if an older one built it, and then
    compacted: a migration leaves the blocks it freed in the file, which would count in the
    store's size."""
    con = duckdb.connect(str(store), read_only=True)
    try:
        version = applied_version(con)
    finally:
        con.close()
    if version >= CURRENT_VERSION:
        return store
    t0 = time.perf_counter()
    with Store.open(store):
        pass
    print(f"migrated {store.name} from store version {version} to {CURRENT_VERSION} in "
          f"{time.perf_counter() - t0:.0f} s; compacting ...", file=sys.stderr)  # fmt: skip
    before, after = compact(str(store))
    print(f"compacted: {before / 2**20:,.0f} -> {after / 2**20:,.0f} MiB", file=sys.stderr)
    return store


def build(spec: synth.Spec, name: str, rebuild: bool) -> Path:
    """The store for ``spec``, imported by Stepscope from a synthetic Parquet dataset."""
    store = DATA / f"{name}.duckdb"
    if store.exists() and not rebuild:
        return migrated(store)
    parquet = DATA / f"{name}_parquet"
    print(f"generating {spec.total:,} checkpoints ...", file=sys.stderr)
    synth.write(spec, None, parquet)
    for p in (store, Path(f"{store}.wal")):
        p.unlink(missing_ok=True)
    t0 = time.perf_counter()
    with Store.open(store) as s:
        report = import_source(s, str(parquet))
    seconds = time.perf_counter() - t0
    print(f"imported {report.total.imported:,} rows in {seconds:.0f} s "
          f"({report.total.imported / seconds:,.0f} rows/s, load {load()})",
          file=sys.stderr)  # fmt: skip
    return store


def timed(fn: Callable[[], Any], n: int) -> list[float]:
    """Milliseconds of ``n`` calls (after two warm-up calls)."""
    fn()
    fn()
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def pct(ms: list[float], q: float) -> float:
    """The q-quantile (0..1) of the samples."""
    s = sorted(ms)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))]


def plan_summary(store: Store, sql: str) -> str:
    """EXPLAIN ANALYZE of a query, reduced to each table scan's type and row groups read.

    Plain EXPLAIN is misleading here (it shows a filter the optimiser may not use as an
    index); EXPLAIN ANALYZE reports what ran.
    """
    text = store.sql(f"EXPLAIN ANALYZE {sql}")[0][1]
    flat = re.sub(r"[│╭╮╰╯─┬┴┌┐└┘├┤┒┎┚┖┰┸]", " ", text)
    scans = re.findall(
        r"Table:\s*(\S+).*?Type:\s*([A-Za-z ]+?Scan).*?Row Groups Scanned:\s*(\d+\s*/\s*\d+)",
        flat,
        flags=re.S,
    )
    total = re.search(r"Total Time:\s*([\d.]+)s", flat)
    parts = [f"{t.split('.')[-1]}: {kind}, row groups scanned {rg}" for t, kind, rg in scans]
    ms = f"{float(total.group(1)) * 1000:.2f} ms" if total else "?"
    return f"{'; '.join(parts) or 'no table scan found'} (EXPLAIN ANALYZE total {ms})"


def _read_table(results: dict[str, tuple[list[float], int | None]]) -> list[str]:
    """The markdown rows of timed reads: p50, p95 and the target each read has (if any)."""
    rows = ["| read | n | p50 ms | p95 ms | target p95 | met |", "|---|---:|---:|---:|---:|---|"]
    for name, (ms, target) in results.items():
        p95 = pct(ms, 0.95)
        met = "" if target is None else ("yes" if p95 < target else "no")
        tgt = "" if target is None else f"< {target}"
        rows.append(
            f"| {name} | {len(ms)} | {statistics.median(ms):.2f} | {p95:.2f} | {tgt} | {met} |"
        )
    return rows


def _with_arrow_listing(
    results: dict[str, tuple[list[float], int | None]], path: Path, listing: str
) -> dict[str, tuple[list[float], int | None]]:
    """``results`` with the listing SQL timed through Arrow -> pandas after ``runs()``.

    A Store returns rows, not Arrow tables, so this runs on a plain read-only DuckDB
    connection, as a SQL user opens the store (the Store must be closed by then).
    """
    con = duckdb.connect(str(path), read_only=True)
    try:
        con.execute("SET TimeZone = 'UTC'")
        arrow = timed(lambda: con.sql(listing).to_arrow_table().to_pandas(), 30)
    finally:
        con.close()
    out = {}
    for name, value in results.items():
        out[name] = value
        if name.startswith("runs() listing"):
            out["the same listing SQL through Arrow -> pandas (not .df())"] = (arrow, None)
    return out


def bench(path: Path, lookups: int) -> tuple[str, str]:
    """Run the measurements; return the markdown table and the plan evidence."""
    rng = random.Random(11)
    with Store.open(path, read_only=True) as store:
        runs = store.sql("SELECT run_id, first_step, last_step FROM runs WHERE run_id LIKE 'run-%'")
        large = store.sql(
            "SELECT run_id, first_step, last_step FROM runs WHERE run_id LIKE 'large-%'"
        )
        picks = [(r, rng.randint(a, b)) for r, a, b in rng.choices(runs, k=2 * lookups + 4)]
        it = iter(picks)

        def point() -> None:
            run_id, step = next(it)
            ckpt = store.checkpoint(run_id, step)
            assert ckpt.step_index == step

        big_it = iter([(r, rng.randint(a, b)) for r, a, b in rng.choices(large, k=52)])

        def big() -> None:
            run_id, step = next(big_it)
            assert store.checkpoint(run_id, step).state_bytes > 500_000

        naive_it = iter(picks)

        def naive() -> None:
            run_id, step = next(naive_it)
            rows = store.sql(
                "SELECT * FROM checkpoints WHERE run_id = ? AND step_index = ?", [run_id, step]
            )
            assert rows

        listing = (
            "SELECT run_id, agent, status, status_reason, first_step, last_step, "
            "checkpoint_count, first_at, last_at, tokens_spent, steps_spent, wall_clock_ms, "
            "CAST(limits AS VARCHAR) AS limits, CAST(model_versions AS VARCHAR) AS "
            "model_versions, last_error, pending_count, replay_of, replay_from_step "
            f"FROM {runs_now()} ORDER BY last_at DESC NULLS LAST, run_id"
        )

        results = {
            "checkpoint(run, step), ~2 KB, fetched and parsed": (timed(point, lookups), 5),
            # the same, other random checkpoints, once the first pass has had DuckDB load the
            # small columns' blocks (as in the app, whose connection lives on)
            "... the next lookups on the same connection": (timed(point, lookups), 5),
            "checkpoint(run, step), ~1 MB state": (timed(big, 50), 15),
            "runs() listing with aggregates": (timed(store.runs, 30), 50),
            "naive SELECT * FROM checkpoints WHERE run_id=? AND step_index=?": (
                timed(naive, min(lookups, 100)), None),
        }  # fmt: skip
        n_runs = len(store.runs())
        [(total,)] = store.sql("SELECT count(*) FROM checkpoint_rows")
        run_id, step = picks[0]
        [(num,)] = store.sql("SELECT run_num FROM run_keys WHERE run_id = ?", [run_id])
        key = num * RUN_SHIFT + step + STEP_OFFSET
        indexed = plan_summary(store, f"SELECT * FROM checkpoint_rows WHERE lookup_key = {key}")
        naive_plan = plan_summary(
            store,
            f"SELECT * FROM checkpoint_rows WHERE run_id = '{run_id}' AND step_index = {step}",
        )
    results = _with_arrow_listing(results, path, listing)
    lines = [
        f"Store: {total:,} checkpoints, {n_runs:,} runs, file "
        f"{path.stat().st_size / 2**20:,.0f} MiB; load {load()}",
        "",
        *_read_table(results),
    ]
    plans = (
        f"- `WHERE lookup_key = {key}` (what store.checkpoint runs): {indexed}\n"
        f"- `WHERE run_id = '{run_id}' AND step_index = {step}` (naive): {naive_plan}"
    )
    return "\n".join(lines), plans


def build_heavy(checkpoints: int, rebuild: bool, chunk_threads: int) -> tuple[int, Path]:
    """The message-heavy store, built in chunks; returns its sources' total size and its path.

    1,000,000 checkpoints of ~58 KB would be a 58 GB source: so ``chunk_threads`` threads at
    a time are written by ``lg_heavy_gen`` (LangGraph's saver and bytes), imported into the
    same store by Stepscope's import, and deleted. The store is judged against the sum of the
    chunks' sizes, kept with it in ``<store>.json``. Each chunk's times are logged, so an
    import that slows down as the store grows shows.
    """
    store = DATA / f"lgheavy{checkpoints}.duckdb"
    sidecar = Path(f"{store}.json")
    if not rebuild and store.exists() and sidecar.exists():
        return int(json.loads(sidecar.read_text())["source_bytes"]), migrated(store)
    for p in (store, Path(f"{store}.wal"), sidecar):
        p.unlink(missing_ok=True)
    per_thread = 1 + 2 * lg_heavy_gen.ROUNDS
    threads = max(1, round(checkpoints / per_thread))
    source = DATA / f"lgheavy{checkpoints}.chunk.sqlite"
    total_bytes = written = 0
    t_all = time.perf_counter()
    for first in range(0, threads, chunk_threads):
        n = min(chunk_threads, threads - first)
        t0 = time.perf_counter()
        written += lg_heavy_gen.write(source, n * per_thread, first_thread=first)
        size = source.stat().st_size
        t1 = time.perf_counter()
        with Store.open(store) as s:
            import_source(s, str(source))
        t2 = time.perf_counter()
        source.unlink()
        total_bytes += size
        print(f"threads {first:,}-{first + n - 1:,}: {n * per_thread:,} checkpoints, source "
              f"{size / 2**20:,.0f} MiB written in {t1 - t0:.1f} s, imported in {t2 - t1:.1f} s;"
              f" store {store.stat().st_size / 2**20:,.1f} MiB; load {load()}",
              file=sys.stderr, flush=True)  # fmt: skip
    sidecar.write_text(json.dumps({"source_bytes": total_bytes, "checkpoints": written}))
    print(f"built {written:,} checkpoints in {time.perf_counter() - t_all:.0f} s "
          f"(sources {total_bytes / 2**30:,.2f} GiB in all)", file=sys.stderr)  # fmt: skip
    return total_bytes, store


def bench_heavy(source_bytes: int, path: Path, lookups: int) -> str:
    """Point reads and the runs listing on the message-heavy store; sizes against the source."""
    rng = random.Random(13)
    with Store.open(path, read_only=True) as store:
        runs = store.sql("SELECT run_id, first_step, last_step FROM runs")
        picks = iter([(r, rng.randint(a, b)) for r, a, b in rng.choices(runs, k=2 * lookups + 4)])
        tail = iter([(r, b - rng.randint(0, 9)) for r, _, b in rng.choices(runs, k=54)])

        def point(it: Any = picks) -> None:
            run_id, step = next(it)
            assert store.checkpoint(run_id, step).step_index == step

        results: dict[str, tuple[list[float], int | None]] = {
            "checkpoint(run, step), random step (states 0.2-120 KB)": (timed(point, lookups), 15),
            "... the next lookups on the same connection": (timed(point, lookups), 15),
            "checkpoint(run, step), last 10 steps (~110 KB, ~200 messages)": (
                timed(lambda: point(tail), 50), 15),
            "runs() listing with aggregates": (timed(store.runs, 30), 50),
        }  # fmt: skip
        whole = iter(rng.choices(runs, k=24))

        def run_in_sql() -> None:
            run_id = next(whole)[0]
            [(n, _)] = store.sql(
                "SELECT count(*), sum(strlen(CAST(working_state AS VARCHAR))) "
                "FROM checkpoints_of(?)",
                [run_id],
            )
            assert n > 0

        results["a run's states in SQL, `checkpoints_of(run)` (199, ~12 MB of text)"] = (
            timed(run_in_sql, 20), None)  # fmt: skip
        [(total, state_bytes)] = store.sql("SELECT count(*), sum(state_bytes) FROM checkpoint_rows")
        [(parts, part_bytes)] = store.sql("SELECT count(*), sum(strlen(part)) FROM state_parts")
        n_runs = len(runs)
    size, src = path.stat().st_size, source_bytes
    met = "met" if size <= src / 4 else "not met"
    lines = [
        f"Store: {total:,} checkpoints, {n_runs:,} runs; states {state_bytes / 2**20:,.0f} MiB "
        f"as text, {parts:,} distinct parts ({part_bytes / 2**20:,.1f} MiB); load {load()}",
        "",
        f"Source (SqliteSaver) {src / 2**20:,.1f} MiB, store {size / 2**20:,.1f} MiB: "
        f"**{size / src:.3f} x** the source (target <= 0.25: {met})",
        "",
        *_read_table(results),
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Command line: ``--quick`` for 100k checkpoints, ``--rebuild`` to re-import."""
    p = argparse.ArgumentParser(description="Stepscope store read benchmark")
    p.add_argument("--quick", action="store_true", help="100,000 checkpoints")
    p.add_argument("--rebuild", action="store_true", help="regenerate and re-import the store")
    p.add_argument("--lookups", type=int, default=300, help="random point lookups")
    p.add_argument("--heavy-checkpoints", type=int, default=1_000_000,
                   help="checkpoints of the message-heavy LangGraph store")  # fmt: skip
    p.add_argument("--chunk-threads", type=int, default=100,
                   help="threads (199 checkpoints each) written, imported at a time")  # fmt: skip
    p.add_argument("--only", choices=["native", "heavy"], default=None)
    a = p.parse_args(argv)
    DATA.mkdir(exist_ok=True)
    if a.only != "heavy":
        runs = 1_000 if a.quick else 10_000
        spec = synth.Spec(runs=runs, steps=100, state_bytes=2048, large_runs=LARGE_RUNS,
                          large_steps=LARGE_STEPS, large_bytes=1024 * 1024)  # fmt: skip
        path = build(spec, "store100k" if a.quick else "store1m", a.rebuild)
        table, plans = bench(path, a.lookups)
        print(table)
        print()
        print(plans)
    if a.only != "native":
        n = 2_000 if a.quick else a.heavy_checkpoints
        source_bytes, store = build_heavy(n, a.rebuild, a.chunk_threads)
        print()
        print(bench_heavy(source_bytes, store, a.lookups))
    return 0


if __name__ == "__main__":
    sys.exit(main())
