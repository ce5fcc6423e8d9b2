"""PostgreSQL sources: one read-only transaction, tables streamed through a server-side cursor.

The URL is handed to libpq unchanged, so everything libpq understands works: a
``postgresql://user:pass@host:port/db`` URL, key=value conninfo, the ``PG*`` environment
variables (``PGHOST``, ``PGUSER``, ``PGDATABASE``, ...) and the password file (``~/.pgpass``
or ``PGPASSFILE``). A password never leaves this module: error messages are built from the
connection's host, port, user and database only, and the location recorded in the store is
stripped of credentials.

Why a named (server-side) cursor: it streams a table in bounded batches inside the read-only
transaction and needs nothing beyond psycopg. The server computes rows only as they are
fetched (for ``jsonb`` columns, converting them to text is most of a read), so a table is
read without ``ORDER BY`` and its first batches are small, and the reading overlaps with
the store's inserting (benchmarks/README.md has the comparison with binary COPY and ADBC).
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator, Sequence
from typing import Any

import psycopg
import pyarrow as pa
from psycopg import errors as pge
from psycopg.conninfo import conninfo_to_dict

from debugger.errors import SourceError, redact
from loaders.arrow_rows import rows_to_batch
from loaders.base import BATCH_BYTES, BATCH_ROWS, SqlReader, aligned_rows, ramped
from loaders.prefetch import prefetched

CONNECT_TIMEOUT_S = 10
"""Seconds libpq waits for a server before the import fails (unless the URL sets its own)."""

_ARROW: dict[str, pa.DataType] = {
    "int2": pa.int64(), "int4": pa.int64(), "int8": pa.int64(), "oid": pa.int64(),
    "float4": pa.float64(), "float8": pa.float64(), "bool": pa.bool_(),
    "bytea": pa.binary(), "timestamptz": pa.timestamp("us", tz="UTC"),
    "timestamp": pa.timestamp("us"),
}  # fmt: skip
"""Postgres types delivered natively; every other type (json, jsonb, uuid, numeric, ...) is
cast to text on the server, which is how the store reads JSON documents anyway."""


def ident(name: str) -> str:
    """Quote an identifier for Postgres."""
    return '"' + name.replace('"', '""') + '"'


def connect_error(e: psycopg.Error, target: str) -> SourceError:
    """A one-line error for a failed connection, without the driver's text (it may echo input)."""
    text = str(e).lower()
    if "password authentication failed" in text or "no password supplied" in text:
        return SourceError(
            f"authentication failed for {target}",
            "check the user and password (in the URL, PGPASSWORD or the ~/.pgpass file)",
        )
    if "role" in text and "does not exist" in text:
        return SourceError(f"no such database user for {target}", "check the user name")
    if "database" in text and "does not exist" in text:
        return SourceError(
            f"the database in {target} does not exist", "check the database name in the URL"
        )
    if "permission denied" in text or "not permitted" in text or "pg_hba.conf" in text:
        return SourceError(
            f"the server refused the connection for {target}",
            "ask for CONNECT on the database, or an entry in pg_hba.conf",
        )
    return SourceError(
        f"cannot reach the Postgres server at {target}",
        "check the host and port, and that the server is running and accepts TCP connections",
    )


def query_error(e: psycopg.Error, what: str, target: str) -> SourceError:
    """A one-line error for a failed query."""
    if isinstance(e, pge.InsufficientPrivilege):
        return SourceError(
            f"user lacks the privilege to read {what} in {target}",
            "GRANT SELECT on the table (and USAGE on its schema) to that user",
        )
    if isinstance(e, pge.UndefinedTable):
        return SourceError(f"{what} does not exist in {target}", "check the table name")
    if isinstance(e, psycopg.OperationalError | pge.AdminShutdown):
        return SourceError(
            f"lost the connection to {target} while reading {what}",
            "check the server and run the import again (it adds only missing rows)",
        )
    detail = (e.diag.message_primary or type(e).__name__) if hasattr(e, "diag") else ""
    return SourceError(f"cannot read {what} in {target}: {detail}", "check the database")


def safe_target(conninfo: str) -> str:
    """``user@host:port/db`` of a conninfo, without its password (for messages)."""
    try:
        # parsed after redaction: libpq splits a URL whose password holds an unencoded "/"
        # or "@" elsewhere, and the pieces (host, port, dbname) would carry the password
        d = conninfo_to_dict(redact(conninfo))
    except psycopg.ProgrammingError:
        return "the server"
    host = d.get("host") or "local socket"
    port = f":{d['port']}" if d.get("port") else ""
    user = f"{d['user']}@" if d.get("user") else ""
    db = f"/{d['dbname']}" if d.get("dbname") else ""
    return f"{user}{host}{port}{db}"


class PostgresReader(SqlReader):
    """Reads tables of a Postgres database in one read-only transaction."""

    kind = "postgres"
    dialect = "postgres"

    def __init__(self, url: str) -> None:
        self.location = url
        kwargs: dict[str, Any] = {"application_name": "stepscope"}
        if "connect_timeout" not in url:
            kwargs["connect_timeout"] = CONNECT_TIMEOUT_S
        try:
            self.con = psycopg.connect(url, autocommit=False, **kwargs)
        except psycopg.Error as e:
            raise connect_error(e, safe_target(url)) from None
        except (ValueError, psycopg.ProgrammingError) as e:
            raise SourceError(
                "the Postgres URL cannot be parsed", "use postgresql://user@host:port/database"
            ) from e
        info = self.con.info
        self.target = f"{info.user}@{info.host}:{info.port}/{info.dbname}"
        # A read-only transaction: a bug here can never write to someone's database, and
        # every scan sees one snapshot.
        self.con.read_only = True
        self._names = 0
        self._columns: dict[str, list[tuple[str, str]]] = {}

    def _fail(self, e: psycopg.Error, what: str) -> SourceError:
        self._recover()
        return query_error(e, what, self.target)

    def _recover(self) -> None:
        with contextlib.suppress(psycopg.Error):
            self.con.rollback()

    def query(self, sql: str, params: Sequence[Any] = (), what: str = "the database") -> list[Any]:
        """Run a small query and return all its rows.

        Raises:
            SourceError: the query failed (no privilege, no table, connection lost).
        """
        try:
            with self.con.cursor() as cur:
                cur.execute(sql, params)  # type: ignore[arg-type]
                return cur.fetchall()
        except psycopg.Error as e:
            raise self._fail(e, what) from None

    def stream(
        self, sql: str, *, size: int | Iterator[int] = 2000, what: str = "the database"
    ) -> Iterator[list[tuple[Any, ...]]]:
        """See :meth:`SqlReader.stream`: through a server-side cursor, in binary form (much
        cheaper for ``bytea``: no hex text)."""
        self._names += 1
        try:
            sizes = itertools.repeat(size) if isinstance(size, int) else size
            with self.con.cursor(name=f"stepscope_{self._names}", binary=True) as cur:
                cur.execute(sql)  # type: ignore[arg-type]
                while rows := cur.fetchmany(next(sizes)):
                    yield rows
        except psycopg.Error as e:
            raise self._fail(e, what) from None

    def tables(self) -> list[str]:
        rows = self.query(
            """SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
               WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'v', 'm', 'p', 'f')
               ORDER BY c.relname""",
            what="the table list",
        )
        return [r[0] for r in rows]

    def _table_columns(self, table: str) -> list[tuple[str, str]]:
        if table not in self._columns:
            rows = self.query(
                """SELECT a.attname, t.typname FROM pg_attribute a
                   JOIN pg_type t ON t.oid = a.atttypid
                   WHERE a.attrelid = to_regclass(%s) AND a.attnum > 0 AND NOT a.attisdropped
                   ORDER BY a.attnum""",
                [ident(table)],
                what=f"table {table}",
            )
            if not rows:
                raise SourceError(
                    f"no table {table!r} in {self.target} (schema {self._schema()})",
                    "check the table name, or set the schema with ?options=-csearch_path%3DNAME",
                )
            self._columns[table] = [(r[0], r[1]) for r in rows]
        return self._columns[table]

    def _schema(self) -> str:
        rows = self.query("SELECT current_schema()")
        return str(rows[0][0]) if rows else "?"

    def schema(self, table: str) -> pa.Schema:
        return pa.schema(
            [pa.field(n, _ARROW.get(t, pa.string())) for n, t in self._table_columns(table)]
        )

    def count(self, table: str) -> int | None:
        rows = self.query(
            "SELECT reltuples::bigint FROM pg_class WHERE oid = to_regclass(%s)", [ident(table)]
        )
        n = int(rows[0][0]) if rows and rows[0][0] is not None else -1
        return n if n >= 0 else None

    def _select(self, table: str, names: list[str]) -> str:
        types = dict(self._table_columns(table))
        exprs = [
            ident(n) if types.get(n) in _ARROW else f"{ident(n)}::text AS {ident(n)}" for n in names
        ]
        return f"SELECT {', '.join(exprs)} FROM {ident(table)}"

    def _batch_rows(self, table: str, batch_rows: int) -> int:
        rows = self.query(
            f"SELECT coalesce(avg(pg_column_size(t.*)), 0) FROM "
            f"(SELECT * FROM {ident(table)} LIMIT 64) t",
            what=f"table {table}",
        )
        per_row = max(1, int(rows[0][0] or 0))
        return aligned_rows(min(batch_rows, BATCH_BYTES // per_row))

    def scan(
        self, table: str, columns: list[str] | None = None, batch_rows: int = BATCH_ROWS
    ) -> Iterator[pa.RecordBatch]:
        names = columns or self.columns(table)
        schema = self.schema(table)
        n = self._batch_rows(table, batch_rows)
        yield from prefetched(self._batches(table, names, schema, n))

    def _batches(
        self, table: str, names: list[str], schema: pa.Schema, n: int
    ) -> Iterator[pa.RecordBatch]:
        start = 0
        sql = self._select(table, names)
        # Rows in the table's physical order, as they are read: a sequential scan that
        # starts at the first block (not where another scan is) on one process. An ORDER BY
        # would make the server read, convert (jsonb to text) and sort the whole table before
        # the first row came back; unsorted, the server's work streams beside the store's.
        try:
            self.con.execute("SET LOCAL synchronize_seqscans = off")
            self.con.execute("SET LOCAL max_parallel_workers_per_gather = 0")
        except psycopg.Error as e:
            raise self._fail(e, f"table {table}") from None
        # the server computes rows only as they are fetched: small batches first, so the
        # store starts early (see loaders.base.ramped)
        for rows in self.stream(sql, size=ramped(n), what=f"table {table}"):
            batch = rows_to_batch(rows, names, range(start, start + len(rows)))
            yield _typed(batch, schema)
            start += len(rows)

    def close(self) -> None:
        try:
            self.con.rollback()
        finally:
            self.con.close()


def _typed(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """Give all-NULL columns their declared type instead of text."""
    arrays = []
    for name, arr in zip(batch.schema.names, batch.columns, strict=True):
        declared = schema.field(name).type if name in schema.names else None
        if declared is not None and arr.null_count == len(arr) and arr.type != declared:
            arr = pa.nulls(len(arr), type=declared)
        arrays.append(arr)
    return pa.RecordBatch.from_arrays(arrays, names=batch.schema.names)
