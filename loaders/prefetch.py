"""Producing the next batch on a thread while the caller stores the current one."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import Any, TypeVar

T = TypeVar("T")

_DONE = object()


def prefetched(batches: Iterator[T], depth: int = 1) -> Iterator[T]:
    """Read the next batch on a thread while the caller stores the current one.

    DuckDB's insert, the network wait and SQLite's reads release the GIL, so producing a
    batch (reading, decoding) overlaps with storing the previous one; at most ``depth`` + 2
    batches are in memory. Errors reach the caller unchanged. The producer must not share
    state with the caller until the iteration ends (it is joined before this returns).
    """
    out: queue.Queue[Any] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def produce() -> None:
        try:
            for batch in batches:
                while not stop.is_set():
                    try:
                        out.put(batch, timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            out.put(_DONE)
        except BaseException as e:  # handed to the consumer, raised there
            out.put(e)

    worker = threading.Thread(target=produce, name="stepscope-prefetch", daemon=True)
    worker.start()
    try:
        while (item := out.get()) is not _DONE:
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        worker.join()
