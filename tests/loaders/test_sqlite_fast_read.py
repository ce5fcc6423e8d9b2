"""The SQLite reader's ADBC fast path gives exactly what the stdlib path gives, and falls back.

ADBC types a column from its first batch; values of another type there or later must not be
coerced (3 -> 3.0, 3.5 -> "3.500000e+00") but read as the stdlib path reads them.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import loaders.sqlite as sqlite_mod
from loaders.sqlite import SqliteReader


def _write(path: Path, rows: list[tuple[Any, ...]], decl: str = "a, b REAL, c TEXT") -> Path:
    con = sqlite3.connect(path)
    con.execute(f"CREATE TABLE t ({decl})")
    con.executemany("INSERT INTO t VALUES (?, ?, ?)", rows)
    con.commit()
    con.close()
    return path


def _read(path: Path, fast: bool, monkeypatch: pytest.MonkeyPatch, batch_rows: int) -> list[Any]:
    monkeypatch.setattr(sqlite_mod, "_fast_reader_available", lambda: fast)
    with SqliteReader(path) as reader:
        batches = list(reader.scan("t", batch_rows=batch_rows))
    # batches may differ in type (a batch whose values mix types has that column as text)
    return [b.schema for b in batches], [r for b in batches for r in b.to_pylist()], batches


def _same(
    path: Path, monkeypatch: pytest.MonkeyPatch, batch_rows: int = 1000, fast_ends: Any = None
) -> list[Any]:
    """Read both ways; the fast path must end as ``fast_ends`` says (done, fell back, ...)."""
    slow_schemas, slow_rows, _ = _read(path, False, monkeypatch, batch_rows)
    ends: list[Any] = []
    original = SqliteReader._scan_fast

    def spy(self: SqliteReader, *args: Any) -> Any:
        result = yield from original(self, *args)
        ends.append(result)
        return result

    monkeypatch.setattr(SqliteReader, "_scan_fast", spy)
    fast_schemas, fast_rows, batches = _read(path, True, monkeypatch, batch_rows)
    if fast_ends is not None:
        assert ends == fast_ends
    assert fast_rows == slow_rows
    assert fast_schemas == slow_schemas
    return batches


def _traced(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The statements every reader made from now on runs on its own (stdlib) connection."""
    statements: list[str] = []
    init = SqliteReader.__init__

    def traced(self: SqliteReader, path: Path) -> None:
        init(self, path)
        self.con.set_trace_callback(statements.append)

    monkeypatch.setattr(SqliteReader, "__init__", traced)
    return statements


def test_clean_table_reads_the_same_through_adbc(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = [(i, i / 2, f'{{"n": {i}}}') for i in range(500)]
    path = _write(tmp_path / "clean.sqlite", rows)
    batches = _same(path, monkeypatch, fast_ends=[sqlite_mod._DONE])
    assert [b.schema.types[1] for b in batches] == [pa.int64()]
    assert sum(b.num_rows for b in batches) == 500


def test_mixed_types_in_first_batch_are_read_the_stdlib_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows: list[tuple[Any, ...]] = [(1, 1.5, "x"), ("two", 2.5, "y"), (3.5, 3, "z")]
    path = _write(tmp_path / "mixed.sqlite", rows)
    batches = _same(path, monkeypatch, fast_ends=[None])
    # the stdlib path keeps a column of mixed values as text: "3.5", not "3.500000e+00"
    assert pa.Table.from_batches(batches).column("a").to_pylist() == ["1", "two", "3.5"]


def test_declared_types_are_checked_on_the_batch_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # every column typed as declared: the check of the first rows answers, no second read
    decl = "a INTEGER, b REAL, c BLOB"
    clean = _write(tmp_path / "clean.sqlite", [(i, i / 2, b"x") for i in range(300)], decl)
    statements = _traced(monkeypatch)
    _same(clean, monkeypatch, batch_rows=64, fast_ends=[sqlite_mod._DONE])
    assert not [q for q in statements if "typeof" in q]
    # text in a BLOB column: ADBC still types it binary, the flag sends it the stdlib way
    rows: list[tuple[Any, ...]] = [(i, i / 2, b"x") for i in range(300)]
    rows[10] = (10, 5.0, "text")
    odd = _write(tmp_path / "odd.sqlite", rows, decl)
    batches = _same(odd, monkeypatch, batch_rows=64, fast_ends=[None])
    assert [b.schema.field("c").type for b in batches] == [pa.binary()] * 5


@pytest.mark.parametrize(
    ("rows", "bad", "batch_rows", "first_rows", "ends"),
    [(300, 251, 64, 64, 192), (1000, 700, 256, 64, 576)],
    ids=["batch-by-batch", "batches-held"],
)
def test_a_later_value_of_another_type_continues_without_loss(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    rows: int,
    bad: int,
    batch_rows: int,
    first_rows: int,
    ends: int,
) -> None:
    """ADBC fails on row ``bad``; the stdlib path goes on after the last row handed on. With
    driver batches being joined (``batches-held``: row 700 is in the second of four), the
    one read but not handed on is read again: no row lost, none twice."""
    monkeypatch.setattr(sqlite_mod, "FIRST_BATCH_ROWS", first_rows)
    values: list[tuple[Any, ...]] = [(i, float(i), "s") for i in range(rows)]
    values[bad - 1] = ("not a number", 1.0, "s")
    path = _write(tmp_path / "late.sqlite", values)
    batches = _same(path, monkeypatch, batch_rows=batch_rows, fast_ends=[ends])
    keys = [k for b in batches for k in b.column("_key").to_pylist()]
    assert keys == list(range(1, rows + 1))
    assert batches[0].schema.field("a").type == pa.int64()
    odd = next(b for b in batches if bad in b.column("_key").to_pylist())
    assert odd.schema.field("a").type == pa.string()


def test_a_table_without_rowid_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    con = sqlite3.connect(tmp_path / "norowid.sqlite")
    con.execute("CREATE TABLE t (a INTEGER PRIMARY KEY, b REAL, c TEXT) WITHOUT ROWID")
    con.executemany("INSERT INTO t VALUES (?, ?, ?)", [(i, 0.5, "c") for i in range(10)])
    con.commit()
    con.close()
    batches = _same(tmp_path / "norowid.sqlite", monkeypatch)
    assert sum(b.num_rows for b in batches) == 10


@pytest.mark.parametrize("at", [0, 63])
def test_a_value_of_another_type_anywhere_in_the_first_batch_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, at: int
) -> None:
    """Only the first batch's rows are checked (up to the rowid of its last row, found once),
    on a table whose rowids have gaps: its first row and its last are both seen."""
    decl = "a INTEGER, b REAL, c BLOB"
    path = _write(tmp_path / "gaps.sqlite", [(i, i / 2, b"x") for i in range(400)], decl)
    con = sqlite3.connect(path)
    con.execute("DELETE FROM t WHERE a % 3 = 1")
    con.execute(
        "UPDATE t SET c = 'text' WHERE rowid = (SELECT rowid FROM t ORDER BY rowid LIMIT 1 "
        f"OFFSET {at})"
    )
    con.commit()
    con.close()
    batches = _same(path, monkeypatch, batch_rows=64, fast_ends=[None])
    assert sum(b.num_rows for b in batches) == 400 - 133


def test_the_first_batch_is_shorter_and_the_driver_batches_after_it_are_joined(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first batch of FIRST_BATCH_ROWS (the store starts on it early), then batches of
    ``batch_rows``, both ways; through ADBC each is the driver's batches joined."""
    monkeypatch.setattr(sqlite_mod, "FIRST_BATCH_ROWS", 64)
    rows = [(i, i / 2, f'{{"n": {i}}}') for i in range(1000)]
    path = _write(tmp_path / "clean.sqlite", rows)
    batches = _same(path, monkeypatch, batch_rows=256, fast_ends=[sqlite_mod._DONE])
    assert [b.num_rows for b in batches] == [64, 256, 256, 256, 168]
    keys = [k for b in batches for k in b.column("_key").to_pylist()]
    assert keys == list(range(1, 1001))


def test_text_that_is_not_utf8_in_one_driver_batch_keeps_every_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A driver batch with undecodable text gets a column the others lack: the batches are
    handed on one by one instead of joined, and every row is read once."""
    monkeypatch.setattr(sqlite_mod, "FIRST_BATCH_ROWS", 64)
    path = _write(tmp_path / "bad.sqlite", [(i, i / 2, "ok") for i in range(600)], "a, b, c TEXT")
    con = sqlite3.connect(path)
    con.execute("UPDATE t SET c = CAST(X'66ff6f' AS TEXT) WHERE rowid = 200")
    con.commit()
    con.close()
    monkeypatch.setattr(sqlite_mod, "_fast_reader_available", lambda: True)
    with SqliteReader(path) as reader:
        batches = list(reader.scan("t", batch_rows=256))
    keys = [k for b in batches for k in b.column("_key").to_pylist()]
    assert keys == list(range(1, 601))
    marked = [b for b in batches if "_undecodable" in b.schema.names]
    assert [b.num_rows for b in marked] == [64]
    assert [b.num_rows for b in batches] == [64, 64, 64, 64, 64, 256, 24]


def test_a_first_rows_check_that_fails_sends_the_table_the_stdlib_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first rows' types are checked on a thread, on a connection of its own; when that
    check cannot answer, the batch is not trusted and the stdlib path reads the table."""
    decl = "a INTEGER, b REAL, c BLOB"
    path = _write(tmp_path / "t.sqlite", [(i, i / 2, b"x") for i in range(300)], decl)
    monkeypatch.setattr(sqlite_mod, "_odd_sql", lambda names, declared: "no_such_column")
    _same(path, monkeypatch, batch_rows=64, fast_ends=[None])


def test_the_first_rows_are_checked_by_adbcs_sqlite_not_a_second_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer died with rows in its WAL. While ADBC's copy of SQLite reads the file, the
    stdlib's copy opens nothing: two copies in one process take each other's POSIX locks for
    their own, and ADBC's reset the WAL's shared memory under the stdlib's connection, which
    died of SIGBUS (about one import in three). Every row, the WAL's included, is read."""
    path = tmp_path / "crashed.sqlite"
    writer = (
        "import os, sqlite3, sys\n"
        "c = sqlite3.connect(sys.argv[1])\n"
        "c.execute('PRAGMA journal_mode=wal'); c.execute('PRAGMA wal_autocheckpoint=0')\n"
        "c.execute('CREATE TABLE t (a INTEGER, b REAL, c TEXT)'); c.commit()\n"
        "c.executemany('INSERT INTO t VALUES (?, ?, ?)', [(i, i / 2, 'x') for i in range(300)])\n"
        "c.commit()\n"
        "os._exit(0)\n"  # no checkpoint, no close: -wal and -shm stay
    )
    subprocess.run([sys.executable, "-c", writer, str(path)], check=True)
    assert Path(f"{path}-wal").exists()
    opened: list[str] = []
    connect = sqlite3.connect

    def counted(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        opened.append(str(args[0]))
        return connect(*args, **kwargs)

    monkeypatch.setattr(sqlite_mod.sqlite3, "connect", counted)
    monkeypatch.setattr(sqlite_mod, "FIRST_BATCH_ROWS", 64)
    with SqliteReader(path) as reader:
        assert len(opened) == 1  # the reader's own connection
        batches = list(reader.scan("t", batch_rows=128))
    assert len(opened) == 1
    assert [k for b in batches for k in b.column("_key").to_pylist()] == list(range(1, 301))


def test_a_column_adbc_types_otherwise_is_checked_by_adbcs_sqlite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A column declared without a type holds integers: ADBC types it int64, not as declared
    (text), so the first batch's rows are read again to check them; by ADBC's own SQLite,
    not the reader's stdlib connection, which must not read beside ADBC's."""
    path = _write(tmp_path / "t.sqlite", [(i, i / 2, "x") for i in range(300)])
    statements = _traced(monkeypatch)
    batches = _same(path, monkeypatch, batch_rows=64, fast_ends=[sqlite_mod._DONE])
    assert batches[0].schema.field("a").type == pa.int64()
    assert not [q for q in statements if "typeof" in q]
