"""Clocks the runtime reads: the system clock, or a manual one for deterministic histories.

The runtime never calls ``datetime.now()`` itself; every timestamp and every wall-clock
budget comes from the clock it was given. A :class:`ManualClock` only moves when told to, so a
scenario script that advances it by fixed amounts writes the same bytes on every run.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    """What the runtime needs from a clock."""

    def now(self) -> datetime:
        """The current time, timezone-aware (UTC)."""
        ...


class SystemClock:
    """The real clock (UTC)."""

    def now(self) -> datetime:
        """The current time."""
        return datetime.now(UTC)

    def advance(self, ms: int) -> None:
        """Sleep for ``ms`` milliseconds (tools that simulate latency call this)."""
        time.sleep(ms / 1000)


class ManualClock:
    """A clock that moves only through :meth:`advance` or :meth:`set`.

    Tools and the scripted model of the sample call ``advance`` to simulate their latency,
    so wall-clock budgets and ``created_at`` values are the same on every regeneration.
    """

    def __init__(self, start: datetime, tick_ms: int = 0) -> None:
        if start.tzinfo is None:
            start = start.replace(tzinfo=UTC)
        self._now = start
        self.tick_ms = tick_ms
        """Each reading moves the clock on by this much (bookkeeping takes time too)."""

    def now(self) -> datetime:
        """The clock's current time (then it moves on by ``tick_ms``)."""
        current = self._now
        self._now += timedelta(milliseconds=self.tick_ms)
        return current

    def advance(self, ms: int) -> None:
        """Move forward by ``ms`` milliseconds."""
        self._now += timedelta(milliseconds=ms)

    def set(self, when: datetime) -> None:
        """Jump to ``when`` (days later, for a parked run that gets its approval)."""
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        if when < self._now:
            raise ValueError("a clock does not go backwards")
        self._now = when


def iso(when: datetime) -> str:
    """ISO 8601 text with milliseconds and a UTC offset, as stored in ``created_at``."""
    return when.astimezone(UTC).isoformat(timespec="milliseconds")


def elapsed_ms(start: datetime, end: datetime) -> int:
    """Whole milliseconds between two instants."""
    return int((end - start) / timedelta(milliseconds=1))
