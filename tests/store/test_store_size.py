"""The store file's accounting (``benchmarks/store_size.py``) on a real imported store.

The accounting is what docs/store.md's figures on the file's size come from, so it must
cover every byte of the file: columns, the zeroed tails of blocks, index and metadata blocks,
free blocks and the header. The layout facts it reports are the ones the docs rely on.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from benchmarks import store_size, synth
from debugger.store import Store
from loaders import ImportOptions, import_source


def _store(tmp_path: Path) -> Path:
    source = tmp_path / "src.sqlite"
    synth.write(synth.Spec(runs=30, steps=100, state_bytes=2048), source, None)
    path = tmp_path / "s.duckdb"
    with Store.open(path) as s:
        import_source(s, str(source), ImportOptions())
    return path


def test_the_accounting_covers_every_byte_of_a_store(tmp_path: Path) -> None:
    path = _store(tmp_path)
    acc = store_size.account(path)
    con = duckdb.connect(str(path), read_only=True)
    try:
        total = con.execute(
            "SELECT total_blocks FROM pragma_database_size() "
            "WHERE database_name = current_database()"
        ).fetchone()
        rows = con.execute("SELECT count(*) FROM checkpoint_rows").fetchone()
    finally:
        con.close()
    assert total is not None and rows == (3000,)
    assert path.stat().st_size == store_size.HEADER_BYTES + total[0] * acc.block_size
    in_tables = sum(acc.table_blocks.values()) * acc.block_size
    assert sum(acc.columns.values()) + sum(acc.tails.values()) == in_tables
    assert (
        store_size.HEADER_BYTES + in_tables + (acc.other_blocks + acc.free_blocks) * acc.block_size
        == acc.file_bytes
    )
    # each small table has a block of its own, nearly all of it unused (docs/store.md)
    for small in ("runs", "run_keys", "sources", "store_migrations"):
        assert acc.table_blocks[small] == 1
        assert acc.tails[small] > 0.9 * acc.block_size


def test_a_new_store_keeps_duckdbs_block_size_and_compresses_states_with_dict_fsst(
    tmp_path: Path,
) -> None:
    """docs/store.md: smaller blocks cut a small store's unused tails but make writing the
    states slower (DuckDB trains FSST per segment, and a segment is at most a block), and
    ZSTD makes a point read decompress a vector of states; so neither is taken."""
    acc = store_size.account(_store(tmp_path))
    assert acc.block_size == 262_144
    assert acc.compression[("checkpoint_rows", "working_state")] == "DICT_FSST"
