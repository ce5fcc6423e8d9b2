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


def read_ahead(items: Iterator[T], chunk: int = 100, depth: int = 4) -> Iterator[T]:
    """Items produced on a thread, ``chunk`` at a time, while the caller uses earlier ones.

    For a reader that waits on another process: the LangGraph walk over PostgresSaver
    tables waits for the server (psycopg releases the GIL meanwhile), and the wait
    overlaps with decoding. At most ``(depth + 2) * chunk``
    items are held. The thread stops when the items run out, or when the returned
    generator is closed or dropped (by whichever thread holds it last, so never while
    another thread is still iterating it).
    """

    def chunks() -> Iterator[list[T]]:
        part: list[T] = []
        try:
            for item in items:
                part.append(item)
                if len(part) == chunk:
                    yield part
                    part = []
        except Exception:
            if part:  # what was read before the error comes first
                yield part
            raise
        if part:
            yield part

    for part in prefetched(chunks(), depth):
        yield from part
