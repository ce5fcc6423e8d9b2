"""Validating a staged batch: the SQL checks that give each invalid row its reason.

A flavour's staged values are checked here, not trusted: every check is a ``WHEN ... THEN
reason`` of one ``CASE`` over the whole batch, so validation runs vectorised in DuckDB. The
casts that read a staged column as a store type are here too, since each check and the
typed projection (:mod:`debugger.store.stage`) must read a value the same way.
"""

from __future__ import annotations

import duckdb

from debugger.contract import GIVEN_STATE_DEPTH, JSON_WRITTEN
from debugger.store import json_depth
from debugger.store.schema import STEP_OFFSET

_INTEGER_TYPES = frozenset(
    {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER"}
)
"""Staged column types that hold integers already: no text round trip to check them.
(UBIGINT and HUGEINT may not fit the store's BIGINT, so they take the text path.)"""
_TIMESTAMP_FREE_OF_ZONE = (
    r"\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?)?(Z|[+-]00(:?00)?)?"
)
"""A timestamp text in UTC or without a zone. DuckDB's TIMESTAMP cast reads it correctly
(the store's session time zone is UTC) and is much cheaper than the TIMESTAMPTZ cast, which is
kept for texts with another offset or a zone name (the TIMESTAMP cast would drop those)."""

ColumnTypes = dict[str, str]
"""Staged column name -> DuckDB type name (as ``DESCRIBE`` gives it)."""


def staged_types(con: duckdb.DuckDBPyConnection) -> ColumnTypes:
    """The DuckDB type of every column of ``_staged`` (reads no rows)."""
    desc = con.execute("SELECT * FROM _staged LIMIT 0").description
    return {str(d[0]): str(d[1]).upper() for d in desc}


def _is_int(types: ColumnTypes, col: str) -> bool:
    return types.get(col, "VARCHAR") in _INTEGER_TYPES


def _is_null(types: ColumnTypes, col: str) -> bool:
    return types.get(col) == '"NULL"'


def as_text(col: str) -> str:
    return f"nullif(trim(CAST({col} AS VARCHAR)), '')"


def _int_check(types: ColumnTypes, col: str, required: bool, non_negative: bool) -> list[str]:
    checks = []
    if required:
        checks.append(f"WHEN {col} IS NULL THEN 'missing {col}'")
    if _is_null(types, col):
        return checks
    if not _is_int(types, col):
        # a whole number written as a float or decimal is that integer (4.0, 4.00: pandas
        # writes an integer column with a missing value as floats); DuckDB's cast of the
        # text reads it, and would round 4.5, which is refused here
        checks.append(
            f"WHEN {col} IS NOT NULL AND NOT "
            f"regexp_full_match(trim(CAST({col} AS VARCHAR)), '-?[0-9]+(\\.0*)?') "
            f"THEN '{col} is not an integer: ' || left(CAST({col} AS VARCHAR), 40)"
        )
        # a run of digits beyond 64 bits matches but does not fit
        checks.append(
            f"WHEN {col} IS NOT NULL AND {as_int(types, col)} IS NULL "
            f"THEN '{col} does not fit 64 bits: ' || left(CAST({col} AS VARCHAR), 40)"
        )
    if non_negative:
        checks.append(
            f"WHEN {as_int(types, col)} < 0 THEN 'negative {col}: ' || CAST({col} AS VARCHAR)"
        )
    return checks


def _json_check(
    col: str, required: bool, json_type: str | None, written: bool = False, depth: str = ""
) -> list[str]:
    """The checks of a JSON document column; ``depth``: a column with the document's
    nesting depth as its reader measured it, read instead of the text where not NULL."""
    checks = []
    if required:
        checks.append(f"WHEN {col} IS NULL THEN 'missing {col}'")
    if not written:  # see JSON_WRITTEN
        checks.append(
            f"WHEN {col} IS NOT NULL AND NOT json_valid(CAST({col} AS VARCHAR)) "
            f"THEN '{col} is not valid JSON'"
        )
    if json_type:
        checks.append(
            f"WHEN {col} IS NOT NULL AND json_type(CAST({col} AS VARCHAR)) <> '{json_type}' "
            f"THEN '{col} is not a JSON {json_type.lower()}'"
        )
    # nothing could show it (see debugger.store.json_depth); the session registers the check
    too_deep = json_depth.too_deep_sql(f"CAST({col} AS VARCHAR)")
    if depth:
        given = f"TRY_CAST({depth} AS BIGINT)"
        too_deep = (
            f"(CASE WHEN {given} IS NOT NULL THEN {given} > {json_depth.MAX_DEPTH} "
            f"ELSE {too_deep} END)"
        )
    checks.append(
        f"WHEN {col} IS NOT NULL AND {too_deep} "
        f"THEN '{col} is nested deeper than {json_depth.MAX_DEPTH} levels'"
    )
    return checks


_NUMBER_TYPES = _INTEGER_TYPES | {"UBIGINT", "HUGEINT", "UHUGEINT", "FLOAT", "DOUBLE"}
"""Staged column types of numbers (and DECIMAL(p, s)): a time given as one is an epoch."""

EPOCH_UNITS = ((1e11, 1e6), (1e14, 1e3), (1e17, 1.0))
"""(below this magnitude, microseconds per unit): seconds up to 1e11 (the year 5138), then
milliseconds, then microseconds; nanoseconds above. An epoch time says no unit; these
ranges do not overlap for any time between 1973 and 5138."""


def epoch_seconds_sql(col: str) -> str:
    """SQL (SQLite's, Postgres's or DuckDB's) for the seconds since 1970 of the epoch
    number ``col``, its unit read from its magnitude as :func:`as_timestamp` reads it: for
    a source's own query (``--since``)."""
    cases = " ".join(
        f"WHEN abs({col}) < {bound:.0e} THEN {col} * {per / 1e6!r}" for bound, per in EPOCH_UNITS
    )
    return f"(CASE {cases} ELSE {col} / 1000000000.0 END)"


def _epoch(col: str) -> str:
    """A number of seconds, milliseconds, microseconds or nanoseconds since 1970 (by its
    magnitude: :data:`EPOCH_UNITS`) as a TIMESTAMP in UTC; NULL where it does not fit."""
    cases = " ".join(
        f"WHEN abs({col}) < {bound:.0e} THEN try(make_timestamp(TRY_CAST(round({col} * {per})"
        " AS BIGINT)))"
        for bound, per in EPOCH_UNITS
    )
    rest = f"try(make_timestamp(TRY_CAST(round({col} / 1000) AS BIGINT)))"
    return f"(CASE WHEN NOT isfinite(CAST({col} AS DOUBLE)) THEN NULL {cases} ELSE {rest} END)"


def as_timestamp(types: ColumnTypes, col: str) -> str:
    t = types.get(col, "VARCHAR")
    if t == "TIMESTAMP WITH TIME ZONE":
        return f"({col} AT TIME ZONE 'UTC')"
    if t.startswith("TIMESTAMP") or t == "DATE":
        return f"CAST({col} AS TIMESTAMP)"
    if t in _NUMBER_TYPES or t.startswith("DECIMAL"):
        return _epoch(col)
    if _is_null(types, col):
        return "CAST(NULL AS TIMESTAMP)"
    text = f"CAST({col} AS VARCHAR)"
    return (
        f"(CASE WHEN regexp_full_match({text}, '{_TIMESTAMP_FREE_OF_ZONE}') "
        f"THEN TRY_CAST({text} AS TIMESTAMP) "
        f"ELSE TRY_CAST({text} AS TIMESTAMPTZ) AT TIME ZONE 'UTC' END)"
    )


def _ts_check(types: ColumnTypes, col: str) -> list[str]:
    t = types.get(col, "VARCHAR")
    if t.startswith("TIMESTAMP") or t == "DATE" or _is_null(types, col):
        return []
    return [
        f"WHEN {col} IS NOT NULL AND {as_timestamp(types, col)} IS NULL "
        f"THEN '{col} is not a timestamp: ' || left(CAST({col} AS VARCHAR), 40)"
    ]


def _required_text(col: str) -> list[str]:
    return [f"WHEN {as_text(col)} IS NULL THEN 'missing {col}'"]


def as_int(types: ColumnTypes, col: str) -> str:
    if _is_int(types, col):
        return f"CAST({col} AS BIGINT)"
    return f"TRY_CAST(CAST({col} AS VARCHAR) AS BIGINT)"


def _given_depth(types: ColumnTypes) -> str:
    """The state's depth as the reader that cut it measured it (``GIVEN_STATE_SPLIT``)."""
    return GIVEN_STATE_DEPTH if GIVEN_STATE_DEPTH in types else ""


def reasons(table: str, types: ColumnTypes) -> list[str]:
    """The ``WHEN ... THEN reason`` checks of ``table``, first failing one wins."""
    written = JSON_WRITTEN in types
    if table == "checkpoints":
        return [
            *_required_text("run_id"),
            *_int_check(types, "step_index", True, False),
            # lookup_key keeps 32 bits for the step: a larger one would land in another run
            f"WHEN NOT ({as_int(types, 'step_index')} "
            f"BETWEEN {-STEP_OFFSET} AND {STEP_OFFSET - 1}) "
            f"THEN 'step_index out of range: ' || CAST(step_index AS VARCHAR)",
            *_json_check("working_state", True, None, written, _given_depth(types)),
            *_int_check(types, "schema_version", False, True),
            *_ts_check(types, "created_at"),
            *_int_check(types, "tokens_spent", False, True),
            *_int_check(types, "steps_spent", False, True),
            *_int_check(types, "wall_clock_ms", False, True),
            *_json_check("pending_effects", False, "ARRAY", written),
            *_json_check("tool_versions", False, "OBJECT", written),
            *_json_check("metadata", False, "OBJECT", written),
        ]
    if table == "effects":
        return [
            *_required_text("run_id"),
            *_int_check(types, "step_index", True, False),
            *_required_text("tool"),
            "WHEN status IS NULL OR lower(CAST(status AS VARCHAR)) NOT IN "
            "('pending', 'committed', 'failed', 'unknown') "
            "THEN 'effect status must be pending, committed, failed or unknown: ' "
            "|| coalesce(left(CAST(status AS VARCHAR), 40), 'missing')",
            *_json_check("args", False, None, written),
            *_json_check("result", False, None, written),
            *_ts_check(types, "created_at"),
        ]
    return [
        *_required_text("run_id"),
        *_int_check(types, "step_index", True, False),
        *_int_check(types, "seq", True, True),
        "WHEN kind IS NULL OR lower(CAST(kind AS VARCHAR)) NOT IN ('tool', 'model') "
        "THEN 'call kind must be tool or model: ' "
        "|| coalesce(left(CAST(kind AS VARCHAR), 40), 'missing')",
        *_required_text("name"),
        *_json_check("request", False, None, written),
        *_json_check("response", False, None, written),
        "WHEN is_write IS NOT NULL AND TRY_CAST(CAST(is_write AS VARCHAR) AS BOOLEAN) IS NULL "
        "THEN 'is_write is not a boolean'",
    ]
