"""Build an issue-16 pattern with the real LangGraph on one saver, and import it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from debugger.store import Store
from loaders import ImportOptions, import_source
from tests.langgraph import patterns as P
from tests.langgraph.patterns_model import postgres_saver, sqlite_saver

SAVERS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
"""The fixture parameters: every test runs on both savers."""


@dataclass
class Built:
    """A pattern written by LangGraph and imported into a store."""

    says: dict[str, dict[str, Any]]
    """``patterns.says`` per thread: LangGraph's own view of each thread."""
    tuples: dict[str, list[Any]]
    """Per thread, every CheckpointTuple of every namespace, from the saver's ``list``."""
    values: dict[str, dict[str, Any]]
    """Per thread, the head's ``get_state().values`` (LangChain messages)."""
    store: Path
    source: str = ""
    """What was imported (a SQLite file or a Postgres URL)."""


Build = Callable[[Callable[[Any], dict[str, Any]]], Built]


def open_saver(
    request: pytest.FixtureRequest, base: Path, database: str
) -> tuple[str, AbstractContextManager[Any]]:
    """The source to import and its saver, for the saver named by ``request.param``: a SQLite
    file under ``base``, or a new database ``database`` on the suite's Postgres server."""
    if request.param == "sqlite":
        source = str(base / "lg.sqlite")
        return source, sqlite_saver(source)
    source = request.getfixturevalue("pg_server").create_database(database)
    return source, postgres_saver(source)


def builder(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Build]:
    """The body of a ``build`` fixture parametrised over ``SAVERS``."""

    def go(pattern: Callable[[Any], dict[str, Any]]) -> Built:
        source, opened = open_saver(request, tmp_path, "lgt")
        with opened as saver:
            graphs = pattern(saver)
            says = {t: P.says(g, t) for t, g in graphs.items()}
            tuples = {t: list(saver.list({"configurable": {"thread_id": t}})) for t in graphs}
            values = {t: g.get_state({"configurable": {"thread_id": t}}).values
                      for t, g in graphs.items()}  # fmt: skip
            store = tmp_path / "store.duckdb"
            with Store.open(store) as s:
                import_source(s, source, ImportOptions())
        return Built(says, tuples, values, store, source)

    yield go
