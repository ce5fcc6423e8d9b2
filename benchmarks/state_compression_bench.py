"""The state column's compression: write CPU, file size and point-read latency per method.

The same ~2 KB states (``synth.py``'s, as the import benchmark's source holds them) go into
a fresh DuckDB file per method, in a table shaped like the store's small-state storage
(``k BIGINT`` with an ART index, ``st VARCHAR USING COMPRESSION <method>``), attached as the
store is (its ``ROW_GROUP_SIZE``, the block size under test) and inserted in 16,384-row
transactions, an import's batches. Methods: ``dict_fsst`` (the store's choice),
``zstd`` and ``auto`` (no clause: DuckDB picks per segment). Plain ``fsst`` is not one:
DuckDB 2.0 refuses it for writing ("that type is deprecated and only has decompress
support"); ``dict_fsst`` is its successor.

Measured per method, each in its own child process (so one method's memory or cache does
not help the next), the methods alternating order between rounds:

- *write CPU s*: process CPU (every thread) of the inserts, commits and the close's checkpoint;
- *file*: the file's size after closing;
- *read p50/p95 ms*: ``SELECT st FROM s WHERE k = ?`` on random keys, read-only open: the
  first 300 after opening (DuckDB's cache empty, the file in the OS cache: *cold-ish*) and
  the next 300 on the same connection (*warm*).

Run ``python benchmarks/state_compression_bench.py --rows 200000`` (default 20,000;
``--repeat N`` rounds, median reported; ``--block-sizes 262144,65536`` repeats ``dict_fsst``
at each further block size: a segment is at most a block, and DuckDB trains FSST per segment).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

METHODS = ("dict_fsst", "zstd", "auto")
GROUP = 16_384
"""Rows a transaction: an import's batch (``loaders.base.BATCH_ROWS``)."""
LOOKUPS = 300


def source(rows: int) -> Path:
    """The import benchmark's SQLite source of ``rows`` checkpoints (generated once)."""
    import import_bench
    import synth

    name = "c20k" if rows <= 20_000 else "c200k"
    ds = import_bench.Dataset(name, synth.Spec(runs=rows // 100, steps=100, state_bytes=2048))
    DATA.mkdir(exist_ok=True)
    ds.ensure()
    return ds.sqlite


def child(method: str, src: str, dst: str, rows: int, block_size: int) -> dict[str, Any]:
    """Write the states with ``method``, then time point reads; returns the measurements."""
    import duckdb

    out = Path(dst)
    for p in (out, Path(f"{dst}.wal")):
        p.unlink(missing_ok=True)
    import sqlite3

    import pyarrow as pa

    lite = sqlite3.connect(f"{Path(src).resolve().as_uri()}?mode=ro", uri=True)
    texts = [r[0] for r in lite.execute(f"SELECT working_state FROM checkpoints LIMIT {rows}")]
    lite.close()
    col = pa.array(texts, pa.string())
    del texts
    con = duckdb.connect(":memory:")
    clause = "" if method == "auto" else f" USING COMPRESSION {method}"
    from debugger.store.schema import ROW_GROUP_SIZE

    c0 = time.process_time()
    con.execute(f"ATTACH '{dst}' AS s (ROW_GROUP_SIZE {ROW_GROUP_SIZE}, BLOCK_SIZE {block_size})")
    con.execute(f"CREATE TABLE s.s (k BIGINT, st VARCHAR{clause})")
    con.execute("CREATE INDEX s_k ON s.s (k)")
    for first in range(0, rows, GROUP):
        chunk = col.slice(first, GROUP)
        batch = pa.table({"k": pa.array(range(first, first + len(chunk)), pa.int64()), "st": chunk})
        con.execute("BEGIN")
        con.register("batch", batch)
        con.execute("INSERT INTO s.s SELECT * FROM batch")
        con.unregister("batch")
        con.execute("COMMIT")
    con.execute("DETACH s")
    write_cpu = time.process_time() - c0
    con.close()
    size = out.stat().st_size

    rng = random.Random(7)
    keys = [rng.randrange(rows) for _ in range(2 * LOOKUPS)]
    con = duckdb.connect(dst, read_only=True)
    times = []
    for k in keys:
        t0 = time.perf_counter()
        row = con.execute("SELECT st FROM s WHERE k = ?", [k]).fetchone()
        times.append((time.perf_counter() - t0) * 1000)
        assert row is not None
    con.close()
    out.unlink()
    cold, warm = times[:LOOKUPS], times[LOOKUPS:]
    return {"write_cpu": write_cpu, "bytes": size,
            "cold": [statistics.median(cold), _p95(cold)],
            "warm": [statistics.median(warm), _p95(warm)]}  # fmt: skip


def _p95(xs: list[float]) -> float:
    return statistics.quantiles(xs, n=20)[-1]


def run_child(method: str, src: Path, rows: int, block_size: int) -> dict[str, Any]:
    dst = DATA / f"compression_{method}_{block_size}.duckdb"
    cmd = [sys.executable, __file__, "--child", method, str(src), str(dst), str(rows),
           str(block_size)]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{method} failed:\n{proc.stderr}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    """Command line: ``--rows N``, ``--repeat N``, ``--block-sizes B,B``, ``--methods M,M``."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=20_000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--block-sizes", default="262144")
    p.add_argument("--methods", default=",".join(METHODS))
    p.add_argument("--child", nargs=5, metavar=("METHOD", "SRC", "DST", "ROWS", "BLOCK"))
    a = p.parse_args(argv)
    if a.child:
        m, src, dst, rows, block = a.child
        print(json.dumps(child(m, src, dst, int(rows), int(block))))
        return 0
    src = source(a.rows)
    sizes = [int(b) for b in a.block_sizes.split(",")]
    configs = [(m, sizes[0]) for m in a.methods.split(",")]
    configs += [("dict_fsst", b) for b in sizes[1:]]
    results: dict[tuple[str, int], list[dict[str, Any]]] = {c: [] for c in configs}
    loads = [" ".join(f"{x:.2f}" for x in os.getloadavg())]
    for i in range(a.repeat):
        for m, b in configs if i % 2 == 0 else reversed(configs):
            results[(m, b)].append(run_child(m, src, a.rows, b))
        loads.append(" ".join(f"{x:.2f}" for x in os.getloadavg()))
    print(f"{a.rows:,} states, median of {a.repeat} rounds; load {' -> '.join(loads)}\n")
    print("| method | block | write CPU s | file MiB | read p50 / p95 ms, cold-ish | warm |")
    print("|---|---:|---:|---:|---:|---:|")
    for (m, b), rs in results.items():

        def med(key: str, i: int | None = None, rs: list[dict[str, Any]] = rs) -> float:
            return float(statistics.median(r[key] if i is None else r[key][i] for r in rs))

        print(f"| {m} | {b // 1024} KiB | {med('write_cpu'):.2f} | {med('bytes') / 2**20:.1f} | "
              f"{med('cold', 0):.2f} / {med('cold', 1):.2f} | "
              f"{med('warm', 0):.2f} / {med('warm', 1):.2f} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
