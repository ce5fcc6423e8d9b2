"""The heavy benchmark's generator writes LangGraph's own bytes, only faster.

``benchmarks/lg_heavy_gen.py`` memoises each message's msgpack encoding and builds a
checkpoint's by concatenation; these tests hold it to the stock ``JsonPlusSerializer``
byte for byte, on every checkpoint of a thread and on the tables ``SqliteSaver`` writes.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from benchmarks import lg_heavy_gen


def test_every_checkpoint_of_a_thread_is_encoded_as_langgraph_encodes_it() -> None:
    serde = lg_heavy_gen.memo_serde(check_every=0)  # the comparison is made here, on all
    stock = JsonPlusSerializer()
    for t in (0, 7):
        serde.reset()
        n = 0
        for ckpt, _, _ in lg_heavy_gen.thread_checkpoints(t):
            assert serde.dumps_typed(ckpt) == stock.dumps_typed(ckpt)
            n += 1
        assert n == 1 + 2 * lg_heavy_gen.ROUNDS
    assert serde.checked == 0 and len(serde.memo) == n  # one encoding per message


def test_the_written_tables_are_those_of_the_stock_serializer(tmp_path: Path) -> None:
    fast, stock = tmp_path / "fast.sqlite", tmp_path / "stock.sqlite"
    assert lg_heavy_gen.write(fast, 398, first_thread=3) == 398
    assert lg_heavy_gen.write(stock, 398, first_thread=3, fast=False) == 398
    q = (
        "SELECT thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, "
        "checkpoint, metadata FROM checkpoints ORDER BY thread_id, checkpoint_id"
    )
    rows_fast = sqlite3.connect(fast).execute(q).fetchall()
    rows_stock = sqlite3.connect(stock).execute(q).fetchall()
    assert len(rows_fast) == len(rows_stock) == 398
    # checkpoint ids are uuid6 of the clock: the same once the fast run's ids are renamed
    rename = {a[2]: b[2] for a, b in zip(rows_fast, rows_stock, strict=True)}
    for a, b in zip(rows_fast, rows_stock, strict=True):
        blob = a[5].replace(a[2].encode(), rename[a[2]].encode())
        assert (a[0], a[1], rename[a[2]], a[3] and rename[a[3]], a[4], blob, a[6]) == b


def test_a_wrong_encoding_is_caught_by_the_sampled_check() -> None:
    serde = lg_heavy_gen.memo_serde(check_every=1)
    ckpt, _, _ = next(iter(lg_heavy_gen.thread_checkpoints(0)))
    serde.dumps_typed(ckpt)
    first = ckpt["channel_values"]["messages"][0]
    serde.memo[id(first)] = (first, b"\xc0")  # a memo that no longer matches its message
    with pytest.raises(AssertionError, match="differs from LangGraph"):
        serde.dumps_typed(ckpt)
