"""Mapped sources: any table shape, described by a TOML mapping file.

Example (docs/mapping.md has the full reference)::

    version = 1

    [checkpoints]
    table = "agent_snapshots"
    run_id = "session_id"
    step_index = "turn"
    created_at = "saved_at"
    working_state = { column = "doc", path = "$.memory" }
    tokens_spent = { column = "doc", path = "$.usage.tokens" }
    schema_version = { value = 2 }

    [effects]
    table = "outbox"
    run_id = "session_id"
    ...

Each canonical column is a source column (a string), a JSON path into a column
(``{column, path}``) or a constant (``{value}``). Unmapped optional columns are NULL.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from debugger.contract import TABLE_COLUMNS
from debugger.errors import MappingError
from debugger.store.state_parts import SPLIT_MIN_BYTES
from loaders.base import BATCH_ROWS, Flavour, SourceReader, TablePlan, WholeTable
from loaders.filter import Selection
from loaders.sqlmap import Source, projection

REQUIRED = {
    "checkpoints": ("run_id", "step_index", "working_state"),
    "effects": ("run_id", "step_index", "tool", "status"),
    "tool_calls": ("run_id", "step_index", "seq", "kind", "name"),
}
SUPPORTED_VERSIONS = (1,)


@dataclass(frozen=True)
class TableMapping:
    """The mapping of one canonical table."""

    table: str
    """Source table name."""
    columns: dict[str, Source]
    """Canonical column to source."""


def _source(table: str, field: str, spec: Any) -> Source:
    if isinstance(spec, str):
        return Source(column=spec)
    if isinstance(spec, dict):
        unknown = set(spec) - {"column", "path", "value"}
        if unknown:
            raise MappingError(
                f"[{table}].{field} has unknown keys {sorted(unknown)}",
                "use column, path, or value",
            )
        if "value" in spec:
            return Source(value=spec["value"])
        if "column" not in spec:
            raise MappingError(f"[{table}].{field} needs a column", 'write { column = "..." }')
        path = spec.get("path")
        if path is not None and not str(path).startswith("$"):
            raise MappingError(
                f"[{table}].{field}: JSON path {path!r} must start with $",
                'write for example path = "$.state.memory"',
            )
        if path is not None:
            _check_path(table, field, str(path))
        return Source(column=str(spec["column"]), path=path)
    raise MappingError(
        f"[{table}].{field} must be a column name or a table",
        'write field = "column" or field = { column = "c", path = "$.p" }',
    )


def _check_path(table: str, field: str, path: str) -> None:
    """Let DuckDB parse the JSON path now, so a bad one is a mapping error, not a crash later."""
    try:
        duckdb.connect().execute("SELECT json_extract('{}', ?)", [path]).fetchall()
    except duckdb.Error as e:
        raise MappingError(
            f"[{table}].{field}: bad JSON path {path!r}: {str(e).splitlines()[0]}",
            'write for example path = "$.state.memory" or "$.items[0]"',
        ) from e


def load_mapping(path: str | Path) -> dict[str, TableMapping]:
    """Read and check a mapping file.

    Raises:
        MappingError: missing file, bad TOML, unknown version, tables or fields.
    """
    p = Path(path)
    try:
        doc = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError as e:
        raise MappingError(f"no mapping file at {path}", "check the --mapping path") from e
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise MappingError(f"{path} is not valid TOML: {e}", "fix the file") from e
    except OSError as e:  # a directory, no permission
        raise MappingError(
            f"cannot read the mapping file {path}: {e.strerror}", "check the --mapping path"
        ) from e
    version = doc.pop("version", 1)
    if version not in SUPPORTED_VERSIONS:
        raise MappingError(
            f"mapping version {version} is not supported",
            f"use version = {SUPPORTED_VERSIONS[-1]}",
        )
    unknown = set(doc) - set(TABLE_COLUMNS)
    if unknown:
        raise MappingError(
            f"unknown sections {sorted(unknown)} in {path}",
            "sections are [checkpoints], [effects] and [tool_calls]",
        )
    if "checkpoints" not in doc:
        raise MappingError(f"{path} has no [checkpoints] section", "add one")
    out = {}
    for table, spec in doc.items():
        if not isinstance(spec, dict):
            raise MappingError(
                f"{table} must be a section ([{table}]) in {path}",
                "write it as a [section] with table = and column names under it",
            )
        spec = dict(spec)
        source_table = spec.pop("table", None)
        if not source_table:
            raise MappingError(f'[{table}] needs table = "..."', "name the source table")
        bad = set(spec) - set(TABLE_COLUMNS[table])
        if bad:
            raise MappingError(
                f"[{table}] maps unknown fields {sorted(bad)}",
                f"fields are {', '.join(TABLE_COLUMNS[table])}",
            )
        missing = [f for f in REQUIRED[table] if f not in spec]
        if missing:
            raise MappingError(f"[{table}] does not map {missing}", "these fields are required")
        columns = {f: _source(table, f, s) for f, s in spec.items()}
        out[table] = TableMapping(table=str(source_table), columns=columns)
    return out


def _plain(tm: TableMapping, field: str) -> str | None:
    """The source column of a field mapped to a plain column (no JSON path), else None."""
    src = tm.columns.get(field)
    return src.column if src is not None and src.path is None else None


class MappedFlavour(Flavour[SourceReader]):
    """Reads any table shape through a mapping file."""

    name = "mapped"
    filters = True

    def __init__(self, mapping_path: str | Path) -> None:
        self.path = str(mapping_path)
        self.mapping = load_mapping(mapping_path)

    @classmethod
    def detect(cls, reader: SourceReader) -> bool:
        return False  # only chosen with --mapping

    def avoids_pa_array(self, reader: SourceReader) -> bool:
        return reader.arrow_native

    def check(self, reader: SourceReader) -> None:
        """Every mapped table and column exists in the source (no rows are read), and the
        columns ``--run``/``--since`` need are plain columns."""
        for canonical, tm in self.mapping.items():
            self._check(reader, canonical, tm)
            self._where(tm)

    def _check(self, reader: SourceReader, canonical: str, tm: TableMapping) -> None:
        tables = reader.tables()
        if tm.table not in tables:
            raise MappingError(
                f"the mapping's [{canonical}] table {tm.table!r} is not in the source "
                f"(found: {', '.join(tables) or 'no tables'})",
                "fix table = in the mapping file",
            )
        cols = set(reader.columns(tm.table))
        for field, src in tm.columns.items():
            if src.column is not None and src.column not in cols:
                raise MappingError(
                    f"[{canonical}].{field}: no column {src.column!r} in table {tm.table!r} "
                    f"(columns: {', '.join(sorted(cols))})",
                    "fix the column name in the mapping file",
                )

    def plans(self, reader: SourceReader) -> Iterator[TablePlan]:
        for canonical in TABLE_COLUMNS:
            tm = self.mapping.get(canonical)
            if tm is None:
                continue
            self._check(reader, canonical, tm)
            schema = reader.schema(tm.table)
            needed = sorted({s.column for s in tm.columns.values() if s.column})
            where = self._where(tm)
            checkpoints = canonical == "checkpoints"
            full = self.batch_rows >= BATCH_ROWS
            yield TablePlan(
                table=canonical,
                batches=reader.scan(
                    tm.table, columns=needed, batch_rows=self.batch_rows, where=where
                ),
                select_sql=projection(canonical, tm.columns, schema, "CAST(NULL AS VARCHAR)"),
                derive_parents=checkpoints and "parent_id" not in tm.columns,
                total=None if where else reader.count(tm.table),
                # as the native flavour's checkpoints (loaders.native): whole where DuckDB
                # reads the table itself, else batches held for passes
                whole=self._whole(reader, tm) if checkpoints and full and where is None else None,
                gather=checkpoints and full,
            )

    @staticmethod
    def _whole(reader: SourceReader, tm: TableMapping) -> WholeTable | None:
        """The mapped checkpoints as one table DuckDB reads, where the reader can give it
        and the column the states come from (a JSON path's column is larger still) averages
        under the size from which states are split."""
        state = tm.columns.get("working_state")
        if state is None or state.column is None:
            return None
        return reader.whole_table(tm.table, (state.column, SPLIT_MIN_BYTES))

    def _where(self, tm: TableMapping) -> Selection | None:
        """``--run``/``--since`` through the mapping: the table's ``run_id`` column, and the
        checkpoints' ``run_id`` and ``created_at`` columns."""
        ck = self.mapping["checkpoints"]
        time = (ck.table, _plain(ck, "run_id"), _plain(ck, "created_at"))
        return self.selection(_plain(tm, "run_id"), time)
