"""Turning DB-API rows into Arrow batches, tolerant of SQLite's per-value types.

SQLite lets one column hold integers in one row and text in the next. Arrow does not, so a
column whose values do not share a type is delivered as text: validation in the store then
quarantines the rows whose text is not what the column should hold, instead of the whole
batch failing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa


def _as_text(values: Sequence[Any]) -> pa.Array:
    out: list[str | None] = []
    for v in values:
        if v is None:
            out.append(None)
        elif isinstance(v, bytes | bytearray | memoryview):
            out.append(bytes(v).decode("utf-8", errors="replace"))
        else:
            out.append(str(v))
    return pa.array(out, type=pa.string())


def column_array(values: Sequence[Any], declared: pa.DataType | None = None) -> pa.Array:
    """An Arrow array for one column's values; mixed types fall back to text."""
    try:
        arr = pa.array(values, type=declared) if declared is not None else pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError):
        return _as_text(values)
    if pa.types.is_null(arr.type):
        return pa.array(values, type=pa.string())
    if declared is None and pa.types.is_floating(arr.type) and _has_int(values):
        # one REAL among INTEGERs would turn 3 into 3.0 and get every row of the batch
        # rejected as "not an integer"; as text, only the row holding 12.5 is
        return _as_text(values)
    return arr


def _has_int(values: Sequence[Any]) -> bool:
    return any(type(v) is int for v in values)


def rows_to_batch(
    rows: Sequence[Sequence[Any]], names: Sequence[str], keys: Sequence[int]
) -> pa.RecordBatch:
    """Build a record batch from rows, with ``_key`` first."""
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in names]
    arrays = [pa.array(keys, type=pa.int64())]
    arrays += [column_array(col) for col in columns]
    return pa.RecordBatch.from_arrays(arrays, names=["_key", *names])
