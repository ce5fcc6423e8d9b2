"""An import session: one ``sources`` row, batches ingested one transaction each, runs derived."""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import duckdb
import orjson
import pyarrow as pa

from debugger.contract import TABLE_COLUMNS
from debugger.errors import redact
from debugger.model import ImportReport, TableCounts
from debugger.store import arrays, json_depth, state_hash
from debugger.store.batch import StagedBatch, gatherable, plus, sliced, split_undecodable
from debugger.store.connections import no_progress_bar
from debugger.store.derive import derive_runs
from debugger.store.ingest import (
    BatchResult,
    NotInOnePass,
    ingest_batch,
    quarantine_undecodable,
)
from debugger.store.insert import ALL_TOUCHED, derive_parents
from debugger.store.schema import ROW_GROUP_SIZE
from debugger.store.stage import Prestaged, stage_sql
from debugger.store.validate import staged_types

IMPORT_SETTINGS = {
    # WAL size that triggers a checkpoint (DuckDB's default is 16 MB)
    "checkpoint_threshold": "256MB",
}
"""Connection settings during an import; the previous values are restored after it."""
NO_VACUUM = {"max_vacuum_tasks": "0"}
"""Set during an import too, where DuckDB has the setting: its checkpoints do not merge
short row groups. One pass inserts its rows on several threads, each of which leaves a
short row group behind; merged at the import's last checkpoint, they were rewritten
whole (recompressed: ~1 s of 200,000 rows in four passes, a third of the import). Left
as they are, the file is no larger (benchmarks/README.md, Import)."""
LARGE_IMPORT_SETTINGS = {
    # DuckDB's buffer pool (batches are bounded; the rest is cache); PASS_MEMORY_LIMIT
    # during a pass
    "memory_limit": "384MB",
    # DuckDB buffers up to five row groups, or 1.2 GiB (derived from the default memory
    # limit, not the one set here), before it writes an append out: with large states that
    # buffer alone would hold more than the rest of the import
    "write_buffer_row_group_count": "1",
    "write_buffer_row_group_memory_limit": "64MB",
    # hand freed memory back to the system instead of keeping up to 512 MB of it
    "allocator_flush_threshold": "32MB",
    "allocator_bulk_deallocation_flush_threshold": "64MB",
}
"""Settings that bound memory, set once an import has read ``LARGE_IMPORT_BYTES`` (and
restored after it).

An import that small never holds much, and the bounds cost it: handing memory back gives
the next batch the kernel's page faults and zeroing, and putting DuckDB's memory limit back
is a statement of its own. By the time an
import has read this much, its batches and DuckDB's cache weigh more than what DuckDB's
own thresholds keep (128 MB and 512 MB of freed memory)."""
PASS_MEMORY_LIMIT = "512MB"
"""DuckDB's buffer pool during a pass (``add_whole``, ``add_gathered``) of a large import,
and back to ``LARGE_IMPORT_SETTINGS``' after it. A pass inserts all its rows in one
statement, which 384 MB slows by ~6% (200,000 rows from Parquet); batch by batch, 384 MB
costs nothing measurable and keeps a 1 GB source of 9 KB states at ~920 MiB at peak
rather than 950-1,060 (benchmarks/README.md, Import)."""
TRACK_PROGRESS = {
    "enable_progress_bar": "true",
    "enable_progress_bar_print": "false",  # tracked for query_progress(), never printed
    "progress_bar_time": "0",
}
"""Settings that have DuckDB track a statement's progress from its start, silently."""

LARGE_IMPORT_BYTES = 256 * 1024 * 1024
"""Source bytes (Arrow) after which an import counts as large."""
COMMIT_BYTES = 128 * 1024 * 1024
"""Source data gathered in one transaction before it commits at the end of a row group.

DuckDB keeps every Arrow batch an open transaction has read until it ends, so an import
that is one transaction holds its whole source in memory. Commits come when the
transaction's rows fill whole row groups (``ROW_GROUP_SIZE``; batches are a power of two
rows) and this much is gathered, or its batches are shorter than a group (a reader cuts
wide rows into several): DuckDB has written those groups into the file during the inserts,
and the commit only records them. At twice this much it commits regardless (rows rejected
or already present move the boundary). Committing every batch would derive the runs at
every commit. A source that fails part-way is committed up to there.

A short batch (the import's last) is not added to a transaction that has written whole
groups: that transaction commits first. Inserted after them, the part-filled group had
DuckDB write every row of the transaction again at the commit, twice the work, and the
first copy's blocks stayed in the file as free space (20,000 rows: 24 MiB, not 15)."""

PRESTAGED_TABLES = frozenset({"checkpoints"})
"""Tables whose batches are validated and hashed on the staging connection (the wide ones;
effects and tool calls are few and small, and their typed JSON values stay in one place)."""


def strip_credentials(location: str) -> str:
    """A source's location without its password, as the ``sources`` table records it
    (``postgresql://u:secret@h/db`` -> ``postgresql://u:***@h/db``): :func:`redact`."""
    return redact(location)


class ImportSession:
    """Collects batches of one source into the store and keeps the counts.

    Not used directly by people: ``loaders.import_source`` drives it.
    """

    def __init__(
        self, con: duckdb.DuckDBPyConnection, kind: str, flavour: str, location: str
    ) -> None:
        self.con = con
        self.kind = kind
        self.flavour = flavour
        self.location = strip_credentials(location)
        self.counts: dict[str, TableCounts] = {}
        self.reasons: Counter[str] = Counter()
        self._derive_parents = False
        self._started = time.perf_counter()
        self.filtered: dict[str, Any] | None = None
        """What the import was limited to (``--run``/``--since``), for the report."""
        self._open = False
        self._uncommitted_bytes = 0
        self._uncommitted_rows = 0
        """Checkpoint rows inserted by the open transaction."""
        self._stager: duckdb.DuckDBPyConnection | None = None
        self.whole_validated = False
        """In :meth:`add_whole`: the table is validated, its insert runs."""
        self._owns_hash = False
        self._owns_depth = False
        row = con.execute("SELECT coalesce(max(ckpt_key), 0) FROM checkpoint_rows").fetchone()
        self._next_pos = (int(row[0]) if row else 0) + 1
        row = con.execute("SELECT nextval('source_seq')").fetchone()
        assert row is not None
        self.source_id = int(row[0])
        # _touched: runs whose rows the open transaction changed (derived before it commits);
        # _derived: those of the transactions committed since, which finish() reports (and
        # chains, for a source without parents)
        con.execute("CREATE OR REPLACE TEMP TABLE _touched (run_id VARCHAR)")
        con.execute("CREATE OR REPLACE TEMP TABLE _derived (run_id VARCHAR)")
        # Batches commit together (COMMIT_BYTES). DuckDB's buffer pool may grow to 80% of
        # RAM and keeps written blocks cached, so a large import would hold about twice its
        # source in memory. A large import's pool and write buffers are capped instead
        # (LARGE_IMPORT_SETTINGS: written blocks are evicted, temp data spills to disk);
        # every setting changed is restored after it.
        self._settings: dict[str, str] = {}
        self._change(IMPORT_SETTINGS)
        with contextlib.suppress(duckdb.Error):  # a DuckDB older than the setting
            self._change(NO_VACUUM)
        self._read_bytes = 0
        for table in TABLE_COLUMNS:
            con.execute(f"DROP TABLE IF EXISTS _occ_{table}")
        self._staging_connection()  # now, before any transaction: see its docstring

    def add(
        self,
        table: str,
        raw: pa.RecordBatch | pa.Table,
        select_sql: str,
        derive_parents: bool = False,
    ) -> TableCounts:
        """Ingest one batch; batches commit together, about a row group at a time.

        Args:
            table: canonical table: checkpoints, effects or tool_calls.
            raw: the source rows; must carry a ``_key`` column (unique in the source table).
            select_sql: a SELECT over ``_raw`` giving the canonical columns of ``table``
                plus ``_key``, ``_pos`` and ``_reason`` (and optionally ``_raw_text``, and
                for checkpoints ``_state_hash``: see ``debugger.contract.GIVEN_STATE_HASH``).
                ``_pos``, each row's place in the import, is added to ``raw`` here.
            derive_parents: the source has no parent column; chain checkpoints in order.

        Returns:
            This batch's counts.

        Raises:
            duckdb.Error: the store failed; the uncommitted batches are rolled back.
        """
        return self.add_staged(self.stage(table, raw, select_sql), derive_parents)

    def staged(
        self, table: str, batches: Iterable[pa.RecordBatch | pa.Table], select_sql: str
    ) -> Iterator[StagedBatch]:
        """:meth:`stage` each batch in turn (run it on a thread: see ``loaders.prefetch``)."""
        for raw in batches:
            yield self.stage(table, raw, select_sql)

    def stage(self, table: str, raw: pa.RecordBatch | pa.Table, select_sql: str) -> StagedBatch:
        """Give a batch its places in the import and, for checkpoints, validate and hash it.

        The validation pass (:func:`debugger.store.stage.stage_sql`) needs nothing from the
        store's tables, so it runs on a connection of its own (a cursor, see
        :meth:`_staging_connection`): an import calls this on a thread for the next batch
        while the store's connection inserts the current one, whose write runs mostly on one
        core, so the two overlap. Batches must be staged in the order they are added.
        """
        raw, undecodable = split_undecodable(raw)
        n = raw.num_rows
        pos = arrays.int64_range(self._next_pos, n)
        self._next_pos += n
        rows_at = sliced(raw, pos)
        if table not in PRESTAGED_TABLES or n == 0:
            return StagedBatch(table, rows_at, select_sql, None, undecodable)
        con = self._staging_connection()
        con.register("_raw", rows_at)
        try:
            con.execute(f"CREATE OR REPLACE TEMP VIEW _staged AS {select_sql}")
            types = staged_types(con)
            rows = con.sql(f"{stage_sql(table, types)} ORDER BY _pos").to_arrow_table()
        finally:
            con.unregister("_raw")
        return StagedBatch(table, rows_at, select_sql, Prestaged(rows, types), undecodable)

    def _staging_connection(self) -> duckdb.DuckDBPyConnection:
        """The connection :meth:`stage` runs on: a cursor of the store's database.

        A database of its own is slow to create and holds the GIL meanwhile, so it cannot
        overlap with the reader, on the way of every import's first batch. A cursor has
        its own temporary views and settings and shares the database's threads; it only
        reads the batches registered on it. The hash function it lends SQL belongs to the
        whole database: it is registered here, when the session starts, because a function
        registered while the import's transaction is open on the store's connection aborts
        that transaction. ``restore_settings`` removes it and closes the cursor.
        """
        if self._stager is None:
            stager = self.con.cursor()
            no_progress_bar(stager)
            # the store's session time zone, so timestamps are read the same way
            stager.execute("SET TimeZone = 'UTC'")
            self._owns_hash = state_hash.register_once(stager)
            self._owns_depth = json_depth.register_once(stager)
            self._stager = stager
        return self._stager

    def add_staged(self, batch: StagedBatch, derive_parents: bool = False) -> TableCounts:
        """Ingest a batch from :meth:`stage`; see :meth:`add`."""
        con = self.con
        table = batch.table
        self._derive_parents |= derive_parents
        if self._open and self._whole_groups() and batch.raw.num_rows < ROW_GROUP_SIZE:
            self.commit()  # see COMMIT_BYTES
        if not self._open:
            con.execute("BEGIN")
            self._open = True
        try:
            results = []
            if batch.undecodable is not None:
                results.append(
                    quarantine_undecodable(
                        con, self.source_id, self.location, table, batch.undecodable
                    )
                )
            if batch.raw.num_rows:
                results.append(self._ingest(batch))
        except Exception:
            self.rollback()
            raise
        self._uncommitted_bytes += batch.raw.nbytes
        before_bytes, self._read_bytes = self._read_bytes, self._read_bytes + batch.raw.nbytes
        if before_bytes < LARGE_IMPORT_BYTES <= self._read_bytes:
            self._change(LARGE_IMPORT_SETTINGS)
        if table == "checkpoints":
            self._uncommitted_rows += sum(r.counts.imported for r in results)
        # a batch shorter than a group: the reader cuts wide rows into several (or it is
        # the last); waiting for the next one to commit before it would hold one more
        ready = self._uncommitted_bytes >= COMMIT_BYTES or batch.raw.num_rows < ROW_GROUP_SIZE
        if (ready and self._whole_groups()) or self._uncommitted_bytes >= 2 * COMMIT_BYTES:
            self.commit()
        c = TableCounts()
        for result in results:
            c = plus(c, result.counts)
            self.reasons.update(result.reasons)
        self.counts[table] = plus(self.counts.get(table, TableCounts()), c)
        return c

    def add_whole(
        self,
        table: str,
        sql: str,
        size: tuple[int, int],
        select_sql: str,
        derive_parents: bool = False,
        progress: bool = False,
    ) -> TableCounts:
        """Ingest a whole source table that DuckDB reads itself, in one transaction.

        ``sql`` is a SELECT of the source rows with ``_key`` and ``_idx`` (each row's
        0-based place in the table), ``size`` their number and bytes; it becomes ``_raw`` (with
        ``_pos``), and the statements a batch gets (:func:`~debugger.store.ingest.ingest_batch`:
        validation and hashes, quarantine, dedup, insert) run once over all of it, on
        DuckDB's threads: no batch goes through Python. Committed with what follows it
        (:meth:`_in_one_pass`); on any error nothing of it stays, and the caller reads the
        table batch by batch instead.
        ``progress``: DuckDB tracks each statement's progress, for ``con.query_progress()``
        (:data:`TRACK_PROGRESS`, restored with the other settings); :attr:`whole_validated`
        turns True when the validation is done and the insert begins.

        Raises:
            duckdb.Error: DuckDB could not read or store the rows (rolled back).
            NotInOnePass: some states would be split (rolled back).
        """
        rows, nbytes = size

        def ingest() -> BatchResult:
            con = self.con
            con.execute(
                "CREATE OR REPLACE TEMP VIEW _raw AS SELECT * EXCLUDE (_idx), "
                f"_idx + {self._next_pos} AS _pos FROM ({sql})"
            )
            con.execute(f"CREATE OR REPLACE TEMP VIEW _staged AS {select_sql}")
            self.whole_validated = False
            result = ingest_batch(
                con, table, self.source_id, self.location, whole=True,
                staged=lambda: setattr(self, "whole_validated", True), chain=derive_parents,
            )  # fmt: skip
            con.execute("DROP VIEW IF EXISTS _staged; DROP VIEW IF EXISTS _raw")
            return result

        result = self._in_one_pass(table, nbytes, progress, ingest)
        self._next_pos += rows
        self._derive_parents |= derive_parents and not result.chained
        return result.counts

    def add_gathered(
        self,
        batches: list[StagedBatch],
        derive_parents: bool = False,
        progress: bool = False,
        complete: bool = False,
    ) -> TableCounts:
        """Ingest batches of one table from :meth:`stage`, already validated and hashed, with
        one insert over all of them, in one transaction (see :func:`gatherable`).

        A batch's insert writes on one core; the insert of a table's worth of rows writes
        its row groups on all of DuckDB's threads. Committed with what follows it
        (:meth:`_in_one_pass`); on any error nothing of it stays, and the caller adds the
        batches one by one instead (:meth:`add_staged`).
        ``progress``: as :meth:`add_whole` (the validation is done: :attr:`whole_validated`
        is True from the start). ``complete``: the batches are all of the table's rows (the
        parents a source without them needs are then given as the rows go in).

        Raises:
            duckdb.Error: DuckDB could not store the rows (rolled back).
            NotInOnePass: the batches cannot go in one pass (rolled back, or never begun).
        """
        if not gatherable(batches):
            raise NotInOnePass("batches of different shapes, or not validated ahead")
        first = batches[0]
        table = first.table
        try:
            raw = pa.concat_tables([b.raw for b in batches])
            staged_rows = pa.concat_tables([b.prestaged.rows for b in batches if b.prestaged])
        except pa.ArrowInvalid as e:
            raise NotInOnePass(str(e)) from e
        assert first.prestaged is not None
        prestaged = Prestaged(staged_rows, first.prestaged.types)
        nbytes = sum(b.raw.nbytes for b in batches)

        def ingest() -> BatchResult:
            con = self.con
            results = [
                quarantine_undecodable(con, self.source_id, self.location, table, b.undecodable)
                for b in batches
                if b.undecodable is not None
            ]
            con.register("_raw", raw)
            try:
                con.execute(f"CREATE OR REPLACE TEMP VIEW _staged AS {first.select_sql}")
                self.whole_validated = True
                chain = derive_parents and complete
                results.append(
                    ingest_batch(
                        con, table, self.source_id, self.location, prestaged, True, chain=chain
                    )
                )
                con.execute("DROP VIEW IF EXISTS _staged")
            finally:
                con.unregister("_raw")
            counts = TableCounts()
            reasons: Counter[str] = Counter()
            for result in results:
                counts = plus(counts, result.counts)
                reasons.update(result.reasons)
            return BatchResult(counts, dict(reasons), results[-1].chained)

        result = self._in_one_pass(table, nbytes, progress, ingest)
        self._derive_parents |= derive_parents and not result.chained
        return result.counts

    def _in_one_pass(
        self, table: str, nbytes: int, progress: bool, ingest: Callable[[], BatchResult]
    ) -> BatchResult:
        """Run ``ingest`` (one pass over ``nbytes`` of ``table``) in a transaction of its own
        and count what it did; on any error it is rolled back, with nothing else in it.

        The transaction is left open for what follows: the next pass commits it first;
        batches added after it join it and commit as batches do (:data:`COMMIT_BYTES`; the
        pass's full row groups are not written again: tests/loaders/test_batch_alignment.py);
        :meth:`finish` commits it with the source's record and the import's checkpoint (an
        import in one pass commits once: ~10 ms of a 20,000-row import's 0.3 s); and the
        import's handler of a source that fails later commits it (its rows are kept)."""
        con = self.con
        self.commit()
        large = self._read_bytes + nbytes >= LARGE_IMPORT_BYTES
        if self._read_bytes < LARGE_IMPORT_BYTES <= self._read_bytes + nbytes:
            self._change(LARGE_IMPORT_SETTINGS)
        if progress:
            with contextlib.suppress(duckdb.Error):  # under Jupyter DuckDB may refuse it
                self._change(TRACK_PROGRESS)
        if large:
            con.execute(f"SET memory_limit = '{PASS_MEMORY_LIMIT}'")
        try:
            con.execute("BEGIN")
            self._open = True
            try:
                result = ingest()
            except BaseException:
                self.rollback()
                raise
        finally:
            if large:
                con.execute(f"SET memory_limit = '{LARGE_IMPORT_SETTINGS['memory_limit']}'")
        self._read_bytes += nbytes
        self.reasons.update(result.reasons)
        self.counts[table] = plus(self.counts.get(table, TableCounts()), result.counts)
        return result

    def _whole_groups(self) -> bool:
        """True when the open transaction has inserted checkpoint rows that fill whole row
        groups (its own rows, not the table's: DuckDB lays a commit of a full group or more
        after the table's last group, whether that one is full or not)."""
        return self._uncommitted_rows > 0 and self._uncommitted_rows % ROW_GROUP_SIZE == 0

    def _ingest(self, batch: StagedBatch) -> BatchResult:
        con = self.con
        con.register("_raw", batch.raw)
        try:
            # a view, not a copy: validation reads the batch once, straight from _raw
            con.execute(f"CREATE OR REPLACE TEMP VIEW _staged AS {batch.select_sql}")
            return ingest_batch(con, batch.table, self.source_id, self.location, batch.prestaged)
        finally:
            con.unregister("_raw")

    def commit(self) -> None:
        """Derive the runs of the batches ingested since the last commit, and commit them
        together (a source that fails part-way keeps the rows read before the failure).

        In one transaction: a process killed between two commits leaves every run it
        committed rows of derived from exactly those rows, never a stale ``runs``.
        """
        if self._open:
            self._open = False
            self._uncommitted_bytes = self._uncommitted_rows = 0
            con = self.con
            try:
                derive_runs(con)
                con.execute("INSERT INTO _derived SELECT DISTINCT run_id FROM _touched")
                con.execute("DELETE FROM _touched")
            except Exception:
                con.execute("ROLLBACK")
                raise
            con.execute("COMMIT")

    def rollback(self) -> None:
        """Drop the uncommitted batches (the store failed while ingesting one)."""
        if self._open:
            self._open = False
            self._uncommitted_bytes = self._uncommitted_rows = 0
            self.con.execute("ROLLBACK")

    def finish(self) -> ImportReport:
        """Derive parents and runs, record the source, and return the report."""
        con = self.con
        if not self._open:
            con.execute("BEGIN")
        self._open = False
        try:
            if self._derive_parents:
                derive_parents(con, self.source_id)
            derive_runs(con)
            row = con.execute(f"SELECT count(*) FROM {ALL_TOUCHED}").fetchone()
            runs = int(row[0]) if row else 0
            report = ImportReport(
                source_id=self.source_id,
                kind=self.kind,
                flavour=self.flavour,
                location=self.location,
                tables=dict(self.counts),
                quarantine_reasons=dict(self.reasons.most_common()),
                runs_touched=runs,
                seconds=time.perf_counter() - self._started,
                filtered=self.filtered,
            )
            t = report.total
            con.execute(
                "INSERT INTO sources VALUES (?, ?, ?, ?, now()::TIMESTAMP, ?, ?, ?, ?, ?)",
                [self.source_id, self.kind, self.flavour, self.location, t.read, t.imported,
                 t.already_present, t.quarantined, orjson.dumps(report.to_dict()).decode()],
            )  # fmt: skip
            # Checkpoint as part of this commit: what the last commit holds (rows short of a
            # full row group, parents, runs) then goes to the file once, not to the WAL and
            # again to the file at the checkpoint below. restore_settings puts the threshold
            # back.
            con.execute("SET checkpoint_threshold = '0MB'")
            con.execute("COMMIT")
        except Exception:
            con.execute("ROLLBACK")
            raise
        self._checkpoint()
        return report

    def _change(self, settings: dict[str, str]) -> None:
        """Set ``settings``, keeping each one's previous value for :meth:`restore_settings`.

        All are read before any is set: some defaults follow others (setting the memory
        limit changes what ``write_buffer_row_group_memory_limit`` reads).
        """
        for name in settings:
            if name not in self._settings:
                row = self.con.execute(f"SELECT current_setting('{name}')").fetchall()
                self._settings[name] = str(row[0][0])
        for name, value in settings.items():
            self.con.execute(f"SET {name} = '{value}'")

    def restore_settings(self) -> None:
        """Put back the settings the import changed and close the staging connection
        (idempotent; also run when it fails)."""
        settings, self._settings = self._settings, {}
        if self._stager is not None:
            for owned, name in ((self._owns_hash, state_hash.SQL_NAME),
                                (self._owns_depth, json_depth.SQL_NAME)):  # fmt: skip
                if owned:
                    with contextlib.suppress(duckdb.Error):
                        self._stager.remove_function(name)
            self._stager.close()
            self._stager = None
        for name, value in settings.items():
            # current_setting() gives a rounded text ("18.8 GiB"): RESET restores the default
            # exactly, and a value the user had set is put back only if it differs from that
            self.con.execute(f"RESET {name}")
            now = self.con.execute(f"SELECT current_setting('{name}')").fetchone()
            if now is None or str(now[0]) != value:
                self.con.execute(f"SET {name} = '{value}'")

    def _checkpoint(self) -> None:
        """Write the imported rows into the file now, then restore the settings.

        In that order: the checkpoint rewrites the row groups whose parents were filled in,
        and under DuckDB's default memory limit it would hold them all in memory.
        """
        try:
            # if another transaction is open on this database, it happens on close instead
            with contextlib.suppress(duckdb.Error):
                self.con.execute("CHECKPOINT")
        finally:
            self.restore_settings()
