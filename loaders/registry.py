"""Which reader opens a source, and which flavours exist (in detection order)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from debugger.errors import SourceError
from loaders.base import Flavour, SourceReader, SqlReader

_JSON = "loaders.jsonfiles:JsonFilesReader"
"""The JSON files' reader, by name: its module is imported only for such a source (a
reader of it cannot exist before), not for every import (~7 ms)."""
_WHERE: dict[str, tuple[str, tuple[type[SourceReader] | str, ...]]] = {
    "langgraph": ("loaders.langgraph.flavour:LangGraphFlavour", (SqlReader,)),
    "adk": ("loaders.adk.flavour:AdkFlavour", (SqlReader,)),
    "temporal": ("loaders.temporal.flavour:TemporalFlavour", (_JSON,)),
    "openai-agents": ("loaders.openai_agents.flavour:OpenAIAgentsFlavour", (SqlReader, _JSON)),
    "pydantic-ai": ("loaders.pydantic_ai.flavour:PydanticAIFlavour", (_JSON,)),
    "crewai": ("loaders.crewai.flavour:CrewAIFlavour", (SqlReader,)),
    "native": ("loaders.native:NativeFlavour", (SourceReader,)),
}
"""Each flavour's class, and the readers it takes (what its ``fits`` accepts; a test keeps
the two in step). Detection order matters: the more specific shapes (LangGraph's tables)
come first."""


_SQL_SHAPE = {
    "langgraph": "loaders.langgraph.source:saver_kind",
    "adk": "loaders.adk.source:is_adk",
    "openai-agents": "loaders.openai_agents.session:is_session_db",
    "crewai": "loaders.crewai.shape:is_flow_db",
}
"""The function a SQL flavour's ``detect`` asks, in a module lighter than the flavour's own:
a SQL source it finds nothing in (a native one) is passed over without importing the
flavour; a test keeps each in step with its ``detect``."""


class _Flavours(Mapping[str, type[Flavour[Any]]]):
    """The flavours by name, each class imported when first looked up.

    Importing every flavour package added ~8 ms (SQLite) to ~20 ms (Parquet) to a small
    import's start-up; a Parquet source is offered only to the flavours that read any
    source (:func:`may_read`).
    """

    def __init__(self) -> None:
        self._loaded: dict[str, type[Flavour[Any]]] = {}

    def __getitem__(self, name: str) -> type[Flavour[Any]]:
        if name not in self._loaded:
            module, _, cls = _WHERE[name][0].partition(":")
            self._loaded[name] = getattr(importlib.import_module(module), cls)
        return self._loaded[name]

    def __iter__(self) -> Iterator[str]:
        return iter(_WHERE)

    def __len__(self) -> int:
        return len(_WHERE)


FLAVOURS: Mapping[str, type[Flavour[Any]]] = _Flavours()
"""Every flavour by name, in detection order (classes imported on first use)."""


def may_read(name: str, reader: SourceReader) -> bool:
    """True when the flavour ``name`` can take ``reader``, without importing the flavour."""
    for kind in _WHERE[name][1]:
        if isinstance(kind, str):
            module, _, cls = kind.partition(":")
            loaded = sys.modules.get(module)  # not loaded: the reader is not one
            if loaded is not None and isinstance(reader, getattr(loaded, cls)):
                return True
        elif isinstance(reader, kind):
            return True
    return False


def may_detect(name: str, reader: SourceReader) -> bool:
    """False when the flavour ``name`` surely does not detect ``reader``'s tables.

    Asks the flavour's light detection function (:data:`_SQL_SHAPE`) for a SQL reader,
    so that the flavour itself is imported only when the source may be one of its own.
    """
    if name not in _SQL_SHAPE or not isinstance(reader, SqlReader):
        return True
    module, _, function = _SQL_SHAPE[name].partition(":")
    found = getattr(importlib.import_module(module), function)(reader)
    return found is not None and found is not False


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
    # each reader's module imported only for its kind of source (the SQLite and JSON
    # readers cost ~13 ms to import, ~4% of a 20,000-row Parquet import)
    from loaders.kinds import is_parquet_file, is_sqlite_file, looks_like_parquet

    if is_postgres_url(source):
        from loaders.kinds import postgres_conninfo
        from loaders.postgres import PostgresReader

        reader: SourceReader = PostgresReader(postgres_conninfo(source))
        return reader
    path = Path(source)
    if path.is_file() and is_sqlite_file(path):
        from loaders.sqlite import SqliteReader

        return SqliteReader(path)
    if path.is_file() and is_parquet_file(path):
        from loaders.parquet import ParquetReader

        return ParquetReader(source)
    if path.is_file() and path.suffix.lower() == ".json":
        from loaders.jsonfiles import JsonFilesReader

        return JsonFilesReader(path)
    if path.is_dir() or any(ch in source for ch in "*?["):
        if looks_like_parquet(source):
            from loaders.parquet import ParquetReader

            return ParquetReader(source)
        from loaders.jsonfiles import JsonFilesReader, has_json_files

        if path.is_dir() and has_json_files(path):
            return JsonFilesReader(path)
        raise SourceError(
            f"no Parquet or JSON files in {source}",
            "pass a directory of .parquet files, or of .json files (Temporal histories)",
        )
    if not path.exists():
        raise SourceError(f"no such file or directory: {source}", "check the path")
    if path.stat().st_size == 0:
        raise SourceError(f"{source} is empty", "pass a SQLite or Parquet file")
    raise SourceError(
        f"{source} is neither a SQLite database nor a Parquet file "
        "(it may be corrupt or truncated)",
        "pass a SQLite file, a Parquet file or directory, or a postgresql:// URL",
    )
