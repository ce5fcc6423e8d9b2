"""The hash of a checkpoint's working state: XXH3-128 of its JSON text, in hex.

Equal hashes mean identical state texts; the Timeline keys its parsed states by it, and a
checkpoint without an id of its own is named after it. It is computed for every imported
row, so its cost is the import's: XXH3-128 through this module, Arrow conversion
included, costs a fraction of DuckDB's ``md5`` (benchmarks/README.md). It is 128 bits like
MD5, so the column keeps its 32 hex characters.

DuckDB has no XXH3, so :func:`registered` lends it a vectorised (Arrow) Python function
named ``state_hash``, registered for the duration of a block: a connection left open with
a Python function registered reports leaked objects when the interpreter exits.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from itertools import pairwise

import duckdb
import pyarrow as pa
import xxhash

from debugger.store import arrays
from debugger.store.state_parts import text_hash

SQL_NAME = "state_hash"
"""The SQL function's name while it is registered."""

_hexdigest = xxhash.xxh3_128_hexdigest


of_text = text_hash
"""The state hash of one JSON text (UTF-8), as the store computes it."""


def of_array(texts: pa.Array | pa.ChunkedArray) -> pa.Array:
    """The state hashes of an Arrow array of strings (NULL stays NULL).

    Hashes slices of the array's data buffer, so no Python string is made per value, and
    builds the result from its buffers (:mod:`debugger.store.arrays`: no pandas import).
    """
    texts = arrays.single_chunk(texts)
    n = len(texts)
    bounds, data = arrays.string_bounds(texts)
    view = memoryview(data) if data is not None else memoryview(b"")
    digests = "".join([_hexdigest(view[a:b]) for a, b in pairwise(bounds.tolist())])
    return arrays.fixed_width_strings(digests.encode("ascii"), n, 32, arrays.validity(texts))


def register(con: duckdb.DuckDBPyConnection) -> None:
    """Make ``state_hash(VARCHAR) -> VARCHAR`` callable in SQL on ``con`` (a connection the
    caller closes itself; otherwise use :func:`registered`)."""
    # the type by name: its enum moved between DuckDB 1.x (duckdb.functional) and 2.x
    con.create_function(  # type: ignore[call-overload]
        SQL_NAME, of_array, ["VARCHAR"], "VARCHAR", type="arrow"
    )


def register_once(con: duckdb.DuckDBPyConnection) -> bool:
    """:func:`register`, unless the database has the function already; True if it did.

    Only outside a transaction: a failed statement inside one aborts it. (Asking
    ``duckdb_functions()`` instead is a slow catalog query.)
    """
    try:
        register(con)
    except duckdb.CatalogException:
        return False
    return True


@contextmanager
def registered(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Make ``state_hash(VARCHAR) -> VARCHAR`` callable in SQL on ``con`` within the block."""
    register(con)
    try:
        yield
    finally:
        con.remove_function(SQL_NAME)
