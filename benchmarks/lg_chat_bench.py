"""A LangGraph functional-API chat that saves its history: the store's size and reads.

Writes ``--threads`` chats (default 5) of ``--calls`` calls (default 150) through the real
LangGraph ``SqliteSaver`` (``tests/store/v6_source.py``'s chat entrypoint: each call returns
the model's answer and saves the whole history, ~800-character messages), then imports the
file twice, each in its own process: into a store as Stepscope writes it (documents of 4 KB
or more with ``internal_channels`` split into shared parts, store version 6) and into one
that keeps every document whole in its row (the layout before version 6; the same code
with the cut turned off). Prints the source's and each store's size, the import's time, and
for each store, read in alternating processes (``--rounds``, default 2): 300 random
``store.checkpoint(run, step)`` reads right after opening (p50 / p95), every run's
checkpoints at once, and the view's ``sum(strlen(metadata))`` over every checkpoint.

Target (issue 22): a message-heavy LangGraph store <= 0.25x its source.

Run ``python benchmarks/lg_chat_bench.py`` (``--threads 2 --calls 40`` for a quick look;
``--keep`` leaves the files in ``benchmarks/data/``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from store_bench import pct  # noqa: E402  (the p95 the store benchmark reports)


@dataclass
class Row:
    """One store's figures."""

    import_s: float
    mib: float
    ratio: float
    reads: list[dict[str, float]] = field(default_factory=list)


LAYOUTS = ("split", "whole")
"""The store as Stepscope writes it, and with every document whole (before version 6)."""


def write_source(path: Path, threads: int, calls: int) -> None:
    from tests.store.v6_source import chat_source

    names = tuple(f"chat-{i}" for i in range(threads))
    path.unlink(missing_ok=True)
    chat_source(path, calls=calls, threads=names)


def _import(source: str, store: str, layout: str) -> dict[str, float]:
    from debugger.store import Store, metadata_split
    from loaders import import_source

    if layout == "whole":
        metadata_split.CANDIDATES = "false"  # type: ignore[misc]
    start = time.perf_counter()
    with Store.open(store) as s:
        report = import_source(s, source)
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "checkpoints": report.tables["checkpoints"].imported}


def _read(store: str) -> dict[str, float]:
    import duckdb

    from debugger.store import Store

    con = duckdb.connect(store, read_only=True)
    keys = con.execute("SELECT run_id, step_index FROM checkpoint_rows").fetchall()
    con.close()
    random.seed(7)
    picks = [random.choice(keys) for _ in range(300)]
    out: dict[str, float] = {}
    with Store.open(store, read_only=True) as s:
        times = []
        for run, step in picks:
            t = time.perf_counter()
            s.checkpoint(run, step)
            times.append((time.perf_counter() - t) * 1000)
        out["p50"], out["p95"] = statistics.median(times), pct(times, 0.95)
        runs = list(s.runs()["run_id"])  # (its first call imports pandas: not timed)
        t = time.perf_counter()
        for run in runs:
            s.checkpoints(run)
        out["runs_ms"] = (time.perf_counter() - t) * 1000
        t = time.perf_counter()
        s.sql("SELECT sum(strlen(CAST(metadata AS VARCHAR))) FROM checkpoints")
        out["view_ms"] = (time.perf_counter() - t) * 1000
    return out


def _child(*args: str) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, __file__, "--child", *args], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(done.stderr.strip().splitlines()[-1] if done.stderr else "child failed")
    result: dict[str, float] = json.loads(done.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=5)
    parser.add_argument("--calls", type=int, default=150)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        what, *rest = args.child
        print(json.dumps(_import(*rest) if what == "import" else _read(*rest)))
        return
    where = Path(tempfile.mkdtemp(prefix="lg_chat_")) if not args.keep else HERE / "data"
    where.mkdir(exist_ok=True)
    source = where / f"lg_chat_{args.threads}x{args.calls}.sqlite"
    t = time.perf_counter()
    write_source(source, args.threads, args.calls)
    print(f"source: {args.threads} chats x {args.calls} calls written by SqliteSaver in "
          f"{time.perf_counter() - t:.1f} s, {source.stat().st_size / 2**20:.1f} MiB")  # fmt: skip
    stores = {layout: where / f"lg_chat_{layout}.duckdb" for layout in LAYOUTS}
    rows: dict[str, Row] = {}
    for layout, store in stores.items():
        store.unlink(missing_ok=True)
        made = _child("import", str(source), str(store), layout)
        size = store.stat().st_size
        rows[layout] = Row(made["seconds"], size / 2**20, size / source.stat().st_size)
    for _ in range(args.rounds):
        for layout, store in stores.items():
            rows[layout].reads.append(_child("read", str(store)))
    print(
        "| store | file MiB | x source | import s | point read p50 / p95 ms | "
        "every run's checkpoints ms | view sum(strlen(metadata)) ms |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for layout, r in rows.items():
        reads = r.reads
        p50 = "-".join(f"{x['p50']:.2f}" for x in reads)
        p95 = "-".join(f"{x['p95']:.2f}" for x in reads)
        whole = "-".join(f"{x['runs_ms']:.0f}" for x in reads)
        view = "-".join(f"{x['view_ms']:.0f}" for x in reads)
        name = "split documents (Stepscope)" if layout == "split" else "whole documents (before v6)"
        print(f"| {name} | {r.mib:.1f} | {r.ratio:.3f} | {r.import_s:.2f} | "
              f"{p50} / {p95} | {whole} | {view} |")  # fmt: skip
    ratio = rows["split"].ratio
    print(f"target store <= 0.25x source: {'met' if ratio <= 0.25 else 'NOT met'} ({ratio:.3f}x)")
    if not args.keep:
        for path in (source, *stores.values()):
            path.unlink(missing_ok=True)
        os.rmdir(where)


if __name__ == "__main__":
    main()
