"""A reader of JSON documents: one ``.json`` file, or a directory (searched recursively) of them.

Runtimes that persist a run as a JSON document (a Temporal workflow history as
``temporal workflow show --output json`` or ``fetch_history().to_json()`` writes it) are
read through this reader. It has one table, ``documents``: a row a file, with its path and
its raw text, so a flavour decides how to map each one and a file that is not what the
flavour expects is quarantined with its path, not skipped. Files are read one at a time and
never written.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa

from debugger.errors import SourceError
from loaders.base import BATCH_ROWS, SourceReader
from loaders.filter import Selection

TABLE = "documents"
SCHEMA = pa.schema([("_key", pa.int64()), ("path", pa.string()), ("text", pa.binary())])
PEEK_BYTES = 64 * 1024 * 1024
"""A first document larger than this is not parsed for detection (the flavour still reads it)."""


def json_files(path: Path) -> list[Path]:
    """The ``.json`` files of a directory, recursively, in path order."""
    return sorted(p for p in path.rglob("*.json") if p.is_file())


class JsonFilesReader(SourceReader):
    """One JSON file, or every ``.json`` file under a directory."""

    kind = "json"
    capability = "JSON files (a .json file or a directory of them)"

    def __init__(self, source: str | Path) -> None:
        self.path = Path(source)
        self.location = str(self.path.resolve())
        self.files = [self.path] if self.path.is_file() else json_files(self.path)
        if not self.files:
            raise SourceError(f"no .json files in {source}", "pass a .json file or a directory")
        self._peeked: Any = None

    def tables(self) -> list[str]:
        return [TABLE]

    def schema(self, table: str) -> pa.Schema:
        self._check(table)
        return SCHEMA

    def count(self, table: str) -> int | None:
        return len(self.files)

    def _check(self, table: str) -> None:
        if table != TABLE:
            raise SourceError(f"no table {table!r} in {self.location}", f"the table is {TABLE}")

    def read(self, path: Path) -> bytes:
        """One file's bytes.

        Raises:
            SourceError: the file cannot be read.
        """
        try:
            return path.read_bytes()
        except OSError as e:
            raise SourceError(f"cannot read {path}: {e.strerror}", "check the file") from None

    def documents(self) -> Iterator[tuple[int, Path, bytes]]:
        """``(key, path, bytes)`` of each file in order; the key is its position."""
        for i, path in enumerate(self.files):
            yield i, path, self.read(path)

    def first(self) -> Any:
        """The first file parsed, for detection (None when it is not JSON or too large)."""
        if self._peeked is None:
            path = self.files[0]
            try:
                small = path.stat().st_size <= PEEK_BYTES
                self._peeked = orjson.loads(self.read(path)) if small else False
            except (orjson.JSONDecodeError, OSError, SourceError):
                self._peeked = False
        return self._peeked or None

    def scan(
        self,
        table: str,
        columns: list[str] | None = None,
        batch_rows: int = BATCH_ROWS,
        where: Selection | None = None,
    ) -> Iterator[pa.RecordBatch]:
        if where is not None:  # a run's id is inside its documents: nothing to push down
            raise SourceError(
                "--run/--since cannot select runs in JSON files before reading them",
                "import the files without --run/--since, or only the files you need",
            )
        self._check(table)
        rows: list[tuple[int, Path, bytes]] = []
        for doc in self.documents():
            rows.append(doc)
            if len(rows) >= batch_rows:
                yield self._batch(rows)
                rows = []
        if rows:
            yield self._batch(rows)

    @staticmethod
    def _batch(rows: list[tuple[int, Path, bytes]]) -> pa.RecordBatch:
        keys, paths, texts = zip(*rows, strict=True)
        return pa.RecordBatch.from_arrays(
            [
                pa.array(keys, pa.int64()),
                pa.array([str(p) for p in paths]),
                pa.array(texts, pa.binary()),
            ],
            schema=SCHEMA,
        )


def has_json_files(path: Path) -> bool:
    """True for a ``.json`` file, or a directory holding one."""
    if path.is_file():
        return path.suffix.lower() == ".json"
    return path.is_dir() and any(p.is_file() for p in path.rglob("*.json"))
