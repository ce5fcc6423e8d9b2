"""Settings every DuckDB connection the store opens shares."""

from __future__ import annotations

import contextlib

import duckdb


def no_progress_bar(con: duckdb.DuckDBPyConnection) -> None:
    """Turn DuckDB's progress bar off where it would print to standard output.

    DuckDB prints it once a statement runs for two seconds (a migration of a large store, a
    big import), which would corrupt the CLI's ``--json`` output. Under Jupyter DuckDB draws
    a widget instead, and refuses to change the setting at all when ipywidgets is missing;
    nothing is printed there, so that refusal is ignored.
    """
    with contextlib.suppress(duckdb.InvalidInputException):
        con.execute("SET enable_progress_bar = false")
