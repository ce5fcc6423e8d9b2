"""Reads about the runtime that wrote a run: the flavour of the import its head came from.

The audit judges a run against what its runtime can record (a LangGraph checkpointer has no
place for tool versions, say), so it asks which flavour imported the run. Functions take the
store's connection; :class:`debugger.store.Store` exposes them as methods.
"""

from __future__ import annotations

import duckdb

__all__ = ["run_flavour"]


def run_flavour(con: duckdb.DuckDBPyConnection, run_id: str) -> str | None:
    """The flavour (``native``, ``langgraph``, ``mapped``) that imported the run's head.

    The head's row names its import in ``source_id``, and ``sources.flavour`` is the flavour
    that import chose; None when the run, its head or its import is unknown (records built by
    hand, a store whose imports were pruned).
    """
    row = con.execute(
        """SELECT s.flavour FROM runs r
           JOIN checkpoint_rows c ON c.run_id = r.run_id AND c.checkpoint_id = r.head_checkpoint_id
           JOIN sources s ON s.source_id = c.source_id
           WHERE r.run_id = ? LIMIT 1""",
        [run_id],
    ).fetchone()
    return str(row[0]) if row and row[0] is not None else None
