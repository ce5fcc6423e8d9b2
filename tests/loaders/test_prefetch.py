"""Reading ahead on a thread: order, errors, bounded memory, and the thread's end."""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Iterator

import pytest

from loaders.prefetch import read_ahead


def _threads() -> int:
    return sum(1 for t in threading.enumerate() if t.name == "stepscope-prefetch")


def _wait_for(n: int) -> int:
    for _ in range(100):
        if _threads() == n:
            break
        time.sleep(0.02)
    return _threads()


def test_items_come_in_order() -> None:
    assert list(read_ahead(iter(range(1000)), chunk=7, depth=2)) == list(range(1000))
    assert _wait_for(0) == 0


def test_an_error_reaches_the_caller_after_the_items_before_it() -> None:
    def items() -> Iterator[int]:
        yield from range(10)
        raise RuntimeError("the server went away")

    seen = []
    with pytest.raises(RuntimeError, match="went away"):
        for i in read_ahead(items(), chunk=3):
            seen.append(i)
    assert seen == list(range(10))
    assert _wait_for(0) == 0


def test_the_producer_stays_bounded_and_stops_when_dropped() -> None:
    made = []

    def items() -> Iterator[int]:
        for i in range(100_000):
            made.append(i)
            yield i

    it = read_ahead(items(), chunk=10, depth=2)
    assert [next(it) for _ in range(5)] == list(range(5))
    time.sleep(0.2)
    assert len(made) <= (2 + 2) * 10 + 10  # depth + 2 chunks, and the one being built
    del it
    gc.collect()
    assert _wait_for(0) == 0
    stopped_at = len(made)
    time.sleep(0.2)
    assert len(made) == stopped_at
