"""Parquet sources: one file, a glob, or a (hive-partitioned) directory, read in place.

Tables: a directory holding ``checkpoints/``, ``effects/`` and ``tool_calls/`` (directories
or ``.parquet`` files) gives those tables; any other file, glob or directory is read as the
``checkpoints`` table. Hive partition columns (``date=2026-11-01/``) become columns.
"""

from __future__ import annotations

import glob
import itertools
import os
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq

from debugger.errors import SourceError
from debugger.store.arrays import int64_range, repeated_text
from loaders.base import BATCH_BYTES, BATCH_ROWS, SourceReader, WholeTable, aligned_rows
from loaders.filter import Selection
from loaders.prefetch import prefetched
from loaders.sqlmap import ident, literal

_READ_BUFFER = 1 << 20
"""Bytes read from a file at a time (a column chunk is not read whole)."""

_IGNORED_PREFIXES = (".", "_")
"""Files and directories skipped in a dataset directory, as Spark and pyarrow skip them
(``_SUCCESS``, ``.crc`` files, ``_delta_log/``)."""


@dataclass(frozen=True)
class ParquetFilePart:
    """One file of a Parquet dataset, with the hive partition values of its directories."""

    path: str
    partition: dict[str, str | None]


@dataclass(frozen=True)
class ParquetDataset:
    """The files of one table and its schema: the first file's columns, then the partition
    columns the files do not have (as strings).

    ``pyarrow.dataset`` would do this, but importing it imports pandas, which would
    stand between starting an import and reading its first batch (and nothing else on an
    import's path needs it: ``debugger.store.arrays``). Here files are listed and partition
    directories parsed by hand, and each file is read with ``pyarrow.parquet.ParquetFile``.
    """

    files: list[ParquetFilePart]
    schema: pa.Schema


def _partition_of(relative: Path) -> dict[str, str | None]:
    """``day=2026-11-01/run_id=r%201/f.parquet`` -> {day: 2026-11-01, run_id: r 1}.

    Values are URL-decoded and ``__HIVE_DEFAULT_PARTITION__`` is NULL, as Hive writes them.
    """
    out: dict[str, str | None] = {}
    for part in relative.parts[:-1]:
        key, eq, value = part.partition("=")
        if eq and key:
            text = unquote(value)
            out[key] = None if text == "__HIVE_DEFAULT_PARTITION__" else text
    return out


def _listed(root: Path) -> list[Path]:
    """Every file under ``root`` (sorted), skipping names that start with . or _."""
    found = []
    for path in root.rglob("*"):
        rel = path.relative_to(root).parts
        if any(p.startswith(_IGNORED_PREFIXES) for p in rel) or not path.is_file():
            continue
        found.append(path)
    return sorted(found)


def _footer(path: str) -> pq.ParquetFile:
    return pq.ParquetFile(path, pre_buffer=False, buffer_size=_READ_BUFFER)


def _glob_base(pattern: str) -> Path:
    """The directory of a glob before its first wildcard (where its partitions start)."""
    fixed = []
    for part in Path(pattern).parts:
        if any(ch in part for ch in "*?["):
            break
        fixed.append(part)
    return Path(*fixed) if fixed else Path(".")


def _relative(path: Path, base: Path) -> Path:
    try:
        return path.resolve().relative_to(base.resolve())
    except ValueError:
        return Path(path.name)


def open_dataset(paths: str | list[str], label: str) -> ParquetDataset:
    """List a file, a directory (hive partitions parsed) or a glob's files, and read the
    first file's footer for the schema.

    Raises:
        SourceError: the first file is not Parquet.
    """
    if isinstance(paths, list):
        base, files = _glob_base(label), [Path(p) for p in paths]
    elif Path(paths).is_dir():
        base = Path(paths)
        files = _listed(base)
    else:
        base, files = Path(paths).parent, [Path(paths)]
    parts = [ParquetFilePart(str(f), _partition_of(_relative(f, base))) for f in files]
    if not parts:
        return ParquetDataset([], pa.schema([]))
    try:
        schema = _footer(parts[0].path).schema_arrow
    except (pa.ArrowInvalid, OSError) as e:
        raise SourceError(
            f"cannot read {label} as Parquet: {str(e).splitlines()[0]}",
            "the file may be corrupt or truncated, or not Parquet at all",
        ) from e
    keys = dict.fromkeys(k for part in parts for k in part.partition)
    extra = [pa.field(k, pa.string()) for k in keys if k not in schema.names]
    return ParquetDataset(parts, pa.schema([*schema, *extra]))


def _file_batches(
    part: ParquetFilePart,
    schema: pa.Schema,
    columns: list[str] | None,
    rows: int,
    row_groups: list[int] | None = None,
) -> Iterator[pa.RecordBatch]:
    """One file's rows in batches of ``rows``, shaped to the dataset's schema.

    ``ParquetFile.iter_batches`` decodes a batch at a time into buffers of its own. The
    dataset scanner decodes a whole row group and hands out slices of it: every batch would
    keep its whole row group alive, and DuckDB keeps each batch a transaction read until it
    commits, so an import would hold most of the dataset in memory.
    """
    wanted = [f for f in schema if columns is None or f.name in columns]
    pf = _footer(part.path)
    present = set(pf.schema_arrow.names)
    read = [f.name for f in wanted if f.name in present]
    for batch in pf.iter_batches(batch_size=rows, columns=read, row_groups=row_groups):
        arrays = []
        for f in wanted:
            if f.name in present:
                col = batch.column(f.name)
                arrays.append(col if col.type == f.type else col.cast(f.type))
            elif f.name in part.partition:
                arrays.append(_partition_column(part.partition[f.name], batch.num_rows, f.type))
            else:
                arrays.append(pa.nulls(batch.num_rows, type=f.type))
        yield pa.RecordBatch.from_arrays(arrays, schema=pa.schema(wanted))


def _partition_column(value: str | None, n: int, type_: pa.DataType) -> pa.Array:
    """A partition directory's value for each of a batch's ``n`` rows."""
    if value is None:
        return pa.nulls(n, type=type_)
    if type_ == pa.string():
        return repeated_text(value, n)  # without pa.array, which imports pandas
    return pa.array([value] * n, type=type_)


TABLE_NAMES = ("checkpoints", "effects", "tool_calls")


def _averages_below(group: Any, small: tuple[str, int]) -> bool:
    """Whether a row group's values of column ``small[0]`` average under ``small[1]``
    bytes (uncompressed, as its metadata says). Its chunk is found by name: the chunks are
    the schema's leaves, a nested column before it has several. A column the file lacks:
    yes; one that is nested itself: no (its size is not one chunk's)."""
    name, limit = small
    if not group.num_rows:
        return True
    chunks = [group.column(i) for i in range(group.num_columns)]
    for chunk in chunks:
        if chunk.path_in_schema == name:
            return int(chunk.total_uncompressed_size) < limit * int(group.num_rows)
    return not any(c.path_in_schema.startswith(f"{name}.") for c in chunks)


def _has_int96(meta: Any) -> bool:
    """Whether a file's footer has a column stored as INT96 (Spark's and Impala's legacy
    timestamps)."""
    schema = meta.schema
    return any(schema.column(i).physical_type == "INT96" for i in range(len(schema)))


def _bigints(values: list[int]) -> str:
    """A list of BIGINTs as a SQL literal."""
    return "[" + ", ".join(f"{v}::BIGINT" for v in values) + "]"


def file_key(path: str) -> int:
    """The high bits of the ``_key`` of a file's rows: 31 bits of a hash of its path.

    A row's ``_key`` is ``file_key(path) + position in the file``, stable as a dataset grows.
    """
    return (zlib.crc32(path.encode("utf-8")) >> 1) << 32


class ParquetReader(SourceReader):
    """Reads Parquet files with ``pyarrow.parquet``, streaming record batches."""

    kind = "parquet"
    arrow_native = True

    def __init__(self, source: str) -> None:
        # absolute even for a glob, so the same files imported from another directory are
        # the same source (quarantine records are kept per location)
        self.location = str(Path(source).resolve())
        self._datasets: dict[str, ParquetDataset] = {}
        root = Path(source)
        if any(ch in source for ch in "*?["):
            files = sorted(glob.glob(source, recursive=True))
            if not files:
                raise SourceError(f"no files match {source}", "check the glob pattern")
            self._datasets["checkpoints"] = open_dataset(files, source)
        elif root.is_dir():
            parts = {n: root / n for n in TABLE_NAMES if (root / n).exists()}
            parts |= {
                n: root / f"{n}.parquet" for n in TABLE_NAMES if (root / f"{n}.parquet").exists()
            }
            if "checkpoints" in parts:
                for name, path in parts.items():
                    self._datasets[name] = open_dataset(str(path), str(path))
            else:
                self._datasets["checkpoints"] = open_dataset(str(root), source)
        elif root.is_file():
            self._datasets["checkpoints"] = open_dataset(str(root), source)
        else:
            raise SourceError(f"no such file or directory: {source}", "check the path")

    def tables(self) -> list[str]:
        return list(self._datasets)

    def _dataset(self, table: str) -> ParquetDataset:
        if table not in self._datasets:
            raise SourceError(f"no table {table!r} in {self.location}", "check the table name")
        return self._datasets[table]

    def schema(self, table: str) -> pa.Schema:
        return self._dataset(table).schema

    def whole_table(self, table: str, small: tuple[str, int] | None = None) -> WholeTable | None:
        """The table as one ``read_parquet`` over its files, when every file has exactly the
        dataset's columns and types and no partition directory adds any (otherwise each
        batch is shaped by :func:`_file_batches`, and this is None), and where ``small``'s
        column averages less than its bytes in every row group, and where no column is a
        legacy INT96 timestamp (DuckDB cuts those to the microsecond, pyarrow keeps the
        nanoseconds, which the store rounds: the two ways would store, and name, a
        checkpoint 1 us apart). ``_key`` is the row's key
        as :meth:`scan` gives it (the file's key plus its place in the file), ``_idx`` its
        place in the table (files in the dataset's order)."""
        dataset = self._dataset(table)
        keys, starts, rows, nbytes = [], [], 0, 0
        try:
            for part in dataset.files:
                footer = _footer(part.path)
                if (
                    part.partition
                    or any(ch in part.path for ch in "*?[")  # DuckDB would expand it
                    or not footer.schema_arrow.equals(dataset.schema)
                ):
                    return None
                meta = footer.metadata
                if _has_int96(meta):
                    return None
                for g in range(meta.num_row_groups):
                    group = meta.row_group(g)
                    nbytes += int(group.total_byte_size)
                    if small is not None and not _averages_below(group, small):
                        return None
                keys.append(file_key(part.path))
                starts.append(rows)
                rows += int(meta.num_rows)
        except (pa.ArrowInvalid, OSError):
            return None  # the batches report it
        if not keys:
            return None
        # absolute: DuckDB would read a leading ~ as the home directory
        files = ", ".join(literal(os.path.abspath(part.path)) for part in dataset.files)
        columns = ", ".join(ident(name) for name in dataset.schema.names)
        at = "[CAST(file_index AS BIGINT) + 1]"
        sql = (
            f"SELECT {_bigints(keys)}{at} + file_row_number AS _key, {columns}, "
            f"{_bigints(starts)}{at} + file_row_number AS _idx "
            f"FROM read_parquet([{files}], file_row_number = true)"
        )
        return WholeTable(sql, rows, nbytes)

    def count(self, table: str) -> int | None:
        try:
            return sum(int(_footer(f.path).metadata.num_rows) for f in self._dataset(table).files)
        except (pa.ArrowInvalid, OSError) as e:
            raise SourceError(f"cannot read {self.location}: {e}", "the file may be corrupt") from e

    def scan(
        self,
        table: str,
        columns: list[str] | None = None,
        batch_rows: int = BATCH_ROWS,
        where: Selection | None = None,
    ) -> Iterator[pa.RecordBatch | pa.Table]:
        # read the next batch on a thread while the store validates and writes this one
        return prefetched(self._scan(table, columns, batch_rows, where))

    def _pieces(
        self, dataset: ParquetDataset, columns: list[str] | None, rows: int,
        where: Selection | None,
    ) -> Iterator[tuple[pa.RecordBatch, pa.Array]]:  # fmt: skip
        """Each file's batches with their keys, the selection applied (loaders.parquet_filter).

        File by file, so that a row's _key (file, position in it) stays the same when files
        are added to the dataset: quarantine records are not duplicated then.
        """
        test = None
        if where is not None and where.filter:
            # imported for a selection only: it needs pyarrow.compute, slow to import
            from loaders import parquet_filter as pf

            time_files = self._dataset(where.time_table).files if where.time_table else []
            time_schema = self.schema(where.time_table) if where.time_table else dataset.schema
            test = pf.RunTest(where.filter, pf.active_runs(time_files, where, time_schema))
        for part in dataset.files:
            base = file_key(part.path)
            spans: list[tuple[list[int] | None, int]] = [(None, 0)]
            if test is not None and where is not None:
                meta = _footer(part.path).metadata
                starts = itertools.accumulate(
                    (meta.row_group(i).num_rows for i in range(meta.num_row_groups)), initial=0
                )
                first = list(starts)
                spans = [([g], first[g]) for g in pf.groups(meta, part, where, test)]
            for groups, offset in spans:
                for batch in _file_batches(part, dataset.schema, columns, rows, groups):
                    keys = int64_range(base + offset, batch.num_rows)
                    offset += batch.num_rows
                    if test is not None and where is not None:
                        batch, keys = pf.selected(batch, keys, where, test)
                    if batch.num_rows:
                        yield batch, keys

    def _scan(
        self, table: str, columns: list[str] | None, batch_rows: int, where: Selection | None
    ) -> Iterator[pa.RecordBatch | pa.Table]:
        dataset = self._dataset(table)
        rows = self._batch_rows(dataset, batch_rows)
        start = have = 0
        pending: list[pa.RecordBatch] = []
        try:
            for batch, keys in self._pieces(dataset, columns, rows, where):
                start += batch.num_rows
                pending.append(
                    pa.RecordBatch.from_arrays(
                        [keys, *batch.columns], names=["_key", *batch.schema.names]
                    )
                )
                have += batch.num_rows
                # batches of exactly `rows` across files too (zero-copy)
                while have >= rows:
                    joined = pa.Table.from_batches(pending)
                    yield joined.slice(0, rows)
                    rest = joined.slice(rows)
                    pending, have = rest.to_batches(), rest.num_rows
            if have:
                yield pa.Table.from_batches(pending)
        except (pa.ArrowInvalid, OSError) as e:
            if have:  # the rows read before the failure are imported
                yield pa.Table.from_batches(pending)
            raise SourceError(
                f"cannot read {self.location} as Parquet after {start} rows: "
                f"{str(e).splitlines()[0]}",
                "the file may be corrupt or truncated; rows before it were imported",
            ) from e

    @staticmethod
    def _batch_rows(dataset: ParquetDataset, batch_rows: int) -> int:
        # Row-group metadata gives the uncompressed size per row without reading data.
        for part in dataset.files:
            meta = _footer(part.path).metadata
            rows = int(meta.num_rows)
            if rows:
                groups = range(meta.num_row_groups)
                size = sum(int(meta.row_group(i).total_byte_size) for i in groups)
                return aligned_rows(min(batch_rows, BATCH_BYTES // max(1, size // rows)))
        return aligned_rows(batch_rows)
