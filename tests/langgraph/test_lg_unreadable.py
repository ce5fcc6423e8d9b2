"""A SqliteSaver file whose rows hold what LangGraph never writes (text that is not UTF-8,
a number where an id goes): the row goes to quarantine alone, with a reason; the import
goes on and every row read is accounted for."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver

from debugger.store import Store
from loaders import import_source
from tests.langgraph.graphs import approval, linear

DAMAGE = {
    "thread_id": ("UPDATE checkpoints SET thread_id = CAST(X'6C80FF' AS TEXT) WHERE rowid = 2",
                  "thread_id is text that is not UTF-8"),
    "checkpoint_ns": ("UPDATE checkpoints SET checkpoint_ns = CAST(X'80' AS TEXT) "
                      "WHERE rowid = 3", "checkpoint_ns is text that is not UTF-8"),
    "checkpoint_id": ("UPDATE checkpoints SET checkpoint_id = CAST(X'80' AS TEXT) "
                      "WHERE rowid = 3", "checkpoint_id is text that is not UTF-8"),
    "parent": ("UPDATE checkpoints SET parent_checkpoint_id = CAST(X'80' AS TEXT) "
               "WHERE rowid = 4", "parent_checkpoint_id is text that is not UTF-8"),
    "type": ("UPDATE checkpoints SET type = CAST(X'80' AS TEXT) WHERE rowid = 3",
             "type is text that is not UTF-8"),
    "metadata": ("UPDATE checkpoints SET metadata = CAST(X'80FF' AS TEXT) WHERE rowid = 3",
                 "corrupt json value"),
    "write_channel": ("UPDATE writes SET channel = CAST(X'80' AS TEXT) WHERE rowid = 2",
                      "undecodable write: channel is text that is not UTF-8"),
    "write_idx": ("UPDATE writes SET idx = 'x' WHERE rowid = 2",
                  "undecodable write: idx is not an integer: x"),
}  # fmt: skip


@pytest.fixture(scope="module")
def saver_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("lg") / "lg.sqlite"
    con = sqlite3.connect(path, check_same_thread=False)
    linear(SqliteSaver(con))
    approval(SqliteSaver(con))
    con.close()
    return path


@pytest.mark.parametrize("case", list(DAMAGE))
def test_an_unreadable_row_is_quarantined_alone(
    case: str, saver_file: Path, tmp_path: Path
) -> None:
    sql, reason = DAMAGE[case]
    path = tmp_path / "damaged.sqlite"
    shutil.copy(saver_file, path)
    with sqlite3.connect(path) as con:
        con.execute(sql)
    with Store.open(tmp_path / "clean.duckdb") as store:
        clean = import_source(store, str(saver_file))
    with Store.open(tmp_path / "s.duckdb") as store:
        report = import_source(store, str(path))
        reasons = set(store.quarantine()["reason"])
    t = report.total
    assert t.read == t.imported + t.updated + t.already_present + t.quarantined
    assert t.quarantined == 1 and any(r.startswith(reason) for r in reasons)
    # one checkpoint fewer, or (a write) every checkpoint with the write marked
    lost = 0 if case.startswith("write") else 1
    assert report.tables["checkpoints"].imported == clean.tables["checkpoints"].read - lost
