"""The state hash: XXH3-128 of the JSON text, the same from Python, Arrow and SQL."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pytest
import xxhash

from debugger.store import state_hash

TEXTS = ['{"a": 1}', None, '{"name": "Zoë 🚀"}', "", "[" + "1," * 5000 + "1]"]


def test_of_text_is_xxh3_128_of_the_utf8_text() -> None:
    assert state_hash.of_text('{"a": 1}') == xxhash.xxh3_128_hexdigest(b'{"a": 1}')
    assert state_hash.of_text("é") == state_hash.of_text("é".encode())
    assert len(state_hash.of_text("{}")) == 32


@pytest.mark.parametrize(
    "array",
    [
        pa.array(TEXTS),
        pa.array(TEXTS, pa.large_string()),
        pa.array(["x", *TEXTS]).slice(1),
        pa.chunked_array([TEXTS[:2], TEXTS[2:]]),
    ],
    ids=["string", "large_string", "sliced", "chunked"],
)
def test_of_array_hashes_each_value_and_keeps_nulls(array: pa.Array) -> None:
    want = [None if t is None else state_hash.of_text(t) for t in TEXTS]
    assert state_hash.of_array(array).to_pylist() == want


def test_the_sql_function_exists_only_within_the_block() -> None:
    con = duckdb.connect()
    with state_hash.registered(con):
        got = con.execute(
            "SELECT state_hash(t) FROM (VALUES ('{\"a\": 1}'), (NULL)) v(t)"
        ).fetchall()
    assert got == [(state_hash.of_text('{"a": 1}'),), (None,)]
    with pytest.raises(duckdb.CatalogException):
        con.execute("SELECT state_hash('x')")
    con.close()
