"""Loaders: read checkpoint histories from SQLite, Postgres and Parquet into the store.

``ImportOptions`` and ``import_source`` are loaded on first use: a process that needs only a
light module below (the replay's sandbox child reads ``loaders.langgraph.map``) does not
import DuckDB and Arrow through this package.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from loaders.base import ImportOptions
    from loaders.importer import import_source

__all__ = ["ImportOptions", "import_source"]
_WHERE = {"ImportOptions": "loaders.base", "import_source": "loaders.importer"}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'loaders' has no attribute {name!r}")
    value = getattr(importlib.import_module(_WHERE[name]), name)
    globals()[name] = value
    return value
