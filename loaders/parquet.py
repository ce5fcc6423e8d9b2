"""Parquet sources: one file, a glob, or a (hive-partitioned) directory, read in place.

Tables: a directory holding ``checkpoints/``, ``effects/`` and ``tool_calls/`` (directories
or ``.parquet`` files) gives those tables; any other file, glob or directory is read as the
``checkpoints`` table. Hive partition columns (``date=2026-11-01/``) become columns.
"""

from __future__ import annotations

import glob
import zlib
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds

from debugger.errors import SourceError
from loaders.base import BATCH_BYTES, BATCH_ROWS, SourceReader
from loaders.prefetch import prefetched

PARQUET_MAGIC = b"PAR1"
_LEAN_SCAN = ds.ParquetFragmentScanOptions(pre_buffer=False)
"""Read a row group's columns as they are decoded, not all buffered ahead (bounded memory)."""
TABLE_NAMES = ("checkpoints", "effects", "tool_calls")


def file_key(path: str) -> int:
    """The high bits of the ``_key`` of a file's rows: 31 bits of a hash of its path.

    A row's ``_key`` is ``file_key(path) + position in the file``, stable as a dataset grows.
    """
    return (zlib.crc32(path.encode("utf-8")) >> 1) << 32


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


class ParquetReader(SourceReader):
    """Reads Parquet through pyarrow datasets, streaming record batches."""

    kind = "parquet"

    def __init__(self, source: str) -> None:
        # absolute even for a glob, so the same files imported from another directory are
        # the same source (quarantine records are kept per location)
        self.location = str(Path(source).resolve())
        self._datasets: dict[str, ds.Dataset] = {}
        root = Path(source)
        if any(ch in source for ch in "*?["):
            files = sorted(glob.glob(source, recursive=True))
            if not files:
                raise SourceError(f"no files match {source}", "check the glob pattern")
            self._datasets["checkpoints"] = self._open(files, source)
        elif root.is_dir():
            parts = {n: root / n for n in TABLE_NAMES if (root / n).exists()}
            parts |= {
                n: root / f"{n}.parquet" for n in TABLE_NAMES if (root / f"{n}.parquet").exists()
            }
            if "checkpoints" in parts:
                for name, path in parts.items():
                    self._datasets[name] = self._open(str(path), str(path))
            else:
                self._datasets["checkpoints"] = self._open(str(root), source)
        elif root.is_file():
            self._datasets["checkpoints"] = self._open(str(root), source)
        else:
            raise SourceError(f"no such file or directory: {source}", "check the path")

    @staticmethod
    def _open(paths: str | list[str], label: str) -> ds.Dataset:
        try:
            dataset = ds.dataset(
                paths, format="parquet", partitioning="hive", exclude_invalid_files=False
            )
            dataset.schema  # noqa: B018 - forces the footer read, so corrupt files fail here
            return dataset
        except (pa.ArrowInvalid, OSError) as e:
            raise SourceError(
                f"cannot read {label} as Parquet: {str(e).splitlines()[0]}",
                "the file may be corrupt or truncated, or not Parquet at all",
            ) from e

    def tables(self) -> list[str]:
        return list(self._datasets)

    def _dataset(self, table: str) -> ds.Dataset:
        if table not in self._datasets:
            raise SourceError(f"no table {table!r} in {self.location}", "check the table name")
        return self._datasets[table]

    def schema(self, table: str) -> pa.Schema:
        return self._dataset(table).schema

    def count(self, table: str) -> int | None:
        try:
            return int(self._dataset(table).count_rows())
        except (pa.ArrowInvalid, OSError) as e:
            raise SourceError(f"cannot read {self.location}: {e}", "the file may be corrupt") from e

    def scan(
        self, table: str, columns: list[str] | None = None, batch_rows: int = BATCH_ROWS
    ) -> Iterator[pa.RecordBatch]:
        # read the next batch on a thread while the store validates and writes this one
        return prefetched(self._scan(table, columns, batch_rows))

    def _scan(
        self, table: str, columns: list[str] | None, batch_rows: int
    ) -> Iterator[pa.RecordBatch]:
        dataset = self._dataset(table)
        rows = self._batch_rows(dataset, batch_rows)
        start = 0
        try:
            # file by file, so that a row's _key (file, position in it) stays the same when
            # files are added to the dataset: quarantine records are not duplicated then
            for fragment in dataset.get_fragments():
                base = file_key(fragment.path)
                # pyarrow reads 16 batches ahead and pre-buffers column chunks by default:
                # with wide rows an import of a 1 GB (uncompressed) dataset peaked at 2.2 GB
                batches = fragment.to_batches(
                    schema=dataset.schema,
                    columns=columns,
                    batch_size=rows,
                    batch_readahead=1,
                    fragment_scan_options=_LEAN_SCAN,
                )
                offset = 0
                for batch in batches:
                    if batch.num_rows == 0:
                        continue
                    keys = pa.array(range(base + offset, base + offset + batch.num_rows),
                                    type=pa.int64())  # fmt: skip
                    offset += batch.num_rows
                    start += batch.num_rows
                    yield pa.RecordBatch.from_arrays(
                        [keys, *batch.columns], names=["_key", *batch.schema.names]
                    )
        except (pa.ArrowInvalid, OSError) as e:
            raise SourceError(
                f"cannot read {self.location} as Parquet after {start} rows: "
                f"{str(e).splitlines()[0]}",
                "the file may be corrupt or truncated; rows before it were imported",
            ) from e

    @staticmethod
    def _batch_rows(dataset: ds.Dataset, batch_rows: int) -> int:
        # Row-group metadata gives the uncompressed size per row without reading data.
        for fragment in dataset.get_fragments():
            meta = fragment.metadata
            rows = int(meta.num_rows)
            if rows:
                groups = range(meta.num_row_groups)
                size = sum(int(meta.row_group(i).total_byte_size) for i in groups)
                return max(100, min(batch_rows, BATCH_BYTES // max(1, size // rows)))
        return batch_rows
