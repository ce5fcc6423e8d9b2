"""Settings every part reads, kept free of heavy imports (the CLI starts with these only)."""

from __future__ import annotations

import os

DEFAULT_STORE = "stepscope.duckdb"
"""Store used when neither ``--store`` nor ``$STEPSCOPE_STORE`` names one."""


def default_store_path() -> str:
    """``$STEPSCOPE_STORE`` if set, else ``./stepscope.duckdb``."""
    return os.environ.get("STEPSCOPE_STORE") or DEFAULT_STORE
