"""Re-importing a live LangGraph database ends exactly as a fresh import (issue 16, section 4).

``patterns_tokens.Live`` runs a graph one node at a time while the test imports the
database; the run's last node raises, so its ``__error__`` write lands on a checkpoint that
was imported before it existed. The store that followed the run must equal, table by table
and row by row, a store that imported the finished database once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest

from debugger.store import Store
from tests.fixtures.store_snapshot import do_import, store_tables
from tests.langgraph import patterns as P
from tests.langgraph import patterns_tokens as T
from tests.langgraph.patterns_model import postgres_saver, sqlite_saver

Saver = tuple[Callable[[], AbstractContextManager[Any]], str]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def saver(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Saver]:
    """A saver factory on a fresh database of each kind, and the source to import."""
    if request.param == "sqlite":
        path = tmp_path / "lg.sqlite"
        yield (lambda: sqlite_saver(path)), str(path)
    else:
        url = request.getfixturevalue("pg_server").create_database("lglive")
        yield (lambda: postgres_saver(url)), url


def test_live_reimport_equals_a_fresh_import(saver: Saver, tmp_path: Path) -> None:
    opened, source = saver
    followed = tmp_path / "followed.duckdb"
    with opened() as lg:
        live = T.Live(lg)
        live.start()
        live.step()
        first = do_import(source, followed)
        live.step()
        live.step()
        mid = do_import(source, followed)
        with Store.open(followed, read_only=True) as st:
            mid_status = st.run("live").status
        live.finish()
        says = P.says(live.graph, "live")["head"]
    again = do_import(source, followed)
    fresh = tmp_path / "fresh.duckdb"
    do_import(source, fresh)

    assert mid_status == "parked"  # stopped before a node, nothing written after it yet
    assert again.total.updated >= 1  # the checkpoint that received the __error__ write
    for report in (first, mid, again):
        t = report.total
        assert t.read == t.imported + t.updated + t.already_present + t.quarantined
    assert store_tables(followed) == store_tables(fresh)
    with Store.open(followed, read_only=True) as st:
        run = st.run("live")
    assert run.status == "failed" and run.last_error == says["tasks"][0]["error"]

    unchanged = do_import(source, followed).total
    assert unchanged.updated == 0 and unchanged.already_present == unchanged.read
