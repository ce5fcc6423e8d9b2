"""SQLite sources, opened read-only (``mode=ro``) and never written."""

from __future__ import annotations

import contextlib
import itertools
import sqlite3
import threading
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from debugger.errors import SourceError
from loaders.arrow_rows import conform, rows_to_batch, sqlite_text
from loaders.base import BATCH_BYTES, BATCH_ROWS, SqlReader, aligned_rows
from loaders.filter import Selection, where_sql
from loaders.kinds import is_sqlite_file
from loaders.prefetch import prefetched

_DONE = object()
_SQLITE_TYPE = {"int64": "integer", "double": "real", "string": "text", "binary": "blob"}
"""The SQLite storage class of each Arrow type ADBC's driver gives a column."""
_CORRUPT_HINT = (
    "the file may be corrupt or truncated; check it with `sqlite3 FILE 'PRAGMA integrity_check'`"
)


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def is_wal_at_rest(path: Path) -> bool:
    """True for a WAL-mode database that no connection has open (no -wal or -shm beside it)."""
    try:
        with path.open("rb") as f:
            header = f.read(20)
    except OSError:
        return False
    at_rest = not any(Path(f"{path}{suffix}").exists() for suffix in ("-wal", "-shm"))
    return len(header) == 20 and header[18] == 2 and at_rest


def read_only_uri(path: Path) -> str:
    """The URI that opens ``path`` read-only without creating anything beside it.

    A WAL-mode database opened with ``mode=ro`` still creates ``-wal`` and ``-shm`` files
    next to it, and fails in a read-only directory. When neither file exists, nothing is
    in flight, so ``immutable=1`` reads the main file alone. When they exist (a live
    writer), ``mode=ro`` is needed to see the rows still in the WAL.
    """
    uri = path.resolve().as_uri() + "?mode=ro"
    return uri + "&immutable=1" if is_wal_at_rest(path) else uri


class SqliteReader(SqlReader):
    """Reads tables of a SQLite file through the stdlib driver in read-only mode."""

    kind = "sqlite"
    arrow_native = True  # through ADBC (loaders.sqlite._scan_fast)
    dialect = "sqlite"

    def __init__(self, path: str | Path) -> None:
        p = Path(path)
        self.location = str(p.resolve())
        if not p.exists():
            raise SourceError(f"no such file: {path}", "check the path")
        if not is_sqlite_file(p):
            raise SourceError(
                f"{path} is not a SQLite database (no SQLite header)",
                "pass a SQLite file, a Parquet file or directory, or a postgresql:// URL",
            )
        uri = read_only_uri(p)
        self._uri = uri
        try:
            # check_same_thread=False: DuckDB may consume our batches on a worker thread
            self.con = sqlite3.connect(uri, uri=True, check_same_thread=False)
            # one TEXT value that is not UTF-8 goes to quarantine with its row, instead of
            # the driver's error ending the import (loaders.arrow_rows)
            self.con.text_factory = sqlite_text
            self.con.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.Error as e:
            raise SourceError(f"cannot read {path} as SQLite: {e}", _CORRUPT_HINT) from e

    def _fail(self, e: sqlite3.Error, what: str) -> SourceError:
        return SourceError(f"cannot read {what} of {self.location}: {e}", _CORRUPT_HINT)

    def stream(
        self, sql: str, *, size: int | Iterator[int] = 2000, what: str = "the database"
    ) -> Iterator[list[tuple[Any, ...]]]:
        sizes = itertools.repeat(size) if isinstance(size, int) else size
        try:
            cur = self.con.execute(sql)
            while rows := cur.fetchmany(next(sizes)):
                yield rows
        except sqlite3.Error as e:
            raise self._fail(e, what) from e

    def tables(self) -> list[str]:
        try:
            rows = self.con.execute(
                "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') ORDER BY name"
            ).fetchall()
        except sqlite3.Error as e:
            raise self._fail(e, "the table list") from e
        return [r[0] for r in rows]

    def schema(self, table: str) -> pa.Schema:
        try:
            info = self.con.execute(f"PRAGMA table_info({_quote(table)})").fetchall()
        except sqlite3.Error as e:
            raise self._fail(e, f"table {table}") from e
        if not info:
            raise SourceError(f"no table {table!r} in {self.location}", "check the table name")
        return pa.schema([pa.field(r[1], _declared(r[2])) for r in info])

    def count(self, table: str) -> int | None:
        """Rows for progress: the largest rowid (exact unless rows were deleted).

        ``count(*)`` reads the whole table before the first batch;
        the largest rowid is one b-tree descent. Tables without a rowid are counted.
        """
        try:
            if self._has_rowid(table):
                row = self.con.execute(f"SELECT max(rowid) FROM {_quote(table)}").fetchone()
            else:
                row = self.con.execute(f"SELECT count(*) FROM {_quote(table)}").fetchone()
        except sqlite3.Error as e:
            raise self._fail(e, f"table {table}") from e
        return int(row[0] or 0) if row else None

    def _has_rowid(self, table: str) -> bool:
        try:
            self.con.execute(f"SELECT rowid FROM {_quote(table)} LIMIT 0")
        except sqlite3.OperationalError:
            return False
        return True

    def _batch_rows(self, table: str, batch_rows: int) -> int:
        # Size batches from a small sample so that wide rows (large states) stay bounded.
        sample = self.con.execute(f"SELECT * FROM {_quote(table)} LIMIT 64").fetchall()
        if not sample:
            return aligned_rows(batch_rows)
        size = sum(sum(len(v) if isinstance(v, str | bytes) else 8 for v in r) for r in sample)
        per_row = max(1, size // len(sample))
        return aligned_rows(min(batch_rows, BATCH_BYTES // per_row))

    def scan(
        self,
        table: str,
        columns: list[str] | None = None,
        batch_rows: int = BATCH_ROWS,
        where: Selection | None = None,
    ) -> Iterator[pa.RecordBatch]:
        # read the next batch on a thread while the store validates and writes this one
        return prefetched(self._scan(table, columns, batch_rows, self.where(where)))

    def where(self, sel: Selection | None) -> str:
        """The SQL condition of a selection on this source (``TRUE`` without one)."""
        if sel is None or not sel.filter:
            return "TRUE"
        time_type = None
        if sel.filter.since is not None and sel.time_table and sel.time_column:
            time_type = self.schema(sel.time_table).field(sel.time_column).type
        return where_sql(sel, "sqlite", time_type, _quote)

    def _scan(
        self, table: str, columns: list[str] | None, batch_rows: int, where: str = "TRUE"
    ) -> Iterator[pa.RecordBatch | pa.Table]:
        names = columns or self.columns(table)
        cols = ", ".join(_quote(c) for c in names)
        try:
            declared = {f.name: f.type for f in self.schema(table)}
            n = self._batch_rows(table, batch_rows)
            if self._has_rowid(table):
                after: object = None
                if _fast_reader_available():
                    after = yield from self._scan_fast(table, names, n, declared, where)
                    if after is _DONE:
                        return
                query = f"SELECT rowid, {cols} FROM {_quote(table)} WHERE ({where})"
                if isinstance(after, int):
                    query += f" AND rowid > {after}"
                cur = self.con.execute(query + " ORDER BY rowid")
                # a short first batch, unless the ADBC path read the first ones
                first = n if isinstance(after, int) else min(n, FIRST_BATCH_ROWS)
                sizes = itertools.chain([first], itertools.repeat(n))
                while rows := cur.fetchmany(next(sizes)):
                    keys = [r[0] for r in rows]
                    yield rows_to_batch([r[1:] for r in rows], names, keys, declared)
            else:
                cur = self.con.execute(f"SELECT {cols} FROM {_quote(table)} WHERE ({where})")
                start = 0
                while rows := cur.fetchmany(n):
                    yield rows_to_batch(rows, names, range(start, start + len(rows)), declared)
                    start += len(rows)
        except sqlite3.Error as e:
            raise self._fail(e, f"table {table}") from e

    def _scan_fast(
        self,
        table: str,
        names: list[str],
        n: int,
        declared: dict[str, pa.DataType],
        where: str = "TRUE",
    ) -> Generator[pa.RecordBatch | pa.Table, None, object]:
        """Stream a rowid table through ADBC's SQLite driver, straight into Arrow in C.

        Faster than the stdlib driver plus ``pa.array`` (benchmarks/README.md), and it does
        not hold the GIL while the store works. ADBC
        types a column from the first batch and upcasts values that differ there (an
        integer in a REAL column becomes 3.0, a float in a text column "3.500000e+00"),
        where the stdlib path keeps such a column as text and rejects only the odd rows. So
        the first batch's values are checked to have the types ADBC gave them; when they do
        not, or a later value does not fit (ADBC raises), the rest is read the stdlib way.
        Text and bytes columns are then given their declared type
        (:func:`loaders.arrow_rows.conform`), which also finds text that is not UTF-8.

        The first batch is :data:`FIRST_BATCH_ROWS` (fewer rows to check, and the store
        starts validating it while the rest is read); the driver's batches after it are
        joined in twos or more, to batches of ``n`` rows.

        Returns:
            ``_DONE`` when the whole table was read, else the last rowid read (or None).
        """
        # the driver manager's own API: its DB-API module imports pyarrow.dataset, and with
        # it pandas, before the first batch
        import adbc_driver_manager as adbc
        import adbc_driver_sqlite

        cols = ", ".join(_quote(c) for c in names)
        step = min(n, FIRST_BATCH_ROWS)
        last: int | None = None
        try:
            db = adbc_driver_sqlite.connect(self._uri)
        except (OSError, adbc.Error):  # the stdlib path then reports it properly
            return None
        with contextlib.ExitStack() as handles:
            handles.callback(db.close)
            # only the first batch is checked (later values that do not fit make ADBC fail)
            first_is_odd = self._check_first_rows(db, table, names, declared, where, step)
            handles.callback(first_is_odd)  # done before the database closes
            try:
                con = adbc.AdbcConnection(db)
                handles.callback(con.close)
                stmt = adbc.AdbcStatement(con)
                handles.callback(stmt.close)
                stmt.set_options(**{"adbc.sqlite.query.batch_rows": str(step)})
                stmt.set_sql_query(
                    f"SELECT rowid AS _key, {cols} FROM {_quote(table)} WHERE ({where}) "
                    "ORDER BY rowid"
                )
                stream, _ = stmt.execute_query()
                reader = pa.RecordBatchReader._import_from_c(stream.address)
                first = True
                held: list[pa.RecordBatch] = []  # read, not yet handed on
                for batch in reader:
                    if first and not self._types_hold(
                        table, names, declared, batch, first_is_odd, db
                    ):
                        return None
                    if batch.num_rows:
                        held.append(conform(batch, declared))
                    if held and (first or len(held) * step >= n):
                        yield from _joined(held)
                        last = int(held[-1].column(0)[-1].as_py())
                        held = []
                    first = False
                yield from _joined(held)
                return _DONE
            except (OSError, adbc.Error):  # a value of another type: the stdlib path goes on
                return last

    def _check_first_rows(
        self,
        db: Any,
        table: str,
        names: list[str],
        declared: dict[str, pa.DataType],
        where: str,
        rows: int,
    ) -> Callable[[], bool]:
        """Start checking, on a thread, whether one of the first ``rows`` rows has a value
        not of its column's declared SQLite type (:func:`_odd_sql`); returns a function
        that waits for the answer (True also when the check failed: the stdlib path then
        reads the table and says why).

        SQLite answers it while ADBC reads the same rows on another core (the GIL is let
        go by both): the first batch comes no later for it. Read with the batch, the check
        cost a 20,000-row import ~25 ms (12 checks a row, and a scan of the first batch's
        rows to find its last rowid). It runs on a connection of ADBC's database ``db``,
        the same copy of SQLite as the stream's: a connection of the stdlib's copy, opened
        and closed meanwhile, dropped the locks ADBC's copy held (POSIX locks are the
        process's) and, on a database with a WAL in flight, had its shared memory reset
        under it by ADBC's copy (the process died of SIGBUS)."""
        # on the table's own columns, so that typeof() reads each record's header only; the
        # last rowid of the first rows is found once
        last = (
            f"coalesce((SELECT rowid FROM {_quote(table)} WHERE ({where}) ORDER BY rowid "
            f"LIMIT 1 OFFSET {rows - 1}), 9223372036854775807)"
        )
        sql = (
            f"SELECT EXISTS (SELECT 1 FROM {_quote(table)} WHERE ({where}) "
            f"AND rowid <= {last} AND {_odd_sql(names, declared)})"
        )
        answer: list[bool] = []

        def check() -> None:
            answer.append(_adbc_exists(db, sql))

        thread = threading.Thread(target=check, name="stepscope-sqlite-check", daemon=True)
        thread.start()

        def wait() -> bool:
            thread.join()
            return answer[0] if answer else True

        return wait

    def _types_hold(
        self,
        table: str,
        names: list[str],
        declared: dict[str, pa.DataType],
        batch: pa.RecordBatch,
        first_is_odd: Callable[[], bool],
        db: Any,
    ) -> bool:
        """True when every value of the first batch has the SQLite type its column got.

        When ADBC typed every column as declared, the check of the first rows
        (:meth:`_check_first_rows`) answers; otherwise the batch's rows are read again to
        check them against the types ADBC gave, by ADBC's own SQLite (``db``: never the
        stdlib's while ADBC reads, see :meth:`_check_first_rows`).
        """
        fields = list(batch.schema)[1:]
        if not batch.num_rows:
            return True
        if all(
            f.type == declared.get(n) and str(f.type) in _SQLITE_TYPE
            for n, f in zip(names, fields, strict=True)
        ):
            return not first_is_odd()
        checks = []
        for name, field in zip(names, fields, strict=True):
            want = _SQLITE_TYPE.get(str(field.type))
            if want is None:
                return False
            checks.append(f"typeof({_quote(name)}) NOT IN ('{want}', 'null')")
        if not checks:
            return True
        last = int(batch.column(0)[-1].as_py())
        return not _adbc_exists(
            db,
            f"SELECT EXISTS (SELECT 1 FROM {_quote(table)} WHERE rowid <= {last} "
            f"AND ({' OR '.join(checks)}))",
        )

    def close(self) -> None:
        self.con.close()


FIRST_BATCH_ROWS = 8192
"""Rows of a rowid table's first batch (a row group of the store's): the store validates it
while the reader goes on. At 16,384 rows, as the batches after it, a 20,000-row table's
import waited for four fifths of it to be read (0.35 against 0.33 s)."""


def _adbc_exists(db: Any, sql: str) -> bool:
    """The answer of ``sql`` (a ``SELECT EXISTS``) on a connection of ADBC's database
    ``db``; True where it cannot answer (the stdlib path then reads the table and says why)."""
    import adbc_driver_manager as adbc

    try:
        with contextlib.ExitStack() as handles:
            con = adbc.AdbcConnection(db)
            handles.callback(con.close)
            stmt = adbc.AdbcStatement(con)
            handles.callback(stmt.close)
            stmt.set_sql_query(sql)
            stream, _ = stmt.execute_query()
            found = pa.RecordBatchReader._import_from_c(stream.address).read_all()
            return bool(found.column(0)[0].as_py())
    except (OSError, adbc.Error, IndexError):
        return True


def _joined(held: list[pa.RecordBatch]) -> Iterator[pa.RecordBatch | pa.Table]:
    """The batches as one table (zero-copy), or one by one where a batch has a column the
    others lack (rows that are not UTF-8, :func:`loaders.arrow_rows.conform`)."""
    if len(held) > 1 and all(b.schema.equals(held[0].schema) for b in held):
        yield pa.Table.from_batches(held)
    else:
        yield from held


def _fast_reader_available() -> bool:
    try:
        import adbc_driver_manager  # noqa: F401
        import adbc_driver_sqlite  # noqa: F401
    except ImportError:
        return False
    return True


def _odd_sql(names: list[str], declared: dict[str, pa.DataType]) -> str:
    """SQL that is 1 for a row with a value not of its column's declared SQLite type.

    Checked over the first batch's rows (SQLite answers ``typeof`` from the record header
    without loading the value); the rows after are not checked (a value that does not fit
    makes ADBC fail, and 12 checks a row cost ~15% of reading 200,000 rows).
    """
    checks = [
        f"typeof({_quote(n)}) NOT IN ('{_SQLITE_TYPE[str(declared[n])]}', 'null')"
        for n in names
        if str(declared.get(n)) in _SQLITE_TYPE
    ]
    return f"({' OR '.join(checks)})" if checks else "0"


def _declared(decl: str) -> pa.DataType:
    d = (decl or "").upper()
    if "INT" in d:
        return pa.int64()
    if any(t in d for t in ("REAL", "FLOA", "DOUB")):
        return pa.float64()
    if "BLOB" in d:
        return pa.binary()
    return pa.string()
