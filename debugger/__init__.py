"""Stepscope: a time-travel debugger for AI-agent checkpoint histories.

The notebook API::

    import debugger
    store = debugger.open("stepscope.duckdb")
    store.runs()                       # pandas DataFrame
    store.timeline("crash-at-step-7")  # pandas DataFrame
    store.checkpoint("crash-at-step-7", 6)
    debugger.replay("stepscope.duckdb", "crash-at-step-7", 6,
                    "sample_checkpoints.refund_desk.agent:fixed_agent")   # see docs/replay.md

``Store`` and ``replay`` are loaded on first use, so that the replay's sandbox process (which
imports this package) starts without DuckDB and pandas.
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from debugger import replay
    from debugger.store import Store

__version__ = "0.1.0"
__all__ = ["Store", "__version__", "open", "replay"]


def __getattr__(name: str) -> Any:
    if name == "Store":
        return importlib.import_module("debugger.store").Store
    if name == "replay":  # the package; calling it runs a replay (debugger/replay/__init__.py)
        return importlib.import_module("debugger.replay")
    raise AttributeError(f"module 'debugger' has no attribute {name!r}")


def open(path: str | os.PathLike[str] | None = None, read_only: bool = True) -> Store:
    """Open a store for reading (notebooks); pass ``read_only=False`` to import into it."""
    from debugger.store import Store

    return Store.open(path, read_only=read_only)
