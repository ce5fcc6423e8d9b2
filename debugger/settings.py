"""Settings every part reads, kept free of heavy imports (the CLI starts with these only)."""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from debugger.errors import StepscopeError

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

CONFIG = Setting(
    "STEPSCOPE_CONFIG",
    "",
    "The settings file (TOML); default: the first stepscope.toml in the current directory "
    "or one of its parents",
)
"""Where the team's shared settings live (the ``[prune]`` retention rules)."""
CONFIG_NAME = "stepscope.toml"
"""The settings file's name, looked up from the current directory upwards."""

SETTINGS: tuple[Setting, ...] = (SQL_MEMORY, CONFIG)
"""Settings declared as :class:`Setting` (each documented in docs/cli.md, Environment)."""


def config_file(start: Path | None = None) -> Path | None:
    """The settings file: ``$STEPSCOPE_CONFIG``, else the first ``stepscope.toml`` in
    ``start`` (default: the current directory) or a parent, else None.

    Looked up like ``pyproject.toml``, so a file committed at a project's root applies in
    every directory below it.
    """
    named = CONFIG.value()
    if named:
        return Path(named)
    here = (start or Path.cwd()).resolve()
    for directory in (here, *here.parents):
        candidate = directory / CONFIG_NAME
        if candidate.is_file():
            return candidate
    return None


def config_table(name: str, path: Path | None = None) -> tuple[dict[str, Any], Path | None]:
    """The ``[name]`` table of the settings file (empty when there is none), and the file.

    Raises:
        StepscopeError: the file is named but missing, or is not TOML, or ``[name]`` is not
            a table.
    """
    path = path or config_file()
    if path is None:
        return {}, None
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise StepscopeError(
            f"no settings file {path}", f"create it or unset {CONFIG.name}"
        ) from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise StepscopeError(f"cannot read the settings file {path}: {e}", "fix its TOML") from e
    table = doc.get(name, {})
    if not isinstance(table, dict):
        raise StepscopeError(f"[{name}] in {path} is not a table", f"write it as [{name}]")
    return table, path
