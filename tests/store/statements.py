"""A store connection that notes the SQL it runs, for tests of which statements a read makes."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from debugger.store import Store


class Noting:
    """Stands in for a store's DuckDB connection and notes each statement's text."""

    def __init__(self, con: Any) -> None:
        self.con = con
        self.statements: list[str] = []

    def execute(self, sql: str, *args: Any) -> Any:
        self.statements.append(sql)
        return self.con.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.con, name)


@contextmanager
def noted(store: Store) -> Iterator[list[str]]:
    """The statements ``store`` runs within the block, as they run."""
    noting = Noting(store._con)
    store._con = noting  # type: ignore[assignment]
    try:
        yield noting.statements
    finally:
        store._con = noting.con
