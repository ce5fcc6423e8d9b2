"""A source batch on its way into the store: positioned, sliced for DuckDB, counted."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa

from debugger.contract import UNDECODABLE
from debugger.model import TableCounts
from debugger.store import arrays
from debugger.store.stage import Prestaged
from debugger.store.state_parts import SPLIT_MIN_BYTES

SCAN_SLICE_ROWS = 2048
"""Rows per slice of a batch handed to DuckDB (one vector; slices are scanned in parallel)."""
SCAN_SLICE_BYTES = 2 * 1024 * 1024
"""...and at most about this much, so that a batch of wide rows is hashed on every thread
too (a row count alone makes a batch of large states one slice)."""


def sliced(raw: pa.RecordBatch | pa.Table, pos: pa.Array) -> pa.Table:
    """``raw`` with ``_pos`` added, as a table of small zero-copy slices.

    DuckDB scans a registered table's batches in parallel, but one record batch on one
    thread: a whole batch would be validated and hashed on one core.
    """
    n = raw.num_rows
    parts = [raw] if isinstance(raw, pa.RecordBatch) else raw.to_batches()
    step = max(64, min(SCAN_SLICE_ROWS, SCAN_SLICE_BYTES // max(1, raw.nbytes // max(1, n))))
    schema = pa.schema([*raw.schema, pa.field("_pos", pa.int64())])
    slices, at = [], 0
    for part in parts:
        for start in range(0, part.num_rows, step):
            piece = part.slice(start, step)
            cols = [*piece.columns, pos.slice(at, piece.num_rows)]
            slices.append(pa.RecordBatch.from_arrays(cols, schema=schema))
            at += piece.num_rows
    return pa.Table.from_batches(slices, schema=schema)


@dataclass(frozen=True)
class StagedBatch:
    """A batch ready for :meth:`ImportSession.add_staged`: positioned, sliced, maybe staged."""

    table: str
    raw: pa.Table
    """The source rows with ``_pos``, in slices DuckDB scans in parallel."""
    select_sql: str
    prestaged: Prestaged | None
    """Its validated, hashed rows, when computed off the store's connection."""
    undecodable: pa.Table | None = None
    """Rows the reader could not read (``UNDECODABLE``), quarantined without staging."""


def split_undecodable(
    raw: pa.RecordBatch | pa.Table,
) -> tuple[pa.RecordBatch | pa.Table, pa.Table | None]:
    """``raw`` without the rows its reader marked ``UNDECODABLE``, and those rows."""
    if UNDECODABLE not in raw.schema.names:
        return raw, None
    import pyarrow.compute as pc  # slow to import, and only a source with such rows needs it

    marked = pc.is_valid(raw.column(UNDECODABLE))
    bad = pa.Table.from_batches([raw]) if isinstance(raw, pa.RecordBatch) else raw
    rest = raw.filter(pc.invert(marked)).drop_columns([UNDECODABLE])
    return rest, bad.filter(marked)


def plus(a: TableCounts, b: TableCounts) -> TableCounts:
    return replace(
        a,
        read=a.read + b.read,
        imported=a.imported + b.imported,
        already_present=a.already_present + b.already_present,
        quarantined=a.quarantined + b.quarantined,
        updated=a.updated + b.updated,
    )


def gatherable(batches: list[StagedBatch]) -> bool:
    """True when ``batches`` can go into the store with one insert
    (:meth:`~debugger.store.session.ImportSession.add_gathered`): each one :func:`joins`
    the first."""
    return bool(batches) and all(joins(batches[0], b) for b in batches)


def joins(first: StagedBatch, batch: StagedBatch) -> bool:
    """True when ``batch`` can be inserted with ``first`` in one statement: the same
    table's, validated and hashed ahead with the same column types, of the same shape, and
    without a state to split (states are cut a batch at a time:
    ``debugger.store.state_write``)."""
    return (
        batch.prestaged is not None
        and first.prestaged is not None
        and batch.table == first.table
        and batch.select_sql == first.select_sql
        and batch.raw.schema.equals(first.raw.schema)
        and batch.prestaged.types == first.prestaged.types
        and not splits(batch.prestaged)
    )


def splits(prestaged: Prestaged) -> bool:
    """True when some state of a validated batch is one to cut into parts."""
    rows = prestaged.rows
    if "state_bytes" not in rows.schema.names or not rows.num_rows:
        return False
    for chunk in rows.column("state_bytes").chunks:
        if len(chunk) == chunk.null_count:
            continue
        # from the buffer: to_numpy() of a column with NULLs would import pandas
        at = chunk.offset
        sizes = np.frombuffer(chunk.buffers()[1], np.int64)[at : at + len(chunk)]
        valid = arrays.validity(chunk)
        if (sizes[valid] if valid is not None else sizes).max(initial=0) >= SPLIT_MIN_BYTES:
            return True
    return False
