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
