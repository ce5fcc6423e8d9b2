"""An import session: one ``sources`` row, batches ingested one transaction each, runs derived."""

from __future__ import annotations

import contextlib
import re
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace

import duckdb
import orjson
import pyarrow as pa

from debugger.model import ImportReport, TableCounts
from debugger.store.derive import derive_runs
from debugger.store.ingest import TABLE_COLUMNS, derive_parents, ingest_batch

IMPORT_CHECKPOINT_THRESHOLD = "256MB"
"""WAL size that triggers a checkpoint during an import (DuckDB's default is 16 MB)."""
IMPORT_MEMORY_LIMIT = "512MB"
"""DuckDB's buffer pool during an import (batches are bounded; the rest is cache)."""

Progress = Callable[[str, int], None]
"""Called after each batch with (table, rows read so far in that table)."""

_CREDENTIALS = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*://)(?P<user>[^:@/]*)(:[^@/]*)?@", re.I)


def strip_credentials(location: str) -> str:
    """Remove a password from a URL (``postgresql://u:secret@h/db`` -> ``postgresql://u@h/db``)."""
    location = _CREDENTIALS.sub(lambda m: f"{m['scheme']}{m['user']}@", location)
    # key=value conninfo may quote the value: password='a b\'c'
    return re.sub(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|[^&\s]*)", r"\1***", location, flags=re.I)


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
        row = con.execute("SELECT nextval('source_seq')").fetchone()
        assert row is not None
        self.source_id = int(row[0])
        con.execute("CREATE OR REPLACE TEMP TABLE _touched (run_id VARCHAR)")
        # Each batch commits on its own, but checkpointing the file after every commit (the
        # WAL passes DuckDB's 16 MB default each batch) rewrote the table's last, partly
        # filled row group and the index again and again: half the import's time. The
        # commits stay durable in the WAL; the file is checkpointed every few batches and
        # once at the end (finish).
        # DuckDB's buffer pool may grow to 80% of RAM and keeps written blocks cached: an
        # import of a 1 GB source peaked at 2 GB of RSS. The import's pool is capped instead
        # (written blocks are evicted, temp data spills to disk); both settings are restored.
        self._settings = {
            name: str(row[0])
            for name in ("checkpoint_threshold", "memory_limit")
            if (row := con.execute(f"SELECT current_setting('{name}')").fetchone())
        }
        con.execute(f"SET checkpoint_threshold = '{IMPORT_CHECKPOINT_THRESHOLD}'")
        con.execute(f"SET memory_limit = '{IMPORT_MEMORY_LIMIT}'")
        for table in TABLE_COLUMNS:
            con.execute(f"DROP TABLE IF EXISTS _occ_{table}")

    def add(
        self,
        table: str,
        raw: pa.RecordBatch | pa.Table,
        select_sql: str,
        derive_parents: bool = False,
    ) -> TableCounts:
        """Ingest one batch in one transaction.

        Args:
            table: canonical table: checkpoints, effects or tool_calls.
            raw: the source rows; must carry a ``_key`` column (unique in the source table).
            select_sql: a SELECT over ``_raw`` giving the canonical columns of ``table``
                plus ``_key`` and ``_reason`` (and optionally ``_raw_text``).
            derive_parents: the source has no parent column; chain checkpoints in order.

        Returns:
            This batch's counts.
        """
        con = self.con
        self._derive_parents |= derive_parents
        con.execute("BEGIN")
        try:
            con.register("_raw", raw)
            # a view, not a copy: validation reads the batch once, straight from _raw
            con.execute(f"CREATE OR REPLACE TEMP VIEW _staged AS {select_sql}")
            result = ingest_batch(con, table, self.source_id, self.location)
            con.execute("COMMIT")
        except Exception:
            con.execute("ROLLBACK")
            raise
        finally:
            con.unregister("_raw")
        before = self.counts.get(table, TableCounts())
        c = result.counts
        self.counts[table] = replace(
            before,
            read=before.read + c.read,
            imported=before.imported + c.imported,
            already_present=before.already_present + c.already_present,
            quarantined=before.quarantined + c.quarantined,
        )
        self.reasons.update(result.reasons)
        return c

    def finish(self) -> ImportReport:
        """Derive parents and runs, record the source, and return the report."""
        con = self.con
        con.execute("BEGIN")
        try:
            if self._derive_parents:
                derive_parents(con, self.source_id)
            runs = derive_runs(con)
            report = ImportReport(
                source_id=self.source_id,
                kind=self.kind,
                flavour=self.flavour,
                location=self.location,
                tables=dict(self.counts),
                quarantine_reasons=dict(self.reasons.most_common()),
                runs_touched=runs,
                seconds=time.perf_counter() - self._started,
            )
            t = report.total
            con.execute(
                "INSERT INTO sources VALUES (?, ?, ?, ?, now()::TIMESTAMP, ?, ?, ?, ?, ?)",
                [self.source_id, self.kind, self.flavour, self.location, t.read, t.imported,
                 t.already_present, t.quarantined, orjson.dumps(report.to_dict()).decode()],
            )  # fmt: skip
            con.execute("COMMIT")
        except Exception:
            con.execute("ROLLBACK")
            raise
        self._checkpoint()
        return report

    def restore_settings(self) -> None:
        """Put back the settings the import changed (idempotent; also run when it fails)."""
        settings, self._settings = self._settings, {}
        for name, value in settings.items():
            # current_setting() gives a rounded text ("18.8 GiB"): RESET restores the default
            # exactly, and a value the user had set is put back only if it differs from that
            self.con.execute(f"RESET {name}")
            now = self.con.execute(f"SELECT current_setting('{name}')").fetchone()
            if now is None or str(now[0]) != value:
                self.con.execute(f"SET {name} = '{value}'")

    def _checkpoint(self) -> None:
        """Restore the settings the import changed and write the imported rows into the file now."""
        self.restore_settings()
        # if another transaction is open on this database, it happens on close instead
        with contextlib.suppress(duckdb.Error):
            self.con.execute("CHECKPOINT")
