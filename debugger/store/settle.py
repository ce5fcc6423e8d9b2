"""Deriving what an import left behind when its source failed part-way."""

from __future__ import annotations

import duckdb

from debugger.store.derive import derive_runs
from debugger.store.insert import derive_parents


def settle_import(con: duckdb.DuckDBPyConnection, source_id: int, chained: bool) -> None:
    """Derive parents (when ``chained``) and runs for the batches of ``source_id`` committed.

    Each batch of an import is committed on its own, so a source that turns out corrupt
    after some rows leaves those rows stored; without this, their runs would be missing from
    ``runs`` (or stale) until a later import touched them. One transaction.
    """
    con.execute("BEGIN")
    try:
        if chained:
            derive_parents(con, source_id)
        derive_runs(con)
        con.execute("COMMIT")
    except Exception:
        con.execute("ROLLBACK")
        raise
