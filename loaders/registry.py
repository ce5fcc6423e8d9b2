"""Which reader opens a source, and which flavours exist (in detection order)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from debugger.errors import SourceError
from loaders.base import Flavour, SourceReader
from loaders.langgraph import LangGraphFlavour
from loaders.native import NativeFlavour

FLAVOURS: dict[str, type[Flavour[Any]]] = {"langgraph": LangGraphFlavour, "native": NativeFlavour}
"""Detection order matters: the more specific shapes (LangGraph's tables) come first."""


def flavour_for_mapping(path: str) -> Flavour[Any]:
    """The mapped flavour for a mapping file."""
    from loaders.mapping import MappedFlavour

    return MappedFlavour(path)


def is_postgres_url(source: str) -> bool:
    """True for a Postgres URL (any case) or libpq keyword string (``loaders.kinds``)."""
    from loaders.kinds import is_postgres_source

    return is_postgres_source(source)


def open_reader(source: str) -> SourceReader:
    """Open the right reader for a path, glob or URL.

    Raises:
        SourceError: nothing there, or not a kind of source Stepscope reads.
    """
    from loaders.kinds import is_parquet_file, is_sqlite_file, looks_like_parquet
    from loaders.sqlite import SqliteReader

    if is_postgres_url(source):
        from loaders.kinds import postgres_conninfo
        from loaders.postgres import PostgresReader

        reader: SourceReader = PostgresReader(postgres_conninfo(source))
        return reader
    path = Path(source)
    if path.is_file() and is_sqlite_file(path):
        return SqliteReader(path)
    if path.is_file() and is_parquet_file(path):
        from loaders.parquet import ParquetReader

        return ParquetReader(source)
    if path.is_dir() or any(ch in source for ch in "*?["):
        if looks_like_parquet(source):
            from loaders.parquet import ParquetReader

            return ParquetReader(source)
        raise SourceError(f"no Parquet files in {source}", "pass a directory of .parquet files")
    if not path.exists():
        raise SourceError(f"no such file or directory: {source}", "check the path")
    if path.stat().st_size == 0:
        raise SourceError(f"{source} is empty", "pass a SQLite or Parquet file")
    raise SourceError(
        f"{source} is neither a SQLite database nor a Parquet file "
        "(it may be corrupt or truncated)",
        "pass a SQLite file, a Parquet file or directory, or a postgresql:// URL",
    )
