"""Telling source kinds apart from their first bytes, without importing their readers.

Opening a source picks its reader from these checks; a reader's module (pyarrow.parquet,
the ADBC driver) is imported only for the kind the source turns out to be.
"""

from __future__ import annotations

from pathlib import Path

PARQUET_MAGIC = b"PAR1"
SQLITE_MAGIC = b"SQLite format 3\x00"


def starts_with(path: Path, magic: bytes) -> bool:
    """True when the file's first bytes are ``magic`` (False when it cannot be read)."""
    try:
        with path.open("rb") as f:
            return f.read(len(magic)) == magic
    except OSError:
        return False


def is_parquet_file(path: Path) -> bool:
    """True when the file starts with Parquet's magic bytes."""
    return starts_with(path, PARQUET_MAGIC)


def is_sqlite_file(path: Path) -> bool:
    """True when the file starts with SQLite's header."""
    return starts_with(path, SQLITE_MAGIC)


def looks_like_parquet(source: str) -> bool:
    """True for a .parquet file, a glob, or a directory holding Parquet files."""
    p = Path(source)
    if any(ch in source for ch in "*?["):
        return True
    if p.is_dir():
        return any(p.rglob("*.parquet"))
    return p.suffix.lower() in (".parquet", ".pq") or (p.is_file() and is_parquet_file(p))
