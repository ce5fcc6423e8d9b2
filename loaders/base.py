"""The loader interface: a source *reader* (how to read tables) and a *flavour* (how to map them).

A reader (SQLite, Postgres, Parquet) knows how to list tables and stream a table as bounded
Arrow record batches, each with a ``_key`` column (BIGINT, the row's position or rowid) so a
quarantined row can be found again. A flavour (native, mapped, LangGraph) looks at the
reader's tables and produces :class:`TablePlan` objects: which canonical table, which batches,
and the SQL that projects a raw batch onto the canonical columns. The store validates and
inserts; :func:`loaders.importer.import_source` ties the three together and returns the
:class:`~debugger.model.ImportReport`.

Keeping reading and mapping apart means each new source kind works with every flavour, and
the shared loader suite can run the same round trip on every reader.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from types import TracebackType
from typing import Any, ClassVar, Generic, Literal, Self, TypeVar, get_args, get_origin

import pyarrow as pa

from loaders.filter import RunFilter, Selection

BATCH_ROWS = 16_384
"""Default rows per batch; readers may lower it for wide rows to bound memory."""
BATCH_BYTES = 48 * 1024 * 1024
"""Rough upper bound of one batch's size in memory; readers size batches from it."""


def aligned_rows(rows: int) -> int:
    """The largest power of two not above ``rows`` (at least 64, at most ``BATCH_ROWS``).

    The store's row groups hold 8,192 rows (``debugger.store.ROW_GROUP_SIZE``). Batches
    of a power of two rows fill them exactly, so the import can commit at a row group's
    end and no commit leaves a part-filled group that the next one rewrites.
    """
    rows = max(64, min(rows, BATCH_ROWS))
    return 1 << (rows.bit_length() - 1)


def ramped(rows: int, first: int = 2048) -> Iterator[int]:
    """Batch sizes that start small and double up to ``rows`` (a power of two), then stay.

    The first batches sum to ``rows`` (2,048 + 2,048 + 4,096 + 8,192 = 16,384), so batches
    still fill the store's row groups exactly (the first two together). For a reader whose
    first batch is slow to arrive (a server computing rows only as they are fetched): the
    store starts after 2,048 rows instead of 16,384, and the reading goes on beside it.
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
    capability: ClassVar[str] = "a source Stepscope reads"
    """What a reader of this class can do, as an error message names it."""
    location: str
    """Where the source is; may hold credentials (the store strips them)."""
    arrow_native: ClassVar[bool] = False
    """Its batches come from the driver as Arrow, never built from Python values with
    ``pa.array`` (which imports pandas: see :meth:`Flavour.avoids_pa_array`)."""

    @abstractmethod
    def tables(self) -> list[str]:
        """Names of the tables (or datasets) in the source."""

    @abstractmethod
    def schema(self, table: str) -> pa.Schema:
        """Arrow schema of a table (as the reader will deliver its columns)."""

    @abstractmethod
    def scan(
        self,
        table: str,
        columns: list[str] | None = None,
        batch_rows: int = BATCH_ROWS,
        where: Selection | None = None,
    ) -> Iterator[pa.RecordBatch | pa.Table]:
        """Stream a table's rows in batches, each with a ``_key`` BIGINT column.

        Batches hold the same number of rows (but the last), a power of two where the
        reader can (:func:`aligned_rows`). With ``where``, only the rows of the selected
        runs are read, the selection done by the source itself (in its query, or from its
        statistics) so the rest is never read; ``_key`` stays the row's key in the whole
        table.

        Raises:
            SourceError: the source cannot be read (corrupt, gone, no access).
        """

    def whole_table(self, table: str, small: tuple[str, int] | None = None) -> WholeTable | None:
        """``table`` as one SELECT DuckDB can run itself (see :attr:`TablePlan.whole`), or
        None: the reader's batches are the only way (the default). ``small``: (column,
        bytes): None too where that column's values may average ``bytes`` or more in a
        part of the table (values that large are handled a batch at a time)."""
        del table, small
        return None

    def count(self, table: str) -> int | None:
        """Row count for progress (may be an estimate), or None when it is costly to know."""
        return None

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release the connection or file handles."""

    def __enter__(self) -> Self:
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


Dialect = Literal["sqlite", "postgres"]
"""The SQL a :class:`SqlReader` runs."""


class SqlReader(SourceReader):
    """A reader that runs read-only SQL queries on its source (a capability a flavour can
    require: ``class MyFlavour(Flavour[SqlReader])``)."""

    capability = "a SQL database (SQLite or Postgres)"
    dialect: ClassVar[Dialect]
    """Which SQL :meth:`stream` runs."""

    @abstractmethod
    def stream(
        self, sql: str, *, size: int | Iterator[int] = 2000, what: str = "the database"
    ) -> Iterator[list[tuple[Any, ...]]]:
        """Run one read-only query and yield its rows in lists of ``size`` (or of each size
        in turn, when given an iterator of sizes); binary values come as ``bytes``.

        Args:
            sql: the query, in :attr:`dialect`.
            size: rows a list.
            what: what is read, for the error message.

        Raises:
            SourceError: the query failed (no privilege, no table, corrupt file, connection
                lost).
        """


@dataclass(frozen=True)
class WholeTable:
    """A source table as one SELECT that DuckDB runs itself (no batches through Python)."""

    sql: str
    """The rows, with ``_key`` (as the reader's batches give it) and ``_idx`` (the row's
    0-based place in the table) besides the table's columns."""
    rows: int
    """How many rows it has."""
    nbytes: int
    """Its size uncompressed, as the source's metadata says."""


@dataclass
class TablePlan:
    """How one canonical table is filled from the source."""

    table: str
    """Canonical table: checkpoints, effects or tool_calls."""
    batches: Iterator[pa.RecordBatch | pa.Table]
    """Raw batches, each with ``_key``; all but the last of the same number of rows (which
    fills the store's row groups exactly), except where a runtime flavour cuts a batch short
    at ``BATCH_BYTES`` of states: memory bound first, alignment second."""
    select_sql: str
    """SELECT over ``_raw`` yielding canonical columns + ``_key`` + ``_reason``."""
    derive_parents: bool = False
    """The source has no parent column: chain checkpoints in time order."""
    total: int | None = None
    """Rows expected, for progress."""
    gather: bool = False
    """The batches may be held and inserted in passes, where they allow it (see
    ``loaders.importer._gathered``). The native and mapped flavours set it for checkpoints
    unless smaller batches than the default were asked for (to bound memory); a flavour
    whose batches carry their own cuts of the states (LangGraph) or rows of several kinds
    keeps them one by one."""
    whole: WholeTable | None = None
    """The whole table as one SELECT that DuckDB reads itself, when the source allows it
    (:meth:`SourceReader.whole_table`): the import then runs its statements once over all
    of it, on DuckDB's threads, instead of batch by batch, and reads :attr:`batches`
    instead where that pass cannot take the table."""


R = TypeVar("R", bound=SourceReader)


class Flavour(ABC, Generic[R]):
    """Maps a source's tables onto the canonical tables.

    The type parameter is the reader capability the flavour needs (``Flavour[SourceReader]``
    for any reader, ``Flavour[SqlReader]`` for SQL); it becomes :attr:`requires`, checked
    when the flavour is chosen, so the methods below only ever get such a reader.
    """

    name: ClassVar[str]
    requires: ClassVar[type[SourceReader]]
    """The reader class (capability) this flavour reads from: its type parameter."""
    reads: ClassVar[str | None] = None
    """What the flavour reads, for an error message, when it overrides :meth:`fits` to take
    more than one kind of reader (else ``requires.capability`` says it)."""
    batch_rows: int = BATCH_ROWS
    """Rows per batch at most (``ImportOptions.batch_rows``; readers round it down to a
    power of two and lower it for wide rows)."""
    filters: ClassVar[bool] = False
    """Whether the flavour honours :attr:`rows` (``--run``/``--since``) by passing a
    :class:`~loaders.filter.Selection` to the reader; the import refuses a filter
    otherwise, rather than read the whole source."""
    decodes: ClassVar[bool] = False
    """Whether the flavour decodes its batches in Python on a thread of its own while the
    store takes the previous one (the import then leaves that thread a core)."""
    rows: RunFilter = RunFilter()
    """The runs to read (``ImportOptions.runs``/``since``); empty: all."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for base in getattr(cls, "__orig_bases__", ()):
            if get_origin(base) is Flavour:
                (cls.requires,) = get_args(base)
        if not hasattr(cls, "requires"):
            raise TypeError(
                f"{cls.__name__}: declare the reader it needs, as Flavour[SourceReader]"
            )

    @classmethod
    def fits(cls, reader: SourceReader) -> bool:
        """True when ``reader`` has the capability this flavour requires."""
        return isinstance(reader, cls.requires)

    @classmethod
    @abstractmethod
    def detect(cls, reader: R) -> bool:
        """True when the reader's tables look like this flavour."""

    @abstractmethod
    def plans(self, reader: R) -> Iterator[TablePlan]:
        """The table plans, checkpoints first.

        Raises:
            FlavourError: the tables do not have the columns this flavour needs.
        """

    def avoids_pa_array(self, reader: R) -> bool:
        """True when nothing on this flavour's import path builds an array with ``pa.array``
        (which imports pandas, about 0.3 s of CPU): its batches come from ``reader`` as
        Arrow, or are assembled from buffers (:mod:`debugger.store.arrays`). Otherwise the
        import starts importing pandas on a thread early (``loaders.importer``).
        """
        return False

    def check(self, reader: R) -> None:
        """Raise what :meth:`plans` would raise about the source's tables, reading no rows.

        Lets a caller refuse a source before it creates or locks a store.
        """

    def selection(
        self, run_column: str | None, time: tuple[str, str | None, str | None] | None = None
    ) -> Selection | None:
        """The :class:`~loaders.filter.Selection` of :attr:`rows` for one table (None when
        every run is read).

        Args:
            run_column: the table's column holding the run (None: not a plain column).
            time: (table, run column, time column) of the checkpoints, for ``--since``.

        Raises:
            FlavourError: the filter needs a column the source does not have as such.
        """
        from debugger.errors import FlavourError

        if not self.rows:
            return None
        if run_column is None:
            raise FlavourError(
                f"--run/--since need the run id as a plain column of the source ({self.name})",
                "map run_id to a column, or import without --run/--since",
            )
        table, time_run, time_col = time or (None, None, None)
        if self.rows.since is not None and (time_run is None or time_col is None):
            raise FlavourError(
                f"--since needs the checkpoints' time (created_at) as a plain column "
                f"of the source ({self.name})",
                "map created_at to a column, or use --run",
            )
        return Selection(self.rows, run_column, table, time_run, time_col)


@dataclass
class ImportOptions:
    """Options of one import (each documented in docs/cli.md)."""

    flavour: str = "auto"
    """auto, mapped, or a flavour of ``loaders.registry.FLAVOURS`` (native, langgraph, ...)."""
    mapping: str | None = None
    """Path of a TOML mapping file (implies the mapped flavour)."""
    batch_rows: int = BATCH_ROWS
    """Rows per batch."""
    runs: tuple[str, ...] = ()
    """Only these runs (ids or globs with ``*`` and ``?``); empty: every run."""
    since: str | datetime | None = None
    """Only runs with a checkpoint at or after this time (ISO text, or an age like ``7d``)."""
    progress: ProgressFn | None = field(default=None, repr=False)
    """Progress callback."""
