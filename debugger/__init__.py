"""Stepscope: a time-travel debugger for AI-agent checkpoint histories.

The notebook API::

    import debugger
    store = debugger.open("stepscope.duckdb")
    store.runs()                       # pandas DataFrame
    store.timeline("crash-at-step-7")  # pandas DataFrame
    store.checkpoint("crash-at-step-7", 6)
"""

from __future__ import annotations

import os

from debugger.store import Store

__version__ = "0.1.0"
__all__ = ["Store", "__version__", "open"]


def open(path: str | os.PathLike[str] | None = None, read_only: bool = True) -> Store:
    """Open a store for reading (notebooks); pass ``read_only=False`` to import into it."""
    return Store.open(path, read_only=read_only)
