"""Importing a source: open its reader, choose its flavour, feed the plans to the store.

The interface the pieces implement is in :mod:`loaders.base`; this module ties them together
and is what :func:`loaders.import_source` and the CLI call.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import importlib
import os
import sys
import threading
from collections.abc import Callable, Generator, Iterator
from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow as pa

from debugger.errors import FlavourError, SourceError, StepscopeError
from debugger.gil import switch_interval
from debugger.model import ImportReport
from debugger.store import Store
from debugger.store.batch import StagedBatch, joins
from debugger.store.ingest import NotInOnePass
from loaders.base import Flavour, ImportOptions, ProgressFn, SourceReader, TablePlan
from loaders.filter import RunFilter
from loaders.prefetch import prefetched

if TYPE_CHECKING:
    from debugger.store.session import ImportSession


def _found(reader: SourceReader) -> str:
    return ", ".join(reader.tables()) or "no tables"


def _asked_for(reader: SourceReader, name: str) -> Flavour[Any]:
    from loaders.registry import FLAVOURS

    cls = FLAVOURS.get(name)
    if cls is None:
        raise FlavourError(
            f"unknown flavour {name!r}", f"use one of auto, {', '.join(FLAVOURS)}, mapped"
        )
    if not cls.fits(reader):
        reads = cls.reads or cls.requires.capability
        raise SourceError(
            f"the {cls.name} flavour reads {reads}, not a {reader.kind} source",
            "use --flavor auto, or --mapping FILE for another table shape",
        )
    if not cls.detect(reader):
        raise FlavourError(
            f"{reader.kind} source does not have the tables of the {cls.name} flavour "
            f"(found: {_found(reader)})",
            "use --flavor auto, or --mapping FILE for another table shape",
        )
    return cls()


def choose_flavour(reader: SourceReader, options: ImportOptions) -> Flavour[Any]:
    """Pick the flavour: the mapping file's, the one asked for, or the first that detects.

    A flavour is only offered a reader with the capability it requires
    (:attr:`Flavour.requires`).

    Raises:
        SourceError: the asked-for flavour cannot read this kind of source.
        FlavourError: the asked-for flavour does not fit, or none does.
    """
    from loaders.registry import FLAVOURS, flavour_for_mapping, may_detect, may_read

    if options.mapping:
        return flavour_for_mapping(options.mapping)
    if options.flavour == "mapped":
        raise FlavourError("the mapped flavour needs a mapping file", "pass --mapping FILE")
    if options.flavour != "auto":
        return _asked_for(reader, options.flavour)
    for name in FLAVOURS:
        if not (may_read(name, reader) and may_detect(name, reader)):
            continue  # passed over without importing the flavour
        if FLAVOURS[name].fits(reader) and FLAVOURS[name].detect(reader):
            return FLAVOURS[name]()
    raise FlavourError(
        f"{reader.kind} source has no checkpoint tables Stepscope knows (found: {_found(reader)})",
        "write a mapping file for its tables and pass it with --mapping FILE "
        "(see `stepscope import --help`)",
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

    options = options or ImportOptions()
    with open_reader(source) as reader:
        flavour = configured(choose_flavour(reader, options), options)
        flavour.check(reader)
        return flavour.name


def configured(flavour: Flavour[Any], options: ImportOptions) -> Flavour[Any]:
    """The flavour with the options it reads (batch size, ``--run``/``--since``).

    Raises:
        SourceError: a bad ``--run`` or ``--since``.
        FlavourError: a filter the flavour cannot push into the source.
    """
    flavour.batch_rows = options.batch_rows
    flavour.rows = RunFilter.of(options.runs, options.since)
    if flavour.rows and not flavour.filters:
        raise FlavourError(
            f"the {flavour.name} flavour cannot select runs (--run/--since)",
            "import without --run and --since",
        )
    return flavour


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
    if options.progress is not None:
        options = dataclasses.replace(options, progress=_never_back(options.progress))
    with (
        _fewer_collections(),
        switch_interval(SWITCH_INTERVAL),
        _system_allocator(),
        open_reader(source) as reader,
    ):
        flavour = configured(choose_flavour(reader, options), options)
        if not flavour.avoids_pa_array(reader):
            _import_pandas_meanwhile()
        with store.import_session(reader.kind, flavour.name, reader.location) as session:
            session.filtered = flavour.rows.describe()
            chained = False
            try:
                with _core_for_the_reader(session.con, flavour.decodes):
                    for plan in flavour.plans(reader):
                        chained |= plan.derive_parents
                        if plan.whole is not None and _whole(session, plan, options):
                            continue
                        seen = 0
                        # the next batch is validated on a thread while this one is inserted
                        staged = prefetched(
                            session.staged(plan.table, plan.batches, plan.select_sql)
                        )
                        if plan.gather:
                            staged = _gathered(session, plan, staged, options)
                        for batch in staged:
                            counts = session.add_staged(batch, plan.derive_parents)
                            seen += counts.read
                            if options.progress:
                                options.progress(plan.table, seen, plan.total)
            except StepscopeError:
                # each batch is committed on its own: the rows before the failure stay, and
                # their runs are derived now rather than at a later import
                session.commit()
                store.settle_import(session.source_id, chained)
                raise
            return session.finish()


def _whole(session: ImportSession, plan: TablePlan, options: ImportOptions) -> bool:
    """Import ``plan``'s table in one pass DuckDB reads itself (:attr:`TablePlan.whole`);
    False where that pass cannot take it (nothing of it stays: it is read batch by batch)."""
    whole = plan.whole
    assert whole is not None
    try:
        with _reporting(session, plan.table, (0, whole.rows, whole.rows), options):
            counts = session.add_whole(
                plan.table, whole.sql, (whole.rows, whole.nbytes), plan.select_sql,
                plan.derive_parents, progress=options.progress is not None,
            )  # fmt: skip
    except (duckdb.Error, NotInOnePass):
        return False
    if options.progress:
        options.progress(plan.table, counts.read, plan.total)
    return True


GATHER_MAX_BYTES = 256 * 1024 * 1024
"""Source rows (Arrow) held for one pass (:func:`_gathered`): a larger table goes in passes
of this much, in bounded memory (300,000 rows of 2 KB states, a 1.2 GB SQLite file: three
passes, peak ~920 MiB)..."""
ONE_PASS_MAX_BYTES = 512 * 1024 * 1024
"""...unless the whole table looks no larger than this (its rows, at the first batch's
size a row): then it goes in one pass, which costs one pass's fixed costs and no short
last pass (200,000 rows of 2 KB states, 451 MB: 0.87 of the ceiling against 0.84 in two
passes; peak 910 MiB)."""


def _gathered(
    session: ImportSession,
    plan: TablePlan,
    batches: Iterator[StagedBatch],
    options: ImportOptions,
) -> Iterator[StagedBatch]:
    """Hold ``plan``'s staged batches and insert them in passes of up to
    :data:`GATHER_MAX_BYTES`, or all in one up to :data:`ONE_PASS_MAX_BYTES`
    (:attr:`TablePlan.gather`); yield those left to add one by one.

    The batches are read and validated on threads meanwhile, as batch by batch; what a
    pass gains is the insert, which writes its row groups on all of DuckDB's threads where
    a batch's insert writes on one (benchmarks/README.md, Import). From the first batch
    that cannot join the others (a state to split, another shape), or a pass that fails
    (rolled back: nothing of it stays), the rest is added one by one; so is what was held
    when the source fails part-way, before its error."""
    held: list[StagedBatch] = []
    nbytes = stored = 0
    bound = GATHER_MAX_BYTES
    try:
        for batch in batches:
            if not held and not stored and plan.total and batch.raw.num_rows:
                whole = plan.total * batch.raw.nbytes / batch.raw.num_rows
                bound = ONE_PASS_MAX_BYTES if whole <= ONE_PASS_MAX_BYTES else GATHER_MAX_BYTES
            if not joins(held[0] if held else batch, batch):  # each batch checked once
                held.append(batch)
                del batch  # each batch let go of once it is added (a large one is 48 MB)
                yield from _handed_back(held)
                yield from batches
                return
            held.append(batch)
            nbytes += batch.raw.nbytes
            if nbytes >= bound:
                passed = yield from _one_pass(session, plan, held, options, stored)
                if passed is None:
                    yield from batches
                    return
                stored, held, nbytes = stored + passed, [], 0
            elif options.progress:  # a third of the pass's work: the insert is the rest
                rows = sum(b.raw.num_rows for b in held)
                options.progress(plan.table, stored + rows // 3, plan.total)
    except StepscopeError:
        # a source that fails part-way keeps what was read before the failure
        yield from _handed_back(held)
        raise
    if held:  # the last pass; the only one when nothing was stored before it
        yield from _one_pass(session, plan, held, options, stored, complete=not stored)


def _one_pass(
    session: ImportSession,
    plan: TablePlan,
    held: list[StagedBatch],
    options: ImportOptions,
    stored: int,
    complete: bool = False,
) -> Generator[StagedBatch, None, int | None]:
    """Insert the held batches in one pass (``stored``: rows of the table the passes before
    read; ``complete``: the batches are the whole table); returns the rows it read, or None
    when it failed and handed them back."""
    rows = sum(b.raw.num_rows for b in held)
    try:
        with _reporting(session, plan.table, (stored, rows, plan.total), options):
            counts = session.add_gathered(
                held, plan.derive_parents, options.progress is not None, complete
            )
    except (duckdb.Error, NotInOnePass):
        yield from _handed_back(held)
        return None
    if options.progress:
        options.progress(plan.table, stored + counts.read, plan.total)
    return counts.read


def _handed_back(held: list[StagedBatch]) -> Iterator[StagedBatch]:
    """The held batches in order, each let go of as it is taken (memory goes down as they
    are added one by one, not after the last)."""
    held.reverse()
    while held:
        yield held.pop()


@contextlib.contextmanager
def _reporting(
    session: ImportSession,
    table: str,
    rows: tuple[int, int, int | None],
    options: ImportOptions,
) -> Iterator[None]:
    """Report a one-pass import's progress from a thread while the block runs
    (:func:`_report_progress`; ``rows``: before the pass, in it, and the table's total);
    no report of the thread's comes after the block."""
    if options.progress is None:
        yield
        return
    done = threading.Event()
    reporter = threading.Thread(
        target=_report_progress,
        args=(session, table, rows, options.progress, done),
        name="stepscope-progress",
        daemon=True,
    )
    reporter.start()
    try:
        yield
    finally:
        done.set()
        reporter.join()


def _never_back(progress: ProgressFn) -> ProgressFn:
    """``progress``, never told fewer rows of a table than it was told before: batches held
    for one pass and then added one by one (:func:`_gathered`) count again from the first."""
    shown: dict[str, int] = {}

    def report(table: str, rows: int, total: int | None) -> None:
        if rows >= shown.get(table, 0):
            shown[table] = rows
            progress(table, rows, total)

    return report


PROGRESS_EVERY_S = 0.5
"""How often a whole table's pass reports its progress."""


def _report_progress(
    session: ImportSession,
    table: str,
    rows: tuple[int, int, int | None],
    progress: Callable[[str, int, int | None], None],
    done: threading.Event,
) -> None:
    """Report a pass as rows, from DuckDB's progress of its statements; ``rows``: the
    table's rows stored before the pass, the pass's, and the table's total.

    The pass is two long statements, validation then the insert (about twice its work),
    each reporting its own percentage (a join's moves in steps); the session says when
    the second begins. Never the pass's last row: the caller reports that when it ends."""
    before, rows_in, total = rows
    shown = 0
    while not done.wait(PROGRESS_EVERY_S):
        try:
            at = float(session.con.query_progress())
        except duckdb.Error:
            return
        second = session.whole_validated
        if at < 0 and not second:
            continue
        at = max(at, 0.0)
        share = (1 + 2 * at / 100) / 3 if second else at / 300
        now = min(rows_in - 1, int(rows_in * share))
        if now > shown:
            shown = now
            progress(table, before + now, total)


@contextlib.contextmanager
def _fewer_collections() -> Iterator[None]:
    """Python's cycle collector, run less often during the import.

    A decoder builds dicts by the million (every message of every checkpoint) and keeps
    many alive in its caches; at the default threshold the collector runs every 700 new
    objects and walks the young generation each time, and the older ones often, to find
    no cycle (decoded values are trees). The objects that exist before the import (modules)
    are frozen out of the walks; the thresholds are restored after it.
    """
    before = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(50_000, 50, 1000)
    try:
        yield
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()


@contextlib.contextmanager
def _core_for_the_reader(con: duckdb.DuckDBPyConnection, decodes: bool) -> Iterator[None]:
    """DuckDB on one core fewer while the batches are read and stored (not for the final
    commit), for a flavour that decodes in Python, on a machine of more than one core.

    Such a flavour (LangGraph's) decodes on a thread of its own, on one core, while DuckDB
    stores the previous batch; with DuckDB's threads on every core the two take turns on
    that one, and the decoding, the slower of the two, waits.
    """
    cores = os.cpu_count() or 1
    rows = con.execute("SELECT current_setting('threads')").fetchall() if decodes else []
    before = int(rows[0][0]) if rows else 1
    if cores < 2 or before < 2:
        yield
        return
    con.execute(f"SET threads = {min(before, cores - 1)}")
    try:
        yield
    finally:
        with contextlib.suppress(duckdb.Error):  # a broken connection: its error comes first
            con.execute(f"SET threads = {before}")


@contextlib.contextmanager
def _system_allocator() -> Iterator[None]:
    """Arrow's buffers from the C library's allocator while the import runs.

    pyarrow's default pool, mimalloc, takes fresh memory in 2 MB huge pages the kernel
    zeroes on first touch, and a Parquet import's batches are mostly fresh memory: with the
    system allocator a 20,000-row Parquet import used ~0.11 s of CPU and ~100 MiB of peak
    RSS less (benchmarks/README.md; a SQLite import's batches come from ADBC's own
    allocator either way). The pool is process-wide: the previous one is restored after the
    import, and a pool the user chose (``ARROW_DEFAULT_MEMORY_POOL``) is left alone.
    """
    before = pa.default_memory_pool()
    if os.environ.get("ARROW_DEFAULT_MEMORY_POOL") or before.backend_name == "system":
        yield
        return
    pa.set_memory_pool(pa.system_memory_pool())
    try:
        yield
    finally:
        pa.set_memory_pool(before)


SWITCH_INTERVAL = 0.0005
"""Seconds a thread may hold the GIL while another waits for it, during an import.

The reader's thread decodes in Python, holding the GIL, while the store's statements run in
DuckDB without it; each statement then waits for the GIL to return its result, and DuckDB's
threads wait for it to scan a batch handed over from Python; each wait lasts up to an
interval (Python's is 5 ms), and a large import runs hundreds of statements."""


def _import_pandas_meanwhile() -> None:
    """Start importing pandas on a thread, if nothing has yet.

    ``pa.array`` imports pandas (it checks whether its argument is a DataFrame) the first
    time a reader or flavour builds a batch from Python values, a cost paid before the first
    batch could be validated. Started here, it overlaps with reading that first batch.
    A flavour that builds no array with ``pa.array`` never needs it
    (:meth:`Flavour.avoids_pa_array`).
    """
    if "pandas" not in sys.modules:
        threading.Thread(
            target=importlib.import_module, args=("pandas",), name="stepscope-pandas", daemon=True
        ).start()
