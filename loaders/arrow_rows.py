"""Turning DB-API rows into Arrow batches, tolerant of SQLite's per-value types.

SQLite lets one column hold integers in one row and text in the next. Arrow does not, so a
column whose values do not share a type is delivered as text: validation in the store then
quarantines the rows whose text is not what the column should hold, instead of the whole
batch failing.

Text and bytes follow the column's declared type, value by value: a BLOB in a TEXT column
is read as the UTF-8 text it holds (JSON written as bytes is JSON), text in a BLOB column as
its bytes. A value that cannot be read so (bytes that are not UTF-8) marks its row alone in
``UNDECODABLE``, and the import quarantines that row with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from debugger.contract import UNDECODABLE


class Undecodable(bytes):
    """The bytes of a TEXT value that are not UTF-8 (see :func:`sqlite_text`)."""


def sqlite_text(raw: bytes) -> str | Undecodable:
    """The SQLite reader's text factory: the text, or its bytes marked undecodable.

    The standard library's own factory raises on the first such value, which would end the
    whole import where one row is wrong.
    """
    try:
        return raw.decode()
    except UnicodeDecodeError:
        return Undecodable(raw)


def _is_textual(t: pa.DataType) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t))


def _is_bytes(t: pa.DataType) -> bool:
    return bool(pa.types.is_binary(t) or pa.types.is_large_binary(t))


def _shown(v: bytes | bytearray | memoryview) -> str:
    return bytes(v).decode("utf-8", errors="backslashreplace")


def as_declared(
    values: Sequence[Any], name: str, want: pa.DataType | None, why: list[str | None]
) -> Sequence[Any]:
    """``values`` with text and bytes as the column's declared type ``want``.

    For a text column, bytes are decoded as UTF-8; for a bytes column, text is encoded.
    A value that is neither (undecodable text anywhere, bytes that are not UTF-8 in a text
    column) is shown with escapes, and its row gets a reason in ``why`` (the first wins).
    """
    if want is not None and _is_bytes(want):
        if all(v is None or type(v) is bytes for v in values):
            return values
    elif not any(isinstance(v, bytes | bytearray | memoryview) for v in values):
        return values
    out = list(values)
    for i, v in enumerate(values):
        if isinstance(v, Undecodable):
            out[i] = _shown(v)
            why[i] = why[i] or f"{name} is text that is not UTF-8: {_shown(v)[:40]}"
        elif isinstance(v, bytes | bytearray | memoryview) and want is not None:
            if _is_textual(want):
                try:
                    out[i] = bytes(v).decode()
                except UnicodeDecodeError:
                    out[i] = _shown(v)
                    why[i] = why[i] or f"{name} holds bytes that are not UTF-8 text"
        elif v is not None and want is not None and _is_bytes(want):
            # a number in a BLOB column: its text, as SQLite's own CAST(x AS BLOB) gives it
            out[i] = (v if isinstance(v, str) else _number_text(v)).encode()
    return out


def _number_text(v: Any) -> str:
    return repr(v) if isinstance(v, float) else str(v)


def conform(batch: pa.RecordBatch, declared: Mapping[str, pa.DataType]) -> pa.RecordBatch:
    """A batch read in Arrow (ADBC) with its text and bytes columns as ``declared``.

    The driver types a column from the values it meets, and leaves text that is not
    UTF-8 in a string column unchecked; each such column is checked (cheap: a pass over
    its bytes in C) and only a column that fails is rebuilt value by value.
    """
    arrays = list(batch.columns)
    why: list[str | None] = [None] * batch.num_rows
    for i, field in enumerate(batch.schema):
        want = declared.get(field.name)
        arr = arrays[i]
        # text in any column but a BLOB one (an INTEGER column holding text is text too)
        checked = _is_textual(arr.type) and (want is None or not _is_bytes(want))
        if checked or (want is not None and _is_textual(want) and _is_bytes(arr.type)):
            try:
                arrays[i] = arr.cast(pa.string()) if _is_bytes(arr.type) else _valid(arr)
                continue
            except pa.ArrowInvalid:
                raw = arr.view(pa.binary()) if _is_textual(arr.type) else arr
                values = [None if v is None else sqlite_text(v) for v in raw.to_pylist()]
                text = pa.string()
                arrays[i] = pa.array(as_declared(values, field.name, text, why), text)
        elif want is not None and _is_bytes(want) and not _is_bytes(arr.type):
            # text, or numbers (a BLOB column whose first values were numbers): as text
            arrays[i] = (arr if _is_textual(arr.type) else arr.cast(pa.string())).cast(pa.binary())
    names = list(batch.schema.names)
    if any(w is not None for w in why):
        arrays.append(pa.array(why, pa.string()))
        names.append(UNDECODABLE)
    return pa.RecordBatch.from_arrays(arrays, names=names)


def _valid(arr: pa.Array) -> pa.Array:
    arr.validate(full=True)  # raises ArrowInvalid on text that is not UTF-8
    return arr


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
    rows: Sequence[Sequence[Any]],
    names: Sequence[str],
    keys: Sequence[int],
    declared: Mapping[str, pa.DataType] | None = None,
) -> pa.RecordBatch:
    """Build a record batch from rows, with ``_key`` first.

    With ``declared`` (column name to Arrow type), text and bytes follow the declared type
    (:func:`as_declared`) and rows holding a value that cannot be read get ``UNDECODABLE``.
    """
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in names]
    why: list[str | None] = [None] * len(rows)
    arrays = [pa.array(keys, type=pa.int64())]
    for name, col in zip(names, columns, strict=True):
        values = as_declared(col, name, (declared or {}).get(name), why)
        arrays.append(column_array(values))
    out = ["_key", *names]
    if any(w is not None for w in why):
        arrays.append(pa.array(why, pa.string()))
        out.append(UNDECODABLE)
    return pa.RecordBatch.from_arrays(arrays, names=out)
