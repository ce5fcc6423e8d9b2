"""Settings every part reads, kept free of heavy imports (the CLI starts with these only)."""

from __future__ import annotations

import os
from dataclasses import dataclass

DEFAULT_STORE = "stepscope.duckdb"
"""Store used when neither ``--store`` nor ``$STEPSCOPE_STORE`` names one."""


def default_store_path() -> str:
    """``$STEPSCOPE_STORE`` if set, else ``./stepscope.duckdb``."""
    return os.environ.get("STEPSCOPE_STORE") or DEFAULT_STORE


@dataclass(frozen=True)
class Setting:
    """A setting read from the environment: its variable, default and what it does.

    Declared as data so docs/cli.md's "Environment" table can be checked against the list
    (``tests/test_docs.py``): a setting nobody can find is a setting nobody sets.
    """

    name: str
    """The environment variable."""
    default: str
    """Its value when the variable is unset or empty."""
    help: str
    """One line: what it controls."""

    def value(self) -> str:
        """The variable's value, else the default."""
        return os.environ.get(self.name) or self.default


SQL_MEMORY = Setting(
    "STEPSCOPE_SQL_MEMORY",
    "1GB",
    "Memory one SQL console query may use (DuckDB size: 512MB, 2GB); past it the query fails",
)
"""The console's cap: far below a workstation's memory, far above what a question needs."""

SETTINGS: tuple[Setting, ...] = (SQL_MEMORY,)
"""Settings declared as :class:`Setting` (each documented in docs/cli.md, Environment)."""
