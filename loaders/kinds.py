"""Telling source kinds apart from their first bytes, without importing their readers.

The Parquet reader imports ``pyarrow.dataset``, which imports pandas (0.4 s): a SQLite or
Postgres import should not pay for it just to learn that its source is not Parquet.
"""

from __future__ import annotations

from pathlib import Path

PARQUET_MAGIC = b"PAR1"


def is_parquet_file(path: Path) -> bool:
    """True when the file starts with Parquet's magic bytes."""
    try:
        with path.open("rb") as f:
            return f.read(4) == PARQUET_MAGIC
    except OSError:
        return False


def looks_like_parquet(source: str) -> bool:
    """True for a .parquet file, a glob, or a directory holding Parquet files."""
    p = Path(source)
    if any(ch in source for ch in "*?["):
        return True
    if p.is_dir():
        return any(p.rglob("*.parquet"))
    return p.suffix.lower() in (".parquet", ".pq") or (p.is_file() and is_parquet_file(p))
