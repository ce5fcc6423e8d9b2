"""Telling source kinds apart from their first bytes, without importing their readers.

Opening a source picks its reader from these checks; a reader's module (pyarrow.parquet,
the ADBC driver) is imported only for the kind the source turns out to be.
"""

from __future__ import annotations

import re
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


_POSTGRES_SCHEME = re.compile(r"^\s*(postgresql|postgres)://", re.I)
LIBPQ_KEYWORDS = (
    "host", "hostaddr", "port", "dbname", "user", "password", "passfile", "service",
    "sslmode", "sslrootcert", "sslcert", "sslkey", "sslpassword", "connect_timeout",
    "application_name", "options", "target_session_attrs", "channel_binding", "gssencmode",
    "require_auth", "load_balance_hosts", "krbsrvname", "requirepeer",
)  # fmt: skip
"""Keywords of a libpq connection string (``host=db user=reader password=...``)."""
_KEYWORD_STRING = re.compile(rf"^\s*(?:{'|'.join(LIBPQ_KEYWORDS)})\s*=", re.I)


def is_postgres_source(source: str) -> bool:
    """True for a Postgres connection string: a ``postgresql://`` or ``postgres://`` URL in
    any case, or a libpq keyword string (``host=db dbname=agents password='a b'``).

    A keyword string is told from a file only when no file of that name exists, so an odd
    file name such as ``host=x.sqlite`` still opens as the file.
    """
    if _POSTGRES_SCHEME.match(source):
        return True
    return bool(_KEYWORD_STRING.match(source)) and not Path(source).exists()


def postgres_conninfo(source: str) -> str:
    """The connection string as libpq takes it: its URL scheme lower-cased (libpq compares
    ``postgresql://`` case-sensitively and would read ``POSTGRESQL://...`` as keywords)."""
    m = _POSTGRES_SCHEME.match(source)
    return m[1].lower() + "://" + source[m.end() :] if m else source
