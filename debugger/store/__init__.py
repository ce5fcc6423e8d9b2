"""The DuckDB store: schema (versioned, self-migrating), reads, and import sessions.

Usage::

    with Store.open("stepscope.duckdb", read_only=True) as store:
        store.runs()                      # DataFrame
        store.checkpoint("run-1", step=3) # Checkpoint
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import duckdb

from debugger.errors import StoreError
from debugger.model import Checkpoint, Effect, Run, ToolCall
from debugger.settings import DEFAULT_STORE, default_store_path
from debugger.store import audit_reads, reads, run_reads
from debugger.store.connections import no_progress_bar
from debugger.store.schema import CURRENT_VERSION, ROW_GROUP_SIZE, applied_version, migrate

if TYPE_CHECKING:
    import pandas as pd  # DataFrames come from DuckDB's .df(), which imports pandas itself

    from debugger.store.prune import PruneReport, PruneRules
    from debugger.store.session import ImportSession, strip_credentials

__all__ = ["DEFAULT_STORE", "ImportSession", "Store", "default_store_path", "strip_credentials"]


def __getattr__(name: str) -> Any:
    """The import session on first use: it needs numpy and pyarrow, slow to import, which
    the app's pages, reading a store, never use."""
    if name in ("ImportSession", "strip_credentials"):
        from debugger.store import session

        return getattr(session, name)
    raise AttributeError(f"module 'debugger.store' has no attribute {name!r}")


DUCKDB_MAGIC = b"DUCK"
"""Bytes 8-12 of every DuckDB database file."""


def _check_file(path: str) -> None:
    """Refuse a file that is not a DuckDB database before DuckDB opens it.

    Given a SQLite file, DuckDB would try to download its SQLite extension (a network call,
    then a confusing error); any other file gets a vaguer message than this one.
    """
    p = Path(path)
    if path == ":memory:" or not p.is_file() or p.stat().st_size == 0:
        return
    with p.open("rb") as f:
        head = f.read(16)
    if head[8:12] == DUCKDB_MAGIC:
        return
    what = "it is a SQLite database" if head.startswith(b"SQLite format 3") else "not DuckDB"
    raise StoreError(
        f"{path} is not a Stepscope store ({what})",
        "pass the path of a .duckdb store with --store, or a new path to create one",
    )


def _attach(path: str, read_only: bool) -> duckdb.DuckDBPyConnection:
    """A connection whose default database is the store, attached with ROW_GROUP_SIZE
    (and DuckDB's progress bar off: see :func:`no_progress_bar`)."""
    con = duckdb.connect(":memory:")
    try:
        no_progress_bar(con)
        quoted = path.replace("'", "''")
        options = f"ROW_GROUP_SIZE {ROW_GROUP_SIZE}" + (", READ_ONLY" if read_only else "")
        con.execute(f"ATTACH '{quoted}' AS store ({options})")
        con.execute("USE store")
    except BaseException:
        con.close()
        raise
    return con


LOCK_WAIT_S = 5.0
"""How long an open waits for another process's lock on the store to go away.

The app holds the store's file only while it reads (a fraction of a second per page), so an
import started in a terminal meanwhile waits for that read instead of failing."""


def _attach_waiting(path: str, read_only: bool) -> duckdb.DuckDBPyConnection:
    deadline = time.monotonic() + LOCK_WAIT_S
    while True:
        try:
            return _attach(path, read_only)
        except duckdb.IOException as e:
            if "lock" not in str(e).lower() or time.monotonic() >= deadline:
                raise
        time.sleep(0.05)


def _connect(path: str, read_only: bool) -> duckdb.DuckDBPyConnection:
    if read_only and path != ":memory:" and not Path(path).exists():
        raise StoreError(
            f"no store at {path}",
            "import a source first with `stepscope import SOURCE --store PATH`",
        )
    _check_file(path)
    try:
        con = _attach_waiting(path, read_only)
    except duckdb.IOException as e:
        text = str(e)
        if "lock" in text.lower() and read_only:
            raise StoreError(
                f"the store {path} is open for writing in another process",
                "wait for that import to finish, or close the notebook that holds it",
            ) from e
        if "lock" in text.lower():  # any other process, even a reader such as the app
            raise StoreError(
                f"the store {path} is open in another process",
                "close the notebook or import that holds it, or use another --store",
            ) from e
        raise StoreError(f"cannot open the store {path}: {text.splitlines()[0]}",
                         "check the path, or pass another --store") from e  # fmt: skip
    except duckdb.Error as e:
        if "already attached" in str(e):  # this process holds it, on another connection
            raise StoreError(
                f"the store {path} is already open in this process, on another connection",
                "close that connection first (store.close(), or leave its `with` block)",
            ) from e
        raise StoreError(
            f"{path} is not a Stepscope store: {str(e).splitlines()[0]}",
            "pass the path of a .duckdb store with --store, or a new path to create one",
        ) from e
    con.execute("SET TimeZone = 'UTC'")
    return con


class Store:
    """A Stepscope store on one DuckDB file.

    Open it with :meth:`open` as a context manager. A writable open migrates the store's own
    schema; a read-only open of an out-of-date store is refused with a hint.
    """

    def __init__(self, con: duckdb.DuckDBPyConnection, path: str, read_only: bool) -> None:
        self._con = con
        self.path = path
        self.read_only = read_only
        self._run_nums: dict[str, int] = {}  # run numbers never change once given
        self._layout = reads.Layout()  # forgotten by this store's writes (see reads.Layout)

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str] | None = None,
        read_only: bool = False,
        notify: Callable[[str], None] | None = None,
    ) -> Store:
        """Open (and, if writable, create or migrate) the store at ``path``.

        ``notify`` is told, in a line, when an existing store is about to be migrated (a
        store of a million checkpoints takes a minute or so, once).

        Raises:
            StoreError: the file is locked, not a DuckDB file, or of an unknown version.
        """
        p = str(path) if path is not None else default_store_path()
        con = _connect(p, read_only)
        try:
            version = applied_version(con)
            if version > CURRENT_VERSION:
                raise StoreError(
                    f"the store {p} has schema version {version}, newer than this Stepscope "
                    f"knows ({CURRENT_VERSION})",
                    "upgrade Stepscope (pip install -U stepscope)",
                )
            if version < CURRENT_VERSION:
                if read_only:
                    raise StoreError(
                        f"the store {p} has schema version {version} and needs migrating "
                        f"to {CURRENT_VERSION}",
                        "open it once for writing, for example with `stepscope import`",
                    )
                if version and notify is not None:
                    notify(
                        f"migrating the store {p} from schema version {version} to "
                        f"{CURRENT_VERSION} (once; a large store takes a minute or so) ..."
                    )
                try:
                    migrate(con, version)
                except (duckdb.Error, OSError) as e:  # a full disk, memory: not the store
                    raise StoreError(
                        f"the store {p} could not be migrated from schema version {version}: "
                        f"{str(e).splitlines()[0] if str(e) else type(e).__name__}",
                        "the failed step was rolled back, the store is as it was: free disk "
                        "space or memory and open it again",
                    ) from e
        except BaseException:
            con.close()
            raise
        return cls(con, p, read_only)

    def close(self) -> None:
        """Close the connection (idempotent)."""
        self._con.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- writes ---------------------------------------------------------------------------
    @contextmanager
    def import_session(self, kind: str, flavour: str, location: str) -> Iterator[ImportSession]:
        """A session that ingests batches of one source; see :class:`ImportSession`."""
        if self.read_only:
            raise StoreError("the store is open read-only", "open it without read_only")
        from debugger.store.session import ImportSession

        session = ImportSession(self._con, kind, flavour, location)
        try:
            yield session
        except BaseException:
            session.rollback()
            raise
        finally:
            # a failed import must not leave this connection with the import's memory cap
            session.restore_settings()
            self._layout = reads.Layout()

    def prune(self, rules: PruneRules, dry_run: bool = False) -> PruneReport:
        """Delete what the retention rules say, in one transaction (a dry run only counts).

        The file keeps its size until :func:`debugger.store.prune.compact` rewrites it (with
        the store closed). See :mod:`debugger.store.prune`.

        Raises:
            StoreError: a real prune on a store opened read-only.
        """
        from debugger.store import prune

        if self.read_only and not dry_run:
            raise StoreError("the store is open read-only", "open it without read_only")
        self._layout = reads.Layout()
        return prune.prune(self._con, rules, dry_run)

    # -- reads ----------------------------------------------------------------------------
    def runs(
        self,
        status: str | None = None,
        agent: str | None = None,
        text: str | None = None,
        since: datetime | None = None,
    ) -> pd.DataFrame:
        """Runs with status, steps, budgets and versions as a DataFrame, newest first."""
        return run_reads.runs_frame(self._con, status, agent, text, since)

    def run_records(self, status: str | None = None, **filters: Any) -> list[Run]:
        """Runs as :class:`Run` records (same filters as :meth:`runs`)."""
        return run_reads.run_records(self._con, status, **filters)

    def run_page(self, **query: Any) -> run_reads.RunPage:
        """A page of runs, filtered (as :meth:`runs`, plus ``until``), ordered (``order``:
        a key of ``run_reads.RUN_ORDERS``) and cut (``offset``, ``limit``) in SQL, with the
        matching runs' counts per status. For lists too long to build whole."""
        return run_reads.run_page(self._con, **query)

    def run_agents(self) -> list[str]:
        """Every agent name in the store, sorted."""
        return run_reads.run_agents(self._con)

    def run(self, run_id: str) -> Run:
        """One run's derived record."""
        return run_reads.run(self._con, run_id)

    def timeline(self, run_id: str) -> pd.DataFrame:
        """A run's checkpoints with time, budgets, effect counts and state size."""
        return reads.timeline(self._con, run_id)

    def checkpoint(
        self, run_id: str, step: int | None = None, checkpoint_id: str | None = None
    ) -> Checkpoint:
        """One checkpoint by step (newest at that step), by id, or the head if neither."""
        return reads.checkpoint(
            self._con, run_id, step, checkpoint_id, self._run_nums, self._layout
        )

    def checkpoint_text(
        self, run_id: str, step: int | None = None, checkpoint_id: str | None = None
    ) -> tuple[Checkpoint, str]:
        """:meth:`checkpoint` with the working state left as its stored JSON text.

        The returned checkpoint's ``working_state`` is None (not parsed); the text comes
        beside it. For a caller that only compares states, which it can do on their texts
        (:func:`debugger.diff.text.diff_texts`), since parsing a large state is slow.
        """
        row = reads.checkpoint_row(
            self._con, run_id, step, checkpoint_id, self._run_nums, self._layout
        )
        text = row[6] if row[6] is not None else "null"
        return reads.checkpoint_from_row(row, parse_state=False), text

    def checkpoints(self, run_id: str) -> list[Checkpoint]:
        """All checkpoints of a run, in write order."""
        return reads.checkpoints(self._con, run_id)

    def effects(self, run_id: str) -> list[Effect]:
        """A run's effects."""
        return reads.effects(self._con, run_id)

    def tool_calls(self, run_id: str, step: int | None = None) -> list[ToolCall]:
        """A run's tape of tool and model calls."""
        return reads.tool_calls(self._con, run_id, step)

    def quarantine(self, source_id: int | None = None) -> pd.DataFrame:
        """Quarantined rows with reasons."""
        return reads.quarantine(self._con, source_id)

    def sources(self) -> pd.DataFrame:
        """Every import with its counts."""
        return reads.sources(self._con)

    def sql(self, query: str, params: Sequence[object] | None = None) -> list[tuple[Any, ...]]:
        """Run one SQL statement on the store's tables and views; return its rows.

        For ad-hoc questions from Python, over the tables of docs/store.md. Meant for
        reads: imports write the rows, and keep the derived ``runs`` in step with them.

        Args:
            query: one SQL statement, with ``?`` for each parameter.
            params: the parameters' values, in order.

        Returns:
            The result's rows.

        Raises:
            StoreError: the statement failed (a typo, an unknown table or column), with
                DuckDB's message.
        """
        try:
            return self._con.execute(query, params).fetchall()
        except duckdb.Error as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise StoreError(
                f"the query failed: {first}",
                'store.sql("SELECT table_name FROM duckdb_tables()") lists the tables',
            ) from e

    def replay_ids(self, run_id: str) -> list[str]:
        """The ids of every stored run named as a replay of ``run_id`` (``<run>~replay-<n>``)."""
        rows = self._con.execute(
            "SELECT run_id FROM run_keys WHERE starts_with(run_id, ?)", [f"{run_id}~replay-"]
        ).fetchall()
        return [r for (r,) in rows]

    def cursor(self) -> Store:
        """A read-only store on a new cursor of this connection, for one thread or session.

        A cursor shares the connection's database and cache but starts from DuckDB's default
        session settings, so it is given the store's time zone and pointed at the catalog and
        schema this connection reads.
        """
        row = self._con.execute("SELECT current_database(), current_schema()").fetchone()
        cursor = self._con.cursor()
        cursor.execute("SET TimeZone = 'UTC'")
        if row is not None:
            cursor.execute(f'USE "{_quote(row[0])}"."{_quote(row[1])}"')
        return Store(cursor, self.path, read_only=True)

    def schema_version(self) -> int:
        """The store's own schema version."""
        return applied_version(self._con)

    def audit_fingerprint(self, run_id: str) -> tuple[Any, ...] | None:
        """What identifies a run's rows now (to cache its audit); None when no such run."""
        return audit_reads.audit_fingerprint(self._con, run_id)

    def audit_checkpoints(self, run_id: str) -> tuple[list[Checkpoint], list[str | None]]:
        """A run's checkpoints for the audit: states left as text, repeated documents shared.

        Returns the checkpoints in write order (``working_state`` None) and their states'
        stored JSON texts. See :func:`debugger.store.audit_reads.audit_checkpoints`.
        """
        return audit_reads.audit_checkpoints(self._con, run_id)

    def source_retention(self, since: datetime) -> list[dict[str, Any]]:
        """Per import location: checkpoints, oldest, newest, and how many since ``since``."""
        from debugger.store import prune

        return prune.source_retention(self._con, since)

    def schema_version_counts(self) -> dict[int | None, int]:
        """Schema versions of the stored checkpoints with their counts (None: no version)."""
        return audit_reads.schema_version_counts(self._con)

    def run_ids_of_version(self, version: int | None) -> list[str]:
        """The runs holding a checkpoint at this schema version, in run-id order."""
        return audit_reads.run_ids_of_version(self._con, version)

    def settle_import(self, source_id: int, chained: bool) -> None:
        """After an import failed part-way: derive parents (``chained``: the source has no
        parent column) and runs for the batches it committed."""
        from debugger.store.settle import settle_import

        settle_import(self._con, source_id, chained)

    def holds_rows(self) -> bool:
        """True when any import left a row here (a checkpoint, effect, call or rejection)."""
        row = self._con.execute(
            "SELECT EXISTS (SELECT 1 FROM run_keys) OR EXISTS (SELECT 1 FROM effects) "
            "OR EXISTS (SELECT 1 FROM tool_calls) OR EXISTS (SELECT 1 FROM quarantine) "
            "OR EXISTS (SELECT 1 FROM sources)"
        ).fetchone()
        return bool(row and row[0])

    def run_flavour(self, run_id: str) -> str | None:
        """The flavour that imported the run's head (``native``, ``langgraph``, ...), or None."""
        from debugger.store.runtime_reads import run_flavour

        return run_flavour(self._con, run_id)


def _quote(name: object) -> str:
    return str(name).replace('"', '""')
