"""The loader interface: a source *reader* (how to read tables) and a *flavour* (how to map them).

A reader (SQLite, Postgres, Parquet) knows how to list tables and stream a table as bounded
Arrow record batches, each with a ``_key`` column (BIGINT, the row's position or rowid) so a
quarantined row can be found again. A flavour (native, mapped, LangGraph) looks at the
reader's tables and produces :class:`TablePlan` objects: which canonical table, which batches,
and the SQL that projects a raw batch onto the canonical columns. The store validates and
inserts; :func:`import_source` ties the three together and returns the :class:`ImportReport`.

Keeping reading and mapping apart means each new source kind works with every flavour, and
the shared loader suite can run the same round trip on every reader.
"""

from __future__ import annotations

import importlib
import sys
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import TracebackType
from typing import ClassVar

import pyarrow as pa

from debugger.errors import FlavourError, StepscopeError
from debugger.model import ImportReport
from debugger.store import Store
from loaders.prefetch import prefetched

BATCH_ROWS = 16_384
"""Default rows per batch; readers may lower it for wide rows to bound memory."""
BATCH_BYTES = 48 * 1024 * 1024
"""Rough upper bound of one batch's size in memory; readers size batches from it."""


def aligned_rows(rows: int) -> int:
    """The largest power of two not above ``rows`` (at least 64, at most ``BATCH_ROWS``).

    The store's row groups hold 16,384 rows (``debugger.store.ROW_GROUP_SIZE``). Batches
    of a power of two rows fill them exactly, so the import can commit at a row group's end
    and no commit leaves a part-filled group that the next one rewrites.
    """
    rows = max(64, min(rows, BATCH_ROWS))
    return 1 << (rows.bit_length() - 1)


def ramped(rows: int, first: int = 2048) -> Iterator[int]:
    """Batch sizes that start small and double up to ``rows`` (a power of two), then stay.

    The first batches sum to ``rows`` (2,048 + 2,048 + 4,096 + 8,192 = 16,384), so batches
    still fill the store's row groups exactly. For a reader whose first batch is slow to
    arrive (a server computing rows only as they are fetched): the store starts after
    2,048 rows instead of 16,384, and the reading goes on beside it.
    """
    done, size = 0, min(first, rows)
    while done < rows:
        yield size
        done += size
        size = min(done, rows - done)  # doubles: the next batch is all the batches so far
    while True:
        yield rows


ProgressFn = Callable[[str, int, int | None], None]
"""Called as ``progress(table, rows_read_so_far, total_rows_or_None)`` after each batch."""


class SourceReader(ABC):
    """Read-only access to the tables of one source."""

    kind: ClassVar[str]
    location: str
    """Where the source is; may hold credentials (the store strips them)."""

    @abstractmethod
    def tables(self) -> list[str]:
        """Names of the tables (or datasets) in the source."""

    @abstractmethod
    def schema(self, table: str) -> pa.Schema:
        """Arrow schema of a table (as the reader will deliver its columns)."""

    @abstractmethod
    def scan(
        self, table: str, columns: list[str] | None = None, batch_rows: int = BATCH_ROWS
    ) -> Iterator[pa.RecordBatch | pa.Table]:
        """Stream a table's rows in batches, each with a ``_key`` BIGINT column.

        Batches hold the same number of rows (but the last), a power of two where the
        reader can (:func:`aligned_rows`).

        Raises:
            SourceError: the source cannot be read (corrupt, gone, no access).
        """

    def count(self, table: str) -> int | None:
        """Row count for progress (may be an estimate), or None when it is costly to know."""
        return None

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release the connection or file handles."""

    def __enter__(self) -> SourceReader:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def columns(self, table: str) -> list[str]:
        """Column names of a table."""
        return list(self.schema(table).names)


@dataclass
class TablePlan:
    """How one canonical table is filled from the source."""

    table: str
    """Canonical table: checkpoints, effects or tool_calls."""
    batches: Iterator[pa.RecordBatch | pa.Table]
    """Raw batches, each with ``_key``; all but the last of the same number of rows."""
    select_sql: str
    """SELECT over ``_raw`` yielding canonical columns + ``_key`` + ``_reason``."""
    derive_parents: bool = False
    """The source has no parent column: chain checkpoints in time order."""
    total: int | None = None
    """Rows expected, for progress."""


class Flavour(ABC):
    """Maps a source's tables onto the canonical tables."""

    name: ClassVar[str]
    batch_rows: int = BATCH_ROWS
    """Rows per batch at most (``ImportOptions.batch_rows``; readers round it down to a
    power of two and lower it for wide rows)."""

    @classmethod
    @abstractmethod
    def detect(cls, reader: SourceReader) -> bool:
        """True when the reader's tables look like this flavour."""

    @abstractmethod
    def plans(self, reader: SourceReader) -> Iterator[TablePlan]:
        """The table plans, checkpoints first.

        Raises:
            FlavourError: the tables do not have the columns this flavour needs.
        """

    def check(self, reader: SourceReader) -> None:  # noqa: B027 - optional hook
        """Raise what :meth:`plans` would raise about the source's tables, reading no rows.

        Lets a caller refuse a source before it creates or locks a store.
        """


@dataclass
class ImportOptions:
    """Options of one import (each documented in docs/cli.md)."""

    flavour: str = "auto"
    """auto, native, langgraph or mapped."""
    mapping: str | None = None
    """Path of a TOML mapping file (implies the mapped flavour)."""
    batch_rows: int = BATCH_ROWS
    """Rows per batch."""
    progress: ProgressFn | None = field(default=None, repr=False)
    """Progress callback."""


def choose_flavour(reader: SourceReader, options: ImportOptions) -> Flavour:
    """Pick the flavour: the mapping file's, the one asked for, or the first that detects.

    Raises:
        FlavourError: the asked-for flavour does not fit, or none does.
    """
    from loaders.registry import FLAVOURS, flavour_for_mapping

    if options.mapping:
        return flavour_for_mapping(options.mapping)
    if options.flavour == "mapped":
        raise FlavourError("the mapped flavour needs a mapping file", "pass --mapping FILE")
    if options.flavour != "auto":
        cls = FLAVOURS.get(options.flavour)
        if cls is None:
            raise FlavourError(
                f"unknown flavour {options.flavour!r}",
                f"use one of auto, {', '.join(FLAVOURS)}, mapped",
            )
        if not cls.detect(reader):
            raise FlavourError(
                f"{reader.kind} source does not have the tables of the {cls.name} flavour "
                f"(found: {', '.join(reader.tables()) or 'no tables'})",
                "use --flavor auto, or --mapping FILE for another table shape",
            )
        return cls()
    for cls in FLAVOURS.values():
        if cls.detect(reader):
            return cls()
    raise FlavourError(
        f"{reader.kind} source has no checkpoint tables Stepscope knows "
        f"(found: {', '.join(reader.tables()) or 'no tables'})",
        "write a mapping file for its tables and pass --mapping FILE (see docs/mapping.md)",
    )


def check_source(source: str, options: ImportOptions | None = None) -> str:
    """Open a source and pick its flavour without touching a store.

    The CLI calls this first, so a mistyped path or a corrupt file fails before a store is
    created or locked.

    Returns:
        The flavour that would be used.

    Raises:
        SourceError, FlavourError, MappingError: as :func:`import_source`.
    """
    from loaders.registry import open_reader

    with open_reader(source) as reader:
        flavour = choose_flavour(reader, options or ImportOptions())
        flavour.check(reader)
        return flavour.name


def import_source(store: Store, source: str, options: ImportOptions | None = None) -> ImportReport:
    """Import one source into the store: read, map, validate, insert, derive runs.

    Args:
        store: a writable store.
        source: a file path, a directory or glob of Parquet files, or a postgresql:// URL.
        options: flavour, mapping, batch size and progress callback.

    Returns:
        The import report (``read = imported + already present + quarantined``).

    Raises:
        SourceError: the source cannot be opened or read.
        FlavourError, MappingError: its shape is not understood.
    """
    from loaders.registry import open_reader

    options = options or ImportOptions()
    _import_pandas_meanwhile()
    with open_reader(source) as reader:
        flavour = choose_flavour(reader, options)
        flavour.batch_rows = options.batch_rows
        with store.import_session(reader.kind, flavour.name, reader.location) as session:
            chained = False
            try:
                for plan in flavour.plans(reader):
                    chained |= plan.derive_parents
                    seen = 0
                    # the next batch is validated on a thread while this one is inserted
                    staged = session.staged(plan.table, plan.batches, plan.select_sql)
                    for batch in prefetched(staged):
                        counts = session.add_staged(batch, plan.derive_parents)
                        seen += counts.read
                        if options.progress:
                            options.progress(plan.table, seen, plan.total)
            except StepscopeError:
                session.commit()
                _settle(store, session.source_id, chained)
                raise
            return session.finish()


def _import_pandas_meanwhile() -> None:
    """Start importing pandas on a thread, if nothing has yet.

    DuckDB imports pandas the first time a batch is handed to it (it checks whether the
    object is a DataFrame), and that took 0.4 s at the start of every import in a new
    process, before the first batch could be validated. Started here, it overlaps with
    opening the source and reading its first batch, which release the GIL.
    """
    if "pandas" not in sys.modules:
        threading.Thread(
            target=importlib.import_module, args=("pandas",), name="stepscope-pandas", daemon=True
        ).start()


def _settle(store: Store, source_id: int, chained: bool) -> None:
    """After a source failed part-way: derive parents and runs for the batches committed.

    Each batch is committed on its own, so a source that turns out corrupt after some rows
    leaves those rows stored ("rows before it were imported"); without this, their runs
    would be missing from ``runs`` (or stale) until a later import touched them.
    """
    from debugger.store.derive import derive_runs
    from debugger.store.ingest import derive_parents

    con = store._con
    con.execute("BEGIN")
    try:
        if chained:
            derive_parents(con, source_id)
        derive_runs(con)
        con.execute("COMMIT")
    except Exception:
        con.execute("ROLLBACK")
        raise
