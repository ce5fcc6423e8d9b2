"""The Import page's work: import a path, an uploaded file or a Postgres URL into the store.

The app reads the store read-only; an import opens it writable for the import only, so the
caller keeps its own reads off the store meanwhile (DuckDB refuses a writable open of a file
the same process holds read-only).
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import asdict, dataclass, replace
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
    label: str | None = None
    """What the source is called on the page: an upload's file name, not its temporary path."""

    @property
    def location(self) -> str:
        """Where the rows came from, as the user named it."""
        return self.label or self.report.location


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
        result = import_into(store_path, str(path), flavour, mapping, progress)
    return replace(result, label=f"uploaded file {Path(name).name}")


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


_CLI_HINTS = (
    (re.compile(r"--flavou?r (\w+)"), r"the Flavour \1"),
    (re.compile(r"pass it with --mapping FILE"), "give it in the Mapping file field"),
    (re.compile(r"pass --mapping FILE"), "give a mapping file in the Mapping file field"),
    (re.compile(r"--mapping FILE"), "a mapping file in the Mapping file field"),
    (re.compile(r"the --mapping path"), "the Mapping file path"),
    (re.compile(r" ?\(see `stepscope import --help`\)"), ""),
)
"""The CLI's words in import hints, and the Import page's controls that do the same."""


def app_hint(message: str) -> str:
    """An import error's message with its hint in the Import page's words (not the CLI's)."""
    for pattern, words in _CLI_HINTS:
        message = pattern.sub(words, message)
    return message


def quarantined_runs(quarantined: pd.DataFrame) -> dict[str, int]:
    """Run id -> rows of it quarantined (rows whose run id could be read), most first."""
    counts: dict[str, int] = {}
    for raw in quarantined.get("raw", pd.Series(dtype=object)).tolist():
        found = re.search(r'"run_id"\s*:\s*"([^"]*)"', str(raw))
        if found:
            counts[found.group(1)] = counts.get(found.group(1), 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]))
