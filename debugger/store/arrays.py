"""Arrow arrays built from their buffers, for the import's path.

``pyarrow.array()`` (and ``pa.scalar``, ``Table.from_pydict``, ``Array.to_numpy``) asks
whether its argument is a pandas object, and that question imports pandas: about 0.3 s of
CPU, holding the GIL, before a small import's first batch can be read. Nothing else on
the import's path needs pandas (DuckDB's Arrow scans and functions do not), so the arrays
the import makes itself (row positions, keys, hashes, flags) are assembled from numpy
buffers here, which is also cheaper than converting Python lists. The same goes for
``pyarrow.compute`` (``cast``, ``is_null``): about 0.1 s to import, avoided by reading
either string layout's offsets directly (:func:`string_bounds`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa


def int64_range(start: int, n: int) -> pa.Array:
    """``start, start + 1, ..., start + n - 1`` as an int64 array."""
    values = np.arange(start, start + n, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(values)])


def booleans(values: np.ndarray) -> pa.Array:
    """A boolean array of a numpy array of bools (no nulls)."""
    bits = np.packbits(values.astype(bool, copy=False), bitorder="little")
    return pa.Array.from_buffers(pa.bool_(), len(values), [None, pa.py_buffer(bits)])


def validity(arr: pa.Array) -> np.ndarray | None:
    """For each value of ``arr``, whether it is not null (None: no value is null)."""
    if not arr.null_count:
        return None
    bitmap = arr.buffers()[0]
    assert bitmap is not None  # a null_count without a bitmap is not Arrow
    bits = np.unpackbits(np.frombuffer(bitmap, dtype=np.uint8), bitorder="little")
    return bits[arr.offset : arr.offset + len(arr)].astype(bool)


def fixed_width_strings(data: bytes, n: int, width: int, valid: np.ndarray | None) -> pa.Array:
    """A string array of ``n`` values of ``width`` ASCII bytes each, laid end to end in
    ``data``; ``valid`` marks the values that are not null (None: all are)."""
    offsets = np.arange(0, width * (n + 1), width, dtype=np.int32)
    bitmap = None
    nulls = 0
    if valid is not None:
        bitmap = pa.py_buffer(np.packbits(valid, bitorder="little"))
        nulls = int(n - np.count_nonzero(valid))
    buffers = [bitmap, pa.py_buffer(offsets), pa.py_buffer(data)]
    return pa.Array.from_buffers(pa.string(), n, buffers, null_count=nulls)


def repeated_text(value: str, n: int) -> pa.Array:
    """``value`` ``n`` times as a string array (a partition directory's value)."""
    data = value.encode("utf-8")
    # a directory name is at most 255 bytes: a batch's values fit 32-bit offsets
    offsets = np.arange(n + 1, dtype=np.int32) * np.int32(len(data))
    buffers = [None, pa.py_buffer(offsets), pa.py_buffer(data * n)]
    return pa.Array.from_buffers(pa.string(), n, buffers)


def string_bounds(texts: pa.Array) -> tuple[np.ndarray, pa.Buffer | None]:
    """The ``n + 1`` byte offsets of a string or large-string array's values, and its data
    buffer (None when every value is empty or null)."""
    _, offsets, data = texts.buffers()
    wide = pa.types.is_large_string(texts.type) or pa.types.is_large_binary(texts.type)
    dtype = np.int64 if wide else np.int32
    assert offsets is not None
    bounds = np.frombuffer(offsets, dtype=dtype)[texts.offset : texts.offset + len(texts) + 1]
    return bounds.astype(np.int64, copy=False), data


def single_chunk(texts: pa.Array | pa.ChunkedArray) -> pa.Array:
    """A chunked array's one chunk (or its chunks joined); an array as it is."""
    if isinstance(texts, pa.ChunkedArray):
        return texts.combine_chunks() if texts.num_chunks != 1 else texts.chunk(0)
    return texts


def _list_validity(values: list[Any]) -> tuple[pa.Buffer | None, int]:
    """The validity bitmap of a list's values (None: no value is None) and the null count."""
    valid = np.fromiter((v is not None for v in values), dtype=bool, count=len(values))
    nulls = int(len(values) - np.count_nonzero(valid))
    if not nulls:
        return None, 0
    return pa.py_buffer(np.packbits(valid, bitorder="little")), nulls


def int64s(values: list[Any]) -> pa.Array | None:
    """Python ints (or None) as an int64 array; None when one is not an int or does not fit
    in 64 bits (the caller then takes ``pa.array``'s way, with its errors)."""
    if any(type(v) is not int for v in values if v is not None):
        return None
    try:
        data = np.fromiter((0 if v is None else v for v in values), np.int64, len(values))
    except OverflowError:
        return None
    bitmap, nulls = _list_validity(values)
    return pa.Array.from_buffers(
        pa.int64(), len(values), [bitmap, pa.py_buffer(data)], null_count=nulls
    )


def bools(values: list[Any]) -> pa.Array | None:
    """Python bools (or None) as a boolean array; None when one is not a bool."""
    if any(type(v) is not bool for v in values if v is not None):
        return None
    bits = np.packbits(np.fromiter((v is True for v in values), bool, len(values)),
                       bitorder="little")  # fmt: skip
    bitmap, nulls = _list_validity(values)
    return pa.Array.from_buffers(
        pa.bool_(), len(values), [bitmap, pa.py_buffer(bits)], null_count=nulls
    )


def utf8(values: list[Any]) -> pa.Array | None:
    """``str`` values (UTF-8 by construction) or UTF-8 ``bytes`` (the caller vouches for
    them: ``to_json``'s output), or None, as a string array from one joined buffer; None
    when a value is of another type or the data passes 32-bit offsets."""
    if any(type(v) is not str and type(v) is not bytes for v in values if v is not None):
        return None
    encoded = [b"" if v is None else v.encode() if type(v) is str else v for v in values]
    offsets = np.zeros(len(values) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    if offsets[-1] >= 2**31:
        return None
    bitmap, nulls = _list_validity(values)
    buffers = [bitmap, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(b"".join(encoded))]
    return pa.Array.from_buffers(pa.string(), len(values), buffers, null_count=nulls)


def int_lists(lists: list[list[int]], inner: pa.DataType) -> pa.Array:
    """Lists of ints (none of them None) as a list array of ``inner`` (int32 or int64)."""
    offsets = np.zeros(len(lists) + 1, dtype=np.int32)
    np.cumsum([len(x) for x in lists], out=offsets[1:])
    dtype = np.int64 if inner == pa.int64() else np.int32
    flat = np.fromiter((v for x in lists for v in x), dtype, int(offsets[-1]))
    values = pa.Array.from_buffers(inner, len(flat), [None, pa.py_buffer(flat)])
    start = pa.Array.from_buffers(pa.int32(), len(offsets), [None, pa.py_buffer(offsets)])
    return pa.ListArray.from_arrays(start, values)


def or_pa_array(built: pa.Array | None, values: list[Any], type_: pa.DataType) -> pa.Array:
    """``built`` (one of the builders above), or ``pa.array``'s array where a builder
    declined (a value of another type, text past 32-bit offsets): pandas is imported then,
    and ``pa.array`` raises what it raises on values it cannot take."""
    return built if built is not None else pa.array(values, type=type_)
