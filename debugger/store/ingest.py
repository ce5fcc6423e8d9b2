"""Writing imported rows into the store: validate, deduplicate, insert, a batch at a time.

A flavour hands over a *staged* relation: the canonical columns of one table (any SQL type;
values are validated here, not trusted), plus ``_key`` (how to find the row in the source) and
optionally ``_reason`` (a reason the flavour already found, such as an undecodable value) and
``_raw_text`` (the raw row for the quarantine). Validation is plain SQL over the whole batch,
so it runs vectorised in DuckDB instead of row by row in Python. The caller's transaction
spans several batches (``debugger.store.session.COMMIT_BYTES``).

Every row read ends in exactly one of: imported, updated (same identity already in the store,
content changed: :mod:`debugger.store.refresh`), already present (same identity and content
already in the store, or twice in the source), quarantined (with its reason). The counts are
returned so the report can show ``read = imported + updated + already present + quarantined``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import duckdb
import pyarrow as pa

from debugger.contract import UNDECODABLE
from debugger.model import TableCounts
from debugger.store.insert import (
    batch_facts,
    drop_batch_tables,
    insert_checkpoints,
    insert_other,
    typed_with_ids,
)
from debugger.store.stage import Prestaged, stage_batch
from debugger.store.state_parts import SPLIT_MIN_BYTES

RAW_LIMIT = 4096
"""Raw rows kept in quarantine are cut to this many characters."""


class NotInOnePass(Exception):
    """A whole table's pass (:meth:`ImportSession.add_whole`) met states that are split:
    their cutting reads them all at once, which only a batch bounds."""


@dataclass
class BatchResult:
    """Counts of one batch, plus the reasons its quarantined rows were rejected."""

    counts: TableCounts
    reasons: dict[str, int]
    chained: bool = False
    """The checkpoints' parents were given as they went in (``chain`` of
    :func:`ingest_batch`): none is left for :func:`~debugger.store.insert.derive_parents`."""


def _quarantine(con: duckdb.DuckDBPyConnection, source_id: int, location: str, table: str) -> None:
    """Record the rows of ``_v`` that failed a check, with their reason and raw text."""
    # Re-importing a source must not pile up the same rejections: one record per
    # (location, table, key, reason).
    staged = {d[0] for d in con.execute("SELECT * FROM _staged LIMIT 0").description}
    raw = "coalesce(r._raw_text, CAST(to_json(r) AS VARCHAR))"
    if "_raw_text" not in staged:
        raw = "CAST(to_json(r) AS VARCHAR)"
    con.execute(
        f"""
        INSERT INTO quarantine
        SELECT ?, ?, ?, CAST(k._key AS VARCHAR), k._why,
               left({raw}, {RAW_LIMIT}),
               now()::TIMESTAMP
        FROM _v k LEFT JOIN (SELECT * EXCLUDE (_pos) FROM _raw) r ON r._key = k._key
        WHERE k._why IS NOT NULL AND NOT EXISTS (
            SELECT 1 FROM quarantine q WHERE q.source = ? AND q.source_table = ?
              AND q.source_key = CAST(k._key AS VARCHAR) AND q.reason = k._why)""",
        [source_id, location, table, location, table],
    )


def ingest_batch(
    con: duckdb.DuckDBPyConnection,
    table: str,
    source_id: int,
    location: str,
    prestaged: Prestaged | None = None,
    whole: bool = False,
    staged: Callable[[], None] | None = None,
    chain: bool = False,
) -> BatchResult:
    """Validate and insert the rows of ``_staged`` (and ``_raw``) into ``table``.

    The caller has registered ``_raw`` (the source batch, with ``_pos``: each row's place in
    the import) and created ``_staged`` (its canonical projection); this runs in the
    caller's transaction. ``prestaged`` is the batch's ``_v`` when it was computed on
    another connection (the same rows :func:`stage_sql` gives here); without it, the
    database must have ``state_hash()`` (the import session registers it). ``whole``: the
    batch is a whole source table, whose split states are not cut here; ``staged`` is
    called once it is validated (the insert follows: a progress report's cue). ``chain``:
    the batch is all of a source's checkpoints and the source gives no parents
    (:func:`~debugger.store.insert.insert_checkpoints`).

    Returns:
        The batch's counts and its quarantine reasons.

    Raises:
        NotInOnePass: ``whole``, and some of the new states would be split.
    """
    read, bad, types = stage_batch(con, table, prestaged)
    facts = batch_facts(con) if table == "checkpoints" else None
    if whole and facts and facts.to_split:
        raise NotInOnePass(f"{facts.to_split} states of {SPLIT_MIN_BYTES} bytes or more")
    if staged is not None:
        staged()
    found: dict[str, int] = {}
    if bad:
        _quarantine(con, source_id, location, table)
        found = {
            str(k): int(v)
            for k, v in con.execute(
                "SELECT _why, count(*) FROM _v WHERE _why IS NOT NULL GROUP BY _why"
            ).fetchall()
        }
    valid = read - bad
    chained = False
    if table == "checkpoints":
        imported, updated, chained = insert_checkpoints(con, source_id, types, chain, facts)
    else:
        imported, updated = insert_other(con, table, source_id, typed_with_ids(con, table))
    drop_batch_tables(con)
    counts = TableCounts(
        read=read,
        imported=imported,
        already_present=valid - imported - updated,
        quarantined=bad,
        updated=updated,
    )
    return BatchResult(counts=counts, reasons=found, chained=chained)


def quarantine_undecodable(
    con: duckdb.DuckDBPyConnection, source_id: int, location: str, table: str, rows: pa.Table
) -> BatchResult:
    """Quarantine source rows a reader could not read (their reason in ``UNDECODABLE``).

    They never reach a flavour's projection: a value that is not what its column holds
    (text that is not UTF-8) would be read there as something else. In the caller's
    transaction; a re-import adds no second record of the same row and reason.
    """
    con.register("_undecodable_rows", rows)
    try:
        con.execute(
            f"""
            INSERT INTO quarantine
            SELECT ?, ?, ?, CAST(_key AS VARCHAR), {UNDECODABLE},
                   left(CAST(to_json(r) AS VARCHAR), {RAW_LIMIT}), now()::TIMESTAMP
            FROM (SELECT * EXCLUDE ({UNDECODABLE}), {UNDECODABLE} FROM _undecodable_rows) r
            WHERE NOT EXISTS (
                SELECT 1 FROM quarantine q WHERE q.source = ? AND q.source_table = ?
                  AND q.source_key = CAST(r._key AS VARCHAR) AND q.reason = r.{UNDECODABLE})""",
            [source_id, location, table, location, table],
        )
        found = con.execute(
            f"SELECT {UNDECODABLE}, count(*) FROM _undecodable_rows GROUP BY ALL"
        ).fetchall()
    finally:
        con.unregister("_undecodable_rows")
    n = rows.num_rows
    counts = TableCounts(read=n, imported=0, already_present=0, quarantined=n, updated=0)
    return BatchResult(counts=counts, reasons={str(k): int(v) for k, v in found})
