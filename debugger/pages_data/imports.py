"""The Import page's work: import a path, an uploaded file or a Postgres URL into the store.

The app serves the store read-only; an import opens it writable for the import only, so the
caller must close its own read-only connections first (DuckDB refuses a writable open of a
file the same process holds read-only) and reopen them after.
"""

from __future__ import annotations

import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from debugger.errors import SourceError
from debugger.model import ImportReport
from debugger.store import Store
from loaders import ImportOptions, import_source
from loaders.base import ProgressFn
from loaders.registry import FLAVOURS as REGISTERED

UPLOAD_SUFFIXES = (".sqlite", ".sqlite3", ".db", ".parquet", ".json")
"""File kinds the Import page accepts as an upload."""
KINDS = ("A file path", "An uploaded file", "A Postgres URL")
"""The kinds of source the Import page offers."""
FLAVOURS = ("auto", *REGISTERED, "mapped")
"""The flavours the Import page offers (``auto`` detects the source's)."""


@dataclass(frozen=True)
class ImportResult:
    """An import's report and the rows it quarantined, with their reasons."""

    report: ImportReport
    quarantined: pd.DataFrame


def import_into(
    store_path: str,
    source: str,
    flavour: str = "auto",
    mapping: str | None = None,
    progress: ProgressFn | None = None,
) -> ImportResult:
    """Open the store writable, import one source, and close the store again.

    Raises:
        StoreError: the store is held by another process, or cannot be opened.
        SourceError, FlavourError, MappingError: the source cannot be read or mapped.
    """
    options = ImportOptions(flavour=flavour, mapping=mapping or None, progress=progress)
    with Store.open(store_path) as store:
        report = import_source(store, source, options)
        quarantined = store.quarantine(report.source_id)
    return ImportResult(report, quarantined)


def import_upload(
    store_path: str,
    name: str,
    data: bytes,
    flavour: str = "auto",
    mapping: str | None = None,
    progress: ProgressFn | None = None,
) -> ImportResult:
    """Import an uploaded file: written to a temporary file, imported, then deleted.

    Raises:
        SourceError: the file's kind is not one Stepscope reads.
        StoreError, FlavourError, MappingError: as for :func:`import_into`.
    """
    suffix = Path(name).suffix.lower()
    if suffix not in UPLOAD_SUFFIXES:
        raise SourceError(
            f"cannot import {name!r}: not a SQLite, Parquet or JSON file",
            f"upload a file ending in {', '.join(UPLOAD_SUFFIXES)}, or give a path",
        )
    with tempfile.TemporaryDirectory(prefix="stepscope-upload-") as tmp:
        path = Path(tmp) / Path(name).name
        path.write_bytes(data)
        return import_into(store_path, str(path), flavour, mapping, progress)


def progress(table: str, done: int, total: int | None) -> tuple[float, str]:
    """The progress bar's share and text for ``done`` rows of ``table`` read so far.

    Args:
        table: the source table being read.
        done: rows read so far.
        total: the table's rows, when the source can tell (else the bar stays half way).
    """
    if total:
        return min(done / total, 1.0), f"{table}: {done:,} of {total:,} rows"
    return 0.5, f"{table}: {done:,} rows"


def table_rows(report: ImportReport) -> list[dict[str, Any]]:
    """The report's counts, one row per source table."""
    return [{"table": t, **asdict(c)} for t, c in report.tables.items()]


def reason_rows(report: ImportReport) -> list[dict[str, Any]]:
    """Quarantined rows counted by reason."""
    return [{"reason": r, "rows": n} for r, n in report.quarantine_reasons.items()]
