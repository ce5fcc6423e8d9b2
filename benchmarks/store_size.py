"""Where a store file's bytes go, against the naive table of the same rows.

Imports the import benchmark's source (``--rows 20000``, the default, or 200000) into a new
store and into the naive table (``import_bench.py``'s ``naive-sqlite``), then accounts for
every block of both files:

- each column's segments (``pragma_storage_info``): the bytes from its offset to the next
  segment's in the same block, and for the last segment of a block to the block's last
  non-zero byte (DuckDB zeroes the unused tail of a block it writes);
- *unused tails*: the zeroed rest of those blocks (DuckDB writes each table's last, partly
  filled block on its own, so every table with a row costs at least one whole block);
- *index and metadata*: the blocks no table segment uses (the ART indexes, the catalog,
  row-group pointers), counted whole;
- *free*: blocks DuckDB has freed and not reused (``pragma_database_size``).

Run ``python benchmarks/store_size.py`` (``--rows 200000``; ``--keep`` leaves the files in
``benchmarks/data/``).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

HEADER_BYTES = 3 * 4096
"""A DuckDB file's main header and its two database headers, before block 0."""


@dataclass
class Accounting:
    """One file's bytes by part."""

    file_bytes: int
    block_size: int
    columns: dict[tuple[str, str], int] = field(default_factory=dict)  # (table, column) -> bytes
    compression: dict[tuple[str, str], str] = field(default_factory=dict)
    table_blocks: dict[str, int] = field(default_factory=dict)
    tails: dict[str, int] = field(default_factory=dict)  # table -> zeroed bytes of its blocks
    other_blocks: int = 0
    free_blocks: int = 0


def account(path: Path) -> Accounting:
    """Every block of the DuckDB file at ``path``, by table, column, tail, index and free."""
    import duckdb

    con = duckdb.connect(str(path), read_only=True)
    try:
        row = con.execute(
            "SELECT block_size, used_blocks, free_blocks FROM pragma_database_size() "
            "WHERE database_name = current_database()"
        ).fetchone()
        assert row is not None
        block_size, used, free = int(row[0]), int(row[1]), int(row[2])
        tables = [t for (t,) in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database()"
        ).fetchall()]  # fmt: skip
        segments: list[tuple[str, str, str, int, int, list[int]]] = []
        for t in tables:
            for col, comp, block, offset, extra in con.execute(
                "SELECT column_name, compression, block_id, block_offset, additional_block_ids "
                "FROM pragma_storage_info(?) WHERE persistent AND block_id >= 0",
                [t],
            ).fetchall():
                segments.append((t, col, comp, int(block), int(offset), list(extra or [])))
    finally:
        con.close()
    acc = Accounting(file_bytes=path.stat().st_size, block_size=block_size, free_blocks=free)
    by_block: dict[int, list[tuple[str, str, str, int, int, list[int]]]] = defaultdict(list)
    blocks_of: dict[str, set[int]] = defaultdict(set)
    for s in segments:
        by_block[s[3]].append(s)
        blocks_of[s[0]].update([s[3], *s[5]])
    with path.open("rb") as f:
        for block, segs in by_block.items():
            f.seek(HEADER_BYTES + block * block_size)
            end = len(f.read(block_size).rstrip(b"\0"))
            segs.sort(key=lambda s: s[4])
            for i, s in enumerate(segs):
                stop = segs[i + 1][4] if i + 1 < len(segs) else end
                key = (s[0], s[1])
                acc.columns[key] = acc.columns.get(key, 0) + stop - s[4] + len(s[5]) * block_size
                acc.compression[key] = s[2]
            owner = segs[-1][0]
            acc.tails[owner] = acc.tails.get(owner, 0) + block_size - max(end, segs[-1][4])
    acc.table_blocks = {t: len(b) for t, b in blocks_of.items()}
    table_blocks = set().union(*blocks_of.values()) if blocks_of else set()
    acc.other_blocks = used - len(table_blocks)
    return acc


def table(store: Accounting, naive: Accounting, top: int = 8) -> str:
    """The two accountings side by side, in MiB: columns (largest first), then the rest."""

    def mib(n: float) -> str:
        return f"{n / 2**20:.2f}"

    lines = ["| part | store MiB | naive MiB |", "|---|---:|---:|"]
    naive_cols = {c: b for (_, c), b in naive.columns.items()}
    ranked = sorted(store.columns.items(), key=lambda kv: -kv[1])
    shown: set[str] = set()
    rest_store = 0
    for (t, c), b in ranked:
        if t == "checkpoint_rows" and len(shown) < top:
            other = mib(naive_cols[c]) if c in naive_cols else "-"
            lines.append(f"| `{t}.{c}` ({store.compression[(t, c)]}) | {mib(b)} | {other} |")
            shown.add(c)
        else:
            rest_store += b
    rest_naive = sum(b for c, b in naive_cols.items() if c not in shown)
    lines.append(f"| other columns and tables | {mib(rest_store)} | {mib(rest_naive)} |")
    for t, b in sorted(store.tails.items(), key=lambda x: -x[1]):
        other = mib(sum(naive.tails.values())) if t == "checkpoint_rows" else "-"
        lines.append(f"| unused tails of `{t}`'s blocks | {mib(b)} | {other} |")
    lines.append(f"| index and metadata blocks ({store.other_blocks} / {naive.other_blocks}) | "
                 f"{mib(store.other_blocks * store.block_size)} | "
                 f"{mib(naive.other_blocks * naive.block_size)} |")  # fmt: skip
    lines.append(f"| free blocks | {mib(store.free_blocks * store.block_size)} | "
                 f"{mib(naive.free_blocks * naive.block_size)} |")  # fmt: skip
    lines.append(f"| **file** | **{mib(store.file_bytes)}** | **{mib(naive.file_bytes)}** |")
    blocks = ", ".join(
        f"{t} {n}" for t, n in sorted(store.table_blocks.items(), key=lambda x: -x[1])
    )
    lines.append(f"\nstore blocks of {store.block_size // 1024} KiB per table: {blocks}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Command line: ``--rows N`` (20000 or 200000), ``--keep``."""
    import import_bench
    import synth

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=20_000, choices=[20_000, 200_000])
    p.add_argument("--keep", action="store_true", help="keep the two files")
    a = p.parse_args(argv)
    name = "c20k" if a.rows == 20_000 else "c200k"
    ds = import_bench.Dataset(name, synth.Spec(runs=a.rows // 100, steps=100, state_bytes=2048))
    DATA.mkdir(exist_ok=True)
    ds.ensure()
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    files = {m: DATA / f"size_{name}_{m}.duckdb" for m in ("stepscope-sqlite", "naive-sqlite")}
    for method, out in files.items():
        import_bench._fresh(out)
        import_bench.METHODS[method](ds.sqlite, out)
    store, naive = (account(f) for f in files.values())
    print(f"{a.rows:,} rows ({ds.sqlite.name}): store file against the naive table\n")
    print(table(store, naive))
    if not a.keep:
        for out in files.values():
            import_bench._fresh(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
