"""Session fixtures: every scenario written once through each saver, then imported once."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from debugger.model import ImportReport
from debugger.store import Store
from loaders import ImportOptions, import_source
from tests.langgraph.graphs import Graphs, write_all


@dataclass
class Written:
    """A LangGraph database written by the scenarios, and its import."""

    saver_name: str
    source: str
    graphs: Graphs
    saver: Any
    store_path: Path
    report: ImportReport


def _import(source: str, store_path: Path) -> ImportReport:
    with Store.open(store_path) as store:
        return import_source(store, source, ImportOptions())


@pytest.fixture(scope="session")
def lg_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Written]:
    """The scenarios written by SqliteSaver into one file, and imported."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    base = tmp_path_factory.mktemp("lg-sqlite")
    path = base / "langgraph.sqlite"
    con = sqlite3.connect(path, check_same_thread=False)
    saver = SqliteSaver(con)
    graphs = write_all(saver)
    report = _import(str(path), base / "store.duckdb")
    yield Written("sqlite", str(path), graphs, saver, base / "store.duckdb", report)
    con.close()


@pytest.fixture(scope="session")
def lg_postgres(pg_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Written]:
    """The scenarios written by PostgresSaver into a fresh database, and imported."""
    from langgraph.checkpoint.postgres import PostgresSaver

    url = pg_server.create_database("langgraph")
    base = tmp_path_factory.mktemp("lg-postgres")
    with PostgresSaver.from_conn_string(url) as saver:
        saver.setup()
        graphs = write_all(saver)
        report = _import(url, base / "store.duckdb")
        yield Written("postgres", url, graphs, saver, base / "store.duckdb", report)


@pytest.fixture(params=["sqlite", "postgres"])
def written(request: pytest.FixtureRequest) -> Written:
    """Each saver's database in turn."""
    return request.getfixturevalue(f"lg_{request.param}")  # type: ignore[no-any-return]
