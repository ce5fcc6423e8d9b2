"""SQL projections from a raw source batch (``_raw``) onto canonical columns.

Used by the native and mapped flavours: each canonical column is a column of the source, a
JSON path into a column, a constant, or NULL. Identifiers and paths are quoted here, never
pasted raw, so a mapping file cannot inject SQL.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from debugger.contract import TABLE_COLUMNS

JSON_FIELDS = frozenset(
    {"working_state", "pending_effects", "tool_versions", "metadata", "args", "result",
     "request", "response"}
)  # fmt: skip


def ident(name: str) -> str:
    """Quote an identifier for DuckDB."""
    return '"' + name.replace('"', '""') + '"'


def literal(value: Any) -> str:
    """Quote a constant for DuckDB (strings, numbers, booleans, None)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, dict | list):
        # a TOML table or array given as a constant is a JSON value, not Python's repr of it
        value = json.dumps(value, default=str)
    return "'" + str(value).replace("'", "''") + "'"


def _read_as(t: pa.DataType) -> pa.DataType:
    """The type DuckDB reads a column of type ``t`` as: a dictionary's values (a pandas
    category, a Parquet column pyarrow keeps dictionary-encoded), an extension type's
    storage (the ``arrow.json`` type's is text)."""
    while True:
        if pa.types.is_dictionary(t):
            t = t.value_type
        elif isinstance(t, pa.ExtensionType):
            t = t.storage_type
        else:
            return t


def _is_text(t: pa.DataType) -> bool:
    """Text DuckDB reads as VARCHAR, in any of Arrow's layouts. Anything else in a JSON field
    is made JSON with ``to_json``, which would make text a JSON string (``"{\\"a\\": 1}"``)."""
    t = _read_as(t)
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t))


def _is_bytes(t: pa.DataType) -> bool:
    """Bytes DuckDB reads as BLOB."""
    t = _read_as(t)
    return bool(
        pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_binary_view(t)
        or pa.types.is_fixed_size_binary(t)
    )


def column_text(name: str, arrow_type: pa.DataType, as_json: bool) -> str:
    """A source column as the store expects it: JSON fields as JSON text, others as they are."""
    col = ident(name)
    if as_json and not _is_text(arrow_type) and not pa.types.is_null(_read_as(arrow_type)):
        if _is_bytes(arrow_type):
            # decode() reads the bytes as UTF-8; CAST(blob AS VARCHAR) would escape them
            # ('{\\x22a\\x22...') and every JSON document stored as a BLOB would be rejected
            return (
                f"CASE WHEN {col} IS NOT NULL THEN "
                f"coalesce(try(decode({col})), '(bytes that are not UTF-8)') END"
            )
        return f"CAST(to_json({col}) AS VARCHAR)"
    return col


@dataclass(frozen=True)
class Source:
    """Where one canonical column comes from."""

    column: str | None = None
    """Source column name."""
    path: str | None = None
    """JSON path (``$.a.b``) into ``column``."""
    value: Any = None
    """A constant, when neither column nor path is given."""

    def sql(self, field: str, schema: pa.Schema) -> str:
        """The SQL expression for this canonical field."""
        if self.column is None:
            return literal(self.value)
        arrow_type = schema.field(self.column).type
        col = column_text(self.column, arrow_type, as_json=self.path is not None)
        if self.path is None:
            return column_text(self.column, arrow_type, as_json=field in JSON_FIELDS)
        fn = "json_extract" if field in JSON_FIELDS else "json_extract_string"
        return f"CASE WHEN json_valid({col}) THEN {fn}({col}, {literal(self.path)}) END"


def projection(table: str, sources: dict[str, Source], schema: pa.Schema, reason: str) -> str:
    """A SELECT over ``_raw`` producing every canonical column of ``table``.

    ``_key`` and ``_pos`` pass through: the row's key in the source and its place in the
    import (the session adds ``_pos`` to each batch).

    Args:
        table: canonical table name.
        sources: canonical column to its source; missing columns become NULL.
        schema: the raw batches' Arrow schema.
        reason: SQL expression giving a rejection reason or NULL for every row.
    """
    parts = ["_key", "_pos"]
    for field in TABLE_COLUMNS[table]:
        src = sources.get(field)
        parts.append(f"{src.sql(field, schema) if src else 'NULL'} AS {field}")
    parts.append(f"{reason} AS _reason")
    return "SELECT " + ", ".join(parts) + " FROM _raw"


def json_guard(columns: list[tuple[str, pa.DataType]]) -> str:
    """A reason expression: the first of ``columns`` (JSON documents) that is not a JSON object."""
    cases = []
    for name, arrow_type in columns:
        col = column_text(name, arrow_type, as_json=True)
        cases.append(f"WHEN {col} IS NULL THEN 'missing {name}'")
        cases.append(f"WHEN NOT json_valid({col}) THEN '{name} is not valid JSON'")
        cases.append(f"WHEN json_type({col}) <> 'OBJECT' THEN '{name} is not a JSON object'")
    return f"CASE {' '.join(cases)} END" if cases else "CAST(NULL AS VARCHAR)"
